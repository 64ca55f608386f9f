"""PrivateCountSketch: exactness of the sketch, privacy (exact and audited), accuracy, API."""

import itertools
import math
import pickle
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.base import clone

from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch
from sklearn_bayes.privacy._sketch._release import _median_sensitivity_bound
from sklearn_bayes.privacy._core._noise import discrete_laplace_pmf, sample_noise
from sklearn_bayes.exceptions import SeededNoiseWarning

sys.path.insert(0, str(Path(__file__).parent))
import _sketch_reference as ref  # noqa: E402


def _sketch(**params):
    """A sketch with reproducible noise, without the seeded-noise warning (tests only)."""
    seed = params.pop("seed", 0)
    return PrivateCountSketch(random_state=np.random.default_rng(seed), **params)


def _stream(n=2000, n_items=300, seed=0):
    rng = np.random.default_rng(seed)
    return rng.zipf(1.3, size=n) % n_items


# ------------------------------------------------------------------ the sketch itself


@pytest.mark.parametrize("width", [37, 64])  # 64: the power-of-two (shift) path of the kernel
@pytest.mark.parametrize("kind", ["count", "count_min"])
@pytest.mark.parametrize("items", ["int", "str", "pair"])
def test_table_equals_brute_force(kind, items, width):
    raw = _stream(n=500, n_items=60, seed=1)
    if items == "int":
        X, keys = raw - 30, [ref.int_key(v) for v in raw - 30]
    elif items == "str":
        X = np.array([f"item-{v}" for v in raw], dtype=object)
        keys = [ref.bytes_key(s) for s in X]
    else:  # two columns: one composite item per row
        X = np.column_stack([raw % 7, raw // 7])
        keys = [ref.combine(ref.int_key(a), ref.int_key(b)) for a, b in X]
    est = _sketch(kind=kind, depth=4, width=width, hash_seed=11)
    est.partial_fit(X[:200]).partial_fit(X[200:])
    expected = ref.brute_force_table(keys, 4, width, 11, kind)
    np.testing.assert_array_equal(est.table_, np.array(expected))
    # the estimate kernel on the (not yet noised) table is the brute-force median / min
    query = X[:50]
    cols, signs = est._locate(est._validated_keys(query, "items", reset=False)[0])
    got = est._estimate(est.table_, cols, signs)
    np.testing.assert_array_equal(got, [ref.brute_force_estimate(expected, k, 11, kind) for k in keys[:50]])


def test_str_bytes_and_dataframe_inputs_are_the_same_items():
    pd = pytest.importorskip("pandas")
    words = ["a", "bb", "München", "a"]
    t1 = _sketch(width=64).fit(words).table_
    t2 = _sketch(width=64).fit([w.encode() for w in words]).table_
    t3 = _sketch(width=64).fit(np.array(words)).table_
    df = pd.DataFrame({"city": words})
    est = _sketch(width=64).fit(df)
    np.testing.assert_array_equal(t1, t2)
    np.testing.assert_array_equal(t1, t3)
    np.testing.assert_array_equal(t1, est.table_)
    assert list(est.feature_names_in_) == ["city"]
    t4 = _sketch(width=64).fit(df["city"]).table_
    np.testing.assert_array_equal(t1, t4)
    # integral floats are the same items as ints
    np.testing.assert_array_equal(_sketch().fit([1, 2, 2]).table_, _sketch().fit([1.0, 2.0, 2.0]).table_)


# ------------------------------------------------------------------ privacy: exact


def _release_log_pmf(released_increments, true_increments, scale):
    """Joint log-pmf of the released increments (rows of the first argument)."""
    diff = np.subtract(released_increments, true_increments)
    return np.sum(np.log(discrete_laplace_pmf(diff, scale)), axis=-1)


@pytest.mark.parametrize("epsilon", [0.3, 1.0])
def test_lemma1_counter_is_exactly_epsilon_dp(epsilon):
    """Lemma 1: a counter released with fresh noise added (and kept) at each query time.

    The releases' increments are the true increments plus independent noise, so the joint
    pmf of three releases factorises; neighbouring streams differ by one arrival in one of
    the three periods.  The privacy loss is at most ε everywhere and attains ε.
    """
    scale = 1.0 / epsilon
    base = np.array([2, 0, 1])
    grid = np.array(list(itertools.product(range(-12, 13), repeat=3)))  # released increments
    worst = 0.0
    for period in range(3):
        neighbour = base.copy()
        neighbour[period] += 1
        loss = _release_log_pmf(grid, base, scale) - _release_log_pmf(grid, neighbour, scale)
        assert np.all(np.abs(loss) <= epsilon * (1 + 1e-12))
        worst = max(worst, float(np.max(np.abs(loss))))
    assert math.isclose(worst, epsilon, rel_tol=1e-12)


@pytest.mark.parametrize("noise", ["discrete_laplace", "laplace"])
def test_one_cell_use_and_keep_is_the_lemma1_counter(noise):
    """With d = w = 1 the use-and-keep sketch is exactly the counter of Lemma 1 (replayed noise)."""
    eps = 0.8
    est = PrivateCountSketch(epsilon=eps, depth=1, width=1, kind="count_min", noise=noise,
                             random_state=np.random.default_rng(5))
    replay = np.random.default_rng(5)
    est.fit([7, 7, 8])
    count, noise_sum, releases, expected = 3, 0.0, [], []
    for chunk in ([1], [2, 3, 4], [], [5]):
        if chunk:
            est.partial_fit(chunk)
        count += len(chunk)
        releases.append(est.query([0])[0])
        noise_sum += float(sample_noise(replay, noise, 1.0 / eps, size=1)[0])
        expected.append(count + noise_sum)
    np.testing.assert_allclose(releases, expected, rtol=0, atol=1e-9)
    assert est.epsilon_spent_ == eps and est.n_query_sets_ == 4
    assert est.uses_.tolist() == [[4]]


def test_each_touched_cell_is_noised_once_per_query_set():
    est = _sketch(depth=3, width=4).fit(_stream(200, 50))
    exact = est.table_.copy()
    q = [1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1]  # duplicates and (w = 4) many shared cells
    answers = est.query(q)
    assert answers[0] == answers[1] == answers[-1]
    cols, _ = est._locate(est._validated_keys(np.unique(q), "items", reset=False)[0])
    touched = np.zeros((3, 4), dtype=int)
    for i in range(3):
        touched[i, np.unique(cols[i])] = 1
    np.testing.assert_array_equal(est.uses_, touched)
    # untouched cells stay exact (a touched cell may draw noise 0: P(0) = tanh(ε/2d) > 0)
    np.testing.assert_array_equal(est.table_[touched == 0], exact[touched == 0])
    for _ in range(5):
        est.query(q)
    np.testing.assert_array_equal(est.uses_, 6 * touched)
    assert est.epsilon_spent_ == 1.0 and est.n_query_sets_ == 6
    assert est.ledger_.n_releases == 6 and est.ledger_.epsilon_spent == 1.0


def test_use_and_forget_schedule_sums_to_epsilon():
    eps, eta, d = 1.0, 0.5, 3
    est = PrivateCountSketch(epsilon=eps, depth=d, width=1, kind="count_min", mechanism="use_and_forget",
                             decay=eta, random_state=np.random.default_rng(2))
    replay = np.random.default_rng(2)
    est.fit([4, 4, 4, 9])
    for k in range(1, 9):
        released = est.query([4])[0]
        # use k of each of the d cells (one per row, all equal to 4): fresh noise of scale 1/ε'_k
        eps_k = (eps / d) * (1 - eta) * eta ** (k - 1)
        cells = 4 + sample_noise(replay, "discrete_laplace", np.full(d, 1 / eps_k))
        assert released == np.min(cells)
        assert math.isclose(est.epsilon_spent_, eps * (1 - eta**k), rel_tol=1e-12)
        assert est.epsilon_spent_ < eps
    np.testing.assert_array_equal(est.table_, [[4], [4], [4]])  # the table stays exact
    # the per-cell budgets Σ_k (ε/d)(1-η)η^{k-1} sum to ε/d
    assert math.isclose(sum((eps / d) * (1 - eta) * eta**k for k in range(200)), eps / d, rel_tol=1e-12)


def test_median_perturbation_schedule_and_sensitivity_bound():
    eps, eta = 2.0, 0.7
    est = PrivateCountSketch(epsilon=eps, depth=1, width=1, kind="count_min", mechanism="median_perturbation",
                             decay=eta, random_state=np.random.default_rng(4))
    replay = np.random.default_rng(4)
    est.fit([1, 1, 2])
    for k in range(1, 5):
        got = est.query([1])[0]
        eps_k = eps * (1 - eta) * eta ** (k - 1)
        assert got == 3 + sample_noise(replay, "discrete_laplace", 1 / eps_k, size=1)[0]  # m_Q = 1
        assert math.isclose(est.epsilon_spent_, eps * (1 - eta**k), rel_tol=1e-12)
    # Algorithm 4's bound dominates the exact m_Q of (4.3), found by brute force; m_Q = n_Q if n_Q <= d
    rng = np.random.default_rng(0)
    for _ in range(40):
        d, w, n_q = rng.integers(1, 4), rng.integers(1, 6), rng.integers(1, 8)
        cols = rng.integers(0, w, size=(d, n_q))
        exact = max(
            int(np.sum(np.any(cols == np.array(js)[:, None], axis=0)))
            for js in itertools.product(range(w), repeat=d)
        )
        bound = _median_sensitivity_bound(cols, w)
        assert exact <= bound <= n_q
        if n_q <= d:
            assert bound == n_q


def test_median_perturbation_even_depth_uses_half_integer_lattice():
    # 2-row Count Sketch medians are half-integers; the noise must live on the same lattice
    est = _sketch(depth=2, width=16, mechanism="median_perturbation").fit(_stream(300, 40))
    answers = est.query(np.arange(40))
    assert np.all(np.isclose(2 * answers, np.round(2 * answers)))


def _clopper_pearson(k, n, alpha):
    lo = stats.beta.ppf(alpha / 2, k, n - k + 1) if k > 0 else 0.0
    hi = stats.beta.ppf(1 - alpha / 2, k + 1, n - k) if k < n else 1.0
    return lo, hi


def _audit_runs(mechanism_epsilon, with_target, n_runs, rng, depth):
    """Releases about TARGET over three query sets; TARGET arrives (or not) between sets 1 and 2.

    The audited statistic is a function of the released answers only: with one row, the
    increment of TARGET's answer between sets 1 and 2 (Lemma 1's worst case: the loss of
    its tail events is exactly ε); with three rows, the final answer.
    """
    base = list(np.random.default_rng(99).integers(0, 20, size=30))
    target = 100
    out = np.empty(n_runs)
    for r in range(n_runs):
        est = PrivateCountSketch(epsilon=mechanism_epsilon, depth=depth, width=8, random_state=rng)
        est.fit(base[:10])
        a1 = est.query([target, 1])[0]
        est.partial_fit(base[10:20] + ([target] if with_target else []))
        a2 = est.query([target, 2])[0]
        est.partial_fit(base[20:])
        a3 = est.query([target, 3])[0]
        out[r] = a2 - a1 if depth == 1 else a3
    return out


def _empirical_loss_lower_bound(mechanism_epsilon, n_pilot, n_runs, alpha, seed, depth):
    """Audit: a (1 - alpha) lower confidence bound on the privacy loss of neighbouring streams.

    Events ``{answer >= tau}`` and their complements; the thresholds are chosen on a
    separate pilot sample, the probabilities estimated on fresh runs with Clopper-Pearson
    intervals (Bonferroni over the events and both directions).
    """
    rng = np.random.default_rng(seed)
    p0 = _audit_runs(mechanism_epsilon, False, n_pilot, rng, depth)
    p1 = _audit_runs(mechanism_epsilon, True, n_pilot, rng, depth)
    taus = np.unique(np.concatenate([p0, p1]))
    scores = []
    for tau in taus:
        # smoothed pilot frequencies (no log 0); skip events that are (almost) never or always seen
        a = (np.sum(p0 >= tau) + 0.5) / (n_pilot + 1)
        b = (np.sum(p1 >= tau) + 0.5) / (n_pilot + 1)
        if max(a, b) > 0.05 and min(a, b) < 0.95:
            scores.append((max(abs(math.log(b / a)), abs(math.log((1 - a) / (1 - b)))), tau))
    taus = [t for _, t in sorted(scores)[-3:]]
    x0 = _audit_runs(mechanism_epsilon, False, n_runs, rng, depth)
    x1 = _audit_runs(mechanism_epsilon, True, n_runs, rng, depth)
    a_each = alpha / (4 * len(taus))
    best = -math.inf
    for tau in taus:
        for e0, e1 in ((x0 >= tau, x1 >= tau), (x0 < tau, x1 < tau)):
            lo0, hi0 = _clopper_pearson(int(e0.sum()), n_runs, a_each)
            lo1, hi1 = _clopper_pearson(int(e1.sum()), n_runs, a_each)
            best = max(best, math.log(lo1 / hi0) if lo1 > 0 else -math.inf,
                       math.log(lo0 / hi1) if lo0 > 0 else -math.inf)
    return best


@pytest.mark.slow
@pytest.mark.parametrize("depth", [1, 3])
def test_monte_carlo_audit_use_and_keep_over_several_query_sets(depth):
    eps = 1.0
    bound = _empirical_loss_lower_bound(eps, n_pilot=300, n_runs=1500, alpha=0.01, seed=1, depth=depth)
    assert bound <= eps, f"the audit certifies a privacy loss >= {bound:.3f} > ε = {eps}"
    if depth == 1:
        # with one row the audited events attain the worst case: the audit is nearly tight
        assert bound > 0.6 * eps
    # the audit has power: a mechanism that really spends 8ε is caught
    leaky = _empirical_loss_lower_bound(8 * eps, n_pilot=150, n_runs=400, alpha=0.01, seed=2, depth=depth)
    assert leaky > eps


# ------------------------------------------------------------------ accuracy


def _fixed_stream(seed):
    freqs = 200 // np.arange(1, 201)  # 200 items, Zipf-like counts
    stream = np.repeat(np.arange(200), freqs)
    return np.random.default_rng(seed).permutation(stream), freqs


@pytest.mark.parametrize("depth", [1, 3])
def test_count_sketch_estimates_are_unbiased(depth):
    stream, freqs = _fixed_stream(0)
    w, eps, runs = 16, 1.0, 300
    rng = np.random.default_rng(3)
    est_values = {0: [], 7: []}
    for r in range(runs):
        est = PrivateCountSketch(epsilon=eps, depth=depth, width=w, hash_seed=r, random_state=rng).fit(stream)
        answers = est.query([0, 7])
        est_values[0].append(answers[0])
        est_values[7].append(answers[1])
    var_noise = float(np.sum(np.arange(-400, 401) ** 2 * discrete_laplace_pmf(np.arange(-400, 401), depth / eps)))
    for x, values in est_values.items():
        # each row: E = f_x, Var = Σ_{y≠x} f_y²/w + Var(noise); the median of d rows is in {rows},
        # so its second moment about f_x is at most d times a row's variance
        var_row = (np.sum(freqs.astype(float) ** 2) - freqs[x] ** 2) / w + var_noise
        se = math.sqrt(depth * var_row / runs)
        assert abs(np.mean(values) - freqs[x]) < 4 * se


@pytest.mark.parametrize("method", ["theorem5", "binomial"])
def test_empirical_error_respects_corrected_theorem5(method):
    stream, freqs = _fixed_stream(1)
    d, w, eps, conf, runs, target = 21, 32, 1.0, 0.9, 150, 3
    rng = np.random.default_rng(8)
    errors, bounds = [], []
    thirds = np.array_split(stream, 3)
    for r in range(runs):
        est = PrivateCountSketch(epsilon=eps, depth=d, width=w, hash_seed=1000 + r, random_state=rng)
        seen = np.zeros(200)
        for k, chunk in enumerate(thirds):
            est.partial_fit(chunk)
            np.add.at(seen, chunk, 1)
            f2 = float(np.sum(seen**2))
            kappa = est.error_bound([target], confidence=conf, f2=f2, method=method)[0]
            answer = est.query(np.arange(0, 200, 7) if k < 2 else [target])[0 if k == 2 else 0]
        errors.append(abs(answer - seen[target]))
        bounds.append(kappa)
    errors, bounds = np.array(errors), np.array(bounds)
    assert np.all(np.isfinite(bounds))
    # independent runs: the exceedance probability is <= 1 - conf; reject only if the 99%
    # Clopper-Pearson lower bound of the observed rate is above it
    lo, _ = _clopper_pearson(int(np.sum(errors > bounds)), runs, 0.02)
    assert lo <= 1 - conf
    # the same check has power: a "bound" 20 times smaller (below the noise level b/sqrt(d) of
    # the median itself) is rejected.  (The certified bounds are conservative: Chebyshev per row.)
    lo_small, _ = _clopper_pearson(int(np.sum(errors > bounds / 20)), runs, 0.02)
    assert lo_small > 1 - conf


@pytest.mark.slow
@pytest.mark.parametrize("mechanism, depth", [("use_and_forget", 5), ("median_perturbation", 4)])
def test_error_bound_of_the_exact_table_mechanisms_covers(mechanism, depth):
    """``error_bound`` covers every mechanism: fresh sketches (hashes and noise), a public ``f2``.

    The bound is computed before the query it bounds (after one earlier query set, so that the
    schedules have moved); the exceedance rate must not pass 5 % by 3 binomial standard errors,
    and a bound 10 times smaller is rejected by the same check.
    """
    freqs = 400 // np.arange(1, 101)
    stream = np.repeat(np.arange(100), freqs)
    f2 = float(np.sum(freqs.astype(float) ** 2))
    rng = np.random.default_rng(12)
    runs = 300
    errors, bounds = np.empty(runs), np.empty(runs)
    for r in range(runs):
        est = PrivateCountSketch(epsilon=1.0, depth=depth, width=16, mechanism=mechanism, hash_seed=7000 + r,
                                 random_state=rng).fit(stream)
        est.query([1, 2, 3])
        bounds[r] = est.error_bound([4], f2=f2)[0]
        errors[r] = abs(est.query([4])[0] - freqs[4])
    se = math.sqrt(0.05 * 0.95 / runs)
    assert np.all(np.isfinite(bounds))
    assert np.mean(errors > bounds) <= 0.05 + 3 * se
    assert np.mean(errors > bounds / 10) > 0.05 + 3 * se


def test_error_bound_details():
    est = _sketch(depth=5, width=64).fit(_stream(500, 100))
    # (2/e)^{d/2} > 0.05 for d = 5: Theorem 5 cannot certify 95%
    assert np.all(np.isinf(est.error_bound([1, 2], confidence=0.95, method="theorem5")))
    b50 = est.error_bound([1, 2], confidence=0.5, f2=1e4)
    b_bin = est.error_bound([1, 2], confidence=0.5, f2=1e4, method="binomial")
    assert np.all(np.isfinite(b50)) and np.all(b_bin <= b50)
    # more previous uses -> larger bound; the bound uses the corrected variance 2 (d/ε)² per draw
    before = est.error_bound([1], confidence=0.5, f2=0.0)[0]
    est.query([1])
    assert est.error_bound([1], confidence=0.5, f2=0.0)[0] > before
    # f2 estimated from the table is close to the truth for a long stream with little noise
    big = _sketch(depth=7, width=512, epsilon=50.0).fit(_stream(20000, 2000, seed=5))
    true_f2 = float(np.sum(np.bincount(_stream(20000, 2000, seed=5)) ** 2.0))
    est_f2 = big.error_bound([1], confidence=0.5, f2=None)[0] ** 2  # monotone in f2: compare via kappa
    assert big.error_bound([1], confidence=0.5, f2=true_f2 / 2)[0] ** 2 < est_f2
    assert est_f2 < big.error_bound([1], confidence=0.5, f2=true_f2 * 2)[0] ** 2
    with pytest.raises(ValueError, match="kind='count'.*lower_bound / upper_bound"):
        _sketch(kind="count_min").fit([1]).error_bound([1])
    # every mechanism has a finite bound at the defaults (f2 estimated from the curator's table)
    for mechanism in ("use_and_keep", "use_and_forget", "median_perturbation", "cell_perturbation"):
        sk = _sketch(mechanism=mechanism, width=64).fit(_stream(500, 100))
        assert np.all(np.isfinite(sk.error_bound([1, 2]))) and np.all(sk.error_bound([1, 2]) > 0)
    with pytest.raises(ValueError, match="confidence"):
        est.error_bound([1], confidence=1.0)
    with pytest.raises(ValueError, match="f2"):
        est.error_bound([1], f2=-1.0)


# ------------------------------------------------------------------ mechanisms and options


def test_cell_perturbation_is_a_static_release():
    est = _sketch(mechanism="cell_perturbation", depth=3, width=32).fit(_stream(400, 80))
    a1 = est.query([1, 2, 3])
    a2 = est.query([3, 2, 1])
    np.testing.assert_array_equal(a1, a2[::-1])  # later queries are post-processing
    assert est.epsilon_spent_ == 1.0 and est.uses_.max() == 1
    with pytest.raises(ValueError, match="static release"):
        est.partial_fit([1, 2])


def test_pan_private_and_subsampling():
    est = _sketch(pan_private=True, depth=3, width=16).fit([1])
    assert np.count_nonzero(est.table_) > 10 and est.epsilon_spent_ == 0.0  # noisy start, nothing released
    with pytest.raises(ValueError, match="pan_private"):
        _sketch(pan_private=True, mechanism="use_and_forget").fit([1])
    stream = np.repeat([5, 6], [20000, 100])
    sub = _sketch(sampling_rate=0.25, depth=3, width=64, epsilon=0.5).fit(stream)
    base_eps = math.log1p(math.expm1(0.5) / 0.25)
    assert sub._base_epsilon() == pytest.approx(base_eps)
    assert sub.table_.sum() != 0 and abs(sub.query([5])[0] - 20000) < 6 * math.sqrt(20000 * 0.75 / 0.25)
    assert sub.epsilon_spent_ == pytest.approx(0.5, rel=1e-12)


def test_random_state_warning():
    with pytest.warns(SeededNoiseWarning):
        PrivateCountSketch(random_state=0).fit([1, 2])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PrivateCountSketch().fit([1, 2])


# ------------------------------------------------------------------ API


@pytest.mark.parametrize(
    "params, error",
    [
        ({"epsilon": 0.0}, ValueError),
        ({"epsilon": -1.0}, ValueError),
        ({"epsilon": float("inf")}, ValueError),
        ({"epsilon": float("nan")}, ValueError),
        ({"depth": 0}, ValueError),
        ({"width": 0}, ValueError),
        ({"kind": "heavy"}, ValueError),
        ({"sampling_rate": 0.0}, ValueError),
    ],
)
def test_bad_parameters(params, error):
    with pytest.raises(error):
        PrivateCountSketch(**params).fit([1, 2])


@pytest.mark.parametrize(
    "chunk, error, match",
    [
        ([1.0, float("nan")], ValueError, "NaN"),
        (np.array([1, None], dtype=object), ValueError, "None"),
        (np.array([1, "a"], dtype=object), TypeError, "mixes item types"),
        ([1, "a"], TypeError, "mixes item types"),
        (["a", "b"], TypeError, "kind"),
        (np.zeros((2, 2, 2)), ValueError, "dimensions"),
        (np.zeros((3, 2)), ValueError, "features"),
        (5, ValueError, "scalar"),
        ("abc", TypeError, "single str"),
        (np.array([1 + 2j]), ValueError, "complex"),
        (np.array([{"a": 1}], dtype=object), TypeError, "dict"),
    ],
)
def test_rejected_chunk_leaves_the_sketch_untouched(chunk, error, match):
    est = _sketch(width=32).fit(np.arange(50))
    est.query([1, 2])
    before = pickle.dumps(est)
    with pytest.raises(error, match=match):
        est.partial_fit(chunk)
    assert pickle.dumps(est) == before  # table, ledger and noise generator state all unchanged
    with pytest.raises((ValueError, TypeError)):
        est.query(chunk)
    assert pickle.dumps(est) == before


def test_rejected_first_chunk_leaves_estimator_unfitted():
    est = PrivateCountSketch()
    with pytest.raises(ValueError):
        est.partial_fit([1, None])
    assert not any(k.endswith("_") for k in vars(est))


def test_pickle_mid_stream_then_continue():
    stream = _stream(3000, 500)
    a = _sketch(seed=9, depth=4, width=128).partial_fit(stream[:1000])
    a.query([1, 2, 3])
    b = pickle.loads(pickle.dumps(a))
    for est in (a, b):
        est.partial_fit(stream[1000:2000])
    qa, qb = a.query(np.arange(50)), b.query(np.arange(50))
    np.testing.assert_array_equal(qa, qb)
    for est in (a, b):
        est.partial_fit(stream[2000:])
    np.testing.assert_array_equal(a.transform(stream[:100]), b.transform(stream[:100]))
    np.testing.assert_array_equal(a.table_, b.table_)
    assert a.n_query_sets_ == b.n_query_sets_ == 3
    # the copy and its original are forks: both charge their history afresh at their next
    # release; loaded in the original's process the copy shares its ledger (review HQW F1), so
    # both report the total, common history once: 3ε, a conservative total
    assert a.ledger_ is b.ledger_
    assert a.epsilon_spent_ == b.epsilon_spent_ == 3.0
    assert PrivacyLedger.compose(a.ledger_, b.ledger_).epsilon_spent == 3.0


def test_empty_query_set_releases_nothing():
    est = _sketch(width=32).fit(["a", "b"])
    assert est.query([]).shape == (0,)
    assert est.n_query_sets_ == 0 and est.epsilon_spent_ == 0.0


def test_fit_resets():
    est = _sketch(width=32).fit([1, 2, 3])
    est.query([1])
    est.fit([4])
    assert est.n_items_seen_ == 1 and est.n_query_sets_ == 0 and est.epsilon_spent_ == 0.0


def test_transform_and_feature_names():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"tailnum": ["N1", "N2", "N1", "N3"] * 50})
    est = _sketch(width=64, depth=3, epsilon=20.0).fit(df)
    out = est.transform(df)
    assert out.shape == (200, 1) and out.dtype == np.float64
    np.testing.assert_allclose(out[:4, 0], [100, 50, 100, 50], atol=5)
    assert est.get_feature_names_out().tolist() == ["privatecountsketch0"]
    assert est.n_query_sets_ == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a query set of plain items is not a feature matrix
        assert est.query(["N1", "N9"]).shape == (2,)
    est.set_output(transform="pandas")
    assert list(est.transform(df).columns) == ["privatecountsketch0"]


def test_merge_shards():
    stream = _stream(3000, 400, seed=3)
    whole = _sketch(depth=4, width=64, hash_seed=5).fit(stream)
    s1 = _sketch(depth=4, width=64, hash_seed=5, seed=1).fit(stream[:1000])
    s2 = _sketch(depth=4, width=64, hash_seed=5, seed=2).fit(stream[1000:])
    s1.merge(s2)
    np.testing.assert_array_equal(s1.table_, whole.table_)
    assert s1.n_items_seen_ == 3000 and s1.epsilon_spent_ == 0.0
    # after releases: noises add, budgets compose in parallel (disjoint shards)
    a = _sketch(depth=4, width=64, hash_seed=5, seed=1).fit(stream[:1000])
    b = _sketch(depth=4, width=64, hash_seed=5, seed=2).fit(stream[1000:])
    a.query([1, 2])
    b.query([3])
    uses = a.uses_ + b.uses_
    noise_total = (a.table_ + b.table_) - whole.table_
    a.merge(b)
    np.testing.assert_array_equal(a.uses_, uses)
    np.testing.assert_array_equal(a.table_ - whole.table_, noise_total)
    assert a.epsilon_spent_ == 1.0
    a.query([1])
    assert a.epsilon_spent_ == 1.0
    # use-and-forget keeps each cell's schedule going: element-wise max of the use counts
    f1 = _sketch(mechanism="use_and_forget", width=16).fit([1, 2])
    f2 = _sketch(mechanism="use_and_forget", width=16).fit([3])
    f1.query([1])
    f2.query([1])
    f2.query([1])
    expected_uses = np.maximum(f1.uses_, f2.uses_)
    f1.merge(f2)
    np.testing.assert_array_equal(f1.uses_, expected_uses)
    assert f1.epsilon_spent_ == pytest.approx(0.75)
    with pytest.raises(ValueError, match="different parameters"):
        _sketch(width=64).fit([1]).merge(_sketch(width=32).fit([1]))
    with pytest.raises(TypeError, match="item types"):
        _sketch().fit([1]).merge(_sketch().fit(["a"]))
    with pytest.raises(ValueError, match="cell_perturbation"):
        c = _sketch(mechanism="cell_perturbation").fit([1])
        c.query([1])
        c.merge(_sketch(mechanism="cell_perturbation").fit([2]))
    with pytest.raises(TypeError, match="PrivateCountSketch"):
        _sketch().fit([1]).merge("not a sketch")


def test_memory_independent_of_stream_length():
    est = _sketch(depth=5, width=256)
    sizes = []
    rng = np.random.default_rng(0)
    for _ in range(5):
        est.partial_fit(rng.integers(0, 10**9, size=20000))
        sizes.append(sum(v.nbytes for v in vars(est).values() if isinstance(v, np.ndarray)))
    assert len(set(sizes)) == 1 and est.n_items_seen_ == 100000


def test_clone_keeps_params():
    est = _sketch(depth=3)
    assert clone(est).get_params()["depth"] == 3


# ------------------------------------------------------------------ experiment kernel and stream


def test_simulation_kernel_matches_brute_force_algorithm6():
    """The experiments' event loop = Algorithm 6 (constant 'noise' 1 per touched cell per set)."""
    from sklearn_bayes._fast import _hashing, _sketch

    rng = np.random.default_rng(0)
    stream = rng.integers(0, 30, size=400).astype(np.int64)
    d, w, hash_seed = 3, 16, 4
    seeds = _hashing.row_seeds(hash_seed, d)
    times = np.array([50, 50, 200, 400], dtype=np.int64)
    qkeys = rng.integers(0, 35, size=4 * 6).astype(np.int64)
    offsets = np.arange(5, dtype=np.int64) * 6
    table = np.zeros((d, w), dtype=np.int64)
    out, truth = np.empty(24), np.empty(24)
    exact = np.zeros(31, dtype=np.int64)
    pos, used = _sketch.simulate_use_and_keep(table, seeds, True, stream.view(np.uint64), times,
                                              qkeys.view(np.uint64), offsets, np.ones(200, dtype=np.int64),
                                              np.full(d * w, -1, dtype=np.int64), 0, 0, out, exact, truth)
    # brute force
    ref_table = np.zeros((d, w), dtype=np.int64)
    ref_seeds = ref.row_seeds(hash_seed, d)
    p, n_noise = 0, 0
    for q in range(4):
        for x in stream[p:times[q]]:
            for i, (j, s) in enumerate(ref.locate(ref.int_key(x), ref_seeds, w)):
                ref_table[i, j] += s
        p = times[q]
        noised = set()
        for k in range(offsets[q], offsets[q + 1]):
            cells = ref.locate(ref.int_key(qkeys[k]), ref_seeds, w)
            for i, (j, _) in enumerate(cells):
                if (i, j) not in noised:
                    noised.add((i, j))
                    ref_table[i, j] += 1
                    n_noise += 1
            assert out[k] == np.median([s * ref_table[i, j] for i, (j, s) in enumerate(cells)])
            assert truth[k] == (np.sum(stream[:p] == qkeys[k]) if qkeys[k] <= 30 else -1)
    assert pos == 400 and used == n_noise
    np.testing.assert_array_equal(table, ref_table)


def test_zipf_stream_distribution():
    from sklearn_bayes.datasets._streams import make_zipf_stream

    for alpha in (1.0, 0.5, 2.0):
        x = make_zipf_stream(100_000, alpha=alpha, n_values=40, random_state=1)
        p = np.arange(1, 41, dtype=float) ** -alpha
        p /= p.sum()
        assert stats.chisquare(np.bincount(x, minlength=41)[1:], 100_000 * p).pvalue > 1e-3
    with pytest.raises(ValueError, match="alpha"):
        make_zipf_stream(10, alpha=-1.0)


def test_reproduction_runs_end_to_end_at_tiny_scale(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    from sklearn_bayes.experiments import count_sketch as exp

    monkeypatch.setattr(exp, "REDUCED", dict(n=2**14, n_values=2**20, total_queries=200, start=500,
                                             n_q=(1, 100), reps=1))
    monkeypatch.setattr(exp, "EPSILONS", (1.0,))
    monkeypatch.setattr(exp, "DEPTHS", (3,))
    monkeypatch.setattr(exp, "POOLS", (50,))
    table = exp.reproduce(tmp_path)
    assert [row["n_q"] for row in table] == [1, 100]
    assert all(np.isfinite(row["d=3"]) for row in table)
    for name in ("sketch_runs.csv", "sketch_summary.csv", "sketch_curves.csv", "sketch_fig43.png", "sketch_fig44.png"):
        assert (tmp_path / name).exists()
    assert "Section 4.6" in capsys.readouterr().out


# ------------------------------------------------------------------ noise at the edges


@pytest.mark.parametrize("pan_private", [False, True])
def test_epsilon_too_small_for_any_release_is_refused_at_fit(pan_private):
    # was: noise of scale 5e30 sampled as exactly 0 -> exact counts [100, 50] released
    est = PrivateCountSketch(epsilon=1e-30, pan_private=pan_private, random_state=np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"epsilon=1e-30 is too small.*2\*\*56"):
        est.fit([1] * 100 + [2] * 50)
    assert not any(k.endswith("_") for k in vars(est))
    # just inside the limit: every pan-private start cell and every answer is noisy
    eps = 5 / 2.0**55
    est = _sketch(epsilon=eps, pan_private=pan_private, depth=5, width=64).fit([1] * 100 + [2] * 50)
    if pan_private:
        assert np.count_nonzero(est.table_) == est.table_.size
    assert np.all(est.query([1, 2]) != [100, 50])


@pytest.mark.parametrize("mechanism", ["median_perturbation", "use_and_forget"])
def test_exhausted_budget_schedule_refuses_and_never_answers_exactly(mechanism):
    """The geometric schedules: noise grows until the scale limit, then a clear refusal."""
    eps, eta = 1.0, 0.5
    est = _sketch(epsilon=eps, depth=1, width=1, kind="count_min", mechanism=mechanism, decay=eta).fit([7] * 100)
    # the (k+1)-th use has scale 1 / (ε (1-η) η^k) (m_Q = 1, d = 1): the last one <= 2**56 is k = 54
    last = max(k for k in range(200) if 1 / (eps * (1 - eta) * eta**k) <= 2.0**56)
    answers = [est.query([7])[0] for _ in range(last + 1)]
    assert all(a != 100 for a in answers[30:])  # scale >= 2**31: P(noise = 0) < 1e-9 each
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match="exhausted"):
        est.query([7])
    assert pickle.dumps(est) == before  # refused: nothing released, nothing changed
    assert est.n_query_sets_ == last + 1 and est.epsilon_spent_ <= eps  # 1 - 2**-56 rounds to 1


# ------------------------------------------------------------------ fitted state is frozen


_CHANGES = {
    "epsilon": 1.0, "depth": 3, "width": 32, "kind": "count_min", "mechanism": "use_and_forget", "decay": 0.9,
    "noise": "laplace", "pan_private": True, "sampling_rate": 0.5, "hash_seed": 7,
}


@pytest.mark.parametrize("name, value", list(_CHANGES.items()) + [("depth", True), ("epsilon", -1.0)])
def test_parameters_changed_after_fit_are_refused_until_fit(name, value):
    est = _sketch(epsilon=10.0, width=64).fit(np.repeat([1, 2], [100, 50]))
    est.query([1])
    est.set_params(**{name: value})
    before = pickle.dumps(est)
    calls = {
        "partial_fit": lambda: est.partial_fit([1]),
        "query": lambda: est.query([1]),
        "transform": lambda: est.transform([1]),
        "error_bound": lambda: est.error_bound([1], confidence=0.5, f2=1.0),
        "merge": lambda: est.merge(_sketch(epsilon=10.0, width=64).fit([3])),
    }
    for action, call in calls.items():
        with pytest.raises(ValueError, match=rf"{name}=.* was set after the sketch was fitted .*Call fit to restart"):
            call()
        assert pickle.dumps(est) == before, action
    assert est.epsilon_spent_ == 10.0
    if name == "depth" and value is True or value == -1.0:
        with pytest.raises(ValueError, match=f"'{name}' parameter"):  # invalid: refused by fit too
            est.fit([1, 2])
        return
    # fit is the documented restart: it records the new parameters
    if name == "pan_private":
        est.set_params(mechanism="use_and_keep")
    est.fit([1, 2])
    assert est.fitted_params_[name] == value and est.epsilon_spent_ == 0.0
    est.query([1])


def test_epsilon_changed_after_fit_cannot_undercount():
    # was: set_params(epsilon=1.0) on a fitted epsilon=10 sketch -> epsilon_spent_ 5.0 (composition: 5.25)
    est = _sketch(epsilon=10.0, mechanism="median_perturbation", width=64).fit([1, 2])
    est.query([1])
    est.set_params(epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon=1.0 was set after"):
        est.query([1])
    est.set_params(epsilon=10.0)  # set back: the stream continues
    est.query([1])
    assert est.epsilon_spent_ == 7.5


def test_random_state_and_ledger_are_bound_at_fit():
    ledger = PrivacyLedger()
    est = _sketch(width=64, seed=1, ledger=ledger).fit([1, 2])
    est.set_params(random_state=np.random.default_rng(99), ledger=PrivacyLedger())
    replay = _sketch(width=64, seed=1, ledger=PrivacyLedger()).fit([1, 2])
    np.testing.assert_array_equal(est.query([1, 2]), replay.query([1, 2]))  # the fitted generator
    assert ledger.n_releases == 1  # the ledger bound at fit
    est.fit([1, 2])
    est.query([1])
    assert est.ledger.n_releases == 1 and ledger.n_releases == 1


# ------------------------------------------------------------------ merge: fitted state, disjoint shards


def test_merge_compares_fitted_state_not_get_params():
    a = _sketch(width=64).fit([1])
    b = _sketch(width=64).fit([2])
    b.set_params(width=32)  # was: compared get_params() only
    with pytest.raises(ValueError, match="width=32 was set after"):
        a.merge(b)
    b.set_params(width=64)
    c = _sketch(width=32).fit([2])
    c.set_params(width=64)  # get_params() now equal, fitted tables are not
    with pytest.raises(ValueError, match="width=64 was set after"):
        a.merge(c)
    c.set_params(width=32)
    with pytest.raises(ValueError, match=r"fitted with different parameters.*'width': \(64, 32\)"):
        a.merge(c)
    a.merge(b)
    assert a.table_.shape == (5, 64)


@pytest.mark.parametrize("copy_how", ["self", "deepcopy", "pickle"])
def test_merge_refuses_the_same_shard_twice(copy_how):
    import copy

    a = _sketch(width=64).fit([1] * 10)
    other = {"self": a, "deepcopy": copy.deepcopy(a), "pickle": pickle.loads(pickle.dumps(a))}[copy_how]
    before = pickle.dumps(a)
    with pytest.raises(ValueError, match="share a shard"):
        a.merge(other)  # was: every count doubled
    assert pickle.dumps(a) == before


def test_merged_sketches_keep_their_shard_ids():
    a, b, c = (_sketch(width=64, seed=s).fit([s] * 5) for s in (1, 2, 3))
    b_copy = pickle.loads(pickle.dumps(b))
    a.merge(b)
    assert set(a.shard_ids_) == {a.stream_id_, b.stream_id_}
    with pytest.raises(ValueError, match="share a shard"):
        a.merge(b_copy)
    with pytest.raises(ValueError, match="already merged"):
        c.merge(b_copy)  # c does not contain b, but b is merged once (review HSK2 F1)
    c.merge(pickle.loads(pickle.dumps(a)))  # a copy of a (never merged): c now holds a's and b's shards
    with pytest.raises(ValueError, match="share a shard"):
        a.merge(c)  # c contains a and b, which a already holds
    d = _sketch(width=64, seed=4).fit([4])
    a.merge(d)
    assert a.n_items_seen_ == 11


# ------------------------------------------------------------------ resources and input types


def test_table_memory_is_checked_up_front():
    est = PrivateCountSketch(width=10**9)
    with pytest.raises(ValueError, match=r"74.5 GiB for table_ and uses_.*MAX_TABLE_BYTES"):
        est.fit([1, 2, 3])
    assert not any(k.endswith("_") for k in vars(est))
    with pytest.raises(ValueError, match="depth"):
        PrivateCountSketch(depth=10**6, width=1).fit([1, 2, 3])  # was: minutes of O(d^2) medians


@pytest.mark.parametrize("name", ["depth", "width", "hash_seed", "random_state"])
def test_boolean_integers_are_refused(name):
    with pytest.raises(ValueError, match=f"'{name}' parameter"):
        PrivateCountSketch(**{name: True}).fit([1, 2])


@pytest.mark.parametrize("d", [1, 2, 3, 31, 32, 33, 34, 100, 101, 1024])
def test_median_kernel_matches_numpy(d):
    from sklearn_bayes._fast import _sketch as kernel

    rng = np.random.default_rng(d)
    n = 300
    w = 4
    table = rng.integers(-3, 4, size=(d, w)).astype(np.float64)  # many ties
    table[:, 3] = rng.normal(size=d)
    cols = rng.integers(0, w, size=(d, n)).astype(np.int64)
    signs = rng.choice(np.array([-1, 1], dtype=np.int8), size=(d, n))
    out = np.empty(n)
    kernel.estimate(table, cols, signs, True, out)
    expected = np.median(signs * table[np.arange(d)[:, None], cols], axis=0)
    np.testing.assert_array_equal(out, expected)


def test_deep_sketch_answers():
    est = _sketch(depth=1024, width=8, epsilon=1000.0, kind="count").fit([1] * 50)
    assert abs(est.query([1])[0] - 50) < 50


def test_sparse_input_is_refused_clearly():
    sp = pytest.importorskip("scipy.sparse")
    X = sp.csr_matrix(np.eye(3))
    est = _sketch(width=32)
    with pytest.raises(TypeError, match=r"sparse matrices are not supported: X must be a dense.*X.toarray\(\)"):
        est.fit(X)
    est.fit([1, 2])
    before = pickle.dumps(est)
    for call in (est.partial_fit, est.transform):
        with pytest.raises(TypeError, match="sparse matrices are not supported: X"):
            call(X)
    with pytest.raises(TypeError, match="sparse matrices are not supported: items"):
        est.query(X)
    assert pickle.dumps(est) == before


def test_noisy_cells_never_wrap_around():
    est = _sketch(width=4, depth=2).fit([1])
    est.table_[:] = np.iinfo(np.int64).max - 2  # cells at the edge of int64 (white-box)
    for _ in range(200):  # some draw is >= 3 (P(noise >= 3) = p^3 / (1 + p) = 0.05 per draw)
        before = pickle.dumps(est)
        try:
            est.query([1])
        except ValueError as exc:
            assert "overflow" in str(exc)
            break
    else:
        pytest.fail("no overflow was detected")
    assert pickle.dumps(est) == before  # the refused query changed nothing
    assert np.all(est.table_ > 0)  # and nothing wrapped around before it


def test_median_sensitivity_bound_is_algorithm4():
    """The vectorised bound equals Algorithm 4 written out (per row, the fullest column), capped by n_Q."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        d, w, n_q = rng.integers(1, 8), rng.integers(1, 60), rng.integers(1, 100)
        cols = rng.integers(0, w, size=(d, n_q))
        m_hat = sum(max(np.sum(cols[i] == j) for j in range(w)) for i in range(d))
        assert _median_sensitivity_bound(cols, w) == min(n_q, m_hat)
    assert _median_sensitivity_bound(np.zeros((3, 0), dtype=np.int64), 5) == 0
