"""Privacy accounting: a ledger of releases and the subsampling amplification formulas.

Sharing under :func:`sklearn.base.clone`
----------------------------------------
A :class:`PrivacyLedger` passed to an estimator as its ``ledger`` parameter is *shared*,
not deep-copied, by :func:`sklearn.base.clone` and :func:`copy.deepcopy`
(``__deepcopy__`` returns the ledger itself).  This is the sound choice: clones are
fitted by model selection tools (``GridSearchCV``, ``cross_val_score``) on subsets of
the *same* individuals' data, so the privacy losses of all their releases compose
sequentially and must be added up in one place.  A deep copy would give every clone a
fresh ledger and hide that composition.  Pickling, on the other hand, stores a snapshot
(an unpickled estimator writes to its own copy).  Each estimator also keeps its own
per-stream ledger (``ledger_``), reset by ``fit``.  An estimator that records a release
in an unpickled copy of its *shared* ledger (a joblib process worker with ``n_jobs > 1``,
or an estimator saved and loaded) emits :class:`~sklearn_bayes.exceptions.DetachedLedgerWarning`:
the record does not reach the ledger the caller holds.

Forks
-----
Every record carries a unique ``"id"``.  When an estimator with released state is
copied (``copy.deepcopy``, pickling), the copy and the original are *forks*: both
answer queries about the same individuals, so their releases compose.  A copy's
ledger starts with the records of the common history (the same ids) and then goes
its own way; :meth:`PrivacyLedger.compose` adds the records of several ledgers,
counting each record (hence the common history) once.
"""

import math
import threading
import uuid
import warnings

from sklearn_bayes.exceptions import DetachedLedgerWarning
from sklearn_bayes.utils import check_epsilon
from sklearn_bayes.utils._validation import external_stacklevel

__all__ = ["PrivacyLedger", "amplify_by_subsampling", "log1p_exp", "subsampled_base_epsilon"]


def amplify_by_subsampling(epsilon, rate):
    """ε of an ε-DP mechanism run on a Poisson subsample with inclusion probability ``rate``.

    ``ln(1 + rate (e^ε - 1))`` for neighbouring data sets differing by the presence of
    one element (*Privacy Amplification by Subsampling: Tight Analyses via Couplings
    and Divergences*, Balle, Barthe and Gaboardi 2018).  ``epsilon = 0`` gives 0.
    Computed in log space: no overflow for any finite ε.

    Examples
    --------
    >>> round(amplify_by_subsampling(1.0, 0.1), 6)
    0.158565
    >>> amplify_by_subsampling(1.0, 1.0)
    1.0
    """
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}.")
    if epsilon == 0:
        return 0.0
    if rate == 1:
        return float(epsilon)
    if epsilon < 700.0:  # direct formula: most accurate, and e^ε is finite
        return math.log1p(rate * math.expm1(epsilon))
    return log1p_exp(math.log(rate) + _log_expm1(epsilon))


def subsampled_base_epsilon(epsilon, rate):
    """Inverse of :func:`amplify_by_subsampling`: the ε₀ the mechanism may use on the subsample.

    ``ln(1 + (e^ε - 1) / rate)``, so that ``amplify_by_subsampling(ε₀, rate) == ε``;
    computed in log space (``ε = 710`` or ``rate = 1e-300`` do not overflow).

    Examples
    --------
    >>> e0 = subsampled_base_epsilon(0.5, 0.2)
    >>> round(amplify_by_subsampling(e0, 0.2), 12)
    0.5
    """
    epsilon = check_epsilon(epsilon)
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}.")
    if rate == 1:
        return epsilon
    if epsilon < 700.0:
        ratio = math.expm1(epsilon) / rate
        if math.isfinite(ratio):  # direct formula: most accurate
            return math.log1p(ratio)
    return log1p_exp(_log_expm1(epsilon) - math.log(rate))


def _log_expm1(x):
    """``log(e^x - 1)`` for ``x > 0`` without overflow (``x + log1p(-e^{-x})`` for large x)."""
    return math.log(math.expm1(x)) if x < 30.0 else x + math.log1p(-math.exp(-x))


def log1p_exp(x):
    """``log(1 + e^x)`` without overflow (softplus)."""
    return math.log1p(math.exp(x)) if x < 30.0 else x + math.log1p(math.exp(-x))


class PrivacyLedger:
    """A record of the releases made about one data set and of the privacy they spent.

    Every release appends a record (a dict with a unique ``"id"``); ``epsilon_spent``
    is the total under basic sequential composition (the sum of the recorded
    increments).  A mechanism whose guarantee covers any number of releases (e.g.
    use-and-keep sketches) records its later releases with a zero increment.

    Shared, not copied, by :func:`sklearn.base.clone` and :func:`copy.deepcopy` (see the
    module docstring for why); pickling stores a snapshot.  :meth:`compose` adds up
    the ledgers of forks (copies that went their own way), counting every record once.

    Examples
    --------
    >>> ledger = PrivacyLedger()
    >>> ledger.record("query", 0.5, n_items=3)
    >>> ledger.record("query", 0.0, n_items=2, note="covered by Theorem 4")
    >>> ledger.epsilon_spent, ledger.n_releases
    (0.5, 2)
    >>> import copy
    >>> copy.deepcopy(ledger) is ledger
    True
    """

    def __init__(self):
        self.records = []
        self._lock = threading.Lock()
        self._snapshot = False

    def record_shared(self, owner, mechanism, epsilon, n_items=None, note="", **extra):
        """:meth:`record` for the ledger an estimator was *given* (its ``ledger`` parameter).

        Warns :class:`~sklearn_bayes.exceptions.DetachedLedgerWarning` when this ledger is an
        unpickled snapshot: the release is recorded here but never reaches the ledger it
        was copied from (e.g. the caller's, when joblib fits a pickled copy in a worker).
        """
        if self._snapshot:
            warnings.warn(
                f"{owner} recorded a release in an unpickled copy of its shared PrivacyLedger "
                "(e.g. in a joblib process worker with n_jobs > 1, or after saving and loading): "
                "the record does not reach the ledger it was copied from. Fit with n_jobs=1 "
                "(or a thread backend) to account in one ledger, or add up the copies' ledgers "
                "with PrivacyLedger.compose.",
                DetachedLedgerWarning,
                stacklevel=external_stacklevel(),
            )
        self.record(mechanism, epsilon, n_items=n_items, note=note, **extra)

    def record(self, mechanism, epsilon, n_items=None, note="", **extra):
        """Append a release that spent ``epsilon`` (an increment >= 0).

        ``extra`` items are stored in the record; a unique ``id`` is drawn unless given
        (the same release recorded in two ledgers keeps one id).
        """
        epsilon = float(epsilon)
        if not math.isfinite(epsilon) or epsilon < 0:
            raise ValueError(f"epsilon increment must be finite and >= 0, got {epsilon!r}.")
        extra.setdefault("id", uuid.uuid4().hex)
        with self._lock:
            self.records.append(
                {"mechanism": mechanism, "epsilon": epsilon, "n_items": n_items, "note": note, **extra}
            )

    @classmethod
    def compose(cls, *ledgers):
        """A new ledger with the records of all ``ledgers``, each record (by ``id``) once.

        The ledgers of forks share the records of their common history; composing them
        counts that history once and every fork's own releases once, so
        ``PrivacyLedger.compose(a, b).epsilon_spent`` is the basic composition of
        everything the forks released.

        Examples
        --------
        >>> a = PrivacyLedger()
        >>> a.record("query", 1.0)
        >>> import pickle
        >>> b = pickle.loads(pickle.dumps(a))  # a fork: same history ...
        >>> a.record("query", 0.5)
        >>> b.record("query", 1.0)             # ... then its own releases
        >>> PrivacyLedger.compose(a, b).epsilon_spent
        2.5
        """
        out = cls()
        seen = set()
        for ledger in ledgers:
            if not isinstance(ledger, PrivacyLedger):
                raise TypeError(f"compose takes PrivacyLedger objects, got {type(ledger).__name__}.")
            for r in ledger._snapshot_records():
                key = r.get("id", id(r))
                if key not in seen:
                    seen.add(key)
                    out.records.append(dict(r))
        return out

    def _snapshot_records(self):
        """The records as they are now (a copy taken under the lock: threads may be recording)."""
        with self._lock:
            return list(self.records)

    @property
    def epsilon_spent(self):
        """Total ε under sequential composition of the recorded releases."""
        return float(math.fsum(r["epsilon"] for r in self._snapshot_records()))

    @property
    def n_releases(self):
        """Number of recorded releases."""
        return len(self.records)

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        return {"records": [dict(r) for r in self._snapshot_records()]}

    def __setstate__(self, state):
        self.records = state["records"]
        self._lock = threading.Lock()
        self._snapshot = True  # a copy: records made here do not reach the original

    def __repr__(self):
        return f"PrivacyLedger(n_releases={self.n_releases}, epsilon_spent={self.epsilon_spent:.6g})"
