"""PrivateCountSketch.to_bytes / from_bytes: the documented layout, round trips, forks, refusals."""

import json
import pickle
import struct
import zlib

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from sklearn_bayes.exceptions import SeededNoiseWarning
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch
from sklearn_bayes.privacy._sketch._format import MAGIC


def _sketch(seed=0, **params):
    return PrivateCountSketch(random_state=np.random.default_rng(seed), **params)


def _stream(n=3000, n_items=200, seed=0):
    return np.random.default_rng(seed).zipf(1.3, size=n) % n_items


def _state(sk):
    """Everything a fork must carry over (the generator and the fork bookkeeping aside)."""
    return dict(
        params={k: (type(v), v) for k, v in sk.fitted_params_.items()},
        table=(sk.table_.dtype, sk.table_.tolist()), uses=sk.uses_.tolist(), pan=sk._pan_draws,
        n_items=sk.n_items_seen_, n_sets=sk.n_query_sets_, stream=sk.stream_id_, shards=sk.shard_ids_,
        kinds=sk._item_kinds, n_features=sk.n_features_in_, names=list(getattr(sk, "feature_names_in_", [])),
        chain=sk._chain_spent0, records=sk.ledger_.records, row_seeds=sk._row_seeds.tolist(),
    )


CONFIGS = [
    dict(),
    dict(kind="count_min", depth=3, width=50),
    dict(mechanism="use_and_forget", decay=0.7),
    dict(mechanism="median_perturbation", depth=4),
    dict(mechanism="cell_perturbation", pan_private=True),
    dict(noise="laplace", pan_private=True, depth=4),
    dict(sampling_rate=0.3, epsilon=0.5),
    dict(hash_seed=-(2**70) - 3, depth=2),
]


@pytest.mark.parametrize("params", CONFIGS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) or "default")
@pytest.mark.parametrize("n_queries", [0, 2])
def test_round_trip_keeps_the_state_and_continues_like_a_pickled_copy(params, n_queries):
    sk = _sketch(**{"width": 64, **params}).fit(_stream())
    for k in range(n_queries):
        sk.query([1, 2, 3 + k])
    data = sk.to_bytes()
    loaded = PrivateCountSketch.from_bytes(data, random_state=np.random.default_rng(7))
    pickled = pickle.loads(pickle.dumps(sk))
    assert _state(loaded) == _state(sk) == _state(pickled)
    assert loaded.epsilon_spent_ == sk.epsilon_spent_
    # the format is canonical: the same bytes but for the writer's fork id (the copy is a new fork)
    again = loaded.to_bytes()
    assert again[:-4].replace(loaded._fork_id.encode(), sk._fork_id.encode()) == data[:-4]
    # same state + same generator -> same continued answers and the same charges as a pickled copy
    pickled._rng = np.random.default_rng(7)
    if params.get("mechanism") != "cell_perturbation":
        loaded.partial_fit(_stream(500, seed=3))
        pickled.partial_fit(_stream(500, seed=3))
    np.testing.assert_array_equal(loaded.query([1, 5, 9]), pickled.query([1, 5, 9]))
    assert [r["epsilon"] for r in loaded.ledger_.records] == [r["epsilon"] for r in pickled.ledger_.records]
    np.testing.assert_array_equal(loaded.table_, pickled.table_)


@pytest.mark.parametrize("X", [
    np.array(["a", "bb", "a", "ccc"] * 20, dtype=object),
    np.column_stack([np.arange(80) % 3, np.arange(80) % 5]),
    pd.DataFrame({"city": ["x", "y"] * 30, "year": [2020, 2021, 2021] * 20}),
], ids=["text", "pairs", "dataframe"])
def test_round_trip_item_kinds_and_feature_names(X):
    sk = _sketch(width=32).fit(X)
    loaded = PrivateCountSketch.from_bytes(sk.to_bytes())
    assert _state(loaded) == _state(sk)
    loaded._rng = np.random.default_rng(3)
    sk._rng = np.random.default_rng(3)
    q = X.iloc[:4] if hasattr(X, "iloc") else X[:4]
    np.testing.assert_array_equal(loaded.query(q), sk.query(q))


def test_documented_header_offsets():
    sk = _sketch(depth=3, width=40, epsilon=0.25, decay=0.6, kind="count_min", mechanism="use_and_forget",
                 hash_seed=12345).fit(np.arange(3000) % 7)
    sk.query([1, 2])
    data = sk.to_bytes()
    assert data[:8] == MAGIC == b"SKBSKTCH"
    assert struct.unpack_from("<HHQ", data, 8) == (1, 0, len(data))  # an unbound stream: version 1
    assert tuple(data[20:25]) == (1, 1, 0, 0, 1)  # count_min, use_and_forget, discrete_laplace, not pan, family 1
    assert data[25] == 2 and data[26] == 6  # counts of about 430 -> int16; uses -> uint8
    assert struct.unpack_from("<II", data, 28) == (3, 40)
    assert struct.unpack_from("<ddd", data, 36) == (0.25, 0.6, 1.0)
    assert struct.unpack_from("<QQQd", data, 60) == (3000, 1, 0, sk._chain_spent0)
    (n_seed,) = struct.unpack_from("<H", data, 92)
    assert int.from_bytes(data[94:94 + n_seed], "little", signed=True) == 12345
    (n_id,) = struct.unpack_from("<I", data, 94 + n_seed)
    assert data[98 + n_seed:98 + n_seed + n_id].decode() == sk.stream_id_
    # the trailer is the CRC32 of the rest; the cells end the body, row-major
    assert struct.unpack_from("<I", data, len(data) - 4)[0] == zlib.crc32(data[:-4])
    cells = 3 * 40
    body = data[:-4]
    np.testing.assert_array_equal(np.frombuffer(body[-cells:], "<u1").reshape(3, 40), sk.uses_)
    np.testing.assert_array_equal(np.frombuffer(body[-3 * cells:-cells], "<i2").reshape(3, 40), sk.table_)
    # the ledger is the JSON array just before the cells
    (n_json,) = struct.unpack_from("<I", body, len(body) - 3 * cells - 4 - len(json.dumps(
        sk.ledger_.records, separators=(",", ":")).encode()))
    assert json.loads(body[len(body) - 3 * cells - n_json:len(body) - 3 * cells]) == sk.ledger_.records


def test_size_is_the_table_plus_a_small_header():
    depth, width = 5, 4096
    sk = _sketch(depth=depth, width=width, kind="count_min").fit(np.repeat(np.arange(100), 300))
    assert 127 < np.abs(sk.table_).max() < 2**15
    data = sk.to_bytes()
    assert depth * width * 2 < len(data) < depth * width * 2 + 300
    sk.query([1])
    data = sk.to_bytes()  # + 1 byte of use count per cell + one ledger record
    assert depth * width * 3 < len(data) < depth * width * 3 + 300 + 300
    big = _sketch(depth=2, width=8, noise="laplace").fit([1, 2])
    assert len(big.to_bytes()) < 2 * 8 * 8 + 300  # float64 table, no uses yet


def test_a_loaded_sketch_is_a_fork_charged_afresh():
    sk = _sketch(width=64).fit(_stream())
    sk.query([1, 2])
    assert sk.epsilon_spent_ == 1.0
    copy = PrivateCountSketch.from_bytes(sk.to_bytes(), random_state=np.random.default_rng(1))
    assert copy.epsilon_spent_ == 1.0  # the common history, not charged again by loading
    assert sk._fork_pending and copy._fork_pending  # the live writer is marked, like after pickle.loads
    copy.query([3])
    sk.query([4])
    # loaded where its writer is alive, the copy shares the writer's ledger (review HQW F1): both
    # report the total of the two forks, the common history once
    assert copy.ledger_ is sk.ledger_
    assert copy.epsilon_spent_ == 3.0 and sk.epsilon_spent_ == 3.0
    assert PrivacyLedger.compose(sk.ledger_, copy.ledger_).epsilon_spent == 3.0
    # a second query of each fork is covered (use-and-keep)
    copy.query([5])
    assert copy.epsilon_spent_ == 3.0


def test_to_bytes_marks_nothing_and_changes_nothing():
    sk = _sketch(width=64).fit(_stream())
    sk.query([1])
    before = pickle.dumps(sk)
    sk.to_bytes()
    assert pickle.dumps(sk) == before and not sk._fork_pending


def test_merge_rules_hold_for_loaded_sketches():
    a = _sketch(width=64, seed=1).fit(_stream(seed=1))
    b = _sketch(width=64, seed=2).fit(_stream(seed=2))
    a_copy = PrivateCountSketch.from_bytes(a.to_bytes())
    with pytest.raises(ValueError, match="share a shard"):
        a.merge(a_copy)
    b_loaded = PrivateCountSketch.from_bytes(b.to_bytes())
    expected = a.table_ + b.table_
    a.merge(b_loaded)
    np.testing.assert_array_equal(a.table_, expected)
    with pytest.raises(ValueError, match="share a shard"):
        a.merge(PrivateCountSketch.from_bytes(b.to_bytes()))
    other = PrivateCountSketch.from_bytes(_sketch(width=65).fit([1]).to_bytes())
    with pytest.raises(ValueError, match="different parameters.*width"):
        a.merge(other)


def test_ledger_and_random_state_arguments():
    sk = _sketch(width=64).fit(_stream())
    shared = PrivacyLedger()
    with pytest.warns(SeededNoiseWarning):
        loaded = PrivateCountSketch.from_bytes(sk.to_bytes(), random_state=0, ledger=shared)
    assert loaded.get_params()["ledger"] is shared and loaded.random_state == 0
    loaded.query([1])
    assert shared.epsilon_spent == 1.0 and shared.records[0]["stream"] == sk.stream_id_


def _recrc(data):
    return data[:-4] + struct.pack("<I", zlib.crc32(data[:-4]))


def test_refusals():
    sk = _sketch(width=64).fit(_stream())
    sk.query([1])
    data = sk.to_bytes()
    with pytest.raises(NotFittedError):
        PrivateCountSketch().to_bytes()
    with pytest.raises(TypeError, match="data must be bytes"):
        PrivateCountSketch.from_bytes("SKBSKTCH")
    with pytest.raises(ValueError, match="not a serialized PrivateCountSketch"):
        PrivateCountSketch.from_bytes(b"PK\x03\x04" + data[4:])
    with pytest.raises(ValueError, match="not a serialized PrivateCountSketch"):
        PrivateCountSketch.from_bytes(b"")
    bad_version = data[:8] + struct.pack("<H", 3) + data[10:]
    with pytest.raises(ValueError, match="format version 3.*reads versions 1 and 2"):
        PrivateCountSketch.from_bytes(bad_version)
    for n in (3, 10, 60, 200, len(data) - 1):
        with pytest.raises(ValueError, match="truncated"):
            PrivateCountSketch.from_bytes(data[:n])
    with pytest.raises(ValueError, match="2 bytes after the end"):
        PrivateCountSketch.from_bytes(data + b"\x00\x00")
    for pos in (20, 40, 100, len(data) // 2, len(data) - 10, len(data) - 2):
        flipped = bytearray(data)
        flipped[pos] ^= 0x10
        with pytest.raises(ValueError, match="corrupt.*CRC32"):
            PrivateCountSketch.from_bytes(bytes(flipped))
    # valid checksums over invalid contents (a buggy writer): still refused, naming the problem
    for pos, value, match in [(20, 9, "unknown kind code 9"), (21, 4, "unknown mechanism code 4"),
                              (24, 2, "hash family 2"), (25, 6, "cell encodings"), (26, 9, "unknown use counts"),
                              (23, 2, "pan_private flag 2")]:
        wrong = bytearray(data)
        wrong[pos] = value
        with pytest.raises(ValueError, match=match):
            PrivateCountSketch.from_bytes(_recrc(bytes(wrong)))
    wrong = bytearray(PrivateCountSketch.from_bytes(data).to_bytes())
    wrong[21], wrong[23] = 1, 1  # use_and_forget with a pan-private start
    with pytest.raises(ValueError, match="pan_private=True needs"):
        PrivateCountSketch.from_bytes(_recrc(bytes(wrong)))
    wrong = bytearray(data)
    struct.pack_into("<d", wrong, 36, -1.0)  # epsilon
    with pytest.raises(ValueError, match="epsilon"):
        PrivateCountSketch.from_bytes(_recrc(bytes(wrong)))
    wrong = bytearray(data)
    struct.pack_into("<I", wrong, 32, 10**9)  # width: table memory checked before allocating
    with pytest.raises(ValueError, match="MAX_TABLE_BYTES"):
        PrivateCountSketch.from_bytes(_recrc(bytes(wrong)))
    wrong = bytearray(data)
    struct.pack_into("<I", wrong, 32, 63)  # a smaller table than stored: sections do not add up
    with pytest.raises(ValueError, match="do not add up"):
        PrivateCountSketch.from_bytes(_recrc(bytes(wrong)))


def test_readonly_buffers_and_memoryviews():
    sk = _sketch(width=64).fit(_stream())
    data = sk.to_bytes()
    for buf in (bytearray(data), memoryview(data)):
        loaded = PrivateCountSketch.from_bytes(buf)
        loaded.partial_fit([1, 2, 3])  # the table is a private, writeable array
        assert loaded.n_items_seen_ == sk.n_items_seen_ + 3


def test_the_fitted_parameters_are_written_not_later_set_params():
    sk = _sketch(width=64, epsilon=0.5).fit(_stream())
    sk.set_params(width=99, epsilon=2.0)
    loaded = PrivateCountSketch.from_bytes(sk.to_bytes())
    assert loaded.width == 64 and loaded.epsilon == 0.5 and loaded.fitted_params_ == sk.fitted_params_
    loaded.query([1])  # the loaded stream is consistent with its parameters
    assert loaded.epsilon_spent_ == 0.5
