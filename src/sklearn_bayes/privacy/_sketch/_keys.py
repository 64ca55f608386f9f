"""Item keys of the private count sketch.

Every item (an int, float, str or bytes, or a row of them) maps to one 64-bit key; batches of
items are validated here, with messages that never echo an item.  Distinct ints get distinct
keys, and so do distinct non-integral floats, but int64 items use all 2**64 keys, so each
non-integral float shares its key with one int64 (0.5 with 4659673196758792633: its bit
pattern XOR ``_FLOAT_TAG``) and str / bytes keys (hashed) can collide with either: a stream
that mixes such types may count two items together (review HQW F5; see the user guide).
"""

import math
import numbers
import re
import numpy as np
from scipy import sparse
from sklearn_bayes._fast import _hashing
from sklearn_bayes.utils._validation import check_container, naming


# Tag XOR-ed into the bit pattern of non-integral floats so that their keys do not coincide
# with the keys of small integers (part of the stable key format).
_FLOAT_TAG = np.uint64(0x7F4A7C159E3779B9)


#: Integer items must lie in the int64 range: an int64 item's key is its two's-complement bit
#: pattern, which uses every one of the 2**64 keys, so there is no key left for a larger integer
#: that no negative int64 already has (a uint64 item >= 2**63 was keyed like a negative one).
_INT_RANGE_MESSAGE = (
    "{name} contains an integer item outside the int64 range [-2**63, 2**63 - 1] ({where}); every int64 "
    "value is its own 64-bit key, so a larger integer would share the key of a negative one. Pass such "
    "identifiers as strings, or as int64 (e.g. numpy's .view(np.int64)) if the wrap-around is intended."
)


_COMPLEX_MESSAGE = (
    "Complex data not supported: {name} holds complex numbers, which are not items (ints, strings or bytes)."
)


_MISSING_MESSAGE = (
    "{name} contains a missing item (None, NaN, NaT or pandas NA); a missing value is not an item: drop "
    "or impute the missing values first."
)


def _is_missing(v):
    """Whether an object item is a missing value (None, NaN, pandas NA or NaT)."""
    if v is None:
        return True
    if isinstance(v, (float, np.floating)):
        return math.isnan(v)
    return type(v).__name__ in ("NAType", "NaTType")


def _float_keys(col, name):
    col = np.asarray(col, dtype=np.float64)
    finite = np.isfinite(col)
    if not np.all(finite):
        if np.any(np.isnan(col)):
            raise ValueError(_MISSING_MESSAGE.format(name=name))
        raise ValueError(f"{name} contains an infinite item; items must be ints, strings, bytes or finite floats.")
    # a float with an integral value in the int64 range is that int (-2**63 included: it is exact)
    integral = (col == np.floor(col)) & (col >= -(2.0**63)) & (col < 2.0**63)
    keys = np.empty(col.shape, dtype=np.uint64)
    keys[integral] = col[integral].astype(np.int64).view(np.uint64)
    other = ~integral
    keys[other] = (col[other] + 0.0).view(np.uint64) ^ _FLOAT_TAG
    return keys


def _column_keys(col, name):
    """Keys of one column and its item kind ('number' or 'text'); raises on bad items.

    Error messages name the types of bad items, never their values (the items are private).
    """
    kind = col.dtype.kind
    if kind == "i":
        return col.astype(np.int64, copy=False).view(np.uint64), "number"
    if kind == "u":
        if col.dtype.itemsize == 8 and col.size and int(col.max()) >= 2**63:
            raise ValueError(_INT_RANGE_MESSAGE.format(name=name, where=f"a {col.dtype} item >= 2**63"))
        return col.astype(np.uint64), "number"
    if kind == "b":
        return col.astype(np.uint64), "number"
    if kind == "f":
        return _float_keys(col, name), "number"
    if kind in "US":
        return _hashing.bytes_keys(col.astype(object)), "text"
    if kind == "c":
        raise ValueError(_COMPLEX_MESSAGE.format(name=name))
    if kind != "O":
        raise TypeError(f"{name} has unsupported dtype {col.dtype}; items must be ints, strings or bytes.")
    try:  # fast path: all items are str / bytes (checked item by item in the kernel)
        return _hashing.bytes_keys(col if col.flags.writeable else col.copy()), "text"
    except TypeError:
        pass
    is_text = np.fromiter((isinstance(v, (str, bytes)) for v in col), dtype=bool, count=col.shape[0])
    for v in col:
        if _is_missing(v):
            raise ValueError(_MISSING_MESSAGE.format(name=name))
        if isinstance(v, (float, np.floating)) and not math.isfinite(v):
            raise ValueError(f"{name} contains an infinite item; items must be ints, strings, bytes or finite floats.")
        if isinstance(v, (complex, np.complexfloating)):
            raise ValueError(_COMPLEX_MESSAGE.format(name=name))
        if not isinstance(v, (str, bytes, numbers.Integral, float, np.floating)):
            raise TypeError(
                f"{name} contains an item of type {type(v).__name__}; items must be ints, strings or bytes."
            )
    if is_text.any():
        first_text = col[np.argmax(is_text)]
        first_num = col[np.argmax(~is_text)]
        raise TypeError(
            f"{name} mixes item types in one column ({type(first_num).__name__} and "
            f"{type(first_text).__name__}); a stream holds one type of item."
        )
    if all(isinstance(v, numbers.Integral) for v in col):
        try:
            return np.array([int(v) for v in col], dtype=np.int64).view(np.uint64), "number"
        except OverflowError:
            raise ValueError(_INT_RANGE_MESSAGE.format(name=name, where="a Python int")) from None
    return _float_keys(col.astype(np.float64), name), "number"


def _item_keys(X, name):
    """64-bit keys of the rows of a validated 2-D array (a row of several columns is one item)."""
    keys, kinds = None, []
    for c in range(X.shape[1]):
        col_keys, kind = _column_keys(np.ascontiguousarray(X[:, c]), name)
        col_keys = np.ascontiguousarray(col_keys, dtype=np.uint64)
        kinds.append(kind)
        keys = col_keys if keys is None else _hashing.combine_keys(keys, np.ascontiguousarray(col_keys))
    return np.ascontiguousarray(keys, dtype=np.uint64), tuple(kinds)


def _all_text(X):
    return all(isinstance(v, (str, bytes)) for v in np.ravel(np.array(X, dtype=object)))


def _as_2d_items(X, name):
    """Bring a 1-D stream or a list of items into the 2-D form that ``validate_data`` expects."""
    check_container(X, name)  # a generator would become a 0-d object array ("a scalar")
    if sparse.issparse(X):
        raise TypeError(
            f"sparse matrices are not supported: {name} must be a dense array-like of items (a 1-D "
            f"stream or a 2-D array of composite items), got a {type(X).__name__}; call {name}.toarray() "
            "if it really holds items."
        )
    if hasattr(X, "to_frame") and getattr(X, "ndim", None) == 1:  # pandas Series
        return X.to_frame(), True
    if hasattr(X, "iloc"):
        ndim = X.ndim
    elif hasattr(X, "__array__"):
        X = np.asarray(X)
        ndim = X.ndim
    elif isinstance(X, (str, bytes)):
        raise TypeError(f"{name} must be an array-like of items, got a single {type(X).__name__}.")
    elif isinstance(X, (set, frozenset, dict)):  # (numpy reads them as one object: "a scalar")
        if isinstance(X, dict):  # list() of a Counter or a dict of counts would keep each key once
            hint = (
                f"for a collections.Counter (or a dict of counts) pass list({name}.elements()) "
                f"(resp. list(collections.Counter({name}).elements())): each item as many times as it is "
                f"counted; list({name}) would keep each key once"
            )
        else:
            hint = f"pass list({name}) for its items, each once (a stream counts repeated items)"
        raise TypeError(
            f"{name} must be an array-like of items (a list, a NumPy array, a DataFrame), got a "
            f"{type(X).__name__}; {hint}."
        )
    else:
        try:
            arr = np.asarray(X)
            if arr.dtype.kind in "US" and not _all_text(X):
                arr = np.array(X, dtype=object)  # keep item types (e.g. ['a', 1] is not two strings)
        except ValueError:
            raise ValueError(
                f"{name} could not be read as an array of items (rows of different lengths?)."
            ) from None
        X = arr
        ndim = X.ndim
    if ndim == 0:
        raise ValueError(
            f"{name} must be a 1-D array-like of items or a 2-D array, got a scalar."
        )
    if ndim == 1:
        return np.asarray(X).reshape(-1, 1), True
    if ndim > 2:
        raise ValueError(f"{name} must be 1-D or 2-D, got an array with {ndim} dimensions.")
    return X, False


def _check_missing(X, name):
    """A clear ``ValueError`` naming ``name`` if a pandas frame holds a missing item (and a
    ``ValueError`` for complex numbers, as scikit-learn and :func:`_column_keys` give)."""
    dtypes = X.dtypes if hasattr(X, "dtypes") else [getattr(X, "dtype", np.dtype(object))]
    if any(getattr(t, "kind", "O") == "c" for t in dtypes):
        raise ValueError(_COMPLEX_MESSAGE.format(name=name))
    if hasattr(X, "isna") and hasattr(X, "iloc") and bool(np.asarray(X.isna()).any()):
        raise ValueError(_MISSING_MESSAGE.format(name=name))


def _checked_items(X, name, validate):
    """``validate(X)`` (scikit-learn's checks) with messages that name ``name`` and echo no item.

    Missing items (pandas NA, NaN among objects) and complex numbers get the sketch's own
    messages; anything else is passed through :func:`~sklearn_bayes.utils._validation.naming`.
    """
    _check_missing(X, name)  # pandas' NA would fail the finiteness check obscurely
    try:
        with naming(name, private=True):
            return validate(X)
    except (TypeError, ValueError) as exc:
        if re.search(r"missing values|contains NaN", str(exc)):  # NaN or NA among object items
            raise ValueError(_MISSING_MESSAGE.format(name=name)) from None
        raise
