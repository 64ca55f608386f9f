"""Differential privacy: noise, accounting, private sketches and local-DP frequency estimation."""

from ._accounting import PrivacyLedger
from ._adaptive_ldp import AdaptiveLDPFrequencyEstimator
from ._clipping import RowNormClipper
from ._count_sketch import PrivateCountSketch
from ._dpsgld import DPSGLDLogisticRegression
from ._posterior_sampling import AdaOPSRegressor, OnePosteriorSampleRidge
from ._rrrr import RRRRMechanism

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
