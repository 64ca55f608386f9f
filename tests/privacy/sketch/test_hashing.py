"""Known-answer and statistical tests of the sketch hashing (sklearn_bayes._fast._hashing)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from sklearn_bayes._fast import _hashing

sys.path.insert(0, str(Path(__file__).parent))
import _sketch_reference as ref  # noqa: E402


def _locate(keys, seeds, width):
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    cols = np.empty((len(seeds), keys.size), dtype=np.int64)
    signs = np.empty((len(seeds), keys.size), dtype=np.int8)
    _hashing.locate(keys, np.asarray(seeds, dtype=np.uint64), width, cols, signs)
    return cols, signs


def test_splitmix64_known_answers():
    # the published splitmix64 output sequence for seed 0 (Vigna's reference implementation)
    expected = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC]
    assert [int(s) for s in _hashing.row_seeds(0, 4)] == expected
    assert _hashing.splitmix64_mix(0) == 0
    assert _hashing.row_seeds(-1, 2).tolist() == ref.row_seeds(2**64 - 1, 2)


# Pinned format: (item, [(column, sign) for rows 0..2]) with hash_seed=0, width=1000.
PINNED = [
    (0, [(578, -1), (878, -1), (824, 1)]),
    (1, [(854, 1), (901, 1), (280, -1)]),
    (-1, [(749, 1), (914, 1), (727, 1)]),
    (42, [(133, -1), (810, 1), (94, 1)]),
    (2**62, [(211, 1), (856, 1), (18, 1)]),
    ("", [(543, 1), (20, -1), (958, 1)]),
    ("a", [(641, 1), (829, -1), (460, 1)]),
    ("München", [(32, 1), (264, -1), (629, 1)]),
    ("hello world, this is long", [(204, 1), (966, 1), (80, -1)]),
]


@pytest.mark.parametrize("item, expected", PINNED)
def test_pinned_columns_and_signs(item, expected):
    if isinstance(item, str):
        key = _hashing.bytes_keys(np.array([item], dtype=object))
    else:
        key = np.array([item], dtype=np.int64).view(np.uint64)
    cols, signs = _locate(key, _hashing.row_seeds(0, 3), 1000)
    assert list(zip(cols[:, 0].tolist(), signs[:, 0].tolist())) == expected


def test_bytes_keys_match_reference_and_encoding():
    rng = np.random.default_rng(0)
    items = ["", "a", "ab", "abcdefg", "abcdefgh", "abcdefghi", "ünïcødé ✓", "x" * 100]
    items += [bytes(rng.integers(0, 256, size=n, dtype=np.uint8)) for n in range(0, 30)]
    got = _hashing.bytes_keys(np.array(items, dtype=object))
    assert got.tolist() == [ref.bytes_key(s) for s in items]
    # str items are their UTF-8 bytes
    assert _hashing.bytes_keys(np.array(["München", "München".encode()], dtype=object)).tolist()[0] == ref.bytes_key(
        "München".encode()
    )
    # keys of different strings differ (no trivial collisions on near-identical inputs)
    near = [f"user{i}" for i in range(5000)] + ["a" * n for n in range(40)]
    assert len(set(_hashing.bytes_keys(np.array(near, dtype=object)).tolist())) == len(near)
    with pytest.raises(TypeError, match="str or bytes"):
        _hashing.bytes_keys(np.array([1], dtype=object))


def test_locate_matches_reference():
    rng = np.random.default_rng(1)
    keys = rng.integers(-(2**63), 2**63 - 1, size=300, dtype=np.int64).view(np.uint64)
    for seed, depth, width in [(0, 3, 1000), (12345, 7, 5000), (2**70 + 3, 1, 1), (9, 4, 2**31 - 1)]:
        seeds = _hashing.row_seeds(seed, depth)
        cols, signs = _locate(keys, seeds, width)
        for k, key in enumerate(keys.tolist()):
            expected = ref.locate(key, ref.row_seeds(seed, depth), width)
            assert list(zip(cols[:, k].tolist(), signs[:, k].tolist())) == expected


def test_combine_keys_matches_reference():
    a = np.array([0, 1, 2**63], dtype=np.uint64)
    b = np.array([5, 5, 7], dtype=np.uint64)
    assert _hashing.combine_keys(a, b).tolist() == [ref.combine(int(x), int(y)) for x, y in zip(a, b)]


def test_stable_across_processes():
    # Python's hash() of str is salted per process; ours must not be.
    # load the compiled module by file, without importing the (slow to import) package
    code = (
        "import importlib.util as u, numpy as np;"
        f"spec = u.spec_from_file_location('sklearn_bayes._fast._hashing', {_hashing.__file__!r});"
        "m = u.module_from_spec(spec); spec.loader.exec_module(m);"
        "print(m.bytes_keys(np.array(['postcode 75001', b'x'], dtype=object)).tolist())"
    )
    outs = set()
    for salt in ("1", "2"):
        env = {"PYTHONHASHSEED": salt, "PATH": ""}
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        outs.add(res.stdout.strip())
    assert outs == {str([ref.bytes_key("postcode 75001"), ref.bytes_key(b"x")])}


def test_columns_uniform_signs_balanced_rows_independent():
    # consecutive integers: the worst case for a weak hash
    n, width, depth = 100_000, 64, 3
    keys = np.arange(n, dtype=np.int64).view(np.uint64)
    cols, signs = _locate(keys, _hashing.row_seeds(7, depth), width)
    alpha = 1e-4  # fixed data, so each check is a deterministic goodness-of-fit at level alpha
    for i in range(depth):
        assert stats.chisquare(np.bincount(cols[i], minlength=width)).pvalue > alpha
        assert stats.binomtest(int((signs[i] > 0).sum()), n, 0.5).pvalue > alpha
        # sign independent of column
        table = np.array([np.bincount(cols[i][signs[i] > 0], minlength=width),
                          np.bincount(cols[i][signs[i] < 0], minlength=width)])
        assert stats.chi2_contingency(table)[1] > alpha
    for a, b in [(0, 1), (1, 2)]:
        joint = np.zeros((8, 8))
        np.add.at(joint, (cols[a] % 8, cols[b] % 8), 1)
        assert stats.chi2_contingency(joint)[1] > alpha
    # a bad hash (identity modulo the width) fails the same pairwise check: the check has power
    joint = np.zeros((8, 8))
    np.add.at(joint, (np.arange(n) % 8, np.arange(n) % 8), 1)
    assert stats.chi2_contingency(joint)[1] < alpha
