"""Review HQV (AdaptiveLDPFrequencyEstimator): a forgotten RRRR ``subsets`` argument, a seed shared by the
users and the privacy noise, ``n_final_steps`` too small for the exact sampler, messages."""

import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator, RRRRMechanism
from sklearn_bayes.exceptions import SeededNoiseWarning


def _gen(seed):
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- F1: RRRR responses need their subsets
def test_rrrr_without_subsets_is_refused_and_leaves_the_state():
    est = AdaptiveLDPFrequencyEstimator(n_categories=5, mechanism="rrrr", random_state=_gen(0))
    with pytest.raises(ValueError, match=r"subsets.*\[\[\]\] \* 1"):
        est.partial_fit_responses([1])
    assert "n_responses_" not in vars(est)
    est.partial_fit_responses([1, 2], [[], [1, 2]])
    before = pickle.dumps(est)
    for update in ("online", "defer"):
        with pytest.raises(ValueError, match="subsets"):
            est.partial_fit_responses([1, 3], update=update)
        assert pickle.dumps(est) == before
    # plain SRR reports, as the message says
    est.partial_fit_responses([1, 3], [[]] * 2)
    assert est.n_responses_ == 4


def test_rrrr_forgotten_subsets_would_have_biased_the_estimate():
    """The reproducer's point: the same responses read as plain SRR pull theta towards the released
    categories (TV 0.35 against 0.14); with the subsets the estimate is the one the protocol gives."""
    K, rng = 10, _gen(3)
    theta = np.array([0.4, 0.25, 0.15, 0.1, 0.05, 0.05, 0, 0, 0, 0])
    x = rng.choice(K, size=3000, p=theta)
    cli = RRRRMechanism(K, epsilon=1.0, kappa=0.9)
    srv = AdaptiveLDPFrequencyEstimator(n_categories=K, mechanism="rrrr", random_state=_gen(1))
    masks = srv.propose_subsets(500)
    y = np.array([cli.privatize(xi, np.flatnonzero(m), random_state=rng) for xi, m in zip(x[:500], masks)])
    srv.partial_fit_responses(y, masks, update="defer")
    masks = srv.propose_subsets(2500)
    assert masks.sum(1).mean() > 0.5  # the proposals are not SRR: dropping them changes the likelihood
    y = np.array([cli.privatize(xi, np.flatnonzero(m), random_state=rng) for xi, m in zip(x[500:], masks)])
    with pytest.raises(ValueError, match="subsets"):
        srv.partial_fit_responses(y, update="defer")
    assert srv.n_responses_ == 500


# ---------------------------------------------------------------- F2: n_final_steps too small for the exact chain
def _static_fit(n_final_steps, **kw):
    x = _gen(0).choice(5, size=20_000, p=[0.5, 0.3, 0.1, 0.05, 0.05])[:, None]
    return AdaptiveLDPFrequencyEstimator(n_categories=5, n_final_steps=n_final_steps, random_state=_gen(1),
                                         **kw).fit(x)


@pytest.mark.parametrize("n_final_steps", [0, 1])
@pytest.mark.parametrize("mechanism", ["auto", "grr", "oue", "subset_selection"])
def test_static_mechanism_refuses_n_final_steps_below_two_when_theta_is_read(mechanism, n_final_steps):
    """theta_ was the uniform start of a chain a static mechanism never moves, with method 'mala'."""
    est = _static_fit(n_final_steps, mechanism=mechanism, decoder="posterior")  # fitting works (a warm-up)
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=r"n_final_steps=%d.*>= 2" % n_final_steps):
        est.theta_
    assert pickle.dumps(est) == before
    est.set_params(n_final_steps=2000)
    assert 0.5 * np.abs(est.theta_ - [0.5, 0.3, 0.1, 0.05, 0.05]).sum() < 0.05
    assert est.convergence_["method"] != "mala"


def test_static_eb_route_needs_no_final_steps():
    est = _static_fit(0, decoder="eb")
    assert est.convergence_["method"] == "eb" and abs(est.theta_.sum() - 1) < 1e-12


def test_rrrr_without_final_phase_reports_the_online_sample():
    est = AdaptiveLDPFrequencyEstimator(n_categories=5, mechanism="rrrr", n_final_steps=0, random_state=_gen(2))
    est.fit(_gen(3).integers(0, 5, size=200)[:, None])
    assert np.array_equal(est.theta_, est._chain.theta)
    assert est.convergence_["method"] == "online"
