"""A user's and an attacker's review of ``bootstrap_conf_int`` and ``interval_correction`` (task HQJ).

Failing inputs before the fix: ``sample_weight=-np.ones(20)`` raised ``IndexError`` (not a ValueError naming
``sample_weight``); a DataFrame with other column names than the fit's was accepted silently; and after
``set_params(fit_intercept=False)`` (or ``variant="paper"``) the refits ran the new rule around the old ``coef_``
(intervals [[1.238, 2.147], ...] became [[0.846, 2.539], ...] for the same fit and seed; init="lts" likewise): the
fit now records all its parameters (``_fitted_with["params"]``) and the refits run those.
"""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from sklearn_bayes import MixtureMEstimatorRegressor


def _data(seed=0, n=20):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, X @ [1.0, 2.0] + 3.0 + rng.standard_t(3, size=n)


def _fit(X, y, sw=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=sw)


def test_negative_weight_is_refused_naming_sample_weight():
    X, y = _data()
    m = _fit(X, y)
    with pytest.raises(ValueError, match="sample_weight"):
        m.bootstrap_conf_int(X, y, n_boot=2, sample_weight=-np.ones(len(y)), random_state=0)


@pytest.mark.parametrize("param", [{"fit_intercept": False}, {"variant": "paper"}, {"init": "lts"}, {"n_init": 3},
                                   {"components": ("gaussian", "cauchy")}])
def test_set_params_after_fit_does_not_change_the_intervals(param):
    X, y = _data()
    m = _fit(X, y)
    before = m.bootstrap_conf_int(X, y, n_boot=6, random_state=0)
    m.set_params(**param)
    np.testing.assert_array_equal(m.bootstrap_conf_int(X, y, n_boot=6, random_state=0), before)
    assert m.get_params()[next(iter(param))] == next(iter(param.values()))  # the parameter is left as set


def test_interval_correction_set_after_fit_changes_neither_method():
    X, y = _data()
    m = _fit(X, y)
    ci, boot = m.conf_int(), m.bootstrap_conf_int(X, y, n_boot=4, random_state=1)
    m.set_params(interval_correction="none")
    np.testing.assert_array_equal(m.conf_int(), ci)
    np.testing.assert_array_equal(m.bootstrap_conf_int(X, y, n_boot=4, random_state=1), boot)


def test_pandas_feature_names_are_checked():
    X, y = _data()
    df = pd.DataFrame(X, columns=["a", "b"])
    m = _fit(df, y)
    ci = m.bootstrap_conf_int(df, y, n_boot=3, random_state=0)
    with pytest.raises(ValueError, match="feature names"):
        m.bootstrap_conf_int(df.rename(columns={"a": "z"}), y, n_boot=3, random_state=0)
    with pytest.warns(UserWarning, match="feature names"):
        np.testing.assert_array_equal(m.bootstrap_conf_int(X, y, n_boot=3, random_state=0), ci)


def test_seed_reproducible_generator_advances_and_estimator_unchanged():
    X, y = _data()
    m = _fit(X, y)
    state = pickle.dumps(m)
    a = m.bootstrap_conf_int(X, y, n_boot=4, random_state=0)
    np.testing.assert_array_equal(m.bootstrap_conf_int(X, y, n_boot=4, random_state=0), a)
    assert pickle.dumps(m) == state  # the call does not change the estimator
    gen = np.random.default_rng(5)
    g1 = m.bootstrap_conf_int(X, y, n_boot=4, random_state=gen)
    g2 = m.bootstrap_conf_int(X, y, n_boot=4, random_state=gen)
    assert not np.array_equal(g1, g2)  # a caller-owned Generator is consumed, not rewound
    np.testing.assert_array_equal(pickle.loads(state).bootstrap_conf_int(X, y, n_boot=4, random_state=0), a)
    np.testing.assert_array_equal(clone(m).fit(X, y).bootstrap_conf_int(X, y, n_boot=4, random_state=0), a)


def test_equal_weights_give_the_unweighted_intervals():
    X, y = _data()
    a = _fit(X, y).bootstrap_conf_int(X, y, n_boot=4, random_state=0)
    w = np.full(len(y), 3.0)
    m = _fit(X, y, sw=w)
    np.testing.assert_allclose(m.bootstrap_conf_int(X, y, n_boot=4, sample_weight=w, random_state=0), a, rtol=1e-6)


def test_zero_weight_rows_and_n_boot_two():
    X, y = _data()
    w = np.ones(len(y))
    w[:3] = 0.0
    m = _fit(X, y, sw=w)
    ci = m.bootstrap_conf_int(X, y, n_boot=2, sample_weight=w, random_state=0)
    assert ci.shape == (2, 2) and np.all(np.isfinite(ci)) and np.all(ci[:, 0] < ci[:, 1])
    with pytest.raises(ValueError, match="[Ss]ample weights"):
        m.bootstrap_conf_int(X, y, n_boot=2, sample_weight=np.zeros(len(y)))


def test_pickle_from_before_df_intervals_uses_df_resid():
    X, y = _data()
    m = _fit(X, y)
    old = pickle.loads(pickle.dumps(m))
    del old.__dict__["df_intervals_"], old.__dict__["_fitted_with"]
    ci = old.bootstrap_conf_int(X, y, n_boot=4, random_state=0)
    new = m.bootstrap_conf_int(X, y, n_boot=4, random_state=0)
    # same refits (same sd, same centre): only the t quantile's df differs
    np.testing.assert_allclose(ci.mean(axis=1), new.mean(axis=1), rtol=1e-12)
    assert not np.array_equal(ci, new)


def test_pickle_from_round_15_without_recorded_parameters_keeps_variant_and_intercept():
    """A fit pickled with ``_fitted_with`` but before it held ``params``: variant and fit_intercept still the fit's."""
    X, y = _data()
    m = _fit(X, y)
    before = m.bootstrap_conf_int(X, y, n_boot=4, random_state=0)
    old = pickle.loads(pickle.dumps(m))
    del old._fitted_with["params"]
    np.testing.assert_array_equal(old.bootstrap_conf_int(X, y, n_boot=4, random_state=0), before)
    old.set_params(fit_intercept=False)
    np.testing.assert_array_equal(old.bootstrap_conf_int(X, y, n_boot=4, random_state=0), before)


@pytest.mark.parametrize("scale", [0.01, 1e6])
def test_df_intervals_and_conf_int_do_not_depend_on_the_scale_of_equal_weights(scale):
    X, y = _data()
    m, ms = _fit(X, y), _fit(X, y, sw=np.full(len(y), scale))
    assert ms.df_intervals_ == pytest.approx(m.df_intervals_, rel=1e-12)
    np.testing.assert_allclose(ms.conf_int(), m.conf_int(), rtol=1e-10)


def test_zero_weight_rows_are_dropped_rows_for_the_corrected_intervals():
    X, y = _data()
    w = np.ones(len(y))
    w[:3] = 0.0
    mz, md = _fit(X, y, sw=w), _fit(X[3:], y[3:])
    assert mz.df_intervals_ == pytest.approx(md.df_intervals_, rel=1e-12)
    np.testing.assert_allclose(mz.conf_int(), md.conf_int(), rtol=1e-10)


def test_the_huber_correction_only_widens():
    X, y = _data()
    huber = _fit(X, y)
    none = MixtureMEstimatorRegressor(random_state=0, interval_correction="none").fit(X, y)
    assert none.df_intervals_ == none.df_resid_ and huber.df_intervals_ <= none.df_resid_
    np.testing.assert_array_equal(huber.coef_, none.coef_)
    lo, hi = huber.conf_int().T
    assert np.all(lo <= none.conf_int()[:, 0]) and np.all(hi >= none.conf_int()[:, 1])
