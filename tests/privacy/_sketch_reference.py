"""Pure-Python reference of the sketch hashing format (slow, obviously correct), for tests."""

import statistics

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
BYTES_SEED = 0x2545F4914F6CDD1D


def mix64(z):
    z &= M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def row_seeds(hash_seed, depth):
    state = hash_seed % (1 << 64)
    out = []
    for _ in range(depth):
        state = (state + GOLDEN) & M64
        out.append(mix64(state))
    return out


def bytes_key(data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    n = len(data)
    h = BYTES_SEED ^ ((n * GOLDEN) & M64)
    i = 0
    while i + 8 <= n:
        h = mix64(h ^ int.from_bytes(data[i : i + 8], "little"))
        i += 8
    h = mix64(h ^ int.from_bytes(data[i:], "little") ^ GOLDEN)
    return h


def int_key(x):
    return int(x) % (1 << 64)


def combine(acc, col):
    return mix64(acc ^ mix64((col + GOLDEN) & M64))


def locate(key, seeds, width):
    """[(column, sign)] for each row."""
    pre = mix64(key)
    out = []
    for s in seeds:
        h = ((pre ^ s) * (s | 1)) & M64
        out.append((((h >> 32) * width) >> 32, 1 if (h >> 31) & 1 else -1))
    return out


def brute_force_table(keys, depth, width, hash_seed, kind):
    seeds = row_seeds(hash_seed, depth)
    table = [[0] * width for _ in range(depth)]
    for key in keys:
        for i, (j, s) in enumerate(locate(key, seeds, width)):
            table[i][j] += s if kind == "count" else 1
    return table


def brute_force_estimate(table, key, hash_seed, kind):
    seeds = row_seeds(hash_seed, len(table))
    cells = locate(key, seeds, len(table[0]))
    if kind == "count":
        return float(statistics.median(s * table[i][j] for i, (j, s) in enumerate(cells)))
    return float(min(table[i][j] for i, (j, _) in enumerate(cells)))
