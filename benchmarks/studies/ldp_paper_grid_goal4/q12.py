"""Q1/Q2: eps = 5 dense cells: default vs RRRR SRR / U6 vs GRR+IBU/NS, paired on the benchmark's users and seeds,
plus cross-decoding (the default's decoder on RRRR SRR's responses; RRRR's decoder on GRR's responses)."""
import sys, time, argparse; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from common import *
from collections import defaultdict

ap = argparse.ArgumentParser(); ap.add_argument("--runs", type=int, default=60); ap.add_argument("--start", type=int, default=0)
ap.add_argument("--cells", default="10:5:1,10:5:0.1,20:5:1,20:5:0.1")
args = ap.parse_args()

def one(s, run):
    K, eps = s["K"], s["epsilon"]
    X, theta = simulate_users(s, run); x = X[:, 0].astype(np.int64); n = x.size
    sd = seeds_of(s, run)
    tv, info = {}, {}
    ests = {}
    for i, (name, params) in enumerate(OURS):
        est, _ = fit_ours(params, X, K, eps, np.random.default_rng(sd[2 + i]))
        ests[name] = est
        tv[name] = tv_distance(est.theta_, theta)
    info["sizes_na"] = np.bincount(ests["non_adaptive"].subset_sizes_, minlength=K)
    info["sizes_u6"] = np.bincount(ests["honest"].subset_sizes_, minlength=K)
    # GRR peer responses (the main table's GRR peer)
    p, q, rep, counts = peer("GRR", x, K, eps, sd)
    a, b = ibu_ns(counts, n, p, q); tv["GRR+IBU"], tv["GRR+NS"] = tv_distance(a, theta), tv_distance(b, theta)
    e = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism="grr", random_state=np.random.default_rng(sd[2]))
    e.partial_fit_responses(support_matrix("GRR", rep, K, eps)); tv["GRR+ours"] = tv_distance(e.theta_, theta)
    ysG = np.flatnonzero(support_matrix("GRR", rep, K, eps))  # not used
    Mg = support_matrix("GRR", rep, K, eps); yg = Mg.argmax(axis=1)
    e = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism="rrrr", utility="non_adaptive",
                                      random_state=np.random.default_rng(sd[3]))
    e.partial_fit_responses(yg, subsets=[], update="defer"); tv["GRR+rrrrdec"] = tv_distance(e.theta_, theta)
    # RRRR SRR's own responses
    y, masks = ests["non_adaptive"]._chain.store.responses()
    assert not masks.any()
    cnt = np.bincount(y, minlength=K)
    a, b = ibu_ns(cnt, n, p, q); tv["SRR+IBU"], tv["SRR+NS"] = tv_distance(a, theta), tv_distance(b, theta)
    M = np.zeros((n, K), bool); M[np.arange(n), y] = True
    e = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism="grr", random_state=np.random.default_rng(sd[2]))
    e.partial_fit_responses(M); tv["SRR+ours"] = tv_distance(e.theta_, theta)
    # the default's own responses, IBU/NS on them
    est = ests["default"]; yd, md = est._chain.store.responses()
    if md.shape[1] == K and md.any():
        cd = md.sum(axis=0)
    else:
        cd = np.bincount(yd, minlength=K)
    a, b = ibu_ns(cd, n, p, q); tv["OWN+IBU"], tv["OWN+NS"] = tv_distance(a, theta), tv_distance(b, theta)
    return tv, info

PAIRS = [("non_adaptive", "default"), ("honest", "default"), ("non_adaptive", "GRR+IBU"), ("non_adaptive", "GRR+NS"),
         ("default", "GRR+IBU"), ("default", "GRR+NS"), ("honest", "GRR+NS"),
         ("GRR+rrrrdec", "GRR+ours"), ("GRR+ours", "GRR+IBU"), ("GRR+ours", "GRR+NS"),
         ("SRR+ours", "non_adaptive"), ("non_adaptive", "SRR+IBU"), ("non_adaptive", "SRR+NS"),
         ("default", "OWN+IBU"), ("default", "OWN+NS")]
t0 = time.perf_counter()
for cell in args.cells.split(","):
    K, eps, rho = cell.split(":"); s = setting(int(K), float(eps), float(rho))
    tv = defaultdict(dict); sz_na = 0; sz_u6 = 0
    for run in range(args.start, args.start + args.runs):
        t, inf = one(s, run)
        for k, v in t.items(): tv[k][run] = v
        sz_na = sz_na + inf["sizes_na"]; sz_u6 = sz_u6 + inf["sizes_u6"]
    print(f"\n== K={K} eps={eps} rho={rho} runs {args.start}..{args.start+args.runs-1} ({time.perf_counter()-t0:.0f} s) ==")
    print("medians: " + ", ".join(f"{k} {np.median(list(v.values())):.4g}" for k, v in tv.items()))
    print("RRRR SRR subset sizes (share): " + str(np.round(sz_na / sz_na.sum(), 4)[:4]) + "; U6: " + str(np.round(sz_u6 / sz_u6.sum(), 4)[:6]))
    for a, b in PAIRS:
        m, se = paired_ratio(tv[a], tv[b]); print(f"  {a:>14s} / {b:<12s} {m:.3f} +- {se:.3f}")
    np.save(f"q12_{K}_{eps}_{rho}_{args.start}_{args.runs}.npy", dict(tv), allow_pickle=True)
