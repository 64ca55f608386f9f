"""Issue 28 goal 4 study (round 12b; doc/development/adaptive_ldp_log.rst, "Round 12b"): shared helpers (benchmark seeds: compare_one_run / same_responses_run)."""
import argparse, time, warnings
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.experiments.adaptive_ldp import (OURS, PAPER_SETTINGS, _setting_seed, simulate_users, fit_ours,
                                                     tv_distance, paired_ratio)
from sklearn_bayes.experiments._ldp_peers import (PROTOCOLS, peer_responses, ibu, norm_sub, unbiased_estimate,
                                                  support_matrix, support_counts, support_probabilities)
warnings.simplefilter("ignore", SeededNoiseWarning)
warnings.simplefilter("ignore", ConvergenceWarning)

def setting(K, eps, rho):
    return next(s for s in PAPER_SETTINGS if s["K"] == K and s["epsilon"] == eps and s["theta"][1] == rho)

def cells_from_args(default_cells, default_runs):
    """``(args, [(K, eps, rho, setting), ...])`` from ``--cells K:eps:rho,...`` and ``--runs``."""
    ap = argparse.ArgumentParser(); ap.add_argument("--runs", type=int, default=default_runs)
    ap.add_argument("--cells", default=default_cells); args = ap.parse_args()
    out = []
    for cell in args.cells.split(","):
        K, eps, rho = cell.split(":"); K, eps, rho = int(K), float(eps), float(rho)
        out.append((K, eps, rho, setting(K, eps, rho)))
    return args, out


def seeds_of(s, run):
    all_seeds = _setting_seed(s, run).spawn(3 + len(OURS))
    return all_seeds  # [1] peers, [2] default, [3] non_adaptive, [4] honest (compare_one_run)

def peer(protocol, x, K, eps, all_seeds):
    children = dict(zip(PROTOCOLS, np.random.default_rng(all_seeds[1]).spawn(len(PROTOCOLS))))
    return peer_responses(protocol, x, K, eps, children[protocol])

def ibu_ns(counts, n, p, q):
    return ibu(counts, p, q), norm_sub(unbiased_estimate(counts, n, p, q))

def summarize(tv, pairs, runs_label=""):
    out = []
    for a, b in pairs:
        if a in tv and b in tv:
            m, se = paired_ratio(tv[a], tv[b])
            out.append((a, b, m, se))
    return out
