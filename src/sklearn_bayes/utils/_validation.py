"""Validation helpers shared by the estimators: budgets, integer constraints, random states."""

import collections
import collections.abc
import fractions
import numbers
import operator
import os
import re
import sys
import threading
import warnings
import weakref
from contextlib import contextmanager

import numpy as np
import sklearn
from sklearn.utils._param_validation import Interval

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.utils._fork import register_guard
from sklearn_bayes.utils._streaming import state_digest


def _exact_float(value):
    """``float(value)`` for a :class:`numbers.Real` that a float equals exactly, else ``None``.

    Every type is checked exactly: Python and NumPy floats up to 64 bits always pass; an int
    only below ``2^53`` or where it is a float's value (``2^53 + 1`` is not); a
    ``numpy.longdouble`` or a :class:`fractions.Fraction` only when some float equals it
    (``np.longdouble('0.1')`` and ``Fraction(1, 10)`` do not: their nearest floats lie above them).
    """
    try:
        as_float = float(value)
    except (TypeError, ValueError, OverflowError):  # e.g. an int or Fraction beyond the largest float
        return None
    if isinstance(value, (float, np.float64, np.float32, np.float16)) or not np.isfinite(as_float):
        return as_float
    if isinstance(value, numbers.Integral):
        return as_float if int(as_float) == int(value) else None
    ratio = getattr(value, "as_integer_ratio", None)
    if ratio is not None and not isinstance(value, numbers.Rational):  # np.longdouble and other binary floats
        try:
            exact = fractions.Fraction(*ratio())
        except (TypeError, ValueError, OverflowError):
            return None
        return as_float if fractions.Fraction(as_float) == exact else None
    return as_float if as_float == value else None


def check_epsilon(epsilon, name="epsilon"):
    """Validate a privacy budget: a finite real number > 0.

    Parameters
    ----------
    epsilon : float
        The value to check: an int or a float (Python or NumPy), or another
        :class:`numbers.Real` (e.g. :class:`fractions.Fraction`) equal to a float.
    name : str, default="epsilon"
        Argument name used in the error message.

    Returns
    -------
    epsilon : float

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number (booleans and :class:`decimal.Decimal`,
        which Python does not count as a :class:`numbers.Real`, are rejected).
    ValueError
        If ``epsilon`` is not finite or not strictly positive, or is an exact number that
        no float equals.

    Notes
    -----
    A budget is never rounded: the nearest float to an exact number may lie above it
    (``float(Fraction(1, 10)) = 0.1000000000000000055...``), which would spend more than
    asked without saying so.  Such a value is refused, whatever its type: a
    :class:`fractions.Fraction`, a ``numpy.longdouble`` (``np.longdouble('0.1')`` is 5.5e-18
    below its nearest float), an int above ``2^53`` that no float equals (it would round by up
    to half an ulp, either way); pass the float you mean, e.g. ``math.nextafter(float(x), 0)``
    to stay below ``x``.

    Examples
    --------
    >>> from fractions import Fraction
    >>> check_epsilon(Fraction(1, 2))
    0.5
    >>> check_epsilon(Fraction(1, 10))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: epsilon=Fraction(1, 10) is not exactly a float: its nearest float, 0.1, lies above it, ...
    """
    if isinstance(epsilon, (bool, np.bool_)) or not isinstance(epsilon, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {epsilon!r} of type {type(epsilon).__name__}.")
    value = _exact_float(epsilon)
    if value is None:
        try:
            nearest = float(epsilon)
        except OverflowError:
            raise ValueError(f"{name} must be finite and > 0, got a number beyond the largest float.") from None
        if isinstance(epsilon, numbers.Integral):
            exact = int(epsilon)
        elif hasattr(epsilon, "as_integer_ratio"):
            exact = fractions.Fraction(*epsilon.as_integer_ratio())
        else:
            exact = epsilon
        side = "above" if fractions.Fraction(nearest) > exact else "below"
        raise ValueError(
            f"{name}={epsilon!r} is not exactly a float: its nearest float, {nearest!r}, lies {side} it, and a "
            f"budget is never rounded silently; pass the float you mean (e.g. math.nextafter(float({name}), 0) "
            "to stay below it)."
        )
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {epsilon!r}.")
    return value


class IntegerInterval(Interval):
    """``Interval(numbers.Integral, ...)`` for ``_parameter_constraints`` that rejects booleans.

    ``True`` is an :class:`numbers.Integral` in Python, so scikit-learn's interval
    accepts ``depth=True`` as 1; a size, a count or a seed given as a boolean is a
    mistake and is refused with the usual ``InvalidParameterError``.

    Examples
    --------
    >>> c = IntegerInterval(1, None, closed="left")
    >>> c.is_satisfied_by(3), c.is_satisfied_by(True), c.is_satisfied_by(0)
    (True, False, False)
    """

    def __init__(self, left, right, *, closed):
        super().__init__(numbers.Integral, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)

    def __str__(self):
        return super().__str__() + " (not a bool)"


class RealInterval(Interval):
    """``Interval(numbers.Real, ...)`` for ``_parameter_constraints`` that rejects booleans and inexact numbers.

    ``True`` is a :class:`numbers.Real` in Python, so scikit-learn's interval accepts
    ``epsilon=True`` as 1.0; a privacy budget, a bound or a rate given as a boolean is a
    mistake and is refused with the usual ``InvalidParameterError``.  Another exact
    :class:`numbers.Real` (e.g. :class:`fractions.Fraction`, on which scikit-learn's interval
    raises NumPy's "ufunc 'isnan' not supported") is accepted when a float equals it
    (``Fraction(1, 2)``), and refused naming the parameter when none does: the estimators
    compute in floats, and the nearest float may lie above the value (``Fraction(1, 10)``),
    a larger budget than asked, silently.

    Examples
    --------
    >>> from fractions import Fraction
    >>> c = RealInterval(0, None, closed="neither")
    >>> c.is_satisfied_by(0.5), c.is_satisfied_by(True), c.is_satisfied_by(-1.0)
    (True, False, False)
    >>> c.is_satisfied_by(Fraction(1, 2)), c.is_satisfied_by(Fraction(1, 10))
    (True, False)
    """

    def __init__(self, left, right, *, closed):
        super().__init__(numbers.Real, left, right, closed=closed)

    def is_satisfied_by(self, val):
        if isinstance(val, (bool, np.bool_)) or not isinstance(val, numbers.Real):
            return False
        value = _exact_float(val)
        return value is not None and super().is_satisfied_by(value)

    def __str__(self):
        return super().__str__() + " (not a bool; a Fraction only if exactly equal to a float)"


def check_generator(random_state):
    """Return a :class:`numpy.random.Generator` for ``random_state`` (the one helper for randomness).

    ``None`` seeds from the operating system, an int seeds a new generator, a
    :class:`numpy.random.Generator` is used as is (the caller owns it), and a legacy
    :class:`numpy.random.RandomState` is converted by drawing a seed from it.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState

    Returns
    -------
    rng : numpy.random.Generator

    Raises
    ------
    TypeError
        For any other value (booleans included).
    ValueError
        For a negative int (NumPy's seeds are non-negative).

    Examples
    --------
    >>> bool(check_generator(0).integers(10) == check_generator(0).integers(10))
    True
    >>> check_generator(-1)
    Traceback (most recent call last):
    ...
    ValueError: random_state must be None, a non-negative int, a numpy.random.Generator or a numpy.random.RandomState, got the negative int -1.
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**63 - 1, dtype=np.int64))
    if isinstance(random_state, (numbers.Integral, np.integer)) and not isinstance(random_state, (bool, np.bool_)):
        if random_state < 0:
            raise ValueError(
                "random_state must be None, a non-negative int, a numpy.random.Generator or a "
                f"numpy.random.RandomState, got the negative int {int(random_state)}."
            )
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None, an int, a numpy.random.Generator or a numpy.random.RandomState, "
        f"got {random_state!r}."
    )


class _OSSeededGenerator(np.random.Generator):
    """A :class:`numpy.random.Generator` seeded from operating-system entropy for privacy noise.

    Created only by :func:`check_privacy_random_state` for ``random_state=None``; the one
    difference from a plain ``Generator`` is that it can be referenced weakly, so that the
    live ones are known (``_OS_SEEDED``) and reseeded from fresh entropy in a ``fork()``-ed
    child (:func:`_reseed_in_child`).  A copy (pickle, ``copy.deepcopy``) has the same state,
    as for any generator, and is one too: a copied estimator is reseeded in a forked child
    like its original.
    """

    __slots__ = ("__weakref__",)

    def __reduce__(self):
        return (_os_seeded_generator, (self.bit_generator,))

    def spawn(self, n_children):
        """``n_children`` new OS-seeded generators, each on fresh operating-system entropy.

        Not numpy's spawn from the ``SeedSequence`` the generator was created with: that one
        is not reseeded by a fork nor by a copy, so a forked child (or a copy) would spawn
        exactly the children its original spawns.
        """
        return [_os_seeded_generator() for _ in range(operator.index(n_children))]


#: the live OS-seeded privacy-noise generators of this process (weak references)
_OS_SEEDED = weakref.WeakSet()


def _reseed_in_child():
    """In a ``fork()``-ed child: every live OS-seeded noise generator draws from fresh OS entropy.

    The child holds the parent's generators in their state: unchanged, an estimator with
    ``random_state=None`` would draw in the child exactly the noise its original draws in the
    parent, and two releases about data that differ in one individual would differ by that
    individual's contribution alone.  Runs single-threaded in the child and takes no lock.

    A ``PCG64`` (every generator made here) gets a state read directly from one
    ``os.urandom`` call for all (128 bits of state, an odd 128-bit increment: a uniformly
    drawn valid state, which is what seeding from a ``SeedSequence`` aims at), 1.6 ms per
    1,000 live generators instead of 9.6 ms for a new ``PCG64()`` each.
    """
    generators = list(_OS_SEEDED)
    try:
        raw = os.urandom(32 * len(generators))
    except Exception:  # pragma: no cover - never fail a fork
        raw = b""
    for i, rng in enumerate(generators):
        try:
            bit_generator = rng.bit_generator
            if type(bit_generator) is np.random.PCG64 and len(raw) == 32 * len(generators):
                bit_generator.state = {
                    "bit_generator": "PCG64",
                    "state": {"state": int.from_bytes(raw[32 * i:32 * i + 16], "little"),
                              "inc": int.from_bytes(raw[32 * i + 16:32 * i + 32], "little") | 1},
                    "has_uint32": 0, "uinteger": 0,
                }
            else:
                bit_generator.state = type(bit_generator)().state
        except Exception:  # pragma: no cover - never fail a fork
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reseed_in_child)


def _os_seeded_generator(bit_generator=None):
    """A new :class:`_OSSeededGenerator`: on ``bit_generator`` (a copy's), else on fresh OS entropy."""
    rng = _OSSeededGenerator(np.random.PCG64() if bit_generator is None else bit_generator)
    _OS_SEEDED.add(rng)
    return rng


#: digests of the generator states privacy noise was drawn from in this process, with the
#: estimator that drew it (a weak reference, or None)
_RELEASED_STATES = collections.OrderedDict()
_RELEASED_LOCK = threading.Lock()
#: the registry keeps the most recently used states only (about 200 bytes each): a long-running
#: process privatising with a caller's Generator would otherwise keep one entry per call forever
MAX_RELEASED_STATES = 1 << 16
register_guard(globals(), "_RELEASED_LOCK")  # fork(): a new one in the child (see _fork)


def _state_digest(random_state):
    return state_digest(random_state).hex()


def _small_seed(generator):
    """Whether ``generator``'s seed sequence holds at most 64 bits of entropy (``default_rng(42)``; an OS
    draw holds 128).  ``False`` when it keeps no :class:`numpy.random.SeedSequence`."""
    seq = getattr(generator.bit_generator, "seed_seq", None)
    entropy = getattr(seq, "entropy", None) if isinstance(seq, np.random.SeedSequence) else None
    if entropy is None:
        return False
    words = [entropy] if isinstance(entropy, (numbers.Integral, np.integer)) else list(np.ravel(entropy))
    return sum(int(w).bit_length() for w in words) <= 64


def register_noise_state(random_state, owner="this mechanism", instance=None, seed=None):
    """The replay guard of :func:`check_privacy_random_state`: record that ``random_state``'s current state
    draws privacy noise for ``instance``; warn (:class:`SeededNoiseWarning`) if it already did in this process
    for another object (or for any object, when ``instance`` is ``None``).  Estimators call it at every
    noise-drawing call; other inputs than a ``Generator`` or ``RandomState`` are ignored.  ``seed``: the
    estimator's ``random_state`` parameter when ``random_state`` is the generator built from it; an int
    names the cause in the warning (the same int seed used again, not a copied generator; review HNR F5)."""
    if not isinstance(random_state, (np.random.Generator, np.random.RandomState)):
        return
    digest = _state_digest(random_state)
    try:
        ref = weakref.ref(instance) if instance is not None else None
    except TypeError:
        ref = None
    with _RELEASED_LOCK:
        previous = _RELEASED_STATES.get(digest, False)
        _RELEASED_STATES[digest] = ref
        _RELEASED_STATES.move_to_end(digest)
        while len(_RELEASED_STATES) > MAX_RELEASED_STATES:
            _RELEASED_STATES.popitem(last=False)
    replay = previous is not False and (previous is None or ref is None or previous() is not instance)
    if replay:
        if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
            text = (f"{owner} was given random_state={int(seed)}, an int seed whose noise stream already drew "
                    "privacy noise in this process (another estimator or an earlier fit with the same seed), so "
                    "this release repeats that noise, which then cancels between the two releases. Use "
                    "random_state=None for private releases.")
        else:
            text = (f"{owner} was given a {type(random_state).__name__} random_state whose current state "
                    "already drew privacy noise in this process: it is a copy (clone, deepcopy or pickle "
                    "copy a generator with its state), so it replays that noise, which then cancels "
                    "between the two releases. Use random_state=None for private releases.")
        warnings.warn(text, SeededNoiseWarning, stacklevel=external_stacklevel())


#: the second word of the seed sequence of an int-seeded privacy noise generator (ASCII "noise"): the
#: noise of ``random_state=s`` is ``default_rng(SeedSequence([s, PRIVACY_NOISE_TAG]))``, never
#: ``default_rng(s)``, the stream a user's data are commonly drawn from with the same seed
PRIVACY_NOISE_TAG = 0x6E6F697365


def check_privacy_random_state(random_state, owner="this mechanism", instance=None, warn_small_seed=False):
    """:func:`check_generator` for privacy noise, with warnings where the noise is not private.

    Emits :class:`SeededNoiseWarning`

    * for an integer seed: the noise is reproducible from the seed (useful in tests and
      experiments, but it destroys the guarantee if the seed is known).  The noise generator
      of seed ``s`` is ``default_rng(SeedSequence([s, PRIVACY_NOISE_TAG]))``, not
      ``default_rng(s)``: data drawn from ``default_rng(s)`` and privatised with
      ``random_state=s`` would otherwise meet their own uniform stream as noise (the
      estimates were then wrong, TV 0.50 instead of 0.06-0.09, review HQV).  A ``Generator``
      or ``RandomState`` is used as given;
    * for a ``Generator`` or ``RandomState`` whose *current state* already seeded privacy
      noise in this process for another object: :func:`sklearn.base.clone`,
      :func:`copy.deepcopy` and pickling copy a generator with its state, so the copies
      of one estimator (cross-validation folds, grid-search candidates) would draw the
      same noise, which cancels between their releases.  The same ``instance`` asking
      again from the same state (a retry after a rejected call rewound its generator)
      is not a replay (a client object, which validates before drawing and never retries,
      passes ``instance=None``: any second use of a state warns).  Copies in other processes are
      not seen, nor a copy of a state that more than ``MAX_RELEASED_STATES`` (65,536) later
      states have drawn noise since.  An estimator registers its generator's state at every
      call that draws noise (:func:`register_noise_state`), not only at the first fit, so a copy
      of a fitted estimator warns too;
    * with ``warn_small_seed=True`` (the local-DP clients and estimator), for a ``Generator``
      whose seed sequence holds at most 64 bits of entropy (``np.random.default_rng(42)``,
      children of ``SeedSequence(0).spawn``): its noise is as reproducible as an int seed's (a
      ``RandomState`` keeps no seed sequence: it is not checked).

    ``None`` gives a generator seeded from operating-system entropy, which is reseeded from
    fresh entropy in a ``fork()``-ed child (``os.register_at_fork``): an estimator inherited
    by a forked process (``os.fork``, ``multiprocessing``'s ``"fork"`` context) never draws
    its original's noise.  Seeded noise is left as it is in the child: an int seed replays by
    design, and a ``Generator`` or ``RandomState`` given by the caller stays the caller's
    responsibility (give each process its own, e.g. with
    :meth:`numpy.random.SeedSequence.spawn`).

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
    owner : str
        Name used in the warning.
    instance : object or None
        The object that will draw the noise (held by a weak reference).
    warn_small_seed : bool, default=False
        Also warn for a ``Generator`` seeded with at most 64 bits of entropy.

    Returns
    -------
    rng : numpy.random.Generator
    """
    register_noise_state(random_state, owner, instance)
    if warn_small_seed and isinstance(random_state, np.random.Generator) and _small_seed(random_state):
        warnings.warn(
            f"{owner} was given a Generator seeded with at most 64 bits of entropy (e.g. default_rng(42)): "
            "its privacy noise is reproducible from the seed. Use seeded noise for testing only; use "
            "random_state=None in production.",
            SeededNoiseWarning,
            stacklevel=external_stacklevel(),
        )
    rng = _os_seeded_generator() if random_state is None else privacy_noise_generator(random_state)
    if isinstance(random_state, (numbers.Integral, np.integer)):
        warnings.warn(
            f"{owner} was given an integer random_state: its privacy noise is reproducible "
            "from the seed (drawn from SeedSequence([seed, PRIVACY_NOISE_TAG]), not default_rng(seed), so data "
            "drawn from default_rng(seed) are not privatised with their own stream). Use seeded noise for "
            "testing only; use random_state=None in production.",
            SeededNoiseWarning,
            stacklevel=external_stacklevel(),
        )
    return rng


def privacy_noise_generator(random_state):
    """The generator a private release draws its noise from, for a non-None ``random_state`` (no warning, no
    registration): the Generator itself, a RandomState's draw, or -- domain separation -- for an int seed ``s``
    ``default_rng(SeedSequence([s, PRIVACY_NOISE_TAG]))``, never ``default_rng(s)``'s stream, which may have made the
    data.  The one place that maps a seed to the noise stream: code that must predict that stream's first draw
    (the count sketch's Dask subsampling key) calls it too."""
    rng = check_generator(random_state)  # validates (a negative int is refused naming random_state)
    if isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.default_rng(np.random.SeedSequence([int(random_state), PRIVACY_NOISE_TAG]))
    return rng


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SKLEARN_DIR = os.path.dirname(os.path.abspath(sklearn.__file__))


def external_stacklevel():
    """The ``stacklevel`` at which a warning points to the first caller outside this package.

    Estimators reach the code that warns through decorators (``_fit_context``,
    :func:`transactional`) and private helpers, so a fixed ``stacklevel`` would point at our
    own files; this one points at the user's line (scikit-learn's meta-estimators count as
    callers when they fit our estimators).
    """
    level = 1
    frame = sys._getframe(1)  # the function that calls warnings.warn
    while frame is not None:
        name = frame.f_code.co_filename
        inside = _INSIDE_FILES.get(name) if STACKLEVEL_MEMO else None
        if inside is None:
            path = os.path.abspath(name)
            inside = path.startswith(_PACKAGE_DIR) or path == os.path.join(_SKLEARN_DIR, "base.py")
            if STACKLEVEL_MEMO and os.path.isabs(name):  # a relative name's absolute path follows the cwd
                _INSIDE_FILES[name] = inside
        if not inside:
            return level
        frame = frame.f_back
        level += 1
    return level


#: Round S2 (cost, the same levels): :func:`external_stacklevel` remembers, per absolute file name of a frame's code,
#: whether it is inside the package (``os.path.abspath`` of every frame was most of its 25 us).  False: no memory.
STACKLEVEL_MEMO = True
_INSIDE_FILES = {}


_WORD = "(?<![A-Za-z0-9_]){}(?![A-Za-z0-9_])"

#: scikit-learn / numpy messages that quote the offending data, rewritten without it (the phrases
#: scikit-learn's own checks look for are kept)
_DATA_ECHOES = (
    (re.compile(r"^Complex data not supported", re.S),
     "{arg} holds complex numbers (Complex data not supported): pass real values"),
    (re.compile(r"could not convert (string|\S+) to float", re.S),
     "{arg} must be numeric: a value could not be converted to float"),
    (re.compile(r"^boolean value of NA is ambiguous", re.S),
     "{arg} holds missing values (pandas NA), which are not supported: drop or impute them first"),
)
#: the frames a DataFrame's conversion to an array passes through (pandas' ``DataFrame.__array__``)
_DATAFRAME_FRAMES = ("__array__",)


def _unconvertible_columns(exc):
    """The names of the DataFrame columns that ``float`` refuses, when ``exc`` came from converting one.

    The DataFrame is found in the traceback (the ``self`` of pandas' ``__array__``), so every
    caller of :func:`naming` names the columns without passing the data; ``None`` when the error did
    not come from a DataFrame.  Column names are public (the schema, not a record); values are never
    read into the message.
    """
    tb = exc.__traceback__
    while tb is not None:
        frame, tb = tb.tb_frame, tb.tb_next
        frame_self = frame.f_locals.get("self") if frame.f_code.co_name in _DATAFRAME_FRAMES else None
        if type(frame_self).__name__ == "DataFrame" and hasattr(frame_self, "items"):
            bad = []
            for name, column in frame_self.items():
                try:
                    np.asarray(column, dtype=np.float64)
                except (TypeError, ValueError):
                    bad.append(f"{str(name)!r} (dtype {column.dtype})")
            return bad or None
    return None


#: the array dump inside scikit-learn's "Expected 2D array, got 1D array instead" message
_ARRAY_DUMP = re.compile(r"\s*array=.*?\.\n(?=Reshape)", re.S)


def check_container(X, arg="X"):
    """A ``TypeError`` naming ``arg`` when ``X`` is an iterator or generator.

    NumPy turns a generator into a 0-d object array, so scikit-learn would call it a
    "scalar"; a one-shot iterator cannot be validated without consuming it.

    Examples
    --------
    >>> check_container([[1.0]])
    >>> check_container(r for r in [[1.0]])
    Traceback (most recent call last):
    ...
    TypeError: X must be an array-like (a list, a NumPy array, a DataFrame), got a generator; materialise it first, e.g. with list(X) or numpy.asarray(list(X)).
    """
    if isinstance(X, collections.abc.Iterator):
        kind = "generator" if isinstance(X, collections.abc.Generator) else type(X).__name__ + " iterator"
        raise TypeError(
            f"{arg} must be an array-like (a list, a NumPy array, a DataFrame), got a {kind}; "
            f"materialise it first, e.g. with list({arg}) or numpy.asarray(list({arg}))."
        )


@contextmanager
def naming(arg, private=False):
    """Re-raise a ``ValueError``/``TypeError`` so that it names ``arg`` and echoes no data.

    A message that does not name ``arg`` gets ``(argument <arg>)`` appended (scikit-learn's
    "Found array with dim 3" names no argument).  Messages that quote the data (complex
    values, a string that is not a number, pandas' NA) are replaced by ones that describe
    the problem without the values (a DataFrame's non-numeric columns are named: column names are
    public); with ``private=True`` (the inputs of a private
    estimator) any message that still quotes an array or a data value is cut to its first
    sentence, so an error never prints a data value.
    """
    try:
        yield
    except (ValueError, TypeError) as exc:
        msg = str(exc)
        text = None
        for pattern, replacement in _DATA_ECHOES:
            if pattern.search(msg):
                text = replacement.format(arg=arg) + "."
                break
        columns = _unconvertible_columns(exc) if text is not None and "to float" in text else None
        if columns:  # review HNR F13: name the DataFrame's non-numeric columns
            which = "column " if len(columns) == 1 else "columns "
            text = (f"{arg} must be numeric: {which}{', '.join(columns)} could not be converted to float; encode "
                    f"or drop {'it' if len(columns) == 1 else 'them'} first (e.g. OneHotEncoder in a "
                    "ColumnTransformer for a categorical column).")
        if text is None:
            msg = _ARRAY_DUMP.sub(" ", msg)
            if private and ("[" in msg or "'" in msg or "array(" in msg):
                msg = re.split(r"(?<=[.:])\s|\n", msg, maxsplit=1)[0].rstrip(":")
            if re.search(_WORD.format(re.escape(arg)), msg):
                if msg == str(exc):
                    raise
                text = msg
            else:
                text = f"{msg.rstrip().rstrip('.')} (argument {arg})."
        try:
            named = type(exc)(text)
        except Exception:  # an exception class with another signature (e.g. UnicodeDecodeError)
            named = (TypeError if isinstance(exc, TypeError) else ValueError)(text)
        raise named from (None if private else exc)
