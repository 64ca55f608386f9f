"""The logistic regression's Laplace-moderated predictive (``predictive='moderated'``).

Binary: MacKay's probit approximation :math:`\\sigma(\\mu / \\sqrt{1 + \\pi s^2 / 8})`.  Its error
against the exact :math:`E\\,\\sigma(a)`, :math:`a \\sim N(\\mu, s^2)`, is bounded by
:math:`2\\delta`, :math:`\\delta = \\sup_a |\\sigma(a) - \\Phi(\\kappa a)| = 0.01767`
(:math:`\\kappa^2 = \\pi / 8`): :math:`|E\\sigma(a) - E\\Phi(\\kappa a)| \\le \\delta`, the exact
probit-link identity :math:`E\\Phi(\\kappa a) = \\Phi(\\kappa c)` with :math:`c = \\mu / \\sqrt{1 +
\\kappa^2 s^2}`, and :math:`|\\Phi(\\kappa c) - \\sigma(c)| \\le \\delta`.
"""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import integrate
from scipy.special import expit, softmax
from scipy.stats import norm
from sklearn.base import clone
from sklearn.datasets import load_iris
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_bayes import SubsampledPriorLogisticRegression
from sklearn_bayes._glm import LogisticLoss, inverse_spd, posterior_hessian
from sklearn_bayes.linear_model._subsampled_prior._predictive import moderated_log_proba, score_covariance

KAPPA = np.sqrt(np.pi / 8.0)


def _delta():
    """sup_a |sigma(a) - Phi(kappa a)|, on a grid of step 1e-5 (the maximiser is near |a| = 2.76;
    the grid's error is of order step^2 * max|f''| < 1e-10)."""
    a = np.arange(0.0, 8.0, 1e-5)
    return float(np.max(np.abs(expit(a) - norm.cdf(KAPPA * a))))


def _binary(n=60, p=8, seed=0):
    """Few rows per feature (a wide posterior), features in unequal units and offsets."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n + 200, p)) * np.linspace(0.1, 10.0, p) + np.linspace(-3.0, 3.0, p)
    beta = rng.normal(size=p) / np.linspace(0.1, 10.0, p)
    y = (rng.random(n + 200) < expit((X - np.linspace(-3.0, 3.0, p)) @ beta)).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def _fitted(**params):
    X, y, Xt, yt = _binary()
    return SubsampledPriorLogisticRegression(random_state=0, **params).fit(X, y), X, y, Xt


def _rounding_bound(S, X, fit_intercept=True):
    """100 eps |x~|' |Sigma| |x~| per row: the rounding of a quadratic form in d + 1 terms is within
    gamma_{2(d+1)} |x~|'|Sigma||x~| (gamma_k ~ k eps); the two paths compared (the data's units, and
    the fit's standardised units with their change of units) each round once more on the way."""
    Xt = np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X
    return 100 * np.finfo(float).eps * np.einsum("ij,jk,ik->i", np.abs(Xt), np.abs(S), np.abs(Xt))


def _brute_force_s2(S, X, fit_intercept=True):
    out = []
    for x in X:  # one row at a time: x~' Sigma x~
        xt = np.append(x, 1.0) if fit_intercept else x
        out.append(float(xt @ S @ xt))
    return np.array(out)


def test_delta_is_the_known_constant():
    assert abs(_delta() - 0.017671) < 1e-6


@pytest.mark.filterwarnings("ignore::sklearn_bayes.SubsampleFitWarning")  # 'paper' on 60 rows
@pytest.mark.parametrize("params", [{}, {"fit_intercept": False}, {"prior_mean_method": "extra_column"},
                                    {"prior_scale": "paper"}])
def test_s2_is_the_quadratic_form_of_the_laplace_covariance(params):
    est, X, y, Xt = _fitted(**params)
    V = est._score_covariance(Xt)
    assert V.shape == (Xt.shape[0], 1, 1)
    s2 = _brute_force_s2(est._theta_covariance, Xt, est.fit_intercept)
    assert np.all(np.abs(V[:, 0, 0] - s2) <= _rounding_bound(est._theta_covariance, Xt, est.fit_intercept))
    assert np.all(s2 > 0)


def test_s2_from_the_posterior_hessian_in_data_units():
    # independently of the stored covariance: the inverse Hessian of the negative log posterior in
    # the units of X (coefficients and intercept), the prior precision on the coefficients only
    est, X, y, Xt = _fitted()
    H = posterior_hessian(X, y, LogisticLoss(), np.ravel(est.coef_), est.intercept_,
                          prior_precision=est.prior_precision_)
    s2 = _brute_force_s2(inverse_spd(H), Xt)
    assert_allclose(est._score_covariance(Xt)[:, 0, 0], s2, rtol=1e-6)


def test_binary_moderated_against_numerical_integration():
    est, X, y, Xt = _fitted(predictive="moderated")
    mu = est.decision_function(Xt)
    s2 = _brute_force_s2(est._theta_covariance, Xt)
    assert np.max(s2) > 1.5  # a wide posterior: the moderation matters
    exact = np.array([integrate.quad(lambda a: expit(a) * norm.pdf(a, m, np.sqrt(v)), m - 12 * np.sqrt(v),
                                     m + 12 * np.sqrt(v), epsabs=1e-10)[0] for m, v in zip(mu, s2)])
    p = est.predict_proba(Xt)
    assert_allclose(p[:, 1], expit(mu / np.sqrt(1.0 + np.pi * s2 / 8.0)), rtol=1e-12, atol=1e-15)
    bound = 2 * _delta() + 1e-8  # + the quadrature's error
    assert np.max(np.abs(p[:, 1] - exact)) <= bound
    # the MAP plug-in is not within the bound here: the test can tell the two apart
    assert np.max(np.abs(expit(mu) - exact)) > bound
    # the exact probit-link identity, with sigma replaced by Phi(kappa .)
    exact_probit = np.array([integrate.quad(lambda a: norm.cdf(KAPPA * a) * norm.pdf(a, m, np.sqrt(v)),
                                            m - 12 * np.sqrt(v), m + 12 * np.sqrt(v), epsabs=1e-12)[0]
                             for m, v in zip(mu[:10], s2[:10])])
    assert_allclose(norm.cdf(KAPPA * mu[:10] / np.sqrt(1 + KAPPA ** 2 * s2[:10])), exact_probit, atol=1e-9)


def test_probabilities_sum_to_one_and_predict_is_unchanged():
    est, X, y, Xt = _fitted()
    p_map, lp_map = est.predict_proba(Xt), est.predict_log_proba(Xt)
    pred, dec = est.predict(Xt), est.decision_function(Xt)
    mod = clone(est).set_params(predictive="moderated").fit(X, y)
    assert_array_equal(mod.coef_, est.coef_)  # the option does not enter the fit
    p = mod.predict_proba(Xt)
    assert np.all((p > 0) & (p < 1))
    assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-15)
    assert_allclose(mod.predict_log_proba(Xt), np.log(p), rtol=1e-12)
    assert_array_equal(mod.predict(Xt), pred)
    assert_array_equal(mod.decision_function(Xt), dec)
    assert_array_equal(mod.classes_[p.argmax(axis=1)], pred)  # binary: the same sign
    # moderation moves every probability towards 1/2, never across it
    assert np.all(np.abs(p[:, 1] - 0.5) <= np.abs(p_map[:, 1] - 0.5) + 1e-15)
    # 'map' is today's behaviour, bit for bit
    assert_array_equal(p_map[:, 1], expit(dec))
    assert_allclose(lp_map, np.log(p_map), rtol=1e-12)


def test_multinomial_sums_to_one_and_predict_is_unchanged():
    X, y = load_iris(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(y))
    tr, te = idx[:45], idx[45:]
    pipe = make_pipeline(StandardScaler(), SubsampledPriorLogisticRegression(random_state=0)).fit(X[tr], y[tr])
    mod = make_pipeline(StandardScaler(), SubsampledPriorLogisticRegression(random_state=0, predictive="moderated"))
    mod.fit(X[tr], y[tr])
    p = mod.predict_proba(X[te])
    assert p.shape == (te.size, 3)
    assert np.all((p > 0) & (p < 1))
    assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert_array_equal(mod.predict(X[te]), pipe.predict(X[te]))
    V = mod[-1]._score_covariance(mod[0].transform(X[te]))
    assert V.shape == (te.size, 2, 2)
    # the (2 x 2) blocks against the brute-force quadratic forms (coefficients row by row, then intercepts)
    S, d = mod[-1]._theta_covariance, X.shape[1]
    for i in range(0, te.size, 7):
        x = mod[0].transform(X[te][i:i + 1])[0]
        G = np.zeros((2, 2 * d + 2))
        for k in range(2):
            G[k, k * d:(k + 1) * d] = x
            G[k, 2 * d + k] = 1.0
        bound = 100 * np.finfo(float).eps * np.abs(G) @ np.abs(S) @ np.abs(G).T
        assert np.all(np.abs(V[i] - G @ S @ G.T) <= bound)


def _random_problem(n, K, seed):
    rng = np.random.default_rng(seed)
    mu = rng.normal(scale=2.0, size=(n, K))
    A = rng.normal(size=(n, K, K))
    C = A @ A.transpose(0, 2, 1) * rng.uniform(0.1, 5.0, size=(n, 1, 1))  # covariance of all K scores
    return mu, C


def _as_reference(mu, C, r):
    """Scores and covariances relative to class r (moved to column 0)."""
    K = mu.shape[1]
    order = [r] + [k for k in range(K) if k != r]
    D = np.eye(K)[order] - np.eye(K)[[r]]  # a_k - a_r, class r first
    m = mu @ D.T
    V = np.einsum("ka,nab,lb->nkl", D, C, D)
    return m, V[:, 1:, 1:], order


def test_multiclass_formula_does_not_depend_on_the_reference_class():
    mu, C = _random_problem(50, 4, 0)
    m0, V0, o0 = _as_reference(mu, C, 0)
    p0 = np.exp(moderated_log_proba(m0, V0))[:, np.argsort(o0)]
    for r in (1, 3):
        m, V, order = _as_reference(mu, C, r)
        assert_allclose(np.exp(moderated_log_proba(m, V))[:, np.argsort(order)], p0, rtol=1e-12)
    assert_allclose(p0.sum(axis=1), 1.0, atol=1e-14)


def test_multiclass_formula_special_cases():
    mu, C = _random_problem(40, 3, 1)
    m, V, _ = _as_reference(mu, C, 0)
    # no variance: the softmax
    assert_allclose(np.exp(moderated_log_proba(m, np.zeros_like(V))), softmax(m, axis=1), rtol=1e-12)
    # two classes: exactly MacKay's binary formula
    mu2, s2 = m[:, :2], V[:, :1, :1]
    lp = moderated_log_proba(mu2, s2)
    c = mu2[:, 1] / np.sqrt(1.0 + np.pi * s2[:, 0, 0] / 8.0)
    assert_allclose(np.exp(lp), np.column_stack([expit(-c), expit(c)]), rtol=1e-12)


def test_score_covariance_is_vectorised_in_blocks(monkeypatch):
    # blocks of rows give the same covariances as one block
    import sklearn_bayes.linear_model._subsampled_prior._predictive as P

    rng = np.random.default_rng(0)
    X = rng.normal(size=(37, 4))
    A = rng.normal(size=(15, 15))
    S = A @ A.T
    whole = score_covariance(X, S, 3, True)
    monkeypatch.setattr(P, "_BLOCK_ELEMENTS", 100)
    assert_allclose(score_covariance(X, S, 3, True), whole, rtol=1e-13)
    G = np.zeros((3, 15))
    for k in range(3):
        G[k, 4 * k:4 * k + 4] = X[5]
        G[k, 12 + k] = 1.0
    assert_allclose(whole[5], G @ S @ G.T, rtol=1e-12)


def test_predictive_is_validated():
    X, y, Xt, _ = _binary()
    with pytest.raises(ValueError, match="predictive"):
        SubsampledPriorLogisticRegression(predictive="mean").fit(X, y)
    est = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    est.set_params(predictive="bayes")
    with pytest.raises(ValueError, match="predictive"):
        est.predict_proba(Xt)
    with pytest.raises(ValueError, match="predictive"):
        est.predict_log_proba(Xt)


def test_moderated_survives_clone_and_pickle():
    est, X, y, Xt = _fitted(predictive="moderated")
    assert est.get_params()["predictive"] == "moderated"
    assert clone(est).predictive == "moderated"
    again = pickle.loads(pickle.dumps(est))
    assert_array_equal(again.predict_proba(Xt), est.predict_proba(Xt))


def test_moderated_is_the_same_inside_a_scaling_pipeline():
    # the fit runs on standardised features either way and the covariance follows the units of X
    X, y, Xt, _ = _binary()
    raw = SubsampledPriorLogisticRegression(random_state=0, predictive="moderated").fit(X, y)
    pipe = make_pipeline(StandardScaler(), SubsampledPriorLogisticRegression(random_state=0, predictive="moderated"))
    pipe.fit(X, y)
    assert raw.prior_choice_["scale"] == pytest.approx(pipe[-1].prior_choice_["scale"], rel=1e-9)
    # both paths differ by rounding only: the covariance's condition number (about 2e5) times the
    # rounding unit is 5e-11 (measured 2e-14)
    assert np.linalg.cond(raw._theta_covariance) < 1e6
    assert_allclose(pipe.predict_proba(Xt), raw.predict_proba(Xt), rtol=1e-9)


def test_moderated_in_extreme_units():
    # the quadratic forms are evaluated in the fit's standardised units: X * 1e-300 or X * 1e300
    # (covariance entries of order 1e600 or 1e-600 in the units of X) give the same probabilities
    X, y, Xt, _ = _binary()
    ref = SubsampledPriorLogisticRegression(random_state=0, predictive="moderated").fit(X, y).predict_proba(Xt)
    for c in (1e-300, 1e300):
        est = SubsampledPriorLogisticRegression(random_state=0, predictive="moderated").fit(X * c, y)
        # the standardised data agree to rounding; the fit's condition number (< 1e6, see the pipeline
        # test) times the rounding unit bounds the difference
        assert_allclose(est.predict_proba(Xt * c), ref, rtol=1e-9)
