"""Edge and attack review of prior='spike-bulk' and of serving under the newest routes (issue 28, round 12).

Every decoder and mechanism under the spike/bulk prior, tiny and one-category samples, extreme budgets,
streams, rejected calls, copies, threads, reproducibility, interval levels; merge under different
decoders, priors and mechanisms.
"""

import copy
import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_bayes import AdaptiveLDPFrequencyEstimator
from tests._property_tools import _release_state, run_threads

K = 5
THETA = np.array([0.5, 0.3, 0.15, 0.049, 0.001])


def _users(n, seed=0, k=K):
    p = THETA if k == K else np.full(k, 1.0 / k)
    return np.random.default_rng(seed).choice(k, n, p=p).reshape(-1, 1)


def _est(seed=1, **params):
    params = dict(dict(n_categories=K, epsilon=1.0, prior="spike-bulk"), **params)
    return AdaptiveLDPFrequencyEstimator(random_state=np.random.default_rng(seed), **params)


def _quiet(f, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kwargs)


def _responses(mechanism, n, seed, k=K):
    """Released responses of ``n`` users (the client mechanism of ``mechanism`` at eps = 1)."""
    client = AdaptiveLDPFrequencyEstimator(n_categories=k, epsilon=1.0, mechanism=mechanism).client_mechanism()
    return client.privatize(_users(n, seed, k).ravel(), np.random.default_rng(seed + 100))


# ------------------------------------------------------------------ merge
def test_merge_of_stores_with_different_categories_names_the_categories_not_prior():
    """n_categories=None (simulation): two stores fitted on 3 and on 4 categories under the same prior.  The
    refusal used to say "fitted with prior='hierarchical' and this estimator with prior='hierarchical': the
    posteriors differ" (the prior vectors' shapes differ); it names the categories, and changes neither."""
    for prior in ("hierarchical", "spike-bulk", 1.0):
        a = _quiet(_est(n_categories=None, prior=prior).fit, np.repeat([[0], [1], [2]], 30, axis=0))
        b = _quiet(_est(2, n_categories=None, prior=prior).fit, np.repeat([[0], [1], [2], [3]], 30, axis=0))
        sa, sb = _release_state(a), _release_state(b)
        with pytest.raises(ValueError, match="other categories") as info:
            a.merge(b)
        assert "prior" not in str(info.value)
        assert _release_state(a) == sa and _release_state(b) == sb
