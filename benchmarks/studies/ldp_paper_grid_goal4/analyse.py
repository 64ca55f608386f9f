"""Per cell: medians over runs 0..49 (the guide's 50-run table) and over all runs, the paired ratio of the default to
the best peers, and P(default's 50-run median < best of the 12 peers' medians) by bootstrap (50 runs resampled
jointly from all runs; B = 4000); expected number of won cells = sum of P, SE = sqrt(sum P (1 - P))."""
import glob, sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
import numpy as np
from sklearn_bayes.experiments.adaptive_ldp import paired_ratio
from sklearn_bayes.experiments._ldp_peers import PEERS
rng = np.random.default_rng(28)
rows = []
for f in sorted(glob.glob("grid_*.npy")):
    _, K, eps, rho, start, runs = f[:-4].split("_")
    tv = np.load(f, allow_pickle=True).item()
    runs_ = sorted(tv["default"]); R = len(runs_)
    A = {m: np.array([tv[m][r] for r in runs_]) for m in tv}
    peers = [m for m in PEERS if m in A]
    med50 = {m: np.median(A[m][:50]) for m in A}; best50 = min(peers, key=med50.get)
    med = {m: np.median(A[m]) for m in A}; best = min(peers, key=med.get)
    idx = rng.integers(0, R, size=(4000, 50))
    d = np.median(A["default"][idx], axis=1)
    pm = np.min(np.stack([np.median(A[m][idx], axis=1) for m in peers]), axis=0)
    P = float(np.mean(d < pm))
    # eps = 5 (k* = 1): the SS peer is GRR again with its own noise; drop it (as --shared-responses makes it GRR's own)
    P1 = P2 = float("nan")
    if float(eps) == 5.0:
        pg = np.min(np.stack([np.median(A[m][idx], axis=1) for m in peers if not m.startswith("SS")]), axis=0)
        P1 = float(np.mean(d < pg))
        if "GRR+ours" in A:  # and the default decoding the GRR peer's very responses
            P2 = float(np.mean(np.median(A["GRR+ours"][idx], axis=1) < pg))
    top = sorted(peers, key=med.get)[:3]
    pr = "; ".join("default/%s %.3f+-%.3f" % ((m,) + paired_ratio(dict(enumerate(A["default"])), dict(enumerate(A[m])))) for m in top)
    extra = "; ".join("%s/%s %.3f+-%.3f" % ((a, b) + paired_ratio(dict(enumerate(A[a])), dict(enumerate(A[b]))))
                      for a, b in (("SS+ours", "SS+NS"), ("SS+ours", "SS+IBU"), ("GRR+ours", "GRR+NS"), ("GRR+ours", "GRR+IBU"), ("ours(oue)", "default"), ("OUE+ours", "OUE+NS"))
                      if a in A and b in A)
    rows.append((int(K), float(eps), float(rho), R, med50["default"], best50, med50[best50], med["default"], best, med[best], P, pr, extra, P1, P2))
rows.sort()
print("K   eps  rho   runs | 0-49: ours   best peer          ratio | all runs: ours  best peer         ratio | P(win at 50 runs)")
for K, eps, rho, R, m50, b50, v50, m, b, v, P, pr, extra, P1, P2 in rows:
    print(f"{K:<3d} {eps:<4g} {rho:<5g} {R:<4d} | {m50:.4g}  {b50:8s} {v50:.4g}  {m50 / v50:.3f} | {m:.4g}  {b:8s} {v:.4g}  {m / v:.3f} | {P:.2f}" + (f"  (SS peer dropped: {P1:.2f}; same GRR responses: {P2:.2f})" if P1 == P1 else ""))
    print(f"      paired over {R} runs: {pr}")
    if extra: print(f"      same responses: {extra}")
Ps = np.array([r[10] for r in rows])
print(f"cells measured: {len(rows)}; expected wins among them {Ps.sum():.2f} +- {np.sqrt(np.sum(Ps * (1 - Ps))):.2f}")
# distribution of the number of won cells among those measured (independent cells, Poisson-binomial)
dist = np.array([1.0])
for p in Ps:
    dist = np.convolve(dist, [1 - p, p])
print("P(won cells among measured >= m): " + ", ".join(f"{m}: {dist[m:].sum():.3f}" for m in range(max(0, len(Ps) - 10), len(Ps) + 1)))
won50 = sum(r[4] < r[6] for r in rows)
print(f"won on runs 0..49 (the benchmark's runs, current code): {won50} of {len(rows)}")
