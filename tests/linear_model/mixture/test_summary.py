"""Issue 32: ``MixtureMEstimatorRegressor.summary()``."""

import numpy as np
import pytest

from sklearn_bayes import MixtureMEstimatorRegressor


def _fit(n=150, seed=0, **kw):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = 1.0 + X @ np.array([2.0, -1.0]) + rng.standard_t(3, size=n)
    y[:6] += 40.0
    return X, y, MixtureMEstimatorRegressor(random_state=0, **kw).fit(X, y)


def test_printable_and_complete():
    X, y, reg = _fit()
    s = reg.summary()
    text = str(s)
    for word in ("coef", "std err", "P>|t|", "[0.025", "0.975]", "const", reg.selected_loss_, "gaussian",
                 "laplace", "cauchy", "flagged rows"):
        assert word in text, word
    assert repr(s) == text


def test_frames_match_estimator():
    X, y, reg = _fit()
    s = reg.summary(alpha=0.1)
    pd = pytest.importorskip("pandas")
    c = s.coefficients
    assert isinstance(c, pd.DataFrame) and s.to_frame() is c
    assert list(c.index) == ["x0", "x1", "const"]
    np.testing.assert_allclose(c["coef"].to_numpy(), np.append(reg.coef_, reg.intercept_))
    np.testing.assert_allclose(c["std_err"].to_numpy()[:2], np.sqrt(np.diag(reg.coef_covariance_)))
    np.testing.assert_allclose(c[["lower", "upper"]].to_numpy()[:2], reg.conf_int(0.1))
    np.testing.assert_allclose(c["t"], c["coef"] / c["std_err"])
    assert np.all((c["P>|t|"] >= 0) & (c["P>|t|"] <= 1))
    np.testing.assert_allclose(s.mixture["weight"].to_numpy(), reg.mixture_weights_)
    np.testing.assert_allclose(s.mixture["scale"].to_numpy(), reg.scales_)
    assert s.info["selected loss"] == reg.selected_loss_
    assert s.info["loss scale"] == reg.selected_scale_


def test_flagged_rows():
    X, y, reg = _fit()
    s = reg.summary()
    np.testing.assert_array_equal(s.outliers, np.flatnonzero(reg.flag_outliers(X, y)))
    assert set(range(6)) <= set(s.outliers.tolist())
    s2 = reg.summary(X=X[:10], y=y[:10], threshold=5.0)
    np.testing.assert_array_equal(s2.outliers, np.flatnonzero(reg.flag_outliers(X[:10], y[:10], 5.0)))
    with pytest.raises(ValueError, match="X and y"):
        reg.summary(X=X)
    with pytest.raises(ValueError, match="threshold"):
        reg.summary(threshold=3.0)


def test_feature_names():
    pd = pytest.importorskip("pandas")
    X, y, _ = _fit()
    reg = MixtureMEstimatorRegressor(random_state=0).fit(pd.DataFrame(X, columns=["age", "dose"]), y)
    assert list(reg.summary().coefficients.index) == ["age", "dose", "const"]
    assert "age" in str(reg.summary())


def test_without_pandas(monkeypatch):
    import builtins

    real = builtins.__import__

    def no_pandas(name, *a, **k):
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError(name)
        return real(name, *a, **k)

    X, y, reg = _fit()
    monkeypatch.setattr(builtins, "__import__", no_pandas)
    s = reg.summary()
    assert isinstance(s.coefficients, np.recarray)
    assert list(s.coefficients.name) == ["x0", "x1", "const"]
    np.testing.assert_allclose(s.coefficients.coef[:2], reg.coef_)
    assert "const" in str(s)
