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
per-stream ledger (``ledger_``), reset by ``fit``.
"""

import math
import threading

from sklearn_bayes.utils import check_epsilon

__all__ = ["PrivacyLedger", "amplify_by_subsampling", "subsampled_base_epsilon"]


def amplify_by_subsampling(epsilon, rate):
    """ε of an ε-DP mechanism run on a Poisson subsample with inclusion probability ``rate``.

    ``ln(1 + rate (e^ε - 1))`` for neighbouring data sets differing by the presence of
    one element (*Privacy Amplification by Subsampling: Tight Analyses via Couplings
    and Divergences*, Balle, Barthe and Gaboardi 2018).  ``epsilon = 0`` gives 0.

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
    return math.log1p(rate * math.expm1(epsilon))


def subsampled_base_epsilon(epsilon, rate):
    """Inverse of :func:`amplify_by_subsampling`: the ε₀ the mechanism may use on the subsample.

    ``ln(1 + (e^ε - 1) / rate)``, so that ``amplify_by_subsampling(ε₀, rate) == ε``.

    Examples
    --------
    >>> e0 = subsampled_base_epsilon(0.5, 0.2)
    >>> round(amplify_by_subsampling(e0, 0.2), 12)
    0.5
    """
    epsilon = check_epsilon(epsilon)
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}.")
    return math.log1p(math.expm1(epsilon) / rate)


class PrivacyLedger:
    """A record of the releases made about one data set and of the privacy they spent.

    Every release appends a record (a dict); ``epsilon_spent`` is the total under
    basic sequential composition (the sum of the recorded increments).  A mechanism
    whose guarantee covers any number of releases (e.g. use-and-keep sketches) records
    its later releases with a zero increment.

    Shared, not copied, by :func:`sklearn.base.clone` and :func:`copy.deepcopy` (see the
    module docstring for why); pickling stores a snapshot.

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

    def record(self, mechanism, epsilon, n_items=None, note="", **extra):
        """Append a release that spent ``epsilon`` (an increment >= 0)."""
        epsilon = float(epsilon)
        if not math.isfinite(epsilon) or epsilon < 0:
            raise ValueError(f"epsilon increment must be finite and >= 0, got {epsilon!r}.")
        with self._lock:
            self.records.append(
                {"mechanism": mechanism, "epsilon": epsilon, "n_items": n_items, "note": note, **extra}
            )

    @property
    def epsilon_spent(self):
        """Total ε under sequential composition of the recorded releases."""
        return float(math.fsum(r["epsilon"] for r in self.records))

    @property
    def n_releases(self):
        """Number of recorded releases."""
        return len(self.records)

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        return {"records": [dict(r) for r in self.records]}

    def __setstate__(self, state):
        self.records = state["records"]
        self._lock = threading.Lock()

    def __repr__(self):
        return f"PrivacyLedger(n_releases={self.n_releases}, epsilon_spent={self.epsilon_spent:.6g})"
