"""Round HSP (review HQZ F1): the binary logistic scale where the classes nearly separate.

The branch (``_separation.near_separated_scale``) fires where the chosen candidate's fit at ``tau = 10^3``
misclassifies a share of the training weight in (0, 2 %] and at least 10 rows; there the scale minimises the
approximate leave-one-out Brier score.  ``prior_scale='loo-log-loss'`` (and ``_separation.RULE = None``) is the
computation before round HSP.  ``test_nearly_separated_sample_takes_the_branch`` fails before the change (no
``'near-separated'`` rule, and ``'loo-log-loss'`` was refused).
"""

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import special

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor
from sklearn_bayes.linear_model._subsampled_prior import _separation


def _nearly_separated(n=1000, beta=20.0, seed=0):
    """y ~ Bernoulli(expit(beta x_1)), four noise columns: about 1.6 % of the rows on the wrong side."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    y = (rng.random(n) < special.expit(beta * X[:, 0])).astype(int)
    return X, y


def _fitted_equal(a, b):
    return (np.array_equal(a.coef_, b.coef_) and np.array_equal(a.intercept_, b.intercept_)
            and a.prior_choice_ == b.prior_choice_)


@pytest.fixture(scope="module")
def nearly_separated():
    return _nearly_separated()


def test_nearly_separated_sample_takes_the_branch(nearly_separated):
    X, y = nearly_separated
    new = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    old = SubsampledPriorLogisticRegression(random_state=0, prior_scale="loo-log-loss").fit(X, y)
    assert new.prior_choice_["scale_rule"] == "near-separated"
    assert old.prior_choice_["scale_rule"] == "loo"
    # measured: the Brier score's scale 96, the half-SE rule's 32 (a weaker prior here, as on Aids2)
    assert new.prior_choice_["scale"] > 2.0 * old.prior_choice_["scale"]
    assert np.linalg.norm(new.coef_) > np.linalg.norm(old.coef_)


def test_switch_restores_the_previous_computation_bit_for_bit(nearly_separated, monkeypatch):
    X, y = nearly_separated
    option = SubsampledPriorLogisticRegression(random_state=0, prior_scale="loo-log-loss").fit(X, y)
    monkeypatch.setattr(_separation, "RULE", None)
    switched = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    assert _fitted_equal(option, switched)
    assert np.array_equal(option.predict_proba(X), switched.predict_proba(X))


@pytest.mark.parametrize("case", ["overlapping", "separated", "few rows"])
def test_branch_stays_off_elsewhere_and_changes_nothing(case):
    # overlapping classes: 22 % misclassified; separated: 150 rows at beta = 40 (none misclassified);
    # few rows: 300 rows, 0.7 % misclassified but 2 rows (gate values measured)
    X, y = {"overlapping": lambda: _nearly_separated(600, 2.0, 1),
            "separated": lambda: _nearly_separated(150, 40.0, 0),
            "few rows": lambda: _nearly_separated(300, 20.0, 0)}[case]()
    new = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    old = SubsampledPriorLogisticRegression(random_state=0, prior_scale="loo-log-loss").fit(X, y)
    assert new.prior_choice_["scale_rule"] == "loo"
    assert _fitted_equal(new, old)


def test_multiclass_is_unchanged():
    # three classes separated along x_1 with a little overlap: the branch is for the binary loss only
    rng = np.random.default_rng(3)
    X = rng.standard_normal((900, 4))
    y = np.digitize(X[:, 0] + 0.03 * rng.standard_normal(900), [-0.5, 0.5])
    new = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    old = SubsampledPriorLogisticRegression(random_state=0, prior_scale="loo-log-loss").fit(X, y)
    assert _fitted_equal(new, old)


def test_weights_scale_free_in_the_branch(nearly_separated):
    X, y = nearly_separated
    w = np.random.default_rng(5).uniform(0.5, 1.5, y.size)
    a = SubsampledPriorLogisticRegression(random_state=0).fit(X, y, sample_weight=w)
    b = SubsampledPriorLogisticRegression(random_state=0).fit(X, y, sample_weight=1000.0 * w)
    assert a.prior_choice_["scale_rule"] == b.prior_choice_["scale_rule"] == "near-separated"
    # the same objective up to a constant factor: the same choice and fit, to the solver's tolerance (the
    # scale is in the weights' own units, frequencies: review HSR, F1)
    assert a.prior_choice_["scale"] == pytest.approx(1000.0 * b.prior_choice_["scale"], rel=1e-6)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-6, atol=1e-8)


def test_near_separation_counts_the_misclassified_weight():
    # the weakest fit's linear predictor eta = x: rows 0 and 1 on the wrong side, row 2 on the boundary (counted)
    X = np.array([[-1.0], [2.0], [0.0], [3.0], [-4.0]])
    y = np.array([1.0, 0.0, 1.0, 1.0, 0.0])
    res = SimpleNamespace(coef=np.array([1.0]), intercept=np.array([0.0]))
    w = np.array([1.0, 2.0, 1.0, 1.0, 5.0])
    share, rows = _separation.near_separation(X, y, w, True, res)
    assert share == pytest.approx(4.0 / 10.0)
    assert rows == pytest.approx(4.0 / 2.0)  # in units of the mean weight, 2
    assert _separation.near_separation(X, y, 7.0 * w, True, res) == pytest.approx((share, rows))


def test_option_validated():
    X, y = _nearly_separated(200, 2.0, 0)
    est = SubsampledPriorLogisticRegression(prior_scale="loo-logloss")
    with pytest.raises(ValueError, match="prior_scale"):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
    with pytest.raises(ValueError, match="prior_scale"):
        SubsampledPriorPoissonRegressor(prior_scale="loo-log-loss").fit(X, y)
