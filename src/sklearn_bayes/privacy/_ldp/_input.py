"""Input validation and encoding of :class:`~sklearn_bayes.AdaptiveLDPFrequencyEstimator`.

Free functions: the users' true categories (simulation) as positions of
``categories_``, the released RRRR responses with their subsets, and the response sets
of the static mechanisms (deployment).  Each raises a ``ValueError`` / ``TypeError``
naming the argument and changes nothing.  No message quotes a data value (the users'
categories are the private data of simulation mode): an offending entry is located by
its position and counted.
"""

import numbers
import re
import warnings

import numpy as np
from sklearn.utils.validation import validate_data

from sklearn_bayes.utils._validation import _DATA_ECHOES, check_container, external_stacklevel, naming

__all__ = ["DOMAIN_MESSAGE", "categories_from", "check_categories", "check_domain", "column", "encode",
           "label_positions", "missing", "rrrr_responses", "refuse_masked", "static_masks", "subset_masks"]


def refuse_masked(value, arg):
    """A ``TypeError`` naming ``arg`` for a masked array: numpy would drop its mask and read the
    masked entries (whatever they hold) as data."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(
            f"{arg} is a masked array: its masked entries would be read as data. Pass only the "
            f"entries that are present, e.g. {arg}.compressed() (with the matching rows of the "
            "other arguments)."
        )


def missing(v):
    """None, NaN, NaT or pandas' NA (whose comparisons are NA, not a bool)."""
    if v is None:
        return True
    try:
        return bool(v != v)
    except (TypeError, ValueError):
        return True


def _where(bad):
    """``"N value(s), first at row i"`` for a boolean vector of offending rows (no values quoted)."""
    idx = np.flatnonzero(bad)
    return f"{idx.size} value{'s' if idx.size != 1 else ''}, first at row {int(idx[0])}"


#: Why neither ``n_categories`` nor ``categories`` is refused, and what ``categories='from_data'`` costs.
DOMAIN_MESSAGE = (
    "the category domain must be public: pass n_categories=K (codes 0..K-1) or categories=[...]; "
    "categories='from_data' reads them from X (simulation only, NOT private: categories_ then reveals the "
    "distinct values)"
)


def check_domain(n_categories, categories):
    """ValueError unless exactly one of ``n_categories`` / ``categories`` gives the domain."""
    if n_categories is not None and categories is not None:
        raise ValueError(f"n_categories and categories are both set (n_categories={n_categories!r}): give one "
                         "of them (n_categories=K for the codes 0..K-1, or categories=[...] for labels).")
    if n_categories is None and categories is None:
        raise ValueError(f"n_categories and categories are both None: {DOMAIN_MESSAGE}.")
    if categories is not None and not isinstance(categories, str):
        check_categories(categories)


def check_categories(categories):
    """The public labels ``categories`` as a 1-d array **in the order given**; ValueError / TypeError naming
    ``categories``.

    Labels must be at least 2 (at most ``2^31 - 1``), distinct, hashable scalars (numbers or strings) of one
    orderable kind, and finite (no NaN, None or infinity); numbers that numpy holds only as objects (fractions,
    integers beyond 64 bits) and strings ending in a NUL character (which numpy's string arrays drop) are
    refused.  Position ``j`` of a label is its index in the order given (review HLR, F3).  The message may quote
    the labels: they are public.
    """
    refuse_masked(categories, "categories")
    if isinstance(categories, np.ndarray) and categories.ndim != 1:  # before len(): a 0-d array has none
        raise ValueError(f"categories must be a 1-d list or array of labels, got an array of shape "
                         f"{categories.shape}.")
    if isinstance(categories, (set, frozenset, dict)) or not hasattr(categories, "__len__"):
        raise TypeError(f"categories must be a list or 1-d array of labels, got {type(categories).__name__}.")
    try:
        n = len(categories)
    except TypeError:
        raise TypeError(f"categories must be a list or 1-d array of labels, got {type(categories).__name__}.") from None
    if n > 2**31 - 1:  # before list(): range(10**12) is not materialised
        raise ValueError(f"categories must hold at most 2^31 - 1 labels, got {n}.")
    items = list(categories)
    if len(items) < 2:
        raise ValueError(f"categories must hold at least 2 labels, got {len(items)}.")
    for v in items:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (str, numbers.Real)):
            raise TypeError(f"categories must hold real numbers or strings, got a {type(v).__name__}.")
    kinds = {isinstance(v, str) for v in items}
    if len(kinds) > 1:
        raise TypeError("categories mixes strings and numbers: labels must be of one orderable kind.")
    if True in kinds and any(v.endswith("\x00") for v in items):
        raise ValueError("categories holds a label ending in a NUL character ('\\x00'), which numpy's string "
                         "arrays would drop: give the labels without it.")
    cats = np.asarray(items)
    if cats.ndim != 1:
        raise ValueError(f"categories must be 1-d, got shape {cats.shape}.")
    if cats.dtype == object:  # Fraction, 2**70, ...: not a machine number
        raise TypeError("categories must hold strings or numbers that fit a 64-bit integer or float, got "
                        f"{', '.join(sorted({type(v).__name__ for v in items}))}.")
    if cats.dtype.kind == "f" and not np.all(np.isfinite(cats)):
        raise ValueError(f"categories must hold finite labels, got {cats[~np.isfinite(cats)][0]!r}.")
    if np.unique(cats).size != cats.size:
        raise ValueError(f"categories must hold distinct labels: {cats.size - np.unique(cats).size} repeated.")
    return cats


def label_positions(labels, categories):
    """``(idx, ok)``: positions of ``labels`` (a 1-d array) in ``categories`` (1-d, distinct, in any order) and
    whether each label is one of them (``idx`` is meaningless where ``ok`` is False)."""
    K = categories.size
    if categories.dtype.kind in "iu" and K and categories[0] == 0 and categories[-1] == K - 1 and np.all(
            categories[1:] > categories[:-1]):
        # sorted distinct integers from 0 to K - 1: each value is its own position (no search)
        ok = (labels >= 0) & (labels < categories.size)
        return labels, ok
    order = None if np.all(categories[1:] >= categories[:-1]) else np.argsort(categories, kind="stable")
    idx = np.clip(np.searchsorted(categories, labels, sorter=order), 0, categories.size - 1)
    if order is not None:
        idx = order[idx]
    return idx, categories[idx] == labels


def column(estimator, X, reset, n_categories, categories=None):
    """Validate X and return its categories: a 1-d array, or (n, d) rows for composites
    (``categories='from_data'`` only)."""
    check_container(X, "X")
    refuse_masked(X, "X")
    if hasattr(X, "isna") and hasattr(X, "columns"):  # a DataFrame: pandas NA breaks numpy's comparisons
        try:
            has_na = bool(np.asarray(X.isna()).any())
        except Exception:  # an exotic frame: validate_data decides
            has_na = False
        if has_na:
            raise ValueError("X contains missing values (None, NaN or pandas NA): every user must hold a "
                             "category.")
    with naming("X", private=True):
        # complex values and pandas NA: naming describes them without quoting the data;
        # scikit-learn's messages for a 3-d or an empty array do not name the argument
        try:
            X = validate_data(estimator, X, reset=reset, dtype=None, ensure_min_samples=1)
        except ValueError as exc:
            msg = str(exc)
            if re.search(r"\bX\b", msg) or any(p.search(msg) for p, _ in _DATA_ECHOES):
                raise
            if "Expected 2D array" in msg or "Expected a 2-dimensional container" in msg:  # a 1-d X (a Series)
                hint = "series.to_frame()" if hasattr(X, "to_frame") else "reshape(-1, 1)"
                raise ValueError(f"X must be 2-d with one row per user (one column of categories: shape "
                                 f"(n_users, 1)); got a 1-d {type(X).__name__}. Reshape your data into one "
                                 f"column: {hint}.") from None
            raise ValueError(f"X is not a valid batch of users: {msg}") from None
    if X.dtype.kind == "c":
        raise ValueError("X holds complex numbers, which are not categories.")
    if X.dtype.kind == "f" and np.any(np.isnan(X)):
        raise ValueError("X contains NaN: every user must hold a category.")
    if X.dtype == object:
        if any(missing(v) for v in X.ravel()):
            raise ValueError("X contains missing values (None, NaN or pandas NA): every user must hold a "
                             "category.")
    if X.shape[1] == 1:
        return X[:, 0]
    if n_categories is not None or (categories is not None and not isinstance(categories, str)):
        domain = "in 0..n_categories-1" if n_categories is not None else "among the labels of categories"
        raise ValueError(
            f"X must have exactly one column of categories {domain}, got {X.shape[1]} columns "
            "(several columns are read as one composite category only when categories='from_data')."
        )
    return X


def categories_from(col, n_categories, categories=None):
    """Categories for the first call: ``0..K-1``, the public labels, or (``categories='from_data'``) the
    sorted distinct values (rows) of ``col``."""
    if n_categories is not None:
        return np.arange(n_categories)
    if categories is not None and not isinstance(categories, str):
        return check_categories(categories)
    warnings.warn(f"categories='from_data': {DOMAIN_MESSAGE}.", UserWarning, stacklevel=external_stacklevel())
    if col.ndim == 1:
        try:
            cats = np.unique(col)
        except TypeError as exc:  # e.g. strings and numbers in one column
            raise ValueError(f"X holds categories of types that cannot be ordered together: {exc}.") from exc
    elif col.dtype == object:
        rows = sorted(set(map(tuple, col)))
        cats = np.empty((len(rows), col.shape[1]), dtype=object)
        cats[:] = rows
    else:
        cats = np.unique(col, axis=0)
    if cats.shape[0] < 2:
        raise ValueError(
            f"X must contain at least 2 distinct categories when categories='from_data'; got 1 category "
            f"in {col.shape[0]} sample(s){' (1 sample)' if col.shape[0] == 1 else ''}."
        )
    return cats


def encode(col, categories, arg="X"):
    """Positions of col's values in categories; ValueError naming ``arg`` on unknown values."""
    if categories.ndim == 2 or col.ndim == 2:
        if categories.ndim != 2 or col.ndim != 2 or col.shape[1] != categories.shape[1]:
            raise ValueError(f"{arg} has a different number of columns than the composite categories seen in fit.")
        lookup = {tuple(r): i for i, r in enumerate(categories.tolist())}
        out = np.empty(col.shape[0], dtype=np.int32)
        for i, r in enumerate(col.tolist()):
            j = lookup.get(tuple(r))
            if j is None:
                raise ValueError(f"{arg} holds categories outside the known ones ({len(lookup)} categories): "
                                 f"row {i}.")
            out[i] = j
        return out
    if categories.dtype.kind in "iu":
        if col.dtype.kind == "b":  # True is not the label 1 (categories refuses bools too; review HLR F7)
            raise ValueError(f"{arg} holds booleans, which are not integer categories.")
        if col.dtype.kind == "f" and np.any(col != np.round(col)):
            raise ValueError(f"{arg} holds non-integer categories: {_where(col != np.round(col))}.")
        if col.dtype.kind in "fiu":
            colv = col.astype(np.int64)
        elif col.dtype == object:
            odd = np.fromiter((isinstance(v, (str, bytes, bool, np.bool_)) or not isinstance(v, numbers.Real)
                               for v in col), bool, col.size)
            if odd.any():  # '10' or True is not the label 10 or 1 (review HLR F7)
                raise ValueError(f"{arg} holds categories that are not numbers (strings or booleans) against integer "
                                 f"categories: {_where(odd)}.")
            try:
                colv = col.astype(np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"{arg} holds categories that are not integers.") from None
            if np.any(colv != np.round(colv)):
                raise ValueError(f"{arg} holds non-integer categories.")
            colv = colv.astype(np.int64)
        else:
            raise ValueError(f"{arg} must hold integer categories, got dtype {col.dtype}.")
    else:
        colv = col
    try:
        idx, ok = label_positions(colv, categories)
    except TypeError:  # values that do not compare with the labels (3 among strings)
        lookup = {v: i for i, v in enumerate(categories.tolist())}
        pos = [lookup.get(v, -1) if isinstance(v, (str, numbers.Number)) else -1 for v in colv.tolist()]
        idx = np.asarray(pos, dtype=np.int64)
        ok = idx >= 0
    if not np.all(ok):
        raise ValueError(f"{arg} holds categories outside the known ones ({categories.size} categories): "
                         f"{_where(~np.asarray(ok))}.")
    return np.asarray(idx).astype(np.int32)


def rrrr_responses(y, K):
    """Released RRRR categories: a non-empty 1-d array of integer positions in ``[0, K)`` -> int32."""
    check_container(y, "y")
    refuse_masked(y, "y")
    ya = np.asarray(y)
    if ya.ndim != 1:
        raise ValueError(f"y must be a 1-d array of responses, got shape {ya.shape}.")
    if ya.size == 0:
        raise ValueError("y must hold at least one response.")
    if ya.dtype == bool or not (np.issubdtype(ya.dtype, np.integer) or np.issubdtype(ya.dtype, np.floating)):
        raise TypeError(f"y must hold integer category positions, got dtype {ya.dtype}.")
    if np.issubdtype(ya.dtype, np.floating) and (not np.all(np.isfinite(ya)) or np.any(ya != np.round(ya))):
        raise ValueError("y must hold integer category positions (got NaN or non-integer values).")
    bad = (ya < 0) | (ya >= K)
    if bad.any():
        raise ValueError(f"y holds categories outside [0, {K}): {_where(bad)}.")
    return ya.astype(np.int32)


def subset_masks(subsets, n, K):
    """Validate RRRR subsets (one for all, a list, or an (n, K) boolean mask) -> (n, K) bool.

    A flat sequence of category positions is one subset used for every response, except
    when it holds exactly one position per response (``n >= 2``): ``[1, 2]`` for two
    responses could equally mean ``{1, 2}`` for both or ``{1}`` and ``{2}``, so it is
    refused (pass ``[[1, 2]] * n``, ``[[1], [2]]`` or a boolean mask).
    """
    check_container(subsets, "subsets")
    refuse_masked(subsets, "subsets")
    if isinstance(subsets, np.ndarray) and subsets.dtype == bool:
        masks = subsets
        if masks.ndim == 1:
            masks = np.broadcast_to(masks, (n, masks.shape[0]))
        if masks.shape != (n, K):
            raise ValueError(f"subsets as a boolean mask must have shape ({n}, {K}), got {subsets.shape}.")
    else:
        if subsets is None:  # a forgotten argument would record every response as plain SRR
            raise ValueError(
                "subsets is required for mechanism='rrrr': pass the subset each response was produced "
                "with (as returned by propose_subsets); plain SRR reports are passed as empty subsets, "
                f"e.g. [[]] * {n}."
            )
        if not hasattr(subsets, "__len__") or isinstance(subsets, (str, bytes)) or (
                isinstance(subsets, np.ndarray) and subsets.ndim == 0):
            raise TypeError(f"subsets must be a list of category positions, a list of such lists or a boolean "
                            f"array of shape ({n}, {K}), got {type(subsets).__name__}.")
        if isinstance(subsets, (set, frozenset)):  # one subset for all, as a set
            subsets = sorted(subsets)
        seq = list(subsets) if not isinstance(subsets, np.ndarray) else subsets
        for s in seq:
            refuse_masked(s, "subsets")
        # a list of sets: each a subset (as a sorted list)
        seq = [sorted(s) if isinstance(s, (set, frozenset)) else s for s in seq]
        single = len(seq) == 0 or all(np.ndim(s) == 0 for s in seq)
        if single and n >= 2 and len(seq) == n:
            raise ValueError(
                f"subsets is a flat list of {n} category positions for {n} responses: ambiguous (one subset "
                f"of {n} categories for every response, or one category per response?). Pass a list of "
                f"{n} lists (e.g. [[s] for s in subsets], or [list(subsets)] * {n}) or a boolean array of "
                f"shape ({n}, {K})."
            )
        items = [seq] * n if single else list(seq)
        if len(items) != n:
            raise ValueError(f"subsets must give one subset per response: got {len(items)} for {n} responses.")
        masks = np.zeros((n, K), dtype=bool)
        for i, s in enumerate(items):
            arr = np.asarray(s)
            if arr.size == 0:
                continue
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool:
                raise ValueError(f"subsets[{i}] must be a 1-d array of category indices, got an array of "
                                 f"dtype {arr.dtype} and shape {arr.shape}.")
            if np.any((arr < 0) | (arr >= K)):
                raise ValueError(f"subsets[{i}] holds categories outside [0, {K}).")
            if np.unique(arr).size != arr.size:
                raise ValueError(f"subsets[{i}] has repeated categories.")
            masks[i, arr] = True
    full = np.flatnonzero(masks.sum(axis=1) == K)
    if full.size:
        raise ValueError(
            f"subsets[{int(full[0])}] contains all {K} categories: S = [K] is not an allowed RRRR subset."
        )
    return np.ascontiguousarray(masks)


def static_masks(y, subsets, K, client, mechanism):
    """Validate responses of a static mechanism -> packed rows ``(n, ceil(K / 8))`` (``np.packbits``).

    ``y`` is a boolean ``(n, K)`` mask (GRR: also the released positions, packed directly).
    """
    if subsets is not None:
        raise ValueError(f"subsets must be None for mechanism={mechanism!r} (its responses are sets); "
                         f"got a {type(subsets).__name__}.")
    check_container(y, "y")
    refuse_masked(y, "y")
    ya = np.asarray(y)
    k = client.subset_size
    if ya.ndim == 1 and k == 1 and ya.size and np.issubdtype(ya.dtype, np.integer) and ya.dtype != bool:
        bad = (ya < 0) | (ya >= K)
        if bad.any():
            raise ValueError(f"y holds categories outside [0, {K}): {_where(bad)}.")
        # GRR positions straight to packed rows (``np.packbits`` order): never n x K booleans
        packed = np.zeros((ya.size, (K + 7) // 8), dtype=np.uint8)
        pos = ya.astype(np.int64)
        packed[np.arange(ya.size), pos >> 3] = (np.uint8(1) << (7 - (pos & 7)).astype(np.uint8))
        return packed
    if ya.ndim != 2 or ya.shape[1] != K or ya.dtype != bool:
        name = client.kind if k is None else ("grr" if k == 1 else f"subset_selection, k={k}")
        also = f", or a 1-d array of the released positions 0..{K - 1}" if k == 1 else ""
        raise ValueError(f"y must be a boolean array of shape (n_responses, {K}) (the response sets of "
                         f"mechanism {name!r}{also}), got {ya.dtype} of shape {ya.shape}.")
    if ya.shape[0] == 0:
        raise ValueError("y must hold at least one response.")
    if k is not None:
        sizes = ya.sum(axis=1)
        if np.any(sizes != k):
            i = int(np.flatnonzero(sizes != k)[0])
            raise ValueError(f"y[{i}] holds {int(sizes[i])} categories: subset selection responses hold "
                             f"exactly subset_size={k}.")
    return np.packbits(ya, axis=1)
