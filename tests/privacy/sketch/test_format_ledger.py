"""``to_bytes`` / ``from_bytes`` of a sketch bound to a shared ledger (task HQH).

Before the fix the bytes did not say that the stream was bound to a shared ``ledger``, and
``from_bytes(data)`` gave a sketch bound to none: a sketch whose budget was exhausted answered
again, charged only to its own ``ledger_`` (failing input: budget (1, 0), one query set, then
``from_bytes(to_bytes())`` and a query).  ``merge`` refuses this laundering; the format now
carries it too: header flag bit 0 marks a bound stream, and such bytes are loaded only with a
``ledger`` (refused naming ``ledger`` otherwise).  Unbound sketches write the same bytes as
before (flags 0).
"""

import struct

import numpy as np
import pytest

from sklearn_bayes.exceptions import BudgetExceededError
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch


def _flags(data):
    return struct.unpack_from("<H", data, 10)[0]


def test_a_bound_sketch_cannot_be_loaded_unbound(tmp_path):
    ledger = PrivacyLedger(budget=(1.0, 0.0), path=tmp_path / "budget.ledger")
    sketch = PrivateCountSketch(width=64, ledger=ledger).fit(np.arange(30) % 5)
    sketch.query([1])
    data = sketch.to_bytes()
    assert _flags(data) == 1
    with pytest.raises(ValueError, match="ledger"):
        PrivateCountSketch.from_bytes(data)
    loaded = PrivateCountSketch.from_bytes(data, ledger=PrivacyLedger(path=tmp_path / "budget.ledger"))
    with pytest.raises(BudgetExceededError):
        loaded.query([1])  # a fork: its history charged afresh, to the exhausted budget
    assert ledger.n_releases == 1


def test_a_bound_sketch_is_marked_before_its_first_release():
    """Bound but not yet released: the flag is set all the same (its first release would escape)."""
    sketch = PrivateCountSketch(width=64, ledger=PrivacyLedger()).fit([1, 2, 3])
    assert _flags(sketch.to_bytes()) == 1
    with pytest.raises(ValueError, match="ledger"):
        PrivateCountSketch.from_bytes(sketch.to_bytes())


def test_an_unbound_sketch_writes_flags_zero_and_loads_with_or_without_a_ledger():
    sketch = PrivateCountSketch(width=64).fit([1, 2, 3])
    sketch.query([1])
    data = sketch.to_bytes()
    assert _flags(data) == 0
    assert PrivateCountSketch.from_bytes(data).n_query_sets_ == 1
    shared = PrivacyLedger()
    loaded = PrivateCountSketch.from_bytes(data, ledger=shared)
    loaded.query([2])
    assert shared.epsilon_spent == 1.0


def test_unknown_flags_are_still_refused():
    data = bytearray(PrivateCountSketch(width=64).fit([1, 2, 3]).to_bytes())
    struct.pack_into("<H", data, 10, 2)
    import zlib

    struct.pack_into("<I", data, len(data) - 4, zlib.crc32(bytes(data[:-4])))
    with pytest.raises(ValueError, match="flags"):
        PrivateCountSketch.from_bytes(bytes(data))
