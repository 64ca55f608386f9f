"""Q4: RRRR with a fixed oracle subset (the K-1 / K-2 most probable categories of the true theta*, kappa = 0.9: the
information's best RRRR) against the default, 60 runs, paired; and the best RRRR(k) by the information at K = 20,
eps = 0.5, Dir(0.1)."""
import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from common import *
from collections import defaultdict
from sklearn_bayes.privacy import RRRRMechanism
args, cells = cells_from_args("10:5:1,20:5:1,20:5:0.1", 60)
for K, eps, rho, s in cells:
    tv = defaultdict(dict)
    for run in range(args.runs):
        X, theta = simulate_users(s, run); x = X[:, 0].astype(np.int64); sd = seeds_of(s, run)
        est, _ = fit_ours({}, X, K, eps, np.random.default_rng(sd[2])); tv["default"][run] = tv_distance(est.theta_, theta)
        order = np.argsort(-theta, kind="stable"); r = np.random.default_rng(sd[-1]).spawn(4)
        for j, k in enumerate((K - 1, K - 2)):
            S = np.sort(order[:k]); y = RRRRMechanism(K, eps, 0.9).privatize(x, subset=S, random_state=r[2 * j])
            e = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism="rrrr", random_state=r[2 * j + 1])
            e.partial_fit_responses(y, subsets=S, update="defer"); tv[f"RRRR({k})"][run] = tv_distance(e.theta_, theta)
    print(f"K={K} eps={eps} rho={rho} ({args.runs} runs): medians " + ", ".join(f"{k} {np.median(list(v.values())):.4g}" for k, v in tv.items()))
    for a in (f"RRRR({K - 1})", f"RRRR({K - 2})"):
        m, se = paired_ratio(tv[a], tv["default"]); print(f"   {a} / default {m:.3f} +- {se:.3f}")
