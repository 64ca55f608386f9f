"""Default vs the 12 static peers (GRR/OUE/OLH/SS x IBU/NS/MI) on the benchmark's users and seeds (compare_one_run:
peers from child [1], the default from child [2]); optional extras for Q3 (--extra): mechanism='oue' with its own
noise (child [2]), and the default's posterior decoding the OUE and SS peers' very responses (same_responses_run).
Saves {method: {run: tv}} to grid_K_eps_rho_start_runs.npy."""
import sys, time, argparse; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from common import *
from collections import defaultdict
from sklearn_bayes.experiments._ldp_peers import peer_estimates
from sklearn_bayes.experiments.adaptive_ldp import DECODABLE

ap = argparse.ArgumentParser(); ap.add_argument("--runs", type=int, default=150); ap.add_argument("--start", type=int, default=0)
ap.add_argument("--cell", required=True); ap.add_argument("--extra", action="store_true"); ap.add_argument("--oue", action="store_true")
args = ap.parse_args()
K, eps, rho = args.cell.split(":"); K, eps, rho = int(K), float(eps), float(rho)
s = setting(K, eps, rho)
tv = defaultdict(dict); t0 = time.perf_counter()
for run in range(args.start, args.start + args.runs):
    X, theta = simulate_users(s, run); x = X[:, 0].astype(np.int64); sd = seeds_of(s, run)
    est, _ = fit_ours({}, X, K, eps, np.random.default_rng(sd[2])); tv["default"][run] = tv_distance(est.theta_, theta)
    out, _, reports = peer_estimates(x, K, eps, np.random.default_rng(sd[1]), estimators=("IBU", "NS", "MI"), return_reports=True)
    for k, v in out.items(): tv[k][run] = tv_distance(v, theta)
    if args.extra:
        if args.oue:  # 20-25 s per fit at K = 20, eps = 0.5 (exact chain on n distinct OUE sets)
            e, _ = fit_ours({"mechanism": "oue"}, X, K, eps, np.random.default_rng(sd[2])); tv["ours(oue)"][run] = tv_distance(e.theta_, theta)
        for P in (("OUE", "SS", "GRR") if args.oue else ("SS", "GRR")):
            e = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism=DECODABLE[P], random_state=np.random.default_rng(sd[2]))
            e.partial_fit_responses(support_matrix(P, reports[P], K, eps)); tv[f"{P}+ours"][run] = tv_distance(e.theta_, theta)
np.save(f"grid_{K}_{eps}_{rho}_{args.start}_{args.runs}.npy", dict(tv), allow_pickle=True)
print(f"K={K} eps={eps} rho={rho} runs {args.start}..{args.start + args.runs - 1}: {time.perf_counter() - t0:.0f} s; medians "
      + ", ".join(f"{k} {np.median(list(v.values())):.4g}" for k, v in tv.items()))
