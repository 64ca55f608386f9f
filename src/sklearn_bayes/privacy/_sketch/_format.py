"""The portable binary format of a fitted :class:`PrivateCountSketch` (``to_bytes`` / ``from_bytes``).

The layout (versions 1 and 2) is documented in ``PrivateCountSketch.to_bytes``; this module
is its only reader and writer.  Version 2 is version 1 with the id of the shared ledger after
the fork id; it is written for a stream bound to a shared ledger only, so the bytes of an
unbound stream are those of version 1.  Everything is little-endian; strings are UTF-8 with a
``uint32`` byte length in front.
"""

import json
import math
import struct
import zlib

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sklearn_bayes.privacy._core import PrivacyLedger
from sklearn_bayes.utils import serialized
from sklearn_bayes.privacy._sketch._forks import _LIVE_FORKS

MAGIC = b"SKBSKTCH"
FORMAT_VERSION = 2
#: the versions this reader reads (1: no ledger id; 2: the shared ledger's id after the fork id)
READ_VERSIONS = (1, 2)
#: Hash family 1: splitmix64 keys and multiply-shift row hashes (``sklearn_bayes._fast._hashing``).
HASH_FAMILY = 1

_KINDS = ("count", "count_min")
_MECHANISMS = ("use_and_keep", "use_and_forget", "median_perturbation", "cell_perturbation")
_NOISES = ("discrete_laplace", "laplace")
_ITEM_KINDS = ("number", "text")
#: Cell encodings of the table and of the use counts (0: all zero, no bytes stored).
_CELL_DTYPES = {
    0: None, 1: np.dtype("<i1"), 2: np.dtype("<i2"), 3: np.dtype("<i4"), 4: np.dtype("<i8"), 5: np.dtype("<f8"),
    6: np.dtype("<u1"), 7: np.dtype("<u2"), 8: np.dtype("<u4"),
}
_SIGNED_CODES = (1, 2, 3, 4)
_UNSIGNED_CODES = (6, 7, 8, 4)

# magic, version, flags, total length, kind, mechanism, noise, pan_private, hash family,
# table code, uses code, reserved, depth, width, epsilon, decay, sampling_rate,
# n_items_seen, n_query_sets, pan_draws, chain_spent0
_FIXED = struct.Struct("<8sHHQ8BIIdddQQQd")
#: Header flag bit 0: the stream is bound to a shared ``ledger`` (its releases are charged to that
#: budget); such bytes are loaded only with a ``ledger``.  Other bits are refused.
FLAG_SHARED_LEDGER = 1
_TRAILER = struct.Struct("<I")


def _cell_code(a, codes):
    """The narrowest encoding of an integer array among ``codes`` (0 when it is all zero)."""
    if a.dtype.kind == "f":
        return 5
    if not a.any():
        return 0
    lo, hi = int(a.min()), int(a.max())
    for code in codes:
        info = np.iinfo(_CELL_DTYPES[code])
        if info.min <= lo and hi <= info.max:
            return code
    return 4


def _str(s):
    b = s.encode("utf-8")
    return struct.pack("<I", len(b)) + b


def dumps(sk):
    """The bytes of a fitted sketch (see ``PrivateCountSketch.to_bytes``)."""
    fp = sk.fitted_params_
    d, w = sk.table_.shape
    t_code = _cell_code(sk.table_, _SIGNED_CODES)
    u_code = _cell_code(sk.uses_, _UNSIGNED_CODES)
    seed = int(fp["hash_seed"])
    seed_bytes = seed.to_bytes(max(8, (seed.bit_length() + 8) // 8), "little", signed=True)
    names = getattr(sk, "feature_names_in_", None)
    bound = sk._shared_ledger is not None  # version 2: the bytes name the ledger
    try:
        ledger = json.dumps(sk.ledger_.records, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the sketch's ledger_ holds a record that JSON cannot store: {exc}") from None
    parts = [
        b"",  # fixed header, filled in below (it holds the total length)
        struct.pack("<H", len(seed_bytes)), seed_bytes,
        _str(sk.stream_id_), _str(sk._fork_id),
        *((_str(sk._shared_ledger._ledger_id()),) if bound else ()),
        struct.pack("<I", len(sk.shard_ids_)), *(_str(s) for s in sk.shard_ids_),
        struct.pack("<I", sk.n_features_in_), bytes(_ITEM_KINDS.index(k) for k in sk._item_kinds),
        struct.pack("<B", names is not None), *((_str(str(n)) for n in names) if names is not None else ()),
        struct.pack("<I", len(ledger)), ledger,
    ]
    for a, code in ((sk.table_, t_code), (sk.uses_, u_code)):
        if code:
            parts.append(np.ascontiguousarray(a, dtype=_CELL_DTYPES[code]).tobytes())
    total = _FIXED.size + sum(len(p) for p in parts) + _TRAILER.size
    parts[0] = _FIXED.pack(
        MAGIC, 2 if bound else 1, FLAG_SHARED_LEDGER if bound else 0, total,
        _KINDS.index(fp["kind"]), _MECHANISMS.index(fp["mechanism"]), _NOISES.index(fp["noise"]),
        bool(fp["pan_private"]), HASH_FAMILY, t_code, u_code, 0,
        d, w, float(fp["epsilon"]), float(fp["decay"]), float(fp["sampling_rate"]),
        sk.n_items_seen_, sk.n_query_sets_, sk._pan_draws, float(sk._chain_spent0),
    )
    body = b"".join(parts)
    return body + _TRAILER.pack(zlib.crc32(body))


class _Reader:
    def __init__(self, view, pos):
        self.view, self.pos = view, pos

    def take(self, n, what):
        end = self.pos + n
        if n < 0 or end > len(self.view) - _TRAILER.size:
            raise ValueError(f"data is corrupt: its {what} runs past the end of the sketch.")
        out = self.view[self.pos:end]
        self.pos = end
        return out

    def unpack(self, fmt, what):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt), what))

    def str(self, what):
        (n,) = self.unpack("<I", what)
        try:
            return bytes(self.take(n, what)).decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"data is corrupt: its {what} is not UTF-8.") from None


def _code(value, names, what):
    if value >= len(names):
        raise ValueError(f"data is corrupt: unknown {what} code {value}.")
    return names[value]


def _cells(reader, code, shape, what):
    if code not in _CELL_DTYPES:
        raise ValueError(f"data is corrupt: unknown {what} cell encoding {code}.")
    if code == 0:
        return np.zeros(shape, dtype=np.int64)
    dtype = _CELL_DTYPES[code]
    raw = reader.take(shape[0] * shape[1] * dtype.itemsize, what)
    return np.frombuffer(raw, dtype=dtype).reshape(shape)


def read_header(data):
    """Check the framing of ``data`` (magic, version, length, checksum); returns (view, header fields)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, bytearray or memoryview, got {type(data).__name__}.")
    view = memoryview(data).cast("B")
    n = len(view)
    if bytes(view[:len(MAGIC)]) != MAGIC[:n] or n == 0:
        raise ValueError(
            f"data is not a serialized PrivateCountSketch: it starts with {bytes(view[:8])!r}, not the magic "
            f"{MAGIC!r}."
        )
    if n >= 10:
        (version,) = struct.unpack_from("<H", view, 8)
        if version not in READ_VERSIONS:
            raise ValueError(
                f"data has format version {version}, which this version of sklearn_bayes cannot read (it reads "
                "versions 1 and 2); deserialize it with the sklearn_bayes that wrote it."
            )
    if n < _FIXED.size + _TRAILER.size:
        raise ValueError(f"data is truncated: {n} bytes, shorter than the {_FIXED.size + _TRAILER.size}-byte frame.")
    fields = _FIXED.unpack_from(view, 0)
    total = fields[3]
    if n < total:
        raise ValueError(f"data is truncated: {n} of the sketch's {total} bytes.")
    if n > total:
        raise ValueError(f"data has {n - total} bytes after the end of the sketch ({total} bytes).")
    (crc,) = _TRAILER.unpack_from(view, n - _TRAILER.size)
    if zlib.crc32(view[:n - _TRAILER.size]) != crc:
        raise ValueError("data is corrupt: its CRC32 checksum does not match its contents.")
    return view, fields


def loads(cls, data, random_state, ledger):
    """A new fitted sketch of class ``cls`` from ``data`` (see ``PrivateCountSketch.from_bytes``)."""

    view, fields = read_header(data)
    (_, version, flags, _, kind, mech, noise, pan, family, t_code, u_code, _, d, w, eps, decay, rate,
     n_items, n_sets, pan_draws, chain0) = fields
    if flags & ~FLAG_SHARED_LEDGER:
        raise ValueError(f"data is corrupt: unknown header flags {flags:#x}.")
    if version == 2 and not flags & FLAG_SHARED_LEDGER:
        raise ValueError("data is corrupt: format version 2 without the shared-ledger flag.")
    if flags & FLAG_SHARED_LEDGER and ledger is None:
        raise ValueError(
            "data holds a sketch whose stream is bound to a shared ledger (its ledger parameter when its "
            "stream started): loaded with ledger=None its releases would escape that ledger's budget. Pass "
            "ledger= (the same PrivacyLedger(path=...) file, or the ledger the sketch's releases must be "
            "charged to)."
        )
    if family != HASH_FAMILY:
        raise ValueError(f"data uses hash family {family}; this version of sklearn_bayes has family {HASH_FAMILY}.")
    if pan > 1:
        raise ValueError(f"data is corrupt: pan_private flag {pan}.")
    r = _Reader(view, _FIXED.size)
    (seed_len,) = r.unpack("<H", "hash seed")
    seed = int.from_bytes(bytes(r.take(seed_len, "hash seed")), "little", signed=True)
    stream_id, fork_id = r.str("stream id"), r.str("fork id")
    ledger_id = r.str("ledger id") if version == 2 else None
    (n_shards,) = r.unpack("<I", "shard ids")
    shard_ids = tuple(r.str("shard ids") for _ in range(n_shards))
    (n_features,) = r.unpack("<I", "number of features")
    item_kinds = tuple(_code(k, _ITEM_KINDS, "item kind") for k in bytes(r.take(n_features, "item kinds")))
    (has_names,) = r.unpack("<B", "feature names")
    names = [r.str("feature names") for _ in range(n_features)] if has_names else None
    try:
        records = json.loads(r.str("ledger"))
        if not isinstance(records, list) or not all(
            isinstance(x, dict) and math.isfinite(x.get("epsilon", math.nan)) and x["epsilon"] >= 0 for x in records
        ):
            raise ValueError
    except (ValueError, TypeError):
        raise ValueError("data is corrupt: its ledger is not a list of release records.") from None
    params = dict(
        epsilon=eps, depth=d, width=w, kind=_code(kind, _KINDS, "kind"),
        mechanism=_code(mech, _MECHANISMS, "mechanism"), decay=decay, noise=_code(noise, _NOISES, "noise"), pan_private=bool(pan), sampling_rate=rate, hash_seed=seed,
    )
    sk = cls(**params, random_state=random_state, ledger=ledger)
    sk._validate_params()  # a writer of another language may not have checked them
    if ledger_id is not None and not ledger._is_ledger(ledger_id):
        raise ValueError(
            "ledger is not the ledger the writer's stream was bound to (the bytes name ledger "
            f"{ledger_id!r}): its releases would escape that ledger's budget. Pass that ledger (the same "
            "PrivacyLedger(path=...) file, or the in-memory ledger or a pickled copy of it)."
        )
    eps0, d, w = sk._check_new_stream()  # depth, table memory, first noise scale: before allocating
    if (t_code == 5) != (params["noise"] == "laplace") or t_code in _UNSIGNED_CODES[:3] or u_code in (1, 2, 3, 5):
        raise ValueError(f"data is corrupt: cell encodings {t_code}, {u_code} do not fit noise={params['noise']!r}.")
    table = _cells(r, t_code, (d, w), "table")
    uses = _cells(r, u_code, (d, w), "use counts")
    if r.pos != len(view) - _TRAILER.size:
        raise ValueError("data is corrupt: its sections do not add up to its length.")
    if not stream_id or stream_id not in shard_ids or n_features < 1 or np.any(uses < 0):
        raise ValueError("data is corrupt: inconsistent stream ids, item kinds or use counts.")
    if t_code == 5 and not np.all(np.isfinite(table)):
        raise ValueError("data is corrupt: the table holds NaN or infinity.")
    if not (math.isfinite(chain0) and chain0 >= 0):
        raise ValueError(f"data is corrupt: spent budget {chain0!r}.")
    # everything is checked: bind (a new stream's state, then the stored one over it)
    sk._bind_new_stream(eps0, d, w, item_kinds, start_noise=False)  # the stored table has its noise
    sk.n_features_in_ = int(n_features)
    if names is not None:
        sk.feature_names_in_ = np.asarray(names, dtype=object)
    sk.table_ = table.astype(np.float64 if t_code == 5 else np.int64)
    sk.uses_ = uses.astype(np.int64)
    sk._pan_draws = int(pan_draws)
    sk.n_items_seen_, sk.n_query_sets_ = int(n_items), int(n_sets)
    sk.stream_id_, sk.shard_ids_ = stream_id, shard_ids
    sk._chain_spent0 = float(chain0)
    ledger_ = PrivacyLedger()
    ledger_.records = records
    sk.ledger_ = ledger_
    _LIVE_FORKS.pop(sk._fork_id, None)  # the placeholder fork id of the new stream
    sk._fork_id = fork_id
    sk._mark_copy(copied_generator=False)  # a fork, like an unpickled copy (its generator is its own)
    return sk


class _BytesMixin:
    """Mixin of :class:`PrivateCountSketch`: its public reader and writer of this format."""

    @serialized
    def to_bytes(self):
        """The sketch as portable bytes (versioned, checksummed); read back with :meth:`from_bytes`.

        The bytes hold the **exact table**: like ``table_`` they are curator state, never a
        release.  Store and send them only where the raw stream may go.  They also hold
        everything a receiver needs to go on answering with the same guarantees: the
        fitted parameters, the noise already in the cells and its use counts
        (``uses_``, the pan-private start), the spent budget, the ledger's records and the
        stream and shard ids.  They do **not** hold the noise generator: its state would
        let whoever holds the bytes predict the sender's future noise, and the receiver
        is a new fork that draws its own (``from_bytes(..., random_state=...)``).
        ``to_bytes`` itself releases nothing and changes nothing.  It writes the
        parameters the stream was built with (``fitted_params_``), not values set by
        ``set_params`` since; the reader's parameters are those.

        Returns
        -------
        data : bytes
            About ``depth * width`` cells of 1 to 8 bytes (the narrowest integer type that
            holds the table, 8 bytes for ``noise="laplace"``) plus the use counts (nothing
            while no query set was answered, 1 byte per cell while every cell was noised
            fewer than 256 times) plus a header of about 200 bytes and the ledger's
            records (about 260 bytes per query set: 10,000 one-item query sets add 2.6 MB).

        See Also
        --------
        from_bytes : The reader.

        Notes
        -----
        **Layout, format versions 1 and 2.**  Little-endian throughout; a *string* is a
        ``uint32`` byte length followed by that many UTF-8 bytes.  A stream bound to a
        shared ``ledger`` is written in version 2, which adds the ledger's id after the
        fork id; any other stream in version 1 (the bytes of earlier releases).

        ======  ==========  =======================================================
        offset  type        field
        ======  ==========  =======================================================
        0       8 bytes     magic ``b"SKBSKTCH"``
        8       uint16      format version (1, or 2 for a stream bound to a ledger)
        10      uint16      flags: bit 0 set if the stream is bound to a shared
                            ``ledger`` (other bits 0)
        12      uint64      total length of the buffer in bytes, trailer included
        20      uint8       kind: 0 ``count``, 1 ``count_min``
        21      uint8       mechanism: 0 ``use_and_keep``, 1 ``use_and_forget``,
                            2 ``median_perturbation``, 3 ``cell_perturbation``
        22      uint8       noise: 0 ``discrete_laplace``, 1 ``laplace``
        23      uint8       pan_private (0 or 1)
        24      uint8       hash family: 1 = splitmix64 keys and multiply-shift row
                            hashes (``sklearn_bayes._fast._hashing``)
        25      uint8       table cell encoding (below)
        26      uint8       use-count cell encoding (below)
        27      uint8       reserved (0)
        28      uint32      depth ``d``
        32      uint32      width ``w``
        36      float64     epsilon
        44      float64     decay
        52      float64     sampling_rate
        60      uint64      ``n_items_seen_``
        68      uint64      ``n_query_sets_``
        76      uint64      pan-private noise draws per cell (0 or 1)
        84      float64     ε spent by the mechanism before amplification
        92      uint16 L    then L bytes: ``hash_seed``, two's complement
        ..      string      ``stream_id_``
        ..      string      fork id of the writer
        ..      string      version 2 only: the shared ledger's id, ``"file:"`` and
                            the random ``ledger_id`` of a ledger file, or
                            ``"memory:"`` and the id of an in-memory ledger
        ..      uint32 n    then n strings: ``shard_ids_``
        ..      uint32 f    ``n_features_in_``, then f uint8 item kinds
                            (0 numbers, 1 text)
        ..      uint8       1 if feature names follow (f strings), else 0
        ..      string      ``ledger_`` records as a JSON array of objects
        ..      d*w cells   ``table_``, row-major, in the table encoding
        ..      d*w cells   ``uses_``, row-major, in the use-count encoding
        end-4   uint32      CRC32 (zlib) of every byte before it
        ======  ==========  =======================================================

        Cell encodings: 0 all cells zero (no bytes stored), 1 int8, 2 int16, 3 int32,
        4 int64, 5 float64, 6 uint8, 7 uint16, 8 uint32.  The writer picks the
        narrowest one that holds every cell exactly.  Items are hashed by the hash family
        from ``hash_seed``, so a reader in another language can update and query the
        table given the family's definition (the ``_hashing`` module's docstring).

        A reader refuses a buffer with another magic, an unknown format version, a
        length that does not match (truncated, or trailing bytes), a wrong checksum
        (accidental corruption; the checksum is no protection against a deliberate
        change: transport curator state over trusted channels) or contents that are
        not a valid sketch, each with a ``ValueError``.

        Examples
        --------
        >>> import warnings
        >>> from sklearn_bayes.privacy import PrivateCountSketch
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # seeded noise: fine for a doctest
        ...     sketch = PrivateCountSketch(depth=5, width=256, random_state=0).fit([1, 2, 2, 3] * 50)
        >>> data = sketch.to_bytes()
        >>> len(data) < 5 * 256 + 600  # one byte per cell: counts fit int8
        True
        >>> copy = PrivateCountSketch.from_bytes(data)
        >>> bool((copy.table_ == sketch.table_).all()), copy.stream_id_ == sketch.stream_id_
        (True, True)
        """
        check_is_fitted(self)
        return dumps(self)

    @classmethod
    def from_bytes(cls, data, *, random_state=None, ledger=None):
        """A fitted sketch from the bytes of :meth:`to_bytes`.

        The result is a **fork** of the sketch that wrote the bytes, exactly like an
        unpickled copy (see Notes of the class, "Copies are forks"): it keeps
        ``stream_id_``, ``shard_ids_`` and the records of ``ledger_``; its next release
        charges its history afresh, and if the writer lives in this process it is
        marked as a fork too and the copy takes its ``ledger_`` (both then report the
        forks' total spend).  The checksum guards against accidents, not deliberate
        edits: whoever may edit the bytes holds the exact table anyway.  ``merge`` refuses to merge it with the writer or with any
        sketch that holds one of its shards.

        Parameters
        ----------
        data : bytes, bytearray or memoryview
            The output of :meth:`to_bytes`.
        random_state : None, int or numpy.random.Generator, default=None
            Source of the noise of the sketch's future releases (the bytes carry no
            generator state).  An int emits ``SeededNoiseWarning``.
        ledger : PrivacyLedger or None, default=None
            A shared ledger that the sketch's future releases are also recorded in.
            Required when the writer's stream was bound to a shared ledger (flag bit 0):
            its releases must not escape a budget (as :meth:`merge` refuses); pass that
            ledger (e.g. the same ``PrivacyLedger(path=...)`` file, reopened or pickled, or
            the same in-memory ledger or a pickled copy of it in this process).  The
            bytes name it (format version 2) and another ledger is refused, even with
            the same budget.  Bytes of version 1 (written before ledgers had ids) name
            no ledger: they load with the ledger given, which cannot be checked.

        Returns
        -------
        sketch : PrivateCountSketch

        Raises
        ------
        ValueError
            If ``data`` is not a serialized sketch (magic), has an unknown format
            version, is truncated or longer than its recorded length, fails its
            checksum, or holds an invalid sketch; or (naming ``ledger``) if it holds a
            sketch bound to a shared ledger and ``ledger`` is None or another ledger
            than the one the bytes name.
        TypeError
            If ``data`` is not bytes-like.
        """
        return loads(cls, data, random_state=random_state, ledger=ledger)
