"""Review HQY on DPSGLDLogisticRegression: the label path, a guard on the accountant, the ball sampler.

F1 (medium): with ``classes`` given, sklearn's ``check_classification_targets(y)`` typed y before
the public-set check, so ``classes=[0, 0.5]`` fitted all-0 data and refused its neighbour holding
one 0.5 ("continuous"): an ε = ∞ pair.  Now y is never typed when ``classes`` is given.
F2 (low): with ``classes=None``, ``classes_`` took y's dtype, which for a list is inferred from the
records (one 1.0 among ints made it float64).  Now it is int64 unless y declares its dtype.
F6: the accountant's certificate is checked against the target before any noise.
F5: the two rejection paths of ``truncated_gaussian_ball`` are tested for exactness (KS).
F8: ``coef_samples_`` has ``n_draws`` rows also when ``n_draws > n_iter / 2``.

Every test of F1, F2, F6 and F8 fails on the code before the fix (commit d5e5c0c), except
``test_a_declared_dtype_is_kept`` (a guard that the F2 fix keeps an array's dtype).  The F5 test
passes there (the sampler was exact); it fails on a sampler without its acceptance step (both
paths) and on one with the Gamma shape off by 1/2 or 1 (the uniform path).
"""

import warnings

import numpy as np
import pytest
from scipy import integrate, special, stats

from sklearn_bayes.privacy import DPSGLDLogisticRegression, PrivacyLedger
from sklearn_bayes.privacy._linear import _ball_sampling, _dpsgld

pytest.importorskip("dp_accounting")


def _est(**kw):
    kw = {"x_bound": 3.0, "n_iter": 20, "n_draws": 5, "random_state": np.random.default_rng(1), **kw}
    return DPSGLDLogisticRegression(**kw)


def _fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise
        return _est(**kw).fit(X, y)


def _X(n=200, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 2))


# ------------------------------------------------------------------ F1: public non-integer labels
@pytest.mark.parametrize("classes, base, other", [([0, 0.5], 0.0, 0.5), ([1, 2.5], 1.0, 2.5)])
def test_public_float_labels_fit_both_neighbours(classes, base, other):
    """D (all ``base``) and D' (one record ``other``, a public label) both fit, one record each."""
    X = _X()
    y = np.full(200, base)
    y1 = y.copy()
    y1[0] = other
    for labels in (y, y1, list(y1)):
        est = _fit(X, labels, classes=classes)
        np.testing.assert_array_equal(est.classes_, sorted(classes))
        assert len(est.ledger_.records) == 1


def test_non_integer_public_classes_fit():
    X = _X()
    y = np.where(np.random.default_rng(3).random(200) < 0.4, 1.5, 0.5)
    est = _fit(X, y, classes=[0.5, 1.5])
    np.testing.assert_array_equal(est.classes_, [0.5, 1.5])
    assert set(np.unique(est.predict(X))) <= {0.5, 1.5}


def test_labels_outside_the_public_set_are_still_refused_unchanged():
    X = _X()
    y = np.zeros(200)
    y[0] = 0.7  # not in classes: out of the domain, refused without being printed
    est = _est(classes=[0, 0.5])
    with pytest.raises(ValueError, match="not in classes") as info:
        est.fit(X, y)
    assert "0.7" not in str(info.value)
    assert not hasattr(est, "classes_")


# ------------------------------------------------------------------ F2: classes_'s dtype
def test_classes_dtype_does_not_depend_on_how_a_record_is_written():
    """A list holding one 1.0 among ints, or one 1 among bools, gives the same classes_ as its neighbour."""
    X = _X()
    ints = [0] * 200
    one_float = list(ints)
    one_float[0] = 1.0
    one_int = list(ints)
    one_int[0] = 1
    bools = [False] * 200
    bools_int = list(bools)
    bools_int[0] = 1
    fitted = [_fit(X, y) for y in (ints, one_float, one_int, bools, bools_int)]
    for est in fitted:
        assert est.classes_.dtype == np.int64
        np.testing.assert_array_equal(est.classes_, [0, 1])


def test_a_declared_dtype_is_kept():
    """An array declares its dtype (public): bool gives [False, True], float64 [0., 1.]."""
    X = _X()
    y = np.zeros(200)
    assert _fit(X, y.astype(bool)).classes_.dtype == np.bool_
    assert _fit(X, y).classes_.dtype == np.float64
    assert _fit(X, y.astype(np.int32)).classes_.dtype == np.int32


# ------------------------------------------------------------------ F6: the certificate is checked
def test_an_accountant_answer_above_the_target_is_refused_before_any_noise(monkeypatch):
    X = _X(300)
    y = (X[:, 0] > 0).astype(int)
    real = _dpsgld._checked_epsilon

    def too_large(z, q, T, delta, accountant, target=np.inf):
        eps, name = real(z, q, T, delta, accountant, target)
        return 2.0 * target, name  # a certificate above the add/remove target

    monkeypatch.setattr(_dpsgld, "_checked_epsilon", too_large)
    ledger = PrivacyLedger(budget=(10.0, 1e-3))
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    est = _est(ledger=ledger, random_state=rng)
    with pytest.raises(ValueError, match="epsilon"):
        est.fit(X, y)
    assert len(ledger.records) == 0
    assert rng.bit_generator.state == state  # no noise drawn
    assert not hasattr(est, "coef_")


# ------------------------------------------------------------------ F5: the rejection paths are exact
def _radius_cdf(d, s, R):
    grid = np.linspace(0.0, R, 20001)
    logd = (d - 1) * np.log(np.maximum(grid, 1e-300)) - grid**2 / (2 * s * s)
    cdf = integrate.cumulative_trapezoid(np.exp(logd - logd.max()), grid, initial=0.0)
    cdf /= cdf[-1]
    return lambda v: np.interp(v, grid, cdf)


@pytest.mark.parametrize(
    "d, s, R, path",
    [(31, 10.0, 10.0, "_uniform_ball_unit"), (200, 10.0, 20.0, "_truncated_gamma_unit"),
     (60, 1.0, 3.0, "_truncated_gamma_unit")],
)
def test_truncated_gaussian_ball_rejection_paths_are_exact(monkeypatch, d, s, R, path):
    """Radius against the quadrature CDF, direction's first coordinate against Beta((d-1)/2, (d-1)/2).

    20000 draws, exact KS critical value at 99.9 % (each KS test fails with probability 1e-3 under
    exactness); the path taken is checked, and every draw is inside the ball.
    """
    assert special.gammainc(d / 2, 0.5 * (R / s) ** 2) < _ball_sampling._MIN_GAMMAINC  # not the inverse path
    calls = []
    real = getattr(_ball_sampling, path)
    monkeypatch.setattr(_ball_sampling, path, lambda *a: calls.append(1) or real(*a))
    N = 20000
    crit = stats.kstwo.ppf(0.999, N)
    th = _ball_sampling.truncated_gaussian_ball(d, s, R, N, np.random.default_rng(d))
    assert calls and th.shape == (N, d)
    r = np.linalg.norm(th, axis=1)
    assert np.all(r <= R)
    assert stats.kstest(r, _radius_cdf(d, s, R)).statistic < crit
    v1 = (th[:, 0] / r + 1.0) / 2.0
    assert stats.kstest(v1, stats.beta((d - 1) / 2, (d - 1) / 2).cdf).statistic < crit


# ------------------------------------------------------------------ F8: n_draws rows
@pytest.mark.parametrize("n_iter, n_draws", [(20, 15), (20, 20), (7, 6), (500, 50), (1, 1)])
def test_coef_samples_has_n_draws_distinct_iterates(n_iter, n_draws):
    X = _X(300)
    y = (X[:, 0] > 0).astype(int)
    est = _fit(X, y, n_iter=n_iter, n_draws=n_draws)
    assert est.coef_samples_.shape == (n_draws, 2) and est.intercept_samples_.shape == (n_draws,)
    assert np.unique(est.coef_samples_, axis=0).shape[0] == n_draws


def test_non_finite_public_classes_are_refused_naming_classes():
    """``classes=[0, nan]`` fitted all-0 data while its neighbour holding the label nan failed y's
    finiteness check: the public set itself is refused, and the estimator is left unchanged."""
    est = _est(classes=[0.0, np.nan])
    with pytest.raises(ValueError, match="classes must be the two distinct finite"):
        est.fit(_X(), np.zeros(200))
    assert not hasattr(est, "classes_")
