"""The response store of :class:`~sklearn_bayes.AdaptiveLDPFrequencyEstimator`.

A response is ``(y, sid)``: ``y`` the released category (``-1`` for the set-valued
responses of a static mechanism) and ``sid`` the row of a table of distinct subsets
(RRRR: the subset ``S`` the user answered with; static mechanisms: the response set
``A(y)``).  The table holds, per row, the membership mask, the size and (RRRR only) the
member list the kernels of ``_fast/_ldp.pyx`` read.  Rows are interned by their packed
bits, so memory grows as 12 bytes per response plus about ``K`` bytes per distinct
subset (RRRR: the kernels read a byte per category) or ``ceil(K / 8)`` bytes per distinct
response set (static mechanisms: the sets are kept as packed bits, ``np.packbits`` rows,
never unpacked as a whole; 2000 subset-selection responses at ``K = 10^6`` take 250 MB).

Transactions.  The arrays are append-only buffers: a recording call writes beyond the
recorded lengths ``n`` / ``n_sids`` and then raises the counters.  The estimator works
on :meth:`ResponseStore.copy` (a new store object sharing the buffers, with its own
counters) and binds it only when the call succeeds, so a rejected call leaves the bound
store as it was; :meth:`ResponseStore.__getstate__` pickles the used part only.  The
index of the subset table (packed bits -> row) is shared the same way: an entry is used
only if its row is below ``n_sids`` and holds that subset; otherwise a rejected call left
it (its row is unused, or a later call stored another subset there) and it is
overwritten when the subset is seen again.  A copy costs ``O(1)``, not ``O(n_sids)``;
the index is not pickled but rebuilt from the table on loading.

Also here: :func:`distinct_masks` (vectorised interning by packed keys) and
:func:`new_store_id` (identifiers that let ``merge`` refuse to count a store twice).
"""

import uuid

import numpy as np

from sklearn_bayes.privacy._ldp._mechanisms import popcount_rows
from sklearn_bayes.privacy._ldp._rrrr import A0, A1, B_IN, B_OUT, B_SELF

__all__ = ["ResponseStore", "distinct_masks", "distinct_packed", "new_store_id"]


def distinct_packed(packed):
    """Distinct packed rows (``np.packbits``, big-endian) in lexicographic order of the unpacked rows, and the inverse."""
    packed = np.ascontiguousarray(packed, dtype=np.uint8)
    n, nb = packed.shape
    if n <= 1:
        return packed.copy(), np.zeros(n, dtype=np.intp)
    if nb <= 8:
        keys = np.zeros((n, 8), dtype=np.uint8)
        keys[:, :nb] = packed
        keys = keys.view(">u8").ravel()
        # the distinct rows read back from the sorted keys: no return_index (its stable sort costs
        # 3-4 times the rest at n = 5000)
        uniq, inv = np.unique(keys, return_inverse=True)
        return np.ascontiguousarray(uniq.astype(">u8").view(np.uint8).reshape(-1, 8)[:, :nb]), inv.ravel()
    keys = packed.view(np.dtype((np.void, nb))).ravel()
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    return np.ascontiguousarray(packed[first]), inv.ravel()


def distinct_masks(masks):
    """Distinct rows of a boolean ``(n, K)`` mask in lexicographic order, and the inverse.

    Same result as ``np.unique(masks, axis=0, return_inverse=True)`` (``False < True``,
    first column most significant), computed on the rows packed into bits: for
    ``K <= 64`` one ``uint64`` key per row (a 1-d sort), otherwise byte rows.
    """
    n, K = masks.shape
    if n <= 1:  # one response per call in deployment: nothing to sort
        return np.ascontiguousarray(masks, dtype=bool), np.zeros(n, dtype=np.intp)
    packed = np.packbits(masks, axis=1)  # big-endian bit order: column 0 is the MSB
    nb = packed.shape[1]
    if nb <= 8:
        keys = np.zeros((n, 8), dtype=np.uint8)
        keys[:, :nb] = packed
        keys = keys.view(">u8").ravel()  # big-endian: numeric order = lexicographic row order
    else:
        # rows as opaque byte strings, compared like memcmp (unsigned bytes, first byte most
        # significant): the order of np.unique(packed, axis=0), without its per-column
        # structured dtype (which costs O(K) Python steps per call)
        keys = np.ascontiguousarray(packed).view(np.dtype((np.void, nb))).ravel()
    _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    return np.ascontiguousarray(masks[first]), inv.ravel()


def new_store_id():
    """A fresh identifier of a response store (128 random bits from the operating system).

    It is not drawn from the estimator's generator, so it changes neither the privacy
    noise of a simulation nor the MCMC; it only lets :meth:`merge` refuse to count a
    store twice.
    """
    return uuid.uuid4().hex


def _grow(arr, n):
    """Return ``arr`` with capacity >= n along axis 0 (doubling), copying the content.

    The new rows are zeros from ``np.zeros`` (pages the operating system zeroes lazily:
    growing the ``(n_sids, K)`` subset tables at large ``K`` touches only what is written).
    """
    if arr.shape[0] >= n:
        return arr
    cap = max(n, 2 * arr.shape[0], 16)
    new = np.zeros((cap,) + arr.shape[1:], dtype=arr.dtype)
    new[: arr.shape[0]] = arr
    return new


class ResponseStore:
    """Recorded responses ``(y, subset)`` with a table of distinct subsets.

    Parameters
    ----------
    n_categories : int
    members : bool
        Keep the member list of every subset (the RRRR kernels read it; a static
        mechanism's response sets, mostly distinct, would cost ``4 K`` bytes each).

    Attributes
    ----------
    n : int
        Number of responses; ``ys[:n]``, ``sids[:n]``, ``sizes[:n]`` are used.
    n_sids : int
        Number of distinct subsets; ``masks[:n_sids]`` (uint8 ``(., K)``),
        ``sid_k[:n_sids]`` (sizes) and ``members[:n_sids]`` are used.
    store_ids : frozenset of str
        Identifiers of the stores whose responses this one holds (see ``merge``).
    """

    def __init__(self, n_categories, members=True):
        K = int(n_categories)
        # a static mechanism's store (no member lists) keeps its sets as packed bits
        self.packed = not members
        # not "n_categories": an attribute named like one of the estimator's would share its
        # string with the estimator's in a pickle, and whether it does after a round trip
        # depends on CPython's key sharing (the pickles of a store and of its round trip differed)
        self.K = K
        self.ys = np.zeros(0, dtype=np.int32)
        self.sids = np.zeros(0, dtype=np.int32)
        self.sizes = np.zeros(0, dtype=np.int32)
        self.masks = np.zeros((0, (K + 7) // 8 if self.packed else K), dtype=np.uint8)
        self.members = np.zeros((0, 0 if self.packed else K), dtype=np.int32)
        self.sid_k = np.zeros(0, dtype=np.int32)
        self.keep_members = bool(members)
        self._index = {}  # packed subset bits -> sid (possibly stale: see the module notes)
        self.n = 0
        self.n_sids = 0
        self.store_ids = frozenset({new_store_id()})
        self._cache = {}

    @property
    def n_categories(self):
        return self.K

    @property
    def index(self):
        """Packed subset bits -> row of the table (built from the table when first needed after loading)."""
        index = self.__dict__.get("_index")
        if index is None:
            index = self._index = self._build_index()
        return index

    # ------------------------------------------------------------------ transactions, pickling
    def copy(self):
        """A store to record into: shares the append-only buffers and index, owns its counters (O(1))."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __getstate__(self):
        """Only the used part of the buffers; the index and the grouping cache are rebuilt when loaded."""
        state = dict(self.__dict__)
        state["_index"] = None  # rebuilt from the table when needed
        lengths = {"ys": self.n, "sids": self.n, "sizes": self.n, "masks": self.n_sids, "sid_k": self.n_sids,
                   "members": self.n_sids if self.keep_members else 0}
        for key, m in lengths.items():
            if state[key].shape[0] != m:  # a trimmed store pickles its arrays as they are
                state[key] = state[key][:m].copy()
        state["_cache"] = {}
        return state

    def __setstate__(self, state):
        # as BaseEstimator.__setstate__: the keys are not re-interned, so they stay the
        # objects the pickle shares with the estimator's keys (a pickle of the unpickled
        # estimator is then byte-identical to the original's)
        if "n_categories" in state:  # pickled by the first version of this class
            state = dict(state)
            state["K"] = state.pop("n_categories")
            state.pop("index", None)
            state["_index"] = None
        if "packed" not in state:  # pickled before static stores packed their sets
            state = dict(state)
            state["packed"] = not state["keep_members"]
            if state["packed"]:
                state["masks"] = np.packbits(np.asarray(state["masks"][: state["n_sids"]], dtype=bool), axis=1)
                state["members"] = np.zeros((0, 0), dtype=np.int32)
                state["_index"] = None
        self.__dict__.update(state)

    def _build_index(self):
        """The index of the used subset table: packed bits of row ``s`` -> ``s``."""
        ns = self.n_sids
        packed = self.masks[:ns] if self.packed else np.packbits(self.masks[:ns], axis=1)
        return {row.tobytes(): s for s, row in enumerate(packed)}

    # ------------------------------------------------------------------ recording
    def _changed(self):
        self._cache = {}  # a new dict: the store this one was copied from keeps its cache

    def ensure_capacity(self, n_new, n_new_rows):
        """Room for ``n_new`` more responses and ``n_new_rows`` more subset rows."""
        n = self.n
        self.ys = _grow(self.ys, n + n_new)
        self.sids = _grow(self.sids, n + n_new)
        self.sizes = _grow(self.sizes, n + n_new)
        self.masks = _grow(self.masks, self.n_sids + n_new_rows)
        if self.keep_members:
            self.members = _grow(self.members, self.n_sids + n_new_rows)
        self.sid_k = _grow(self.sid_k, self.n_sids + n_new_rows)

    def intern(self, rows):
        """Ids of the distinct subset rows ``rows`` (bool, ``(m, K)``), adding new ones to the table.

        One Python step per distinct subset, not per response.
        """
        ids = np.empty(rows.shape[0], dtype=np.int32)
        self.masks = _grow(self.masks, self.n_sids + rows.shape[0])
        if self.keep_members:
            self.members = _grow(self.members, self.n_sids + rows.shape[0])
        self.sid_k = _grow(self.sid_k, self.n_sids + rows.shape[0])
        n_rows_new = 0
        index, n_sids = self.index, self.n_sids
        for j, row in enumerate(rows.astype(np.uint8)):
            key = np.packbits(row).tobytes()
            sid = index.get(key)  # rows are distinct: never an entry made in this call
            if sid is not None and (sid >= n_sids or not np.array_equal(self.masks[sid], row)):
                sid = None  # left by a rejected call (its row is unused or now holds another subset)
            if sid is None:
                sid = self.n_sids + n_rows_new
                self.masks[sid] = row
                if self.keep_members:
                    self.members[sid, : int(row.sum())] = np.flatnonzero(row)
                self.sid_k[sid] = int(row.sum())
                index[key] = sid
                n_rows_new += 1
            ids[j] = sid
        self.n_sids += n_rows_new
        return ids

    def intern_packed(self, rows):
        """Ids of the distinct packed rows ``rows`` (``(m, ceil(K / 8))``) of a packed store, adding new ones."""
        ids = np.empty(rows.shape[0], dtype=np.int32)
        self.masks = _grow(self.masks, self.n_sids + rows.shape[0])
        self.sid_k = _grow(self.sid_k, self.n_sids + rows.shape[0])
        sizes = popcount_rows(rows)
        n_rows_new = 0
        index, n_sids = self.index, self.n_sids
        for j, row in enumerate(rows):
            key = row.tobytes()
            sid = index.get(key)
            if sid is not None and (sid >= n_sids or not np.array_equal(self.masks[sid], row)):
                sid = None  # left by a rejected call (its row is unused or now holds another set)
            if sid is None:
                sid = self.n_sids + n_rows_new
                self.masks[sid] = row
                self.sid_k[sid] = sizes[j]
                index[key] = sid
                n_rows_new += 1
            ids[j] = sid
        self.n_sids += n_rows_new
        return ids

    def intern_masks(self, masks):
        """Subset ids of boolean ``(n, K)`` masks (vectorised: distinct rows first)."""
        if self.packed:
            return self.intern_packed_rows(np.packbits(masks, axis=1))
        uniq, inv = distinct_masks(masks)
        return self.intern(uniq)[inv]

    def intern_packed_rows(self, packed):
        """Set ids of packed rows (vectorised: distinct rows first; packed stores only)."""
        uniq, inv = distinct_packed(packed)
        return self.intern_packed(uniq)[inv]

    def append(self, ys, sids):
        """Record responses ``ys`` with subset ids ``sids`` (already in the table)."""
        n_old, n_new = self.n, len(ys)
        self.ensure_capacity(n_new, 0)
        self.ys[n_old : n_old + n_new] = ys
        self.sids[n_old : n_old + n_new] = sids
        self.sizes[n_old : n_old + n_new] = self.sid_k[sids]
        self.n = n_old + n_new
        self._changed()

    def append_sets(self, masks):
        """Record set-valued responses (static mechanisms): subset id = the set, ``y = -1``."""
        self.append(np.full(masks.shape[0], -1, dtype=np.int32), self.intern_masks(masks))

    def append_packed(self, packed):
        """Record set-valued responses given as packed rows (``np.packbits``; packed stores only)."""
        self.append(np.full(packed.shape[0], -1, dtype=np.int32), self.intern_packed_rows(packed))

    def merge_from(self, other):
        """Append every response of ``other`` (its subsets re-interned in this table)."""
        if self.packed:
            ids = self.intern_packed(other.masks[: other.n_sids])
        else:
            ids = self.intern(other.masks[: other.n_sids].astype(bool))
        self.append(other.ys[: other.n], ids[other.sids[: other.n]])
        self.store_ids = self.store_ids | other.store_ids

    def intern_new_rows(self, n_sids_before, n_sids_after, n_old, n_new):
        """Merge rows ``[n_sids_before, n_sids_after)`` written by a kernel into the table.

        The kernel appended one row per change of subset (responses ``n_old .. n_old +
        n_new`` point at them); rows already in the table are dropped and the ids remapped.
        """
        index = self.index
        masks = self.masks
        members = self.members
        sid_k = self.sid_k
        remap = np.arange(n_sids_after, dtype=np.int32)
        nxt = n_sids_before
        fresh = {}  # rows added by this call (a subset can recur among the kernel's rows)
        for s in range(n_sids_before, n_sids_after):
            key = np.packbits(masks[s]).tobytes()  # K / 8 bytes per distinct subset
            j = fresh.get(key)
            if j is None:
                j = index.get(key)
                if j is not None and (j >= n_sids_before or not np.array_equal(masks[j], masks[s])):
                    j = None  # left by a rejected call (its row is unused or now holds another subset)
            if j is None:
                if nxt != s:
                    masks[nxt] = masks[s]
                    members[nxt] = members[s]
                    sid_k[nxt] = sid_k[s]
                index[key] = fresh[key] = nxt
                j = nxt
                nxt += 1
            remap[s] = j
        sids = self.sids
        sids[n_old : n_old + n_new] = remap[sids[n_old : n_old + n_new]]
        self.n_sids = nxt

    def commit(self, n_new, sizes):
        """Raise the response counter after a kernel wrote ``n_new`` responses (sizes ``sizes``)."""
        n_old = self.n
        self.sizes[n_old : n_old + n_new] = sizes
        self.n = n_old + n_new
        self._changed()

    # ------------------------------------------------------------------ reading
    def used_sizes(self):
        """Read-only view of the recorded subset sizes (what ``subset_sizes_`` shows the user)."""
        view = self.sizes[: self.n].view()
        view.flags.writeable = False
        return view

    def subset_masks(self):
        """The used subset table as booleans ``(n_sids, K)``."""
        if self.packed:
            return np.unpackbits(self.masks[: self.n_sids], axis=1, count=self.K).astype(bool)
        return self.masks[: self.n_sids].astype(bool)

    def responses(self):
        """``(y, masks)`` of every recorded response: the released categories and boolean subsets."""
        n = self.n
        rows = self.masks[self.sids[:n]]
        if self.packed:
            return self.ys[:n].copy(), np.unpackbits(rows, axis=1, count=self.K).astype(bool)
        return self.ys[:n].copy(), rows.astype(bool)

    def cached(self, name, compute):
        """Memoised grouping of the responses (``O(n log n)``), reset by every recording.

        The values are made read-only: later reads share them.
        """
        cache = self._cache
        if name not in cache:
            value = compute()
            for arr in value:
                arr.flags.writeable = False
            cache[name] = value
        return cache[name]

    def _subset_rank(self):
        """Rank of every subset row in lexicographic order (independent of arrival order)."""
        return distinct_masks(self.subset_masks())[1].astype(np.int64)

    def rrrr_structure(self, consts):
        """The RRRR responses grouped in the kernels' form ``h_g = a_g + b_g theta_y + d_g theta(S)`` (memoised).

        When ``y`` is in ``S`` the likelihood row is ``a0 + (a1 - a0) [x = y]``, so
        (using ``sum theta = 1``) ``h = a0 + (a1 - a0) theta_y`` depends on ``(|S|, y)``
        only; otherwise ``h = b_out + (b_self - b_out) theta_y + (b_in - b_out) theta(S)``.
        Returns ``(gy, gs, ga, gb, gd, gc, s_ptr, s_idx)``: per group the category, the
        subset row (``-1``: none), the three coefficients and the count; the referenced
        subsets as CSR member lists.  Subsets are keyed by their lexicographic rank, not
        by their id, so the groups (and the MCMC's floating-point sums) are the same
        whatever order the subsets were first seen in (chunks, arrival order, merges).
        """
        return self.cached("structure", lambda: self._rrrr_structure(consts))

    def _rrrr_structure(self, consts):
        n = self.n
        K = self.K
        rank = self._subset_rank()
        sid = self.sids[:n].astype(np.int64)
        y = self.ys[:n].astype(np.int64)
        k = self.sid_k[sid].astype(np.int64)
        ins = self.masks[sid, y].astype(bool)
        key = np.where(ins, 2 * (k * K + y), 2 * (rank[sid] * K + y) + 1)
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        sid, y, k, ins = sid[first], y[first], k[first], ins[first]
        c = consts[k]
        ga = np.where(ins, c[:, A0], c[:, B_OUT])
        gb = np.where(ins, c[:, A1] - c[:, A0], c[:, B_SELF] - c[:, B_OUT])
        uses_s = ~ins & (k > 0)
        gd = np.where(uses_s, c[:, B_IN] - c[:, B_OUT], 0.0)
        _, first_s, inv = np.unique(rank[sid[uses_s]], return_index=True, return_inverse=True)
        subs = sid[uses_s][first_s]
        gs = np.full(sid.size, -1, dtype=np.int32)
        gs[uses_s] = inv.ravel()
        sizes = self.sid_k[subs]
        s_ptr = np.zeros(subs.size + 1, dtype=np.int32)
        np.cumsum(sizes, out=s_ptr[1:])
        s_idx = np.concatenate([self.members[j, : int(kk)] for j, kk in zip(subs, sizes)] or [np.zeros(0)])
        return (y.astype(np.int32), gs, np.ascontiguousarray(ga), np.ascontiguousarray(gb),
                np.ascontiguousarray(gd), counts.astype(float), s_ptr, s_idx.astype(np.int32))

    def likelihood_rows(self, consts):
        """Distinct dense likelihood rows ``L[g, x] = g(y_g | x)`` of the RRRR responses and their counts.

        Memoised like :meth:`rrrr_structure`.
        """
        return self.cached("likelihood", lambda: self._likelihood_rows(consts))

    def _likelihood_rows(self, consts):
        n = self.n
        K = self.K
        keys = self.sids[:n].astype(np.int64) * K + self.ys[:n]
        uniq, counts = np.unique(keys, return_counts=True)
        sid = uniq // K
        y = (uniq % K).astype(np.intp)
        rows = np.arange(uniq.size)
        c = consts[self.sid_k[sid]]  # (G, 6)
        in_s = self.masks[sid].astype(bool)  # (G, K): x in S_g
        x_is_y = np.zeros((uniq.size, K), dtype=bool)
        x_is_y[rows, y] = True
        y_in_s = in_s[rows, y][:, None]
        L = np.where(
            y_in_s,
            np.where(x_is_y, c[:, [A1]], c[:, [A0]]),
            np.where(x_is_y, c[:, [B_SELF]], np.where(in_s, c[:, [B_IN]], c[:, [B_OUT]])),
        )
        # merge equal rows: when y is in S the row depends on (|S|, y) only, not on S
        L, inv = np.unique(L, axis=0, return_inverse=True)
        counts = np.bincount(inv.ravel(), weights=counts, minlength=L.shape[0]).astype(np.int64)
        return L, counts

    def set_counts(self):
        """Static mechanisms: the distinct response sets (packed rows, lexicographic order) and their counts.

        Lexicographic order makes the groups the same whatever the arrival order.  The rows
        are ``np.packbits`` rows (``ceil(K / 8)`` bytes each), never unpacked as a whole.
        """
        n = self.n
        rank = distinct_packed(self.masks[: self.n_sids])[1]
        sids, counts = np.unique(self.sids[:n], return_counts=True)
        order = np.argsort(rank[sids], kind="stable")
        sids, counts = sids[order], counts[order]
        return self.masks[sids], counts
