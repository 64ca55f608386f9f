"""Central-DP primitives: noise samplers, accounting and the ledger, privacy-loss distributions, clipping.

The façade of the sub-package (see the layout in doc/user_guide/conventions.rst); the other
privacy families import these names from here:

* ``_noise``: (discrete) Laplace and discrete Gaussian samplers, their laws and the check of a noise scale;
* ``_accounting``: :class:`PrivacyLedger` and amplification by subsampling;
* ``_pld``: exact privacy-loss distributions (analytic Gaussian mechanism, ridge posterior);
* ``_clipping``: per-record clipping to a public bound and :class:`RowNormClipper`.
"""

from sklearn_bayes.privacy._core._accounting import (
    PrivacyLedger,
    amplify_by_subsampling,
    log1p_exp,
    subsampled_base_epsilon,
)
from sklearn_bayes.privacy._core._clipping import RowNormClipper, clip_rows, clip_values
from sklearn_bayes.privacy._core._noise import (
    MIN_NOISE_SCALE,
    check_noise_scale,
    discrete_gaussian_pmf,
    noise_variance,
    sample_discrete_gaussian,
    sample_noise,
)
from sklearn_bayes.privacy._core._pld import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    ops_ridge_composed_delta,
    ops_ridge_composed_max_c,
    ops_ridge_delta,
    ops_ridge_epsilon,
    ops_ridge_max_c,
)

__all__ = [
    "MIN_NOISE_SCALE",
    "PrivacyLedger",
    "RowNormClipper",
    "amplify_by_subsampling",
    "analytic_gaussian_delta",
    "analytic_gaussian_sigma",
    "check_noise_scale",
    "clip_rows",
    "clip_values",
    "discrete_gaussian_pmf",
    "log1p_exp",
    "noise_variance",
    "ops_ridge_composed_delta",
    "ops_ridge_composed_max_c",
    "ops_ridge_delta",
    "ops_ridge_epsilon",
    "ops_ridge_max_c",
    "sample_discrete_gaussian",
    "sample_noise",
    "subsampled_base_epsilon",
]
