"""Smoke tests of the AdOBEst-LDP experiment code (tiny grid) and the categorical generator."""

import numpy as np
import pytest

from sklearn_bayes.datasets import make_dirichlet_categorical_stream
from sklearn_bayes.experiments.adaptive_ldp import METHODS, run_grid, summarise


def test_tiny_grid_runs_every_method():
    grid = dict(K=(4,), epsilon=(1.0,), kappa=(0.9,), rho=(0.1,), runs=2)
    rows = run_grid(grid, users_per_category=15)
    assert len(rows) == 2 * len(METHODS)
    assert {r["method"] for r in rows} == {m for m, _ in METHODS}
    assert all(0.0 <= r["tv"] <= 1.0 for r in rows)
    assert all(r["mean_subset_size"] == 0 for r in rows if r["method"] == "non-adaptive")
    summary = summarise(rows)
    assert len(summary) == len(METHODS) and all(s["runs"] == 2 for s in summary)
    # same seeds, same results (runs are reproducible and independent of scheduling)
    again = run_grid(grid, users_per_category=15)
    assert [r["tv"] for r in again] == [r["tv"] for r in rows]


def test_dirichlet_stream():
    X, theta = make_dirichlet_categorical_stream(20_000, 6, 1.0, random_state=0)
    assert X.shape == (20_000, 1) and theta.shape == (6,)
    assert theta.sum() == pytest.approx(1.0) and np.all(theta >= 0)
    counts = np.bincount(X[:, 0], minlength=6)
    # multinomial: every count within 5 standard deviations of its mean
    sd = np.sqrt(20_000 * theta * (1 - theta))
    assert np.all(np.abs(counts - 20_000 * theta) <= 5 * sd + 1)
    _, sparse = make_dirichlet_categorical_stream(10, 50, 0.01, random_state=1)
    assert np.isfinite(sparse).all() and sparse.max() > 0.5  # small rho: very uneven, no underflow NaN
    with pytest.raises(ValueError, match="concentration"):
        make_dirichlet_categorical_stream(10, 3, 0.0)


def test_zipf_stream():
    from sklearn_bayes.datasets import make_zipf_categorical_stream

    X, theta = make_zipf_categorical_stream(20_000, 6, 1.1, shuffle=False, random_state=0)
    ranks = np.arange(1, 7) ** -1.1
    np.testing.assert_allclose(theta, ranks / ranks.sum())
    counts = np.bincount(X[:, 0], minlength=6)
    sd = np.sqrt(20_000 * theta * (1 - theta))
    assert np.all(np.abs(counts - 20_000 * theta) <= 5 * sd)
    # shuffled: the same probabilities in a random order, reproducible from the seed
    _, shuffled = make_zipf_categorical_stream(10, 50, 1.1, random_state=1)
    _, again = make_zipf_categorical_stream(10, 50, 1.1, random_state=1)
    assert np.array_equal(shuffled, again)
    np.testing.assert_allclose(np.sort(shuffled), np.sort(make_zipf_categorical_stream(1, 50, 1.1, shuffle=False)[1]))
    assert not np.array_equal(shuffled, np.sort(shuffled)[::-1])
    with pytest.raises(ValueError, match="exponent"):
        make_zipf_categorical_stream(10, 3, 0.0)


@pytest.mark.slow
def test_compare_grid_runs_ours_and_every_peer_on_the_same_users(tmp_path):
    from sklearn_bayes.experiments._ldp_peers import PEERS
    from sklearn_bayes.experiments.adaptive_ldp import (
        OURS,
        _compare_figure,
        compare_columns,
        compare_grid,
        compare_summary,
        compare_table,
        simulate_users,
    )

    settings = [dict(K=4, epsilon=1.0, theta=("Dir", 0.1), T=80), dict(K=5, epsilon=2.0, theta=("Zipf", 1.1), T=60)]
    rows = compare_grid(settings, 2)
    names = {n for n, _ in OURS} | set(PEERS)
    assert len(rows) == 2 * 2 * len(names) and {r["method"] for r in rows} == names
    assert all(0.0 <= r["tv"] <= 1.0 for r in rows)
    ours = [r for r in rows if r["method"] in {n for n, _ in OURS}]
    assert all(0 <= r["covered"] <= r["K"] for r in ours)
    assert all(np.isnan(r["covered"]) for r in rows if r["method"] in PEERS)
    # common random numbers: the users of a (setting, run) do not depend on the methods
    X1, t1 = simulate_users(settings[1], 1)
    X2, t2 = simulate_users(settings[1], 1)
    assert np.array_equal(X1, X2) and np.array_equal(t1, t2) and X1.shape == (60, 1)
    assert not np.array_equal(simulate_users(settings[1], 0)[1], t1)
    # reproducible, whatever the scheduling
    again = compare_grid(settings, 2, n_jobs=2)
    assert [r["tv"] for r in again] == [r["tv"] for r in rows]
    table, stats = compare_table(rows)
    assert len(table) == 2 and stats["n_settings"] == 2
    for row in table:
        peers = {p: row[p] for p in PEERS}
        assert row["best_peer"] == min(peers, key=peers.get)
        assert row["ratio"] == pytest.approx(row["default"] / peers[row["best_peer"]])
        assert 0 <= row["coverage"] <= 1
    assert set(compare_columns()) >= set(table[0])
    assert "settings" in compare_summary(stats)
    assert _compare_figure(rows, tmp_path / "f.png").stat().st_size > 0


@pytest.mark.slow
def test_the_adaptive_rule_column_leaves_the_other_methods_unchanged():
    from sklearn_bayes.experiments.adaptive_ldp import RULE, compare_columns, compare_one_run, compare_table

    setting = dict(K=5, epsilon=1.0, theta=("Dir", 0.1), T=300)
    plain = compare_one_run(setting, 0, coverage=False)
    with_rule = compare_one_run(setting, 0, coverage=False, rule=True)
    # the rule's generator is a new child of the run's seed: every other method sees the same noise
    assert [(r["method"], r["tv"]) for r in with_rule if r["method"] != RULE] == [(r["method"], r["tv"]) for r in plain]
    rule = [r for r in with_rule if r["method"] == RULE]
    assert len(rule) == 1 and 0 <= rule[0]["tv"] <= 1 and len(rule[0]["choices"]) == 10
    rows = with_rule + compare_one_run(setting, 1, coverage=False, rule=True)
    table, stats = compare_table(rows)
    assert table[0][RULE] == np.median([r["tv"] for r in rows if r["method"] == RULE])
    assert stats["rule_n"] == 1 and stats["rule_sparse_n"] == 1
    assert {RULE, "rule/default", "rule_picks"} <= set(compare_columns(rule=True))


@pytest.mark.slow
def test_same_responses_decodes_exactly_the_peers_responses():
    from sklearn_bayes.experiments.adaptive_ldp import (
        DECODABLE,
        compare_one_run,
        same_responses_run,
        same_responses_table,
    )

    setting = dict(K=6, epsilon=1.0, theta=("Dir", 0.5), T=400)
    rows = [r for run in (0, 1, 2) for r in same_responses_run(setting, run)]
    assert {r["method"] for r in rows} == {f"{p}+{e}" for p in DECODABLE for e in ("ours", "IBU", "NS")}
    # the peers' rows are those of the main comparison: the same users and the same responses
    for run in (0, 1, 2):
        main = {r["method"]: r["tv"] for r in compare_one_run(setting, run, coverage=False)}
        mine = {r["method"]: r["tv"] for r in rows if r["run"] == run}
        for p in DECODABLE:
            for e in ("IBU", "NS"):
                assert mine[f"{p}+{e}"] == main[f"{p}+{e}"]
    assert all(0.0 <= r["tv"] <= 1.0 for r in rows)
    table, stats = same_responses_table(rows)
    assert len(table) == 1 and stats["pairs"] == len(DECODABLE) and table[0]["runs"] == 3
    wins = 0
    for p in DECODABLE:
        tv = {e: {r["run"]: r["tv"] for r in rows if r["method"] == f"{p}+{e}"} for e in ("ours", "IBU", "NS")}
        med = {e: np.median(list(v.values())) for e, v in tv.items()}
        best = min(("IBU", "NS"), key=med.get)
        assert table[0][f"{p} ours"] == med["ours"]
        assert table[0][f"{p} best"].startswith(best)
        gm = np.exp(np.mean([np.log(tv["ours"][r] / tv[best][r]) for r in (0, 1, 2)]))
        assert table[0][f"{p} ours/best"].startswith(f"{gm:.3f}+-")
        wins += med["ours"] < med[best]
    assert stats["wins"] == wins
    assert stats["columns"][:4] == ["K", "eps", "theta", "runs"]


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [1.0, 5.0])
def test_shared_responses_feed_the_default_exactly_the_ss_peers_reports(monkeypatch, epsilon):
    from sklearn_bayes import AdaptiveLDPFrequencyEstimator
    from sklearn_bayes.experiments._ldp_peers import peer_estimates, ss_subset_size, support_matrix
    from sklearn_bayes.experiments.adaptive_ldp import (
        OURS,
        _setting_seed,
        compare_columns,
        compare_one_run,
        compare_table,
        paired_ratio,
        simulate_users,
    )

    seen = []
    record = AdaptiveLDPFrequencyEstimator.partial_fit_responses

    def spy(self, y, *args, **kwargs):
        seen.append(np.array(y, copy=True))
        return record(self, y, *args, **kwargs)

    monkeypatch.setattr(AdaptiveLDPFrequencyEstimator, "partial_fit_responses", spy)
    setting = dict(K=6, epsilon=epsilon, theta=("Dir", 0.5), T=400)
    K = setting["K"]
    rows = {run: compare_one_run(setting, run, ours=OURS[:1], coverage=False, shared=True) for run in (0, 1, 2)}
    plain = {run: compare_one_run(setting, run, ours=OURS[:1], coverage=False) for run in (0, 1, 2)}
    assert len(seen) == 3  # one recording per run, none without the option
    for run in (0, 1, 2):
        X, _ = simulate_users(setting, run)
        _, _, reports = peer_estimates(X[:, 0], K, epsilon, np.random.default_rng(_setting_seed(setting, run).spawn(
            3 + len(OURS))[1]), share=True, return_reports=True)
        # the estimator's input is the SS peer's reports, which at k = 1 are GRR's
        assert np.array_equal(seen[run], support_matrix("SS", reports["SS"], K, epsilon))
        if ss_subset_size(K, epsilon) == 1:
            assert np.array_equal(reports["SS"][:, 0], reports["GRR"])
        shared = {r["method"]: r["tv"] for r in rows[run]}
        alone = {r["method"]: r["tv"] for r in plain[run]}
        assert all(shared[m] == alone[m] for m in alone if m[:3] in ("GRR", "OUE", "OLH"))
        assert shared["default"] != alone["default"]
    # the paired columns: geometric mean over runs of TV(default) / TV(SS+X) on the same run
    all_rows = [r for rs in rows.values() for r in rs]
    table, stats = compare_table(all_rows, ours=OURS[:1], paired=("SS+IBU", "SS+MI"))
    for P in ("SS+IBU", "SS+MI"):
        gm, se = paired_ratio({run: next(r["tv"] for r in rs if r["method"] == "default") for run, rs in rows.items()},
                              {run: next(r["tv"] for r in rs if r["method"] == P) for run, rs in rows.items()})
        assert table[0][f"default/{P}"] == f"{gm:.3f}+-{se:.3f}" and stats["paired"][P][0][1:] == (gm, se)
    assert set(table[0]) <= set(compare_columns(ours=OURS[:1], paired=("SS+IBU", "SS+MI")))
