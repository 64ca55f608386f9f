"""Coverage of the nominal 95 % intervals of every family, through the public API only (issue 32).

Run ``python benchmarks/bench_uncertainty.py [--quick] [--reps-scale S] [--only FAMILY ...]``.

Each setting simulates data with a known truth, fits the estimator with its DEFAULT parameters
(only what the setting names is passed: bounds and ``epsilon`` for the private ones, a seed), asks
the public interval method for 95 % and records whether each interval holds the truth:

* ``ClosedFormRidge``, ``SubsampledPriorRidge`` / ``LogisticRegression`` / ``PoissonRegressor``,
  ``MixtureMEstimatorRegressor`` (Gaussian and t3 errors), ``AdaOPSRegressor`` (eps 0.1 .. 10,
  n 1e3 .. 1e5): ``conf_int(alpha=0.05)`` against the true coefficients (well-specified linear,
  logistic or Poisson models, intercept 0.5, ``p = 5`` standard normal features; AdaOPS: features
  uniform on ``[-1, 1]^p``, ``x_bound = sqrt(p)``, ``y_bound = 2``, errors sd 0.1, so that nothing
  is clipped);
* ``AdaptiveLDPFrequencyEstimator``: ``credible_interval(0.95)`` against ``theta*`` (K = 10,
  ``theta* ~ Dirichlet(1)``, T users);
* ``PrivateCountSketch``: ``lower_bound`` / ``upper_bound`` at 0.95 around the answers of one
  query set (the 2,000 most probable items) against the true counts of a Zipf stream of 2 10^5
  items on ``{1..10^6}``.

Columns: ``setting``; ``reps`` (independent data sets / sketches); ``R`` (intervals: reps x
coefficients, categories or items); ``coverage``; ``binom_se = sqrt(c (1 - c) / R)`` (the
binomial standard error if the R intervals were independent) and ``rep_se`` (the standard error of
the mean of the per-replication coverages: honest when the intervals of one fit are dependent,
as a sketch's items are); ``mean_width`` (upper - lower, in the units of the coefficient /
probability / count).  A 95 % interval is on target when ``coverage`` is within 0.93 .. 0.97
(issue 32); ``flag`` marks the rows outside that band by more than 2 ``rep_se``.

``--quick`` runs about a tenth of the replications (a smoke test, under a minute).  The full run
takes about 2 minutes of CPU (7 minutes of wall time on the shared two-core machine).
"""

import argparse
import math
import time
import warnings

import numpy as np

import sklearn_bayes as sb
from sklearn_bayes.datasets import make_zipf_stream
from sklearn_bayes.experiments._report import format_table

P = 5
BETA = np.array([0.8, -0.5, 0.3, 0.0, 0.2])
INTERCEPT = 0.5


def _linear_data(rng, n, errors="gaussian"):
    X = rng.standard_normal((n, P))
    eps = rng.standard_normal(n) if errors == "gaussian" else rng.standard_t(3, n)
    return X, X @ BETA + INTERCEPT + eps


def _logistic_data(rng, n):
    X = rng.standard_normal((n, P))
    prob = 1.0 / (1.0 + np.exp(-(X @ BETA + INTERCEPT)))
    return X, (rng.random(n) < prob).astype(int)


def _poisson_data(rng, n):
    X = rng.standard_normal((n, P)) * 0.5
    return X, rng.poisson(np.exp(X @ BETA + INTERCEPT))


def _adaops_data(rng, n):
    X = rng.uniform(-1, 1, (n, P))
    beta = BETA / 2  # |X beta + b| <= 1.4 + 0.25: with sd 0.1 errors nothing reaches y_bound = 2
    return X, X @ beta + 0.25 + 0.1 * rng.standard_normal(n), beta


def _coef_run(make_estimator, make_data, reps, seed):
    """(covered (reps, p), widths (reps, p)) of conf_int(0.05) against the true coefficients."""
    rng = np.random.default_rng(seed)
    covered, widths = [], []
    for r in range(reps):
        out = make_data(rng)
        X, y = out[:2]
        beta = out[2] if len(out) > 2 else BETA
        est = make_estimator(r).fit(X, y)
        ci = np.asarray(est.conf_int(alpha=0.05))
        covered.append((ci[:, 0] <= beta) & (beta <= ci[:, 1]))
        widths.append(ci[:, 1] - ci[:, 0])
    return np.array(covered), np.array(widths)


def _ldp_run(n_users, epsilon, reps, seed, K=10):
    rng = np.random.default_rng(seed)
    covered, widths = [], []
    for r in range(reps):
        theta = rng.dirichlet(np.ones(K))
        users = rng.choice(K, size=n_users, p=theta).reshape(-1, 1)
        est = sb.AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=epsilon, random_state=seed * 1000 + r)
        est.fit(users)
        ci = np.asarray(est.credible_interval(0.95, random_state=r))
        covered.append((ci[:, 0] <= theta) & (theta <= ci[:, 1]))
        widths.append(ci[:, 1] - ci[:, 0])
    return np.array(covered), np.array(widths)


_STREAMS = {}


def _sketch_run(alpha, depth, width, epsilon, reps, seed, kind="count", n_q=2000):
    if alpha not in _STREAMS:
        stream = make_zipf_stream(200_000, alpha=alpha, n_values=10**6, random_state=1)
        _STREAMS[alpha] = (stream, np.bincount(stream, minlength=n_q + 1))
    stream, f = _STREAMS[alpha]
    q = np.arange(1, n_q + 1)
    covered, widths = [], []
    rng = np.random.default_rng(seed)
    for r in range(reps):
        sk = sb.PrivateCountSketch(epsilon=epsilon, depth=depth, width=width, kind=kind, hash_seed=seed * 100 + r,
                                   random_state=rng).fit(stream)
        sk.query(q)
        lo, hi = sk.lower_bound(q, confidence=0.95), sk.upper_bound(q, confidence=0.95)
        covered.append((lo <= f[q]) & (f[q] <= hi))
        widths.append(hi - lo)
    return np.array(covered), np.array(widths)


def _row(setting, covered, widths, seconds):
    reps, per = covered.shape
    R = reps * per
    c = float(covered.mean())
    per_rep = covered.mean(axis=1)
    rep_se = float(per_rep.std(ddof=1) / math.sqrt(reps)) if reps > 1 else float("nan")
    flag = ""
    if c < 0.93 - 2 * rep_se:
        flag = "below"
    elif c > 0.97 + 2 * rep_se:
        flag = "above"
    return {
        "setting": setting, "reps": reps, "R": R, "coverage": round(c, 3),
        "binom_se": round(math.sqrt(max(c * (1 - c), 1e-12) / R), 4), "rep_se": round(rep_se, 4),
        "mean_width": float(f"{float(np.mean(widths)):.4g}"), "flag": flag, "sec": round(seconds, 1),
    }


def settings(scale):
    """(family, setting, thunk) for every row; ``scale`` multiplies the replications."""
    def n(k):
        return max(2, int(round(k * scale)))

    out = []
    for size in (50, 1000):
        out.append(("ClosedFormRidge", f"ClosedFormRidge n={size}", lambda size=size: _coef_run(
            lambda r: sb.ClosedFormRidge(), lambda g: _linear_data(g, size), n(400), 1)))
    for size in (200, 2000):
        out.append(("SubsampledPrior", f"SubsampledPriorRidge n={size}", lambda size=size: _coef_run(
            lambda r: sb.SubsampledPriorRidge(random_state=r), lambda g: _linear_data(g, size), n(150), 2)))
    for size in (500, 2000):
        out.append(("SubsampledPrior", f"SubsampledPriorLogisticRegression n={size}", lambda size=size: _coef_run(
            lambda r: sb.SubsampledPriorLogisticRegression(random_state=r), lambda g: _logistic_data(g, size),
            n(100), 3)))
        out.append(("SubsampledPrior", f"SubsampledPriorPoissonRegressor n={size}", lambda size=size: _coef_run(
            lambda r: sb.SubsampledPriorPoissonRegressor(random_state=r), lambda g: _poisson_data(g, size),
            n(100), 4)))
    for errors in ("gaussian", "t3"):
        for size in (200, 1000):
            out.append(("Mixture", f"MixtureMEstimatorRegressor {errors} n={size}",
                        lambda errors=errors, size=size: _coef_run(
                            lambda r: sb.MixtureMEstimatorRegressor(random_state=r),
                            lambda g: _linear_data(g, size, errors), n(100), 5)))
    for eps in (0.1, 1.0, 10.0):
        for size in (1000, 10_000, 100_000):
            out.append(("AdaOPS", f"AdaOPSRegressor eps={eps:g} n={size:.0e}", lambda eps=eps, size=size: _coef_run(
                lambda r: sb.AdaOPSRegressor(epsilon=eps, x_bound=math.sqrt(P), y_bound=2.0, random_state=r),
                lambda g: _adaops_data(g, size), n(200 if size < 100_000 else 60), 6)))
    for eps in (0.5, 2.0):
        for users in (2000, 20_000):
            out.append(("LDP", f"AdaptiveLDP K=10 eps={eps:g} T={users}", lambda eps=eps, users=users: _ldp_run(
                users, eps, n(40 if users < 20_000 else 12), 7)))
    for alpha in (1.1, 1.5):
        for depth, width in ((5, 32768), (5, 2048), (3, 256), (4, 512)):  # 5 x 32768: the default
            for eps in (0.1, 1.0, 10.0):
                out.append(("Sketch", f"PrivateCountSketch a={alpha} d={depth} w={width} eps={eps:g}",
                            lambda a=alpha, d=depth, w=width, e=eps: _sketch_run(a, d, w, e, n(10), 8)))
    for alpha in (1.1, 1.5):
        out.append(("Sketch", f"PrivateCountSketch count_min a={alpha} d=5 w=2048 eps=1",
                    lambda a=alpha: _sketch_run(a, 5, 2048, 1.0, n(5), 9, kind="count_min")))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="about a tenth of the replications")
    parser.add_argument("--reps-scale", type=float, default=None, help="multiply the replications")
    parser.add_argument("--only", nargs="*", default=None,
                        help="families: ClosedFormRidge SubsampledPrior Mixture AdaOPS LDP Sketch")
    args = parser.parse_args(argv)
    scale = args.reps_scale if args.reps_scale is not None else (0.1 if args.quick else 1.0)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise (reproducible benchmark), convergence chatter
        for family, setting, thunk in settings(scale):
            if args.only and family not in args.only:
                continue
            t = time.process_time()
            covered, widths = thunk()
            rows.append(_row(setting, covered, widths, time.process_time() - t))
            print(format_table(rows[-1:]).splitlines()[-1], flush=True)
    print()
    print(format_table(rows))
    return rows


if __name__ == "__main__":
    main()
