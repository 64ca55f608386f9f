"""Private linear models: OPS ridge, AdaOPS (its calibrations as small classes) and hybrid DP-SGLD.

The façade of the sub-package (see the layout in doc/user_guide/conventions.rst):

* ``_base``: the OPS bound, the add/remove budget of a draw, the shared estimator base
  (validation, public bounds, ledger, prediction) and the ridge-posterior draw;
* ``_ops``: the worst-case calibration of γ and :class:`OnePosteriorSampleRidge`;
* ``_adaops_accounting``: AdaOPS's budget splits, risk proxies and eigenvalue floors;
* ``_ssp_posterior``: noisy sufficient statistics and their noise-aware posterior;
* ``_calibration``: AdaOPS's calibrations, one class each (accounting, release, attributes);
* ``_adaops``: :class:`AdaOPSRegressor`, delegating to its calibration;
* ``_dpsgld_accounting``: DP-SGLD's calibration and accounting with ``dp-accounting``;
* ``_ball_sampling``: exact samplers on the public ball (the chain's start);
* ``_dpsgld``: :class:`DPSGLDLogisticRegression`.
"""

from sklearn_bayes.privacy._linear._adaops import AdaOPSRegressor
from sklearn_bayes.privacy._linear._dpsgld import DPSGLDLogisticRegression
from sklearn_bayes.privacy._linear._ops import OnePosteriorSampleRidge

__all__ = ["AdaOPSRegressor", "DPSGLDLogisticRegression", "OnePosteriorSampleRidge"]
