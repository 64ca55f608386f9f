"""The public surface of MixtureMEstimatorRegressor as an experienced scikit-learn user (and an attacker) meets it.

sample_weight, set_params after fit, awkward inputs, equivariances, random_state, pickling, threads, meta-estimators,
flag_outliers on new rows, conf_int / summary argument checks.  Tolerances: where two paths must agree bit for bit
(power-of-two weights, float32 read as float64, pickle, clone, same seed) the test asks for equality; elsewhere the
bound is stated next to the assertion.
"""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_bayes import MixtureMEstimatorRegressor
from tests._property_tools import _release_state, run_threads

EPS = np.finfo(float).eps


def _data(n=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 1.0 + X @ np.linspace(2.0, -1.0, d) + rng.standard_t(3, size=n)
    y[:6] += 15.0  # a few gross outliers, so flags are not empty
    return X, y


def _same_fit(a, b):
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.intercept_ == b.intercept_
    assert a.selected_loss_ == b.selected_loss_
    np.testing.assert_array_equal(a.outlier_mask_, b.outlier_mask_)
    np.testing.assert_array_equal(a.coef_covariance_, b.coef_covariance_)


def _coef_tolerance(reg, y_abs_max, n):
    """The fit's change when every target moves by at most ``eps * y_abs_max`` (rounding of the targets),
    bounded through a linear smoother: ``|d coef_j| <= sqrt(n) * se_j / s * delta`` (Cauchy-Schwarz on the
    rows of the hat matrix, ``se_j`` the coefficient's standard error, ``s`` the residual scale), times 10 for the
    IRLS iterations that see slightly different residuals."""
    se = np.sqrt(np.diag(reg.coef_covariance_))
    return 10.0 * np.sqrt(n) * se / reg.residual_scale_ * (4 * EPS * y_abs_max)


def _solver_tolerance(reg, variant):
    """How far two fits of equivalent data may differ when the solver's path is not the same (different
    standardisation, different start candidates): the stopping rules.  ``"min_variance"``: IRLS stops at a relative
    step of 1e-8 (standardised units); at a contraction rate up to 1 - 1e-4 the remaining error is below 1e-4
    standardised units, about 1e-3 standard errors at n = 120.  ``"paper"``: EM stops when the log-likelihood per
    unit weight gains less than tol = 1e-5; the remaining gain, at a rate up to 0.75, is below 4 n tol, and a
    log-likelihood gap g puts the coefficients within sqrt(2 g) standard errors: sqrt(8 * 120 * 1e-5) = 0.1."""
    se = np.sqrt(np.diag(reg.coef_covariance_))
    return se * (1e-3 if variant == "min_variance" else np.sqrt(8 * len(reg.outlier_mask_) * reg.tol))


# --------------------------------------------------------------------------------------
# sample_weight
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["min_variance", "paper"])
@pytest.mark.parametrize("c", [4.0, 0.25, 2.0**-40])
def test_power_of_two_weights_are_bit_identical_to_no_weights(variant, c):
    # the fit runs on sw / W with W the power of two putting the largest weight in [1, 2): c * ones -> ones exactly
    X, y = _data()
    a = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
    b = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y, sample_weight=np.full(len(y), c))
    _same_fit(a, b)
    np.testing.assert_array_equal(a.flag_outliers(X, y), b.flag_outliers(X, y))


@pytest.mark.parametrize("c", [3.0, 0.3, 1e5])
def test_equal_weights_equal_no_weights_within_rounding(c):
    # 1.5, 1.2, 1.52...: weights of mean != 1 enter sums rounded differently; each weighted sum has relative error
    # <= n eps, moving the fit far less than the IRLS tolerance (1e-8 in standardised units) -> compare at 1e-7
    # standardised units: 1e-7 * s / sd(x) in the data's units, and the same loss, flags and covariance to 1e-6
    X, y = _data()
    a = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    b = MixtureMEstimatorRegressor(random_state=0).fit(X, y, sample_weight=np.full(len(y), c))
    assert a.selected_loss_ == b.selected_loss_
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=0, atol=1e-7 * a.residual_scale_ / X.std(axis=0).min())
    assert abs(b.intercept_ - a.intercept_) <= 1e-7 * a.residual_scale_ * (1 + np.abs(X).max())
    np.testing.assert_allclose(b.coef_covariance_, a.coef_covariance_, rtol=1e-6)
    np.testing.assert_array_equal(a.outlier_mask_, b.outlier_mask_)


def test_integer_weights_are_not_repeated_rows_for_the_covariance():
    # documented (Notes, Uncertainty): weights are rescaled to mean one, so weights of 2 do not halve the variance
    # the way doubling every row does; the coefficients solve the same weighted equation (same loss here)
    # (the sandwich itself: interval_correction="none"; Huber's K, whose p / n halves with doubled rows:
    # test_finite_sample.py::test_huber_k_repeated_rows)
    X, y = _data()
    kw = {"random_state": 0, "interval_correction": "none"}
    a = MixtureMEstimatorRegressor(**kw).fit(X, y, sample_weight=np.full(len(y), 2.0))
    b = MixtureMEstimatorRegressor(**kw).fit(np.repeat(X, 2, axis=0), np.repeat(y, 2))
    assert a.selected_loss_ == b.selected_loss_
    se_a, se_b = np.sqrt(np.diag(a.coef_covariance_)), np.sqrt(np.diag(b.coef_covariance_))
    # doubled rows: sqrt(2) smaller standard errors (HC3 leverages halve too: within 3 % at n = 120)
    np.testing.assert_allclose(se_a / se_b, np.sqrt(2.0), rtol=0.03)
    assert np.all(np.abs(a.coef_ - b.coef_) < 0.1 * se_a)


@pytest.mark.parametrize(
    "weights, message",
    [
        (lambda n: -np.ones(n), "sample_weight"),
        (lambda n: np.where(np.arange(n) == 3, np.nan, 1.0), "sample_weight"),
        (lambda n: np.where(np.arange(n) == 3, np.inf, 1.0), "sample_weight"),
        (lambda n: np.ones(n - 1), "sample_weight"),
        (lambda n: np.ones((n, 2)), "sample_weight"),
        (lambda n: np.zeros(n), "sample_weight"),
        (lambda n: np.where(np.arange(n) < 4, 1.0, 0.0), "samples with positive weight"),
    ],
    ids=["negative", "nan", "inf", "short", "2d", "all-zero", "too-few-positive"],
)
def test_bad_sample_weight_refused_by_name_and_estimator_unchanged(weights, message):
    X, y = _data()
    reg = MixtureMEstimatorRegressor(random_state=np.random.default_rng(5)).fit(X, y)
    before = _release_state(reg)
    with pytest.raises(ValueError, match=message):
        reg.fit(X, y, sample_weight=weights(len(y)))
    assert _release_state(reg) == before


# --------------------------------------------------------------------------------------
# set_params after fit: every method answers from the fit
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["min_variance", "paper"])
def test_set_params_after_fit_changes_no_answer_until_refit(variant):
    X, y = _data()
    reg = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
    Xn, yn = X[::3] + 0.5, y[::3]
    def answers():
        return {
            "predict": reg.predict(Xn),
            "flags": reg.flag_outliers(Xn, yn, threshold=2.0),
            "score_samples": reg.score_samples(Xn, yn),
            "conf_int": reg.conf_int(0.1),
            "summary": str(reg.summary(0.1)),
            "summary_xy": str(reg.summary(0.1, X=Xn, y=yn, threshold=2.0)),
        }

    before = answers()
    other = "paper" if variant == "min_variance" else "min_variance"
    reg.set_params(variant=other, fit_intercept=False, components=("gaussian",), init="ols", scale_prior=0.0)
    after = answers()
    for key, value in before.items():
        if isinstance(value, str):
            assert after[key] == value, key
        else:
            np.testing.assert_array_equal(after[key], value, err_msg=key)
    s = reg.summary()
    assert s.info["variant"] == variant and list(s.coefficients.index)[-1] == "const"


def test_summary_of_an_old_pickle_reads_the_variant_from_the_fit():
    # a pickle from before the fit recorded its parameters: the variant from selected_loss_, as fitted
    X, y = _data()
    for variant in ("paper", "min_variance"):
        reg = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
        old = pickle.loads(pickle.dumps(reg))
        del old._fitted_with
        assert str(old.summary()) == str(reg.summary())


# --------------------------------------------------------------------------------------
# threshold / alpha arguments
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("threshold", [True, np.bool_(True), 0, -1.0, np.nan, np.inf, "2.5", None])
def test_threshold_refused_by_name(threshold):
    X, y = _data()
    reg = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    before = _release_state(reg)
    with pytest.raises(ValueError, match="threshold"):
        reg.flag_outliers(X, y, threshold=threshold)
    with pytest.raises(ValueError, match="threshold must be a finite number"):
        reg.summary(threshold=threshold)  # named as the bad value, not as "needs X and y"
    assert _release_state(reg) == before


def test_flag_outliers_on_new_rows_is_the_documented_rule():
    # new rows: |y - x @ mm_coef_ - mm_intercept_| > threshold * residual_scale_ (no row is at the rounding level)
    X, y = _data()
    reg = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    rng = np.random.default_rng(1)
    Xn = rng.normal(size=(200, 3)) * 3.0
    yn = 1.0 + Xn @ [2.0, 0.5, -1.0] + rng.standard_t(2, size=200) * 2.0
    r = yn - Xn @ reg.mm_coef_ - reg.mm_intercept_
    for threshold in (1.0, 2.5, 4.0):
        u = np.abs(r) / (threshold * reg.residual_scale_)
        clear = np.abs(u - 1.0) > 1e-12  # rows exactly at the cut-off would read rounding
        got = reg.flag_outliers(Xn, yn, threshold=threshold)
        np.testing.assert_array_equal(got[clear], (u > 1.0)[clear])
        assert 0 < got.sum() < len(yn)
    paper = MixtureMEstimatorRegressor(variant="paper", random_state=0).fit(X, y)
    rp = yn - paper.predict(Xn)
    np.testing.assert_array_equal(paper.flag_outliers(Xn, yn), np.abs(rp) > 2.5 * paper.residual_scale_)


def test_conf_int_nested_and_centred():
    X, y = _data()
    reg = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    cis = [reg.conf_int(a) for a in (0.5, 0.2, 0.05, 0.01, 1e-6)]
    for narrow, wide in zip(cis, cis[1:]):
        assert np.all(wide[:, 0] < narrow[:, 0]) and np.all(narrow[:, 1] < wide[:, 1])
    for ci in cis:
        np.testing.assert_allclose(ci.mean(axis=1), reg.coef_, rtol=0, atol=8 * EPS * np.abs(ci).max())
    table = reg.summary(alpha=0.2).coefficients
    np.testing.assert_array_equal(table[["lower", "upper"]].to_numpy()[:-1], reg.conf_int(0.2))


# --------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda X, y: (X, np.c_[y, y]), "y"),
        (lambda X, y: (np.where(np.arange(len(y))[:, None] == 3, np.nan, X), y), "X"),
        (lambda X, y: (np.where(np.arange(len(y))[:, None] == 3, np.inf, X), y), "X"),
        (lambda X, y: (X, np.where(np.arange(len(y)) == 3, np.nan, y)), "y"),
        (lambda X, y: (X, np.where(np.arange(len(y)) == 3, -np.inf, y)), "y"),
        (lambda X, y: (X, np.full(len(y), 7.0)), "y"),
        (lambda X, y: (X[:4], y[:4]), "samples"),
        (lambda X, y: (X, y[:-1]), "X and y"),
    ],
    ids=["2d-y", "nan-X", "inf-X", "nan-y", "inf-y", "constant-y", "n=p", "rows"],
)
def test_bad_data_refused_by_name_and_estimator_unchanged(make, name):
    X, y = _data()
    reg = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    before = _release_state(reg)
    with pytest.raises(ValueError, match=name):
        reg.fit(*make(X, y))
    assert _release_state(reg) == before


def test_sparse_X_refused_clearly():
    X, y = _data()
    with pytest.raises(TypeError, match="dense data is required"):
        MixtureMEstimatorRegressor(random_state=0).fit(sp.csr_matrix(X), y)


def test_float32_X_is_the_fit_of_its_float64_values():
    X, y = _data()
    X32 = X.astype(np.float32)
    a = MixtureMEstimatorRegressor(random_state=0).fit(X32, y)
    b = MixtureMEstimatorRegressor(random_state=0).fit(X32.astype(np.float64), y)
    _same_fit(a, b)
    assert a.coef_.dtype == np.float64
    np.testing.assert_array_equal(a.predict(X32), b.predict(X32.astype(np.float64)))


def test_dataframe_names_reach_summary_and_methods():
    pd = pytest.importorskip("pandas")
    X, y = _data()
    df = pd.DataFrame(X, columns=["age", "dose", "weight"])
    a = MixtureMEstimatorRegressor(random_state=0).fit(df, pd.Series(y, name="resp"))
    b = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    _same_fit(a, b)
    assert list(a.feature_names_in_) == ["age", "dose", "weight"]
    assert list(a.summary().coefficients.index) == ["age", "dose", "weight", "const"]
    np.testing.assert_array_equal(a.flag_outliers(df, y), b.flag_outliers(X, y))
    with pytest.raises(ValueError, match="feature names"):
        a.flag_outliers(df.rename(columns={"age": "AGE"}), y)


@pytest.mark.parametrize("variant", ["min_variance", "paper"])
@pytest.mark.parametrize("rows_per_coef", [1.25, 4, 8, 12])
def test_small_sample_boundaries_with_ties_in_y(variant, rows_per_coef):
    # n at the small-sample boundaries (p + 1 = 4 coefficients), y rounded to integers (many ties): a finite fit,
    # no numpy warning, finite flags and intervals, the same fit twice
    rng = np.random.default_rng(int(rows_per_coef * 10))
    n = int(rows_per_coef * 4)
    X = rng.normal(size=(n, 3))
    y = np.round(X @ [1.0, 1.0, 1.0] + rng.normal(size=n))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        warnings.simplefilter("ignore", ConvergenceWarning)
        a = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
        b = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
        ci = a.conf_int()
        flags = a.flag_outliers(X, y)
    _same_fit(a, b)
    assert np.all(np.isfinite(a.coef_)) and np.isfinite(a.intercept_)
    assert np.all(np.isfinite(ci)) and np.all(ci[:, 0] <= ci[:, 1])
    assert flags.dtype == bool and flags.sum() < n / 2


def test_one_feature_and_targets_mostly_tied():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 1))
    y = np.zeros(40)
    y[:3] = [1.0, 2.0, 3.0]  # 37 of 40 targets tie at 0: the robust fit is the flat line through them
    for variant in ("min_variance", "paper"):
        reg = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
        assert abs(reg.coef_[0]) < 1e-12 and abs(reg.intercept_) < 1e-12
        np.testing.assert_array_equal(np.flatnonzero(reg.outlier_mask_), [0, 1, 2])


# --------------------------------------------------------------------------------------
# equivariance
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["min_variance", "paper"])
@pytest.mark.parametrize("s", [1e-9, 1e9, -3.0])
def test_scale_equivariance_of_coef_and_flags(variant, s):
    X, y = _data()
    a = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
    b = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, s * y)
    assert a.selected_loss_ == b.selected_loss_
    # y is standardised by its robust scale first: s * y differs from y only by the rounding of the products
    # (relative eps per target), which moves the fit by the smoother bound at y_abs_max = max |y|
    # ("paper": the EM path is not bit-stable under that rounding (SQUAREM steps), so its stopping rule bounds it)
    if variant == "min_variance":
        tol = _coef_tolerance(a, np.abs(y).max(), len(y))
    else:
        tol = _solver_tolerance(a, variant)
    np.testing.assert_array_less(np.abs(b.coef_ / s - a.coef_), tol)
    np.testing.assert_array_equal(a.flag_outliers(X, y), b.flag_outliers(X, s * y))


@pytest.mark.parametrize("variant", ["min_variance", "paper"])
def test_regression_and_offset_equivariance(variant):
    X, y = _data()
    n = len(y)
    a = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
    g = np.array([3.0, -2.0, 0.5])
    for shift, offset in ((X @ g, 0.0), (0.0, 1e9)):
        yt = y + shift + offset
        b = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, yt)
        assert a.selected_loss_ == b.selected_loss_
        # the targets are rounded at the size of yt (eps * max |yt| each: the smoother bound) and standardised by a
        # different robust scale, so the solver takes another path (its stopping rule)
        tol = _coef_tolerance(a, np.abs(yt).max(), n) + _solver_tolerance(a, variant)
        coef_shift = g if np.ndim(shift) else 0.0
        np.testing.assert_array_less(np.abs(b.coef_ - coef_shift - a.coef_), tol)
        np.testing.assert_array_equal(a.flag_outliers(X, y), b.flag_outliers(X, yt))


@pytest.mark.parametrize("variant", ["min_variance", "paper"])
def test_column_scaling_and_permutation_equivariance(variant):
    # X -> X D P (D diagonal, P a permutation): every column is standardised, so the standardised data are the same
    # up to rounding; coef_ -> P^T D^-1 coef_
    X, y = _data()
    n = len(y)
    D = np.array([1e-6, 250.0, -7.0])
    perm = [2, 0, 1]
    a = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
    b = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit((X * D)[:, perm], y)
    assert a.selected_loss_ == b.selected_loss_
    back = np.empty(3)
    back[perm] = b.coef_
    tol = _coef_tolerance(a, np.abs(y).max(), n) if variant == "min_variance" else _solver_tolerance(a, variant)
    np.testing.assert_array_less(np.abs(back * D - a.coef_), tol)
    np.testing.assert_array_equal(a.outlier_mask_, b.outlier_mask_)


# --------------------------------------------------------------------------------------
# random_state, clone, pickle, threads
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [lambda: 7, lambda: np.random.default_rng(7), lambda: np.random.RandomState(7)],
    ids=["int", "Generator", "RandomState"],
)
def test_same_seed_same_fit_and_clone_then_fit_identical(make):
    X, y = _data(n=200)
    a = MixtureMEstimatorRegressor(random_state=make(), n_subsets=50).fit(X, y)
    b = MixtureMEstimatorRegressor(random_state=make(), n_subsets=50).fit(X, y)
    _same_fit(a, b)
    if isinstance(a.random_state, int):
        _same_fit(a, clone(a).fit(X, y))


def test_random_state_none_fits_and_is_close_to_a_seeded_fit():
    X, y = _data()
    a = MixtureMEstimatorRegressor(random_state=None).fit(X, y)
    b = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    # different elemental subsets, the same M-estimate basin: far inside one standard error
    assert np.all(np.abs(a.coef_ - b.coef_) < 0.1 * np.sqrt(np.diag(b.coef_covariance_)))


@pytest.mark.parametrize("variant", ["min_variance", "paper"])
def test_pickle_round_trip_answers_identically(variant):
    X, y = _data()
    reg = MixtureMEstimatorRegressor(variant=variant, random_state=0).fit(X, y)
    back = pickle.loads(pickle.dumps(reg))
    Xn = X[::2] * 1.5
    np.testing.assert_array_equal(back.predict(Xn), reg.predict(Xn))
    np.testing.assert_array_equal(back.flag_outliers(Xn, y[::2]), reg.flag_outliers(Xn, y[::2]))
    np.testing.assert_array_equal(back.score_samples(Xn, y[::2]), reg.score_samples(Xn, y[::2]))
    np.testing.assert_array_equal(back.conf_int(0.1), reg.conf_int(0.1))
    assert str(back.summary()) == str(reg.summary())
    assert back.score(X, y) == reg.score(X, y)


def test_threads_fitting_clones_and_reading_one_estimator():
    X, y = _data()
    proto = MixtureMEstimatorRegressor(random_state=0, n_subsets=100)
    serial = clone(proto).fit(X, y)
    clones = [clone(proto) for _ in range(3)]
    run_threads(*[lambda c=c: c.fit(X, y) for c in clones])
    for c in clones:
        _same_fit(serial, c)
    Xn = X[::3] + 0.25
    expected = (serial.predict(Xn), serial.flag_outliers(Xn, y[::3]), serial.score_samples(Xn, y[::3]))
    got = [None] * 4

    def read(k):
        for _ in range(20):
            got[k] = (serial.predict(Xn), serial.flag_outliers(Xn, y[::3]), serial.score_samples(Xn, y[::3]))

    run_threads(*[lambda k=k: read(k) for k in range(4)])
    for g in got:
        for a, b in zip(g, expected):
            np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------------------
# meta-estimators
# --------------------------------------------------------------------------------------


def test_pipeline_with_standard_scaler_predicts_as_the_bare_fit():
    X, y = _data()
    X = X * [1.0, 40.0, 1e-3] + [5.0, -100.0, 0.0]
    pipe = make_pipeline(StandardScaler(), MixtureMEstimatorRegressor(random_state=0)).fit(X, y)
    bare = MixtureMEstimatorRegressor(random_state=0).fit(X, y)
    reg = pipe[-1]
    assert reg.selected_loss_ == bare.selected_loss_
    # the scaler is an affine map of the columns the fit standardises anyway: the same fitted values up to the
    # smoother bound of the rounding (computed on y's scale)
    tol = np.sqrt(len(y)) * 10.0 * 4 * EPS * np.abs(y).max() * 10
    np.testing.assert_allclose(pipe.predict(X), bare.predict(X), rtol=0, atol=max(tol, 1e-7 * bare.residual_scale_))
    np.testing.assert_array_equal(reg.flag_outliers(pipe[0].transform(X), y), bare.flag_outliers(X, y))


@pytest.mark.slow
def test_grid_search_with_two_jobs_and_cross_val_score():
    X, y = _data(n=150)
    cv = KFold(3, shuffle=True, random_state=0)
    grid = GridSearchCV(
        MixtureMEstimatorRegressor(random_state=0, n_subsets=50),
        {"variant": ["min_variance", "paper"], "fit_intercept": [True, False]},
        cv=cv,
        n_jobs=2,
    ).fit(X, y)
    assert np.all(np.isfinite(grid.cv_results_["mean_test_score"]))
    assert grid.best_params_["fit_intercept"] is True  # the data have intercept 1 and slopes of size 1-2
    s = grid.best_estimator_.summary()
    assert s.info["variant"] == grid.best_params_["variant"]
    serial = cross_val_score(MixtureMEstimatorRegressor(random_state=0, n_subsets=50), X, y, cv=cv)
    k = grid.cv_results_["params"].index({"variant": "min_variance", "fit_intercept": True})
    np.testing.assert_array_equal(serial, [grid.cv_results_[f"split{i}_test_score"][k] for i in range(3)])
