"""The portable binary format of a fitted :class:`PrivateCountSketch` (``to_bytes`` / ``from_bytes``).

The layout (version 1) is documented in ``PrivateCountSketch.to_bytes``; this module is
its only reader and writer.  Everything is little-endian; strings are UTF-8 with a
``uint32`` byte length in front.
"""

import json
import math
import struct
import zlib

import numpy as np

from sklearn_bayes.privacy._core._accounting import PrivacyLedger
from sklearn_bayes.privacy._sketch._forks import _LIVE_FORKS

MAGIC = b"SKBSKTCH"
FORMAT_VERSION = 1
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
    try:
        ledger = json.dumps(sk.ledger_.records, allow_nan=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError) as exc:
        raise TypeError(f"the sketch's ledger_ holds a record that JSON cannot store: {exc}") from None
    parts = [
        b"",  # fixed header, filled in below (it holds the total length)
        struct.pack("<H", len(seed_bytes)), seed_bytes,
        _str(sk.stream_id_), _str(sk._fork_id),
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
        MAGIC, FORMAT_VERSION, 0, total,
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
        if version != FORMAT_VERSION:
            raise ValueError(
                f"data has format version {version}, which this version of sklearn_bayes cannot read (it reads "
                f"version {FORMAT_VERSION}); deserialize it with the sklearn_bayes that wrote it."
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
    (_, _, flags, _, kind, mech, noise, pan, family, t_code, u_code, _, d, w, eps, decay, rate,
     n_items, n_sets, pan_draws, chain0) = fields
    if flags:
        raise ValueError(f"data is corrupt: unknown header flags {flags:#x}.")
    if family != HASH_FAMILY:
        raise ValueError(f"data uses hash family {family}; this version of sklearn_bayes has family {HASH_FAMILY}.")
    if pan > 1:
        raise ValueError(f"data is corrupt: pan_private flag {pan}.")
    r = _Reader(view, _FIXED.size)
    (seed_len,) = r.unpack("<H", "hash seed")
    seed = int.from_bytes(bytes(r.take(seed_len, "hash seed")), "little", signed=True)
    stream_id, fork_id = r.str("stream id"), r.str("fork id")
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
