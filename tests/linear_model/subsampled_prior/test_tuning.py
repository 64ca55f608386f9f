"""prior_scale='loo' (issue 29): the leave-one-out risks behind the default's choice of prior.

Exact identities only: the squared-loss path is the exact leave-one-out risk (checked against N
refits), the approximate leave-one-out (ALO) risk is one Newton step of each leave-one-out
objective from the full fit (checked against those steps computed one by one), the two agree
for the squared loss (where one Newton step is exact), and the cross-fitted prior means are the
means of the subsample fits without each row.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy import linalg
from scipy.stats import norm
from sklearn.linear_model import RidgeCV

from sklearn_bayes import (
    SubsampledPriorLinearSVC,
    SubsampledPriorLogisticRegression,
    SubsampledPriorPoissonRegressor,
    SubsampledPriorRidge,
    SubsampleFitWarning,
)
from sklearn_bayes._glm import LogisticLoss, MultinomialLoss, PoissonLoss, SquaredHingeLoss, SquaredLoss, fit_map
from sklearn_bayes.linear_model._subsampled_prior._tuning import (
    _EVIDENCE_LR,
    _LOG10_TAU,
    _RIDGE_GRID,
    _SVM_STEP,
    _loo_means,
    _ridge_candidates,
    _ridge_eig,
    alo_risk,
    ridge_neg_log_evidence,
    select_ridge,
    select_glm,
    select_svm,
)


def _centred(X, y, w):
    return X - w @ X / w.sum(), y - w @ y / w.sum()


def _spd(k, rng):
    A = rng.normal(size=(k, k))
    return A @ A.T / k + 0.5 * np.eye(k)


@pytest.mark.parametrize("n", [40, 5])  # N > p (Gram eigendecomposition) and N <= p (kernel one)
@pytest.mark.parametrize("weighted", [False, True])
def test_ridge_path_is_the_exact_leave_one_out_risk(n, weighted):
    rng = np.random.default_rng(0)
    p = 6
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, size=n) if weighted else np.ones(n)
    Xc, yc = _centred(X, y, w)
    S, mean = _spd(p, rng), rng.normal(size=p)
    risk, lambdas, _ = _ridge_candidates(Xc, yc, w, True, mean, linalg.cholesky(S, lower=True), None)
    Sinv = np.linalg.inv(S)
    for t in (5, 20, 40):
        lam, total = lambdas[t], 0.0
        for i in range(n):
            keep = np.arange(n) != i
            Xk, yk, wk = Xc[keep], yc[keep], w[keep]
            xm, ym = wk @ Xk / wk.sum(), wk @ yk / wk.sum()  # the intercept refitted without row i
            A = (Xk - xm).T @ (wk[:, None] * (Xk - xm)) + lam * Sinv
            beta = np.linalg.solve(A, (Xk - xm).T @ (wk * (yk - ym)) + lam * Sinv @ mean)
            total += w[i] * (yc[i] - ym - (Xc[i] - xm) @ beta) ** 2
        assert_allclose(risk[t], total, rtol=1e-8)


def _one_step_loo(X, y, w, loss, coef, intercept, P):
    """Row by row: one Newton step of the objective without row i, from the full fit."""
    n, d = X.shape
    q = loss.n_outputs
    theta = np.r_[np.ravel(coef), intercept]
    Xt = np.hstack([X, np.ones((n, 1))])
    eta = X @ np.reshape(coef, (q, d)).T + intercept
    g, h = loss.derivatives(y, eta, w)
    H = np.zeros((theta.size, theta.size))
    blocks = [np.r_[np.arange(k * d, (k + 1) * d), q * d + k] for k in range(q)]
    rows = []
    for i in range(n):
        Z = np.zeros((q, theta.size))
        for k, cols in enumerate(blocks):
            Z[k, cols] = Xt[i]
        Wi = np.diag(h[i]) if h.ndim == 2 else h[i]
        rows.append((Z, Wi))
        H += Z.T @ Wi @ Z
    H[: q * d, : q * d] += P
    total = 0.0
    for i, (Z, Wi) in enumerate(rows):
        step = np.linalg.solve(H - Z.T @ Wi @ Z, Z.T @ g[i])
        eta_i = Z @ (theta + step)
        total += loss.value(y[i:i + 1], eta_i[None, :], w[i:i + 1])
    return total


@pytest.mark.parametrize("kind", ["logistic", "poisson", "multinomial", "squared_hinge"])
def test_alo_is_one_newton_step_of_each_leave_one_out_objective(kind):
    rng = np.random.default_rng(1)
    n, d = 60, 3
    X = rng.normal(size=(n, d))
    w = rng.uniform(0.5, 2.0, size=n)
    if kind == "logistic":
        loss, y = LogisticLoss(), (rng.random(n) < 0.5).astype(float)
    elif kind == "poisson":
        loss, y = PoissonLoss(), rng.poisson(np.exp(0.3 * X[:, 0])).astype(float)
    elif kind == "multinomial":
        loss, y = MultinomialLoss(3), rng.integers(0, 3, size=n).astype(float)
    else:
        loss, y = SquaredHingeLoss(), np.where(X[:, 0] + rng.normal(size=n) > 0, 1.0, -1.0)
    k = loss.n_outputs * d
    P = _spd(k, rng) * 2.0
    res = fit_map(X, y, loss, prior_mean=np.zeros(k), prior_precision=P, sample_weight=w, tol=1e-12)
    got = alo_risk(X, y, w, loss, res.coef, res.intercept, P, True)
    assert_allclose(got, _one_step_loo(X, y, w, loss, res.coef, res.intercept, P), rtol=1e-8)


def test_alo_error_count_breaks_ties_by_the_risk():
    """errors=True: the count of leave-one-out misclassifications (in units of the mean weight),
    plus r / (1 + r) < 1 with r the risk per unit weight."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(80, 2))
    y = np.where(X[:, 0] + rng.normal(size=80) > 0, 1.0, -1.0)
    w, P = np.ones(80), np.eye(2)
    res = fit_map(X, y, SquaredHingeLoss(), prior_precision=P, tol=1e-12)
    r = alo_risk(X, y, w, SquaredHingeLoss(), res.coef, res.intercept, P, True)
    e = alo_risk(X, y, w, SquaredHingeLoss(), res.coef, res.intercept, P, True, errors=True)
    count = np.floor(e)
    assert 0 < count < 40 and count == int(count)
    assert_allclose(e - count, (r / 80) / (1.0 + r / 80), rtol=1e-12)


def test_alo_of_the_squared_loss_is_the_exact_leave_one_out_risk():
    """One Newton step is exact for a quadratic objective: the two paths agree."""
    rng = np.random.default_rng(2)
    n, p = 50, 4
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + rng.normal(size=n)
    w = np.ones(n)
    Xc, yc = _centred(X, y, w)
    risk, lambdas, _ = _ridge_candidates(Xc, yc, w, True, np.zeros(p), np.eye(p), None)
    lam = lambdas[30]
    res = fit_map(Xc, yc, SquaredLoss(), prior_mean=np.zeros(p), prior_precision=lam, tol=1e-12)
    # the squared loss is (y - eta)^2 / 2: the ALO risk is half the sum of squared LOO residuals
    got = alo_risk(Xc, yc, w, SquaredLoss(), res.coef, res.intercept, lam * np.eye(p), True)
    assert_allclose(2.0 * got, risk[30], rtol=1e-8)


def test_cross_fitted_means_leave_each_row_out():
    rng = np.random.default_rng(3)
    n, m, k = 30, 6, 2
    indices = [np.sort(rng.choice(n, size=8, replace=False)) for _ in range(m)]
    coefs = rng.normal(size=(m, k))
    D = _loo_means(coefs, indices, n)
    for i in range(n):
        without = [c for c, idx in zip(coefs, indices) if i not in idx]
        expected = np.mean(without, axis=0) - coefs.mean(axis=0) if 0 < len(without) < m else np.zeros(k)
        assert_allclose(D[i], expected, atol=1e-14)


def test_wide_ridge_loo_is_ridge_with_the_leave_one_out_penalty():
    """Subsamples of more than a quarter of the rows: the candidates are the identity shape and
    mean 0 only, so ``prior_scale='loo'`` is ridge on the standardised features with the penalty
    of the grid that minimises the exact leave-one-out risk -- RidgeCV's choice on the same grid."""
    rng = np.random.default_rng(4)
    n, p = 60, 40
    X = rng.normal(size=(n, p)) * rng.uniform(0.5, 3.0, size=p) + 1.0
    y = X @ rng.normal(size=p) + 5.0 * rng.normal(size=n)
    reg = SubsampledPriorRidge(prior_scale="loo", random_state=0).fit(X, y)
    assert reg.subsample_size_ > n / 4
    assert (reg.prior_choice_["shape"], reg.prior_choice_["mean"]) == ("identity", "zero")
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    grid = _RIDGE_GRID * float(np.sum(Xs * Xs)) / p
    ref = RidgeCV(alphas=grid).fit(Xs, y)
    assert_allclose(reg.coef_, ref.coef_ / X.std(axis=0), rtol=1e-7)
    assert_allclose(reg.intercept_, ref.intercept_ - (ref.coef_ / X.std(axis=0)) @ X.mean(axis=0), rtol=1e-7)


@pytest.mark.parametrize("Est", [SubsampledPriorLogisticRegression, SubsampledPriorLinearSVC])
def test_separable_data_need_no_fallback_by_default(Est):
    """Every subsample fit is penalised: none is replaced and nothing is warned about."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)  # separable
    with warnings.catch_warnings():
        warnings.simplefilter("error", SubsampleFitWarning)
        clf = Est(subsample_size=30, n_subsamples=10, random_state=0).fit(X, y)
    assert clf.n_separated_subsamples_ == 0
    assert np.all(np.isfinite(clf.coef_)) and clf.score(X, y) > 0.95
    keys = {"shape", "mean", "scale", "loo_risk", "at_grid_boundary"}
    extra = {"intercept"} if Est is SubsampledPriorLinearSVC else {"scale_rule"}
    assert set(clf.prior_choice_) == keys | extra
    if Est is SubsampledPriorLogisticRegression:  # separated: the evidence is not trusted (issue 29, round 6)
        assert clf.prior_choice_["scale_rule"] == "loo"


def test_poisson_zero_counts_need_no_fallback_by_default():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    y = np.zeros(300, dtype=int)
    y[:6] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", SubsampleFitWarning)
        reg = SubsampledPriorPoissonRegressor(subsample_size=20, n_subsamples=10, random_state=0).fit(X, y)
    assert reg.n_separated_subsamples_ == 0 and np.all(reg.predict(X) < 1.0)


def test_default_warns_only_about_what_max_iter_can_fix():
    """The default's penalised subsample fits always exist; the one thing that can go wrong with
    them is the iteration limit, and the warning names it (not the subsample size)."""
    X, y = np.random.default_rng(0).normal(size=(300, 3)), np.r_[np.zeros(150), np.ones(150)]
    X[:, 0] += 3 * y
    with pytest.warns(SubsampleFitWarning, match=r"did not converge within max_iter=1\b.*Increase max_iter") as rec:
        SubsampledPriorLogisticRegression(max_iter=1, random_state=0).fit(X, y)
    assert not any("subsample_size" in str(w.message) for w in rec)


def test_paper_variant_has_no_choice_and_prior_scale_is_validated():
    X = np.random.default_rng(0).normal(size=(100, 3))
    y = X[:, 0] + 0.1
    assert SubsampledPriorRidge(prior_scale="paper", random_state=0).fit(X, y).prior_choice_ is None
    with pytest.raises(ValueError, match="prior_scale"):
        SubsampledPriorRidge(prior_scale="bayes").fit(X, y)
    with pytest.raises(ValueError, match="prior_scale"):  # the ridge's and the logistic's only
        SubsampledPriorPoissonRegressor(prior_scale="evidence").fit(X, np.abs(np.round(y)))


def _brute_neg_log_evidence(A, r, lam, fit_intercept, sw):
    """``-2 log`` marginal likelihood of ``r ~ N(0, sigma^2 (I + A A^T / lam))``, ``sigma^2``
    profiled out, by a log-determinant and a solve in ``N`` dimensions (with an intercept: in the
    ``N - 1`` coordinates orthogonal to ``sw``, where the centred residuals live)."""
    N = A.shape[0]
    C = np.eye(N) + A @ A.T / lam
    if fit_intercept:
        Q, _ = np.linalg.qr(np.column_stack([sw, np.eye(N)[:, : N - 1]]))
        B = Q[:, 1:]  # orthonormal basis of the complement of sw
        C, r = B.T @ C @ B, B.T @ r
    n = r.size
    quad = float(r @ np.linalg.solve(C, r))
    return n * np.log(quad / n) + np.linalg.slogdet(C)[1]


@pytest.mark.parametrize("N, k, fit_intercept", [(40, 8, True), (25, 40, True), (30, 6, False)])
def test_ridge_evidence_equals_a_brute_force_log_determinant(N, k, fit_intercept):
    """The closed form from the thin eigendecomposition (sums over the singular values) equals
    ``n' log(r^T C^-1 r / n') + log det C`` computed on the N x N covariance, with weights, a
    non-identity shape and a non-zero prior mean; difference of the two at two penalties too
    (the constant dropped is the same)."""
    rng = np.random.default_rng(N + k)
    X = rng.normal(size=(N, k)) * rng.uniform(0.5, 2.0, size=k)
    y = X @ rng.normal(size=k) + rng.normal(size=N)
    w = rng.uniform(0.5, 2.0, size=N)
    if fit_intercept:
        X, y = _centred(X, y, w)
    L = np.linalg.cholesky(np.cov(rng.normal(size=(3 * k, k)), rowvar=False) + 0.5 * np.eye(k))
    mean = 0.1 * rng.normal(size=k)
    eig = _ridge_eig(X, w, L)
    r = (y - X @ mean) * eig["sw"]
    c = (eig["V"].T @ (eig["A"].T @ r)) / eig["s"]
    rr = float(r @ r) - float(c @ c)
    n_eff = N - int(fit_intercept)
    for lam in (0.03, 1.0, 40.0):
        got = ridge_neg_log_evidence(np.log(lam), eig["s2"], c, rr, n_eff)
        want = _brute_neg_log_evidence(eig["A"], r, lam, fit_intercept, eig["sw"])
        # both are sums of N logs of O(1..1e3) numbers: agreement to rounding of the
        # decompositions (condition number of C below 1e5 here)
        assert_allclose(got, want, rtol=1e-9, atol=1e-9 * N)


def _fisher_sd_log_lam(s2, n_eff, sigma2, tau):
    """Asymptotic sd of the maximum-likelihood ``log(sigma^2 / tau)`` given the design: the
    residuals have independent coordinates of variances ``sigma^2 + tau s_j^2`` (``j <= r``) and
    ``sigma^2`` (the other ``n_eff - r``); Fisher information of ``(log sigma^2, log tau)`` is
    ``1/2 sum_j g_j g_j^T`` with ``g_j`` the derivatives of the log variances."""
    v = np.concatenate([sigma2 + tau * s2, np.full(n_eff - s2.size, sigma2)])
    g = np.column_stack([sigma2 / v, np.concatenate([tau * s2, np.zeros(n_eff - s2.size)]) / v])
    cov = np.linalg.inv(0.5 * g.T @ g)
    d = np.array([1.0, -1.0])
    return float(np.sqrt(d @ cov @ d))


@pytest.mark.parametrize("N, p, seed", [(400, 60, 0), (120, 90, 1), (150, 100, 2)])
def test_ridge_evidence_recovers_the_scale_of_data_drawn_from_the_prior(N, p, seed):
    """y = X b + e, b ~ N(0, tau I), e ~ N(0, sigma^2): the evidence's penalty estimates
    lam = sigma^2 / tau within 4 asymptotic standard errors (Fisher information of the
    marginal likelihood given X; a false failure has probability about 6e-5)."""
    rng = np.random.default_rng(seed)
    tau, sigma2 = 0.3, 4.0
    X = rng.normal(size=(N, p))
    y = X @ (np.sqrt(tau) * rng.normal(size=p)) + np.sqrt(sigma2) * rng.normal(size=N)
    w = np.ones(N)
    Xc, yc = _centred(X, y, w)
    coefs = np.zeros((3, p))
    sel = select_ridge(Xc, yc, w, True, coefs, [np.arange(5)] * 3, np.eye(p), use_subsamples=False,
                       rule="evidence")
    assert (sel["shape_name"], sel["mean_name"], sel["boundary"]) == ("identity", "zero", False)
    s2 = _ridge_eig(Xc, w, np.eye(p))["s2"]
    sd = _fisher_sd_log_lam(s2, N - 1, sigma2, tau)
    assert abs(np.log(sel["lam"]) - np.log(sigma2 / tau)) <= 4.0 * sd
    # and it is the maximiser of the brute-force evidence (to the search's 1e-3 in log lam)
    A = _ridge_eig(Xc, w, np.eye(p))["A"]
    f = [_brute_neg_log_evidence(A, yc, sel["lam"] * np.exp(d), True, np.ones(N)) for d in (-0.02, 0.0, 0.02)]
    assert f[1] <= min(f[0], f[2])


def test_ridge_evidence_without_a_noise_estimate_falls_back_to_loo():
    """p >= N - 1: the design spans the centred residuals and the marginal likelihood can rise
    all the way to sigma^2 = 0 (here it is flat there: a high signal-to-noise ratio, p = 2N);
    when the likelihood-ratio test does not reject sigma^2 = 0 the penalty is the leave-one-out
    one, not the evidence's (which the rounding puts anywhere on the flat stretch)."""
    rng = np.random.default_rng(2)
    N, p = 80, 160
    X = rng.normal(size=(N, p))
    y = X @ (np.sqrt(0.3) * rng.normal(size=p)) + 2.0 * rng.normal(size=N)
    w = np.ones(N)
    Xc, yc = _centred(X, y, w)
    eig = _ridge_eig(Xc, w, np.eye(p))
    c = (eig["V"].T @ (eig["A"].T @ yc)) / eig["s"]
    rr = float(yc @ yc) - float(c @ c)
    f = [ridge_neg_log_evidence(np.log(lam), eig["s2"], c, rr, N - 1) for lam in np.logspace(-6, 2, 9)]
    # the evidence is flat towards lam = sigma^2 / tau -> 0: sigma^2 = 0 is not rejected
    assert rr < 1e-9 * float(yc @ yc) and f[0] - min(f) < _EVIDENCE_LR and f[-1] - min(f) > 5.0
    args = (Xc, yc, w, True, np.zeros((2, p)), [np.arange(5)] * 2, np.eye(p))
    ev = select_ridge(*args, use_subsamples=False, rule="evidence")
    loo = select_ridge(*args, use_subsamples=False, rule="loo")
    assert ev["lam"] == loo["lam"] and ev["risk"] == loo["risk"]


def test_ridge_default_is_ridge_at_the_evidence_penalty():
    """Wide data (identity shape, mean 0 only): the default ``prior_scale='evidence'`` is ridge
    on the standardised features at the penalty that maximises the marginal likelihood."""
    rng = np.random.default_rng(4)
    n, p = 60, 40
    X = rng.normal(size=(n, p)) * rng.uniform(0.5, 3.0, size=p) + 1.0
    y = X @ rng.normal(size=p) + 5.0 * rng.normal(size=n)
    reg = SubsampledPriorRidge(random_state=0).fit(X, y)
    assert (reg.prior_choice_["shape"], reg.prior_choice_["mean"]) == ("identity", "zero")
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    ys = (y - y.mean()) / y.std()
    w = np.ones(n)
    sel = select_ridge(Xs, ys, w, True, np.zeros((2, p)), [np.arange(5)] * 2, np.eye(p), use_subsamples=False,
                       rule="evidence")
    from sklearn.linear_model import Ridge

    ref = Ridge(alpha=sel["lam"]).fit(Xs, y)
    assert_allclose(reg.coef_, ref.coef_ / X.std(axis=0), rtol=1e-7)
    loo = SubsampledPriorRidge(prior_scale="loo", random_state=0).fit(X, y)
    assert not np.allclose(reg.coef_, loo.coef_)  # the two rules differ here


@pytest.mark.parametrize("Est", [SubsampledPriorRidge, SubsampledPriorLogisticRegression, SubsampledPriorLinearSVC,
                                 SubsampledPriorPoissonRegressor])
def test_default_does_not_depend_on_the_scale_of_the_weights(Est):
    """Weights c w give the fit of weights w: the subsample fits' unit prior and the searched prior
    scale are per mean unit of weight, and the weights are normalised by a power of two (exact),
    so only the rounding of the Newton iterations differs (1e3 eps of the coefficients' size is
    a margin of hundreds of ulps).  Weights 1e308 on half the rows: the fit of those rows."""
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 3))
    eta = X @ np.array([1.0, -0.5, 0.2])
    y = {SubsampledPriorRidge: eta + rng.normal(size=300),
         SubsampledPriorPoissonRegressor: rng.poisson(np.exp(0.4 * eta))}.get(
        Est, (rng.random(300) < 1 / (1 + np.exp(-eta))).astype(int))
    a = Est(random_state=0).fit(X, y)
    tol = 1e3 * np.finfo(float).eps * np.abs(a.coef_).max()
    poisson = Est is SubsampledPriorPoissonRegressor
    for c in (1e-300, 3.0, 1e300):
        # Poisson: the weights are exposures (review HSR, F1), so their scale is the unit of the rates y / c: the
        # counts and the fit are those of (y, 1), the intercept shifted by -log(c)
        b = Est(random_state=0).fit(X, y / c if poisson else y, sample_weight=np.full(300, c))
        assert_allclose(np.ravel(b.coef_), np.ravel(a.coef_), rtol=0, atol=tol)
        assert_allclose(b.intercept_ + (np.log(c) if poisson else 0.0), a.intercept_, rtol=0,
                        atol=tol + (4 * np.finfo(float).eps * abs(np.log(c)) if poisson else 0.0))
    w = np.r_[np.full(150, 1e308), np.ones(150)]
    heavy = Est(random_state=0).fit(X, y, sample_weight=w)
    assert np.all(np.isfinite(heavy.coef_)) and np.all(np.isfinite(heavy.intercept_))


# ---- issue 29, round 2: the standard-error rule of the GLMs ----------------------------------


def _heavy_poisson(seed=0, n=120, p=5):
    """Counts with a heavy-tailed covariate (Student t, 2 degrees of freedom)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_t(2, size=(n, p))
    X = (X - X.mean(0)) / X.std(0)
    y = rng.poisson(np.exp(0.5 + X @ (0.3 * rng.normal(size=p)))).astype(float)
    return X, y


@pytest.mark.parametrize("k", [0.5, 1.0])
def test_se_rule_picks_a_stronger_prior_within_k_standard_errors(k):
    X, y = _heavy_poisson()
    n, p = X.shape
    w = np.ones(n)
    coefs, idx = np.zeros((2, p)), [np.arange(10), np.arange(10, 20)]
    args = (X, y, w, PoissonLoss(), True, coefs, idx, np.eye(p), 1e-10, 100, np.zeros(1))
    plain = select_glm(*args, use_subsamples=False, se_rule=0.0)
    rule = select_glm(*args, use_subsamples=False, se_rule=k)
    assert plain["tau"] == plain["loo_min_tau"]  # se_rule=0: the minimiser itself
    assert rule["loo_min_tau"] == plain["loo_min_tau"]  # the same search before the rule
    assert rule["tau"] < rule["loo_min_tau"]  # on these heavy-tailed rows the rule moves (seeded data)

    def rows(tau):  # the ALO row losses at tau, from a fresh fit (not the search's warm starts)
        P = np.eye(p) / tau
        res = fit_map(X, y, PoissonLoss(), prior_mean=np.zeros(p), prior_precision=P, fit_intercept=True, tol=1e-12)
        return alo_risk(X, y, w, PoissonLoss(), res.coef, res.intercept, P, True, rows=True)

    (r_min, l_min), (r, l) = rows(plain["tau"]), rows(rule["tau"])
    assert_allclose(r, l.sum(), rtol=1e-12)
    se = np.sqrt(n) * np.std(l - l_min, ddof=1)
    # within k standard errors (the fits agree to the solver's tolerance, far below the margin)
    assert r - r_min <= k * se + 1e-6 * abs(r_min)
    # and the boundary is located to 1/8 decade: 1/8 decade stronger is outside, unless on the grid's end
    if rule["tau"] < plain["tau"] and np.log10(rule["tau"]) - 0.125 > -4.0:
        r2, l2 = rows(rule["tau"] / 10 ** 0.125)
        assert r2 - r_min > k * np.sqrt(n) * np.std(l2 - l_min, ddof=1) - 1e-6 * abs(r_min)


def _loo_wrong_probability(Xa, y, theta, P):
    """``sum_i Phi(-y_i eta_{-i} / sd_i)`` of the squared hinge SVM whose parameters ``theta``
    (columns of ``Xa``) have the prior precision ``P`` on every column but a free intercept's (its
    row and column of ``P`` zero), computed row by row: ``H_{-i}`` the Hessian without row ``i``,
    ``eta_{-i} = eta_i + g_i x_i^T H_{-i}^{-1} x_i`` (one Newton step from the full fit) and
    ``sd_i^2 = x_i^T H_{-i}^{-1} x_i``."""
    eta = Xa @ theta
    g, h = SquaredHingeLoss().derivatives(y, eta[:, None], np.ones(len(y)))
    H = Xa.T @ (h[:, 0][:, None] * Xa) + P
    total = 0.0
    for i in range(len(y)):
        v = float(Xa[i] @ np.linalg.solve(H - h[i, 0] * np.outer(Xa[i], Xa[i]), Xa[i]))
        total += float(norm.cdf(-y[i] * (eta[i] + g[i, 0] * v) / np.sqrt(v)))
    return total


def _svm_counts(X, y, pen, grid):
    """Leave-one-out misclassification counts of the squared hinge SVM along ``grid`` (log10 tau),
    by ALO (checked against exact refits in test_alo_is_one_newton_step_of_each_leave_one_out_objective),
    and the summed leave-one-out misclassification probabilities (_loo_wrong_probability)."""
    n, d = X.shape
    out, probs = [], []
    Xa = np.hstack([X, np.ones((n, 1))])
    for t in grid:
        P = np.eye(d + 1) / 10.0 ** t
        if pen:
            r = fit_map(Xa, y, SquaredHingeLoss(), prior_precision=P, fit_intercept=False, tol=1e-10)
            e = alo_risk(Xa, y, np.ones(n), SquaredHingeLoss(), r.coef, r.intercept, P, False, errors=True)
            theta = r.coef[0]
        else:
            r = fit_map(X, y, SquaredHingeLoss(), prior_precision=P[:d, :d], tol=1e-10)
            e = alo_risk(X, y, np.ones(n), SquaredHingeLoss(), r.coef, r.intercept, P[:d, :d], True, errors=True)
            theta, P[d, d] = np.append(r.coef[0], r.intercept), 0.0
        out.append(np.floor(e))
        probs.append(_loo_wrong_probability(Xa, y, theta, P))
    return np.array(out), np.array(probs)


@pytest.mark.parametrize("seed", [1, 2])
def test_svm_keeps_the_fewest_loo_errors_and_among_ties_the_smallest_error_probability(seed):
    """select_svm: over both intercept candidates and the grid, the fewest leave-one-out
    misclassifications; among equal counts the smallest summed probability of a wrong
    leave-one-out sign under the posterior without the row (computed here row by row from the
    Hessian without it); the returned fit is the MAP fit of the chosen prior (intercept as a
    penalised column or free)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(80, 4))
    y = np.where(X[:, 0] + 0.5 + rng.normal(size=80) > 0, 1.0, -1.0)
    args = (X, y, np.ones(80), SquaredHingeLoss(), True, np.zeros((2, 4)), [np.arange(10), np.arange(10, 20)],
            np.eye(4), 1e-10, 100, np.zeros(1))
    sel = select_svm(*args, use_subsamples=False)
    lo, hi = _LOG10_TAU
    grid = np.arange(lo, hi + 1e-9, _SVM_STEP)
    (free, pfree), (pen, ppen) = _svm_counts(X, y, False, grid), _svm_counts(X, y, True, grid)
    best = min(free.min(), pen.min())
    ties = [(p, t, not is_pen) for cnt, prob, is_pen in ((free, pfree, False), (pen, ppen, True))
            for c, p, t in zip(cnt, prob, grid) if c == best]
    ties.sort()
    # the two computations of the probabilities agree to ~1e-9; the winner must be clear of that
    assert len(ties) == 1 or ties[1][0] - ties[0][0] > 1e-6
    _, t, free_wins = ties[0]
    assert sel["risk"] == best
    assert_allclose(np.log10(sel["tau"]), t)
    assert sel["intercept_penalised"] == (not free_wins)
    assert_allclose(sel["loo_misclassification_probability"], ties[0][0], rtol=1e-6)
    P = np.eye(5 if sel["intercept_penalised"] else 4) / sel["tau"]
    if sel["intercept_penalised"]:
        r = fit_map(np.hstack([X, np.ones((80, 1))]), y, SquaredHingeLoss(), prior_precision=P, fit_intercept=False,
                    tol=1e-12)
        ref_coef, ref_b = r.coef[:, :4], r.coef[:, 4]
    else:
        r = fit_map(X, y, SquaredHingeLoss(), prior_precision=P, tol=1e-12)
        ref_coef, ref_b = r.coef, r.intercept
    # two Newton solutions of one strictly convex problem, both to tolerances below 1e-10
    assert_allclose(sel["coef"], ref_coef, rtol=1e-6, atol=1e-8)
    assert_allclose(sel["intercept"], ref_b, rtol=1e-6, atol=1e-8)
    with pytest.raises(TypeError, match="select_svm"):
        select_glm(*args)


@pytest.mark.parametrize("shape", ["identity", "spd"])
@pytest.mark.parametrize("n", [40, 8])  # full rank and rank-deficient X (fewer rows than columns)
def test_ridge_map_is_the_newton_fit_and_its_inverse_hessians(shape, n):
    """The closed-form MAP fit of the squared loss from the eigendecomposition that chose the
    prior equals the solver's fit, and its inverse Hessians (with and without the prior) those
    of posterior_hessian (for the rank-deficient data term the limit of (H + eps I)^-1: the pseudo-inverse, and
    +-inf for the coefficients the data do not identify, _glm.inverse_information)."""
    from sklearn_bayes._glm import inverse_information, inverse_spd, posterior_hessian
    from sklearn_bayes.linear_model._subsampled_prior._tuning import _ridge_eig, ridge_map

    rng = np.random.default_rng(6)
    p = 10
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + rng.normal(size=n)
    w = rng.uniform(0.5, 2.0, size=n)
    Xc, yc = _centred(X, y, w)
    S = np.eye(p) if shape == "identity" else _spd(p, rng)
    L = linalg.cholesky(S, lower=True)
    mean = rng.normal(size=p)
    eig = _ridge_eig(Xc, w, L)
    _, lambdas, st = _ridge_candidates(Xc, yc, w, True, mean, L, None, eig)
    st.update(mean=mean, lam=float(lambdas[30]), identity=shape == "identity")
    coef, intercept, post, data = ridge_map(Xc, yc, w, True, st)
    P = st["lam"] * np.linalg.inv(S)
    res = fit_map(Xc, yc, SquaredLoss(), prior_mean=mean, prior_precision=P, sample_weight=w, tol=1e-13)
    assert_allclose(coef, res.coef[0], rtol=1e-8, atol=1e-10)
    assert_allclose(intercept, res.intercept, atol=1e-10)
    H = posterior_hessian(Xc, yc, SquaredLoss(), res.coef, res.intercept, sample_weight=w, prior_precision=P)
    assert_allclose(post, inverse_spd(H), rtol=1e-8, atol=1e-10)
    if n < p and shape != "identity":
        assert data is None  # the caller falls back to inverse_information
    else:
        H0 = posterior_hessian(Xc, yc, SquaredLoss(), res.coef, res.intercept, sample_weight=w)
        assert_allclose(data, inverse_information(H0), rtol=1e-7, atol=1e-9)
        assert np.all(np.isinf(np.diag(data)[:p])) == (n < p)


def test_one_vs_rest_svms_share_the_prior_with_the_fewest_loo_errors_of_the_prediction():
    """select_svm_ovr: one candidate for every class, the one whose leave-one-out one-vs-rest
    prediction (the class of the largest leave-one-out decision value) errs least, among equal
    counts the smallest leave-one-out misclassification probability summed over the classes'
    problems; the estimator reports it for every class."""
    from sklearn_bayes.linear_model._subsampled_prior._tuning import select_svm_ovr, svm_path

    rng = np.random.default_rng(7)
    centres = np.array([[0.0, 0.0], [1.5, 0.0], [0.0, 1.5]])
    labels = np.repeat(np.arange(3), 30)
    X = centres[labels] + rng.normal(size=(90, 2))
    w = np.ones(90)
    paths = [svm_path(X, np.where(labels == k, 1.0, -1.0), w, SquaredHingeLoss(), True, np.zeros((2, 2)),
                      [np.arange(10), np.arange(10, 20)], np.eye(2), 1e-10, 100, np.zeros(1), use_subsamples=False)
             for k in range(3)]
    chosen = select_svm_ovr(paths, labels, w)
    counts = {}
    for c0, c1, c2 in zip(*paths):
        assert c0["name"] == c1["name"] == c2["name"]
        eta = np.stack([c0["eta_loo"], c1["eta_loo"], c2["eta_loo"]], axis=1)
        prob = 0.0
        for k, c in enumerate((c0, c1, c2)):
            s = c["sel"]
            theta = np.append(s["coef"], s["intercept"])
            P = np.eye(3) / s["tau"]
            if not s["intercept_penalised"]:
                P[2, 2] = 0.0
            prob += _loo_wrong_probability(np.hstack([X, np.ones((90, 1))]), np.where(labels == k, 1.0, -1.0),
                                           theta, P)
        counts[c0["key"]] = (int(np.sum(np.argmax(eta, axis=1) != labels)), c0["sel"], prob)
    best_key = min(counts, key=lambda k: (counts[k][0], counts[k][2], k))
    tied = sorted(v[2] for v in counts.values() if v[0] == counts[best_key][0])
    assert len(tied) == 1 or tied[1] - tied[0] > 1e-6  # a clear winner (the two computations agree to ~1e-9)
    assert all(c["risk"] == counts[best_key][0] for c in chosen)
    assert len({(c["tau"], c["intercept_penalised"]) for c in chosen}) == 1
    assert chosen[0]["tau"] == counts[best_key][1]["tau"]
    assert chosen[0]["intercept_penalised"] == counts[best_key][1]["intercept_penalised"]
    clf = SubsampledPriorLinearSVC(random_state=0).fit(X, labels)
    assert len({(c["scale"], c["intercept"]) for c in clf.prior_choice_}) == 1
