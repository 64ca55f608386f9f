"""Warnings and errors raised by sklearn_bayes (one home for every custom category).

Filter them like any warning, e.g.
``warnings.filterwarnings("ignore", category=SeededNoiseWarning)`` in a test suite that
seeds its privacy noise on purpose.
"""

__all__ = ["SeededNoiseWarning", "SubsampleFitWarning"]


class SeededNoiseWarning(UserWarning):
    """Privacy noise drawn from a seeded generator is reproducible, hence not private.

    Issued when a privacy mechanism is given an integer ``random_state``: seeded
    noise is for tests and experiments only.
    """


class SubsampleFitWarning(UserWarning):
    """Some unregularised subsample fits did not exist (separation) or were not unique.

    Issued at most once per call to ``fit`` of a ``SubsampledPrior*`` estimator, with
    the counts and the fallback used.
    """
