"""Q2/Q4: predicted TV (inverse Fisher information at the true theta*, expected_tv) of GRR, SS(k), OUE and RRRR(S = top-k
of theta*, kappa = 0.9; k = 0 is SRR = GRR) on the benchmark's users (runs 0..R-1), as ratios to GRR (geometric mean)."""
import sys, argparse; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from common import *
from sklearn_bayes.privacy._ldp._adaptive_rule import fisher_information, tangent_covariance, expected_tv, MAX_RELATIVE_CORRECTION
from sklearn_bayes.privacy._ldp._mechanisms import best_subset_size
from sklearn_bayes.privacy import RRRRMechanism

ap = argparse.ArgumentParser(); ap.add_argument("--runs", type=int, default=20)
ap.add_argument("--cells", default="10:5:1,10:5:0.1,20:5:1,20:5:0.1,20:0.5:0.1")
args = ap.parse_args()

def info_matrix(P, theta):
    h = theta @ P
    keep = h > 0
    return (P[:, keep] / h[keep]) @ P[:, keep].T

def ptv(theta, I, n):
    return expected_tv(theta, tangent_covariance(I), n)

for cell in args.cells.split(","):
    K, eps, rho = cell.split(":"); K, eps, rho = int(K), float(eps), float(rho)
    s = setting(K, eps, rho); n = s["T"]
    names, logs, grr_abs, untrusted = None, [], [], set()
    for run in range(args.runs):
        _, theta = simulate_users(s, run)
        th = np.maximum(theta, 1e-300); th = th / th.sum()
        vals = {}
        for k in range(1, K):
            I, r = fisher_information(th, eps, "subset_selection", k, return_error=True)
            if r > MAX_RELATIVE_CORRECTION and k > 1: untrusted.add(f"SS({k})")
            vals[f"SS({k})"] = ptv(th, I, n)
        I, r = fisher_information(th, eps, "oue", return_error=True)
        if r > MAX_RELATIVE_CORRECTION: untrusted.add("OUE")
        vals["OUE"] = ptv(th, I, n)
        mech = RRRRMechanism(K, eps, 0.9); order = np.argsort(-theta, kind="stable")
        for k in range(0, K):
            vals[f"RRRR({k})"] = ptv(th, info_matrix(mech.transition_matrix(order[:k]), th), n)
        names = list(vals)
        grr_abs.append(vals["SS(1)"])
        logs.append([np.log(vals[m] / vals["SS(1)"]) for m in names])
    L = np.array(logs); g = np.exp(L.mean(0)); se = g * L.std(0, ddof=1) / np.sqrt(len(L))
    order = np.argsort(g)
    print(f"\n== K={K} eps={eps} rho={rho}: predicted TV / GRR's (geo mean over runs 0..{args.runs-1} of theta*); "
          f"GRR's predicted TV median {np.median(grr_abs):.4g}; k* = {best_subset_size(K, eps)}; untrusted (delta method r > 0.1): {sorted(untrusted)} ==")
    print("  best 8: " + "; ".join(f"{names[i]} {g[i]:.3f}+-{se[i]:.3f}" for i in order[:8]))
    print("  OUE %.3f, SS(k*) %.3f, RRRR(0)=SRR %.3f, RRRR(1) %.3f, RRRR(2) %.3f" % (
        g[names.index('OUE')], g[names.index(f'SS({best_subset_size(K, eps)})')], g[names.index('RRRR(0)')], g[names.index('RRRR(1)')], g[names.index('RRRR(2)')]))
    rr = [i for i, nm in enumerate(names) if nm.startswith("RRRR") and nm != "RRRR(0)"]
    b = min(rr, key=lambda i: g[i]); print(f"  best RRRR with a non-empty subset: {names[b]} {g[b]:.3f}+-{se[b]:.3f}")
    # how often each candidate is the argmin per run
    wins = np.bincount(L.argmin(1), minlength=len(names))
    print("  argmin per run: " + ", ".join(f"{names[i]} {wins[i]}" for i in np.flatnonzero(wins)))
