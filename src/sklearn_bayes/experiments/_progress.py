"""A dependency-free progress bar for the command line."""

import sys
import time


class Progress:
    """Progress reporting for long loops, written to ``stream`` (stderr by default).

    Parameters
    ----------
    enabled : bool, default=True
        If False, :meth:`iter` yields silently.
    stream : file-like, default=sys.stderr
    min_interval : float, default=0.2
        Minimum number of seconds between two redraws.

    Examples
    --------
    >>> import io
    >>> p = Progress(stream=io.StringIO())
    >>> sum(p.iter(range(3), "adding"))
    3
    """

    def __init__(self, enabled=True, stream=None, min_interval=0.2):
        self.enabled = enabled
        self.stream = sys.stderr if stream is None else stream
        self.min_interval = min_interval
        # a bar redrawn with carriage returns is only readable on a terminal; in a log
        # file or a pipe, write the final line of each loop only
        isatty = getattr(self.stream, "isatty", None)
        self.live = bool(isatty and isatty())

    def iter(self, iterable, desc, total=None):
        """Yield from ``iterable`` while drawing ``desc [####   ] i/total elapsed``."""
        if total is None:
            try:
                total = len(iterable)
            except TypeError:
                total = None
        start = last = time.perf_counter()
        i = 0
        self._draw(desc, i, total, 0.0)
        for item in iterable:
            yield item
            i += 1
            now = time.perf_counter()
            if now - last >= self.min_interval or (total is not None and i == total):
                self._draw(desc, i, total, now - start)
                last = now
        self._draw(desc, i, total, time.perf_counter() - start, end=True)

    def message(self, text):
        """Print one line of status."""
        if self.enabled:
            print(text, file=self.stream, flush=True)

    def _draw(self, desc, i, total, elapsed, end=False):
        if not self.enabled or not (self.live or end):
            return
        if total:
            width = 24
            filled = int(width * i / total)
            bar = "#" * filled + "." * (width - filled)
            if end:
                eta = "done"
            else:
                eta = f"eta {elapsed / i * (total - i):5.1f}s" if i else "eta    ?"
            text = f"\r{desc} [{bar}] {i}/{total} {elapsed:6.1f}s {eta}"
        else:
            text = f"\r{desc} {i} {elapsed:6.1f}s"
        self.stream.write((text if self.live else text.lstrip("\r")) + ("\n" if end else ""))
        self.stream.flush()
