"""Red-team tests of the posterior-adaptive mechanism rule and of the exact Gibbs sweep.

* The rule (``experiments.adaptive_ldp.fit_adaptive_rule`` with ``privacy._ldp._adaptive_rule``) may use
  past responses only: with users that agree on the first batches, the posterior draws that
  choose each of the following batch's mechanism are bit-identical, and the posterior is read
  with exactly the past batches recorded.
* Every mechanism it can choose is exactly epsilon-LDP as *implemented* (``ss_privatize``,
  ``oue_privatize``): the realised law (with the implementation's rounding of the rare-event
  probability to numpy's 53-bit uniforms) enumerated over all responses for small K in log
  space, and a chi-square test that the implementation samples that law.
* The Gibbs sweep (``_fast._ldp_gibbs.latent_counts``, rejection path of 8038133/81d0d66)
  draws latent categories from the exact conditional ``p(x) ∝ theta_x f(x)``: chi-square
  tests on enumerable K (every test at level 1e-4; 15 tests in this file, family level
  < 2e-3), degenerate theta (zeros, a point mass) checked exactly.
"""

import math

import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import chisquare

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes._fast._ldp_gibbs import latent_counts
from sklearn_bayes.experiments import adaptive_ldp as exp_mod
import sklearn_bayes.privacy._ldp as ldp_face
from sklearn_bayes.privacy._ldp._adaptive_rule import candidate_mechanisms
from sklearn_bayes.privacy._ldp._mechanisms import oue_privatize, ss_privatize

LEVEL = 1e-4
_U53 = 2.0 ** -53


# ----------------------------------------------------------------------------- the rule
_REAL_SAMPLE = AdaptiveLDPFrequencyEstimator.sample_posterior


def _run_rule(X, K, eps, monkeypatch):
    seen_draws, seen_n = [], []
    candidates = candidate_mechanisms(K, eps)

    def spy_choose(draws, epsilon, n, *args, **kwargs):
        draws = np.array(draws, copy=True)
        seen_draws.append(draws)
        # a choice that reacts to any change of its input: the test sees any dependence
        h = int.from_bytes(np.ascontiguousarray(draws).tobytes()[-8:], "little")
        return candidates[h % len(candidates)], {}

    real_sample = _REAL_SAMPLE

    def spy_sample(self, *args, **kwargs):
        seen_n.append(int(self.n_responses_))
        return real_sample(self, *args, **kwargs)

    # the experiment takes the rule from the LDP family's face
    monkeypatch.setattr(ldp_face, "choose_mechanism", spy_choose)
    monkeypatch.setattr(AdaptiveLDPFrequencyEstimator, "sample_posterior", spy_sample)
    _, _, choices = exp_mod.fit_adaptive_rule(X, K, eps, np.random.default_rng(11), n_batches=4, n_draws=3)
    return seen_draws, seen_n, choices


def test_rule_uses_past_responses_only(monkeypatch):
    K, eps, T = 6, 1.0, 400
    rng = np.random.default_rng(0)
    X = rng.integers(0, K, size=T)
    X2 = X.copy()
    X2[200:] = (X[200:] + 1 + rng.integers(0, K - 1, size=200)) % K  # every user of batches 2, 3 changed
    d1, n1, c1 = _run_rule(X, K, eps, monkeypatch)
    d2, n2, c2 = _run_rule(X2, K, eps, monkeypatch)
    assert n1 == n2 == [100, 200, 300]  # the posterior is read with exactly the past batches recorded
    # choices for batches 1 and 2 are made from batches 0 and 0-1: identical users so far
    np.testing.assert_array_equal(d1[0], d2[0])
    np.testing.assert_array_equal(d1[1], d2[1])
    assert c1[:3] == c2[:3]
    # not vacuous: the choice for batch 3 sees batch 2, which differs
    assert not np.array_equal(d1[2], d2[2])


def _pooled(observed, expected, min_expected=5.0):
    """Cells with expected count >= 5 (the chi-square approximation's condition), the others pooled."""
    small = expected < min_expected
    obs, exp = observed[~small].astype(float), expected[~small]
    if expected[small].sum() > 0:
        obs, exp = np.append(obs, observed[small].sum()), np.append(exp, expected[small].sum())
    return obs, exp * obs.sum() / exp.sum()


# ----------------------------------------------------------------------------- exact epsilon-LDP
def _realised_log_law(K, eps, kind, k):
    """ln P(A | x) of the implemented mechanism for every subset A (bit masks) and x."""
    subsets = [np.array([(a >> j) & 1 for j in range(K)], dtype=bool) for a in range(2 ** K)]
    L = np.full((2 ** K, K), -np.inf)
    if kind == "oue":
        q = 1.0 / (math.exp(min(eps, 700.0)) + 1.0)
        q_hat = max(math.ceil(q / _U53), 1) * _U53  # P(u < q), u on the 2^-53 grid (u = 0 included)
        for a, A in enumerate(subsets):
            for x in range(K):
                others = np.delete(A, x)
                m = int(others.sum())
                L[a, x] = math.log(0.5) + m * math.log(q_hat) + (K - 1 - m) * math.log1p(-q_hat)
        return L
    # SS(k): x left out with the implementation's q_out (rounded up onto the uniform grid)
    q_out = math.exp(math.log(K - k) - np.logaddexp(math.log(k) + eps, math.log(K - k))) * (1.0 + 4 * np.finfo(float).eps)
    q_out = max(q_out, np.nextafter(0.0, 1.0))
    q_hat = max(math.ceil(q_out / _U53), 1) * _U53
    l_in = math.log1p(-q_hat) - (gammaln(K) - gammaln(k) - gammaln(K - k + 1))
    l_out = math.log(q_hat) - (gammaln(K) - gammaln(k + 1) - gammaln(K - k))
    for a, A in enumerate(subsets):
        if A.sum() != k:
            continue
        for x in range(K):
            L[a, x] = l_in if A[x] else l_out
    return L


@pytest.mark.parametrize("K", [3, 5])
@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0, 36.0, 40.0, 800.0])
def test_every_candidate_is_exactly_eps_ldp(K, eps):
    for kind, k in candidate_mechanisms(K, eps):
        L = _realised_log_law(K, eps, kind, k)
        total = np.logaddexp.reduce(L, axis=0)
        np.testing.assert_allclose(total, 0.0, atol=1e-12)  # a law for every x
        finite = np.isfinite(L)
        assert np.all(finite.all(axis=1) | (~finite).all(axis=1))  # no response possible for x, impossible for x'
        F = L[finite.all(axis=1)]
        worst = float(np.max(F.max(axis=1) - F.min(axis=1)))
        assert worst <= eps + 1e-9, (kind, k, worst)


@pytest.mark.parametrize("kind, k", [("subset_selection", 1), ("subset_selection", 2), ("oue", None)])
def test_implementation_samples_the_enumerated_law(kind, k):
    K, eps, N = 4, 1.0, 40_000
    rng = np.random.default_rng(7)
    L = _realised_log_law(K, eps, kind, k)
    weights = 1 << np.arange(K)
    for x in (0, 3):
        xs = np.full(N, x)
        m = oue_privatize(xs, K, eps, rng) if kind == "oue" else ss_privatize(xs, K, eps, k, rng)
        codes = m.astype(np.int64) @ weights
        obs = np.bincount(codes, minlength=2 ** K)
        p = np.exp(L[:, x])
        assert obs[p == 0].sum() == 0
        o, e = _pooled(obs, N * p)
        assert chisquare(o, e).pvalue > LEVEL


# ----------------------------------------------------------------------------- the Gibbs sweep
def _sweep(theta, sets, ys, f_in, f_y, f_out, cnt, seed, use_bits):
    K = theta.size
    a_ptr = np.zeros(len(sets) + 1, dtype=np.int32)
    np.cumsum([len(s) for s in sets], out=a_ptr[1:])
    a_idx = np.concatenate([np.sort(np.asarray(s, dtype=np.int32)) for s in sets]).astype(np.int32)
    bits = None
    if use_bits:
        mask = np.zeros((len(sets), K), dtype=bool)
        for g, s in enumerate(sets):
            mask[g, list(s)] = True
        bits = np.ascontiguousarray(np.packbits(mask, axis=1, bitorder="little"))
    counts = np.zeros(K, dtype=np.int64)
    latent_counts(np.random.default_rng(seed), np.ascontiguousarray(theta, dtype=float), a_ptr, a_idx,
                  np.asarray(ys, dtype=np.int32), np.asarray(f_in, dtype=float), np.asarray(f_y, dtype=float),
                  np.asarray(f_out, dtype=float), np.asarray(cnt, dtype=np.int64), counts, None, bits)
    return counts


_SEEDS = {key: 100 + i for i, key in enumerate(
    (s, t, b) for s in ("big_ss", "big_rrrr", "small_rrrr") for t in ("dirichlet", "zeros", "outside_only")
    for b in (False, True))}


def _conditional(theta, A, y, fin, fy, fo):
    f = np.full(theta.size, fo)
    f[list(A)] = fin
    if y >= 0:
        f[y] = fy
    w = theta * f
    return w / w.sum()


# K = 20 and two identical groups with |A| = 17 > 16: their sizes (34) exceed K, so the alias
# table and the rejection path are used; a third case keeps the sets small (direct path).
_K = 20
_A_BIG = tuple(range(2, 19))
_A_SMALL = (1, 4, 9)


def _thetas():
    rng = np.random.default_rng(3)
    th = rng.dirichlet(np.full(_K, 0.7))
    zeros = th.copy()
    zeros[[2, 5, 19, 0]] = 0.0  # zeros inside A, at y and outside
    zeros /= zeros.sum()
    outside = np.zeros(_K)
    outside[[0, 1, 19]] = [0.5, 0.3, 0.2]  # no mass in A: every proposal from theta in A is impossible
    return {"dirichlet": th, "zeros": zeros, "outside_only": outside}


@pytest.mark.parametrize("use_bits", [False, True])
@pytest.mark.parametrize("name", ["dirichlet", "zeros", "outside_only"])
@pytest.mark.parametrize("setting", ["big_ss", "big_rrrr", "small_rrrr"])
def test_gibbs_latent_draws_follow_the_exact_conditional(setting, name, use_bits):
    theta = _thetas()[name]
    if setting == "big_ss":  # static set response: f = e^eps in A, 1 outside, no special category
        A, y, fin, fy, fo = _A_BIG, -1, math.e ** 1.5, 0.0, 1.0
    elif setting == "big_rrrr":  # RRRR-like: y outside A with its own value
        A, y, fin, fy, fo = _A_BIG, 0, 0.8, 3.0, 0.15
    else:
        A, y, fin, fy, fo = _A_SMALL, 19, 2.0, 5.0, 0.5
    if not (use_bits or name == "dirichlet"):
        pytest.skip("binary-search membership is exercised on the Dirichlet theta")
    n = 60_000
    counts = _sweep(theta, [A, A], [y, y], [fin, fin], [fy, fy], [fo, fo], [n // 2, n - n // 2],
                    seed=_SEEDS[(setting, name, use_bits)], use_bits=use_bits)
    p = _conditional(theta, A, y, fin, fy, fo)
    assert counts.sum() == n
    assert counts[p == 0].sum() == 0  # never a category of zero conditional probability
    obs, exp = _pooled(counts, n * p)
    if obs.size > 1:
        assert chisquare(obs, exp).pvalue > LEVEL


@pytest.mark.parametrize("setting", ["big_ss", "big_rrrr_at_y", "big_rrrr_out", "small"])
def test_gibbs_point_mass_theta_is_exact(setting):
    """theta = a point mass: every latent draw is that category (when its likelihood is > 0)."""
    j = {"big_ss": 7, "big_rrrr_at_y": 0, "big_rrrr_out": 19, "small": 4}[setting]
    theta = np.zeros(_K)
    theta[j] = 1.0
    A = _A_SMALL if setting == "small" else _A_BIG
    y = -1 if setting == "big_ss" else 0
    counts = _sweep(theta, [A, A], [y, y], [2.0, 2.0], [3.0, 3.0], [0.5, 0.5], [500, 500], seed=1, use_bits=True)
    expected = np.zeros(_K, dtype=np.int64)
    expected[j] = 1000
    np.testing.assert_array_equal(counts, expected)
