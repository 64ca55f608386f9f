"""Differential privacy: noise, accounting, private sketches and local-DP frequency estimation."""

from sklearn_bayes.privacy._core import PrivacyLedger
from sklearn_bayes.privacy._ldp import AdaptiveLDPFrequencyEstimator
from sklearn_bayes.privacy._core import RowNormClipper
from sklearn_bayes.privacy._sketch import PrivateCountSketch
from sklearn_bayes.privacy._linear import DPSGLDLogisticRegression
from sklearn_bayes.privacy._linear import AdaOPSRegressor, OnePosteriorSampleRidge
from sklearn_bayes.privacy._ldp import RRRRMechanism

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
