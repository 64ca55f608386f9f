"""The papers' experiments and the demo, as functions (used by the command line and benchmarks).

Registries
----------
``DEMOS`` maps a demo part's name to ``"module:function"``.  The function is
called as ``function(output_dir, progress)`` and returns a list of result rows
(dicts with the keys of :data:`sklearn_bayes.experiments._report.DEMO_COLUMNS`).

``REPRODUCTIONS`` maps an experiment's name to ``"module:function"``, called as
``function(output_dir, full=False, n_jobs=1, progress=None)``; it prints its
own tables and writes its figures and CSV files to ``output_dir``.
"""

DEMOS = {
    "adaptive_ldp": "sklearn_bayes.experiments.adaptive_ldp:demo",
    "mixture_m": "sklearn_bayes.experiments.robust:demo",
    "count_sketch": "sklearn_bayes.experiments.count_sketch:demo",
    "subsampled_prior": "sklearn_bayes.experiments.subsampled_prior:demo",
    # name: "module:function"
}

REPRODUCTIONS = {
    "ldp": "sklearn_bayes.experiments.adaptive_ldp:reproduce",
    "robust": "sklearn_bayes.experiments.robust:reproduce",
    "sketch": "sklearn_bayes.experiments.count_sketch:reproduce",
    "subsampled": "sklearn_bayes.experiments.subsampled_prior:reproduce",
    # name: "module:function"
}
