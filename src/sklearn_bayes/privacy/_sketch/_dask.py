"""One :class:`PrivateCountSketch` from a Dask collection: noise-free partials, one release.

``PrivateCountSketch.from_dask`` (documented there) is the public entry point.  The
partitions are sketched without noise by the workers (:func:`_partial_sketch`), the
partial tables are added up in a tree (:func:`_merge_partials`), and the sum becomes the
table of one sketch in the calling process, whose releases are noised and accounted as
usual.  The partials (:class:`_SketchPartial`) are exact curator state: a private type
with no query method, never returned to the user.
"""

import copy

import numpy as np
from sklearn.utils.validation import check_array, validate_data

from sklearn_bayes._fast import _hashing, _sketch
from sklearn_bayes.privacy._core import sample_noise
from sklearn_bayes.utils._validation import privacy_noise_generator
from sklearn_bayes.privacy._sketch._keys import _as_2d_items, _checked_items, _item_keys
from sklearn_bayes.privacy._sketch._release import scale_up

_NAME = "collection"


class _SketchPartial:
    """The exact (noise-free) table of some partitions: curator state, never released.

    It has no query method on purpose: it lives only inside the Dask graph of
    ``PrivateCountSketch.from_dask`` and is added into the final sketch's table.
    """

    __slots__ = ("table", "n_items", "item_kinds", "n_features")

    def __init__(self, table, n_items, item_kinds, n_features):
        self.table, self.n_items, self.item_kinds, self.n_features = table, n_items, item_kinds, n_features

    def __repr__(self):  # never shows the table
        return f"_SketchPartial(n_items={self.n_items}, shape={self.table.shape})"


def _partial_sketch(part, row_seeds, width, signed, sampling_rate, key, index):
    """Sketch one partition without noise (runs on a worker).

    With ``sampling_rate < 1`` the partition's subsample comes from
    ``SeedSequence(key, spawn_key=(index,))``: distinct partitions never share a stream.
    """
    X, one_d = _as_2d_items(part, _NAME)
    X = _checked_items(X, _NAME, lambda Z: check_array(
        Z, dtype=None, ensure_2d=True, ensure_all_finite=True, ensure_min_samples=0, accept_sparse=False,
        input_name=_NAME,
    ))
    keys, kinds = _item_keys(X, _NAME)
    n = int(keys.shape[0])
    if sampling_rate < 1:
        rng = np.random.default_rng(np.random.SeedSequence(key, spawn_key=(index,)))
        keys = np.ascontiguousarray(keys[rng.random(n) < sampling_rate])
    table = np.zeros((row_seeds.shape[0], width), dtype=np.int64)
    _sketch.update(table, keys, row_seeds, signed)
    # an empty 1-D partition (e.g. an empty list in a bag of tuples) does not know its number of columns
    return _SketchPartial(table, n, kinds if n else None, None if (n == 0 and one_d) else X.shape[1])


def _merge_partials(*parts):
    """Add partial tables (a node of the reduction tree; runs on a worker)."""
    n_features = {p.n_features for p in parts if p.n_features is not None}
    if len(n_features) > 1:
        raise ValueError(f"{_NAME} has partitions with different numbers of columns: {sorted(n_features)}.")
    kinds = {p.item_kinds for p in parts if p.item_kinds is not None}
    if len(kinds) > 1:
        raise TypeError(
            f"{_NAME} has items of different kinds in different partitions ({sorted(kinds)}); a stream holds one "
            "type of item."
        )
    table = parts[0].table.copy()
    for p in parts[1:]:
        table += p.table
    return _SketchPartial(
        table, sum(p.n_items for p in parts), kinds.pop() if kinds else None, n_features.pop() if n_features else None
    )


def _partitions(collection):
    """The delayed partitions of a Dask collection and its (empty) pandas meta, if any."""
    kind = type(collection).__module__.split(".")[0]
    if kind in ("dask", "dask_expr"):
        mod = type(collection).__module__
        if ".array" in mod:
            if collection.ndim not in (1, 2):
                raise ValueError(f"{_NAME} must be a 1-D or 2-D dask array, got {collection.ndim} dimensions.")
            if collection.ndim == 2:
                collection = collection.rechunk({1: -1})  # a row (one composite item) in one block
            return list(collection.to_delayed().ravel()), None
        if ".bag" in mod:
            return list(collection.to_delayed()), None
        if ".dataframe" in mod or kind == "dask_expr":
            meta = getattr(collection, "_meta", None)
            if meta is not None and hasattr(meta, "iloc"):
                return list(collection.to_delayed()), meta
    raise TypeError(
        f"{_NAME} must be a dask.array.Array, a dask.bag.Bag, or a dask.dataframe Series or DataFrame, got "
        f"{type(collection).__module__}.{type(collection).__name__}."
    )


def from_dask(cls, collection, split_every, params):
    """Build, reduce and bind (see ``PrivateCountSketch.from_dask``)."""
    import dask
    from dask import delayed

    if split_every is None or isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an int >= 2, got {split_every!r}.")
    sk = cls(**params)
    sk._validate_params()
    eps0, d, w = sk._check_new_stream()  # table memory and first noise scale, before any work
    parts, meta = _partitions(collection)
    if not parts:
        raise ValueError(f"{_NAME} has no partitions, hence no items; at least 1 is required.")
    row_seeds = _hashing.row_seeds(int(sk.hash_seed), d)
    rate = float(sk.sampling_rate)
    # Nothing is bound (no generator read, no stream started) until the cluster's work has
    # succeeded: a failing partition leaves the caller's generator, ledger and the replay
    # registry untouched, so a retry is not mistaken for a copy.  With sampling_rate < 1 the
    # partitions' subsamples come from one 128-bit key, the first draw of the sketch's
    # generator (read here from a copy, drawn for real when the stream is bound), or fresh OS
    # entropy with random_state=None.  The workers see only that key: two outputs of the
    # generator, from which its later outputs (the noise) cannot be predicted, whereas one
    # seed per partition would hand them as many outputs as there are partitions.
    key = None
    if rate < 1:
        random_state = sk.random_state
        if random_state is None:
            key = _key_of(np.random.SeedSequence().generate_state(4, np.uint64)[:2])
        else:
            # a copy: reading the key must not advance the caller's generator (a RandomState gives
            # privacy_noise_generator a seed by drawing from it)
            seeded = isinstance(random_state, (np.random.Generator, np.random.RandomState))
            source = copy.deepcopy(random_state) if seeded else random_state
            key = _draw_key(privacy_noise_generator(source))  # the stream the bound sketch draws from (int seeds too)
    signed = sk.kind == "count"
    level = [
        delayed(_partial_sketch, pure=True)(p, row_seeds, w, signed, rate, key, i) for i, p in enumerate(parts)
    ]
    while len(level) > 1:
        level = [
            delayed(_merge_partials, pure=True)(*level[i:i + split_every])
            for i in range(0, len(level), split_every)
        ]
    (total,) = dask.compute(level[0])
    if total.n_items == 0:
        raise ValueError(f"{_NAME} has 0 items; at least 1 is required.")
    # n_features_in_ / feature_names_in_ as fit would set them, from the empty meta or the shape
    if meta is not None:
        X_meta, _ = _as_2d_items(meta, _NAME)
    else:
        X_meta = np.empty((0, total.n_features), dtype=object)
    validate_data(sk, X_meta, reset=True, dtype=None, ensure_2d=True, ensure_min_samples=0, accept_sparse=False)
    if sk.n_features_in_ != total.n_features:
        raise ValueError(
            f"{_NAME} has {total.n_features} columns in its partitions but {sk.n_features_in_} in its meta."
        )
    # bind (cannot fail): as fit does, except that with sampling_rate < 1 the key is drawn first
    sk._bind_new_stream(eps0, d, w, kinds=total.item_kinds, start_noise=rate == 1)
    if rate < 1:
        if sk.random_state is not None:
            drawn = _draw_key(sk._rng)
            if drawn != key:  # an invariant, checked also under python -O
                raise RuntimeError("the subsampling key must be the bound generator's first draw")
        if sk.pan_private:
            sk.table_ += sample_noise(sk._rng, sk.noise, scale_up(d, eps0), size=(d, w))
            sk._pan_draws = 1
    sk.table_ += total.table
    sk.n_items_seen_ = total.n_items
    return sk


def _key_of(words):
    return int(words[0]) << 64 | int(words[1])


def _draw_key(rng):
    """The 128-bit subsampling key: the first draw of the sketch's generator."""
    return _key_of(rng.integers(0, 2**64, size=2, dtype=np.uint64))
