"""Review HQV (MixtureMEstimatorRegressor): a gross target on the paper variant, a dominant sample weight,
a component class for an instance, X mismatches named as X."""

import warnings

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor


def _data(n=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, 1 + X @ [2, -1, 0.5] + rng.standard_t(3, size=n)


# ---------------------------------------------------------------- F3: one gross target under variant="paper"
@pytest.mark.parametrize("value", [1e120, 1e250, 1e300, -1e300, 1.7e308])
def test_paper_variant_ignores_one_gross_target(value):
    """Beyond R_CAP robust scales the capped residual gave the Cauchy law an IRLS weight 2 / (s^2 + R_CAP^2)
    ~ 1e-200 at the *uncapped* target: its pull w * y ~ 1e50 swamped the fit (coef 1e247, converged_ True).
    A row that far out has influence below 2 / R_CAP under every built-in law, so the clean fit is kept."""
    X, y = _data()
    clean = MixtureMEstimatorRegressor(random_state=0, variant="paper").fit(X, y)
    yg = y.copy()
    yg[0] = value
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est = MixtureMEstimatorRegressor(random_state=0, variant="paper").fit(X, yg)
    # one row of 200 with zero influence instead of a t3 error: the fit moves by O(1 / n) of the noise scale
    assert np.abs(est.coef_ - clean.coef_).max() < 0.01
    assert abs(est.intercept_ - clean.intercept_) < 0.01
    assert np.all(np.isfinite(est.scales_)) and est.scales_.max() < 10


# ---------------------------------------------------------------- F5: one row with most of the sample weight
@pytest.mark.parametrize("big, reason", [(80.0, "Kish's effective number of rows"), (100.0, "50.3% of the total weight"),
                                         (1e3, "more than half"), (1e12, "more than half"), (1e300, "more than half")])
def test_weight_concentrated_on_one_row_is_refused(big, reason):
    """w0 = 1e3 (91 % of the weight) gave coef [2.76, -0.78, 2.52] (WLS [2.18, -1.03, 0.88]) with a warning about
    ties; 1e12 coef 0; 1e300 NaN standard errors.  Kish's n_eff = (99 + w0)^2 / (99 + w0^2) is 4.93 at w0 = 80
    (p + 1 = 5), so 80 is refused too; a refused fit leaves a fitted estimator as it was."""
    X, y = _data(100)
    est = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    coef = est.coef_.copy()
    w = np.ones(100)
    w[0] = big
    with pytest.raises(ValueError, match="sample_weight") as info:
        est.fit(X, y, sample_weight=w)
    assert reason in str(info.value)
    assert np.array_equal(est.coef_, coef)


def test_weights_short_of_the_bounds_zero_weights_and_relative_weights_still_fit():
    X, y = _data(100)
    w = np.ones(100)
    w[0] = 78.0  # Kish's n_eff 5.02 >= 5, 44 % of the weight
    a = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=w)
    b = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=w * 1e-200)
    assert np.allclose(a.coef_, b.coef_, rtol=1e-10, atol=1e-12)
    w0 = np.ones(100)
    w0[:90] = 0.0  # 10 rows with weight: n_eff = 10 >= 5
    c = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=w0)
    d = MixtureMEstimatorRegressor(random_state=0).fit(X[90:], y[90:])
    assert np.allclose(c.coef_, d.coef_, rtol=1e-8, atol=1e-10)


# ---------------------------------------------------------------- F7: a component class for an instance
def test_component_class_is_refused_naming_components():
    from sklearn_bayes import GaussianComponent

    X, y = _data(50)
    with pytest.raises(TypeError, match=r"components .*GaussianComponent.*an instance, not the class"):
        MixtureMEstimatorRegressor(components=(GaussianComponent,)).fit(X, y)
    with pytest.raises(TypeError, match="an instance, not the class"):
        MixtureMEstimatorRegressor(components=("cauchy", GaussianComponent)).fit(X, y)


# ---------------------------------------------------------------- F6: X's mismatches name X, not y
def _scoring_calls(est, X, y):
    return {
        "flag_outliers": lambda: est.flag_outliers(X, y),
        "score_samples": lambda: est.score_samples(X, y),
        "predict_proba_components": lambda: est.predict_proba_components(X, y),
        "bootstrap_conf_int": lambda: est.bootstrap_conf_int(X, y, n_boot=2, random_state=0),
        "summary": lambda: est.summary(X=X, y=y),
    }


@pytest.mark.parametrize("method", ["flag_outliers", "score_samples", "predict_proba_components",
                                    "bootstrap_conf_int", "summary"])
def test_reordered_or_narrow_x_is_named_x(method):
    pd = pytest.importorskip("pandas")
    X, y = _data(100)
    df = pd.DataFrame(X, columns=list("abc"))
    est = MixtureMEstimatorRegressor(random_state=0).fit(df, y)
    with pytest.raises(ValueError, match="feature names") as info:
        _scoring_calls(est, df[["c", "b", "a"]], y)[method]()
    assert "argument X" in str(info.value) and "argument y" not in str(info.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # X without names for a fit with names
        with pytest.raises(ValueError, match="X has 2 features") as info:
            _scoring_calls(est, X[:, :2], y)[method]()
    assert "argument y" not in str(info.value)
