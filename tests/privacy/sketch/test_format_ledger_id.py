"""The bytes of a ledger-bound sketch name their ledger (task HQK, hole 2b).

Before the fix the bytes recorded only that the writer's stream was bound to a shared ledger
(flag bit 0), not which one, so ``from_bytes(data, ledger=...)`` accepted any ledger: bytes whose
ledger's budget was exhausted loaded with a fresh ``PrivacyLedger`` and released again.  Now a
bound stream is written in format version 2, which adds the ledger's id (the ``ledger_id`` of a
ledger file, the identity of an in-memory ledger) after the fork id, and ``from_bytes`` refuses
another ledger with a ``ValueError`` naming ``ledger``.  Unbound streams are written exactly as
before (version 1).  Version-1 bytes of a bound stream (written before) name no ledger: they load
with the ledger given, which cannot be checked (the rule of the version that wrote them).
"""

import pickle
import struct
import zlib

import numpy as np
import pytest

from sklearn_bayes.exceptions import BudgetExceededError
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch
from sklearn_bayes.privacy._sketch._format import _FIXED

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_bayes.exceptions.SeededNoiseWarning")


def _sketch(ledger=None):
    sketch = PrivateCountSketch(width=64, ledger=ledger, random_state=0).fit(np.arange(30) % 5)
    sketch.query([1])
    return sketch


def _version(data):
    return struct.unpack_from("<H", data, 8)[0]


def _as_version_1(data):
    """The bytes the previous version wrote for the same bound sketch: no ledger id, version 1."""
    view = bytes(data[:-4])
    pos = _FIXED.size
    (seed_len,) = struct.unpack_from("<H", view, pos)
    pos += 2 + seed_len
    for _ in range(2):  # stream id, fork id
        (n,) = struct.unpack_from("<I", view, pos)
        pos += 4 + n
    (n,) = struct.unpack_from("<I", view, pos)  # the ledger id
    body = view[:pos] + view[pos + 4 + n:]
    body = body[:8] + struct.pack("<H", 1) + body[10:12] + struct.pack("<Q", len(body) + 4) + body[20:]
    return body + struct.pack("<I", zlib.crc32(body))


def test_an_unbound_sketch_is_written_in_version_1_as_before():
    assert _version(_sketch().to_bytes()) == 1


def test_a_file_ledger_other_than_the_writers_is_refused_with_the_same_budget(tmp_path):
    data = _sketch(PrivacyLedger(budget=(1.0, 0.0), path=tmp_path / "spent.ledger")).to_bytes()
    assert _version(data) == 2
    other = PrivacyLedger(budget=(1.0, 0.0), path=tmp_path / "other.ledger")
    with pytest.raises(ValueError, match="ledger is not the ledger"):
        PrivateCountSketch.from_bytes(data, ledger=other)
    assert other.n_releases == 0


def test_an_in_memory_ledger_other_than_the_writers_is_refused():
    data = _sketch(PrivacyLedger(budget=(1.0, 0.0))).to_bytes()
    with pytest.raises(ValueError, match="ledger is not the ledger"):
        PrivateCountSketch.from_bytes(data, ledger=PrivacyLedger(budget=(1.0, 0.0)))


def test_the_writers_ledger_its_file_and_its_copies_are_accepted(tmp_path):
    path = tmp_path / "shared.ledger"
    ledger = PrivacyLedger(budget=(4.0, 0.0), path=path)
    data = _sketch(ledger).to_bytes()
    for same in (ledger, PrivacyLedger(path=path), pickle.loads(pickle.dumps(ledger))):
        PrivateCountSketch.from_bytes(data, ledger=same, random_state=1).query([2])
    with pytest.raises(BudgetExceededError):
        PrivateCountSketch.from_bytes(data, ledger=ledger, random_state=2).query([2])
    assert ledger.epsilon_spent == 4.0


def test_a_pickled_snapshot_of_the_writers_in_memory_ledger_is_accepted():
    ledger = PrivacyLedger(budget=(2.0, 0.0))
    data = _sketch(ledger).to_bytes()
    snapshot = pickle.loads(pickle.dumps(ledger))  # forwards its records to the original
    PrivateCountSketch.from_bytes(data, ledger=snapshot, random_state=1).query([2])
    assert ledger.epsilon_spent == 2.0


def test_bytes_of_a_loaded_sketch_name_the_same_ledger(tmp_path):
    path = tmp_path / "shared.ledger"
    data = _sketch(PrivacyLedger(budget=(5.0, 0.0), path=path)).to_bytes()
    again = PrivateCountSketch.from_bytes(data, ledger=PrivacyLedger(path=path), random_state=1).to_bytes()
    with pytest.raises(ValueError, match="ledger is not the ledger"):
        PrivateCountSketch.from_bytes(again, ledger=PrivacyLedger(budget=(5.0, 0.0)))
    PrivateCountSketch.from_bytes(again, ledger=PrivacyLedger(path=path))


def test_version_1_bytes_of_a_bound_sketch_load_with_any_ledger_as_before(tmp_path):
    data = _sketch(PrivacyLedger(budget=(1.0, 0.0), path=tmp_path / "spent.ledger")).to_bytes()
    old = _as_version_1(data)
    assert _version(old) == 1
    with pytest.raises(ValueError, match="ledger"):
        PrivateCountSketch.from_bytes(old)  # still bound: a ledger is required
    other = PrivacyLedger(budget=(5.0, 0.0))
    loaded = PrivateCountSketch.from_bytes(old, ledger=other, random_state=1)  # cannot be checked
    loaded.query([2])
    assert other.n_releases == 1
    assert _version(loaded.to_bytes()) == 2  # written again, it names the ledger it was given


def test_version_2_without_the_bound_flag_is_corrupt(tmp_path):
    data = bytearray(_sketch(PrivacyLedger()).to_bytes())
    data[10:12] = struct.pack("<H", 0)
    data[-4:] = struct.pack("<I", zlib.crc32(bytes(data[:-4])))
    with pytest.raises(ValueError, match="corrupt"):
        PrivateCountSketch.from_bytes(bytes(data))


def test_merge_tells_a_replaced_ledger_file_from_the_one_at_the_same_path(tmp_path):
    path = tmp_path / "shared.ledger"
    shard = _sketch(PrivacyLedger(budget=(1.0, 0.0), path=path))  # its budget is spent
    path.unlink()
    fresh = PrivacyLedger(budget=(1.0, 0.0), path=path)  # another ledger at the same path
    target = PrivateCountSketch(width=64, ledger=fresh, random_state=1).fit([1, 2])
    with pytest.raises(ValueError, match="ledger"):
        target.merge(shard)  # (was accepted: the same path was taken for the same ledger)
    assert fresh.n_releases == 0
