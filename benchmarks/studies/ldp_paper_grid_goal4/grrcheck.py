"""Is the default's (and RRRR SRR's) simulated GRR the GRR law?  Keep rate and the off-diagonal uniformity, pooled over
runs 0..59 of K = 10 / 20, eps = 5, Dir(1) (chi-square against e^eps / (e^eps + K - 1) and uniform others)."""
import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from common import *
from scipy.stats import chi2, binomtest
for K in (10, 20):
    s = setting(K, 5.0, 1.0)
    for name, params, i in (("default", {}, 2), ("RRRR SRR", dict(OURS)["non_adaptive"], 3)):
        keep = tot = 0; off = np.zeros((K, K))
        for run in range(60):
            X, theta = simulate_users(s, run); x = X[:, 0].astype(np.int64); sd = seeds_of(s, run)
            est, _ = fit_ours(params, X, K, 5.0, np.random.default_rng(sd[i]))
            y, masks = est._chain.store.responses()
            if masks.shape[1] == K and masks.sum(axis=1).max() == 1 and name == "default":
                y = masks.argmax(axis=1)
            keep += int(np.sum(y == x)); tot += x.size
            np.add.at(off, (x[y != x], y[y != x]), 1)
        p = np.exp(5) / (np.exp(5) + K - 1)
        # off-diagonal: for each x, y uniform over the K - 1 others
        stat = 0.0; dof = 0
        for a in range(K):
            row = np.delete(off[a], a); e = row.sum() / (K - 1)
            stat += np.sum((row - e) ** 2 / e); dof += K - 2
        print(f"K={K} {name}: keep rate {keep / tot:.5f} (GRR {p:.5f}, binomial p-value {binomtest(keep, tot, p).pvalue:.3f}); "
              f"off-diagonal uniformity chi2 {stat:.1f} on {dof} dof, p-value {chi2.sf(stat, dof):.3f}")
