"""Property-based tests (Hypothesis) of the batch estimators (every public estimator fitted in one call).

They name the bad argument, a rejected ``fit`` of a fitted estimator changes nothing, ``fit`` is
deterministic given ``random_state``, and extreme scales work or are refused clearly.  The
streaming estimators have their own suites (tests/privacy/sketch/test_properties.py,
tests/privacy/ldp/test_properties.py).  Every test runs with ``derandomize=True``.
"""

import importlib.util
import numbers
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone

from sklearn_bayes.utils import all_estimators

# the shared property-test tools (settings, snapshots, the rejection check), loaded by path
_tools_spec = importlib.util.spec_from_file_location("_property_tools", Path(__file__).parents[0] / "_property_tools.py")
_tools = importlib.util.module_from_spec(_tools_spec)
_tools_spec.loader.exec_module(_tools)
_settings, note, _pickled, _canonical, _expect_rejection, _names, _gen = (
    _tools._settings, _tools.note, _tools._pickled, _tools._canonical, _tools._expect_rejection, _tools._names,
    _tools._gen,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning"),
    # the pickle round trips continue copies on purpose: their shared ledger is a snapshot
    pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.DetachedLedgerWarning"),
]



# The batch estimators (linear models and every other public estimator fitted in one call)
# ======================================================================================

STREAMING = {"PrivateCountSketch", "AdaptiveLDPFrequencyEstimator"}  # attacked above

# Small, fast instances (any estimator not listed gets its defaults, or the parameters that
# tests/test_common.py uses for scikit-learn's checks).
BATCH_PARAMS = {
    "SubsampledPriorRidge": {"random_state": 0},
    "SubsampledPriorLogisticRegression": {"random_state": 0},
    "SubsampledPriorLinearSVC": {"random_state": 0},
    "SubsampledPriorPoissonRegressor": {"random_state": 0},
    "MixtureMEstimatorRegressor": {"n_subsets": 20, "random_state": 0},
    "OnePosteriorSampleRidge": {"x_bound": 5.0, "y_bound": 300.0, "random_state": 0},
    "AdaOPSRegressor": {"x_bound": 5.0, "y_bound": 300.0, "random_state": 0},
    "DPSGLDLogisticRegression": {"x_bound": 5.0, "n_iter": 20, "n_draws": 5, "batch_size": 16, "random_state": 0},
}


def _test_common_params():
    spec = importlib.util.spec_from_file_location("_test_common_for_properties", Path(__file__).parent / "test_common.py")
    try:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return dict(getattr(mod, "TEST_PARAMS", {}))
    except Exception:  # pragma: no cover - test_common is checked on its own
        return {}


def _batch_cases():
    from sklearn.base import is_classifier

    common = _test_common_params()
    cases = {}
    for name, cls in all_estimators():
        if name in STREAMING:
            continue
        params = BATCH_PARAMS.get(name, common.get(name, {}))
        if hasattr(cls, "predict"):
            target = "binary" if is_classifier(cls()) else ("counts" if "Poisson" in name else "continuous")
        else:
            target = None  # unsupervised (a transformer of X)
        cases[name] = (lambda cls=cls, params=params: cls(**params), target)
    return cases


BATCH = _batch_cases()


def test_every_public_estimator_is_attacked_here():
    """A newly exported estimator is attacked automatically (streams above, batch below)."""
    names = {name for name, _ in all_estimators()}
    assert STREAMING <= names
    assert names - STREAMING == set(BATCH)


@st.composite
def batch_data(draw, target):
    n = draw(st.integers(30, 60))
    p = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    coef = rng.normal(size=p)
    if target == "binary":
        y = (X @ coef + rng.logistic(size=n) > 0).astype(int)
        if y.min() == y.max():
            y[: n // 2] = 1 - y[0]
    elif target == "counts":
        y = rng.poisson(np.exp(0.3 * X @ coef)).astype(float)
    else:
        y = X @ coef + rng.normal(scale=0.5, size=n)
    return X, y


def _takes_sample_weight(est):
    import inspect

    return "sample_weight" in inspect.signature(est.fit).parameters


def _bad_fit_inputs(X, y, rng, target, weights, public_labels=False):
    """(label, X, y, sample_weight, exception types, argument named: a name or "a|b" for either)

    ``public_labels``: the classifier's label set is public (``classes``, default {0, 1}; review HQX F2), so a
    one-label ``y`` fits by design and labels outside the public set are what it must refuse.
    """
    n, p = X.shape
    Xnan = X.copy()
    Xnan[rng.integers(n), rng.integers(p)] = np.nan
    Xinf = X.copy()
    Xinf[rng.integers(n), rng.integers(p)] = -np.inf
    cases = [
        ("NaN in X", Xnan, y, None, (ValueError,), "X"),
        ("inf in X", Xinf, y, None, (ValueError,), "X"),
        ("3-D X", X.reshape(n, p, 1), y, None, (ValueError,), "X"),
        ("empty X", X[:0], y[:0], None, (ValueError,), "X"),
        ("string X", np.full(X.shape, "a", dtype=object), y, None, (ValueError, TypeError), "X"),
    ]
    if target is not None:
        ynan = y.astype(float).copy()
        ynan[rng.integers(n)] = np.nan
        cases.append(("NaN in y", X, ynan, None, (ValueError,), "y"))
        cases.append(("y of the wrong length", X, y[:-1], None, (ValueError,), "y"))
        if target == "binary" and public_labels:
            cases.append(("labels outside the public set", X, np.where(y == y.max(), 2, 1), None, (ValueError,),
                          "classes"))
        elif target == "binary":
            cases.append(("a single class in y", X, np.zeros(n, dtype=int), None, (ValueError,), "y|class|classes"))
        if target != "binary":  # labels may be strings for classifiers
            cases.append(("string y", X, np.array([f"v{v}" for v in range(n)], dtype=object), None,
                          (ValueError, TypeError), "y"))
    if weights:
        w = np.ones(n)
        w[rng.integers(n)] = -1.0
        Xwide = np.column_stack([X, X[:, :1]])  # and a different number of features
        cases += [
            ("negative sample_weight", Xwide, y, w, (ValueError,), "sample_weight"),
            ("sample_weight of the wrong length", Xwide, y, w[:-1], (ValueError,), "sample_weight"),
            ("NaN sample_weight", Xwide, y, np.where(w < 0, np.nan, w), (ValueError,), "sample_weight"),
            ("all-zero sample_weight", Xwide, y, np.zeros(n), (ValueError,), "sample_weight"),
        ]
    return cases


def _fit(est, X, y, sample_weight=None):
    if y is None:
        return est.fit(X) if sample_weight is None else est.fit(X, sample_weight=sample_weight)
    return est.fit(X, y) if sample_weight is None else est.fit(X, y, sample_weight=sample_weight)


def _output(est, X):
    return est.predict(X) if hasattr(est, "predict") else est.transform(X)


@pytest.mark.parametrize("name", sorted(BATCH))
@_settings(6, shrink=False)  # every bad input is listed on failure; shrinking the data teaches nothing
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_batch_bad_inputs_are_refused_and_change_nothing(name, data, seed):
    """Property 4: every bad input gets a ValueError/TypeError naming the argument; a rejected
    ``fit`` of a fitted estimator (including one whose X has a different number of features)
    leaves it byte-identical (its ``random_state`` Generator included), and it still predicts
    as before.  All bad inputs are tried, so one failure lists every problem."""
    make, target = BATCH[name]
    X, y = data.draw(batch_data(target))
    rng = np.random.default_rng(seed)
    est = make()
    if "random_state" in est.get_params():
        est.set_params(random_state=_gen(seed))  # a Generator parameter must not be advanced either
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(est, X, None if target is None else y)
        out = _output(est, X)
        problems = []
        for label, Xb, yb, wb, types, arg in _bad_fit_inputs(X, y, rng, target, _takes_sample_weight(est),
                                                              public_labels=name == "DPSGLDLogisticRegression"):
            try:
                pattern = "|".join(_names(a) for a in arg.split("|"))  # "y|classes": either word
                _expect_rejection(lambda: _fit(est, Xb, None if target is None else yb, wb), types, pattern, est,
                                  f"fit({label})")
            except (Exception, pytest.fail.Exception) as exc:  # wrong type, no error, or a failed check
                problems.append(f"{label}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        # predict/transform on bad X names X and changes nothing either
        other_p = X[:, :-1] if X.shape[1] > 1 else np.column_stack([X, X])
        for label, Xb in (("NaN in X", np.full_like(X, np.nan)), ("wrong number of features", other_p),
                          ("3-D X", X[:, :, None])):
            try:
                _expect_rejection(lambda: _output(est, Xb), (ValueError,), _names("X"), est, f"predict({label})")
            except (Exception, pytest.fail.Exception) as exc:
                problems.append(f"predict {label}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        np.testing.assert_array_equal(_output(est, X), out)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", sorted(n for n in BATCH if "random_state" in BATCH[n][0]().get_params()))
@_settings(4, shrink=False)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_batch_fit_is_deterministic_given_random_state(name, data, seed):
    """Property 4: two fits with the same int ``random_state`` (or equal Generators) are identical."""
    make, target = BATCH[name]
    X, y = data.draw(batch_data(target))
    yy = None if target is None else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = make().set_params(random_state=seed)
        b = clone(a)
        np.testing.assert_array_equal(_output(_fit(a, X, yy), X), _output(_fit(b, X, yy), X))
        if hasattr(a, "coef_"):
            np.testing.assert_array_equal(a.coef_, b.coef_)
        g1, g2 = clone(a).set_params(random_state=_gen(seed)), clone(a).set_params(random_state=_gen(seed))
        np.testing.assert_array_equal(_output(_fit(g1, X, yy), X), _output(_fit(g2, X, yy), X))


def _integer_params(est):
    """Parameters whose constraints accept integers (an ``Interval`` over ``Integral`` or the type)."""
    out = []
    for pname, constraints in getattr(est, "_parameter_constraints", {}).items():
        for c in constraints:
            if c is numbers.Integral or getattr(c, "type", None) is numbers.Integral:
                out.append(pname)
                break
    return out


@pytest.mark.parametrize("name", sorted(BATCH))
def test_batch_integer_parameters_reject_booleans(name):
    """``max_iter=True`` etc. is refused (IntegerInterval), naming the parameter."""
    make, target = BATCH[name]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = {None: None, "continuous": X[:, 0], "binary": (X[:, 0] > 0).astype(int),
         "counts": rng.poisson(1.0, 40).astype(float)}[target]
    est = make()
    for pname in _integer_params(est):
        for flag in (True, np.True_):
            bad = clone(est).set_params(**{pname: flag})
            with pytest.raises((ValueError, TypeError), match=_names(pname)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _fit(bad, X, y)


@pytest.mark.parametrize("name", sorted(BATCH))
@_settings(3, shrink=False)
@given(data=st.data(), scale=st.sampled_from([1e-300, 1e-150, 1e150, 1e300]), on=st.sampled_from(["X", "y"]))
def test_batch_extreme_scales_work_or_are_refused_clearly(name, data, scale, on):
    """X or y at the ends of the float range: the fit either works (finite predictions) or is
    refused with a ValueError/TypeError naming the argument; never an obscure error
    (LinAlgError, OverflowError, ZeroDivisionError, ...)."""
    make, target = BATCH[name]
    if on == "y" and target in (None, "binary"):
        on = "X"
    X, y = data.draw(batch_data(target))
    if on == "X":
        X = X * scale
    else:
        y = y * scale
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _fit(est, X, None if target is None else y)
        except (ValueError, TypeError) as exc:
            assert re.search(_names(on), str(exc)), f"refused without naming {on}: {exc}"
            return
        out = _output(est, X)
    assert np.all(np.isfinite(out)), f"non-finite output after fitting {on} * {scale:g}"
