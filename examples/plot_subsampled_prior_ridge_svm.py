"""
=====================================================================
Matrix ridge penalties and linear SVMs tuned by subsampling
=====================================================================

:class:`sklearn_bayes.SubsampledPriorRidge` chooses a ridge penalty -- its scale by the
marginal likelihood, and among a full (or diagonal) shape and a mean learnt from fits on
random subsamples when those are a small share of the rows and the identity and zero by the
exact leave-one-out risk; :class:`sklearn_bayes.ClosedFormRidge` sets
a scalar penalty by the closed-form, approximately MSE-optimal formula of the
dissertation's Appendix A.1; :class:`sklearn_bayes.SubsampledPriorLinearSVC` does for the
squared-hinge linear SVM what the first does for ridge.  On the Boston housing data
(``MASS::Boston``) and the Pima diabetes data (``MASS::Pima.tr/te``) we compare them with
10-fold cross-validated grid searches over random 75/25 splits, and look at the
per-feature penalties that the diagonal variant of the dissertation's Algorithm 1
(``prior_scale='paper'``) learns.
"""

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LinearRegression, RidgeCV
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from threadpoolctl import threadpool_limits

from sklearn_bayes import ClosedFormRidge, SubsampledPriorLinearSVC, SubsampledPriorRidge
from sklearn_bayes.datasets import load_boston, load_pima

warnings.simplefilter("ignore", FutureWarning)

# %%
# Accuracy and fit time over random splits
# ----------------------------------------
# All fits run single-threaded so that the times compare.  Twenty splits: with fewer, the
# differences between the tuned ridge fits (well under 1 % of the test MSE on this well-posed
# problem) are smaller than the split-to-split noise; the standard error printed beside each
# mean is that of the paired difference to the first method of the problem.

boston = load_boston()
Xb, yb = boston.data, boston.target
Xp, yp = load_pima(return_X_y=True)
problems = {
    "Boston (ridge, test MSE)": (Xb, yb, {
        "OLS": LinearRegression(),
        "RidgeCV(cv=10)": RidgeCV(alphas=np.logspace(-2, 4, 10), cv=10),
        "ClosedFormRidge": ClosedFormRidge(),
        "SubsampledPriorRidge": SubsampledPriorRidge(random_state=0),
        "SubsampledPriorRidge (diag)": SubsampledPriorRidge(covariance="diag", random_state=0),
    }, mean_squared_error),
    "Pima (linear SVM, test error %)": (Xp, yp, {
        "LinearSVC(C=1)": LinearSVC(),
        "GridSearchCV(LinearSVC)": GridSearchCV(LinearSVC(), {"C": np.logspace(-3, 3, 10)}, cv=10),
        "SubsampledPriorLinearSVC": SubsampledPriorLinearSVC(random_state=0),
    }, lambda y, p: 100 * np.mean(y != p)),
}

results = {}
with threadpool_limits(limits=1):
    for title, (X, y, methods, metric) in problems.items():
        res = {name: ([], []) for name in methods}
        for split in range(20):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=split)
            scaler = StandardScaler().fit(Xtr)
            Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
            for name, est in methods.items():
                t0 = time.perf_counter()
                est.fit(Xtr, ytr)
                res[name][1].append(time.perf_counter() - t0)
                res[name][0].append(metric(yte, est.predict(Xte)))
        results[title] = res

for title, res in results.items():
    print(title)
    base = np.array(next(iter(res.values()))[0])
    for name, (err, tim) in res.items():
        se = np.std(np.array(err) - base, ddof=1) / np.sqrt(len(err))
        paired = f"(paired SE {se:.3f})" if se > 0 else "(reference)    "
        print(f"  {name:28s} {np.mean(err):8.3f} {paired}   fit {np.median(tim):.4f} s")

# %%
# The learned per-feature penalties
# ---------------------------------
# With ``covariance='diag'`` and ``prior_scale='paper'`` the prior is
# :math:`N(\beta_0, \mathrm{diag}(s^2))`: each coefficient is shrunk towards its subsample
# mean with its own penalty :math:`1/s_j^2` (the default, ``prior_scale='evidence'``, would
# also choose the scale of these variances, or the identity and mean 0 instead).
# Below, on all of the Boston data (standardised features), the prior mean with one prior
# standard deviation either side, and the MAP coefficients.

Xs = StandardScaler().fit_transform(Xb)
diag = SubsampledPriorRidge(covariance="diag", prior_scale="paper", random_state=0).fit(Xs, yb)
sd = np.sqrt(np.diag(diag.prior_covariance_))
closed = ClosedFormRidge().fit(Xs, yb)
print(f"ClosedFormRidge alpha_ = {closed.alpha_:.3f} (one penalty for all features)")

fig, axes = plt.subplots(1, 3, figsize=(13, 5.0), gridspec_kw={"width_ratios": [1, 1, 1.3]})
for ax, (title, res) in zip(axes[:2], results.items()):
    names = list(res)
    errs = [np.mean(res[n][0]) for n in names]
    times = [np.median(res[n][1]) for n in names]
    base = np.array(res[names[0]][0])
    ses = [np.std(np.array(res[n][0]) - base, ddof=1) / np.sqrt(len(base)) for n in names]
    for i, (n, t, e, se) in enumerate(zip(names, times, errs, ses)):  # bars: +- 1 paired SE to the reference
        ax.errorbar(t, e, yerr=se, fmt="osD^v"[i % 5], ms=7, color=plt.cm.tab10(i), capsize=3, label=n)
    # a legend under the panel: the tuned fits sit within a fraction of a percent of each other,
    # where labels written beside the points overlapped
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.set_xscale("log")
    ax.margins(x=0.35, y=0.15)
    ax.set_xlabel("median fit time (s)")
    ax.set_ylabel(title.split(", ")[1].rstrip(")") + f"  (bars: paired SE to {names[0]})")
    ax.set_title(title.split(" (")[0], fontsize=10)
x = np.arange(Xs.shape[1])
axes[2].errorbar(x, diag.prior_mean_, yerr=sd, fmt="o", color="0.5", label="prior mean +- 1 sd")
axes[2].plot(x, diag.coef_, "rx", label="MAP coefficient")
axes[2].axhline(0, color="k", lw=0.5)
axes[2].set_xticks(x)
axes[2].set_xticklabels(boston.feature_names, rotation=90, fontsize=7)
axes[2].set_title("Boston: diagonal subsampled prior", fontsize=10)
axes[2].legend(fontsize=7)
fig.tight_layout()
plt.show()
