"""
=========================================================================
Tuning GLM penalties by subsampling instead of cross-validation
=========================================================================

:class:`sklearn_bayes.SubsampledPriorLogisticRegression` and
:class:`sklearn_bayes.SubsampledPriorPoissonRegressor` fit the model on small random
subsamples, take the mean and covariance of those fits as candidate prior mean and shape
(next to 0 and the identity), choose the prior -- and its scale -- by an approximate
leave-one-out risk (the strongest prior within half a standard error of its minimum), and
return the MAP fit on all the data: no grid of refits.
``prior_scale='paper'`` is the dissertation's Algorithm 1 (unregularised subsample fits,
their covariance as the prior at scale 1).  Here they are compared with 10-fold
cross-validated grid searches
(:class:`~sklearn.linear_model.LogisticRegressionCV` and
``GridSearchCV(PoissonRegressor)``, 10 values each) and with no regularisation, on
real data: the Pima diabetes data (logistic) and the doctoral publications data
(Poisson counts, ``AER::PhDPublications``), over random 75/25 splits.
"""

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV, PoissonRegressor
from sklearn.metrics import mean_poisson_deviance
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor
from sklearn_bayes.datasets import load_phd_publications, load_pima

warnings.simplefilter("ignore", FutureWarning)

# %%
# The methods and the protocol
# ----------------------------
# Every method sees the same splits; features are standardised with the training
# statistics.  The subsampled-prior estimators use their ``'auto'`` sizes.  All fits
# run single-threaded so that the times compare.

problems = {
    "Pima (logistic, error %)": (
        load_pima(return_X_y=True),
        {
            "unregularised": LogisticRegression(penalty=None, max_iter=1000),
            "LogisticRegressionCV": LogisticRegressionCV(Cs=10, cv=10, max_iter=1000),
            "subsampled prior (default)": SubsampledPriorLogisticRegression(random_state=0),
            "Algorithm 1 (prior_scale='paper')": SubsampledPriorLogisticRegression(prior_scale="paper", random_state=0),
        },
        lambda y, p: 100 * np.mean(y != p),
    ),
    "PhDPublications (Poisson, deviance)": (
        load_phd_publications(return_X_y=True),
        {
            "unregularised": PoissonRegressor(alpha=0.0),
            "GridSearchCV(Poisson)": GridSearchCV(PoissonRegressor(), {"alpha": np.logspace(-4, 2, 10)}, cv=10),
            "subsampled prior (default)": SubsampledPriorPoissonRegressor(random_state=0),
            "Algorithm 1 (prior_scale='paper')": SubsampledPriorPoissonRegressor(prior_scale="paper", random_state=0),
        },
        mean_poisson_deviance,
    ),
}

n_splits = 3
results = {}
limit = threadpool_limits(limits=1)
for title, ((X, y), methods, metric) in problems.items():
    res = {name: ([], []) for name in methods}
    for split in range(n_splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=split)
        scaler = StandardScaler().fit(Xtr)
        Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
        for name, est in methods.items():
            t0 = time.perf_counter()
            est.fit(Xtr, ytr)
            res[name][1].append(time.perf_counter() - t0)
            res[name][0].append(metric(yte, est.predict(Xte)))
    results[title] = res
limit.restore_original_limits()
for title, res in results.items():
    print(title)
    for name, (err, tim) in res.items():
        print(f"  {name:34s} {np.mean(err):7.3f} +- {np.std(err, ddof=1):.3f}   fit {np.mean(tim):.4f} s")

# %%
# Accuracy and time
# -----------------
# Test error (mean and standard deviation over the splits) on the left; mean fit time
# on a log scale on the right.  The subsampled prior matches the cross-validated
# error at a fraction of the time (on these well-determined data every method is within
# noise of the others; ``benchmarks/bench_subsampled_prior.py`` has the small and wide cells
# where regularisation matters).

fig, axes = plt.subplots(len(problems), 2, figsize=(10, 6.5))
for row, (title, res) in enumerate(results.items()):
    names = list(res)
    colors = plt.cm.tab10(np.arange(len(names)))
    errs = [np.mean(res[n][0]) for n in names]
    sds = [np.std(res[n][0], ddof=1) for n in names]
    times = [np.mean(res[n][1]) for n in names]
    axes[row, 0].barh(names, errs, xerr=sds, color=colors)
    axes[row, 0].set_xlim(min(errs) - 2 * max(sds), max(errs) + 2 * max(sds))
    axes[row, 0].set_title(f"{title}: test error")
    axes[row, 1].barh(names, times, color=colors)
    axes[row, 1].set_xscale("log")
    axes[row, 1].set_title("mean fit time (s)")
    axes[row, 1].set_yticklabels([])
fig.tight_layout()
plt.show()

# %%
# The estimated prior
# -------------------
# The fitted estimator keeps what it learned from the subsamples: the resolved sizes,
# the chosen candidate prior, the prior mean and covariance, and each subsample's
# coefficients.

est = problems["PhDPublications (Poisson, deviance)"][1]["subsampled prior (default)"]
print("subsample size n =", est.subsample_size_, " subsamples m =", est.n_subsamples_)
print("chosen prior    :", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in est.prior_choice_.items()})
print("prior mean      :", np.round(est.prior_mean_, 3))
print("prior sd        :", np.round(np.sqrt(np.diag(est.prior_covariance_)), 3))
print("MAP coefficients:", np.round(est.coef_, 3))
