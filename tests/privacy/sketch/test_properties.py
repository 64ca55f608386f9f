"""Property-based tests (Hypothesis) of PrivateCountSketch.

Rejected calls change nothing and the stream continues as if they were never made; copies
continue identically; ``epsilon_spent_`` never undercounts an independent accountant written
here from the mechanisms' definitions (subsampling, merges of disjoint shards, forks).  Every
test runs with ``derandomize=True``; each failure is a real finding: do not mark these xfail.
"""

import copy
import importlib.util
import math
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given
from hypothesis import strategies as st

from sklearn_bayes import PrivateCountSketch

# the shared property-test tools (settings, snapshots, the rejection check), loaded by path
_tools_spec = importlib.util.spec_from_file_location("_property_tools", Path(__file__).parents[2] / "_property_tools.py")
_tools = importlib.util.module_from_spec(_tools_spec)
_tools_spec.loader.exec_module(_tools)
_settings, note, _pickled, _canonical, _expect_rejection, _names, _gen = (
    _tools._settings, _tools.note, _tools._pickled, _tools._canonical, _tools._expect_rejection, _tools._names,
    _tools._gen,
)

# The pure-Python reference of the (public) hash functions, used by the independent
# accountant to find the cells a query set touches.
_spec = importlib.util.spec_from_file_location(
    "_sketch_reference_for_properties", Path(__file__).parent / "_sketch_reference.py"
)
ref = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ref)

pytestmark = [
    pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning"),
    # the pickle round trips continue copies on purpose: their shared ledger is a snapshot
    pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.DetachedLedgerWarning"),
]



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

