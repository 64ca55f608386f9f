"""Local-DP frequency estimation (a private sub-package; see the layout in doc/user_guide/conventions.rst).

Its façade: :class:`AdaptiveLDPFrequencyEstimator` and :class:`RRRRMechanism`, exported by
:mod:`sklearn_bayes.privacy`, and for the experiments the static protocols' privatisers
(``ss_privatize``, ``oue_privatize``, ``best_subset_size``) and the posterior-adaptive rule
(``choose_mechanism``).  Inside: ``_rrrr`` (the RRRR mechanism and its constants),
``_mechanisms`` (the static mechanisms: subset selection, GRR, OUE), ``_input`` (validation
and encoding), ``_store`` (the response store), ``_chain`` (the chain state as one object),
``_utilities`` (the utilities that choose the subset), ``_driver`` (the online loop),
``_samplers`` and ``_posterior`` (the posterior samplers and point estimates), ``_params``
(parameters frozen after fitting), ``_serving`` (proposals, refresh, merge),
``_adaptive_rule`` (the posterior-adaptive choice of a static mechanism) and ``_estimator``.
"""

from sklearn_bayes.privacy._ldp._adaptive_rule import choose_mechanism
from sklearn_bayes.privacy._ldp._estimator import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._ldp._mechanisms import best_subset_size, oue_privatize, ss_privatize
from sklearn_bayes.privacy._ldp._rrrr import RRRRMechanism

__all__ = [
    "AdaptiveLDPFrequencyEstimator",
    "RRRRMechanism",
    "best_subset_size",
    "choose_mechanism",
    "oue_privatize",
    "ss_privatize",
]
