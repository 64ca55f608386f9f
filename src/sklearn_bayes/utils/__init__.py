"""Utilities shared by the estimators (validation helpers, transactions, estimator discovery)."""

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.utils._discovery import all_estimators
from sklearn_bayes.utils._transaction import instance_lock, serialized, transactional
from sklearn_bayes.utils._validation import IntegerInterval, RealInterval, check_epsilon, check_generator, check_privacy_random_state

__all__ = [
    "IntegerInterval",
    "RealInterval",
    "SeededNoiseWarning",
    "all_estimators",
    "check_epsilon",
    "check_generator",
    "check_privacy_random_state",
    "instance_lock",
    "serialized",
    "transactional",
]
