"""Throughput of PrivateCountSketch against datasketches, pyprobables and a numpy Count Sketch.

Run ``python benchmarks/bench_count_sketch.py [--quick]``.  All contenders run in this
process on the same items; the table prints items/s and our speed-up ratios (absolute
times on a shared machine are noise, ratios are what matter).

* update: consuming a stream of Zipf(1.1) item ids (int64, or their decimal strings);
* query: answering one query set of distinct items (ours: use-and-keep, noise included);
* memory: peak traced memory of consuming streams of growing length in fixed-size chunks.

Peers: ``datasketches.count_min_sketch`` (C++ Count-Min, one Python call per item),
``probables.CountMinSketch`` (pyprobables, pure Python, string keys: int items are
converted with ``str`` inside the timing), and a vectorised numpy Count Sketch using
the same hash functions (bincount per row; for str items it uses our compiled key hash,
numpy having no vectorised string hash).  Our query times include the privacy noise
(one discrete Laplace draw per touched cell); the peers add none.
Targets (issue 3): >= 5x the numpy baseline and >= 20x datasketches on int items.
"""

import argparse
import time
import tracemalloc
import warnings

import numpy as np

from sklearn_bayes._fast._hashing import bytes_keys, row_seeds
from sklearn_bayes.privacy import PrivateCountSketch

M1 = np.uint64(0xBF58476D1CE4E5B9)
M2 = np.uint64(0x94D049BB133111EB)


def _mix64(z):
    z = (z ^ (z >> np.uint64(30))) * M1
    z = (z ^ (z >> np.uint64(27))) * M2
    return z ^ (z >> np.uint64(31))


class NumpyCountSketch:
    """Plain numpy Count Sketch (same hashes as ours), vectorised over a batch of keys."""

    def __init__(self, depth, width, seeds):
        self.table = np.zeros((depth, width), dtype=np.int64)
        self.seeds = seeds
        self.width = np.uint64(width)

    def _cells(self, keys):
        pre = _mix64(keys)
        for i, s in enumerate(self.seeds):
            h = (pre ^ s) * (s | np.uint64(1))
            cols = (((h >> np.uint64(32)) * self.width) >> np.uint64(32)).astype(np.intp)
            signs = ((h >> np.uint64(31)) & np.uint64(1)).astype(np.int64) * 2 - 1
            yield i, cols, signs

    def update(self, keys):
        with np.errstate(over="ignore"):
            for i, cols, signs in self._cells(keys):
                self.table[i] += np.bincount(cols, weights=signs, minlength=self.table.shape[1]).astype(np.int64)

    def query(self, keys):
        with np.errstate(over="ignore"):
            vals = np.array([signs * self.table[i, cols] for i, cols, signs in self._cells(keys)])
        return np.median(vals, axis=0)


def _best_time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _ours(depth, width):
    return PrivateCountSketch(depth=depth, width=width, random_state=np.random.default_rng(0))


def bench(depth, width, n_update, n_peer, n_query, repeat):
    rng = np.random.default_rng(0)
    ints = rng.zipf(1.1, size=n_update).astype(np.int64) % (2**40)
    strs = np.array([str(v) for v in ints[:n_peer * 4]], dtype=object)
    queries = np.unique(ints)[:n_query]
    from datasketches import count_min_sketch
    from probables import CountMinSketch

    rows = []

    def row(task, items, name, n, seconds):
        rows.append({"task": task, "items": items, "method": name, "rate": n / seconds})

    # ---- updates, int items
    row("update", "int", "ours", n_update, _best_time(lambda: _ours(depth, width).partial_fit(ints), repeat))
    seeds = row_seeds(0, depth)
    row("update", "int", "numpy", n_update,
        _best_time(lambda: NumpyCountSketch(depth, width, seeds).update(ints.view(np.uint64)), repeat))
    peer_ints = ints[:n_peer].tolist()

    def ds_update(items):
        cms = count_min_sketch(depth, width)
        upd = cms.update
        for v in items:
            upd(v)

    row("update", "int", "datasketches", n_peer, _best_time(lambda: ds_update(peer_ints), repeat))

    def pp_update(items):
        cms = CountMinSketch(width=width, depth=depth)
        add = cms.add
        for v in items:
            add(v)

    n_pp = max(n_peer // 20, 1000)
    peer_strs = strs[:n_pp].tolist()
    row("update", "int", "pyprobables", n_pp, _best_time(lambda: pp_update([str(v) for v in peer_ints[:n_pp]]), 1))

    # ---- updates, str items
    n_str = strs.shape[0]
    row("update", "str", "ours", n_str, _best_time(lambda: _ours(depth, width).partial_fit(strs), repeat))
    row("update", "str", "numpy", n_str,
        _best_time(lambda: NumpyCountSketch(depth, width, seeds).update(bytes_keys(strs)), repeat))
    row("update", "str", "datasketches", n_peer, _best_time(lambda: ds_update(strs[:n_peer].tolist()), repeat))
    row("update", "str", "pyprobables", n_pp, _best_time(lambda: pp_update(peer_strs), 1))

    # ---- queries (one query set of distinct items)
    ours = _ours(depth, width).partial_fit(ints)
    row("query", "int", "ours", queries.shape[0], _best_time(lambda: ours.query(queries), repeat))
    npcs = NumpyCountSketch(depth, width, seeds)
    npcs.update(ints.view(np.uint64))
    row("query", "int", "numpy", queries.shape[0], _best_time(lambda: npcs.query(queries.view(np.uint64)), repeat))
    cms = count_min_sketch(depth, width)
    for v in peer_ints:
        cms.update(v)
    q_list = queries[:n_peer].tolist()
    row("query", "int", "datasketches", len(q_list), _best_time(lambda: [cms.get_estimate(v) for v in q_list], repeat))
    pp = CountMinSketch(width=width, depth=depth)
    for v in peer_strs:
        pp.add(v)
    q_strs = [str(v) for v in q_list[:n_pp]]
    row("query", "int", "pyprobables", len(q_strs), _best_time(lambda: [pp.check(v) for v in q_strs], 1))

    ours_rate = {(r["task"], r["items"]): r["rate"] for r in rows if r["method"] == "ours"}
    for r in rows:
        r["d x w"] = f"{depth} x {width}"
        r["ours / this"] = ours_rate[(r["task"], r["items"])] / r["rate"]
    return rows


def memory(depth, width, lengths, chunk=1 << 16):
    out = []
    for n in lengths:
        est = _ours(depth, width)
        rng = np.random.default_rng(1)
        tracemalloc.start()
        done = 0
        while done < n:
            m = min(chunk, n - done)
            est.partial_fit(rng.zipf(1.1, size=m).astype(np.int64))
            done += m
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out.append({"stream length": n, "peak MiB": peak / 2**20, "table MiB": est.table_.nbytes / 2**20})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller streams (smoke test)")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    from sklearn_bayes.experiments._report import format_table

    n_update, n_peer, n_query, repeat = (200_000, 20_000, 5_000, 2) if args.quick else (4_000_000, 200_000, 100_000, 3)
    rows = []
    for depth, width in [(5, 2048), (15, 5000)]:
        rows += bench(depth, width, n_update, n_peer, n_query, repeat)
    for r in rows:
        r["items/s"] = f"{r['rate']:.3e}"
        r["ours / this"] = f"{r['ours / this']:.1f}x"
    print(format_table(rows, ["d x w", "task", "items", "method", "items/s", "ours / this"]))
    print()
    lengths = [2**16, 2**20, 2**22] if args.quick else [2**16, 2**20, 2**23]
    print(format_table(memory(5, 2048, lengths), ["stream length", "peak MiB", "table MiB"]))


if __name__ == "__main__":
    main()
