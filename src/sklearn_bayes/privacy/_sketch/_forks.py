"""Copies of a running sketch are forks: the registry of live forks and the charging of releases.

A copy of a sketch marks its live source as a fork too (see ``PrivateCountSketch``, Notes,
"Copies are forks"); from their next release on, both charge their history afresh.
:class:`_ForkedStream` holds that rule for :class:`PrivateCountSketch`: its copy protocol
(``__getstate__``, ``__copy__``, ``__setstate__``), its fork ids and :meth:`_ForkedStream._charge`,
the one place a release is recorded in the ledgers.
"""

import copy
import math
import os
import uuid
import warnings
import weakref

import numpy as np

from sklearn_bayes.exceptions import DetachedLedgerError, SeededNoiseWarning
from sklearn_bayes.privacy._core import amplify_by_subsampling
from sklearn_bayes.utils import instance_lock
from sklearn_bayes.utils._validation import _os_seeded_generator, external_stacklevel


#: How many generations up a process looks for the process that pickled a copy (see :func:`_ancestor_pids`).
MAX_ANCESTRY = 64


def _ancestor_pids():
    """The process ids of this process's ancestors, its parent first (Linux: read from ``/proc``).

    A copy pickled by any of them is its ancestor's copy: a ``multiprocessing`` worker of the
    ``"forkserver"`` start method (the default on Linux from Python 3.14) is a child of the fork
    server, itself a child of the process that pickled the task; a Dask worker is a child of its
    nanny.  Where ``/proc`` cannot be read, only the parent is known.
    """
    pids, pid = [], os.getppid()
    while pid > 1 and len(pids) < MAX_ANCESTRY:
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            pid = int(stat[stat.rindex(b")") + 2:].split()[1])  # (the name, in parentheses, may hold spaces)
        except (OSError, ValueError, IndexError):
            break
    return pids


#: The live sketches of this process by fork id, to mark an original as a fork when a copy of
#: it is made (``__setstate__``); weak references, so nothing is kept alive.
_LIVE_FORKS = weakref.WeakValueDictionary()


def _live_forks_of(sketch):
    """The other live sketches of ``sketch``'s stream in this process (each once)."""
    out, seen = [], {id(sketch)}
    for ref in _LIVE_FORKS.valuerefs():  # (a list made at once: safe while other threads add forks)
        fork = ref()
        if fork is not None and id(fork) not in seen and getattr(fork, "stream_id_", None) == sketch.stream_id_:
            seen.add(id(fork))
            out.append(fork)
    return out


def _mark_inherited_copies():
    """In a ``fork()``-ed child: every running sketch it inherited is its parent's copy (``_mark_copy``).

    The child holds the parent's sketches with their generators *in their state*: unmarked, an
    OS-seeded sketch would draw in the child the very noise its original draws in the parent
    (their answers would differ by exactly their counts' difference) and its next release would
    not be charged afresh.  Marked, the child's copy is a new fork with a fresh generator from the
    operating system (a seeded stream replays and warns, as for any copy), and it is the parent's
    copy (``_parents_copy = "fork"``): like a copy its parent pickled, it refuses to release unless
    its stream is bound to a ledger file (:meth:`_ForkedStream._check_attached`), since its original
    in the parent never sees its release nor the noise it keeps.  Consuming elements and a new
    stream (``fit``) in the child are allowed.  The original, in the parent, is not marked.  Runs
    single-threaded in the child and takes no lock (a lock held by a parent thread at the fork is
    never released in the child).
    """
    seen = set()
    for sketch in list(_LIVE_FORKS.values()):
        if id(sketch) in seen or "ledger_" not in sketch.__dict__:
            continue
        seen.add(id(sketch))
        try:
            # where its original lives: the parent, or where the parent's own copy's original lives
            origin = getattr(sketch, "_origin_pid", None) if getattr(sketch, "_parents_copy", False) else os.getppid()
            sketch._mark_copy(source_alive=False)
            sketch._parents_copy, sketch._origin_pid = "fork", origin
        except Exception:  # pragma: no cover - never fail a fork; the sketch keeps its state
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_mark_inherited_copies)


class _ForkedStream:
    """Mixin of a sketch whose copies are forks (left of ``BaseEstimator``).

    Holds no state of its own: it uses the sketch's ``ledger_``, ``stream_id_``, ``_fork_id``,
    ``_fork_pending``, ``_chain_spent0``, ``_charged``, ``_shared_ledger``, ``_rng``,
    ``_os_seeded``, ``_replays_noise`` and its
    frozen ``sampling_rate`` and ``mechanism`` (``_fp``).
    """

    def __getstate__(self):
        # A consistent snapshot: taken holding the instance's lock (no call of another thread is
        # half-way through the table), with private copies of the arrays that calls mutate in
        # place, so pickle and deepcopy never see a table updated after the snapshot.
        with instance_lock(self):
            # a new dict: BaseEstimator.__getstate__ returns the live __dict__ itself (object.__getstate__),
            # which the lines below and a __setstate__ given it would edit (review HSK4 F1: in a child,
            # clone(B).__setstate__(B.__getstate__()) popped B's parent's-copy refusal); taken under the lock,
            # so a concurrent refit cannot change it while the pickler walks it (HSK4 F2)
            state = dict(super().__getstate__())
            for name in ("table_", "uses_"):
                if isinstance(state.get(name), np.ndarray):
                    state[name] = state[name].copy()
            if state.get("_bound_pool") is not None and not isinstance(state["_bound_pool"], list):
                state["_bound_pool"] = copy.copy(state["_bound_pool"])  # updated in place by queries (HSK4 F2)
            if "ledger_" in state:
                # who made the snapshot: a copy loaded by a descendant of this process is refused (_charge);
                # _parents_copy travels along and holds only where it was set (see __setstate__)
                state["_pickled_by_pid"] = os.getpid()
            return state

    def __copy__(self):
        """``copy.copy``: a fitted sketch is copied in full, exactly like ``copy.deepcopy``.

        A shallow copy would share ``table_`` and ``uses_`` (mutated in place by both objects'
        updates and queries) and the noise generator while each object counted its own spend:
        two objects with one privacy state.  The copy is a fork (see Notes of the class).  An
        unfitted sketch holds only parameters and is copied shallowly, as usual.
        """
        if "ledger_" in self.__dict__:
            return copy.deepcopy(self)
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __setstate__(self, state):
        # A copy of a running stream (pickle, copy.deepcopy, copy.copy) is a *fork*: the copy
        # and its original answer about the same individuals, so from their next release on
        # both are charged afresh.  The copy knows it is one; its original, when it is alive
        # in this process, is found by its fork id and marked too.  (Pickling alone marks
        # nothing: ``pickle.dumps`` is not a copy until it is loaded.)
        state = dict(state)  # never edit the caller's dict (it may be another sketch's __dict__: HSK4 F1)
        pickled_by = state.pop("_pickled_by_pid", None)
        inherited = state.pop("_parents_copy", False)
        origin = state.pop("_origin_pid", None)  # where the original of a parent's copy lives
        super().__setstate__(state)
        if "ledger_" in self.__dict__:
            # a snapshot made by this process's parent or another ancestor (a joblib / multiprocessing worker
            # given a fitted sketch: FeatureUnion or ColumnTransformer with n_jobs > 1; a 'forkserver' worker is
            # its pickler's grandchild), whose original may answer there, or a copy made here of such a copy
            here, pid = pickled_by == os.getpid(), os.getpid()
            self._origin_pid = None
            if inherited and here:  # how its source got here ("fork" or "pickle"; True: pickled by HQM's version)
                self._parents_copy, self._origin_pid = "pickle" if inherited is True else inherited, origin
            elif inherited and origin is not None and origin != pid and origin in _ancestor_pids():
                # a refused copy pickled by another descendant of its original's process, e.g. a sibling worker
                # (review HSK3 F5: it answered there); back in its original's process it is a fork like any copy
                self._parents_copy, self._origin_pid = "pickle", origin
            elif pickled_by is not None and not here and pickled_by in _ancestor_pids():
                self._parents_copy, self._origin_pid = "pickle", pickled_by
            else:
                self._parents_copy = False
            self._mark_copy()

    def _mark_copy(self, copied_generator=True, source_alive=True):
        """This object is a copy (fork id of its source): mark its live source, then become a new fork.

        The noise of a copy (see the class Notes, "Copies are forks"), by the ``random_state``
        its stream was started with:

        * ``None`` (the production setting): the copy gets a generator seeded afresh by the
          operating system.  A generator copied with its state would draw the same noise as
          its source, and the two forks' answers about different data would then differ by
          exactly the difference of their counts.
        * an int, a ``Generator`` or a ``RandomState`` (noise seeded by the caller): the copy
          keeps its source's generator state, so seeded experiments stay reproducible, and
          its first release warns :class:`~sklearn_bayes.exceptions.SeededNoiseWarning` that
          it replays its source's noise -- as :func:`~sklearn_bayes.utils.check_privacy_random_state`
          warns for an estimator fitted with a copied generator (clone, deepcopy, pickle).

        ``copied_generator=False`` when the copy's generator was made from its own
        ``random_state`` (``from_bytes``): nothing is replayed.  ``source_alive=False`` when the
        source cannot be in this process (a ``fork()``-ed child: the object is its own copy).
        """
        if copied_generator:
            if getattr(self, "_os_seeded", self.random_state is None):
                self._rng = _os_seeded_generator()  # (reseeded in a fork()-ed child too, as its source's was)
                self._replays_noise = False
            else:
                self._replays_noise = True
        else:
            self._replays_noise = False
        source = _LIVE_FORKS.get(self._fork_id) if source_alive else None
        if source is self or getattr(source, "stream_id_", None) != self.stream_id_:
            source = None
        # the source by its fork id; else (review HSK3 F1: a copy returned by a worker, whose fork id is the
        # worker's; the pickle of a deep copy since gone) every live sketch of this stream in this process
        forks = [source] if source is not None else (_live_forks_of(self) if source_alive else [])
        linked = False
        for fork in forks:
            # under the fork's lock: a call of the fork that fails and rolls back its
            # __dict__ must not undo the mark (its next release would not be charged afresh)
            with instance_lock(fork):
                if getattr(fork, "stream_id_", None) != self.stream_id_ or "ledger_" not in fork.__dict__:
                    continue
                fork._fork_pending = True
                if not linked:
                    # one ledger for the forks of this process (as deepcopy's): an unpickled or
                    # loaded copy's releases count in its source's epsilon_spent_ (review HQW F1:
                    # 400 loaded copies averaged the noise away while each reported one release)
                    self.ledger_, linked = fork.ledger_, True
                if not getattr(self, "_parents_copy", False) and getattr(fork, "_parents_copy", False):
                    # a copy of the parent's copy is the parent's copy (review HSK3 F4: from_bytes(b.to_bytes())
                    # in a child answered); a copy keeps its own status ("pickle") if it has one
                    self._parents_copy, self._origin_pid = fork._parents_copy, getattr(fork, "_origin_pid", None)
        self._new_fork()

    def _warn_if_same_noise(self, other):
        """Warn (``SeededNoiseWarning``) when a merged shard was seeded like this one (review HQW F4).

        Shards fitted with the same int ``random_state`` (or generators in the same state) draw the
        same noise: their answers differ by exactly their counts' difference.
        """
        if getattr(self, "_os_seeded", True) or getattr(other, "_os_seeded", True):
            return
        a, b = self.random_state, other.random_state
        same = isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)) and int(a) == int(b)
        try:
            same = same or repr(self._rng.bit_generator.state) == repr(other._rng.bit_generator.state)
        except AttributeError:  # a RandomState
            same = same or repr(self._rng.get_state()) == repr(other._rng.get_state())
        if same:
            warnings.warn(
                "merge: both shards' noise was seeded with the same random_state (or generators in the same "
                "state), so they drew the same noise: their answers differ by exactly their counts' difference. "
                "Use random_state=None (or different seeds) for private shards.",
                SeededNoiseWarning,
                stacklevel=external_stacklevel(),
            )

    def _new_fork(self):
        """Give this object a fresh fork id: its next release charges its history afresh."""
        self._fork_id = uuid.uuid4().hex
        self._fork_pending = True
        _LIVE_FORKS[self._fork_id] = self

    def _warn_if_replaying(self):
        """Warn at the first release of a copy that draws its source's noise again (see :meth:`_mark_copy`).

        Called before the release is recorded; the caller clears ``_replays_noise`` once it is
        (with warnings turned into errors, the release is refused and changes nothing).
        """
        if getattr(self, "_replays_noise", False):
            warnings.warn(
                "PrivateCountSketch is a copy (copy, deepcopy or pickle) of a sketch whose noise was seeded by "
                "its random_state: its generator state already drew privacy noise in this process, so this "
                "copy replays its source's noise, which then cancels between the two forks' releases (their "
                "answers differ by exactly the difference of their counts). Use random_state=None for "
                "private releases: copies of such a sketch draw fresh noise.",
                SeededNoiseWarning,
                stacklevel=external_stacklevel(),
            )

    def _check_attached(self):
        """Refuse a release of the parent process's copy of a running stream unless it is bound to a ledger file.

        The copy (pickled by an ancestor of this process, e.g. into joblib's process workers, or inherited
        through ``os.fork()``; see ``_parents_copy``) would be charged only in its own ``ledger_``,
        which its original in the parent never sees, and the noise it keeps would die with it:
        repeated answers of such copies average the noise away.  Called before any noise is drawn
        (``_answer``) and by :meth:`_charge`; a stream bound to a shared ledger is left to that
        ledger, which accepts a file and refuses a detached in-memory copy.
        """
        how = getattr(self, "_parents_copy", False)
        if not how or self._shared_ledger is not None:
            return
        if how == "fork":
            got = ("inherited it through os.fork() (e.g. a module-level sketch used by a multiprocessing pool with "
                   "the 'fork' start method, or a Process given it as an argument)")
        else:
            got = ("pickled it (e.g. a fitted sketch in FeatureUnion or ColumnTransformer with n_jobs > 1, whose "
                   "transform runs in joblib's process workers, or a multiprocessing pool's task)")
        raise DetachedLedgerError(
            "PrivateCountSketch is a copy of a running stream whose original lives in this process's parent (or "
            f"another ancestor), which {got}: its release would be charged only to this copy's ledger_, which its "
            "original in the parent never sees, and the noise it keeps would be lost with it, so repeated answers "
            "would average the noise away. Nothing was released. Query the sketch in the parent (n_jobs=1 or a "
            "thread backend), or bind the stream to a file ledger, PrivateCountSketch(ledger=PrivacyLedger(path=...)), "
            "which records every process's release in one budget. A new fit here starts a stream of this "
            "process, which answers. A copy made here of this copy (pickle, deepcopy, from_bytes of its "
            "to_bytes) is refused alike. To hand a sketch to a worker on purpose, write its bytes in the parent "
            "(to_bytes()) and pass the bytes to a worker that does not hold the parent's sketch (e.g. the 'spawn' "
            "start method), where from_bytes() loads a fork: compose the ledgers."
        )

    @property
    def epsilon_spent_(self):
        """Privacy spent on this stream: the total of ``ledger_`` (see Notes, "Copies")."""
        return self.ledger_.epsilon_spent

    def _charge(self, chain0, n_items, note="", mechanism=None, **extra):
        """Record a release: this fork's increment of the amplified ε of its history.

        The first release after a copy starts a new fork: its history is charged afresh.
        Everything is computed and checked first.  The shared ledger is written before
        ``ledger_``, in one atomic check-and-record (its lock, or one transaction of its
        file): it refuses a release that would exceed its budget
        (:class:`~sklearn_bayes.exceptions.BudgetExceededError`) or that would land in a
        copy of an in-memory ledger that cannot reach the caller's
        (:class:`~sklearn_bayes.exceptions.DetachedLedgerError`, e.g. in a process
        worker).  This object's attributes are bound only after both records are made, so
        a refusal records nothing here and changes nothing: the caller binds its noise
        after this call, and the transactional query rewinds a generator whose draws
        were never released.  A copy of its parent process's running stream without a
        ledger file is refused first (:meth:`_check_attached`).
        """
        self._check_attached()
        fork_id, charged = (uuid.uuid4().hex, 0.0) if self._fork_pending else (self._fork_id, self._charged)
        if not (math.isfinite(chain0) and chain0 >= 0):
            raise ValueError(f"the privacy spend of this release is not finite ({chain0!r}); nothing was released.")
        total = amplify_by_subsampling(chain0, float(self._fp("sampling_rate")))
        increment = max(total - charged, 0.0)
        if not math.isfinite(increment):
            raise ValueError(f"the privacy spend of this release is not finite ({increment!r}); nothing was released.")
        record = dict(n_items=n_items, note=note, stream=self.stream_id_, fork=fork_id, id=uuid.uuid4().hex, **extra)
        name = mechanism or f"PrivateCountSketch/{self._fp('mechanism')}"
        if self._shared_ledger is not None:
            self._shared_ledger.record_shared("PrivateCountSketch", name, increment, **record)
        self.ledger_.record(name, increment, **record)
        # bind (cannot fail)
        if self._fork_pending:  # the first release since a copy was made: a new fork (id)
            self._fork_id = fork_id
            _LIVE_FORKS[fork_id] = self
            self._fork_pending = False
        self._chain_spent0 = chain0
        self._charged = charged + increment
