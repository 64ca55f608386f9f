"""Decoder headroom at eps = 5: on the GRR peer's very responses (benchmark seeds), the default posterior with
point_estimate 'tv' (shipped) / 'mean' / 'median' against IBU, and the non-private oracle (empirical frequencies of
the true categories: no LDP noise at all)."""
import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from common import *
from collections import defaultdict
args, cells = cells_from_args("10:5:1,20:5:1,10:5:0.1,20:5:0.1", 100)
for K, eps, rho, s in cells:
    tv = defaultdict(dict)
    for run in range(args.runs):
        X, theta = simulate_users(s, run); x = X[:, 0].astype(np.int64); n = x.size; sd = seeds_of(s, run)
        p, q, rep, counts = peer("GRR", x, K, eps, sd)
        tv["IBU"][run] = tv_distance(ibu(counts, p, q), theta)
        tv["oracle(no LDP)"][run] = tv_distance(np.bincount(x, minlength=K) / n, theta)
        M = support_matrix("GRR", rep, K, eps)
        for pe in ("tv", "mean", "median"):
            e = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism="grr", point_estimate=pe,
                                              random_state=np.random.default_rng(sd[2]))
            e.partial_fit_responses(M); tv[f"ours {pe}"][run] = tv_distance(e.theta_, theta)
    print(f"K={K} eps={eps} rho={rho} ({args.runs} runs, GRR peer's responses): medians " +
          ", ".join(f"{k} {np.median(list(v.values())):.4g}" for k, v in tv.items()))
    for a in ("ours tv", "ours mean", "ours median", "oracle(no LDP)"):
        m, se = paired_ratio(tv[a], tv["IBU"]); print(f"   {a:>15s} / IBU {m:.3f} +- {se:.3f}")
    m, se = paired_ratio(tv["ours mean"], tv["ours tv"]); print(f"   ours mean / ours tv {m:.3f} +- {se:.3f}")
