"""Plain-text result tables for the command line and the benchmarks."""

import csv
import math

DEMO_COLUMNS = ("task", "dataset", "method", "metric", "value", "fit_time_s", "note")


def _fmt(value):
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 1e-3):
            return f"{value:.3e}"
        return f"{value:.4f}"
    return str(value)


def format_table(rows, columns=None):
    """Format a list of dicts as an aligned text table.

    Parameters
    ----------
    rows : list of dict
    columns : sequence of str, optional
        Column order; defaults to the keys of the first row.

    Returns
    -------
    text : str

    Examples
    --------
    >>> print(format_table([{"a": 1, "b": 0.5}]))
    a  b
    -  ------
    1  0.5000
    """
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0].keys())
    cells = [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[j]) for row in cells)) for j, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def write_csv(rows, path, columns=None):
    """Write a list of dicts to ``path`` as CSV."""
    columns = list(columns or (rows[0].keys() if rows else []))
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
