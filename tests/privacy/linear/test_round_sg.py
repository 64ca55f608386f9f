"""Round HSG: ``DPSGLDLogisticRegression``'s default start is θ₀ = 0 (``start="zero"``).

After review HQX F1 the default start was a prior draw on the public ball (``start="prior"``): data-free,
but at small ε the chain barely moves from it, so the release was a confident random classifier, below
the majority class on small sets (accuracy 0.47-0.60, log loss up to 1.8).  θ₀ = 0 predicts ½ until the
chain moves; on 7 held-out sets × 5 ε it lost no cell beyond 1 paired se (doc: *The start: why θ₀ = 0*).
These tests pin the default, that it still reads no data and spends exactly the accountant's ε, and the
utility claim on seeded synthetic data (paired, with a margin of 2 paired standard errors).
"""

import math
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_bayes.privacy import DPSGLDLogisticRegression

pytest.importorskip("dp_accounting")


def _data(n, seed, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = (X @ np.array([1.5, -1.0, 0.5, 0.2, -0.3][:d]) + rng.logistic(size=n) > 0).astype(int)
    return X, y


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise
        return DPSGLDLogisticRegression(**kw).fit(X, y)


def _log_loss(est, X, y):
    p = np.clip(est.predict_proba(X)[:, 1], 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def test_the_default_start_is_zero():
    assert DPSGLDLogisticRegression().get_params()["start"] == "zero"
    assert clone(DPSGLDLogisticRegression()).start == "zero"


def test_the_default_release_is_the_zero_start_release_and_not_the_prior_one():
    """Same generator seed: the default fit is bit-for-bit ``start="zero"``'s, and differs from ``"prior"``'s."""
    X, y = _data(300, seed=0)
    kw = dict(epsilon=1.0, x_bound=3.0, n_iter=50, n_draws=5)
    default = _fit(X, y, random_state=np.random.default_rng(3), **kw)
    zero = _fit(X, y, start="zero", random_state=np.random.default_rng(3), **kw)
    prior = _fit(X, y, start="prior", random_state=np.random.default_rng(3), **kw)
    np.testing.assert_array_equal(default.coef_samples_, zero.coef_samples_)
    np.testing.assert_array_equal(default.intercept_samples_, zero.intercept_samples_)
    np.testing.assert_array_equal(default.ops_coef_, 0.0)
    assert not np.array_equal(default.coef_samples_, prior.coef_samples_)


def test_the_default_start_reads_no_data_and_spends_only_the_chain():
    """θ₀ = 0 for any data; one ledger record (the chain), ε and δ within the request, ρ = 0."""
    for seed, n in ((1, 200), (2, 700)):
        X, y = _data(n, seed)
        est = _fit(X, 1 - y if seed == 2 else y, epsilon=0.5, x_bound=3.0, n_iter=30, n_draws=5,
                   random_state=np.random.default_rng(seed))
        np.testing.assert_array_equal(est.ops_coef_, 0.0)
        assert est.rho_ == 0.0
        assert [r["mechanism"] for r in est.ledger_.records] == ["DPSGLDLogisticRegression/dp_sgld"]
        assert est.epsilon_spent_ == est.epsilon_sgld_ <= 0.5 and est.delta_spent_ == 1e-6


@pytest.mark.parametrize("eps", [0.1, 1.0])
def test_the_zero_start_beats_the_prior_draw_in_log_loss_at_small_epsilon(eps):
    """Paired over 12 seeds (data split and generator), shipped chain length: the default's test log loss is
    below the prior start's by more than 2 paired standard errors, and at ε = 0.1 it is within 0.01 of log 2
    (the chain has barely moved from θ₀ = 0, which predicts ½), where the prior draw's is far above it."""
    diffs, zero_ll = [], []
    for seed in range(12):
        X, y = _data(400, seed=100 + seed)
        Xt, yt = _data(400, seed=200 + seed)
        kw = dict(epsilon=eps, x_bound=3.0, classes=[0, 1])
        z = _fit(X, y, random_state=np.random.default_rng(seed), **kw)
        p = _fit(X, y, start="prior", random_state=np.random.default_rng(seed), **kw)
        zero_ll.append(_log_loss(z, Xt, yt))
        diffs.append(zero_ll[-1] - _log_loss(p, Xt, yt))
    d = np.array(diffs)
    se = d.std(ddof=1) / math.sqrt(len(d))
    assert d.mean() < -2 * se, (d.mean(), se)
    if eps == 0.1:
        assert abs(np.mean(zero_ll) - math.log(2)) < 0.01, np.mean(zero_ll)
