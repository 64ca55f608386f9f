"""Privacy accounting: a ledger of releases with an optional budget, and the subsampling amplification formulas.

Composition
-----------
:class:`PrivacyLedger` composes its records by **basic sequential composition**: a set of
releases that are (ε_i, δ_i)-DP about the same individuals is (Σ ε_i, Σ δ_i)-DP, whatever
the mechanisms, their order and their adaptivity (Dwork and Roth 2014, Theorem 3.16).
That is what ``epsilon_spent``, ``delta_spent``, ``remaining()`` and the budget check use;
it is valid for every record, never less than any record justifies.  Tighter
compositions (privacy-loss distributions, Rényi DP) need a model of every mechanism;
the estimators use them *inside* one release where they have one (e.g. DP-SGLD's
iterations, AdaSSP's Gaussian releases) and record the composed (ε, δ) of the release.

Budget and refusal
------------------
With ``budget=(ε, δ)`` a record that would take the composed totals above the budget is
refused with :class:`~sklearn_bayes.exceptions.BudgetExceededError`, atomically: the check
and the record are one step under the ledger's lock (one ``BEGIN IMMEDIATE`` transaction
for a file), so two threads or processes cannot both pass the check on the same total.
The estimators reserve their releases (``_PrivateLinearBase._check_budget``, the sketch's
``_charge``) before any noise is bound, so a refusal leaves them unchanged.

Sharing under :func:`sklearn.base.clone`, copies, pickles and processes
------------------------------------------------------------------------
A :class:`PrivacyLedger` passed to an estimator as its ``ledger`` parameter is *shared*,
not copied, by :func:`sklearn.base.clone`, :func:`copy.copy` and :func:`copy.deepcopy`
(they return the ledger itself).  This is the sound choice: clones are fitted by model
selection tools (``GridSearchCV``, ``cross_val_score``) on subsets of the *same*
individuals' data, so the privacy losses of all their releases compose sequentially
and must be added up in one place.  Each estimator also keeps its own per-stream
ledger (``ledger_``), reset by ``fit``.

*With a file* (``path=...``) the ledger is the file: pickling stores the path, an
unpickled ledger (a joblib process worker, a later Python session) reopens the same
file, and every process records into and reads the same budget.  An unpickled ledger
whose file is missing or empty is refused (``OSError`` / ``ValueError`` naming ``path``):
it never starts a new, empty ledger with the old budget.

*In memory* (no ``path``) a ledger lives in one process.  Pickling stores a snapshot.
An estimator records into its *shared* ledger through :meth:`PrivacyLedger.record_shared`
(and the estimators' reservations), which follow this rule:

* a snapshot unpickled in the process where its original is still alive forwards the
  record to the original (a pickle round trip in one process loses nothing) and keeps it
  too (it shows, and a pickle of it carries, what was released through it);
* a snapshot unpickled in the process where its original *died* holding exactly the
  snapshot's records (compared by their ids) takes the original's place, once: nothing
  was recorded that it does not hold (a pickle round trip that drops the original);
* otherwise -- a joblib process worker, a ``fork``-ed child holding a copy of the
  ledger, an estimator loaded after its ledger is gone -- the release is **refused**
  before any noise is drawn, with :class:`~sklearn_bayes.exceptions.DetachedLedgerError`
  naming ``path=``.  Recording into the copy would let process-parallel model
  selection spend a budget the caller's ledger never sees (the warning this replaced
  could not even be caught in the parent); accounting in the parent would need the
  workers to send their records back, which joblib does not offer for a failed or
  discarded fit.  A file is the sound way to share a budget between processes.

A ledger's own :meth:`PrivacyLedger.record` always records locally (the per-stream
``ledger_`` of a copied sketch is a fork, see below).

Forks
-----
Every record carries a unique ``"id"``.  When an estimator with released state is
copied (``copy.deepcopy``, pickling), the copy and the original are *forks*: both
answer queries about the same individuals, so their releases compose.  A copy's
ledger starts with the records of the common history (the same ids) and then goes
its own way; :meth:`PrivacyLedger.compose` adds the records of several ledgers,
counting each record (hence the common history) once.
"""

import collections
import fractions
import hashlib
import math
import numbers
import os
import threading
import uuid
import weakref

import numpy as np

from sklearn_bayes.exceptions import BudgetExceededError, DetachedLedgerError
from sklearn_bayes.privacy._core._decimal import decimal_sum as _decimal_sum
from sklearn_bayes.utils import check_epsilon
from sklearn_bayes.utils._fork import register_child_hook, register_guard

__all__ = ["PrivacyLedger", "amplify_by_subsampling", "log1p_exp", "subsampled_base_epsilon"]


def _check_rate(rate):
    """``rate`` as a float in (0, 1], naming it (a bool or a string is not a rate)."""
    if isinstance(rate, (bool, np.bool_)) or not isinstance(rate, numbers.Real):
        raise TypeError(f"rate must be a real number in (0, 1], got {type(rate).__name__} {rate!r}.")
    if not 0 < rate <= 1:
        raise ValueError(f"rate must be in (0, 1], got {rate!r}.")
    return float(rate)


#: Relative rounding margin of :func:`amplify_by_subsampling` (8 units in the last place): the
#: formulas' few correctly-rounded-to-an-ulp steps stay well inside it.
_MARGIN = 2.0**-50


def amplify_by_subsampling(epsilon, rate):
    """ε of an ε-DP mechanism run on a Poisson subsample with inclusion probability ``rate``.

    ``ln(1 + rate (e^ε - 1))`` for neighbouring data sets differing by the presence of
    one element (*Privacy Amplification by Subsampling: Tight Analyses via Couplings
    and Divergences*, Balle, Barthe and Gaboardi 2018).  ``epsilon = 0`` gives 0.
    Computed in log space: no overflow for any finite ε.

    The result is what a ledger records, so it is rounded **up**: an upper bound of the exact
    value (a positive ε never gives 0, even where the exact value is below every float), at most
    ``epsilon``, and within ``2**-50`` relatively (plus ``2**-50 (ε - ln ρ)`` absolutely above
    ``ε = 700``, plus two subnormals) of the exact value.

    Examples
    --------
    >>> round(amplify_by_subsampling(1.0, 0.1), 6)
    0.158565
    >>> amplify_by_subsampling(1.0, 1.0)
    1.0
    >>> amplify_by_subsampling(1e-300, 1e-300) > 0  # the exact 1e-600 is below every float
    True
    """
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, numbers.Real):
        raise TypeError(f"epsilon must be a real number >= 0, got {type(epsilon).__name__} {epsilon!r}.")
    rate = _check_rate(rate)
    if not epsilon >= 0:  # a negative ε would come back negative, a nan would pass every check
        raise ValueError(f"epsilon must be >= 0 (or math.inf), got {epsilon!r}.")
    epsilon = float(epsilon)
    if epsilon == 0:
        return 0.0
    if rate == 1 or math.isinf(epsilon):
        return epsilon
    if epsilon < 700.0:  # direct formula: most accurate, and e^ε is finite
        value = math.log1p(rate * math.expm1(epsilon))
        # expm1, the product and log1p are each within an ulp or so (log1p's condition number is
        # at most 1); a product that underflowed lost at most a subnormal
        bound = value * (1.0 + _MARGIN) + 2 * 5e-324
    else:
        log_rate = math.log(rate)
        value = log1p_exp(log_rate + _log_expm1(epsilon))
        # the argument ln ρ + ln(e^ε - 1) is within 2**-52 (ε - ln ρ) of its exact value, and the slope
        # of log1p_exp, e^x / (1 + e^x), is at most min(1, log1p_exp(x)); log1p_exp adds under 2 ulps
        bound = value * (1.0 + 2.0**-52) + min(1.0, value) * 2.0**-51 * (epsilon - log_rate)
    return min(math.nextafter(bound, math.inf), epsilon)


def subsampled_base_epsilon(epsilon, rate):
    """Inverse of :func:`amplify_by_subsampling`: the ε₀ the mechanism may use on the subsample.

    ``ln(1 + (e^ε - 1) / rate)``, so that ``amplify_by_subsampling(ε₀, rate) == ε`` up to rounding;
    computed in log space (``ε = 710`` or ``rate = 1e-300`` do not overflow).  Lowered by as many
    units in the last place as it takes for ``amplify_by_subsampling(ε₀, rate) <= ε`` to hold
    exactly (that rounds up), so that a mechanism run with ``ε₀`` is charged at most ``ε``: a
    budget of exactly ``ε`` admits it.

    Examples
    --------
    >>> e0 = subsampled_base_epsilon(0.5, 0.2)
    >>> round(amplify_by_subsampling(e0, 0.2), 12)
    0.5
    >>> amplify_by_subsampling(e0, 0.2) <= 0.5
    True
    """
    epsilon = check_epsilon(epsilon)
    rate = _check_rate(rate)
    if rate == 1:
        return epsilon
    base = None
    if epsilon < 700.0:
        ratio = math.expm1(epsilon) / rate
        if math.isfinite(ratio):  # direct formula: most accurate
            base = math.log1p(ratio)
    if base is None:
        base = log1p_exp(_log_expm1(epsilon) - math.log(rate))
    if amplify_by_subsampling(base, rate) <= epsilon:
        return base
    # the largest float in [ε, base) that amplifies to at most ε (ε itself does: ρ <= 1), by
    # doubling steps down from base, then bisection between the last step that failed and the one that held
    hi, step = base, math.ulp(base)
    lo = max(base - step, epsilon)
    while lo > epsilon and amplify_by_subsampling(lo, rate) > epsilon:
        hi, step = lo, 2.0 * step
        lo = max(base - step, epsilon)
    while True:
        mid = lo + (hi - lo) / 2.0
        if not lo < mid < hi:
            return lo
        if amplify_by_subsampling(mid, rate) <= epsilon:
            lo = mid
        else:
            hi = mid


def _log_expm1(x):
    """``log(e^x - 1)`` for ``x > 0`` without overflow (``x + log1p(-e^{-x})`` for large x)."""
    return math.log(math.expm1(x)) if x < 30.0 else x + math.log1p(-math.exp(-x))


def log1p_exp(x):
    """``log(1 + e^x)`` without overflow (softplus)."""
    return math.log1p(math.exp(x)) if x < 30.0 else x + math.log1p(math.exp(-x))


#: The in-memory ledgers alive in this process, by id: an unpickled snapshot forwards its
#: shared records to its original through this (weak references: nothing is kept alive).
_LIVE_LEDGERS = weakref.WeakValueDictionary()
#: Pickled in-memory ledgers of this process that died: id -> (pid, digest of their record ids
#: at death).  A snapshot unpickled here whose records are exactly those takes the dead
#: ledger's place (nothing was recorded that it does not hold).  Bounded: an evicted entry
#: only makes such a snapshot refuse.
_DEAD_LEDGERS = collections.OrderedDict()
_MAX_DEAD = 4096
_REGISTRY_LOCK = threading.Lock()
#: Every in-memory ledger of this process (weak references), for a fork()-ed child (below).
_MEMORY_LEDGERS = weakref.WeakSet()


def _usable_ledgers_in_child():
    """In a ``fork()``-ed child: a ledger lock held by a parent thread at the fork is replaced.

    That thread does not exist in the child, so the lock would never be released.  It may have
    been half-way through a record or a settle (the records changed, the running totals not
    yet): the totals are recomputed from the records, exactly.
    """
    for ledger in list(_MEMORY_LEDGERS):
        lock = getattr(ledger, "_lock", None)
        if lock is not None and lock.locked() and getattr(ledger, "_records", None) is not None:
            ledger._lock = threading.Lock()
            ledger._eps_total, ledger._delta_total = _record_amounts(ledger._records)


register_guard(globals(), "_REGISTRY_LOCK")
register_child_hook(_usable_ledgers_in_child)


def _ids_digest(records):
    h = hashlib.sha256()
    for r in records:
        h.update(str(r.get("id")).encode("utf-8", "surrogatepass") + b"\0")
    return h.hexdigest()


def _note_dead(uid, pid, records):
    """Finalizer of a pickled in-memory ledger: remember what it held when it died."""
    try:
        digest = _ids_digest(list(records))
    except Exception:  # pragma: no cover - a finalizer never raises
        return
    with _REGISTRY_LOCK:
        _DEAD_LEDGERS[uid] = (pid, digest)
        while len(_DEAD_LEDGERS) > _MAX_DEAD:
            _DEAD_LEDGERS.popitem(last=False)


def _is_real(value):
    """A real number for the ledger: not a bool (``True`` is not an amount of privacy), not a string."""
    return (not isinstance(value, (bool, np.bool_, str, bytes))
            and (isinstance(value, (int, float)) or hasattr(value, "__float__")))


def _as_float(value, what, up):
    """``value`` as a float rounded **up** (``up=True``: an amount spent) or **down** (a budget).

    A float is itself; an int, ``Fraction`` or ``Decimal`` that no float equals is rounded to the
    neighbouring float in the safe direction (``Fraction(1, 10**400)`` spent is ``5e-324``, never
    ``0.0``).  A value beyond the float range is refused naming ``what``.
    """
    try:
        out = float(value)
    except OverflowError:
        raise ValueError(f"{what} must be finite, got a {type(value).__name__} beyond the float range "
                         "(about 1.8e308).") from None
    if isinstance(value, float) or not math.isfinite(out):
        return out
    try:
        exact = fractions.Fraction(value)
    except (TypeError, ValueError, OverflowError):  # a type Fraction cannot read: as float() gives it
        return out
    if up and exact > fractions.Fraction(out):
        return math.nextafter(out, math.inf)
    if not up and exact < fractions.Fraction(out):
        return math.nextafter(out, -math.inf)
    return out


def _check_budget_arg(budget):
    """``None`` or a pair (ε >= 0, 0 <= δ <= 1) of floats, naming ``budget`` otherwise."""
    if budget is None:
        return None
    try:
        eps, delta = budget
    except (TypeError, ValueError):
        raise TypeError(f"budget must be None or a pair (epsilon, delta), got {budget!r}.") from None
    out = []
    for name, value in (("epsilon", eps), ("delta", delta)):
        if not _is_real(value):
            raise TypeError(f"budget {name} must be a real number, got {value!r}.")
        out.append(_as_float(value, f"budget {name}", up=False))
    eps, delta = out
    if not (eps >= 0):
        raise ValueError(f"budget epsilon must be >= 0 (math.inf for no limit), got {budget!r}.")
    if not (0.0 <= delta <= 1.0):
        raise ValueError(f"budget delta must be in [0, 1], got {budget!r}.")
    return (eps, delta)


def _make_record(mechanism, epsilon, n_items, note, extra):
    # the same types as the budget: a bool would be recorded as 1.0 or 0.0 without a word
    if not _is_real(epsilon):
        raise TypeError(f"epsilon increment must be a real number, got {type(epsilon).__name__} {epsilon!r}.")
    if "delta" in extra and not _is_real(extra["delta"]):
        raise TypeError(f"delta increment must be a real number, got {type(extra['delta']).__name__} "
                        f"{extra['delta']!r}.")
    epsilon = _as_float(epsilon, "epsilon increment", up=True)
    if not math.isfinite(epsilon) or epsilon < 0:
        raise ValueError(f"epsilon increment must be finite and >= 0, got {epsilon!r}.")
    epsilon += 0.0  # -0.0 is recorded as 0.0
    if "delta" in extra:
        delta = _as_float(extra["delta"], "delta increment", up=True)
        if not 0.0 <= delta <= 1.0:
            raise ValueError(f"delta increment must be in [0, 1], got {delta!r}.")
        extra["delta"] = delta
    extra.setdefault("id", uuid.uuid4().hex)
    return {"mechanism": mechanism, "epsilon": epsilon, "n_items": n_items, "note": note, **extra}


def _total_as_float(total):
    """An exact total as a float: ``inf`` above the float range (two records of 1.7e308), never an ``OverflowError``."""
    try:
        return float(total)
    except OverflowError:
        return math.inf


def _record_amounts(records):
    """The exact (ε, δ) sums of ``records`` under the rule of :func:`_decimal_sum`."""
    records = list(records)
    return (_decimal_sum(r["epsilon"] for r in records),
            _decimal_sum(r.get("delta", 0.0) or 0.0 for r in records))


def _left(budget, spent):
    """``budget - spent`` under the same decimal rule, never below 0."""
    b = _decimal_sum([budget])
    return math.inf if b == math.inf else max(float(b - _decimal_sum([spent])), 0.0)


class PrivacyLedger:
    """A record of the releases made about one data set, of the privacy they spent, and its budget.

    Every release appends a record (a dict with a unique ``"id"``, its ``"epsilon"`` and,
    when it has one, its ``"delta"``).  The totals are composed by basic sequential
    composition (see Notes).  A mechanism whose guarantee covers any number of releases
    (e.g. use-and-keep sketches) records its later releases with a zero increment.

    Read the User Guide: :ref:`privacy_budget`.

    Parameters
    ----------
    budget : (float, float) or None, default=None
        The total ``(epsilon, delta)`` the releases recorded here may spend.  A release
        that would exceed it is refused with
        :class:`~sklearn_bayes.exceptions.BudgetExceededError` before any noise is drawn.
        ``None``: no limit (the ledger only records).  Fixed for the ledger's life; for a
        file it is stored in the file when the file is created.
    path : str, os.PathLike or None, default=None
        An SQLite file that holds the ledger, so that several processes (joblib workers
        of ``GridSearchCV``/``cross_val_score`` with ``n_jobs > 1``, separate Python
        sessions over weeks) record into and read one budget.  Created if absent (with
        ``budget=None`` a new file has no limit, and a ``UserWarning`` says so: a deleted or
        mistyped path must not silently start an unlimited ledger); an existing file keeps
        its budget (``budget=None`` adopts it, another budget is refused).  The file holds a random id, drawn when it is created: every access
        checks it and that the file holds at least the records this process saw, so a
        file replaced by another ledger (even with the same budget) or by an older copy
        is refused with a ``ValueError`` naming ``path``.  ``None``: the ledger lives in
        this process's memory, and a release recorded in a copy of it in another process
        is refused (:class:`~sklearn_bayes.exceptions.DetachedLedgerError`).

    Attributes
    ----------
    records : list of dict
        The records, oldest first (for a file: read from it at each access).
    budget : (float, float) or None
        The budget (read-only).
    path : str or None
        The absolute path of the file, or ``None``.

    Notes
    -----
    **Composition.**  ``epsilon_spent = Σ ε_i`` and ``delta_spent = Σ δ_i`` over the
    records (correctly rounded sums), basic sequential composition: valid for any
    mechanisms, composed in any order and adaptively.  A release recorded by an
    estimator is one record whose (ε, δ) is already the tight composition of its parts
    where the estimator has an exact accountant for them (e.g. the privacy-loss
    distribution of a posterior draw, ``dp-accounting`` for DP-SGLD); across records
    nothing tighter is claimed, so the totals are never less than basic composition
    justifies.  A release of (ε, δ) is accepted iff ``Σ ε_i + ε <= ε_budget`` and
    ``Σ δ_i + δ <= δ_budget``.  The sums are exact (each amount read as the decimal that
    prints it) and kept up to date as records are made or settled (for a file, in the
    transaction that writes them), so a release or a read of a total costs the same after
    ten or a million records.

    **Sharing.**  Shared, not copied, by :func:`sklearn.base.clone`, :func:`copy.copy`
    and :func:`copy.deepcopy`.  Pickling a ledger with a ``path`` pickles the path (the
    copy records into the same file); pickling an in-memory ledger stores a snapshot,
    whose shared records are forwarded to the original when it is alive in the same
    process and refused otherwise (see the module docstring for why).
    :meth:`compose` adds up the ledgers of forks (copies that went their own way),
    counting every record once.

    Examples
    --------
    >>> from sklearn_bayes import PrivacyLedger
    >>> ledger = PrivacyLedger()
    >>> ledger.record("query", 0.5, n_items=3)
    >>> ledger.record("query", 0.0, n_items=2, note="covered by Theorem 4")
    >>> ledger.epsilon_spent, ledger.n_releases
    (0.5, 2)
    >>> import copy
    >>> copy.deepcopy(ledger) is ledger
    True

    A budget refuses what would exceed it:

    >>> capped = PrivacyLedger(budget=(1.0, 1e-6))
    >>> capped.record("release", 0.75, delta=1e-7)
    >>> capped.remaining()
    (0.25, 9e-07)
    >>> capped.record("release", 0.5, delta=1e-7)
    Traceback (most recent call last):
    ...
    sklearn_bayes.exceptions.BudgetExceededError: release would exceed the budget ...
    """

    def __init__(self, budget=None, path=None):
        self._budget = _check_budget_arg(budget)
        self._lock = threading.Lock()
        self._uid = uuid.uuid4().hex
        self._pid = os.getpid()
        self._snapshot = False
        self._origin = None  # the id of the original of a snapshot
        self._origin_pid = None  # the process the original lived in
        self._finalizer = None
        if path is None:
            self._store = None
            self._records = []
            self._init_totals()
            _LIVE_LEDGERS[self._uid] = self
            _MEMORY_LEDGERS.add(self)
        else:
            from sklearn_bayes.privacy._core._ledger_sqlite import SQLiteStore

            if not isinstance(path, (str, bytes, os.PathLike)):
                raise TypeError(f"path must be None, a str or an os.PathLike, got {type(path).__name__}.")
            self._store = SQLiteStore(path, self._budget)
            self._budget = self._store.budget
            self._records = None
            self._init_totals()  # (unused: a file keeps its totals, see SQLiteStore.spent)

    # ------------------------------------------------------------------ properties
    @property
    def budget(self):
        """The ``(epsilon, delta)`` budget, or ``None`` (read-only)."""
        return self._budget

    @property
    def path(self):
        """The absolute path of the ledger's file, or ``None`` for an in-memory ledger."""
        return None if self._store is None else self._store.path

    @property
    def records(self):
        """The records, oldest first: a copy (changing it changes nothing in the ledger)."""
        return [dict(r) for r in self._snapshot_records()]

    @records.setter
    def records(self, value):
        # used to restore the per-stream ledger of a loaded sketch; a budget's records are not replaceable
        if self._store is not None:
            raise AttributeError("the records of a ledger file cannot be replaced.")
        if self._budget is not None:
            raise AttributeError("the records of a ledger with a budget cannot be replaced.")
        value = list(value)
        totals = _record_amounts(value)
        with self._lock:
            self._records[:] = value  # in place: a pickled ledger's finalizer holds this list
            self._eps_total, self._delta_total = totals
            self._mirrored = {}

    def _snapshot_records(self):
        """The records as they are now (a copy taken under the lock: threads may be recording)."""
        if self._store is not None:
            return self._store.records()
        with self._lock:
            return list(self._records)

    # ------------------------------------------------------------------ running totals
    # An in-memory ledger keeps the exact sums of its records (Fractions, the rule of
    # _decimal_sum) up to date where records are appended (_append, _append_shared), settled
    # (_settle, and _resettle in a snapshot holding a forwarded record), replaced (the records
    # setter) or restored (__setstate__, compose): reading a total or checking a budget is O(1),
    # not a sum over every record.  A file keeps them in its meta table, updated in the
    # transaction that changes the records (see SQLiteStore.spent).
    def _init_totals(self, records=()):
        self._eps_total, self._delta_total = _record_amounts(records)
        #: records this snapshot forwarded to its original (same dicts): id -> the amounts counted
        self._mirrored = {}
        #: the snapshots holding records forwarded to this ledger (to update at a settle)
        self._mirrors = weakref.WeakSet()

    def _exact_totals(self):
        """The exact ``(Σ ε_i, Σ δ_i)`` (Fractions) of the records, from one consistent state."""
        if self._store is not None:
            with self._store.transaction(immediate=False) as con:
                return self._store.spent(con)
        with self._lock:
            return self._eps_total, self._delta_total

    def _totals(self):
        eps, delta = self._exact_totals()
        return _total_as_float(eps), _total_as_float(delta)

    @property
    def epsilon_spent(self):
        """Total ε of the recorded releases (basic sequential composition: their sum)."""
        return self._totals()[0]

    @property
    def delta_spent(self):
        """Total δ of the recorded releases (basic sequential composition: their sum)."""
        return self._totals()[1]

    def remaining(self):
        """The ``(epsilon, delta)`` still available: the budget minus what was spent.

        ``(inf, inf)`` without a budget.  Both from one consistent read of the records.
        """
        if self._budget is None:
            return (math.inf, math.inf)
        eps, delta = self._totals()
        return (_left(self._budget[0], eps), _left(self._budget[1], delta))

    @property
    def n_releases(self):
        """Number of recorded releases."""
        if self._store is not None:
            return self._store.count()
        return len(self._records)

    # ------------------------------------------------------------------ recording
    def _refusal(self, owner, records, eps_spent, delta_spent):
        eps = _total_as_float(_decimal_sum(r["epsilon"] for r in records))
        delta = _total_as_float(_decimal_sum(r.get("delta", 0.0) or 0.0 for r in records))
        where = f"the ledger file path={self.path!r}" if self._store is not None else "this PrivacyLedger"
        what = owner or ", ".join(sorted({str(r["mechanism"]) for r in records}))
        b_eps, b_delta = self._budget
        return BudgetExceededError(
            f"{what} would exceed the budget of {where}: it asks epsilon={eps!r}, delta={delta!r}; "
            f"spent epsilon={eps_spent!r}, delta={delta_spent!r} of the budget (epsilon={b_eps!r}, "
            f"delta={b_delta!r}); remaining epsilon={_left(b_eps, eps_spent)!r}, "
            f"delta={_left(b_delta, delta_spent)!r}. Nothing was released or recorded."
        )

    def _check(self, owner, records, spent, added):
        """Raise if ``records`` (exact sums ``added``) on top of the exact totals ``spent`` would exceed the budget."""
        if self._budget is None:
            return
        if (spent[0] + added[0] > _decimal_sum([self._budget[0]])
                or spent[1] + added[1] > _decimal_sum([self._budget[1]])):
            raise self._refusal(owner, records, _total_as_float(spent[0]), _total_as_float(spent[1]))

    def _append(self, records, owner=None):
        """Check the budget and append ``records``, atomically (all or nothing)."""
        added = _record_amounts(records)
        if self._store is not None:
            with self._store.transaction() as con:
                spent = self._store.spent(con, write=True)
                self._check(owner, records, spent, added)
                self._store.insert(con, records)
                self._store.write_totals(con, (spent[0] + added[0], spent[1] + added[1]))
            return
        with self._lock:
            self._check(owner, records, (self._eps_total, self._delta_total), added)
            self._records.extend(records)
            self._eps_total += added[0]
            self._delta_total += added[1]

    def record(self, mechanism, epsilon, n_items=None, note="", **extra):
        """Append a release that spent ``epsilon`` (an increment >= 0) and, if given, ``delta``.

        ``extra`` items are stored in the record (``delta``, if given, is checked to be in
        [0, 1]); a unique ``id`` is drawn unless given (the same release recorded in two
        ledgers keeps one id).  With a budget, a record that would exceed it raises
        :class:`~sklearn_bayes.exceptions.BudgetExceededError` and is not made.
        """
        self._append([_make_record(mechanism, epsilon, n_items, note, extra)])

    def _shared_target(self, owner):
        """The ledger a release recorded through this shared ledger reaches, or refuse (see the module docstring)."""
        if self._store is not None:
            return self
        pid = os.getpid()
        if not self._snapshot and self._pid == pid:
            return self
        if self._snapshot and self._origin is not None:
            origin = _LIVE_LEDGERS.get(self._origin)
            if origin is not None and origin._pid == pid and not origin._snapshot:
                return origin
            if origin is None and self._origin_pid == pid and self._take_place_of_dead_origin(pid):
                return self
        how = ("an unpickled copy of its shared in-memory PrivacyLedger" if self._snapshot
               else "a copy of its shared in-memory PrivacyLedger inherited by a forked process")
        raise DetachedLedgerError(
            f"{owner} would record a release in {how} (e.g. in a joblib process worker with n_jobs > 1, "
            "or after saving and loading), which never reaches the ledger it was copied from: nothing was "
            "released. To account across processes give the ledger a file, PrivacyLedger(path=...), "
            "or fit with n_jobs=1 (or a thread backend)."
        )

    def _identity(self):
        """What this ledger stands for: its file, or the in-memory ledger its records reach.

        A snapshot whose original is alive in this process stands for the original (its shared
        records go there, see :meth:`_shared_target`); any other in-memory ledger for itself.
        """
        if self._store is not None:  # the file by its path and its random id (another file there is another ledger)
            return ("file", self._store.path, self._store.ledger_id)
        if self._snapshot and self._origin is not None:
            origin = _LIVE_LEDGERS.get(self._origin)
            if origin is not None and origin._pid == os.getpid() and not origin._snapshot:
                return ("memory", origin._uid)
        return ("memory", self._uid)

    def _ledger_id(self):
        """The id written into the bytes of a sketch bound to this ledger (``PrivateCountSketch.to_bytes``).

        ``"file:<ledger_id>"`` for a file (its random id, see ``SQLiteStore``), else
        ``"memory:<uid>"`` of the in-memory ledger its records reach (see :meth:`_identity`).
        """
        if self._store is not None:
            return "file:" + self._store.ledger_id
        return "memory:" + self._identity()[1]

    def _is_ledger(self, ledger_id):
        """Whether ``ledger_id`` (from :meth:`_ledger_id`, maybe in another process) names this ledger.

        A file: its id, checked against the file as it is now (a replaced file is refused).  In
        memory: this ledger, or the original a snapshot of it was pickled from.
        """
        if self._store is not None:
            with self._store.transaction(immediate=False):  # the file is still the one opened
                pass
            return ledger_id == "file:" + self._store.ledger_id
        ids = {self._uid, self._identity()[1]}
        if self._snapshot and self._origin is not None:
            ids.add(self._origin)
        return ledger_id in {"memory:" + u for u in ids}

    def _is_same_budget(self, other):
        """Whether releases recorded through ``self`` and ``other`` land in one ledger (one budget)."""
        return other is self or (isinstance(other, PrivacyLedger) and self._identity() == other._identity())

    def _take_place_of_dead_origin(self, pid):
        """A snapshot whose original died in this process holding exactly its records becomes the ledger."""
        with _REGISTRY_LOCK, self._lock:
            if _LIVE_LEDGERS.get(self._origin) is not None:  # another snapshot took its place meanwhile
                return False
            if _DEAD_LEDGERS.get(self._origin) != (pid, _ids_digest(self._records)):
                return False
            del _DEAD_LEDGERS[self._origin]
            self._uid, self._pid, self._snapshot, self._origin = self._origin, pid, False, None
            _LIVE_LEDGERS[self._uid] = self
            return True

    def record_shared(self, owner, mechanism, epsilon, n_items=None, note="", **extra):
        """:meth:`record` for the ledger an estimator was *given* (its ``ledger`` parameter).

        Checks the budget and records atomically in the ledger this one stands for: itself,
        its file, or -- for an unpickled snapshot whose original is alive in this process --
        the original.  Refuses with :class:`~sklearn_bayes.exceptions.DetachedLedgerError`
        (naming ``path=``) when the record could not reach the caller's ledger.
        """
        rec = _make_record(mechanism, epsilon, n_items, note, extra)
        self._append_shared([rec], owner)

    def _append_shared(self, records, owner):
        """Append ``records`` to the ledger this one stands for; a snapshot keeps them too.

        A snapshot that forwarded a record to its original holds the same record (the same
        dict: settling it settles both), so it shows what was released through it, a pickle
        of it carries that history, and -- should the original die having recorded only
        through it -- it still holds exactly the original's records and can take its place.
        """
        target = self._shared_target(owner)
        if target is not self:
            target._mirrors.add(self)  # before the records exist there: a settle of them updates us
        target._append(records, owner)
        if target is not self:
            with self._lock:
                self._records.extend(records)
                for r in records:  # their amounts now (a settle that ran meanwhile is counted here)
                    amounts = _record_amounts([r])
                    self._mirrored[r["id"]] = amounts
                    self._eps_total += amounts[0]
                    self._delta_total += amounts[1]
        return target

    def _resettle(self, rid, amounts):
        """A record this snapshot forwarded was settled in its original: count its new amounts."""
        with self._lock:
            old = self._mirrored.get(rid)
            if old is None:
                return
            self._mirrored[rid] = amounts
            self._eps_total += amounts[0] - old[0]
            self._delta_total += amounts[1] - old[1]

    def _reserve(self, owner, entries):
        """Check and record the releases ``entries`` = [(mechanism, ε, δ)] before they are drawn.

        Atomic (all or nothing).  Returns ``(ledger, ids)``: the ledger that holds the
        records (see :meth:`record_shared`) and their ids, for :meth:`_settle`.
        """
        records = [
            _make_record(m, eps, None, "reserved before the release was drawn", {"delta": delta})
            for m, eps, delta in entries
        ]
        target = self._append_shared(records, owner)
        return target, [r["id"] for r in records]

    def _settle(self, rid, epsilon, delta, note):
        """Set the note of a reserved record (and lower its amounts to those actually spent)."""
        epsilon, delta = float(epsilon), float(delta)
        if self._store is not None:
            with self._store.transaction() as con:
                self._store.settle(con, rid, epsilon, delta, note)
            return
        with self._lock:
            for r in reversed(self._records):  # a reservation is recent
                if r["id"] == rid:
                    if epsilon > r["epsilon"] or delta > r.get("delta", 0.0):
                        raise ValueError("a reserved record can only be lowered.")
                    old = _record_amounts([r])
                    r.update(epsilon=epsilon, delta=delta, note=note)
                    new = _record_amounts([r])
                    self._eps_total += new[0] - old[0]
                    self._delta_total += new[1] - old[1]
                    self._mirrored.pop(rid, None)  # (a snapshot settling a record it holds itself)
                    # the snapshots holding this record (the same dict) count it anew, under this
                    # lock so that two settles of one record reach them in order (lock order:
                    # a ledger, then its snapshots; a snapshot never holds its lock calling here)
                    for snapshot in list(self._mirrors):
                        if snapshot is not self:
                            snapshot._resettle(rid, new)
                    return
        raise KeyError(rid)

    @classmethod
    def compose(cls, *ledgers):
        """A new (in-memory, budget-free) ledger with the records of all ``ledgers``, each record (by ``id``) once.

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
                    out._records.append(dict(r))
        out._eps_total, out._delta_total = _record_amounts(out._records)
        return out

    # ------------------------------------------------------------------ copies
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __getstate__(self):
        if self._store is not None:
            return {"path": self._store.path, "budget": self._budget, "ledger_id": self._store.ledger_id,
                    "seen": self._store.seen}
        if not self._snapshot and self._finalizer is None:
            # remember what this ledger holds when it dies: a snapshot of it may take its place
            self._finalizer = weakref.finalize(self, _note_dead, self._uid, self._pid, self._records)
            self._finalizer.atexit = False  # nothing to remember when the interpreter exits
        return {
            "records": [dict(r) for r in self._snapshot_records()],
            "budget": self._budget,
            "origin": self._origin if self._snapshot else self._uid,
            "pid": self._origin_pid if self._snapshot else self._pid,
        }

    def __setstate__(self, state):
        self._lock = threading.Lock()
        self._uid = uuid.uuid4().hex
        self._pid = os.getpid()
        self._budget = state.get("budget")
        if "path" in state:  # a ledger file: reopen it (the same budget, checked)
            from sklearn_bayes.privacy._core._ledger_sqlite import SQLiteStore

            # its file, never a new one; the same file (its id; an older pickle's adopts the file's)
            self._store = SQLiteStore(state["path"], self._budget, create=False, ledger_id=state.get("ledger_id"),
                                      seen=state.get("seen", 0))
            self._records = None
            self._init_totals()
            self._snapshot = False
            self._origin = None
            self._origin_pid = None
            self._finalizer = None
            return
        self._store = None
        self._records = state["records"]
        self._init_totals(self._records)
        _MEMORY_LEDGERS.add(self)
        self._snapshot = True  # a copy: see _shared_target for where its shared records go
        self._origin = state.get("origin")
        self._origin_pid = state.get("pid")
        self._finalizer = None

    def __repr__(self):
        try:
            parts = [f"n_releases={self.n_releases}"]
            eps, delta = self._totals()
            parts += [f"epsilon_spent={eps:.6g}", f"delta_spent={delta:.6g}"]
        except (OSError, ValueError) as exc:  # a ledger file that is locked, missing or corrupt: repr never raises
            parts = [f"unreadable: {type(exc).__name__}"]
        if self._budget is not None:
            parts.append(f"budget=({self._budget[0]:.6g}, {self._budget[1]:.6g})")
        if self._store is not None:
            parts.append(f"path={self._store.path!r}")
        return f"PrivacyLedger({', '.join(parts)})"
