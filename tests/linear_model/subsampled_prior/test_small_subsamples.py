"""An explicit subsample_size <= p: refused only where the maths needs it (unregularised subsample fits).

With ``prior_scale='loo'`` (the default) every subsample is fitted under the unit prior, a
strictly convex problem with a unique solution for any number of rows, so ``n <= p`` is a valid
(if heavily shrunk) choice; it used to be refused with the 'paper' reason.  With
``prior_scale='paper'`` the fits are unregularised and ``n <= p`` rows cannot determine them:
still refused, and the message now says why and what to use.
"""

import warnings

import numpy as np
import pytest

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorRidge
from sklearn_bayes.linear_model._subsampled_prior._plan import _resolve_sizes

AUTO = dict(fraction=0.01, rows_per_param=2.0, min_subsamples=20)


def test_resolve_sizes_allows_a_small_size_for_penalised_fits_only():
    assert _resolve_sizes(1000, 5, 5, "auto", penalised=True, **AUTO) == (5, 200, False)
    assert _resolve_sizes(1000, 5, 2, 30, penalised=True, **AUTO) == (2, 30, False)
    with pytest.raises(ValueError, match=r"prior_scale='paper'.*Use a subsample_size above 5, or prior_scale='loo'"):
        _resolve_sizes(1000, 5, 5, "auto", penalised=False, **AUTO)


def _data(n=200, p=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ rng.normal(size=p) + rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("size", [2, 5, 9])
@pytest.mark.parametrize("Est, classify", [(SubsampledPriorRidge, False), (SubsampledPriorLogisticRegression, True)])
def test_loo_fits_subsamples_no_larger_than_p(Est, classify, size):
    X, y = _data()
    t = (y > 0).astype(int) if classify else y
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no rank-deficiency warning: the penalised fits exist
        est = Est(subsample_size=size, random_state=0).fit(X, t)
    assert est.subsample_size_ == size and est.n_separated_subsamples_ == 0
    assert est.subsample_coefs_.shape[0] == est.n_subsamples_
    assert np.all(np.isfinite(est.coef_)) and np.all(np.isfinite(est.subsample_coefs_))
    with pytest.raises(ValueError, match="must exceed the number of parameters"):
        Est(subsample_size=size, prior_scale="paper", random_state=0).fit(X, t)
