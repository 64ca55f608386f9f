"""Differentially private Count / Count-Min sketches for streams with intermittent queries."""

import uuid

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin, _fit_context
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_bayes._fast import _hashing, _sketch
from sklearn_bayes.privacy._core import PrivacyLedger, subsampled_base_epsilon
from sklearn_bayes.privacy._core import MIN_NOISE_SCALE, check_noise_scale, sample_noise
from sklearn_bayes.utils import (
    IntegerInterval,
    RealInterval,
    check_privacy_random_state,
    transactional,
)
from sklearn_bayes.utils._streaming import first_changed_parameter, record_parameters
from sklearn_bayes.privacy._sketch._keys import _as_2d_items, _checked_items, _item_keys
from sklearn_bayes.privacy._sketch._format import _BytesMixin
from sklearn_bayes.privacy._sketch._forks import _LIVE_FORKS, _ForkedStream
from sklearn_bayes.privacy._sketch._accuracy import _AccuracyMixin
from sklearn_bayes.privacy._sketch._merge import merge_guard, merge_shard
from sklearn_bayes.privacy._sketch._bounds import OWN_POOL_SIZE, POOL_SIZE, count_residuals, newest_sets
from sklearn_bayes.privacy._sketch._release import MECHANISMS, make_release, scale_up

__all__ = ["PrivateCountSketch"]

#: Largest ``depth``.  Each row adds noise of scale ``depth/ε`` to every answer while the
#: median gains only like ``sqrt(depth)`` (Theorem 5's interior optimum; the paper uses
#: ``d <= 15``), so more than a few dozen rows only hurts; 1024 leaves ample room.
MAX_DEPTH = 1024

#: Largest memory of the sketch's state: ``table_`` and ``uses_`` take 16 bytes per cell
#: (``depth * width`` cells).  1 GiB is 67 million cells; raise it deliberately if needed.
MAX_TABLE_BYTES = 2**30
_BYTES_PER_CELL = 16

#: The parameters a stream is built with (recorded at ``fit``; see ``fitted_params_``).
_STREAM_PARAMS = (
    "epsilon", "depth", "width", "kind", "mechanism", "decay", "noise", "pan_private", "sampling_rate", "hash_seed",
)


def _same_stream_value(name, fitted, new):
    """Whether a stream parameter is unchanged: equal values, and a bool is never the same as a number."""
    return isinstance(new, (bool, np.bool_)) == isinstance(fitted, (bool, np.bool_)) and not bool(new != fitted)


def _thinned(values):
    """At most ``POOL_SIZE`` of ``values``, evenly spaced (all rows and items keep their share)."""
    n = values.shape[0]
    return values if n <= POOL_SIZE else values[:: -(-n // POOL_SIZE)]


class PrivateCountSketch(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, _AccuracyMixin, _BytesMixin, _ForkedStream, BaseEstimator
):
    """Differentially private Count / Count-Min sketch answering intermittent frequency queries.

    Counts the items of a stream (ints, strings or bytes; several columns make a
    composite item) in a ``depth x width`` table and answers "how many times has
    ``x`` occurred so far?" at any time, for query sets of any size, with
    ε-differential privacy with respect to the presence of any one stream element
    over the sketch's whole life.  The default mechanism is *use-and-keep*
    (Algorithm 6 of *Differentially Private Frequency Sketches for Intermittent
    Queries on Large Data Streams*): each query set adds fresh noise of scale
    ``depth/ε`` once to every cell it touches and the noise stays in the table.

    Read the User Guide: :ref:`private_count_sketch`.

    Parameters
    ----------
    epsilon : float, default=1.0
        Total privacy budget of the sketch's life (all query sets together).
    depth : int, default=5
        Number of rows ``d`` (independent hash functions), at most ``MAX_DEPTH``
        (1024): each row adds noise of scale ``d/ε`` to every answer.
    width : int, default=32768
        Number of columns ``w`` per row.  ``depth * width`` cells take 16 bytes each
        (``table_`` and ``uses_``: 2.5 MiB at the defaults); more than ``MAX_TABLE_BYTES``
        (1 GiB) is refused by ``fit`` with an error naming the memory needed.  Use-and-keep
        noises only the cells a query set touches, so a wider table cuts collision error
        without adding noise.  The default was 2048 before round HSW2 (``width=2048`` restores it).
    kind : {"count", "count_min"}, default="count"
        Count Sketch (signed updates, median estimate, unbiased) or Count-Min
        (``+1`` updates, minimum estimate, overestimates).
    mechanism : {"use_and_keep", "use_and_forget", "median_perturbation", \
"cell_perturbation"}, default="use_and_keep"
        How query answers are privatised (see Notes).  ``"cell_perturbation"`` is a
        static release: the stream must be complete before the first query.
    decay : float, default=0.5
        Ratio ``η`` of the geometric budget schedules of ``"use_and_forget"`` (per
        cell) and ``"median_perturbation"`` (per query set); ignored otherwise.
    noise : {"discrete_laplace", "laplace"}, default="discrete_laplace"
        Noise distribution.  Discrete Laplace keeps integer cells integer and is the
        exact mechanism for counts; ``"laplace"`` reproduces the paper but is exposed to the
        floating-point attack of Mironov (2012): not for production.
    pan_private : bool, default=False
        Start every cell with noise of scale ``depth/ε`` so that one intrusion into the
        table (followed by queries) is also covered.  Only for ``"use_and_keep"`` and
        ``"cell_perturbation"`` (the other mechanisms keep an exact table by design).
    sampling_rate : float, default=1.0
        Keep each stream element independently with this probability and rescale the
        answers by ``1/sampling_rate``.  The mechanism then runs with the larger
        ``ε₀ = ln(1 + (e^ε - 1)/ρ)`` so that the amplified guarantee is exactly ``ε``.
    hash_seed : int, default=0
        Seed of the (public) hash functions.  Sketches to be merged need the same.
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState, default=None
        Source of the privacy noise (and of the subsampling), read when the stream
        starts (``fit`` or the first ``partial_fit``): changing it later takes effect
        at the next ``fit``.  ``None`` seeds from the operating system; an int gives
        reproducible noise for tests and emits ``SeededNoiseWarning``; a legacy
        ``RandomState`` is read as the package's other private estimators read it (a
        seed drawn from it starts the stream's generator).  A copy of a
        sketch seeded by an int or a generator replays its source's noise and warns
        (see Notes, "Copies are forks").
    ledger : PrivacyLedger or None, default=None
        An optional shared ``PrivacyLedger`` (``sklearn_bayes.privacy._core._accounting``)
        that every release is also recorded in.  It is shared (not copied) by
        :func:`sklearn.base.clone`, so all the clones fitted by a model-selection
        tool on the same data report into one ledger.  Bound when the stream starts,
        like ``random_state``: a ledger set later receives the releases of the next
        ``fit``'s stream (so no ledger ever sees only part of a stream).

    Attributes
    ----------
    table_ : ndarray of shape (depth, width)
        The sketch table (int64, or float64 with ``noise="laplace"``).  **Curator
        state**: it holds the exact counts of never-queried cells and must not be
        published; only query answers are releases.
    uses_ : ndarray of shape (depth, width)
        Number of query sets that noised each cell (``"use_and_keep"``,
        ``"cell_perturbation"``) or used it (``"use_and_forget"``).
    n_items_seen_ : int
        Number of stream elements consumed (curator state).
    n_query_sets_ : int
        Number of query sets answered.
    epsilon_spent_ : float
        Privacy spent on this stream (with subsampling amplification): the total of
        ``ledger_``, i.e. this object's history and, for in-process copies sharing
        ``ledger_``, their releases too (see Notes, "Copies are forks").
    ledger_ : PrivacyLedger
        This stream's record of releases, new at each ``fit``.  Each record carries
        the ``stream`` id, the ``fork`` id of the object that released, and a unique
        ``id``.  One record per query set (use-and-keep: ε at the first, 0 after), so
        it is the one part of the sketch that grows with the number of query sets:
        about 0.7 KB of memory, 0.26 KB of :meth:`to_bytes` and 0.19 KB of pickle per
        query set (measured: 10,000 one-item query sets add 7.1 MiB, 2.6 MB and 1.9 MB).
    fitted_params_ : dict
        The parameters the stream was built with (``epsilon``, ``depth``, ``width``,
        ``kind``, ``mechanism``, ``decay``, ``noise``, ``pan_private``,
        ``sampling_rate``, ``hash_seed``), recorded by ``fit`` or the first
        ``partial_fit`` and used by every later call.
    stream_id_ : str
        Random id of the stream, drawn by ``fit``; copies keep it.
    shard_ids_ : tuple of str
        Ids of the streams whose elements this sketch holds (its own and those of
        the sketches merged into it).
    n_features_in_ : int
        Number of columns of the input (1 for a stream of single items).
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Column names, when the input had string column names.

    See Also
    --------
    sklearn.preprocessing.TargetEncoder : Non-private encoding of categories.

    Notes
    -----
    **Sketch.**  Row ``i`` has a hash ``h_i`` into ``{0..w-1}`` and a sign hash
    ``s_i`` into ``{-1, +1}``.  Count Sketch adds ``s_i(x)`` to ``C[i, h_i(x)]`` and
    estimates ``f̂_x = median_i s_i(x) C[i, h_i(x)]``; Count-Min adds 1 and takes the
    minimum.  Neighbouring streams differ by the presence of one element, which
    changes exactly ``d`` cells by one, so protecting each cell with ``ε/d`` gives ε.

    **Mechanisms** (noise ``N(b)`` = discrete Laplace or Laplace of scale ``b``):

    - ``use_and_keep`` (Algorithm 6): a query set adds ``N(d/ε)`` once to each cell it
      touches and keeps it there.  Each cell is then a counter released with fresh
      noise at every use (Lemma 1), which is ``ε/d``-DP whatever the number of uses;
      ε-DP overall (Theorem 4) for any number of query sets.
    - ``use_and_forget`` (Algorithm 5): the table stays exact; the ``k``-th use of a
      cell adds fresh ``N(1/ε'_k)``, ``ε'_k = (ε/d)(1-η)η^{k-1}``, so that the budget
      of each cell sums to ``ε/d``.  ``epsilon_spent_`` is
      ``Σ_i max_j (ε/d)(1 - η^{U_ij})``.
    - ``median_perturbation``: the ``k``-th query set gets ``f̂_x + N(m_Q/ε_k)``,
      ``ε_k = ε(1-η)η^{k-1}``, with ``m_Q = min(n_Q, Σ_i max_j #{x ∈ Q: h_i(x)=j})``
      (Algorithm 4).  For an even ``d`` the Count Sketch median is a half-integer, so
      discrete noise is applied to ``2 f̂_x`` (sensitivity 2).
    - ``cell_perturbation``: each cell gets ``N(d/ε)`` once, at its first use; later
      queries are post-processing.  Static: no updates after the first query.

    **Limits.**  Noise scales above ``2**56`` cannot be sampled (a discrete draw would
    not fit the int64 table; such noise would drown every count anyway): ``fit``
    refuses an ``epsilon`` whose first release already needs more, and
    ``use_and_forget`` / ``median_perturbation`` refuse a query once their geometric
    schedule has shrunk the budget that far ("exhausted") -- they never answer with
    vanished noise, and ``error_bound`` refuses such a query alike.  A noisy cell that
    would overflow its dtype is refused too.

    **A running stream keeps its parameters.**  ``fit`` (or the first
    ``partial_fit``) records them in ``fitted_params_``; ``partial_fit``, ``query``,
    ``transform``, ``merge`` and ``error_bound`` use the recorded values and raise a
    ``ValueError`` naming the parameter, its fitted and its new value if
    ``set_params`` changed one since.  ``fit`` is the restart that adopts new values.

    **Copies are forks.**  A copy of a fitted sketch (``copy.copy``, ``copy.deepcopy``,
    a pickle that is loaded) answers about the same individuals as its original, so their
    releases compose.  The rule: the copy keeps ``stream_id_`` and the records of
    ``ledger_`` (the common history), and from their next release on *both* the copy
    and its original are new forks whose history is charged afresh (for use-and-keep:
    ε again at the next query set; conservative, since the common history is charged
    once more).  The copy knows it is one; its original is marked when it lives in the
    same process (``pickle.dumps`` alone marks nothing).
    ``PrivacyLedger.compose(a.ledger_, b.ledger_)`` gives the total of both forks,
    counting every record, hence the common history, once: ``2ε`` for two forks of a
    use-and-keep sketch that both answered after a copy made before any release, never
    ``ε``.  What one object's ``epsilon_spent_`` covers is its ``ledger_``: a deep copy
    shares ``ledger_`` with its original (``PrivacyLedger`` is never deep-copied), so
    both report the composed total; so does a pickled or ``from_bytes`` copy loaded in a
    process where its original is alive (it takes the original's ``ledger_``).  A copy
    loaded where its original is not has a snapshot and reports its own history (the
    common history plus its own releases); only the composition covers both.  A copy
    loaded in another process cannot mark its original: compose
    the ledgers of every copy that answers.  ``merge`` refuses a copy of a shard it
    already holds.  *A copy in a child process* -- pickled by one of its ancestors
    (joblib's process workers: ``FeatureUnion`` or ``ColumnTransformer`` with ``n_jobs > 1``
    transform there; a ``multiprocessing`` pool's task) or inherited through ``os.fork()``
    (a module-level sketch in a ``"fork"`` pool) -- refuses to release
    (``DetachedLedgerError``, before any noise is drawn, changing nothing) unless the stream
    is bound to a ``PrivacyLedger(path=...)``: its release and kept noise would be lost with
    it, unseen by the original.  Query in the parent, or give the stream a ledger file (each
    child's copy is then a fork charged afresh in it).  ``partial_fit`` and a new ``fit`` in
    the child are allowed.

    *The noise of a copy* depends on the ``random_state`` the stream was started with
    (a later ``set_params`` does not count): with ``None`` (production) the copy draws
    fresh noise seeded by the operating system; with an int, a ``Generator`` or a
    ``RandomState`` the copy holds its source's generator state and replays its noise
    (seeded runs stay reproducible), and its first release emits ``SeededNoiseWarning``
    -- replayed noise cancels between the forks' answers, which then differ by exactly
    the difference of their counts.  This is the rule of the package's other private
    estimators, whose fit warns when given a generator state that already drew privacy
    noise (a clone, deep copy or pickle of a seeded estimator).

    Duplicated items in a query set are answered once.  With ``sampling_rate = ρ < 1``
    the mechanism uses ``ε₀ = ln(1 + (e^ε-1)/ρ)`` on the subsample, whose amplified
    guarantee ``ln(1 + ρ(e^{ε₀}-1)) = ε`` (Balle, Barthe and Gaboardi 2018).

    **Error (Theorem 5, corrected).**  For use-and-keep with ``u_i`` noise draws in
    the cells of ``x``, ``Var C[i, h_i(x)] <= ||f||²/w + u_i Var N(d/ε)`` with
    ``Var Laplace(b) = 2b²`` (the paper used ``b²``), see :meth:`error_bound`.

    **Merging** adds the tables of sketches built on disjoint shards of a stream
    with the same seeds and shape; see :meth:`merge` for the privacy accounting.

    **Serialization and scale-out.**  :meth:`to_bytes` / :meth:`from_bytes` move a
    sketch between processes, machines or languages in a documented, versioned,
    checksummed format; the bytes hold the exact table (curator state) but no
    generator state, and a loaded sketch is a fork like an unpickled copy.
    :meth:`from_dask` builds one sketch from a Dask collection from noise-free partial
    tables that are never returned; its releases and ``epsilon_spent_`` are those of a
    sketch fitted in one process.  See the user guide, :ref:`scaling_out`.

    Examples
    --------
    >>> import warnings
    >>> from sklearn_bayes.privacy import PrivateCountSketch
    >>> stream = ["a", "b", "a", "c", "a"] * 200
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")  # seeded noise: fine for a doctest
    ...     sketch = PrivateCountSketch(epsilon=1.0, depth=5, width=256, random_state=0)
    ...     sketch = sketch.partial_fit(stream)
    >>> answers = sketch.query(["a", "z"])
    >>> bool(abs(answers[0] - 600) < 50), sketch.epsilon_spent_, sketch.n_query_sets_
    (True, 1.0, 1)
    >>> _ = sketch.query(["b"])  # use-and-keep: later query sets spend nothing more
    >>> sketch.epsilon_spent_, sketch.n_query_sets_
    (1.0, 2)
    """

    _parameter_constraints = {
        "epsilon": [RealInterval(0, None, closed="neither")],
        "depth": [IntegerInterval(1, MAX_DEPTH, closed="both")],
        "width": [IntegerInterval(1, 2**31 - 1, closed="both")],
        "kind": [StrOptions({"count", "count_min"})],
        "mechanism": [StrOptions(set(MECHANISMS))],
        "decay": [RealInterval(0, 1, closed="neither")],
        "noise": [StrOptions({"discrete_laplace", "laplace"})],
        "pan_private": ["boolean"],
        "sampling_rate": [RealInterval(0, 1, closed="right")],
        "hash_seed": [IntegerInterval(None, None, closed="neither")],
        "random_state": [None, IntegerInterval(None, None, closed="neither"), np.random.Generator,
                         np.random.RandomState],
        "ledger": [None, PrivacyLedger],
    }

    def __init__(
        self,
        epsilon=1.0,
        depth=5,
        width=32768,
        kind="count",
        mechanism="use_and_keep",
        decay=0.5,
        noise="discrete_laplace",
        pan_private=False,
        sampling_rate=1.0,
        hash_seed=0,
        random_state=None,
        ledger=None,
    ):
        self.epsilon = epsilon
        self.depth = depth
        self.width = width
        self.kind = kind
        self.mechanism = mechanism
        self.decay = decay
        self.noise = noise
        self.pan_private = pan_private
        self.sampling_rate = sampling_rate
        self.hash_seed = hash_seed
        self.random_state = random_state
        self.ledger = ledger

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = False
        tags.non_deterministic = True
        tags.requires_fit = True
        tags.target_tags.required = False
        tags.transformer_tags.preserves_dtype = []
        return tags

    # ------------------------------------------------------------------ stream state
    def _fp(self, name):
        """A parameter as the running stream was built with it."""
        return self.fitted_params_[name]

    def _base_epsilon(self):
        eps, rate = float(self._fp("epsilon")), float(self._fp("sampling_rate"))
        return eps if rate == 1 else subsampled_base_epsilon(eps, rate)

    @property
    def _release(self):
        """The release mechanism of the running stream (``_release.py``), with its frozen values."""
        return make_release(
            self._fp("mechanism"), self._base_epsilon(), self.table_.shape[0], float(self._fp("decay"))
        )

    def _check_stream_params(self, action):
        """Refuse to continue a stream whose parameters were changed by ``set_params``."""
        changed = first_changed_parameter(self, self.fitted_params_, _same_stream_value)
        if changed is not None:
            name, fitted, new = changed
            raise ValueError(
                f"{name}={new!r} was set after the sketch was fitted with {name}={fitted!r}: {action} "
                f"continues the running stream, which keeps the parameters it was built with. Call fit to "
                f"restart the stream with {name}={new!r}, or set {name} back to {fitted!r}."
            )

    def _check_start(self, d, w):
        """Checks of a new stream that the parameter constraints cannot express."""
        if self.pan_private and not MECHANISMS[self.mechanism].pan_private:
            raise ValueError(
                f"pan_private=True needs mechanism='use_and_keep' or 'cell_perturbation', got "
                f"mechanism={self.mechanism!r} (it keeps an exact table by design)."
            )
        nbytes = _BYTES_PER_CELL * d * w
        if nbytes > MAX_TABLE_BYTES:
            raise ValueError(
                f"depth={d} x width={w} = {d * w} cells need {nbytes / 2**30:.3g} GiB for table_ and uses_ "
                f"({_BYTES_PER_CELL} bytes per cell), above the limit of {MAX_TABLE_BYTES / 2**30:.3g} GiB "
                "(sklearn_bayes.privacy._sketch._estimator.MAX_TABLE_BYTES). Use a smaller width or depth."
            )

    def _validated_keys(self, X, name, reset, min_samples=1, check_names=True):
        """Validate a batch completely and return its keys (callers are transactional)."""
        X2, one_d = _as_2d_items(X, name)
        if not reset and one_d and self.n_features_in_ != 1:
            raise ValueError(
                f"{name} is 1-D but the sketch was fitted on items of {self.n_features_in_} columns. "
                "Reshape your data to shape (n_samples, n_features_in_)."
            )
        if not reset and isinstance(X2, np.ndarray) and not (check_names and hasattr(self, "feature_names_in_")):
            # fast path for queries on arrays (no feature names to check): the same checks
            # as validate_data, without its per-call overhead (queries can be tiny and many)
            if X2.shape[1] != self.n_features_in_:
                raise ValueError(
                    f"{name} has {X2.shape[1]} features, but PrivateCountSketch is expecting "
                    f"{self.n_features_in_} features as input."
                )
            if X2.shape[0] < min_samples:
                raise ValueError(f"{name} has 0 items; at least {min_samples} is required.")
        else:
            X2 = _checked_items(X2, name, lambda Z: validate_data(
                self, Z, reset=reset, dtype=None, ensure_2d=True, ensure_all_finite=True,
                ensure_min_samples=min_samples, accept_sparse=False,
            ))
        keys, kinds = _item_keys(X2, name)
        if not reset and X2.shape[0] > 0 and kinds != self._item_kinds:
            raise TypeError(
                f"{name} has items of kind {kinds} but the sketch was fitted on items of kind "
                f"{self._item_kinds}; a stream holds one type of item."
            )
        return keys, kinds

    def _start_stream(self, X):
        """Validate everything, then bind a new stream's state (fit, first partial_fit)."""
        eps0, d, w = self._check_new_stream()
        self._clear_stream()
        keys, kinds = self._validated_keys(X, "X", reset=True)
        self._bind_new_stream(eps0, d, w, kinds)
        return keys

    def _check_new_stream(self):
        """The checks of a new stream's parameters (nothing is bound); returns ``(ε₀, d, w)``."""
        d, w = int(self.depth), int(self.width)
        self._check_start(d, w)
        eps0 = (
            float(self.epsilon) if self.sampling_rate == 1
            else subsampled_base_epsilon(float(self.epsilon), float(self.sampling_rate))
        )
        first = make_release(self.mechanism, eps0, d, float(self.decay)).first_scale()  # the stream's smallest
        if first < MIN_NOISE_SCALE:
            check_noise_scale(first, f"epsilon={self.epsilon!r} is too large for depth={d} and "
                              f"mechanism={self.mechanism!r}: the noise")
        check_noise_scale(
            first,
            f"epsilon={self.epsilon!r} is too small for depth={d} and mechanism={self.mechanism!r}: the first "
            "release's noise",
        )
        return eps0, d, w

    def _clear_stream(self):
        for attr in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, attr)  # a restart: nothing of the previous stream survives

    def _bind_new_stream(self, eps0, d, w, kinds, start_noise=True):
        """Bind a new, empty stream (with the pan-private start noise unless ``start_noise=False``).

        Cannot fail once :meth:`_check_new_stream` passed.
        """
        rng = check_privacy_random_state(self.random_state, owner="PrivateCountSketch", instance=self)
        table = np.zeros((d, w), dtype=np.int64 if self.noise == "discrete_laplace" else np.float64)
        pan_draws = 0
        if self.pan_private and start_noise:
            table += sample_noise(rng, self.noise, scale_up(d, eps0), size=(d, w))
            pan_draws = 1
        self.fitted_params_ = record_parameters(self, _STREAM_PARAMS)
        self._rng = rng
        self._os_seeded = self.random_state is None  # copies: fresh noise, or a warned replay (_mark_copy)
        self._replays_noise = False
        self._shared_ledger = self.ledger
        self._parents_copy = False  # a new stream is this process's own (see _ForkedStream._charge)
        self._row_seeds = _hashing.row_seeds(int(self.hash_seed), d)
        self._item_kinds = kinds
        self.table_ = table
        self.uses_ = np.zeros((d, w), dtype=np.int64)
        self._pan_draws = pan_draws
        self.n_items_seen_ = 0
        self.n_query_sets_ = 0
        self.stream_id_ = uuid.uuid4().hex
        self.shard_ids_ = (self.stream_id_,)
        self._fork_id = self.stream_id_
        self._fork_pending = False  # set when the state is copied (see __setstate__)
        _LIVE_FORKS[self._fork_id] = self
        self._chain_spent0 = 0.0  # ε (before amplification) of this object's whole history
        self._last_release = None  # what lower_bound / upper_bound read (see _record_release)
        self._bound_pool = None
        self._charged = 0.0  # ε this fork has charged to ledger_
        self.ledger_ = PrivacyLedger()

    def _check_not_frozen(self):
        if MECHANISMS[self._fp("mechanism")].static and self.n_query_sets_ > 0:
            raise ValueError(
                f"mechanism={self._fp('mechanism')!r} is a static release: the stream cannot be updated after "
                "the first query. Use mechanism='use_and_keep' for intermittent queries."
            )

    def _writeable_state(self):
        # an estimator unpickled from a read-only memory map gets private copies before updating
        if not self.table_.flags.writeable:
            self.table_ = self.table_.copy()
        if not self.uses_.flags.writeable:
            self.uses_ = self.uses_.copy()

    def _consume(self, keys):
        """Add validated keys to the table (the last step of fit / partial_fit: cannot fail)."""
        self._writeable_state()
        n = keys.shape[0]
        rate = float(self._fp("sampling_rate"))
        if rate < 1:
            keys = keys[self._rng.random(n) < rate]
        _sketch.update(self.table_, keys, self._row_seeds, self._fp("kind") == "count")
        self.n_items_seen_ += int(n)

    # ------------------------------------------------------------------ stream
    @_fit_context(prefer_skip_nested_validation=True)
    @transactional
    def fit(self, X, y=None):
        """Reset the sketch and consume the stream ``X``.

        ``fit`` is the restart: it reads the parameters anew and records them in
        ``fitted_params_``, draws a new ``stream_id_``, a new noise generator from
        ``random_state`` and a new ``ledger_``, and binds the ``ledger`` parameter.  A
        rejected ``X`` leaves a fitted sketch as it was.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, n_features)
            Stream items (ints in the int64 range, strings or bytes; floats with integral
            values count as ints, and a ``str`` is the bytes of its UTF-8 encoding).  With
            several columns each row is one composite item.  A missing value (None, NaN,
            pandas NA) or an integer outside the int64 range (e.g. a ``uint64`` item
            ``>= 2**63``, which would share the key of a negative int64) is refused with a
            ``ValueError``.
        y : None
            Ignored.

        Returns
        -------
        self : PrivateCountSketch
        """
        keys = self._start_stream(X)
        self._consume(keys)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    @transactional
    def partial_fit(self, X, y=None):
        """Consume one chunk of the stream (the first call starts the stream, like :meth:`fit`).

        The whole chunk is validated before the table is touched: a rejected chunk
        leaves the sketch exactly as it was.  A running stream keeps the parameters it
        was built with: if one was changed by ``set_params`` since, a ``ValueError``
        names it (call :meth:`fit` to restart).

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, n_features)
            Stream items, as in :meth:`fit`.
        y : None
            Ignored.

        Returns
        -------
        self : PrivateCountSketch
        """
        if not hasattr(self, "table_"):
            keys = self._start_stream(X)
        else:
            self._check_stream_params("partial_fit")
            self._check_not_frozen()
            keys, _ = self._validated_keys(X, "X", reset=False)
        self._consume(keys)
        return self

    # ------------------------------------------------------------------ queries
    def _locate(self, keys):
        d, n = self.table_.shape[0], keys.shape[0]
        cols = np.empty((d, n), dtype=np.int64)
        signs = np.empty((d, n), dtype=np.int8)
        _hashing.locate(keys, self._row_seeds, self.table_.shape[1], cols, signs)
        return cols, signs

    def _row_values(self, table, cols, signs):
        """The rows' values ``s_i(x) C[i, h_i(x)]`` (Count Sketch) or ``C[i, h_i(x)]`` (Count-Min), (d, n) float."""
        vals = np.take_along_axis(table, cols, axis=1).astype(np.float64)
        return vals * signs if self._fp("kind") == "count" else vals

    def _estimate(self, table, cols, signs):
        out = np.empty(cols.shape[1], dtype=np.float64)
        _sketch.estimate(table, cols, signs, self._fp("kind") == "count", out)
        return out

    def _draw_noise(self, scale, size):
        """``size`` fresh draws of the stream's noise of scale ``scale`` (every release's noise comes from here)."""
        return sample_noise(self._rng, self._fp("noise"), scale, size=size)

    def _noisy_cells(self, cells, scale, context):
        """``table_`` at ``cells`` plus fresh noise, checked for overflow (nothing is bound here)."""
        scale = check_noise_scale(scale, context)
        noise = self._draw_noise(scale, cells.shape[0])
        old = self.table_.reshape(-1)[cells]
        new = old + noise
        if new.dtype.kind == "i":
            overflow = ((old ^ new) & (noise ^ new)) < 0
        else:
            overflow = ~np.isfinite(new)
        if np.any(overflow):
            raise ValueError(
                f"{context}: a noisy cell would overflow the table's {new.dtype} range (the noise of scale "
                f"{float(np.max(scale)):.3g} accumulated over {int(self.uses_.max())} uses); use a larger epsilon."
            )
        return new

    def _answer(self, keys):
        """Answer one query set (keys may repeat): compute everything, record, then bind.

        The release is recorded (:meth:`_charge`, the last step that can fail) before the
        noise is bound into the table in place, so a call that fails leaves the table, the
        use counts and the ledgers as they were, and the generator that
        :func:`~sklearn_bayes.utils.transactional` rewinds has produced no released noise.
        """
        self._check_attached()  # the parent's copy in a child process: refused before any noise is drawn
        self._writeable_state()
        uniq, inverse = np.unique(keys, return_inverse=True)
        cols, signs = self._locate(uniq)
        k = self.n_query_sets_
        release = self._release
        chain0, bind = release.answer(self, cols, signs, k)
        self._warn_if_replaying()
        self._charge(max(self._chain_spent0, chain0), n_items=int(uniq.shape[0]), query_set=k + 1)
        self._replays_noise = False  # (warned once per copy)
        self.n_query_sets_ = k + 1
        raw = bind()
        try:  # after the release: must not fail it (bounds are then unavailable until the next query set)
            self._record_release(release, uniq, cols, raw)
        except Exception:  # pragma: no cover - defensive
            self._last_release = None
        est = raw / float(self._fp("sampling_rate"))
        return est[inverse]

    def _record_release(self, release, keys, cols, raw):
        """Keep what ``lower_bound`` / ``upper_bound`` need of the query set just released (post-processing).

        The answers, the noise law of each item's rows (largest scale and number of draws over its
        rows: public functions of the hashes and the query sets), its noise class and, in a pool
        (this query set's values, and the newest earlier sets' to lend while this one is too small:
        ``_bounds.lent_pool``) and in per-class pools, the released row values' residuals
        (Count Sketch) or the values themselves (Count-Min).  Nothing here reads unreleased
        state: the row values are the noisy cells of this release (``releases_rows``), each a
        differentially private output.
        """
        if not release.releases_rows:
            self._last_release = None
            return
        rows = release.rows
        scales, draws = release.released_noise(self, cols)
        if self._fp("kind") == "count":
            new = count_residuals(rows, raw)
        else:
            new = rows.ravel()
        scale, ndraws = scales.max(axis=0), draws.max(axis=0)
        # items whose rows carry another noise law (use-and-forget's schedule, use-and-keep's kept
        # draws) get the pool of their own noise class when it is large enough
        # class: the item's mean noise variance over its rows, in half-octave bins
        mean_var = np.mean(scales.astype(np.float64) ** 2 * draws, axis=0)
        # the pools of this set and the newest earlier ones (a small set borrows: see _bounds.lent_pool)
        self._bound_pool = newest_sets(getattr(self, "_bound_pool", None), _thinned(new), np.mean(mean_var))
        _, cls = np.unique(np.round(2.0 * np.log2(np.maximum(mean_var, 1e-300))), return_inverse=True)
        cls = cls.ravel()
        class_pools = {}
        if cls.max(initial=0) > 0:
            per_item = new.reshape(rows.shape[0], -1) if new.shape[0] else new.reshape(0, rows.shape[1])
            for c in range(int(cls.max()) + 1):
                vals = per_item[:, cls == c].ravel()
                if vals.shape[0] >= OWN_POOL_SIZE:
                    class_pools[c] = np.sort(_thinned(vals))
        self._last_release = {
            "keys": keys, "answers": raw, "scale": scale, "draws": ndraws, "cls": cls, "class_pools": class_pools,
        }

    @transactional
    def query(self, items):
        """Answer one query set: the private estimated count of each item so far.

        Parameters
        ----------
        items : array-like of shape (n_items,) or (n_items, n_features_in_)
            The query set ``Q`` (same item type as the stream).  Repeated items get the
            same answer.

        Returns
        -------
        counts : ndarray of shape (n_items,), float64
            Noisy estimates (rescaled by ``1/sampling_rate``).
        """
        check_is_fitted(self)
        self._check_stream_params("query")
        # query sets are lists of items, not feature matrices: no column-name check for arrays
        keys, _ = self._validated_keys(items, "items", reset=False, min_samples=0, check_names=False)
        if keys.shape[0] == 0:
            return np.empty(0, dtype=np.float64)
        return self._answer(keys)

    @transactional
    def transform(self, X):
        """Private count encoding: the estimated count of each row's item, as one column.

        Each call is one query set (see :meth:`query`).

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, n_features_in_)

        Returns
        -------
        X_out : ndarray of shape (n_samples, 1)
        """
        check_is_fitted(self)
        self._check_stream_params("transform")
        keys, _ = self._validated_keys(X, "X", reset=False)
        return self._answer(keys).reshape(-1, 1)

    @property
    def _n_features_out(self):
        return 1

    # ------------------------------------------------------------------ merge
    def merge(self, other):
        """Add the sketch of a disjoint shard of the stream (map-reduce), in place.

        Both sketches must have been fitted with the same parameters (``fitted_params_``;
        ``random_state`` and ``ledger`` may differ), on the same item type, and their
        current parameters must still be those.  ``other``'s counts are left unchanged.  The
        shards must be disjoint: merging a sketch with itself, with a copy of itself or
        with a sketch that already contains one of its shards (see ``shard_ids_``) is
        refused, because it would count the same elements twice.

        Privacy: the shards hold different individuals, so their releases compose in
        parallel: the merged ``epsilon_spent_`` is the larger of the two.

        - ``use_and_keep``: tables (noise included) and noise counts are added.  A
          later release adds fresh noise to the merged cells, which for an individual
          of one shard is post-processing of that shard's noisy counter (Lemma 1)
          plus independent quantities, so the guarantee of the merged sketch stays ε.
        - ``use_and_forget``: exact tables are added; the use counts take the
          element-wise maximum so that no cell's schedule restarts.
        - ``median_perturbation``: exact tables are added; the query-set counter takes
          the maximum so that the budget schedule continues.
        - ``cell_perturbation``: refused once either sketch has answered a query
          (merge the shards before the static release).

        ``other`` becomes a new fork: its next release composes with the merged sketch's
        releases about its individuals, so it charges its history afresh to its ledgers
        (``other.epsilon_spent_`` doubles).  Query only the merged sketch.  Shards seeded
        with the same ``random_state`` draw the same noise: the merge warns
        (``SeededNoiseWarning``).

        Budgets: a merge charges the merged history to ``self``'s ledgers only, so
        ``other`` must not be bound to a shared ``ledger`` that ``self`` is not bound to
        (the same object, the same file, or a pickled copy forwarding to it): such a
        merge is refused with a ``ValueError`` naming ``ledger`` and changes nothing,
        since ``self``'s releases of ``other``'s individuals would escape that budget.
        A shard without a shared ledger may be merged into any sketch, once.

        **A shard is merged once.**  Two sketches that both held ``other``'s shard would both
        answer about its individuals while each ledger shows one budget (``a.merge(b);
        c.merge(b)``: their releases compose to twice it; review HSK2 measured a privacy loss of
        ``2ε`` for ``ε`` charged to each).  So a merge writes a zero-ε record
        (``"PrivateCountSketch/merged_into"``, naming ``self``'s ``stream_id_``) in
        ``other.ledger_``, and a sketch whose ``ledger_`` holds one is refused as ``other`` with a
        ``ValueError`` naming ``other``, changing neither sketch.  The record reaches the copies
        of ``other``: a deep copy shares ``ledger_``, a pickle or ``to_bytes`` copy loaded in
        this process while any copy of its stream lives takes that ``ledger_``, and those made
        after the merge carry it.  The process also keeps the ``stream_id_`` of every stream it
        merged, so a copy made before the merge is refused once ``other`` is gone or refit.  The
        check and the record are one atomic step (two threads, one shard: one merge succeeds).
        ``other.partial_fit`` keeps the refusal (``other`` still holds the merged elements);
        ``other.fit`` starts a new stream and ``ledger_``, which can be merged.  Not detected: a
        copy made before the merge and merged in another process (merge shards in one process,
        or compose the ledgers of every sketch that answers).

        **In a child process**, a copy of the parent's running stream that refuses to release
        there (``DetachedLedgerError``: see Notes of the class, "Copies are forks"), or a copy
        of it made there (``from_bytes(b.to_bytes())``), is refused as ``other`` with the same
        error, changing nothing: the merged sketch would answer about its
        individuals, unseen by the original in the parent (review HSK2 F2).  With a ledger file
        both may release, and the merge is allowed.

        Parameters
        ----------
        other : PrivateCountSketch
            A fitted sketch of another shard.

        Returns
        -------
        self : PrivateCountSketch

        Notes
        -----
        The call holds the locks of both sketches (taken in one global order, so two
        threads merging ``a.merge(b)`` and ``b.merge(a)`` cannot deadlock): ``other`` is
        read as one consistent state, never half-way through another thread's update.
        """
        if not isinstance(other, PrivateCountSketch):
            check_is_fitted(self)
            raise TypeError(f"other must be a PrivateCountSketch, got {type(other).__name__}.")
        with merge_guard(self, other):
            return self._merge(other)

    @transactional
    def _merge(self, other):
        return merge_shard(self, other, _STREAM_PARAMS)

    # ------------------------------------------------------------------ scale-out
    @classmethod
    def from_dask(cls, collection, *, split_every=8, **params):
        """One fitted sketch of a Dask collection of items, built on the cluster.

        Each partition is sketched **without noise** by a worker, the partial tables
        are added up in a tree (``split_every`` at a time, like ``merge``) and their sum
        becomes the table of one sketch in this process.  Noise is drawn only when that
        sketch releases (its queries), so privacy and accounting are those of one
        sketch fitted on the whole collection: the same ``epsilon_spent_`` for the same
        queries.  With the same parameters and ``random_state`` the result equals
        ``PrivateCountSketch(**params).fit(items)`` bit for bit (table, pan-private
        start, answers), except with ``sampling_rate < 1``, whose subsample is drawn per
        partition from one 128-bit key (the first draw of the sketch's generator, or
        operating-system entropy with ``random_state=None``; the workers see only that
        key, never the draws that become noise): the same distribution, other draws,
        reproducible for the same ``random_state`` and partitions.  With
        ``noise="laplace"`` and ``pan_private=True`` the float table may also differ in
        the last bits (the counts are added in another order).  Nothing is bound until
        the cluster's work has succeeded: a call that fails (a partition that raises, a
        lost worker) leaves the ``random_state`` generator and the ``ledger`` as they
        were, and its retry is not taken for a copy.

        The partial tables are exact counts: curator state, like ``table_``.  They are
        a private type without any query method and are never returned; the workers
        and the scheduler see the raw items and the partials, so the cluster belongs to
        the curator.  Only the returned sketch's answers are releases.

        Parameters
        ----------
        collection : dask.array.Array, dask.bag.Bag, dask.dataframe.Series or DataFrame
            The stream's items.  A 1-D array, a bag or a series holds single items; a
            2-D array or a data frame holds one composite item per row (as ``fit``).
            Item types as in :meth:`fit` (ints, strings or bytes).
        split_every : int, default=8
            Number of partial tables added up by one task of the reduction tree.
        **params
            Parameters of the sketch (``epsilon``, ``depth``, ``width``, ...,
            ``random_state``, ``ledger``), as for the constructor.

        Returns
        -------
        sketch : PrivateCountSketch
            Fitted on all the items, nothing released yet (``epsilon_spent_ == 0``).

        Notes
        -----
        The computation runs on the current Dask scheduler (a ``distributed.Client``
        if one is active, else Dask's default for the collection).  Dask is imported
        only by this method (``python -m pip install "dask[distributed]"``).  See the
        user guide, :ref:`scaling_out`.

        Examples
        --------
        >>> import warnings
        >>> import dask
        >>> import dask.array as da
        >>> import numpy as np
        >>> from sklearn_bayes.privacy import PrivateCountSketch
        >>> items = da.from_array(np.arange(10_000) % 100, chunks=2_500)
        >>> with warnings.catch_warnings(), dask.config.set(scheduler="synchronous"):
        ...     warnings.simplefilter("ignore")  # seeded noise: fine for a doctest
        ...     sketch = PrivateCountSketch.from_dask(items, width=512, random_state=0)
        ...     single = PrivateCountSketch(width=512, random_state=0).fit(np.arange(10_000) % 100)
        >>> bool((sketch.table_ == single.table_).all()), sketch.n_items_seen_, sketch.epsilon_spent_
        (True, 10000, 0.0)
        """
        import sklearn_bayes.privacy._sketch._dask as _sketch_dask

        return _sketch_dask.from_dask(cls, collection, split_every, params)
