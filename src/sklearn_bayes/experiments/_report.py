"""Plain-text result tables for the command line and the benchmarks."""

import csv
import math
import numbers

import numpy as np

DEMO_COLUMNS = ("task", "dataset", "method", "metric", "value", "fit_time_s", "note")


def _fmt(value):
    """One number format for every table: 4 significant digits in fixed notation.

    Integers get thousands separators, floats of 10^4 or more are rounded to integers
    (``18,641``), smaller ones keep 4 significant digits (``24.61``, ``0.07630``,
    ``0.0001500``); only magnitudes below 10^-6 fall back to scientific notation.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        return str(value)
    if isinstance(value, (numbers.Integral, np.integer)):
        return f"{int(value):,}"
    value = float(value)
    if math.isnan(value):
        return "-"
    if value == 0:
        return "0"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= 4:
        return f"{value:,.0f}"
    if magnitude < -6:
        return f"{value:.3e}"
    return f"{value:,.{max(0, 3 - magnitude)}f}"


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
    >>> print(format_table([{"a": 1, "b": 0.5}, {"a": 20000, "b": 18641.49}]))
    a       b
    ------  ------
    1       0.5000
    20,000  18,641
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


#: What each demo metric means (matched on the start of the ``metric`` cell).
METRIC_HELP = {
    "TV to truth": "total variation distance between the estimated and the true category frequencies "
                   "(0 = exact, 1 = disjoint); lower is better",
    "slope": "fitted slope; the robust answer for starsCYG is positive (the four giants pull OLS negative)",
    "n flagged outliers": "rows flagged by flag_outliers",
    "test MSE": "mean squared error on the held-out 25 % of rows; lower is better",
    "MSE": "mean squared error on the held-out 25 % of rows; lower is better",
    "error %": "misclassification rate on the held-out rows, in percent; lower is better",
    "deviance": "mean Poisson deviance on the held-out rows; lower is better",
    "mean relative error": "mean over the queried items and the query sets of |answer - true count| / true count "
                           "(1 = an error as large as the count itself); lower is better",
}


def explain_metrics(rows):
    """Lines explaining the metrics that occur in ``rows`` (see :data:`METRIC_HELP`).

    Examples
    --------
    >>> explain_metrics([{"metric": "error %"}])
    ['  error %: misclassification rate on the held-out rows, in percent; lower is better']
    """
    seen = []
    for r in rows:
        metric = str(r.get("metric", ""))
        key = max((k for k in METRIC_HELP if metric.startswith(k)), key=len, default=None)
        if key is not None and key not in seen:
            seen.append(key)
    return [f"  {k}: {METRIC_HELP[k]}" for k in seen]


#: What the demo table's notes and method labels mean: ``(column, text in that column, explanation)``,
#: printed by :func:`explain_notes` for the rows where the text occurs.
NOTE_HELP = (
    ("method", "(default)", "'(default)': the estimator as constructed with no arguments (its defaults)"),
    ("note", "(paired)", "'A/B r +- se (paired)': the geometric mean over the runs (or splits) of this row's metric "
                         "divided by B's on the same run -- same data, same split, same noise seed -- and its "
                         "standard error (delta method); below 1: lower (better) than B. A ratio within 1-2 SE of 1 "
                         "is no evidence of a difference"),
    ("note", "lowest median", "'lowest median': the best median of its block; compare it with the others through "
                              "the paired ratios, not the medians (the medians move by more than their gaps)"),
    ("note", "within 1 SE of the lowest median", "'within 1 SE of the lowest median (TV/lowest r +- se)': the paired ratio to the "
                                        "lowest-median row is within one standard error of 1: the runs do not "
                                        "separate the two (no winner among these rows)"),
    ("note", "better than the lowest median by > 1 SE, paired", "'better than the lowest median by > 1 SE, paired': the paired ratio to the lowest-median row is "
                                         "below 1 by more than one standard error: over the same runs this row "
                                         "did better than the one with the lowest median"),
    ("note", "median TV of", "'median TV of N runs': each run draws new users and new privacy noise; the value is "
                             "the median over the runs"),
    ("note", "mean of", "'mean of N splits': the value is the mean over N random 75/25 train/test splits"),
    ("note", "CV/method time", "'CV/method time Tx': the fit time of the task's 10-fold cross-validation peer "
                               "divided by this row's (above 1: T times faster than tuning by CV)"),
    ("method", "Algorithm 1 (prior_scale='paper')", "\"Algorithm 1 (prior_scale='paper')\": the dissertation's "
                                                    "subsampled prior, the same estimator with prior_scale='paper' "
                                                    "(the defaults tune the prior's scale: prior_scale='evidence' for "
                                                    "the ridge, 'loo' for the others)"),
    ("method", "(n/20)", "'OnePosteriorSampleRidge(n/20)': OnePosteriorSampleRidge with ridge_lambda = n / 20 "
                         "(n training rows)"),
    ("method", "(noisy stats)", "'AdaOPSRegressor() (noisy stats)': the default, calibration='ssp_posterior' (noisy "
                                "sufficient statistics and the posterior mean given them); released_norm and thesis "
                                "are its posterior-draw calibrations"),
    ("note", "splits/releases", "'median of N splits/releases': the median over N random splits, each with its "
                                "own privacy noise; no standard error (read small gaps as noise)"),
    ("note", "WeakReleaseWarning", "'WeakReleaseWarning in k of N splits': the estimator warned in k of the N "
                                   "releases that its privacy noise dominates (AdaOPSRegressor: released "
                                   "gram_signal_to_noise_ < 2; OnePosteriorSampleRidge: its public noise proxy "
                                   "above 1): expect predictions near a constant"),
    ("note", "spent eps", "'spent eps=a of b': the privacy budget the sketch spent over all its query sets, of the "
                          "epsilon it was given"),
)


def explain_notes(rows):
    """Lines explaining the notes and method labels that occur in ``rows`` (see :data:`NOTE_HELP`).

    Examples
    --------
    >>> explain_notes([{"method": "m", "note": "CV/method time 3.0x"}])[0].split(":")[0]
    "  'CV/method time Tx'"
    """
    return [f"  {text}" for column, key, text in NOTE_HELP if any(key in str(r.get(column, "")) for r in rows)]
