"""Table A.1's synthetic designs are independent data sets (issue 18).

Until issue 18 every design was drawn with ``random_state=0``: designs of the same N and
design type shared ``X`` and the noise draw and differed only in ``beta``.
"""

import itertools

import numpy as np
import pytest

from sklearn_bayes.datasets import make_subsampled_prior_regression
from sklearn_bayes.experiments import subsampled_prior as E


def test_every_design_has_its_own_documented_seed():
    seeds = [E.a1_seed(*d) for d in E.A1_DESIGNS]
    assert len(set(seeds)) == len(E.A1_DESIGNS) == 24
    loaders = E.synthetic_a1()
    for n, design, noise, sparsity in E.A1_DESIGNS[:3]:  # the loader uses exactly that seed
        X, y = loaders[f"A1 {n}x100 {design} sd={noise} sp={sparsity}"]()
        X0, y0 = make_subsampled_prior_regression(n, 100, design=design, noise=noise, sparsity=sparsity,
                                                  random_state=E.a1_seed(n, design, noise, sparsity))
        np.testing.assert_array_equal(X, X0)
        np.testing.assert_array_equal(y, y0)


@pytest.mark.parametrize("n, design", [(1000, "normal"), (1000, "norm-IW")])
def test_designs_share_neither_X_nor_noise(n, design):
    """The six designs of one (N, design type): pairwise different X, and standardised noise draws
    whose sample correlation is within 4 standard errors (4 / sqrt(N)) of 0 (it was exactly 1)."""
    draws = {}
    for noise, sparsity in itertools.product((100, 10), (0.25, 0.5, 0.75)):
        X, y, beta = make_subsampled_prior_regression(n, 100, design=design, noise=noise, sparsity=sparsity,
                                                      coef=True, random_state=E.a1_seed(n, design, noise, sparsity))
        draws[noise, sparsity] = X, (y - X @ beta) / noise
    for (Xa, ea), (Xb, eb) in itertools.combinations(draws.values(), 2):
        assert not np.array_equal(Xa, Xb)
        assert abs(np.corrcoef(ea, eb)[0, 1]) < 4 / np.sqrt(n)
