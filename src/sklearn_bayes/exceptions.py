"""Warnings and errors raised by sklearn_bayes (one home for every custom category).

Filter them like any warning, e.g.
``warnings.filterwarnings("ignore", category=SeededNoiseWarning)`` in a test suite that
seeds its privacy noise on purpose.
"""

__all__ = [
    "BudgetExceededError",
    "DetachedLedgerError",
    "DetachedLedgerWarning",
    "SeededNoiseWarning",
    "SubsampleFitWarning",
    "WeakReleaseWarning",
]


class SeededNoiseWarning(UserWarning):
    """Privacy noise drawn from a seeded generator is reproducible, hence not private.

    Issued when a privacy mechanism is given an integer ``random_state``: seeded
    noise is for tests and experiments only.  Also issued when a generator passed as
    ``random_state`` is about to release noise from a state that already produced a
    release in this process: :func:`sklearn.base.clone`, :func:`copy.deepcopy` and
    pickling copy a ``numpy.random.Generator`` with its state, so every copy of the
    estimator (the folds of ``cross_val_score``, the candidates of ``GridSearchCV``)
    would replay the same noise, which then cancels between their releases.
    """


class BudgetExceededError(ValueError):
    """A release would exceed the budget of a :class:`~sklearn_bayes.PrivacyLedger`.

    Raised *before* any noise is drawn: nothing was released, nothing was recorded, and
    the estimator is left exactly as it was.  The message names the ledger (its file when
    it has one), the budget, what was spent and what the release asked for; never a
    data value.
    """


class DetachedLedgerError(RuntimeError):
    """A release would be recorded in a copy of a shared in-memory ledger that cannot reach it.

    An in-memory :class:`~sklearn_bayes.PrivacyLedger` lives in one process.  An estimator
    given one and copied into another process (joblib's process workers with
    ``n_jobs > 1`` in ``GridSearchCV`` or ``cross_val_score``, a ``fork``, or an estimator saved
    and loaded after its ledger is gone) holds a snapshot whose records would never reach
    the ledger the caller holds: the release is refused before any noise is drawn.  Give
    the ledger a file, ``PrivacyLedger(path=...)``, to account across processes.
    """


class DetachedLedgerWarning(UserWarning):
    """A release was recorded in an unpickled copy of a shared :class:`~sklearn_bayes.PrivacyLedger`.

    Pickling stores a snapshot of a ledger, so an estimator that was pickled -- by
    joblib's process workers (``n_jobs > 1`` in ``cross_val_score``, ``GridSearchCV``), or
    saved and loaded -- records its releases in its own copy, and they never reach the
    ledger the caller holds.  Fit with ``n_jobs=1`` (or a thread backend) to account in one
    ledger, or gather the copies' ledgers and add them up with
    :meth:`~sklearn_bayes.PrivacyLedger.compose`.

    No longer issued by the library (kept so that warning filters naming it still
    work): such a release now raises :class:`DetachedLedgerError` instead.
    """


class SubsampleFitWarning(UserWarning):
    """Some unregularised subsample fits did not exist (separation) or were not unique.

    Issued at most once per call to ``fit`` of a ``SubsampledPrior*`` estimator, with
    the counts and the fallback used.
    """


class WeakReleaseWarning(UserWarning):
    """A private release that holds little about the model: expect predictions near a constant.

    Issued by ``fit`` of the private linear models when a public function of the release says
    its noise dominates (``AdaOPSRegressor``: ``gram_signal_to_noise_ < 2``;
    ``OnePosteriorSampleRidge``: the draw's noise proxy above 1), and by the intervals computed
    from such a release.  It reads released or public values only: it reveals nothing more.
    """
