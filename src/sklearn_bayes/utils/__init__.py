"""Utilities shared by the estimators (validation helpers, estimator discovery)."""

from ._discovery import all_estimators
from ._validation import SeededNoiseWarning, check_epsilon, check_privacy_random_state

__all__ = ["SeededNoiseWarning", "all_estimators", "check_epsilon", "check_privacy_random_state"]
