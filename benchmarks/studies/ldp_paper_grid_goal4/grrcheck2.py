"""The default's GRR sampler (ss_privatize_packed, k = 1) on 2M users of x uniform: off-diagonal uniformity chi-square."""
import numpy as np
from scipy.stats import chi2
from sklearn_bayes.privacy._ldp._mechanisms import ss_privatize
for K in (10, 20):
    rng = np.random.default_rng(1); off = np.zeros((K, K)); keep = tot = 0
    for _ in range(4):
        x = rng.integers(0, K, 500_000); y = ss_privatize(x, K, 5.0, 1, rng).argmax(axis=1)
        keep += np.sum(y == x); tot += x.size; np.add.at(off, (x[y != x], y[y != x]), 1)
    stat = sum(np.sum((np.delete(off[a], a) - np.delete(off[a], a).mean()) ** 2 / np.delete(off[a], a).mean()) for a in range(K))
    print(K, keep / tot, np.exp(5) / (np.exp(5) + K - 1), "chi2", round(stat, 1), "dof", K * (K - 2), "p", round(chi2.sf(stat, K * (K - 2)), 3))
