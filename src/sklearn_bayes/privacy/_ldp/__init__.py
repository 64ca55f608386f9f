"""Local-DP frequency estimation (a private sub-package; see the layout in doc/user_guide/conventions.rst).

Its façade: :class:`AdaptiveLDPFrequencyEstimator` and :class:`RRRRMechanism`, exported by
:mod:`sklearn_bayes.privacy`.  Inside: ``_rrrr`` (the RRRR mechanism and its constants),
``_mechanisms`` (the static mechanisms: subset selection, GRR, OUE), ``_input`` (validation
and encoding), ``_store`` (the response store), ``_chain`` (the chain state as one object),
``_utilities`` (the utilities that choose the subset), ``_driver`` (the online loop),
``_samplers`` and ``_posterior`` (the posterior samplers and point estimates), ``_params``
(parameters frozen after fitting), ``_serving`` (proposals, refresh, merge),
``_adaptive_rule`` (the posterior-adaptive choice of a static mechanism) and ``_estimator``.
"""

from sklearn_bayes.privacy._ldp._estimator import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._rrrr import RRRRMechanism

__all__ = ["AdaptiveLDPFrequencyEstimator", "RRRRMechanism"]
