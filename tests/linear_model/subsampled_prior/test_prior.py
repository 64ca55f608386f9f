"""The prior from the subsample fits (linear_model/_subsampled_prior/_prior.py)."""

import numpy as np
import pytest
from sklearn.covariance import ledoit_wolf_shrinkage

from sklearn_bayes._glm import standardise
from sklearn_bayes.linear_model._subsampled_prior._prior import _subsample_prior, _to_data_units


def _coefs(m=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(k, k))
    return rng.normal(size=(m, k)) @ A + [1.0, -2.0, 0.5][:k]


def test_full_prior_is_the_sample_moments():
    coefs = _coefs()
    mean, cov, prec, used = _subsample_prior(coefs, covariance="full", scaling=None, shrinkage=None, n=10,
                                             n_rows=1000)
    np.testing.assert_allclose(mean, coefs.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(cov, np.cov(coefs, rowvar=False), rtol=1e-12)
    np.testing.assert_allclose(prec @ cov, np.eye(3), atol=1e-10)
    np.testing.assert_array_equal(prec, prec.T)
    assert used == 0.0


def test_diag_keeps_only_the_variances():
    coefs = _coefs()
    _, cov, prec, _ = _subsample_prior(coefs, covariance="diag", scaling=None, shrinkage="auto", n=10, n_rows=1000)
    var = coefs.var(axis=0, ddof=1)
    np.testing.assert_allclose(cov, np.diag(var), rtol=1e-12)
    np.testing.assert_allclose(prec, np.diag(1.0 / var), rtol=1e-12)


@pytest.mark.parametrize("scaling, factor", [("subsample_size", 10.0), ("jackknife", 10 * 39 / (990 * 40))])
def test_scalings_multiply_the_covariance(scaling, factor):
    coefs = _coefs()
    _, cov0, _, _ = _subsample_prior(coefs, covariance="full", scaling=None, shrinkage=None, n=10, n_rows=1000)
    _, cov, prec, _ = _subsample_prior(coefs, covariance="full", scaling=scaling, shrinkage=None, n=10,
                                       n_rows=1000)
    np.testing.assert_allclose(cov, factor * cov0, rtol=1e-12)
    np.testing.assert_allclose(prec @ cov, np.eye(3), atol=1e-9)


def test_shrinkage_of_the_correlation_matrix():
    coefs = _coefs()
    sd = coefs.std(axis=0, ddof=1)
    R = np.corrcoef(coefs, rowvar=False)
    _, cov, _, used = _subsample_prior(coefs, covariance="full", scaling=None, shrinkage=0.25, n=10, n_rows=1000)
    assert used == 0.25
    np.testing.assert_allclose(cov / np.outer(sd, sd), 0.75 * R + 0.25 * np.eye(3), rtol=1e-10, atol=1e-14)
    # 'auto' leaves a well-conditioned matrix alone; 'ledoit-wolf' always shrinks
    assert _subsample_prior(coefs, covariance="full", scaling=None, shrinkage="auto", n=10, n_rows=1000)[3] == 0.0
    lw = _subsample_prior(coefs, covariance="full", scaling=None, shrinkage="ledoit-wolf", n=10, n_rows=1000)[3]
    centred = coefs - coefs.mean(axis=0)
    assert lw == pytest.approx(ledoit_wolf_shrinkage(centred / sd, assume_centered=True), rel=1e-12)
    # fewer subsamples than coefficients: 'auto' shrinks, and the precision exists
    few = _coefs(m=3, k=3)
    _, cov, prec, used = _subsample_prior(few, covariance="full", scaling=None, shrinkage="auto", n=10, n_rows=1000)
    assert used > 0
    np.testing.assert_allclose(prec @ cov, np.eye(3), atol=1e-8)


def test_a_singular_covariance_without_shrinkage_is_an_error_naming_the_remedies():
    coefs = _coefs(k=2)
    twin = np.column_stack([coefs, coefs[:, 0]])  # two equal columns: correlation exactly 1
    with pytest.raises(ValueError, match=r"covariance of the 40 subsample coefficient vectors \(dimension 3\) is "
                                         r"singular; use shrinkage='auto' or 'ledoit-wolf'"):
        _subsample_prior(twin, covariance="full", scaling=None, shrinkage=None, n=10, n_rows=1000)


def test_zero_variance_is_floored_to_a_large_finite_precision():
    coefs = np.column_stack([_coefs(k=2), np.full(40, 3.0)])
    _, cov, prec, _ = _subsample_prior(coefs, covariance="diag", scaling=None, shrinkage=None, n=10, n_rows=1000)
    assert 0 < cov[2, 2] <= 1e-10 * cov[:2, :2].max() * 1.0000001
    assert np.all(np.isfinite(prec))


def test_to_data_units_transforms_the_moments_with_the_coefficients():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 2)) * [10.0, 0.1] + [5.0, -1.0]
    y = X @ [0.2, 30.0] + 7.0 + rng.normal(size=200)
    Xs, ys, st = standardise(X, y, np.ones(200), fit_intercept=True, scale_y=True)
    coef_s = np.linalg.lstsq(np.column_stack([Xs, np.ones(200)]), ys, rcond=None)[0]
    mean = coef_s[:2]
    cov = np.array([[2.0, 0.5], [0.5, 1.0]])
    out = dict(coef=mean[None, :], intercept=np.array([coef_s[2]]), prior_mean=mean, subsample_coefs=mean[None, :],
               prior_covariance=cov, prior_precision=np.linalg.inv(cov), penalty_scale=0.5)
    res = _to_data_units(out, st, 1)
    t = st.y_scale / st.x_scale
    # the standardised least-squares fit maps to the least-squares fit on the raw data (equivariance)
    raw = np.linalg.lstsq(np.column_stack([X, np.ones(200)]), y, rcond=None)[0]
    np.testing.assert_allclose(res["coef"][0], raw[:2], rtol=1e-10)
    assert res["intercept"][0] == pytest.approx(raw[2], rel=1e-10)
    np.testing.assert_allclose(res["prior_mean"], mean * t, rtol=1e-14)
    np.testing.assert_allclose(res["prior_covariance"], cov * np.outer(t, t), rtol=1e-14)
    np.testing.assert_allclose(res["prior_precision"] @ res["prior_covariance"], np.eye(2), atol=1e-10)
    np.testing.assert_allclose(X @ res["coef"][0] + res["intercept"][0],
                               st.y_offset + st.y_scale * (Xs @ mean + coef_s[2]), rtol=1e-12)
    assert res["noise_variance"] == pytest.approx(0.5 * st.y_scale**2, rel=1e-14)
    assert out["prior_mean"] is mean  # the input dict is not changed
