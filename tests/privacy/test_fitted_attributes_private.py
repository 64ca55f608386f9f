"""Every fitted attribute of a private estimator is public, noised (declared) or accounted.

Each private estimator of the package is fitted on two neighbouring data sets (the same
size, one row replaced) with the same seed.  Every fitted attribute (the names in
``vars(est)`` and the class's properties that end in ``_`` and do not start with ``_``) must
then be

* **public**: equal on the two neighbours (shapes, parameters, calibrated noise scales,
  the budget), compared exactly -- the same seed and the same public inputs give the same
  bits;
* **noised**: listed below in the estimator's ``NOISED`` set, a release (or a
  post-processing of releases) whose privacy the estimator accounts (and, where it has a
  ledger, a record of positive ε is there); or
* a random **id** (``uuid4``), independent of the data, listed in ``IDS``.

A new attribute that depends on the raw data and is not declared fails this test: it has
to be noised and accounted, or removed (e.g. DP-SGLD's ``ops_acceptance_``, the
acceptance rate of the start sampler on the raw data, 0.1133 vs 0.11 on neighbours).
"""

import pickle
import warnings

import numpy as np
import pytest

from sklearn_bayes.privacy import (
    AdaOPSRegressor,
    AdaptiveLDPFrequencyEstimator,
    DPSGLDLogisticRegression,
    OnePosteriorSampleRidge,
    PrivacyLedger,
    PrivateCountSketch,
    RowNormClipper,
)

_RIDGE_RELEASE = {"coef_", "intercept_"}
#: per estimator: the attributes that are releases or post-processing of releases
NOISED = {
    "ops_ridge": _RIDGE_RELEASE,
    # the posterior's covariance and the Gram's signal-to-noise ratio are post-processing of the
    # released noisy statistics (tests/privacy/linear/test_uncertainty.py fixes the release and
    # changes the data: they do not move)
    "adaops_ssp_posterior": _RIDGE_RELEASE | {"prior_variance_", "residual_variance_", "residual_variance_upper_",
                                              "coef_covariance_",
                                              "posterior_covariance_", "gram_signal_to_noise_"},
    "adaops_released_norm": _RIDGE_RELEASE
    | {"lambda_min_noisy_", "log_norm_noisy_", "residual_bound_", "h_base_", "h_", "lambda_", "gamma_"},
    "adaops_thesis": _RIDGE_RELEASE | {"lambda_min_noisy_", "residual_bound_", "h_base_", "h_", "lambda_", "gamma_"},
    "dpsgld": {"coef_samples_", "intercept_samples_", "coef_", "intercept_", "ops_coef_"},
    "row_norm_clipper": set(),
    "sketch_pan_private": {"table_"},  # the counts plus the pan-private start noise of scale d/eps
    "sketch": set(),  # table_ holds the exact counts: not noised (see XFAIL)
    "ldp": {"theta_", "subset_sizes_", "convergence_"},  # functions of the users' eps-LDP responses
    "ldp_public_labels": {"theta_", "subset_sizes_", "convergence_"},
}
#: random ids drawn by fit (uuid4): independent of the data, different at every fit
IDS = {
    "sketch_pan_private": {"stream_id_", "shard_ids_"},
    "sketch": {"stream_id_", "shard_ids_"},
}


def _regression(seed=0, n=200, d=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, d))
    y = X @ np.array([0.5, -0.3, 0.2]) + 0.1 * rng.standard_normal(n)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = [0.9, 0.9, -0.9], -1.5  # one record replaced (within the public bounds)
    return (X, y), (X2, y2)


def _classification():
    (X, y), (X2, y2) = _regression(1, n=300)
    yc, yc2 = (y > 0).astype(int), (y2 > 0).astype(int)
    yc2[0] = 1 - yc[0]
    return (X, yc), (X2, yc2)


def _items(n=300, k=8, seed=2):
    X = np.random.default_rng(seed).integers(0, k, size=(n, 1))
    X2 = X.copy()
    X2[0, 0] = (X[0, 0] + 3) % k
    return (X,), (X2,)


def _ldp_items_new_category():
    (X,), (X2,) = _items()
    X2 = X2.copy()
    X2[0, 0] = 99  # a value no other user has: the categories read from the data change
    return (X,), (X2,)


CASES = {
    "ops_ridge": (
        lambda: OnePosteriorSampleRidge(epsilon=1.0, ridge_lambda=500.0, x_bound=2.0, y_bound=2.0, random_state=0),
        _regression,
    ),
    "adaops_ssp_posterior": (
        lambda: AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=2.0, random_state=0),
        _regression,
    ),
    "adaops_released_norm": (
        lambda: AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=2.0, calibration="released_norm", random_state=0),
        _regression,
    ),
    "adaops_thesis": (
        lambda: AdaOPSRegressor(epsilon=1.0, x_bound=2.0, y_bound=2.0, calibration="thesis", random_state=0),
        _regression,
    ),
    "dpsgld": (
        # seed 1 at eps 0.3: the old ops_acceptance_ (the MALA start's acceptance rate on the raw data)
        # read 0.07 vs 0.0667 on the neighbours (at other seeds the coarse rate often coincides)
        lambda: DPSGLDLogisticRegression(epsilon=0.3, x_bound=2.0, n_iter=40, n_draws=5, random_state=1),
        _classification,
    ),
    "row_norm_clipper": (lambda: RowNormClipper(max_norm=1.0, center=[0.1, 0.0, -0.1]), lambda: _regression()),
    "sketch_pan_private": (
        lambda: PrivateCountSketch(epsilon=1.0, width=64, pan_private=True, random_state=0),
        _items,
    ),
    "sketch": (lambda: PrivateCountSketch(epsilon=1.0, width=64, random_state=0), _items),
    "ldp": (
        lambda: AdaptiveLDPFrequencyEstimator(n_categories=8, epsilon=1.0, n_final_steps=40, random_state=0),
        _items,
    ),
    # public labels (one of them held by no user of X, by one user of X2): categories_ is the public list
    "ldp_public_labels": (
        lambda: AdaptiveLDPFrequencyEstimator(categories=[*range(8), 99], epsilon=1.0, n_final_steps=40,
                                              random_state=0),
        _ldp_items_new_category,
    ),
}

XFAIL = {
    "sketch": "PrivateCountSketch (pan_private=False) keeps the exact counts of the raw stream as the "
    "fitted attribute table_ (documented as curator state, neither noised nor accounted); reported to "
    "the sketch's owner",
}


def _fitted_attributes(est):
    names = {k for k in vars(est) if k.endswith("_") and not k.startswith("_")}
    for k in dir(type(est)):
        if k.endswith("_") and not k.startswith("_") and isinstance(getattr(type(est), k, None), property):
            try:
                getattr(est, k)
            except AttributeError:
                continue
            names.add(k)
    return {k: getattr(est, k) for k in sorted(names)}


def _ledger_view(ledger):
    return [(r["mechanism"], r["epsilon"], r.get("delta"), r["n_items"]) for r in ledger.records]


def _equal(a, b):
    if isinstance(a, PrivacyLedger):
        return isinstance(b, PrivacyLedger) and _ledger_view(a) == _ledger_view(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (np.ndarray, list, tuple)) or isinstance(b, (np.ndarray, list, tuple)):
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.all((a == b) | ((a != a) & (b != b))))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def _fit(make, data):
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise: wanted here (the same seed on both neighbours)
        return est.fit(*data)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.xfail(reason=XFAIL[c], strict=True)) if c in XFAIL else c for c in CASES],
)
def test_fitted_attributes_are_public_noised_or_accounted(case):
    make, data = CASES[case]
    d1, d2 = data()
    a, b = _fit(make, d1), _fit(make, d2)
    attrs_a, attrs_b = _fitted_attributes(a), _fitted_attributes(b)
    assert attrs_a.keys() == attrs_b.keys()
    noised, ids = NOISED[case], IDS.get(case, set())
    assert noised <= attrs_a.keys(), f"declared but absent: {sorted(noised - attrs_a.keys())}"
    leaks = [k for k in attrs_a if k not in noised | ids and not _equal(attrs_a[k], attrs_b[k])]
    assert not leaks, f"{case}: data-dependent fitted attributes neither declared noised nor public: {leaks}"
    ledger = attrs_a.get("ledger_")
    if noised and ledger is not None and case not in ("sketch", "sketch_pan_private"):
        # the releases are accounted: a record of positive epsilon (the sketch records at query time)
        assert ledger.epsilon_spent > 0


def test_dpsgld_has_no_raw_data_acceptance_rate():
    """The old ``ops_acceptance_`` (0.1133 vs 0.11 on neighbours) is gone, not merely renamed."""
    make, data = CASES["dpsgld"]
    est = _fit(make, data()[0])
    assert not any("accept" in k for k in vars(est))


def test_ldp_without_a_public_domain_is_refused_and_from_data_warns():
    """The former strict xfail (n_categories=None published the distinct raw values as categories_): the
    default now refuses to fit, naming both parameters and leaving the estimator unfitted; the explicit
    opt-in categories='from_data' warns, and its categories_ do differ on the neighbours (the documented
    leak, which the warning announces)."""
    (X,), (X2,) = _ldp_items_new_category()
    est = AdaptiveLDPFrequencyEstimator(epsilon=1.0, n_final_steps=40, random_state=0)
    before = pickle.dumps(est)
    with pytest.raises(ValueError, match=r"n_categories and categories are both None: the category domain must "
                                         r"be public") as info:
        est.fit(X2)
    assert "99" not in str(info.value)
    assert pickle.dumps(est) == before
    fitted = []
    for data in (X, X2):
        est = AdaptiveLDPFrequencyEstimator(categories="from_data", epsilon=1.0, n_final_steps=40, random_state=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted.append(est.fit(data))
        assert any(w.category is UserWarning and "categories='from_data'" in str(w.message)
                   and "NOT private" in str(w.message) for w in caught)
    assert fitted[0].n_categories_ == 8 and fitted[1].n_categories_ == 9
    assert 99 in fitted[1].categories_.tolist() and 99 not in fitted[0].categories_.tolist()
