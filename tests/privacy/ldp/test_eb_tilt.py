"""The empirical-Bayes decoder's sum-to-one step (issue 28, round 14): the posterior means under the NPMLE ``G``
conditioned on ``sum_v theta_v = 1`` by one exponential tilt (``decoder='eb'``), and the means divided by their sum
of rounds 1-13 (``decoder='eb-rescale'``)."""

import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp import _empirical_bayes as E
from sklearn_bayes.privacy._ldp._empirical_bayes import (
    AUTO_EB_MIN_CATEGORIES,
    TILT_TOL,
    _grid,
    _likelihood,
    _tilted,
    eb_estimate,
    npmle_weights,
    support_probabilities,
    tilted_means,
)
from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _counts(theta, n, eps, kind="ss", seed=0):
    """Support counts of ``n`` responses of the static mechanism (exactly ``Binomial(n, q + (p - q) theta_v)``)."""
    p, q = _pq(theta.size, eps, kind)
    rng = np.random.default_rng(seed)
    return rng.binomial(n, q + (p - q) * theta).astype(float), n, p, q


def _pq(K, eps, kind="ss"):
    """``(p, q)`` of SS(k) at the usual ``k = K / (e^eps + 1)`` (rounded, at least 1), GRR = SS(1), or OUE."""
    if kind == "oue":
        return support_probabilities(SetResponseMechanism(K, eps, "oue"))
    k = 1 if kind == "grr" else max(1, round(K / (np.exp(eps) + 1)))
    return support_probabilities(SetResponseMechanism(K, eps, "subset_selection", subset_size=k))


def _parts(c, n, p, q):
    """``(L, w, u)`` of the decoder: the binomial likelihood rows, the NPMLE weights, the atoms."""
    u = _grid((c / n - q) / (p - q), n, p, q)
    L = _likelihood(c, n, p, q, u)
    return L, npmle_weights(L)[0], u


def _log_post(L, w):
    with np.errstate(divide="ignore"):
        return np.log(L) + np.log(w)[None, :]


def _rescaled(c, n, p, q):
    """The estimate of rounds 1-13, written out: the posterior means under the NPMLE divided by their sum."""
    L, w, u = _parts(c, n, p, q)
    post = L * w[None, :]
    mean = (post @ u) / post.sum(axis=1)
    return mean / mean.sum()


def _sparse(K, seed=0):
    return np.random.default_rng(seed).dirichlet(np.full(K, 0.1))


@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
def test_the_tilt_makes_the_posterior_means_sum_to_one(eps):
    c, n, p, q = _counts(_sparse(80), 20_000, eps)
    L, w, u = _parts(c, n, p, q)
    theta, lam, ok = tilted_means(L, w, u)
    assert ok
    # at the root the tilted means themselves sum to 1 within the stopping tolerance; the final division by that
    # sum then leaves a sum of 1 up to rounding (K additions of numbers <= 1: K ulps)
    assert abs(_tilted(_log_post(L, w), u, lam)[0].sum() - 1.0) <= TILT_TOL
    assert abs(theta.sum() - 1.0) <= c.size * np.finfo(float).eps
    assert np.all(theta >= 0) and np.all(np.isfinite(theta))
    # round G3: eb_estimate's default numerics give these numbers up to rounding; fast=False, bit for bit
    assert np.allclose(theta, eb_estimate(c, n, p, q, fast=False)[0], rtol=0, atol=0)
    assert np.allclose(theta, eb_estimate(c, n, p, q)[0], rtol=0, atol=1e-12)


def test_the_sum_of_tilted_means_is_monotone_in_lambda():
    c, n, p, q = _counts(_sparse(64, seed=3), 20_000, 1.0)
    L, w, u = _parts(c, n, p, q)
    logP = _log_post(L, w)
    lams = np.concatenate([-np.geomspace(1e4, 1e-2, 40), [0.0], np.geomspace(1e-2, 1e4, 40)])
    sums, var_sums = zip(*[(m.sum(), v.sum()) for m, v in (_tilted(logP, u, lam) for lam in lams)])
    # nondecreasing up to the rounding of a sum of K means (K ulps of 1)
    assert np.all(np.diff(sums) >= -c.size * np.finfo(float).eps)
    # its derivative is the sum of the posterior variances: a central difference agrees to second order
    h = 1e-4
    for lam in (-5.0, 0.0, 5.0):
        fd = (_tilted(logP, u, lam + h)[0].sum() - _tilted(logP, u, lam - h)[0].sum()) / (2 * h)
        assert fd == pytest.approx(_tilted(logP, u, lam)[1].sum(), rel=1e-5)
    assert sums[0] < 1.0 < sums[-1]


def test_lambda_is_zero_when_the_plain_means_sum_to_one():
    # four identical rows, atoms 0 and 1/2 with weights 1/2: every mean is exactly 1/4 and the sum exactly 1
    L, w, u = np.ones((4, 2)), np.array([0.5, 0.5]), np.array([0.0, 0.5])
    theta, lam, ok = tilted_means(L, w, u)
    assert lam == 0.0 and ok and np.array_equal(theta, np.full(4, 0.25))


def test_without_a_root_the_means_of_the_bracket_end_are_returned_unconverged():
    # every row's support is {0, 0.1}: the means sum to at most 0.2 whatever the tilt
    L, w, u = np.ones((2, 2)), np.array([0.5, 0.5]), np.array([0.0, 0.1])
    theta, lam, ok = tilted_means(L, w, u)
    assert not ok and lam > 0 and np.allclose(theta, [0.5, 0.5], rtol=0, atol=1e-15)


def test_n_zero_gives_the_uniform_vector_and_no_tilt():
    p, q = _pq(70, 1.0)
    theta, info = eb_estimate(np.zeros(70), 0, p, q)
    assert np.array_equal(theta, np.full(70, 1 / 70)) and info["tilt"] == 0.0 and info["tilt_converged"]


def test_all_counts_zero_gives_equal_categories():
    # OUE can report the empty set: n responses that support no category (identical rows: equal means by symmetry)
    p, q = _pq(70, 2.0, "oue")
    theta, info = eb_estimate(np.zeros(70), 50, p, q)
    assert info["tilt_converged"] and info["tilt"] > 0  # the plain means (near 0) sum below 1
    assert np.allclose(theta, 1 / 70, rtol=0, atol=70 * np.finfo(float).eps)


@pytest.mark.parametrize("eps", [60.0, 0.05])
def test_extreme_epsilon(eps):
    # eps 60: q ~ e^-60 (GRR's reports are the truth); eps 0.05: p - q ~ 0.006
    K, n = 70, 20_000
    theta_star = _sparse(K, seed=1)
    c, n, p, q = _counts(theta_star, n, eps, kind="grr" if eps > 10 else "ss")
    theta, info = eb_estimate(c, n, p, q)
    assert info["tilt_converged"] and np.isfinite(info["tilt"])
    assert abs(theta.sum() - 1.0) <= K * np.finfo(float).eps and np.all(theta >= 0)
    if eps > 10:
        # without noise: no worse than the raw frequencies' expected TV bound, 0.5 sum_v sqrt(theta_v / n)
        assert 0.5 * np.abs(theta - theta_star).sum() <= 0.5 * np.sqrt(theta_star / n).sum()


def _fit(K, decoder, n=8000, eps=1.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.choice(K, size=n, p=_sparse(K, seed)).reshape(-1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, decoder=decoder, n_final_steps=200,
                                             random_state=np.random.default_rng(seed + 1)).fit(X)


def test_eb_rescale_is_exactly_the_estimate_before_round_14(monkeypatch):
    est = _fit(AUTO_EB_MIN_CATEGORIES, "eb-rescale")
    assert est.convergence_["method"] == "eb-rescale" and "tilt" not in est.convergence_
    # round S: one likelihood row per distinct count changes the EM's sums' order (rounding only); the switch
    # UNIQUE_ROWS = False restores the per-category rows, and with them round 13's numbers bit for bit
    theta_s = est.theta_.copy()
    assert np.allclose(theta_s, _rescaled(*est._support_counts()), rtol=0, atol=1e-12)
    monkeypatch.setattr(E, "UNIQUE_ROWS", False)
    old = _fit(AUTO_EB_MIN_CATEGORIES, "eb-rescale")
    assert np.array_equal(old.theta_, _rescaled(*old._support_counts()))
    monkeypatch.setattr(E, "UNIQUE_ROWS", True)
    est.set_params(decoder="eb")  # a compute knob: the same responses, the tilt
    assert est.convergence_["method"] == "eb" and est.convergence_["tilt_converged"]
    assert np.array_equal(est.theta_, eb_estimate(*est._support_counts())[0])
    assert not np.array_equal(est.theta_, _rescaled(*est._support_counts()))
    # the intervals do not depend on the point estimate's sum-to-one step
    assert np.array_equal(est.credible_interval(0.9), est.set_params(decoder="eb-rescale").credible_interval(0.9))


def test_auto_at_64_categories_uses_the_tilt():
    # since round 15 'auto' stacks candidates ('eb-stack'); its 'eb' candidate is the tilt, reported in convergence_,
    # and decoder='eb' on the same fit is the tilt's estimate
    auto = _fit(AUTO_EB_MIN_CATEGORIES, "auto")
    conv = auto.convergence_
    assert conv["method"] == "eb-stack" and "tilt" in conv and conv["tilt_converged"]
    auto.set_params(decoder="eb")
    assert auto.convergence_["tilt"] == conv["tilt"]
    assert np.array_equal(auto.theta_, eb_estimate(*auto._support_counts())[0])


def test_decoder_eb_rescale_with_rrrr_is_refused_naming_the_argument():
    est = AdaptiveLDPFrequencyEstimator(n_categories=5, mechanism="rrrr", decoder="eb-rescale")
    with pytest.raises(ValueError, match="decoder='eb-rescale'"):
        est.fit(np.zeros((10, 1), dtype=int))


def test_below_64_categories_auto_without_eb_never_runs_the_decoder(monkeypatch):
    # the tilt changes only what the empirical-Bayes decoder returns: where 'auto' does not choose it (here the exact
    # posterior at K = 20, below the cross-validated choice's 32), theta_ never reaches it and is unchanged
    import sklearn_bayes.privacy._ldp._decoding as decoding

    reference = _fit(20, "auto").theta_

    def refuse(*args, **kwargs):
        raise AssertionError("the empirical-Bayes decoder ran")

    monkeypatch.setattr(decoding, "eb_estimate", refuse)
    monkeypatch.setattr(decoding, "stacked_estimate", refuse)  # round 15: 'auto''s empirical-Bayes route
    est = _fit(20, "auto")
    assert est.convergence_["method"] != "eb" and np.array_equal(est.theta_, reference)
    with pytest.raises(AssertionError, match="decoder ran"):
        _fit(AUTO_EB_MIN_CATEGORIES, "auto").theta_


@pytest.mark.parametrize("eps", [4.0, 8.0])
def test_at_high_epsilon_every_category_moves_with_lambda_and_no_more_mass_than_the_division(eps):
    # round 14b (issue 28): sparse theta* at eps >= 4, where |lambda| reaches hundreds.  Each tilted mean is
    # nondecreasing in lambda (its derivative is a posterior variance), so every category moves from the plain
    # mean m_v in lambda's direction and the L1 move is exactly |sum_v m_v - 1| -- the division's move too.  Hence
    # |TV(tilt) - TV(division)| <= |sum_v m_v - 1|: the tilt can gain or lose at most the plain sum's distance to 1.
    # Tolerance: the final division by a sum within TILT_TOL of 1, and m_v computed along another path (sums of
    # G <= K + 440 terms, relative error <= G machine epsilons).
    K = 100
    theta_star = _sparse(K, seed=2)
    c, n, p, q = _counts(theta_star, 20_000, eps, seed=2)
    L, w, u = _parts(c, n, p, q)
    post = L * w[None, :]
    m = (post @ u) / post.sum(axis=1)
    tilt, lam, converged = tilted_means(L, w, u)
    assert converged and abs(lam) >= 100  # the regime of the cells: a large tilt
    slack = 2 * TILT_TOL + u.size * np.finfo(float).eps
    assert np.all((tilt - m) * np.sign(lam) >= -np.maximum(tilt, m) * slack)
    gap = abs(m.sum() - 1.0)
    assert abs(np.abs(tilt - m).sum() - gap) <= (1.0 + m.sum()) * slack
    tv = lambda e: 0.5 * np.abs(e - theta_star).sum()
    assert abs(tv(tilt) - tv(m / m.sum())) <= gap + (1.0 + m.sum()) * slack
