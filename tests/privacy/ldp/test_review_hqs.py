"""Review HQS (local-DP release paths): budget escapes through the client object, a client handed out
before the budget changed, tie-breaks of the subset samplers, replays without a warning, epsilon rounding."""

import copy
import pickle
from fractions import Fraction

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism

K = 5


# ---------------------------------------------------------------- B1: the client object is validated and read-only
@pytest.mark.parametrize("mechanism", ["grr", "subset_selection", "oue"])
def test_handed_out_client_is_a_read_only_copy(mechanism):
    est = AdaptiveLDPFrequencyEstimator(n_categories=12, epsilon=1.0, mechanism=mechanism, n_final_steps=50,
                                        random_state=np.random.default_rng(1))
    est.partial_fit(np.arange(12).reshape(-1, 1))
    client = est.client_mechanism()
    assert client is not est._client and client == est._client
    for name, value in [("epsilon", 30.0), ("subset_size", 3), ("kind", "oue"), ("n_categories", 3),
                        ("_epsilon", 30.0)]:
        with pytest.raises(AttributeError, match="read-only"):
            setattr(client, name, value)
    with pytest.raises(AttributeError, match="read-only"):
        del client.epsilon
    assert client.epsilon == 1.0 and est._client.epsilon == 1.0


def test_simulation_releases_follow_the_server_budget_not_a_client():
    """The reproducer's attack: with a mutable shared client, epsilon = 30 released the true category 100 %."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, K, size=4000).reshape(-1, 1)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, mechanism="grr", n_final_steps=50,
                                        random_state=np.random.default_rng(1))
    est.partial_fit(X[:100])
    client = est.client_mechanism()
    with pytest.raises(AttributeError):
        client.epsilon = 30.0
    est.partial_fit(X[100:])
    st = est._chain.store
    released = np.unpackbits(st.masks[st.sids[100:st.n]], axis=1, count=K).argmax(axis=1)
    p = np.e / (np.e + K - 1)  # GRR at eps = 1; 3900 draws: SE 0.0074
    assert abs(np.mean(released == X[100:, 0]) - p) < 4 * np.sqrt(p * (1 - p) / 3900)


@pytest.mark.parametrize("eps", [float("nan"), 0.0, -1.0, float("inf"), Fraction(1, 10), "1", True])
def test_set_response_mechanism_refuses_bad_epsilon(eps):
    with pytest.raises((ValueError, TypeError), match="epsilon"):
        SetResponseMechanism(K, eps, "subset_selection", 1)


@pytest.mark.parametrize("k", [0, K, K + 3, -1, 1.0, None, True])
def test_set_response_mechanism_refuses_bad_subset_size(k):
    with pytest.raises((ValueError, TypeError), match="subset_size"):
        SetResponseMechanism(K, 1.0, "subset_selection", k)


@pytest.mark.parametrize("kind", ["bogus", "grr", None, 1])
def test_set_response_mechanism_refuses_bad_kind(kind):
    with pytest.raises(ValueError, match="kind"):
        SetResponseMechanism(K, 1.0, kind, 1)


@pytest.mark.parametrize("n", [1, 0, 2.0, True])
def test_set_response_mechanism_refuses_bad_n_categories(n):
    with pytest.raises((ValueError, TypeError), match="n_categories"):
        SetResponseMechanism(n, 1.0, "subset_selection", 1)


def test_set_response_mechanism_copies_and_pickles_are_equal_and_validated():
    m = SetResponseMechanism(K, 0.5, "subset_selection", 2)
    for c in (copy.copy(m), copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert c == m and repr(c) == repr(m)
    # a pickle written when the parameters were a __dict__ is validated anew
    old = SetResponseMechanism.__new__(SetResponseMechanism)
    old.__setstate__({"n_categories": K, "epsilon": 0.5, "kind": "subset_selection", "subset_size": 2})
    assert old == m
    with pytest.raises(ValueError, match="epsilon"):
        SetResponseMechanism.__new__(SetResponseMechanism).__setstate__(
            {"n_categories": K, "epsilon": float("nan"), "kind": "oue", "subset_size": None})


def test_grr_store_refuses_three_sets_even_after_an_attempted_client_change():
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, mechanism="grr", n_final_steps=50)
    c = est.client_mechanism()
    est.partial_fit_responses(c.privatize(np.array([0, 1, 2]), random_state=np.random.default_rng(3)))
    with pytest.raises(AttributeError):
        est.client_mechanism().subset_size = 3
    y3 = np.zeros((4, K), dtype=bool)
    y3[:, :3] = True
    with pytest.raises(ValueError):
        est.partial_fit_responses(y3)
    assert est.n_responses_ == 3


# ---------------------------------------------------------------- B2: a handed-out client freezes its parameters
@pytest.mark.parametrize("mechanism", ["grr", "oue", "subset_selection"])
@pytest.mark.parametrize("fitted", [False, True])
def test_client_handed_out_then_budget_changed_is_refused(mechanism, fitted):
    est = AdaptiveLDPFrequencyEstimator(n_categories=40, epsilon=3.0, mechanism=mechanism, n_final_steps=50)
    if fitted:
        est.fit(np.arange(40).reshape(-1, 1))
    client = est.client_mechanism()
    y = client.privatize(np.zeros(50, dtype=int), random_state=np.random.default_rng(0))
    est.set_params(epsilon=0.5)
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match="epsilon was 3.0 when"):  # (fitted: the frozen-parameter check first)
        est.partial_fit_responses(y)
    with pytest.raises(ValueError, match="epsilon"):
        est.client_mechanism()
    assert pickle.dumps(est) == before
    if fitted:  # a restart does not free the handed-out client either
        est.fit(np.arange(40).reshape(-1, 1))
        with pytest.raises(ValueError, match="epsilon was 3.0 when client_mechanism"):
            est.partial_fit_responses(y)
    est.set_params(epsilon=3.0)
    if fitted:
        est.fit(np.arange(40).reshape(-1, 1))
    est.partial_fit_responses(y)
    assert est.n_responses_ == 50 + 40 * fitted


def test_clone_starts_free_of_handed_out_clients():
    from sklearn.base import clone

    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=3.0, mechanism="grr", n_final_steps=50)
    est.client_mechanism()
    new = clone(est).set_params(epsilon=0.5)
    assert new.client_mechanism().epsilon == 0.5
    new.partial_fit_responses(np.array([0, 1]))
    assert new.n_responses_ == 2


# ---------------------------------------------------------------- V2 / V3: ties of the subset keys
class _GridFeed:
    """A generator stub: the left-out draw, then every key vector of the grid ``{0, ..., G-1} / G`` (one per
    user), then tie-free redraws (counted)."""

    def __init__(self, first, keys):
        self.first, self.keys, self.redrawn = first, keys, 0

    def random(self, size=None):
        if self.first is not None:
            a, self.first = self.first, None
            assert a.shape == (size,)
            return a
        if self.keys is not None:
            a, self.keys = self.keys, None
            assert a.shape == size
            return a
        self.redrawn += size[0]
        return np.broadcast_to((np.arange(size[1]) + 0.5) / size[1], size).copy()


@pytest.mark.parametrize("K, k, kept", [(K, k, kept) for K, k in [(3, 1), (4, 1), (5, 1), (4, 2), (5, 2), (5, 3),
                                                                   (5, 4), (6, 3)]
                                          for kept in (False, True) if not (kept and k == 1)])
def test_subset_law_on_a_coarse_grid_is_exactly_uniform(K, k, kept):
    """On every key vector of a coarse grid (G = 4: ties are common), the sampler's subset of the other categories
    is exactly uniform among the vectors whose k-th smallest key is unique, and exactly the others are
    redrawn.  The shipped sampler (argmin / argpartition break ties by position) redrew none: K=5, k=1, left out,
    G=4 gave the last category 144/1024 and the first 400/1024."""
    import itertools
    from math import comb

    from sklearn_bayes.privacy._ldp._mechanisms import ss_privatize_packed

    j = k - 1 if kept else k  # members drawn among the K - 1 other categories (>= 1 here)
    G, x = 4, 2
    keys = np.array(list(itertools.product(range(G), repeat=K)), dtype=float) / G
    n = keys.shape[0]
    feed = _GridFeed(np.full(n, 0.999 if kept else 0.0), keys.copy())
    out = np.unpackbits(ss_privatize_packed(np.full(n, x), K, 1.0, k, feed), axis=1, count=K).astype(bool)
    assert (out[:, x] == kept).all() and (out.sum(axis=1) == k).all()
    others = np.sort(np.delete(keys, x, axis=1), axis=1)
    tied = (others == others[:, j - 1:j]).sum(axis=1) > 1  # the decisive (k-th smallest) key repeated
    assert feed.redrawn == tied.sum() > 0
    _, counts = np.unique(out[~tied], axis=0, return_counts=True)
    assert counts.size == comb(K - 1, j) and (counts == counts[0]).all(), counts


# ---------------------------------------------------------------- B3: check_epsilon is exact for every type
@pytest.mark.parametrize("eps", [np.longdouble("0.1"), np.longdouble(1) / 3, 2**53 + 1, 2**53 + 3,
                                 np.int64(2**53 + 3), np.uint64(2**63 + 1), Fraction(1, 10)])
def test_check_epsilon_refuses_a_value_no_float_equals(eps):
    from sklearn_bayes.privacy import RRRRMechanism
    from sklearn_bayes.utils import check_epsilon

    if isinstance(eps, np.longdouble) and np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("longdouble is float64 on this platform")
    with pytest.raises(ValueError, match="epsilon=.* is not exactly a float"):
        check_epsilon(eps)
    with pytest.raises(ValueError, match="epsilon"):
        RRRRMechanism(4, eps)
    with pytest.raises(ValueError, match="epsilon"):
        SetResponseMechanism(4, eps, "oue")


@pytest.mark.parametrize("eps, value", [(np.longdouble("0.5"), 0.5), (2**53, 2.0**53), (np.int64(7), 7.0),
                                        (np.float32(0.1), float(np.float32(0.1))), (np.float16(0.1),
                                        float(np.float16(0.1))), (Fraction(3, 4), 0.75), (2**60, 2.0**60)])
def test_check_epsilon_keeps_exact_values(eps, value):
    from sklearn_bayes.utils import check_epsilon

    out = check_epsilon(eps)
    assert type(out) is float and out == value and Fraction(out) == Fraction(value)


# ---------------------------------------------------------------- R1-R3: replays and small seeds warn
REPLAY = "already drew privacy noise"


def _warnings_of(call):
    import warnings

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        call()
    return [str(x.message) for x in w if x.category.__name__ == "SeededNoiseWarning"]


def _big_rng(seed):
    """A Generator with more than 64 bits of seed entropy (no small-seed warning)."""
    return np.random.default_rng([seed, 2**40 + 7, 2**40 + 11])


@pytest.mark.parametrize("client", ["set_response", "rrrr"])
def test_a_copied_generator_on_the_same_client_warns(client):
    """The guard treated the same instance asking again from the same state as a retry: a device object
    reused with a copied Generator replayed its noise silently (differencing: the releases differ only
    where the users do)."""
    from sklearn_bayes.privacy import RRRRMechanism

    if client == "rrrr":
        mech, call = RRRRMechanism(K, 1.0), (lambda x, r: mech.privatize(x, [0, 1], random_state=r))
    else:
        mech = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="grr").client_mechanism()
        call = lambda x, r: mech.privatize(x, random_state=r)  # noqa: E731
    g = _big_rng(12345 + (client == "rrrr"))  # the registry is process-wide: a state per test
    snap = copy.deepcopy(g)
    x = np.zeros(200, dtype=int)
    assert not any(REPLAY in m for m in _warnings_of(lambda: call(x, g)))
    assert any(REPLAY in m for m in _warnings_of(lambda: call(x, snap)))
    assert not any(REPLAY in m for m in _warnings_of(lambda: call(x, g)))  # the advanced original: fresh


@pytest.mark.parametrize("how", ["clone", "deepcopy", "pickle"])
def test_a_copy_of_a_fitted_generator_seeded_estimator_warns(how):
    """The guard registered the generator's state only at the first fit: a copy of the fitted estimator (or a
    clone, whose random_state is the advanced Generator) replayed the original's next noise silently."""
    from sklearn.base import clone

    X = np.random.default_rng(0).integers(0, K, 300).reshape(-1, 1)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="grr", n_final_steps=50,
                                        random_state=_big_rng(70 + ["clone", "deepcopy", "pickle"].index(how)))
    est.fit(X)
    cp = {"clone": clone, "deepcopy": copy.deepcopy, "pickle": lambda e: pickle.loads(pickle.dumps(e))}[how](est)
    assert not any(REPLAY in m for m in _warnings_of(lambda: est.partial_fit(X[:50])))
    refit = (lambda: cp.fit(X[:50])) if how == "clone" else (lambda: cp.partial_fit(X[:50]))
    assert any(REPLAY in m for m in _warnings_of(refit))


def test_a_rejected_call_retried_from_the_same_state_does_not_warn():
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="grr", n_final_steps=50, random_state=_big_rng(8))
    est.fit(np.zeros((20, 1), dtype=int))
    with pytest.raises(ValueError):
        est.partial_fit(np.array([[0], [K + 5]]))
    assert _warnings_of(lambda: est.partial_fit(np.zeros((5, 1), dtype=int))) == []


@pytest.mark.parametrize("seed, small", [(42, True), (2**64 - 1, True), ([1, 2], True), (2**64, False),
                                         ([2**40, 2**40], False), (None, False)])
def test_a_generator_with_a_small_seed_warns(seed, small):
    from sklearn_bayes.privacy import RRRRMechanism

    def calls():
        RRRRMechanism(K, 1.0).privatize([0, 1], [0], random_state=np.random.default_rng(seed))
        SetResponseMechanism(K, 1.0, "oue").privatize([0, 1], random_state=np.random.default_rng(seed))
        AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="grr", n_final_steps=20,
                                      random_state=np.random.default_rng(seed)).fit(np.array([[0], [1]]))

    msgs = [m for m in _warnings_of(calls) if "64 bits of entropy" in m]
    assert len(msgs) == (3 if small else 0)


# ---------------------------------------------------------------- V4: the SS / GRR left-out threshold is exact
def _exp_decimal(eps):
    from decimal import Decimal, getcontext

    getcontext().prec = 80
    return Decimal(eps).exp()


def _ratio_decimal(num, den):
    from decimal import Decimal

    return Decimal(num.numerator * den.denominator) / Decimal(num.denominator * den.numerator)


SS_EPS = [1e-300, 1e-16, 1.5e-14, 1e-14, 1e-12, 1e-10, 1e-6, 1e-3, 0.1, 1.0, 3.0, 5.030968229583157, 10.0, 20.0,
          36.0, 40.0, 700.0, 800.0, 1e300]


@pytest.mark.parametrize("K", [2, 3, 4, 5, 6, 10, 1000, 10**6, 2**31 - 1])
def test_ss_left_out_threshold_is_exactly_epsilon_ldp_or_refused(K):
    """The realised SS(k) law (left out with P = n / 2^53, subsets uniform) keeps both ratios
    (1 - P)(K - k) / (P k) and its inverse within e^eps, checked exactly; a budget no grid point can honour is
    refused naming epsilon.  The former threshold exceeded e^eps by 2.9e-11 nats at K = 10^6, eps <= 1e-12, and
    by 4.7e-10 at K = 2^31 - 1."""
    from sklearn_bayes.privacy._ldp._mechanisms import ss_left_out_threshold

    accepted = 0
    for k in sorted(k for k in {1, 2, K // 2, K - 2, K - 1} if 1 <= k < K):
        for eps in SS_EPS:
            try:
                t = ss_left_out_threshold(K, eps, k)
            except ValueError as exc:
                assert "epsilon=" in str(exc) and eps < 1e-6
                continue
            accepted += 1
            P = Fraction(t)
            assert P * 2**53 == int(P * 2**53) and 0 < P < 1  # exactly n / 2^53: P(u < t) = P
            up = (1 - P) * (K - k) / (P * k)
            bound = _exp_decimal(min(eps, 700.0))  # e^700 <= e^eps
            for r in (up, 1 / up):
                assert _ratio_decimal(Fraction(r), Fraction(1)) <= bound, (K, k, eps)
    assert accepted > 0


def test_ss_budget_below_the_grid_is_refused_at_construction():
    with pytest.raises(ValueError, match="epsilon=1e-300 is below the smallest budget"):
        SetResponseMechanism(10, 1e-300, "subset_selection", 3)
    est = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=1e-300, mechanism="grr")
    with pytest.raises(ValueError, match="epsilon"):
        est.partial_fit_responses(np.array([0]))
    assert "n_responses_" not in vars(est)
    SetResponseMechanism(10, 1e-12, "subset_selection", 5)  # honoured


# ---------------------------------------------------------------- V1: RRRR device thresholds are exact
RRRR_EPS = [1e-300, 1e-14, 1e-12, 1e-10, 1e-6, 1e-3, 0.1, 0.5, 1.0, 2.0, 3.1622776601683795, 5.0, 10.0, 20.0, 36.0,
            40.0, 100.0, 700.0, 1e6]


def _rrrr_columns(K, k, P1, P2):
    """Every column's distinct realised probabilities (Fractions) of RRRR on S = {0..k-1}, written out from the
    mechanism's definition (independently of _rrrr_grid)."""
    if k == 0:
        return [[1 - P1, P1 / (K - 1)]]
    sc = K - k
    cols = [[1 - P1, P1 / k]]  # y in S: x = y; x != y (in S or not)
    if sc == 1:
        cols.append([1 - P1, P1 / k])
    else:
        cols.append([(1 - P2) * (1 - P1), P1 / k / sc, P2 / (sc - 1) * (1 - P1)])
    return cols


@pytest.mark.parametrize("K", [2, 3, 4, 5, 6, 1000, 10**6, 2**31 - 1])
def test_rrrr_device_thresholds_are_exactly_epsilon_ldp_or_refused(K):
    """The device sampler's realised law (rare branches with P = t exactly, t on the 2^-53 grid) has every
    column's max/min ratio at most e^eps, checked in exact arithmetic, for every size in {0, 1, 2, K//2, K-2,
    K-1}, kappa in {1e-300, 0.5, 0.9, 1} and an eps grid; a budget no grid point honours is refused naming
    epsilon.  The former thresholds (float value times 1 + 8 ulps) exceeded e^eps by up to 9.3e-13 nats at
    K = 1000 and about 1e-6 at K = 2^31 - 1."""
    from sklearn_bayes.privacy import RRRRMechanism

    N = 2**53
    checked = 0
    for kappa in (1e-300, 0.5, 0.9, 1.0):
        for eps in RRRR_EPS:
            mech = RRRRMechanism(K, eps, kappa)
            for k in sorted(k for k in {0, 1, 2, K // 2, K - 2, K - 1} if 0 <= k < K):
                try:
                    t1, t2 = mech._thresholds(k)
                except ValueError as exc:
                    assert "epsilon=" in str(exc) and eps < 1e-6, (K, kappa, eps, k)
                    continue
                P1, P2 = Fraction(t1), Fraction(t2)
                assert P1 * N == int(P1 * N) and P2 * N == int(P2 * N) and 0 < P1 < 1 and 0 <= P2 < 1
                bound = _exp_decimal(min(eps, 700.0))
                for col in _rrrr_columns(K, k, P1, P2):
                    assert min(col) > 0
                    assert _ratio_decimal(max(col), min(col)) <= bound, (K, kappa, eps, k)
                checked += 1
    assert checked > 0


@pytest.mark.parametrize("t", [2.0**-53, 2702159776422297 / 2**53, 0.5953903248085295, 1 - 2.0**-53, 0.9999999987342014])
def test_the_compiled_rare_branch_realises_a_grid_threshold_exactly(t):
    """#{j : the kernel takes the rare branch at u = j / 2^53} = t 2^53 (bisection on the compiled decision)."""
    from sklearn_bayes._fast._ldp import rare_given_threshold

    N = 2**53
    lo, hi = 0, N
    while lo < hi:  # the rare branch holds exactly for j >= N - count
        mid = (lo + hi) // 2
        if rare_given_threshold(mid / N, t):
            hi = mid
        else:
            lo = mid + 1
    assert N - lo == Fraction(t) * N


def test_rrrr_device_release_follows_its_transition_matrix():
    """Monte Carlo audit of the device sampler with the exact thresholds: K = 5, S = {1, 3}, 40000 draws per x;
    every cell within 5 binomial standard errors of the closed form."""
    from sklearn_bayes.privacy import RRRRMechanism

    K, n = 5, 40000
    mech = RRRRMechanism(K, 1.0, 0.8)
    P = mech.transition_matrix([1, 3])
    rng = np.random.default_rng([2026, 11, 26, 99, 1])
    for x in range(K):
        y = mech.privatize(np.full(n, x), [1, 3], random_state=rng)
        freq = np.bincount(y, minlength=K) / n
        se = np.sqrt(P[x] * (1 - P[x]) / n)
        assert np.all(np.abs(freq - P[x]) <= 5 * se), (x, freq, P[x])


def test_rrrr_client_mechanism_is_the_devices_rrrr_with_frozen_parameters():
    """mechanism='rrrr' hands out an RRRRMechanism with the estimator's parameters (it raised before); a later
    kappa or epsilon change is refused like the static clients' (review HQS B2)."""
    from sklearn_bayes.privacy import RRRRMechanism

    est = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="rrrr", epsilon=2.0, kappa=0.8, n_final_steps=20)
    client = est.client_mechanism()
    assert isinstance(client, RRRRMechanism)
    assert (client.n_categories, client.epsilon, client.kappa) == (K, 2.0, 0.8)
    y = client.privatize(np.array([0, 1, 2]), [0], random_state=_big_rng(31))
    est.set_params(kappa=0.5)
    with pytest.raises(ValueError, match="kappa was 0.8 when client_mechanism"):
        est.partial_fit_responses(y, [[0]] * 3, update="defer")
    est.set_params(kappa=0.8)
    est.partial_fit_responses(y, [[0]] * 3, update="defer")
    assert est.n_responses_ == 3 and est.client_mechanism().kappa == 0.8


def test_simulation_mode_draws_with_the_devices_exact_thresholds():
    """mechanism='rrrr' in simulation mode: the chain's constants table carries the device's exact grid
    thresholds for every subset size (K <= EXACT_SIMULATION_MAX), so the kernel realises the same audited law;
    its release frequencies follow the closed form (Monte Carlo, 5 SE)."""
    from sklearn_bayes.privacy import RRRRMechanism
    from sklearn_bayes.privacy._ldp._rrrr import simulation_table
    from sklearn_bayes.privacy._ldp._rrrr_grid import EXACT_SIMULATION_MAX

    Kc, eps, kappa = 6, 1.0, 0.9
    est = AdaptiveLDPFrequencyEstimator(n_categories=Kc, mechanism="rrrr", epsilon=eps, kappa=kappa,
                                        n_final_steps=20, random_state=_big_rng(41))
    est.partial_fit(np.zeros((3, 1), dtype=int))
    table = est._chain.consts
    mech = RRRRMechanism(Kc, eps, kappa)
    assert table.shape == (Kc, 8)
    for k in range(Kc):
        assert tuple(table[k, 6:]) == mech._thresholds(k)
    assert simulation_table(EXACT_SIMULATION_MAX + 1, eps, kappa).shape[1] == 6  # large K: the former rounding
    # the kernel with the table's row draws the closed-form law
    from sklearn_bayes._fast._ldp import rrrr_sample

    n, S = 60000, [1, 3]
    P = mech.transition_matrix(S)
    sigma = np.array([1, 3, 0, 2, 4, 5], dtype=np.int32)
    rng = _big_rng(42)
    for x in (0, 1):
        out = np.empty(n, dtype=np.int32)
        rrrr_sample(rng, np.full(n, x, dtype=np.int32), sigma, 2, np.ascontiguousarray(table[2]), out)
        freq = np.bincount(out, minlength=Kc) / n
        assert np.all(np.abs(freq - P[x]) <= 5 * np.sqrt(P[x] * (1 - P[x]) / n)), (x, freq, P[x])
