"""Differential privacy: noise, accounting, private sketches and local-DP frequency estimation."""

from sklearn_bayes.privacy._accounting import PrivacyLedger
from sklearn_bayes.privacy._adaptive_ldp import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._clipping import RowNormClipper
from sklearn_bayes.privacy._count_sketch import PrivateCountSketch
from sklearn_bayes.privacy._dpsgld import DPSGLDLogisticRegression
from sklearn_bayes.privacy._posterior_sampling import AdaOPSRegressor, OnePosteriorSampleRidge
from sklearn_bayes.privacy._rrrr import RRRRMechanism

__all__ = [
    "AdaOPSRegressor",
    "AdaptiveLDPFrequencyEstimator",
    "DPSGLDLogisticRegression",
    "OnePosteriorSampleRidge",
    "PrivacyLedger",
    "PrivateCountSketch",
    "RRRRMechanism",
    "RowNormClipper",
]
