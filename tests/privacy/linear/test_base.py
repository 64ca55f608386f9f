"""The shared base of the private linear models (_linear._base): the OPS bound, validation, clipping, seeded noise."""

import math
import pickle

import numpy as np
import pytest
from scipy import special

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy import AdaOPSRegressor, OnePosteriorSampleRidge, RowNormClipper
from sklearn_bayes.privacy._core._clipping import clip_rows
from sklearn_bayes.privacy._linear._base import ops_epsilon, ops_tempering



def _gen(seed=0):
    return np.random.default_rng(seed)


def _unit_ball_data(n, d, seed):
    rng = _gen(seed)
    X = clip_rows(rng.normal(size=(n, d)) / math.sqrt(d), 1.0)
    y = np.clip(X @ rng.normal(size=d) + 0.3 * rng.standard_normal(n), -1, 1)
    return X, y


def test_chapter4_bounded_regression_is_64_gamma_dp():
    """Ch. 4: x, noise ~ U[-1,1], h = 1, β ∈ [-2,2]: sup (y - xβ)^2 <= 16, so OPS is 64γ-DP.

    The accounting gives 4B = 64γ; the exact log-ratio of the two posteriors on a fine grid
    (replace-one neighbours, worst records included) never exceeds it.
    """
    gamma = 0.05
    assert ops_epsilon(16.0 * gamma) == pytest.approx(64 * gamma)
    beta = np.linspace(-2, 2, 4001)
    rng = _gen(6)
    worst = 0.0
    for trial in range(20):
        n = 30
        x = rng.uniform(-1, 1, n)
        y = x + rng.uniform(-1, 1, n)
        x2, y2 = x.copy(), y.copy()
        if trial % 2:  # adversarial replacement: the extreme records of the domain
            x[0], y[0], x2[0], y2[0] = 1.0, 2.0, -1.0, 2.0
        else:
            x2[0], y2[0] = rng.uniform(-1, 1), 0.0
            y2[0] = x2[0] + rng.uniform(-1, 1)

        def logpost(xx, yy):
            lp = -gamma * ((yy[:, None] - xx[:, None] * beta[None, :]) ** 2).sum(0)
            return lp - special.logsumexp(lp) - math.log(beta[1] - beta[0])

        worst = max(worst, np.max(np.abs(logpost(x, y) - logpost(x2, y2))))
    assert worst <= 64 * gamma


def test_ops_tempering():
    assert ops_tempering(1.0, 2.0) == 0.125
    assert ops_tempering(100.0, 2.0) == 1.0
    assert ops_epsilon(2.0, ops_tempering(1.0, 2.0)) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="epsilon"):
        ops_tempering(0.0, 2.0)
    with pytest.raises(ValueError, match="loss_bound"):
        ops_tempering(1.0, math.inf)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"x_bound": None}, "x_bound must be given"),
        ({"y_bound": None}, "y_bound must be given"),
        ({"x_bound": math.inf}, "x_bound"),
        ({"epsilon": 0.0}, "epsilon"),
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": math.inf}, "epsilon"),
        ({"delta": 0.0}, "delta"),
        ({"delta": 1.0}, "delta"),
        ({"delta": 1.5}, "delta"),
    ],
)
@pytest.mark.parametrize("cls", [OnePosteriorSampleRidge, AdaOPSRegressor])
def test_refuses_what_voids_the_guarantee_and_leaves_state(cls, params, match):
    X, y = _unit_ball_data(300, 2, seed=15)
    est = cls(x_bound=1.0, y_bound=1.0, random_state=_gen(0)).fit(X, y)
    est.set_params(**params)
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=match):
        est.fit(X, y)
    assert pickle.dumps(est) == before


def test_clipping_happens_inside_fit():
    """Rows beyond x_bound and targets beyond y_bound are clipped (same seed: same release)."""
    X, y = _unit_ball_data(500, 3, seed=16)
    big = X.copy()
    big[:50] *= 10.0
    yb = y.copy()
    yb[:50] *= 10.0
    kw = dict(x_bound=1.0, y_bound=1.0)
    a = AdaOPSRegressor(random_state=_gen(1), **kw).fit(clip_rows(big, 1.0), np.clip(yb, -1, 1))
    b = AdaOPSRegressor(random_state=_gen(1), **kw).fit(big, yb)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12)  # re-clipping a clipped row: 1 ulp


def test_seeded_noise_warns():
    X, y = _unit_ball_data(100, 2, seed=17)
    with pytest.warns(SeededNoiseWarning):
        OnePosteriorSampleRidge(x_bound=1.0, y_bound=1.0, random_state=0).fit(X, y)


@pytest.mark.parametrize("cls", [OnePosteriorSampleRidge, AdaOPSRegressor])
def test_bad_shapes_name_the_argument(cls):
    X, y = _unit_ball_data(60, 2, seed=28)
    est = cls(x_bound=1.0, y_bound=1.0, random_state=_gen(0))
    with pytest.raises(ValueError, match=r"\by\b"):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"\bX\b"):
        est.fit(X[:, :, None], y)
    with pytest.raises(ValueError, match=r"\bX\b"):
        RowNormClipper().fit(X[:, :, None])
    est.fit(X, y)
    with pytest.raises(ValueError, match=r"\bX\b"):
        est.predict(X[:, :, None])


# --------------------------------------------------------------------------------------
# _check_budget / _record: the reservation protocol with the shared ledger
# --------------------------------------------------------------------------------------


def _fresh_ops(ledger):
    return OnePosteriorSampleRidge(ridge_lambda=500.0, x_bound=1.5, y_bound=1.5, random_state=0, ledger=ledger)


def test_check_budget_reserves_atomically_and_record_settles_with_one_id():
    from sklearn_bayes.exceptions import BudgetExceededError
    from sklearn_bayes.privacy import PrivacyLedger
    from sklearn_bayes.privacy._core._accounting import PrivacyLedger as _L

    ledger = PrivacyLedger(budget=(1.0, 1e-5))
    est = _fresh_ops(ledger)
    before = pickle.dumps(est)
    with pytest.raises(BudgetExceededError, match=r"asks epsilon=1\.1"):  # all or nothing
        est._check_budget([("a", 0.6, 0.0), ("b", 0.5, 1e-6)])
    assert ledger.n_releases == 0 and pickle.dumps(est) == before
    keys = set(vars(est))
    est._check_budget([("a", 0.6, 0.0), ("b", 0.3, 1e-6)])
    assert set(vars(est)) == keys  # the reservation is kept outside the estimator
    assert [r["note"] for r in ledger.records] == ["reserved before the release was drawn"] * 2
    own = _L()
    est._record(own, "b", 0.25, 5e-7, note="actual")  # a smaller actual spend lowers the reservation
    est._record(own, "a", 0.6, 0.0, note="as reserved")
    assert [(r["mechanism"], r["epsilon"], r["delta"], r["note"]) for r in ledger.records] == [
        ("OnePosteriorSampleRidge/a", 0.6, 0.0, "as reserved"),
        ("OnePosteriorSampleRidge/b", 0.25, 5e-7, "actual"),
    ]
    assert [r["id"] for r in ledger.records] == [r["id"] for r in own.records[::-1]]
    # a release that was not reserved (or exceeds its reservation) is checked and recorded when it is made
    with pytest.raises(BudgetExceededError):
        est._record(own, "c", 0.2, 0.0)
    est._record(own, "c", 0.15, 0.0)
    assert ledger.epsilon_spent == 1.0 and own.n_releases == 3
    with pytest.raises(ValueError, match="invalid budget"):
        est._check_budget([("a", math.nan, 0.0)])
    _fresh_ops(None)._check_budget([("a", 5.0, 0.5)])  # without a ledger: validation only


def test_a_fit_that_fails_after_its_reservation_stays_recorded():
    """Conservative: a failure after the reservation may follow a draw, so the spend stays counted."""
    from sklearn_bayes.privacy import PrivacyLedger

    ledger = PrivacyLedger(budget=(3.0, 1e-5))
    X, y = _unit_ball_data(300, 2, 0)
    est = _fresh_ops(ledger)
    est._draw = staticmethod(lambda *a: (_ for _ in ()).throw(np.linalg.LinAlgError("simulated")))
    with pytest.warns(SeededNoiseWarning), pytest.raises(np.linalg.LinAlgError):
        est.fit(X, y)
    assert ledger.epsilon_spent == 1.0 and not hasattr(est, "coef_")
    del est._draw
    with pytest.warns(SeededNoiseWarning):
        est.fit(X, y)
    assert ledger.epsilon_spent == 2.0 and ledger.records[-1]["id"] == est.ledger_.records[0]["id"]
