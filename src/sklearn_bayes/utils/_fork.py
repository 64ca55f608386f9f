"""The package's locks across ``fork()``: a child never blocks on a lock held by a thread it lacks.

A ``fork()``-ed child has one thread, the one that forked, but every lock in the state it had
in the parent: a lock held by *another* thread at that moment stays held forever in the child.
Left alone, the child's first call on an estimator that another thread was running a call on
blocks forever (its instance lock, see :func:`~sklearn_bayes.utils.instance_lock`), and a
module lock (the registry of instance locks, of ledgers) held for an instant by another thread
blocks every later call.  The handlers registered here with :func:`os.register_at_fork`:

* **before the fork** the forking thread acquires every live instance lock, waiting at most
  :data:`FORK_WAIT` seconds in all for the calls running in other threads to end, then the
  registered module locks (:func:`register_guard`), then -- no lock can be created any more --
  the locks created meanwhile, without waiting: the child inherits those objects between two
  calls, never half-way through one;
* **after the fork, in the parent**, it releases them (the parent goes on as before);
* **after the fork, in the child**, it releases the instance locks it holds, gives every
  registered module lock a new lock, and marks each object whose lock it could not acquire
  in time as *busy at the fork*: its state may be half-updated (a table half-way through an
  update, a generator half-way through a release), so every call on it that takes its lock
  refuses with a ``RuntimeError`` (:func:`check_usable`), never blocks or answers from that
  state.  Then the registered child hooks run (:func:`register_child_hook`: the ledgers'
  locks).

The wait happens only when another thread is running a call at the fork: forking with no call
in flight costs one uncontended acquire and release per live estimator (0.4 ms for 1,000 live
estimators).  An object waited for in vain is not waited for again by the next forks until its
lock was found free (a long ``fit`` in a background thread delays one fork, not every fork).  ``multiprocessing``'s
``"spawn"`` and ``"forkserver"`` start methods do not fork the parent and need none of this.
"""

import os
import threading
import time
import weakref

__all__ = ["FORK_WAIT", "check_usable", "register_child_hook", "register_guard", "register_instance_locks"]

#: The longest time (seconds, in all) the forking thread waits for calls of other threads to end.
FORK_WAIT = 1.0

#: Module locks, as (module globals dict, name): acquired before a fork, replaced in the child.
_GUARDS = []
#: Callbacks run in the child after the locks were made usable.
_CHILD_HOOKS = []
#: Objects another thread was running a call on at the fork (in a child only).
_BUSY = weakref.WeakSet()
_ANY_BUSY = False
#: What the forking thread holds between the before and after handlers.
_HELD = {"locks": [], "busy": [], "guards": []}
#: Objects whose lock a fork waited for in vain: the next forks do not wait for them again
#: (a long call -- a fit in a background thread -- would delay every fork by FORK_WAIT).
_STUCK = weakref.WeakSet()


#: The registry of instance locks (``_transaction._LOCKS``: a WeakKeyDictionary object -> RLock).
_INSTANCE_LOCKS = None
#: A callable: how many instance locks were created so far (None: unknown, always list them again).
_LOCKS_CREATED = None


def register_instance_locks(registry, created=None):
    """Register the weak-keyed registry ``object -> RLock`` of the instance locks (see ``_transaction``).

    ``created()``, if given, counts the locks created so far (it moves only under a registered guard).
    """
    global _INSTANCE_LOCKS, _LOCKS_CREATED
    _INSTANCE_LOCKS, _LOCKS_CREATED = registry, created


def register_guard(namespace, name):
    """Register the module lock ``namespace[name]`` (a ``threading.Lock``, held only briefly)."""
    _GUARDS.append((namespace, name))


def register_child_hook(fn):
    """Run ``fn()`` in a ``fork()``-ed child after the locks were made usable (``fn`` must not raise)."""
    _CHILD_HOOKS.append(fn)


def check_usable(obj):
    """Refuse ``obj`` if another thread of the parent was running a call on it at the fork."""
    if _ANY_BUSY and obj in _BUSY:
        raise RuntimeError(
            f"this {type(obj).__name__} was inherited by a fork()-ed process while another thread of the parent "
            "was running a call on it: its state in this process may be half-updated, so it refuses every call "
            "here. Fork when no thread is using it, or start processes with multiprocessing's 'spawn' or "
            "'forkserver' method and send them what they need."
        )


def _acquire(lock, deadline):
    left = deadline - time.monotonic()
    return lock.acquire(timeout=left) if left > 0 else lock.acquire(blocking=False)


def _live_instance_locks():
    pairs = []
    if _INSTANCE_LOCKS is None:
        return pairs
    for ref, lock in _INSTANCE_LOCKS.data.copy().items():  # (dict.copy: one atomic step)
        obj = ref()
        if obj is not None:
            pairs.append((obj, lock))
    return pairs


def _before_fork():
    deadline = time.monotonic() + FORK_WAIT
    held = {"locks": [], "busy": [], "guards": []}
    try:
        created = _LOCKS_CREATED() if _LOCKS_CREATED is not None else None
        pairs = _live_instance_locks()
        pairs.sort(key=lambda pair: pair[0] in _STUCK)  # the others first, with the time to wait
        for obj, lock in pairs:
            if lock.acquire(blocking=False) if obj in _STUCK else _acquire(lock, deadline):
                held["locks"].append(lock)
                _STUCK.discard(obj)
            else:
                held["busy"].append(obj)
                _STUCK.add(obj)
        for namespace, name in _GUARDS:
            lock = namespace[name]
            if _acquire(lock, deadline):
                held["guards"].append(lock)
        # a call that began on an object first locked after the list above was taken (its lock
        # is new): with the registry's guard held no lock is created any more, so list again
        # (only if one was created since the list was taken)
        if created is None or _LOCKS_CREATED() != created:
            seen = {id(obj) for obj, _ in pairs}
            for obj, lock in _live_instance_locks():
                if id(obj) in seen:
                    continue
                if lock.acquire(blocking=False):
                    held["locks"].append(lock)
                else:
                    held["busy"].append(obj)
                    _STUCK.add(obj)
    except Exception:  # pragma: no cover - never fail a fork
        pass
    _HELD.update(held)


def _release_held():
    for lock in _HELD["locks"] + _HELD["guards"]:
        try:
            lock.release()
        except RuntimeError:  # pragma: no cover
            pass
    busy = _HELD["busy"]
    _HELD.update(locks=[], busy=[], guards=[])
    return busy


def _after_fork_in_parent():
    _release_held()


def _after_fork_in_child():
    global _ANY_BUSY
    guards = _HELD["guards"]
    _HELD["guards"] = []  # replaced below, not released
    busy = _release_held()
    try:
        for namespace, name in _GUARDS:
            namespace[name] = threading.Lock()
        del guards
        if busy:
            for obj in busy:
                _INSTANCE_LOCKS[obj] = threading.RLock()  # usable, and every call refuses (check_usable)
                _BUSY.add(obj)
            _ANY_BUSY = True
    except Exception:  # pragma: no cover - never fail a fork
        pass
    for hook in list(_CHILD_HOOKS):
        try:
            hook()
        except Exception:  # pragma: no cover
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=_after_fork_in_child)
