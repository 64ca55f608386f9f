"""One way to run a function in a ``fork()``-ed child for the fork tests (noise, locks, the sketch's forks)."""

import json
import os
import select
import signal


def child_result(fn, timeout=None):
    """Run ``fn()`` in a ``fork()``-ed child and return ``{"ok": result}`` or ``{"error": "Type: message"}``.

    The result travels as JSON through a pipe.  With ``timeout`` (seconds), a child that has not
    answered by then is killed and ``"deadlock"`` is returned.
    """
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            out = {"ok": fn()}
        except BaseException as exc:  # report everything to the parent
            out = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            os.write(w, json.dumps(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    if timeout is not None and not select.select([r], [], [], timeout)[0]:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(r)
        return "deadlock"
    data = b""
    while chunk := os.read(r, 1 << 16):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    return json.loads(data)


def in_child(fn):
    """``fn()``'s result in a ``fork()``-ed child; an exception there fails the test, naming it."""
    out = child_result(fn)
    if "error" in out:
        raise AssertionError(f"the child failed: {out['error']}")
    return out["ok"]
