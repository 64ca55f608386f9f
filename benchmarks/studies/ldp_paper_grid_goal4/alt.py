"""Q4: what a different static mechanism costs at eps = 5 (paired with the default on the benchmark's users): SS(2)
and SS(3) (recorded through mechanism='oue', which accepts any response set, decoder='posterior': the same two-level
likelihood as fit_adaptive_rule), OUE (mechanism='oue', its own noise), against the default (GRR there)."""
import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from common import *
from collections import defaultdict
from sklearn_bayes.privacy._ldp import ss_privatize
args, cells = cells_from_args("10:5:1,20:5:1,20:5:0.1", 60)
for K, eps, rho, s in cells:
    tv = defaultdict(dict)
    for run in range(args.runs):
        X, theta = simulate_users(s, run); x = X[:, 0].astype(np.int64); sd = seeds_of(s, run)
        est, _ = fit_ours({}, X, K, eps, np.random.default_rng(sd[2])); tv["default (GRR)"][run] = tv_distance(est.theta_, theta)
        est_rng, dev_rng = np.random.default_rng(sd[-1]).spawn(2)
        for k in (2, 3):
            e = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism="oue", decoder="posterior",
                                              random_state=np.random.default_rng(est_rng.spawn(1)[0]))
            e.partial_fit_responses(ss_privatize(x, K, eps, k, np.random.default_rng(dev_rng.spawn(1)[0])))
            tv[f"SS({k})"][run] = tv_distance(e.theta_, theta)
        e, _ = fit_ours({"mechanism": "oue"}, X, K, eps, np.random.default_rng(sd[-1])); tv["OUE"][run] = tv_distance(e.theta_, theta)
    print(f"K={K} eps={eps} rho={rho} ({args.runs} runs): medians " + ", ".join(f"{k} {np.median(list(v.values())):.4g}" for k, v in tv.items()))
    for a in ("SS(2)", "SS(3)", "OUE"):
        m, se = paired_ratio(tv[a], tv["default (GRR)"]); print(f"   {a} / default {m:.3f} +- {se:.3f}")
