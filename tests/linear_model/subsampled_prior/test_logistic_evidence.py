"""prior_scale='evidence' for the logistic regression (issue 29, round 6; an option: on the held-out
cells it lost to the default, prior_scale='loo').

The criterion is the Laplace approximation of the marginal likelihood: checked against a
brute-force computation (finite-difference Hessian), against the exact Gaussian marginal
likelihood where the Laplace approximation is exact (the squared loss), and the rule around it:
the scale is the criterion's maximiser on non-separated data, and the leave-one-out rule
(``prior_scale='loo'``) stays on separated data, where the criterion's maximum is at an end of
the search, and for the multinomial model.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from sklearn_bayes import SubsampledPriorLogisticRegression
from sklearn_bayes._glm import LogisticLoss, SquaredLoss, fit_map
from sklearn_bayes.linear_model._subsampled_prior._tuning import _LOG10_TAU, laplace_neg_log_evidence


def _logistic(n, p, seed, signal=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X = (X - X.mean(0)) / X.std(0)
    eta = signal * X @ rng.normal(size=p) / np.sqrt(p)
    return X, (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(float)


def _objective(theta, X, y, w, mean, P):
    k = X.shape[1]
    eta = X @ theta[:k] + theta[k]
    d = theta[:k] - mean
    return float(w @ (np.logaddexp(0, eta) - y * eta) + 0.5 * d @ P @ d)


@pytest.mark.parametrize("weighted", [False, True])
def test_laplace_evidence_equals_a_brute_force_computation(weighted):
    """At the MAP fit: the objective, plus half the log-determinant of its Hessian by central
    differences of the objective (step 1e-4: truncation ~ h^2 |f''''| ~ 1e-8 per entry, rounding
    ~ eps |f| / h^2 ~ 1e-7), minus half that of the prior precision."""
    X, y = _logistic(60, 3, 0)
    rng = np.random.default_rng(1)
    w = rng.uniform(0.5, 2.0, 60) if weighted else np.ones(60)
    mean = np.array([0.2, -0.1, 0.0])
    A = rng.normal(size=(3, 3))
    P = A @ A.T + np.eye(3)
    res = fit_map(X, y, LogisticLoss(), prior_mean=mean, prior_precision=P, sample_weight=w, tol=1e-12)
    theta = np.append(res.coef.ravel(), res.intercept)
    h = 1e-4
    q = theta.size
    H = np.empty((q, q))
    E = np.eye(q) * h
    for a in range(q):
        for b in range(q):
            f = [_objective(theta + sa * E[a] + sb * E[b], X, y, w, mean, P) for sa, sb in
                 ((1, 1), (1, -1), (-1, 1), (-1, -1))]
            H[a, b] = (f[0] - f[1] - f[2] + f[3]) / (4 * h * h)
    brute = _objective(theta, X, y, w, mean, P) + 0.5 * np.linalg.slogdet(H)[1] - 0.5 * np.linalg.slogdet(P)[1]
    got = laplace_neg_log_evidence(X, y, w, LogisticLoss(), res.coef, res.intercept, mean, P, True,
                                   np.linalg.slogdet(P)[1])
    assert_allclose(got, brute, rtol=0, atol=1e-5)


@pytest.mark.parametrize("tau", [0.01, 0.3, 10.0])
def test_laplace_evidence_is_the_exact_marginal_likelihood_of_the_squared_loss(tau):
    """Unit-variance Gaussian noise, prior N(c, tau I), no intercept: the Laplace approximation is
    exact, ``-log p(y) = (y - Xc)^T C^-1 (y - Xc) / 2 + log det C / 2 + N log(2 pi) / 2`` with
    ``C = I + tau X X^T`` (the criterion omits the last, prior-free constant)."""
    rng = np.random.default_rng(2)
    N, k = 25, 4
    X = rng.normal(size=(N, k))
    y = X @ rng.normal(size=k) + rng.normal(size=N)
    c = rng.normal(size=k)
    P = np.eye(k) / tau
    res = fit_map(X, y, SquaredLoss(), prior_mean=c, prior_precision=P, fit_intercept=False, tol=1e-12)
    got = laplace_neg_log_evidence(X, y, np.ones(N), SquaredLoss(), res.coef, res.intercept, c, P, False,
                                   -k * np.log(tau))
    C = np.eye(N) + tau * X @ X.T
    r = y - X @ c
    exact = 0.5 * r @ np.linalg.solve(C, r) + 0.5 * np.linalg.slogdet(C)[1]
    assert_allclose(got, exact, rtol=1e-10)


def _grid_evidence(X, y, taus):
    """The criterion of the default's candidate (identity, mean 0: ``n > N / 4`` here) along ``taus``."""
    out = []
    for tau in taus:
        P = np.eye(X.shape[1]) / tau
        res = fit_map(X, y, LogisticLoss(), prior_mean=np.zeros(X.shape[1]), prior_precision=P, tol=1e-12)
        out.append(laplace_neg_log_evidence(X, y, np.ones(y.size), LogisticLoss(), res.coef, res.intercept,
                                            np.zeros(X.shape[1]), P, True, -X.shape[1] * np.log(tau)))
    return np.array(out)


def test_evidence_scale_maximises_the_evidence_on_non_separated_data():
    """Overlapping classes (no separation), the candidate identity/0: the chosen scale is the
    criterion's maximiser -- not worse than a brute-force grid of 1/40 decade by more than the
    bounded search's tolerance can cost (its xatol 0.05 decade: a quadratic's rise over 0.05
    decade, bounded by the grid's own curvature), and the leave-one-out rule's scale differs."""
    X, y = _logistic(120, 30, 3)
    Xs = (X - X.mean(0)) / X.std(0)
    clf = SubsampledPriorLogisticRegression(random_state=0, prior_scale="evidence").fit(X, y)
    choice = clf.prior_choice_
    assert (choice["shape"], choice["mean"], choice["scale_rule"]) == ("identity", "zero", "evidence")
    t = np.log10(choice["scale"])
    fine = np.arange(t - 1.0, t + 1.0 + 1e-9, 0.025)
    ev = _grid_evidence(Xs, y, 10.0 ** fine)
    j = int(np.argmin(ev))
    assert 0 < j < fine.size - 1  # the maximiser is inside the window
    curv = (ev[j - 1] - 2 * ev[j] + ev[j + 1]) / 0.025**2
    at_choice = _grid_evidence(Xs, y, [10.0 ** t])[0]
    assert at_choice - ev[j] <= 0.5 * curv * 0.05**2 + 1e-8
    loo = SubsampledPriorLogisticRegression(random_state=0, prior_scale="loo").fit(X, y)
    assert loo.prior_choice_["scale_rule"] == "loo"
    assert abs(np.log10(loo.prior_choice_["scale"]) - t) > 0.05


def test_separated_classes_keep_the_leave_one_out_rule():
    """Linearly separable classes: the fit at the weakest prior of the search classifies every
    row correctly, so the evidence (which rises towards weak priors there) is not used and the
    fit is prior_scale='loo''s exactly."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 5))
    y = (X[:, 0] - X[:, 1] > 0).astype(int)
    a = SubsampledPriorLogisticRegression(random_state=0, prior_scale="evidence").fit(X, y)
    b = SubsampledPriorLogisticRegression(random_state=0, prior_scale="loo").fit(X, y)
    assert a.prior_choice_["scale_rule"] == "loo"
    assert_allclose(a.coef_, b.coef_, rtol=0, atol=0)
    assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=0)


def test_evidence_maximum_at_the_end_of_the_search_keeps_the_leave_one_out_rule():
    """Labels independent of the features: the criterion is smallest at the strongest prior of
    the search (checked on its decades), so the leave-one-out rule stays."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 4))
    y = (rng.random(200) < 0.5).astype(int)
    Xs = (X - X.mean(0)) / X.std(0)
    decades = 10.0 ** np.arange(_LOG10_TAU[0], _LOG10_TAU[1] + 1e-9)
    assert int(np.argmin(_grid_evidence(Xs, y, decades))) == 0
    a = SubsampledPriorLogisticRegression(random_state=0, prior_scale="evidence").fit(X, y)
    b = SubsampledPriorLogisticRegression(random_state=0, prior_scale="loo").fit(X, y)
    assert a.prior_choice_["scale_rule"] == "loo"
    assert_allclose(a.coef_, b.coef_, rtol=0, atol=0)


def test_multinomial_keeps_the_leave_one_out_rule():
    """The evidence rule is the binary model's (measured there only): three classes fit as with
    prior_scale='loo'."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(150, 4))
    y = np.argmax(X[:, :3] + rng.normal(size=(150, 3)), axis=1)
    a = SubsampledPriorLogisticRegression(random_state=0, prior_scale="evidence").fit(X, y)
    b = SubsampledPriorLogisticRegression(random_state=0, prior_scale="loo").fit(X, y)
    assert a.prior_choice_["scale_rule"] == "loo"
    assert_allclose(a.coef_, b.coef_, rtol=0, atol=0)


def test_prior_scale_loo_stays_the_default_and_is_validated():
    assert SubsampledPriorLogisticRegression().prior_scale == "loo"
    X, y = _logistic(80, 3, 7, signal=2.0)
    assert SubsampledPriorLogisticRegression(prior_scale="paper", random_state=0).fit(X, y).prior_choice_ is None
    assert SubsampledPriorLogisticRegression(random_state=0).fit(X, y).prior_choice_["scale_rule"] == "loo"
    with pytest.raises(ValueError, match="prior_scale"):
        SubsampledPriorLogisticRegression(prior_scale="laplace").fit(X, y)


def test_evidence_scale_does_not_depend_on_the_scale_of_the_weights():
    """The criterion takes the weights in units of their mean: weights c w choose the scale of
    weights w.  The weights are normalised by a power of two (exact), but the criterion's
    rounding can steer the bounded search (its tolerance 0.05 decade) differently, so the scales
    agree to that tolerance, not bit for bit.  ``prior_choice_['scale']`` is in the weights' own units
    (frequencies, review HSR F1): it carries a factor 1 / c."""
    X, y = _logistic(120, 30, 3)
    a = SubsampledPriorLogisticRegression(random_state=0, prior_scale="evidence").fit(X, y)
    assert a.prior_choice_["scale_rule"] == "evidence"
    for c in (1e-300, 3.0, 1e300):
        b = SubsampledPriorLogisticRegression(random_state=0, prior_scale="evidence").fit(
            X, y, sample_weight=np.full(y.size, c))
        assert b.prior_choice_["scale_rule"] == "evidence"
        shift = np.log10(b.prior_choice_["scale"]) + np.log10(c) - np.log10(a.prior_choice_["scale"])
        assert abs(shift) <= 0.05
