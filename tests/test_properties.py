"""Property-based tests (Hypothesis) attacking every public estimator (issue "Trust").

Hypothesis generates the data, the streams (chunk sizes and item values), bad inputs and
the interleavings of ``partial_fit`` / ``query`` / ``set_params`` / pickle round trips, and
the tests assert the promises of ``/work/shared/DESIGN.md``:

1. a rejected call (bad batch in the middle of a valid stream, a privacy parameter changed
   after fitting) raises a ``ValueError``/``TypeError`` whose message names the problem and
   leaves the estimator byte-identical (``pickle.dumps`` before == after); the stream then
   continues exactly as if the rejected call had never been made;
2. pickling mid-stream continues identically (same answers, same state, same
   ``epsilon_spent_``);
3. ``epsilon_spent_`` of :class:`PrivateCountSketch` never undercounts: it is compared with
   an independent accountant written here from the mechanisms' definitions (including
   subsampling amplification, merges of disjoint shards and forks), and the per-stream
   ledger adds up to it;
4. the linear estimators name the bad argument, a rejected ``fit`` of a fitted estimator
   changes nothing, and ``fit`` is deterministic given ``random_state``.

Every test runs with ``derandomize=True`` (deterministic CI) and a small number of examples
on small estimators.  Each failure is a real finding: do not mark these xfail.
"""

import copy
import importlib.util
import math
import numbers
import pickle
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, Phase, assume, given, settings
from hypothesis import note as _hypothesis_note
from hypothesis.errors import InvalidArgument
from hypothesis import strategies as st
from sklearn.base import clone

from sklearn_bayes import AdaptiveLDPFrequencyEstimator, PrivateCountSketch
from sklearn_bayes.privacy import RRRRMechanism
from sklearn_bayes.utils import all_estimators

# The pure-Python reference of the (public) hash functions, used by the independent
# accountant to find the cells a query set touches.
_spec = importlib.util.spec_from_file_location(
    "_sketch_reference_for_properties", Path(__file__).parent / "privacy" / "sketch" / "_sketch_reference.py"
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning"),
    # the pickle round trips continue copies on purpose: their shared ledger is a snapshot
    pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.DetachedLedgerWarning"),
]


def _settings(n, shrink=True):
    # no Phase.explain: its coverage tracing makes a failing run minutes long
    phases = (Phase.explicit, Phase.reuse, Phase.generate) + ((Phase.shrink,) if shrink else ())
    return settings(
        max_examples=n,
        phases=phases,
        deadline=None,
        derandomize=True,
        database=None,
        report_multiple_bugs=False,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


def note(text):
    """``hypothesis.note`` that also works when a helper is called outside a test (reproductions)."""
    try:
        _hypothesis_note(text)
    except InvalidArgument:
        print(text)


def _pickled(est):
    """The byte-identity the house rules promise: ``pickle.dumps`` of the whole estimator."""
    return pickle.dumps(est, protocol=pickle.HIGHEST_PROTOCOL)


def _canonical(obj):
    """A canonical snapshot of an estimator's state for comparing *two different objects*.

    ``pickle.dumps`` is the byte-identity check for one object before and after a rejected
    call.  Two objects with equal state (an original and its unpickled copy, or two runs of
    one stream) can still pickle to different bytes for a legitimate reason: the pickle memo
    records object *identity*, so a numpy dtype or a shape tuple shared between attributes in
    one object and not in the other changes the byte stream without changing any value.
    This snapshot compares every attribute by value instead: arrays by dtype, shape and
    bytes, generators by their bit-generator state, containers recursively.
    """
    if isinstance(obj, np.ndarray):
        return ("ndarray", obj.dtype.str, obj.shape, np.ascontiguousarray(obj).tobytes())
    if isinstance(obj, np.random.Generator):
        return ("Generator", repr(obj.bit_generator.state))
    if isinstance(obj, dict):
        return ("dict", tuple((repr(k), _canonical(v)) for k, v in obj.items()))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, tuple(_canonical(v) for v in obj))
    if isinstance(obj, (str, bytes, int, float, bool, type(None), np.generic)):
        return (type(obj).__name__, repr(obj))
    state = obj.__getstate__() if hasattr(obj, "__getstate__") else vars(obj)
    if isinstance(state, dict) or state is None:
        return (type(obj).__qualname__, _canonical(state or {}))
    return (type(obj).__qualname__, repr(state))


def _expect_rejection(call, types, pattern, est, what):
    """``call()`` must raise one of ``types`` with a message matching ``pattern`` and leave
    ``est`` byte-identical."""
    before = _pickled(est)
    with pytest.raises(types) as info:
        call()
    msg = str(info.value)
    note(f"{what}: {type(info.value).__name__}: {msg}")
    if pattern is not None:
        assert re.search(pattern, msg), f"{what}: the message does not name the problem ({pattern!r}): {msg!r}"
    assert _pickled(est) == before, f"{what}: the rejected call changed the estimator"
    return info.value


def _names(arg):
    """A regex matching the argument name as a word (``X`` but not ``Xt``; ``y`` but not ``your``)."""
    return rf"(?<![A-Za-z0-9_]){re.escape(arg)}(?![A-Za-z0-9_])"


def _gen(seed):
    return np.random.default_rng(seed)


# ======================================================================================
# PrivateCountSketch
# ======================================================================================

MECHANISMS = ("use_and_keep", "use_and_forget", "median_perturbation", "cell_perturbation")
ITEM = st.integers(min_value=0, max_value=40)
CHUNK = st.lists(ITEM, min_size=1, max_size=10)
QUERY = st.lists(ITEM, min_size=0, max_size=6)


@st.composite
def sketch_params(draw, mechanisms=MECHANISMS):
    mechanism = draw(st.sampled_from(mechanisms))
    params = dict(
        epsilon=draw(st.sampled_from([0.3, 1.0, 3.0])),
        depth=draw(st.integers(1, 4)),
        width=draw(st.integers(3, 24)),
        kind=draw(st.sampled_from(["count", "count_min"])),
        mechanism=mechanism,
        decay=draw(st.sampled_from([0.3, 0.5, 0.8])),
        noise=draw(st.sampled_from(["discrete_laplace", "laplace"])),
        pan_private=draw(st.booleans()) if mechanism in ("use_and_keep", "cell_perturbation") else False,
        sampling_rate=draw(st.sampled_from([1.0, 1.0, 0.5, 0.2])),
        hash_seed=draw(st.integers(0, 5)),
    )
    return params


# Bad batches: (label, builder, exception types, pattern the message must match)
SKETCH_BAD_BATCHES = [
    ("nan", lambda: np.array([1.0, np.nan]), (ValueError,), _names("X")),
    ("inf", lambda: np.array([2.0, np.inf, 3.0]), (ValueError,), _names("X")),
    ("none", lambda: [1, None, 2], (ValueError, TypeError), _names("X")),
    ("text in an int stream", lambda: ["a", "b"], (TypeError,), _names("X")),
    ("int in a text stream", lambda: [1, 2], (TypeError,), _names("X")),
    ("mixed types", lambda: [1, "a"], (TypeError,), _names("X")),
    ("object item", lambda: [1, object()], (TypeError,), _names("X")),
    ("two columns", lambda: np.zeros((3, 2), dtype=np.int64), (ValueError,), _names("X")),
    ("3-D", lambda: np.zeros((2, 2, 2), dtype=np.int64), (ValueError,), _names("X")),
    ("empty", lambda: np.zeros(0, dtype=np.int64), (ValueError,), _names("X")),
    ("scalar", lambda: 5, (ValueError, TypeError), _names("X")),
    ("string scalar", lambda: "abc", (ValueError, TypeError), _names("X")),
    ("sparse", lambda: sp.csr_matrix(np.ones((3, 1))), (TypeError,), r"(?i)sparse"),
    ("int64 overflow", lambda: np.array([2**70], dtype=object), (ValueError, TypeError), _names("X")),
]

# Parameter changes after fitting: (name, function of the fitted params -> new value)
_OTHER = {
    "kind": {"count": "count_min", "count_min": "count"},
    "noise": {"discrete_laplace": "laplace", "laplace": "discrete_laplace"},
    "mechanism": dict(zip(MECHANISMS, MECHANISMS[1:] + MECHANISMS[:1])),
}
SKETCH_PARAM_CHANGES = [
    ("epsilon", lambda p: p["epsilon"] * 2),
    ("epsilon", lambda p: -1.0),
    ("depth", lambda p: p["depth"] + 1),
    ("depth", lambda p: True),
    ("width", lambda p: p["width"] + 1),
    ("kind", lambda p: _OTHER["kind"][p["kind"]]),
    ("mechanism", lambda p: _OTHER["mechanism"][p["mechanism"]]),
    ("decay", lambda p: 0.9 if p["decay"] != 0.9 else 0.4),
    ("noise", lambda p: _OTHER["noise"][p["noise"]]),
    ("pan_private", lambda p: not p["pan_private"]),
    ("sampling_rate", lambda p: 0.7 if p["sampling_rate"] != 0.7 else 1.0),
    ("hash_seed", lambda p: p["hash_seed"] + 1),
]

_SKETCH_OP = st.one_of(
    st.tuples(st.just("fit"), CHUNK),
    st.tuples(st.just("query"), QUERY),
    st.tuples(st.just("transform"), CHUNK),
    st.tuples(st.just("pickle")),
    st.tuples(st.just("bad_batch"), st.integers(0, len(SKETCH_BAD_BATCHES) - 1), st.sampled_from(["partial_fit", "query"])),
    st.tuples(st.just("bad_param"), st.integers(0, len(SKETCH_PARAM_CHANGES) - 1),
              st.sampled_from(["partial_fit", "query", "transform"])),
)


def _sketch_view(est):
    """The observable state compared between two runs (the generator state included)."""
    return dict(
        table=est.table_.copy(),
        uses=est.uses_.copy(),
        n_items_seen=est.n_items_seen_,
        n_query_sets=est.n_query_sets_,
        epsilon_spent=est.epsilon_spent_,
        rng=est._rng.bit_generator.state,
    )


def _assert_same_view(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            assert a[k] == b[k], k


def _items(values, text):
    """The stream's items: the ints themselves, or strings made from them (a text stream)."""
    return [f"item-{v}" for v in values] if text else list(values)


_WRONG_KIND = {False: "int in a text stream", True: "text in an int stream"}  # not bad for that stream


def _run_sketch_program(params, first, ops, seed, with_bad_calls, text=False):
    """Run ``ops`` on a seeded sketch; bad calls are checked (and skipped when not asked for).

    Returns the sketch and the list of answers of every release.
    """
    ops = [(op[0], _items(op[1], text)) + tuple(op[2:]) if op[0] in ("fit", "query", "transform") else op
           for op in ops]
    from sklearn_bayes.privacy import PrivacyLedger

    # a shared ledger too: a rejected call must not record anything in it either
    est = PrivateCountSketch(random_state=_gen(seed), ledger=PrivacyLedger(), **params).partial_fit(
        _items(first, text))
    answers = []
    for op in ops:
        kind = op[0]
        frozen = params["mechanism"] == "cell_perturbation" and est.n_query_sets_ > 0
        if kind == "fit":
            if frozen:  # a static release: updating after the first query is refused
                if with_bad_calls:
                    _expect_rejection(lambda: est.partial_fit(op[1]), (ValueError,), r"cell_perturbation",
                                      est, "partial_fit after a cell_perturbation release")
                continue
            est.partial_fit(op[1])
        elif kind == "query":
            answers.append(est.query(op[1]).copy())
        elif kind == "transform":
            answers.append(est.transform(op[1]).copy())
        elif kind == "pickle":
            est = pickle.loads(pickle.dumps(est))
        elif kind == "bad_batch" and with_bad_calls:
            label, build, types, pattern = SKETCH_BAD_BATCHES[op[1]]
            method = op[2]
            if method == "query" and label == "empty":
                continue  # an empty query set is a valid release of nothing
            if (method == "partial_fit" and frozen) or label == _WRONG_KIND[text]:
                continue
            call = (lambda b=build(): est.partial_fit(b)) if method == "partial_fit" else (lambda b=build(): est.query(b))
            # the message is checked input by input in test_sketch_bad_batch_names_the_argument
            _expect_rejection(call, types, None, est, f"{method}({label})")
        elif kind == "bad_param" and with_bad_calls:
            name, new_value = SKETCH_PARAM_CHANGES[op[1]]
            method = op[2]
            if method == "partial_fit" and frozen:
                continue
            old = est.get_params()[name]
            new = new_value(params)
            est.set_params(**{name: new})
            try:
                arg = _items([1, 2, 3], text)
                call = getattr(est, method)
                _expect_rejection(lambda: call(arg), (ValueError,), _names(name), est,
                                  f"{method} after set_params({name}={new!r}) (fitted with {old!r})")
            finally:
                est.set_params(**{name: old})
    return est, answers


@_settings(150)
@given(
    params=sketch_params(),
    first=CHUNK,
    ops=st.lists(_SKETCH_OP, min_size=1, max_size=10),
    seed=st.integers(0, 2**16),
    text=st.booleans(),
)
def test_sketch_rejected_calls_change_nothing_and_the_stream_continues(params, first, ops, seed, text):
    """Property 1 (sketch): bad batches and post-fit parameter changes in the middle of a valid
    stream are refused with a message naming the problem, the sketch stays byte-identical, and
    the rest of the stream gives exactly what it gives without the rejected calls."""
    with_bad, answers_bad = _run_sketch_program(params, first, ops, seed, with_bad_calls=True, text=text)
    clean, answers_clean = _run_sketch_program(params, first, ops, seed, with_bad_calls=False, text=text)
    _assert_same_view(_sketch_view(with_bad), _sketch_view(clean))
    assert len(answers_bad) == len(answers_clean)
    for a, b in zip(answers_bad, answers_clean):
        np.testing.assert_array_equal(a, b)


@_settings(60)
@given(
    params=sketch_params(),
    change=st.integers(0, len(SKETCH_PARAM_CHANGES) - 1),
    first=CHUNK,
    queries=st.lists(QUERY, max_size=3),
    restart=CHUNK,
    seed=st.integers(0, 2**16),
)
def test_sketch_fit_restarts_with_changed_parameters(params, change, first, queries, restart, seed):
    """``fit`` is the documented restart after ``set_params``: it accepts a changed (valid)
    privacy parameter and gives exactly the sketch a fresh estimator with the new parameters
    and the same generator state gives (its accounting starts from zero)."""
    name, new_value = SKETCH_PARAM_CHANGES[change]
    new = new_value(params)
    new_params = {**params, name: new}
    try:
        PrivateCountSketch(**new_params)._validate_params()
    except ValueError:
        assume(False)  # an invalid value: the refusal is tested elsewhere
    if new_params["pan_private"] and new_params["mechanism"] not in ("use_and_keep", "cell_perturbation"):
        assume(False)
    rng = _gen(seed)
    est = PrivateCountSketch(random_state=rng, **params).fit(first)
    for q in queries:
        est.query(q)
    est.set_params(**{name: new})
    state = copy.deepcopy(rng.bit_generator.state)
    est.fit(restart)
    rng2 = _gen(0)
    rng2.bit_generator.state = state
    fresh = PrivateCountSketch(random_state=rng2, **new_params).fit(restart)
    assert est.table_.shape == (new_params["depth"], new_params["width"])
    _assert_same_view(_sketch_view(est), _sketch_view(fresh))
    assert est.epsilon_spent_ == 0 and est.n_query_sets_ == 0 and est.ledger_.epsilon_spent == 0
    q = restart[:3]
    np.testing.assert_array_equal(est.query(q), fresh.query(q))
    assert est.epsilon_spent_ == fresh.epsilon_spent_


@pytest.mark.parametrize("method", ["partial_fit", "query", "transform"])
@pytest.mark.parametrize("case", SKETCH_BAD_BATCHES, ids=[c[0] for c in SKETCH_BAD_BATCHES])
def test_sketch_bad_batch_names_the_argument(case, method):
    """Every bad batch gets the right exception type, a message naming the argument (``X``;
    ``items`` for ``query``) and leaves the sketch byte-identical."""
    label, build, types, pattern = case
    if method == "query" and label == "empty":
        pytest.skip("an empty query set is a valid release of nothing")
    stream = ["a", "b", "a"] if label == "int in a text stream" else [1, 2, 3, 2]
    est = PrivateCountSketch(depth=3, width=16, random_state=_gen(0)).fit(stream)
    if method == "query":
        pattern = pattern.replace("(?<![A-Za-z0-9_])X", "(?<![A-Za-z0-9_])(X|items)")
    _expect_rejection(lambda: getattr(est, method)(build()), types, pattern, est, f"{method}({label})")


@_settings(25)
@given(params=sketch_params(), first=CHUNK, seed=st.integers(0, 2**16), flag=st.sampled_from([True, False, np.True_, np.False_]))
def test_sketch_integer_parameters_reject_booleans(params, first, seed, flag):
    """``depth=True`` etc. is a mistake, not 1: refused by the constraints before any state exists."""
    for name in ("depth", "width", "hash_seed"):
        est = PrivateCountSketch(random_state=_gen(seed), **{**params, name: flag})
        with pytest.raises((ValueError, TypeError), match=_names(name)):
            est.fit(first)
        assert not hasattr(est, "table_")


@_settings(100)
@given(
    params=sketch_params(),
    chunks=st.lists(CHUNK, min_size=2, max_size=6),
    queries=st.lists(QUERY, min_size=1, max_size=6),
    split=st.integers(0, 100),
    seed=st.integers(0, 2**16),
    how=st.sampled_from(["pickle", "deepcopy"]),
)
def test_sketch_copy_mid_stream_continues_identically(params, chunks, queries, split, seed, how):
    """Property 2 (sketch): a copy taken mid-stream (pickle round trip or deepcopy), fed the same
    remaining chunks and query sets, gives identical answers, state and ``epsilon_spent_``."""
    # interleave: chunk, query, chunk, query, ... (cell_perturbation: all chunks first)
    if params["mechanism"] == "cell_perturbation":
        ops = [("fit", c) for c in chunks] + [("query", q) for q in queries]
    else:
        ops = []
        for i in range(max(len(chunks), len(queries))):
            if i < len(chunks):
                ops.append(("fit", chunks[i]))
            if i < len(queries):
                ops.append(("query", queries[i]))
    k = split % (len(ops) + 1)
    est = PrivateCountSketch(random_state=_gen(seed), **params)
    for op in ops[:k]:
        est.partial_fit(op[1]) if op[0] == "fit" else est.query(op[1])
    if not hasattr(est, "table_"):
        est.partial_fit(chunks[0])
    twin = pickle.loads(pickle.dumps(est)) if how == "pickle" else copy.deepcopy(est)
    for op in ops[k:]:
        if op[0] == "fit":
            est.partial_fit(op[1])
            twin.partial_fit(op[1])
        else:
            np.testing.assert_array_equal(est.query(op[1]), twin.query(op[1]))
    _assert_same_view(_sketch_view(est), _sketch_view(twin))


# --------------------------------------------------------------------------------------
# Property 3: an independent accountant
# --------------------------------------------------------------------------------------


class _Accountant:
    """Privacy spent by one sketch's stream, from the mechanisms' definitions only.

    - use_and_keep: ε₀ once, for any number of query sets (Theorem 4);
    - cell_perturbation: ε₀ once (each cell is noised once; the rest is post-processing);
    - use_and_forget: Σ_i max_j (ε₀/d)(1 - η^{U_ij}), ``U_ij`` = number of query sets that
      used cell (i, j) (a query set uses the distinct cells of its distinct items once);
    - median_perturbation: ε₀(1 - η^k) after k (non-empty) query sets;
    - subsampling at rate ρ: the mechanism runs with ε₀ = ln(1 + (e^ε - 1)/ρ) and the
      amplified guarantee of a mechanism spending s is ln(1 + ρ(e^s - 1)).

    Merging disjoint shards composes in parallel: use counts take the element-wise maximum,
    the number of query sets the maximum.  A fork (copy) starts a new epoch: under
    use_and_keep the releases of each epoch of a lineage are a separate ε-DP mechanism
    about the same data (two forks that both query have released 2ε).
    """

    def __init__(self, p):
        self.eps, self.d, self.w = float(p["epsilon"]), int(p["depth"]), int(p["width"])
        self.mech, self.eta, self.rho = p["mechanism"], float(p["decay"]), float(p["sampling_rate"])
        self.eps0 = self.eps if self.rho == 1 else math.log1p(math.expm1(self.eps) / self.rho)
        self.seeds = ref.row_seeds(int(p["hash_seed"]), self.d)
        self.U = np.zeros((self.d, self.w), dtype=np.int64)
        self.k = 0
        self.epochs = [False]  # per epoch of this object's path: did it release anything?
        # lineage-wide: the ids of the fork segments (epochs) that released, shared by forks
        self.segment = 0
        self.lineage = {"next": 1, "released": set(), "parent": {0: None}}

    def query(self, items):
        distinct = set(int(x) for x in items)
        if not distinct:
            return
        self.k += 1
        self.epochs[-1] = True
        self.lineage["released"].add(self.segment)
        if self.mech == "use_and_forget":
            cells = {(i, c) for x in distinct for i, (c, _) in enumerate(ref.locate(ref.int_key(x), self.seeds, self.w))}
            for i, c in cells:
                self.U[i, c] += 1

    def merge(self, other):
        self.U = np.maximum(self.U, other.U)
        self.k = max(self.k, other.k)
        self.epochs[-1] = self.epochs[-1] or any(other.epochs)

    def fork(self):
        lineage, self.lineage = self.lineage, None
        twin = copy.deepcopy(self)
        self.lineage = twin.lineage = lineage
        source = self.segment
        for acct in (self, twin):
            acct.epochs.append(False)
            lineage["parent"][lineage["next"]] = source
            acct.segment = lineage["next"]
            lineage["next"] += 1
        return twin

    def lineage_total_lower_bound(self):
        """use_and_keep: the fork segments form a tree; one root-to-segment path is one
        use-and-keep run (ε), and the releases of the lineage need as many paths as the tree
        spanned by the released segments has leaves: ε per leaf (pure-DP composition of
        independent Laplace releases about the same cells is tight)."""
        if self.mech != "use_and_keep":
            return self.spent()
        parent, spanned = self.lineage["parent"], set()
        for seg in self.lineage["released"]:
            while seg is not None and seg not in spanned:
                spanned.add(seg)
                seg = parent[seg]
        leaves = [seg for seg in spanned if not any(parent[t] == seg for t in spanned)]
        return self.eps * len(leaves)

    def _amplify(self, s):
        return s if self.rho == 1 or s == 0 else math.log1p(self.rho * math.expm1(s))

    def spent(self):
        """Spent on this object's path, treating the whole path as one stream (no fork)."""
        if self.mech in ("use_and_keep", "cell_perturbation"):
            s0 = self.eps0 if any(self.epochs) else 0.0
        elif self.mech == "use_and_forget":
            s0 = float(np.sum((self.eps0 / self.d) * -np.expm1(self.U.max(axis=1) * math.log(self.eta))))
        else:
            s0 = self.eps0 * -math.expm1(self.k * math.log(self.eta))
        return self._amplify(s0)

    def lineage_lower_bound(self):
        """use_and_keep: each epoch of the path that released is a separate ε-DP release."""
        if self.mech == "use_and_keep":
            return self.eps * sum(self.epochs)
        return self.spent()


def _assert_covers(est, acct, exact, what):
    spent = float(est.epsilon_spent_)
    bound = acct.lineage_lower_bound()
    note(f"{what}: epsilon_spent_={spent!r}, accountant={acct.spent()!r}, lineage bound={bound!r}")
    assert spent >= bound * (1 - 1e-12) - 1e-15, f"{what}: epsilon_spent_ {spent!r} undercounts {bound!r}"
    if exact:
        assert spent == pytest.approx(acct.spent(), rel=1e-9, abs=1e-15), what


def _assert_ledger_adds_up(est, what):
    assert est.ledger_.epsilon_spent == pytest.approx(est.epsilon_spent_, rel=1e-9, abs=1e-15), what


_ACCT_OP = st.one_of(
    st.tuples(st.just("fit"), CHUNK),
    st.tuples(st.just("query"), QUERY),
    st.tuples(st.just("transform"), CHUNK),
)


@_settings(150)
@given(params=sketch_params(), first=CHUNK, ops=st.lists(_ACCT_OP, min_size=1, max_size=12), seed=st.integers(0, 2**16))
def test_sketch_epsilon_spent_equals_the_independent_accountant(params, first, ops, seed):
    """Property 3 (one stream): after every release ``epsilon_spent_`` is what the mechanism's
    definition gives (never less), the per-stream ledger adds up to it, and a shared ``ledger``
    received the same total."""
    from sklearn_bayes.privacy import PrivacyLedger

    shared = PrivacyLedger()
    est = PrivateCountSketch(random_state=_gen(seed), ledger=shared, **params).partial_fit(first)
    acct = _Accountant(params)
    for op in ops:
        if op[0] == "fit":
            if params["mechanism"] == "cell_perturbation" and est.n_query_sets_:
                continue
            est.partial_fit(op[1])
        else:
            answers = np.ravel((est.query if op[0] == "query" else est.transform)(op[1]))
            acct.query(op[1])
            for v in set(op[1]):  # a query set answers repeated items once (one answer)
                idx = [i for i, x in enumerate(op[1]) if x == v]
                assert np.all(answers[idx] == answers[idx[0]]), (v, answers)
        _assert_covers(est, acct, exact=True, what=str(op[0]))
        _assert_ledger_adds_up(est, str(op[0]))
        assert shared.epsilon_spent == pytest.approx(est.epsilon_spent_, rel=1e-9, abs=1e-15)


@_settings(100)
@given(
    params=sketch_params(),
    shard_a=st.lists(CHUNK, min_size=1, max_size=3),
    shard_b=st.lists(CHUNK, min_size=1, max_size=3),
    queries_a=st.lists(QUERY, max_size=3),
    queries_b=st.lists(QUERY, max_size=3),
    after=st.lists(QUERY, max_size=3),
    seed=st.integers(0, 2**16),
)
def test_sketch_merge_of_disjoint_shards_never_undercounts(params, shard_a, shard_b, queries_a, queries_b, after, seed):
    """Property 3 (merge): two shards queried independently, merged, queried again: the merged
    ``epsilon_spent_`` covers the parallel composition and the ledger adds up to it; the merged
    table is the sum of the shards'.  Self-merge and merging a copy are refused."""
    a = PrivateCountSketch(random_state=_gen(seed), **params)
    b = PrivateCountSketch(random_state=_gen(seed + 1), **params)
    acct_a, acct_b = _Accountant(params), _Accountant(params)
    for sk, acct, chunks, queries in ((a, acct_a, shard_a, queries_a), (b, acct_b, shard_b, queries_b)):
        for c in chunks:
            sk.partial_fit(c)
        if params["mechanism"] == "cell_perturbation":
            continue  # merge before the static release
        for q in queries:
            sk.query(q)
            acct.query(q)
    # refused merges: with itself, with a copy of itself (the same shard twice)
    _expect_rejection(lambda: a.merge(a), (ValueError,), r"(?i)itself|same|self|shard|overlap", a, "a.merge(a)")
    twin = copy.deepcopy(b)
    _expect_rejection(lambda: b.merge(twin), (ValueError,), r"(?i)copy|same|shard|overlap|itself", b,
                      "b.merge(deepcopy(b))")
    table = a.table_.astype(np.float64) + b.table_
    a.merge(b)
    acct_a.merge(acct_b)
    np.testing.assert_array_equal(a.table_, table)
    _assert_covers(a, acct_a, exact=False, what="merge")
    _assert_ledger_adds_up(a, "merge")
    # the merged sketch already holds b's shard: merging b again is refused
    _expect_rejection(lambda: a.merge(b), (ValueError,), r"(?i)shard|overlap|same|already|copy", a,
                      "merging a shard twice")
    for q in after:
        a.query(q)
        acct_a.query(q)
        _assert_covers(a, acct_a, exact=False, what="query after merge")
        _assert_ledger_adds_up(a, "query after merge")


@_settings(40)
@given(params=sketch_params(), change=st.integers(0, len(SKETCH_PARAM_CHANGES) - 1), chunk=CHUNK,
       seed=st.integers(0, 2**16))
def test_sketch_merge_of_incompatible_sketches_is_refused(params, change, chunk, seed):
    """Merging a shard fitted with another privacy parameter (or another item type) is refused,
    naming the parameter, and leaves both sketches byte-identical."""
    name, new_value = SKETCH_PARAM_CHANGES[change]
    other_params = {**params, name: new_value(params)}
    try:
        PrivateCountSketch(**other_params)._validate_params()
    except ValueError:
        assume(False)
    if other_params["pan_private"] and other_params["mechanism"] not in ("use_and_keep", "cell_perturbation"):
        assume(False)
    a = PrivateCountSketch(random_state=_gen(seed), **params).fit(chunk)
    b = PrivateCountSketch(random_state=_gen(seed + 1), **other_params).fit(chunk[::-1])
    b_before = _pickled(b)
    _expect_rejection(lambda: a.merge(b), (ValueError, TypeError), _names(name), a, f"merge with another {name}")
    assert _pickled(b) == b_before
    c = PrivateCountSketch(random_state=_gen(seed + 2), **params).fit(_items(chunk, True))
    _expect_rejection(lambda: a.merge(c), (TypeError, ValueError), r"(?i)item|kind|type", a, "merge of text and ints")
    _expect_rejection(lambda: a.merge("not a sketch"), (TypeError,), _names("other"), a, "merge with a string")


@_settings(40)
@given(params=sketch_params(mechanisms=("use_and_keep", "cell_perturbation")), first=CHUNK, queries=st.lists(QUERY, max_size=3),
       items=QUERY, confidence=st.floats(0.5, 0.99), method=st.sampled_from(["theorem5", "binomial"]),
       f2=st.one_of(st.none(), st.floats(0, 1e4)), seed=st.integers(0, 2**16))
def test_sketch_error_bound_spends_nothing_and_changes_nothing(params, first, queries, items, confidence, method, f2, seed):
    """``error_bound`` is post-processing: it never changes the sketch (byte-identical), its
    bars are finite or +inf and non-negative; bad arguments are refused naming them."""
    params = {**params, "kind": "count", "sampling_rate": 1.0}
    est = PrivateCountSketch(random_state=_gen(seed), **params).fit(first)
    for q in queries:
        est.query(q)
    before = _pickled(est)
    kappa = est.error_bound(items, confidence=confidence, f2=f2, method=method)
    assert _pickled(est) == before, "error_bound changed the sketch"
    assert kappa.shape == (len(items),) and np.all(kappa >= 0) and not np.any(np.isnan(kappa))
    for bad in ({"confidence": 1.0}, {"confidence": 0.0}, {"confidence": np.nan}, {"confidence": True},
                {"f2": -1.0}, {"f2": np.inf}, {"method": "chebyshev"}):
        (arg,) = bad
        _expect_rejection(lambda: est.error_bound(items, **bad), (ValueError, TypeError), _names(arg), est,
                          f"error_bound({bad})")


_FORK_OP = st.one_of(
    st.tuples(st.just("fit"), st.integers(0, 2), CHUNK),
    st.tuples(st.just("query"), st.integers(0, 2), st.lists(ITEM, min_size=1, max_size=5)),
    st.tuples(st.just("fork"), st.integers(0, 2), st.sampled_from(["pickle", "deepcopy"])),
)


@_settings(100)
@given(
    params=sketch_params(mechanisms=("use_and_keep", "use_and_forget", "median_perturbation")),
    first=CHUNK,
    ops=st.lists(_FORK_OP, min_size=2, max_size=12),
    seed=st.integers(0, 2**16),
)
def test_sketch_forks_are_charged_again(params, first, ops, seed):
    """Property 3 (forks): copies (pickle, deepcopy) of a sketch are forks of one lineage about
    the same data.  After every release, each object's ``epsilon_spent_`` covers its own path
    as one stream and, for use_and_keep, charges every epoch (fork segment) of its path that
    released: two forks that both query have spent 2ε, never ε."""
    objs = [PrivateCountSketch(random_state=_gen(seed), **params).partial_fit(first)]
    accts = [_Accountant(params)]
    for op in ops:
        i = op[1] % len(objs)
        if op[0] == "fit":
            objs[i].partial_fit(op[2])
        elif op[0] == "query":
            objs[i].query(op[2])
            accts[i].query(op[2])
            _assert_covers(objs[i], accts[i], exact=False, what=f"query on object {i}")
        elif len(objs) < 3:
            twin = pickle.loads(pickle.dumps(objs[i])) if op[2] == "pickle" else copy.deepcopy(objs[i])
            objs.append(twin)
            accts.append(accts[i].fork())
    for i, (o, a) in enumerate(zip(objs, accts)):
        if a.epochs[-1]:  # the bound is promised by the object's last release
            _assert_covers(o, a, exact=False, what=f"object {i} at the end")
    # the composed ledgers of all the forks cover everything the lineage released
    from sklearn_bayes.privacy import PrivacyLedger

    total = PrivacyLedger.compose(*[o.ledger_ for o in objs]).epsilon_spent
    bound = max(a.lineage_total_lower_bound() for a in accts)
    note(f"composed ledgers {total!r}, lineage bound {bound!r}")
    assert total >= bound * (1 - 1e-12) - 1e-15, f"the composed ledgers ({total!r}) undercount the lineage ({bound!r})"


@_settings(30)
@given(
    mechanism=st.sampled_from(MECHANISMS),
    noise=st.sampled_from(["discrete_laplace", "laplace"]),
    epsilon=st.sampled_from([1e-300, 1e-60, 1e-30, 1e-19, 1e-12]),
    depth=st.integers(1, 4),
    pan_private=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_sketch_noise_is_never_silently_zero(mechanism, noise, epsilon, depth, pan_private, seed):
    """At a tiny ε the sketch either adds (finite) noise to every release or refuses with a
    ValueError naming the problem; it never returns the exact counts."""
    pan_private = pan_private and mechanism in ("use_and_keep", "cell_perturbation")
    est = PrivateCountSketch(epsilon=epsilon, depth=depth, width=64, mechanism=mechanism, noise=noise,
                             pan_private=pan_private, random_state=_gen(seed))
    stream = [1] * 100 + [2] * 50
    refusal = r"(?i)epsilon|noise|scale|budget"
    try:
        est.fit(stream)
    except ValueError as exc:
        assert re.search(refusal, str(exc)), str(exc)
        return
    if pan_private:
        assert np.all(est.table_ != 0) or np.count_nonzero(est.table_) > est.table_.size // 2, (
            "pan-private start without noise")
    for _ in range(4):
        try:
            answers = est.query([1, 2])
        except ValueError as exc:
            assert re.search(refusal, str(exc)), str(exc)
            return
        note(f"answers {answers}")
        assert np.all(np.isfinite(answers)), answers
        assert not np.any(answers == [100.0, 50.0]), f"exact counts released at epsilon={epsilon}: {answers}"


@_settings(40)
@given(
    epsilon=st.one_of(st.floats(1e-3, 1e6), st.sampled_from([709.0, 710.0, 1000.0, 1e5])),
    sampling_rate=st.one_of(st.floats(1e-6, 1.0), st.just(1.0)),
    mechanism=st.sampled_from(MECHANISMS),
    seed=st.integers(0, 2**16),
)
def test_sketch_valid_parameters_never_overflow(epsilon, sampling_rate, mechanism, seed):
    """Any valid (ε, ρ) either works or is refused with a ValueError: no OverflowError, and the
    accounting stays finite and at most ε."""
    est = PrivateCountSketch(epsilon=epsilon, sampling_rate=sampling_rate, depth=3, width=16,
                             mechanism=mechanism, random_state=_gen(seed))
    try:
        est.fit([1, 2, 3, 1]).query([1, 3])
    except ValueError as exc:
        assert re.search(r"(?i)epsilon|sampling_rate|noise|scale", str(exc)), str(exc)
        return
    assert math.isfinite(est.epsilon_spent_) and 0 < est.epsilon_spent_ <= epsilon * (1 + 1e-9)


# ======================================================================================
# AdaptiveLDPFrequencyEstimator and RRRRMechanism
# ======================================================================================

K_CATS = 3


def _ldp(seed, **params):
    """The papers' adaptive mode (RRRR with a proposed subset per user), whose deployment API is
    ``propose_subset`` + ``partial_fit_responses(y, subsets)``; the static default mechanisms
    (responses are sets) are attacked by the ``_ldp_static`` properties below."""
    base = dict(n_categories=K_CATS, epsilon=1.0, mechanism="rrrr", prior=1.0, n_steps=2, batch_size=8,
                n_final_steps=20, random_state=_gen(seed))
    base.update(params)
    return AdaptiveLDPFrequencyEstimator(**base)


USERS = st.lists(st.integers(0, K_CATS - 1), min_size=1, max_size=8)
SUBSET = st.lists(st.integers(0, K_CATS - 1), max_size=K_CATS - 1, unique=True)

LDP_BAD_X = [
    ("out of range", lambda: np.array([[0], [K_CATS + 2]]), (ValueError,), _names("X")),
    ("negative", lambda: np.array([[-1], [0]]), (ValueError,), _names("X")),
    ("nan", lambda: np.array([[0.0], [np.nan]]), (ValueError,), _names("X")),
    ("inf", lambda: np.array([[0.0], [np.inf]]), (ValueError,), _names("X")),
    ("non-integer", lambda: np.array([[0.5]]), (ValueError,), _names("X")),
    ("string", lambda: np.array([["a"], ["b"]], dtype=object), (ValueError, TypeError), _names("X")),
    ("two columns", lambda: np.zeros((2, 2), dtype=np.int64), (ValueError,), _names("X")),
    ("3-D", lambda: np.zeros((2, 1, 1), dtype=np.int64), (ValueError,), _names("X")),
    ("empty", lambda: np.zeros((0, 1), dtype=np.int64), (ValueError,), _names("X")),
    ("sparse", lambda: sp.csr_matrix(np.ones((2, 1))), (ValueError, TypeError), r"(?i)sparse|\bX\b"),
]

LDP_BAD_RESPONSES = [
    ("y out of range", lambda: ([0, K_CATS], []), (ValueError,), _names("y")),
    ("y negative", lambda: ([-1], []), (ValueError,), _names("y")),
    ("y boolean", lambda: (np.array([True, False]), []), (TypeError, ValueError), _names("y")),
    ("y strings", lambda: (["a"], []), (TypeError, ValueError), _names("y")),
    ("y nan", lambda: (np.array([0.0, np.nan]), []), (ValueError,), _names("y")),
    ("y empty", lambda: ([], []), (ValueError,), _names("y")),
    ("y 2-D", lambda: (np.zeros((2, 2), dtype=int), []), (ValueError,), _names("y")),
    ("subset out of range", lambda: ([0], [K_CATS]), (ValueError,), _names("subsets")),
    ("subset negative", lambda: ([0], [-1]), (ValueError,), _names("subsets")),
    ("subset repeated", lambda: ([0], [1, 1]), (ValueError,), _names("subsets")),
    ("subset is everything", lambda: ([0], list(range(K_CATS))), (ValueError,), _names("subsets")),
    ("subset of floats", lambda: ([0], [0.5]), (ValueError, TypeError), _names("subsets")),
    ("wrong number of subsets", lambda: ([0, 1, 2], [[0], [1]]), (ValueError,), _names("subsets")),
    ("mask of wrong shape", lambda: ([0, 1], np.zeros((2, K_CATS + 1), dtype=bool)), (ValueError,), _names("subsets")),
]

LDP_PARAM_CHANGES = [
    ("epsilon", 0.01),
    ("epsilon", -1.0),
    ("kappa", 0.5),
    ("kappa", 1.5),
    ("n_categories", K_CATS + 1),
    ("n_categories", True),
    ("prior", 0.5),
    ("prior", np.array([1.0, 2.0, 3.0])),
    ("utility", "non_adaptive"),
    ("mechanism", "grr"),
    ("prior", "hierarchical"),
    ("alpha", 0.5),
    ("random_state", np.random.default_rng(12345)),
    # not here: sampler, n_steps, batch_size, step_size, n_final_steps, final_estimate are
    # compute knobs that may change mid-stream (documented in the estimator's Notes)
]

_LDP_OP = st.one_of(
    st.tuples(st.just("users"), USERS),
    st.tuples(st.just("responses"), st.lists(st.integers(0, K_CATS - 1), min_size=1, max_size=4), SUBSET),
    st.tuples(st.just("propose")),
    st.tuples(st.just("pickle")),
    st.tuples(st.just("bad_x"), st.integers(0, len(LDP_BAD_X) - 1)),
    st.tuples(st.just("bad_responses"), st.integers(0, len(LDP_BAD_RESPONSES) - 1)),
    st.tuples(st.just("bad_param"), st.integers(0, len(LDP_PARAM_CHANGES) - 1),
              st.sampled_from(["partial_fit", "partial_fit_responses", "propose_subset"])),
)


def _run_ldp_program(first, ops, seed, with_bad_calls):
    est = _ldp(seed).partial_fit(np.reshape(first, (-1, 1)))
    proposals = []
    for op in ops:
        kind = op[0]
        if kind == "users":
            est.partial_fit(np.reshape(op[1], (-1, 1)))
        elif kind == "responses":  # one subset for every response, spelled unambiguously
            est.partial_fit_responses(op[1], [list(op[2])] * len(op[1]))
        elif kind == "propose":
            proposals.append(est.propose_subset().tolist())
        elif kind == "pickle":
            est = pickle.loads(pickle.dumps(est))
        elif kind == "bad_x" and with_bad_calls:
            label, build, types, pattern = LDP_BAD_X[op[1]]
            # messages: test_adaptive_ldp_bad_input_names_the_argument
            _expect_rejection(lambda b=build(): est.partial_fit(b), types, None, est, f"partial_fit({label})")
        elif kind == "bad_responses" and with_bad_calls:
            label, build, types, pattern = LDP_BAD_RESPONSES[op[1]]
            y, subsets = build()
            _expect_rejection(lambda: est.partial_fit_responses(y, subsets), types, None, est,
                              f"partial_fit_responses({label})")
        elif kind == "bad_param" and with_bad_calls:
            calls = {"partial_fit": lambda: est.partial_fit([[0], [1]]),
                     "partial_fit_responses": lambda: est.partial_fit_responses([0, 1], [0]),
                     "propose_subset": est.propose_subset}
            _expect_refused_after_change(est, *LDP_PARAM_CHANGES[op[1]], op[2], calls[op[2]])
    return est, proposals


def _expect_refused_after_change(est, name, new, method, call):
    """A frozen parameter changed after fitting: ``call`` is refused naming it, byte-identically."""
    old = est.get_params()[name]
    est.set_params(**{name: new})
    try:
        _expect_rejection(call, (ValueError, TypeError), _names(name), est,
                          f"{method} after set_params({name}={new!r}) (fitted with {old!r})")
    finally:
        est.set_params(**{name: old})


@_settings(25)
@given(first=USERS, ops=st.lists(_LDP_OP, min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_adaptive_ldp_rejected_calls_change_nothing_and_the_stream_continues(first, ops, seed):
    """Property 1 (AdaptiveLDP, simulation and deployment interleaved): bad users, bad responses,
    bad subsets and post-fit parameter changes are refused with a message naming the argument,
    the estimator stays byte-identical, and the rest of the stream (proposals, posterior sample,
    responses, theta_) is exactly what it is without the rejected calls."""
    with_bad, prop_bad = _run_ldp_program(first, ops, seed, with_bad_calls=True)
    clean, prop_clean = _run_ldp_program(first, ops, seed, with_bad_calls=False)
    assert prop_bad == prop_clean
    assert _canonical(with_bad) == _canonical(clean)
    np.testing.assert_array_equal(with_bad.theta_, clean.theta_)


@pytest.mark.parametrize("case", LDP_BAD_X + LDP_BAD_RESPONSES, ids=[c[0] for c in LDP_BAD_X + LDP_BAD_RESPONSES])
def test_adaptive_ldp_bad_input_names_the_argument(case):
    """Every bad batch (users in simulation, responses and subsets in deployment) gets the right
    exception type, a message naming the argument, and leaves the estimator byte-identical."""
    label, build, types, pattern = case
    est = _ldp(0).partial_fit([[0], [1], [2]])
    if case in LDP_BAD_X:
        call = lambda: est.partial_fit(build())  # noqa: E731
    else:
        y, subsets = build()
        call = lambda: est.partial_fit_responses(y, subsets)  # noqa: E731
    _expect_rejection(call, types, pattern, est, label)


@_settings(15)
@given(labels=st.lists(st.sampled_from(["red", "green", "blue"]), min_size=2, max_size=8, unique=True),
       seed=st.integers(0, 2**16))
def test_adaptive_ldp_unknown_label_is_refused_and_changes_nothing(labels, seed):
    """With ``n_categories=None`` the categories are the labels of the first batch; a later
    unknown label (or a label of another type) is refused naming ``X``, byte-identically."""
    assume(len(labels) >= 2)
    est = _ldp(seed, n_categories=None).partial_fit(np.array(labels, dtype=object).reshape(-1, 1))
    for bad in (["purple"], [3], [None]):
        _expect_rejection(lambda b=bad: est.partial_fit(np.array(labels[:1] + b, dtype=object).reshape(-1, 1)),
                          (ValueError, TypeError), _names("X"), est, f"unknown label {bad}")
    est.partial_fit(np.array(labels[::-1], dtype=object).reshape(-1, 1))
    assert est.n_responses_ == 2 * len(labels)


@_settings(20)
@given(
    batches=st.lists(st.lists(st.tuples(st.integers(0, K_CATS - 1), SUBSET), min_size=1, max_size=5),
                     min_size=1, max_size=4),
    seed=st.integers(0, 2**16),
)
def test_adaptive_ldp_subsets_as_lists_or_masks_are_the_same(batches, seed):
    """Deployment: responses recorded with their subsets as lists of positions, or as a boolean
    mask of shape (n, K), give the same estimator (canonical state and ``theta_``)."""
    as_lists, as_masks = _ldp(seed), _ldp(seed)
    for batch in batches:
        y = [r for r, _ in batch]
        subsets = [list(S) for _, S in batch]
        masks = np.zeros((len(batch), K_CATS), dtype=bool)
        for i, S in enumerate(subsets):
            masks[i, S] = True
        as_lists.partial_fit_responses(y, subsets)
        as_masks.partial_fit_responses(y, masks)
    np.testing.assert_array_equal(as_lists.theta_, as_masks.theta_)
    assert _canonical(as_lists) == _canonical(as_masks)


class _Boom(RuntimeError):
    """Raised by the flaky callables below, in the middle of a batch."""


_FLAKY = {"calls": 0, "fail_at": None}  # module state, so the callables pickle without state


class _FlakyUtility:
    """A picklable utility (prefers small subsets) that raises on its ``fail_at``-th call."""

    def __call__(self, theta, P, subset):
        _FLAKY["calls"] += 1
        if _FLAKY["fail_at"] is not None and _FLAKY["calls"] >= _FLAKY["fail_at"]:
            raise _Boom(f"utility failed at call {_FLAKY['calls']}")
        return float(np.sum(np.diag(P) * theta)) - 0.01 * len(subset)

    def __eq__(self, other):
        return isinstance(other, _FlakyUtility)

    def __hash__(self):
        return 0


@_settings(20)
@given(
    batches=st.lists(st.lists(st.integers(0, K_CATS - 1), min_size=1, max_size=6), min_size=2, max_size=4),
    fail_at=st.integers(1, 12),
    sampler=st.sampled_from(["sgld", "gibbs"]),
    seed=st.integers(0, 2**16),
)
def test_adaptive_ldp_failure_in_the_middle_of_a_batch_changes_nothing(batches, fail_at, sampler, seed):
    """A user-supplied utility that raises after some users of a batch were already privatised
    and sampled: the call is rolled back completely (byte-identical, generator rewound) and the
    same batch, retried, gives exactly what it gives without the failure."""

    def run(with_failure):
        _FLAKY.update(calls=0, fail_at=None)
        est = _ldp(seed, utility=_FlakyUtility(), sampler=sampler).partial_fit(np.reshape(batches[0], (-1, 1)))
        for b in batches[1:]:
            X = np.reshape(b, (-1, 1))
            if with_failure:
                before = _pickled(est)
                _FLAKY.update(calls=0, fail_at=fail_at)
                try:
                    est.partial_fit(X)
                    failed = False
                except _Boom:
                    failed = True
                _FLAKY.update(fail_at=None)
                if failed:
                    assert _pickled(est) == before, "a failure in the middle of a batch left a partial update"
                else:
                    continue  # the batch was short enough to complete: already applied
            est.partial_fit(X)
        return est

    a, b = run(True), run(False)
    assert _canonical(a) == _canonical(b)


@_settings(15)
@given(
    mechanism=st.sampled_from(["use_and_forget", "median_perturbation"]),
    decay=st.sampled_from([0.05, 0.1, 0.2]),
    noise=st.sampled_from(["discrete_laplace", "laplace"]),
    seed=st.integers(0, 2**16),
)
def test_sketch_exhausted_budget_schedule_refuses_and_changes_nothing(mechanism, decay, noise, seed):
    """Querying until the geometric budget schedule is numerically exhausted: the refusal is a
    ValueError naming the problem, it leaves the sketch byte-identical, and nothing before it
    spent more than ε."""
    est = PrivateCountSketch(epsilon=1.0, depth=2, width=8, mechanism=mechanism, decay=decay, noise=noise,
                             random_state=_gen(seed)).fit([1] * 50 + [2] * 20)
    for _ in range(2000):
        before = _pickled(est)
        try:
            answers = est.query([1, 2])
        except ValueError as exc:
            assert re.search(r"(?i)exhausted|budget|schedule|decay|scale", str(exc)), str(exc)
            assert _pickled(est) == before, "the refused query changed the sketch"
            break
        # (an exact answer is possible here: discrete noise of small scale is 0 with a sizable
        # probability; vanishing noise at huge scales is test_sketch_noise_is_never_silently_zero)
        assert np.all(np.isfinite(answers)), answers
        assert est.epsilon_spent_ <= 1.0 * (1 + 1e-12)
    else:
        pytest.fail("2000 query sets without exhausting a geometric schedule of ratio <= 0.2")


@_settings(20)
@given(
    batches=st.lists(st.one_of(st.tuples(st.just("users"), USERS),
                               st.tuples(st.just("responses"), st.lists(st.integers(0, K_CATS - 1), min_size=1,
                                                                        max_size=4), SUBSET)),
                     min_size=2, max_size=6),
    split=st.integers(0, 100),
    seed=st.integers(0, 2**16),
    how=st.sampled_from(["pickle", "deepcopy"]),
)
def test_adaptive_ldp_copy_mid_stream_continues_identically(batches, split, seed, how):
    """Property 2 (AdaptiveLDP): a copy taken mid-stream, fed the same remaining users/responses,
    proposes the same subsets and ends in the byte-identical state with the same ``theta_``,
    even when the copy read its estimate and posterior draws in between."""
    k = 1 + split % len(batches)

    def feed(est, batch):
        if batch[0] == "users":
            return est.partial_fit(np.reshape(batch[1], (-1, 1)))
        return est.partial_fit_responses(batch[1], [list(batch[2])] * len(batch[1]))

    est = _ldp(seed)
    for b in batches[:k]:
        feed(est, b)
    twin = pickle.loads(pickle.dumps(est)) if how == "pickle" else copy.deepcopy(est)
    # reads never change later fitting: the twin reads its estimate and posterior draws
    twin.theta_, twin.sample_posterior(4), twin.credible_interval(0.9, n_samples=8)
    for b in batches[k:]:
        assert est.propose_subset().tolist() == twin.propose_subset().tolist()
        feed(est, b)
        feed(twin, b)
    np.testing.assert_array_equal(est.theta_, twin.theta_)
    np.testing.assert_array_equal(est.sample_posterior(4), twin.sample_posterior(4))
    assert _canonical(est) == _canonical(twin)


# --- the static default mechanisms (subset selection / GRR / OUE): responses are sets -------------

K_STATIC = 6
STATIC_MECHANISMS = ("auto", "grr", "oue")  # 'auto' = subset selection with the variance-optimal size


def _ldp_static(seed, mechanism="auto", **params):
    base = dict(n_categories=K_STATIC, epsilon=0.5, mechanism=mechanism, n_final_steps=20,
                random_state=_gen(seed))
    base.update(params)
    return AdaptiveLDPFrequencyEstimator(**base)


def _static_responses(est, xs, seed):
    """The masks the users' devices release for the true categories ``xs`` (client side)."""
    return est.client_mechanism().privatize(np.asarray(xs, dtype=np.int64), random_state=_gen(seed))


STATIC_USERS = st.lists(st.integers(0, K_STATIC - 1), min_size=1, max_size=8)


def _bad_static_responses(est):
    """(label, y, subsets, exception types, argument named) for the estimator's mechanism."""
    K = K_STATIC
    good = _static_responses(est, [0, 1], 0)
    too_many = good.copy()
    too_many[0] = True
    cases = [
        ("mask too wide", np.zeros((2, K + 1), dtype=bool), None, (ValueError,), "y"),
        ("mask 3-D", np.zeros((2, K, 1), dtype=bool), None, (ValueError,), "y"),
        ("no responses", np.zeros((0, K), dtype=bool), None, (ValueError,), "y"),
        ("float mask", good.astype(float), None, (ValueError, TypeError), "y"),
        ("nan", np.full((2, K), np.nan), None, (ValueError, TypeError), "y"),
        ("strings", np.array([["a"] * K]), None, (ValueError, TypeError), "y"),
        ("subsets given", good, [0], (ValueError,), "subsets"),
    ]
    k = est.client_mechanism().subset_size
    if k is not None:  # subset selection / GRR: every response holds exactly k categories
        cases.append(("wrong set size", too_many, None, (ValueError,), "y"))
    if k == 1:  # GRR also takes released positions
        cases.append(("position out of range", np.array([0, K]), None, (ValueError,), "y"))
        cases.append(("negative position", np.array([-1]), None, (ValueError,), "y"))
    return cases


LDP_STATIC_PARAM_CHANGES = [
    ("epsilon", 0.7),
    ("n_categories", K_STATIC + 1),
    ("mechanism", "rrrr"),
    ("prior", 1.0),
    ("random_state", np.random.default_rng(12345)),
]

_LDP_STATIC_OP = st.one_of(
    st.tuples(st.just("users"), STATIC_USERS),
    st.tuples(st.just("responses"), STATIC_USERS, st.integers(0, 2**16)),
    st.tuples(st.just("pickle")),
    st.tuples(st.just("read")),
    st.tuples(st.just("bad_x"), st.integers(0, len(LDP_BAD_X) - 1)),
    st.tuples(st.just("bad_responses"), st.integers(0, 20)),
    st.tuples(st.just("bad_param"), st.integers(0, len(LDP_STATIC_PARAM_CHANGES) - 1),
              st.sampled_from(["partial_fit", "partial_fit_responses", "client_mechanism"])),
)


def _run_ldp_static_program(mechanism, first, ops, seed, with_bad_calls):
    est = _ldp_static(seed, mechanism).partial_fit(np.reshape(first, (-1, 1)))
    for op in ops:
        kind = op[0]
        if kind == "users":
            est.partial_fit(np.reshape(op[1], (-1, 1)))
        elif kind == "responses":
            est.partial_fit_responses(_static_responses(est, op[1], op[2]))
        elif kind == "pickle":
            est = pickle.loads(pickle.dumps(est))
        elif kind == "read" and with_bad_calls:  # reads change nothing later fitting sees
            est.theta_, est.credible_interval(0.9, n_samples=8)
        elif kind == "bad_x" and with_bad_calls:
            label, build, types, pattern = LDP_BAD_X[op[1]]
            if label == "out of range":  # K_STATIC categories here, not K_CATS
                build = lambda: np.array([[0], [K_STATIC + 2]])  # noqa: E731
            _expect_rejection(lambda b=build(): est.partial_fit(b), types, None, est, f"partial_fit({label})")
        elif kind == "bad_responses" and with_bad_calls:
            cases = _bad_static_responses(est)
            label, y, subsets, types, name = cases[op[1] % len(cases)]
            _expect_rejection(lambda: est.partial_fit_responses(y, subsets), types, _names(name), est,
                              f"partial_fit_responses({label})")
        elif kind == "bad_param" and with_bad_calls:
            calls = {"partial_fit": lambda: est.partial_fit([[0], [1]]),
                     "partial_fit_responses": lambda: est.partial_fit_responses(np.eye(K_STATIC, dtype=bool)[:1]),
                     "client_mechanism": est.client_mechanism}
            _expect_refused_after_change(est, *LDP_STATIC_PARAM_CHANGES[op[1]], op[2], calls[op[2]])
    return est


@pytest.mark.parametrize("mechanism", STATIC_MECHANISMS)
@_settings(15)
@given(first=STATIC_USERS, ops=st.lists(_LDP_STATIC_OP, min_size=1, max_size=8), seed=st.integers(0, 2**16))
def test_adaptive_ldp_static_rejected_calls_change_nothing_and_the_stream_continues(mechanism, first, ops, seed):
    """Property 1 for the static default mechanisms: bad users, bad response sets, subsets where
    none belong and post-fit parameter changes are refused naming the argument, leave the estimator
    byte-identical, and the rest of the stream (posterior state, ``theta_``) is exactly what it is
    without the rejected calls and the reads."""
    with_bad = _run_ldp_static_program(mechanism, first, ops, seed, with_bad_calls=True)
    clean = _run_ldp_static_program(mechanism, first, ops, seed, with_bad_calls=False)
    # read both first: theta_ is memoised when read, so only the program with reads holds it
    np.testing.assert_array_equal(with_bad.theta_, clean.theta_)
    lo_hi = with_bad.credible_interval(0.9, n_samples=16)
    np.testing.assert_array_equal(lo_hi, clean.credible_interval(0.9, n_samples=16))
    assert _canonical(with_bad) == _canonical(clean)


@pytest.mark.parametrize("mechanism", STATIC_MECHANISMS)
def test_adaptive_ldp_static_bad_responses_name_the_argument(mechanism):
    """Every bad response batch of every static mechanism: the right exception type, a message
    naming the argument, the estimator byte-identical."""
    est = _ldp_static(0, mechanism).partial_fit([[0], [1], [2]])
    cases = _bad_static_responses(est)
    assert len(cases) >= 7
    for label, y, subsets, types, name in cases:
        _expect_rejection(lambda: est.partial_fit_responses(y, subsets), types, _names(name), est, label)


def test_adaptive_ldp_static_default_is_subset_selection_with_k_above_one():
    """The properties above exercise subset selection proper (k > 1), not only its GRR case."""
    est = _ldp_static(0).partial_fit([[0], [1]])
    assert est.client_mechanism().kind == "subset_selection"
    assert est.client_mechanism().subset_size > 1


@pytest.mark.parametrize("mechanism", STATIC_MECHANISMS)
@_settings(10)
@given(batches=st.lists(st.tuples(st.sampled_from(["users", "responses"]), STATIC_USERS), min_size=2, max_size=5),
       split=st.integers(0, 100), seed=st.integers(0, 2**16), how=st.sampled_from(["pickle", "deepcopy"]))
def test_adaptive_ldp_static_copy_mid_stream_continues_identically(mechanism, batches, split, seed, how):
    """Property 2 for the static mechanisms: a copy taken mid-stream (that reads its estimate and
    posterior draws) and fed the same remaining users/responses ends byte-identical."""
    k = 1 + split % len(batches)

    def feed(est, i, batch):
        if batch[0] == "users":
            return est.partial_fit(np.reshape(batch[1], (-1, 1)))
        return est.partial_fit_responses(_static_responses(est, batch[1], seed + i))

    est = _ldp_static(seed, mechanism)
    for i, b in enumerate(batches[:k]):
        feed(est, i, b)
    twin = pickle.loads(pickle.dumps(est)) if how == "pickle" else copy.deepcopy(est)
    twin.theta_, twin.sample_posterior(4), twin.credible_interval(0.9, n_samples=8)
    for i, b in enumerate(batches[k:], start=k):
        feed(est, i, b)
        feed(twin, i, b)
    np.testing.assert_array_equal(est.theta_, twin.theta_)
    np.testing.assert_array_equal(est.sample_posterior(4), twin.sample_posterior(4))
    assert _canonical(est) == _canonical(twin)


@_settings(15)
@given(first=USERS, seed=st.integers(0, 2**16), flag=st.sampled_from([True, False, np.True_, np.False_]),
       name=st.sampled_from(["n_categories", "n_steps", "batch_size", "n_final_steps"]))
def test_adaptive_ldp_integer_parameters_reject_booleans(first, seed, flag, name):
    est = _ldp(seed, **{name: flag})
    with pytest.raises((ValueError, TypeError), match=_names(name)):
        est.fit(np.reshape(first, (-1, 1)))
    assert not hasattr(est, "n_responses_")


@_settings(40)
@given(
    K=st.integers(2, 7),
    epsilon=st.one_of(st.floats(1e-3, 50.0), st.sampled_from([100.0, 400.0, 700.0])),
    kappa=st.floats(0.05, 1.0),
    data=st.data(),
)
def test_rrrr_transition_matrix_is_stochastic_and_epsilon_ldp(K, epsilon, kappa, data):
    """RRRR with any subset is a stochastic matrix whose every column has max/min <= e^ε
    (checked in log space, so a huge ε is checked too; no OverflowError)."""
    mech = RRRRMechanism(K, epsilon, kappa)
    subset = data.draw(st.lists(st.integers(0, K - 1), max_size=K - 1, unique=True))
    P = mech.transition_matrix(subset)
    assert np.all(np.isfinite(P)) and np.all(P >= 0)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(P > 0), "a zero probability makes the likelihood ratio infinite (not ε-LDP)"
    logP = np.log(P)
    ratio = logP.max(axis=0) - logP.min(axis=0)
    assert np.all(ratio <= epsilon * (1 + 1e-9) + 1e-12), (ratio.max(), epsilon)


@_settings(25)
@given(K=st.integers(2, 6), epsilon=st.floats(0.05, 5.0), kappa=st.floats(0.1, 1.0),
       name=st.sampled_from(["epsilon", "kappa", "n_categories"]), data=st.data())
def test_rrrr_parameters_cannot_change_behind_its_back(K, epsilon, kappa, name, data):
    """Assigning a parameter either raises AttributeError, or the mechanism really becomes the
    new one (its transition matrix equals a freshly built one): the repr never lies."""
    mech = RRRRMechanism(K, epsilon, kappa)
    new = {"epsilon": epsilon / 10, "kappa": max(kappa / 2, 0.05), "n_categories": K + 1}[name]
    try:
        setattr(mech, name, new)
    except AttributeError as exc:
        assert re.search(r"(?i)" + _names(name) + r"|read-only|new mechanism", str(exc)), str(exc)
        assert getattr(mech, name) != new
        return
    fresh = RRRRMechanism(**{"n_categories": K, "epsilon": epsilon, "kappa": kappa, name: new})
    assert repr(mech) == repr(fresh)
    subset = data.draw(st.lists(st.integers(0, min(K, fresh.n_categories) - 1), max_size=K - 1, unique=True))
    np.testing.assert_array_equal(mech.transition_matrix(subset), fresh.transition_matrix(subset))


RRRR_BAD_X = [
    (lambda K: [0, K], (ValueError,), _names("x")),
    (lambda K: [-1], (ValueError,), _names("x")),
    (lambda K: [0.5], (ValueError, TypeError), _names("x")),
    (lambda K: np.array([True]), (TypeError, ValueError), _names("x")),
    (lambda K: ["a"], (TypeError, ValueError), _names("x")),
    (lambda K: [np.nan], (ValueError,), _names("x")),
]
RRRR_BAD_SUBSET = [
    (lambda K: [K], (ValueError,), _names("subset")),
    (lambda K: [0, 0], (ValueError,), _names("subset")),
    (lambda K: list(range(K)), (ValueError,), _names("subset")),
    (lambda K: np.ones(K, dtype=bool), (TypeError, ValueError), _names("subset")),
    (lambda K: [[0]], (ValueError,), _names("subset")),
]


@_settings(25)
@given(K=st.integers(2, 6), epsilon=st.floats(0.05, 5.0), i=st.integers(0, 5), j=st.integers(0, 4),
       seed=st.integers(0, 2**16))
def test_rrrr_bad_inputs_name_the_argument(K, epsilon, i, j, seed):
    mech = RRRRMechanism(K, epsilon)
    build, types, pattern = RRRR_BAD_X[i]
    with pytest.raises(types, match=pattern):
        mech.privatize(build(K), random_state=_gen(seed))
    build, types, pattern = RRRR_BAD_SUBSET[j]
    with pytest.raises(types, match=pattern):
        mech.privatize([0], subset=build(K), random_state=_gen(seed))
    y = mech.privatize(np.arange(K), random_state=_gen(seed))
    assert y.shape == (K,) and np.all((0 <= y) & (y < K))


# ======================================================================================
# The batch estimators (linear models and every other public estimator fitted in one call)
# ======================================================================================

STREAMING = {"PrivateCountSketch", "AdaptiveLDPFrequencyEstimator"}  # attacked above

# Small, fast instances (any estimator not listed gets its defaults, or the parameters that
# tests/test_common.py uses for scikit-learn's checks).
BATCH_PARAMS = {
    "SubsampledPriorRidge": {"random_state": 0},
    "SubsampledPriorLogisticRegression": {"random_state": 0},
    "SubsampledPriorLinearSVC": {"random_state": 0},
    "SubsampledPriorPoissonRegressor": {"random_state": 0},
    "MixtureMEstimatorRegressor": {"n_subsets": 20, "random_state": 0},
    "OnePosteriorSampleRidge": {"x_bound": 5.0, "y_bound": 300.0, "random_state": 0},
    "AdaOPSRegressor": {"x_bound": 5.0, "y_bound": 300.0, "random_state": 0},
    "DPSGLDLogisticRegression": {"x_bound": 5.0, "n_iter": 20, "n_draws": 5, "n_mcmc": 20, "batch_size": 16, "random_state": 0},
}


def _test_common_params():
    spec = importlib.util.spec_from_file_location("_test_common_for_properties", Path(__file__).parent / "test_common.py")
    try:
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return dict(getattr(mod, "TEST_PARAMS", {}))
    except Exception:  # pragma: no cover - test_common is checked on its own
        return {}


def _batch_cases():
    from sklearn.base import is_classifier

    common = _test_common_params()
    cases = {}
    for name, cls in all_estimators():
        if name in STREAMING:
            continue
        params = BATCH_PARAMS.get(name, common.get(name, {}))
        if hasattr(cls, "predict"):
            target = "binary" if is_classifier(cls()) else ("counts" if "Poisson" in name else "continuous")
        else:
            target = None  # unsupervised (a transformer of X)
        cases[name] = (lambda cls=cls, params=params: cls(**params), target)
    return cases


BATCH = _batch_cases()


def test_every_public_estimator_is_attacked_here():
    """A newly exported estimator is attacked automatically (streams above, batch below)."""
    names = {name for name, _ in all_estimators()}
    assert STREAMING <= names
    assert names - STREAMING == set(BATCH)


@st.composite
def batch_data(draw, target):
    n = draw(st.integers(30, 60))
    p = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    coef = rng.normal(size=p)
    if target == "binary":
        y = (X @ coef + rng.logistic(size=n) > 0).astype(int)
        if y.min() == y.max():
            y[: n // 2] = 1 - y[0]
    elif target == "counts":
        y = rng.poisson(np.exp(0.3 * X @ coef)).astype(float)
    else:
        y = X @ coef + rng.normal(scale=0.5, size=n)
    return X, y


def _takes_sample_weight(est):
    import inspect

    return "sample_weight" in inspect.signature(est.fit).parameters


def _bad_fit_inputs(X, y, rng, target, weights):
    """(label, X, y, sample_weight, exception types, argument named: a name or "a|b" for either)"""
    n, p = X.shape
    Xnan = X.copy()
    Xnan[rng.integers(n), rng.integers(p)] = np.nan
    Xinf = X.copy()
    Xinf[rng.integers(n), rng.integers(p)] = -np.inf
    cases = [
        ("NaN in X", Xnan, y, None, (ValueError,), "X"),
        ("inf in X", Xinf, y, None, (ValueError,), "X"),
        ("3-D X", X.reshape(n, p, 1), y, None, (ValueError,), "X"),
        ("empty X", X[:0], y[:0], None, (ValueError,), "X"),
        ("string X", np.full(X.shape, "a", dtype=object), y, None, (ValueError, TypeError), "X"),
    ]
    if target is not None:
        ynan = y.astype(float).copy()
        ynan[rng.integers(n)] = np.nan
        cases.append(("NaN in y", X, ynan, None, (ValueError,), "y"))
        cases.append(("y of the wrong length", X, y[:-1], None, (ValueError,), "y"))
        if target == "binary":
            cases.append(("a single class in y", X, np.zeros(n, dtype=int), None, (ValueError,), "y|class|classes"))
        if target != "binary":  # labels may be strings for classifiers
            cases.append(("string y", X, np.array([f"v{v}" for v in range(n)], dtype=object), None,
                          (ValueError, TypeError), "y"))
    if weights:
        w = np.ones(n)
        w[rng.integers(n)] = -1.0
        Xwide = np.column_stack([X, X[:, :1]])  # and a different number of features
        cases += [
            ("negative sample_weight", Xwide, y, w, (ValueError,), "sample_weight"),
            ("sample_weight of the wrong length", Xwide, y, w[:-1], (ValueError,), "sample_weight"),
            ("NaN sample_weight", Xwide, y, np.where(w < 0, np.nan, w), (ValueError,), "sample_weight"),
            ("all-zero sample_weight", Xwide, y, np.zeros(n), (ValueError,), "sample_weight"),
        ]
    return cases


def _fit(est, X, y, sample_weight=None):
    if y is None:
        return est.fit(X) if sample_weight is None else est.fit(X, sample_weight=sample_weight)
    return est.fit(X, y) if sample_weight is None else est.fit(X, y, sample_weight=sample_weight)


def _output(est, X):
    return est.predict(X) if hasattr(est, "predict") else est.transform(X)


@pytest.mark.parametrize("name", sorted(BATCH))
@_settings(6, shrink=False)  # every bad input is listed on failure; shrinking the data teaches nothing
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_batch_bad_inputs_are_refused_and_change_nothing(name, data, seed):
    """Property 4: every bad input gets a ValueError/TypeError naming the argument; a rejected
    ``fit`` of a fitted estimator (including one whose X has a different number of features)
    leaves it byte-identical (its ``random_state`` Generator included), and it still predicts
    as before.  All bad inputs are tried, so one failure lists every problem."""
    make, target = BATCH[name]
    X, y = data.draw(batch_data(target))
    rng = np.random.default_rng(seed)
    est = make()
    if "random_state" in est.get_params():
        est.set_params(random_state=_gen(seed))  # a Generator parameter must not be advanced either
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(est, X, None if target is None else y)
        out = _output(est, X)
        problems = []
        for label, Xb, yb, wb, types, arg in _bad_fit_inputs(X, y, rng, target, _takes_sample_weight(est)):
            try:
                pattern = "|".join(_names(a) for a in arg.split("|"))  # "y|classes": either word
                _expect_rejection(lambda: _fit(est, Xb, None if target is None else yb, wb), types, pattern, est,
                                  f"fit({label})")
            except (Exception, pytest.fail.Exception) as exc:  # wrong type, no error, or a failed check
                problems.append(f"{label}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        # predict/transform on bad X names X and changes nothing either
        other_p = X[:, :-1] if X.shape[1] > 1 else np.column_stack([X, X])
        for label, Xb in (("NaN in X", np.full_like(X, np.nan)), ("wrong number of features", other_p),
                          ("3-D X", X[:, :, None])):
            try:
                _expect_rejection(lambda: _output(est, Xb), (ValueError,), _names("X"), est, f"predict({label})")
            except (Exception, pytest.fail.Exception) as exc:
                problems.append(f"predict {label}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        np.testing.assert_array_equal(_output(est, X), out)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", sorted(n for n in BATCH if "random_state" in BATCH[n][0]().get_params()))
@_settings(4, shrink=False)
@given(data=st.data(), seed=st.integers(0, 2**16))
def test_batch_fit_is_deterministic_given_random_state(name, data, seed):
    """Property 4: two fits with the same int ``random_state`` (or equal Generators) are identical."""
    make, target = BATCH[name]
    X, y = data.draw(batch_data(target))
    yy = None if target is None else y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = make().set_params(random_state=seed)
        b = clone(a)
        np.testing.assert_array_equal(_output(_fit(a, X, yy), X), _output(_fit(b, X, yy), X))
        if hasattr(a, "coef_"):
            np.testing.assert_array_equal(a.coef_, b.coef_)
        g1, g2 = clone(a).set_params(random_state=_gen(seed)), clone(a).set_params(random_state=_gen(seed))
        np.testing.assert_array_equal(_output(_fit(g1, X, yy), X), _output(_fit(g2, X, yy), X))


def _integer_params(est):
    """Parameters whose constraints accept integers (an ``Interval`` over ``Integral`` or the type)."""
    out = []
    for pname, constraints in getattr(est, "_parameter_constraints", {}).items():
        for c in constraints:
            if c is numbers.Integral or getattr(c, "type", None) is numbers.Integral:
                out.append(pname)
                break
    return out


@pytest.mark.parametrize("name", sorted(BATCH))
def test_batch_integer_parameters_reject_booleans(name):
    """``max_iter=True`` etc. is refused (IntegerInterval), naming the parameter."""
    make, target = BATCH[name]
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = {None: None, "continuous": X[:, 0], "binary": (X[:, 0] > 0).astype(int),
         "counts": rng.poisson(1.0, 40).astype(float)}[target]
    est = make()
    for pname in _integer_params(est):
        for flag in (True, np.True_):
            bad = clone(est).set_params(**{pname: flag})
            with pytest.raises((ValueError, TypeError), match=_names(pname)):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    _fit(bad, X, y)


@pytest.mark.parametrize("name", sorted(BATCH))
@_settings(3, shrink=False)
@given(data=st.data(), scale=st.sampled_from([1e-300, 1e-150, 1e150, 1e300]), on=st.sampled_from(["X", "y"]))
def test_batch_extreme_scales_work_or_are_refused_clearly(name, data, scale, on):
    """X or y at the ends of the float range: the fit either works (finite predictions) or is
    refused with a ValueError/TypeError naming the argument; never an obscure error
    (LinAlgError, OverflowError, ZeroDivisionError, ...)."""
    make, target = BATCH[name]
    if on == "y" and target in (None, "binary"):
        on = "X"
    X, y = data.draw(batch_data(target))
    if on == "X":
        X = X * scale
    else:
        y = y * scale
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _fit(est, X, None if target is None else y)
        except (ValueError, TypeError) as exc:
            assert re.search(_names(on), str(exc)), f"refused without naming {on}: {exc}"
            return
        out = _output(est, X)
    assert np.all(np.isfinite(out)), f"non-finite output after fitting {on} * {scale:g}"
