"""Differential privacy: noise, accounting, private sketches and local-DP frequency estimation."""

from ._accounting import PrivacyLedger
from ._adaptive_ldp import AdaptiveLDPFrequencyEstimator
from ._count_sketch import PrivateCountSketch
from ._rrrr import RRRRMechanism

__all__ = ["AdaptiveLDPFrequencyEstimator", "PrivacyLedger", "PrivateCountSketch", "RRRRMechanism"]
