"""Round P1 (issue 28 goal 1 at high ``eps``): the guard against the better of ``'eb'`` and ``'dir'``.

``STACK_BASELINE = 'auto'`` (the default): where :func:`~._stacking.noise_ratio` is at most
``ROUTE_MAX_NOISE_RATIO`` the guard's baseline is the candidate of ``'eb'`` and ``'dir'`` with the lower cross-fitted
squared risk on the stack's folds; ``'eb'`` restores the previous output bit for bit.  Checked in one process, so on any machine: where the gate
is off ``'auto'`` and ``'eb'`` give the same array, and where it is on ``'eb'`` gives the pre-P1 guard's output (the
stack refused: ``decoder='eb'``'s estimate up to a renormalisation's rounding).
"""

import warnings

import numpy as np
import pytest

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp import _stacking as S
from sklearn_bayes.privacy._ldp._empirical_bayes import _grid, dirichlet_marginal_weights
from sklearn_bayes.privacy._ldp._mechanisms import best_subset_size, ss_support_probabilities
from sklearn_bayes.privacy._ldp._posterior import RHO_GRID

# (K, eps, n, Dirichlet a, seed)
GATE_ON = (96, 7.0, 4000, 1.0, 2)
GATE_OFF = (300, 1.5, 5000, 1.0, 5)


def _fit(K, eps, n, a, seed, **params):
    rng = np.random.default_rng([seed, 28])
    theta = rng.dirichlet(np.full(K, a))
    x = rng.choice(K, size=n, p=theta)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=seed, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        return est, est.theta_.copy(), dict(est.convergence_)


def _ratio(K, eps):
    p, q = ss_support_probabilities(K, eps, best_subset_size(K, eps))
    return S.noise_ratio(K, p, q)


def test_default_is_auto():
    assert S.STACK_BASELINE == "auto"


def test_switch_restores_the_previous_output_bit_for_bit(monkeypatch):
    """Gate on (R = 1.18), where 'auto' picks 'dir': the switch 'eb' gives the pre-P1 estimate exactly (the guard
    refuses the stack there: decoder='eb''s estimate up to a renormalisation's rounding); 'auto' differs."""
    args = GATE_ON
    assert _ratio(*args[:2]) <= S.ROUTE_MAX_NOISE_RATIO
    monkeypatch.setattr(S, "STACK_BASELINE", "eb")
    est, old, c_old = _fit(*args)
    assert c_old["stack_baseline"] == "eb" and not c_old["stack_used"]
    # the guard's refusal before P1 returns the 'eb' row clipped and renormalised: decoder='eb''s estimate on the
    # same responses up to that renormalisation's rounding (a few ulps of the largest entry, K = 96 terms summed)
    eb = est.set_params(decoder="eb").theta_
    assert np.abs(old - eb).max() <= old.size * np.finfo(float).eps * old.max()
    monkeypatch.setattr(S, "STACK_BASELINE", "auto")
    _, new, c_new = _fit(*args)
    assert c_new["stack_baseline"] == "dir"
    assert not np.array_equal(new, old)


def test_gate_off_is_bit_for_bit(monkeypatch):
    """Low eps (R = 442): the guard's baseline stays 'eb' and theta_ is the switch's ('eb', the pre-P1 guard)
    exactly, the stack used."""
    args = GATE_OFF
    assert _ratio(*args[:2]) > S.ROUTE_MAX_NOISE_RATIO
    _, theta, conv = _fit(*args)
    assert conv["stack_baseline"] == "eb" and conv["stack_used"]
    monkeypatch.setattr(S, "STACK_BASELINE", "eb")
    _, old, c_old = _fit(*args)
    assert np.array_equal(theta, old) and c_old["stack_used"]


def test_dir_baseline_refused_stack_returns_dir_candidate():
    """Where 'dir' is the baseline and the guard refuses the stack, theta_ is the 'dir' candidate on all users, the
    weights are its unit vector, and the guard's decision is gain > STACK_Z SE."""
    est, theta, conv = _fit(*GATE_ON)
    assert conv["stack_baseline"] == "dir" and not conv["stack_used"]
    assert conv["stack_used"] == (conv["stack_gain"] > S.STACK_Z * conv["stack_se"])
    assert conv["stack_weights"] == {"eb": 0.0, "smooth": 0.0, "dir": 1.0, "ns": 0.0, "mi": 0.0}
    c, n, p, q = est._support_counts()
    u0 = _grid(np.zeros(0), n, p, q)
    cand = S.candidates(c, n, p, q, u0, dirichlet_marginal_weights(u0, c.size, RHO_GRID), RHO_GRID)[0]
    expected = np.maximum(cand[2], 0.0) / np.maximum(cand[2], 0.0).sum()
    assert np.allclose(theta, expected, rtol=0, atol=1e-12)


def test_old_numerics_run_with_the_dir_baseline(monkeypatch):
    """STACK_FAST_NUMERICS = False (round 18b's code path) makes the same choice, theta_ equal up to rounding."""
    _, fast, c_fast = _fit(*GATE_ON)
    monkeypatch.setattr(S, "STACK_FAST_NUMERICS", False)
    _, slow, c_slow = _fit(*GATE_ON)
    assert c_slow["stack_baseline"] == c_fast["stack_baseline"] == "dir"
    assert np.abs(slow - fast).max() < 1e-12


def _held(K, risk_gap, rng):
    """Five folds whose 'dir' row is t plus noise of size 1 and 'eb' row t plus noise of size 1 + risk_gap."""
    held = []
    for _ in range(5):
        t = rng.dirichlet(np.ones(K))
        F = np.tile(t, (5, 1))
        F[0] += (1.0 + risk_gap) * 1e-3 * rng.standard_normal(K)
        F[2] += 1e-3 * rng.standard_normal(K)
        held.append((F, t, None, None))
    return held


@pytest.mark.parametrize("gap,expected", [(0.5, 2), (-0.5, 0)])
def test_baseline_choice_on_designed_folds(monkeypatch, gap, expected):
    """'dir' exactly where its cross-fitted squared risk is lower (gate on); 'eb' when the gate is off or switched."""
    rng = np.random.default_rng(7)
    held = _held(200, gap, rng)
    p_id, q_id = 0.99, 0.01 / 199  # near the identity: R ~ 1.02
    assert S.noise_ratio(200, p_id, q_id) <= S.ROUTE_MAX_NOISE_RATIO
    assert S.stack_baseline(held, 200, p_id, q_id) == expected
    p_lo, q_lo = ss_support_probabilities(200, 1.0, best_subset_size(200, 1.0))
    assert S.stack_baseline(held, 200, p_lo, q_lo) == 0
    monkeypatch.setattr(S, "STACK_BASELINE", "eb")
    assert S.stack_baseline(held, 200, p_id, q_id) == 0


def test_tie_and_no_folds_keep_eb():
    rng = np.random.default_rng(8)
    held = _held(50, 0.0, rng)
    for F, *_ in held:
        F[2] = F[0]
    assert S.stack_baseline(held, 50, 0.99, 0.01 / 49) == 0
    assert S.stack_baseline([], 50, 0.99, 0.01 / 49) == 0


def test_convergence_keys_and_gmodel_keeps_eb():
    """convergence_['stack_baseline'] is reported by 'eb-stack' ('auto'); 'eb' under 'eb-gmodel' (out of scope)."""
    _, _, conv = _fit(*GATE_ON)
    for key in ("stack_baseline", "stack_used", "stack_gain", "stack_se", "stack_weights", "stack_folds"):
        assert key in conv, key
    _, _, c_g = _fit(*GATE_ON, decoder="eb-gmodel")
    assert c_g["method"] == "eb-gmodel" and c_g["stack_baseline"] == "eb"


def test_route_skip_reports_eb(monkeypatch):
    """The cost route (STACK_ROUTE, an option) still returns 'eb' where it skips the stack, with the key set."""
    monkeypatch.setattr(S, "STACK_ROUTE", True)
    _, theta, conv = _fit(64, 8.0, 1000, 1.0, 3)
    assert conv["stack_skipped"] and conv["stack_baseline"] == "eb"
    assert np.all(theta >= 0) and abs(theta.sum() - 1) < 1e-12
