"""FiBA with its interior in Redis against FiBA in memory (issue #16): throughput and local memory.

Part 1, throughput: a window of n entries (in order, Sum of 1s) in a ``FiBA`` in memory
and in a ``FiBA(store=Redis)`` (its own ``redis-server``, no persistence; blocks of 512
records, buffer 512 updates, cache 256 nodes); rounds of ``evict(oldest); insert(next);
query()`` at out-of-order distance d (d = 0: in order; d > 0: the insert goes d entries
below the newest: the d newest keys are "high" ones that later keys stay under). The variants take turns,
three timed runs each; medians per round, and the ratio Redis/memory. Round trips to
Redis are counted (``backend.round_trips``); the last run's background commit is waited
for inside the timing.

Part 2, local memory against the window size, as the MTA paper's Experiment 4: a Redis
FiBA of n entries (in order, then n/4 sliding rounds so that it is in steady state),
flushed; then what it holds locally: nodes with content in memory (spines, cache,
root), stubs (position + aggregate of a stored child), and the entries those nodes hold,
with their deep size in bytes (``sys.getsizeof`` of the nodes, their lists and the
entries' keys and values), counting what the cache and the write set hold apart from the
tree too (nodes that left it: until 07f273b, those grew with the stream unseen). The in-memory FiBA holds all n entries; its size is the same
deep size over every node.

    python -m benchmarks.fiba_store            # full (~10 min)
    python -m benchmarks.fiba_store --quick    # smoke run (seconds)
"""

from __future__ import annotations

import sys
from typing import Any

import kvs
from benchmarks import common
from benchmarks.common import now_ns, pow2, ratio
from mta.algorithms.fiba import FiBA, _Node
from mta.algorithms.fiba_store import StoredFiBA, _children
from mta.monoid import Sum

NAME = "fiba_store"
#: Target (issue #16): Redis throughput at least half of memory's at n = 2^20, d = 0.
MIN_RATIO = 0.5


#: Above every key a round inserts: the d newest keys of a window at distance d.
HIGH = 1 << 62


def fill(tree: FiBA, n: int, d: int = 0) -> None:
    """n entries: keys 0 .. n-d-1, and the d "high" keys that stay the newest (the FiBA
    paper's generator), so that every round's insert has exactly d newer keys."""
    for i in range(n - d):
        tree.insert(i, 1)
    for j in range(d):
        tree.insert(HIGH + j, 1)


def rounds(tree: FiBA, start: int, count: int) -> int:
    """``count`` rounds inserting keys ``start, start + 1, ...`` (below the high keys);
    return the next start."""
    evict, insert, query, oldest = tree.evict, tree.insert, tree.query, tree.oldest
    for i in range(start, start + count):
        evict(oldest()[0])
        insert(i, 1)
        query()
    return start + count


def throughput(run: common.Run, n: int, steps: int, ds: list[int], url: str) -> list[list[Any]]:
    backend = kvs.connect(url)
    rows = []
    for d in ds:
        trees: dict[str, FiBA] = {"memory": FiBA(Sum())}
        lease = backend.create(f"fiba-bench-{d}", {}, replace=True)
        trees["redis"] = FiBA(Sum(), store=backend.store(f"fiba-bench-{d}", lease, block_size=512))
        starts = {}
        for name, tree in trees.items():
            fill(tree, n, d)
            if isinstance(tree, StoredFiBA):
                tree.flush()
            starts[name] = n - d
        times: dict[str, list[float]] = {name: [] for name in trees}
        trips_before = backend.round_trips.reads + backend.round_trips.writes
        for _ in range(3):
            for name, tree in trees.items():
                with common.gc_paused():
                    t0 = now_ns()
                    starts[name] = rounds(tree, starts[name], steps)
                    if isinstance(tree, StoredFiBA):
                        tree.flush()
                    times[name].append((now_ns() - t0) / steps / 1000)
        trips = backend.round_trips.reads + backend.round_trips.writes - trips_before
        memory, redis = common.median(times["memory"]), common.median(times["redis"])
        rows.append([pow2(n), d, round(memory, 2), round(redis, 2), round(ratio(memory, redis), 2),
                     round(1000 * trips / (3 * steps), 1)])
        run.log(f"d={d}: memory {memory:.2f} us, redis {redis:.2f} us per round")
        backend.delete(f"fiba-bench-{d}")
    run.table(f"Rounds (evict oldest + insert at distance d + query), n = {pow2(n)}",
              ["n", "d", "memory (us/round)", "Redis (us/round)", "Redis/memory throughput",
               "round trips per 1000 rounds"], rows,
              note=f"Target: Redis/memory >= {MIN_RATIO} at d = 0.")
    return rows


def deep_size(node: _Node, seen: set[int]) -> tuple[int, int, int, int]:
    """(loaded nodes, stubs, entries, bytes) of ``node``'s loaded part."""
    children = _children(node)
    size = sys.getsizeof(node)
    if children is False:
        return 0, 1, 0, size
    loaded, stubs, entries = 1, 0, len(node.keys)
    for part in (node.keys, node.values):
        size += sys.getsizeof(part) + sum(sys.getsizeof(x) for x in part if id(x) not in seen)
    for child in children or ():
        a, b, c, d = deep_size(child, seen)
        loaded, stubs, entries, size = loaded + a, stubs + b, entries + c, size + d
    if children:
        size += sys.getsizeof(children)
    return loaded, stubs, entries, size


def held(tree: StoredFiBA, small: set[int]) -> tuple[int, int, int, int]:
    """:func:`deep_size` of everything the tree holds: its nodes from the root, and any
    node its cache or its write set still holds apart from them (nodes that left the tree)."""
    totals = list(deep_size(tree._root, small))
    reached = set()
    stack = [tree._root]
    while stack:
        node = stack.pop()
        reached.add(id(node))
        stack.extend(_children(node) or ())
    for node in [*tree._resident.values(), *tree._dirty.values()]:
        if id(node) not in reached:
            reached.add(id(node))
            totals = [a + b for a, b in zip(totals, deep_size(node, small))]
    return tuple(totals)


def blocks_size(tree: StoredFiBA, small: set[int]) -> int:
    """Bytes of the store blocks the tree's level keeps after its reads (decoded records)."""
    def size(x: Any) -> int:
        if isinstance(x, (tuple, list)):
            return sys.getsizeof(x) + sum(size(y) for y in x)
        return 0 if id(x) in small else sys.getsizeof(x)
    recent = getattr(tree._level, "_recent", {})
    return sum(size(block) for block in recent.values())


def memory(run: common.Run, sizes: list[int], url: str) -> list[list[Any]]:
    backend = kvs.connect(url)
    small = {id(i) for i in range(-5, 257)}  # interned ints are no one's memory
    rows = []
    for n in sizes:
        lease = backend.create("fiba-memory", {}, replace=True)
        tree = FiBA(Sum(), store=backend.store("fiba-memory", lease, block_size=512))
        fill(tree, n)
        rounds(tree, n, n // 4)
        tree.flush()
        loaded, stubs, entries, size = held(tree, small)
        blocks = blocks_size(tree, small)
        used = backend.client.info("memory")["used_memory"] if hasattr(backend, "client") else None
        rows.append([pow2(n), loaded, stubs, entries, round(size / 2 ** 10, 1), round(blocks / 2 ** 10, 1),
                     round((size + blocks) / 2 ** 10, 1), round(used / 2 ** 20, 1) if used else "-"])
        run.log(f"n={pow2(n)}: {loaded} nodes, {entries} entries, {size / 2 ** 10:.0f} KiB local "
                f"+ {blocks / 2 ** 10:.0f} KiB of store blocks")
        backend.delete("fiba-memory")
    reference = FiBA(Sum())
    fill(reference, sizes[0])
    _, _, entries, size = deep_size(reference._root, small)
    run.table("Local memory of a FiBA on Redis against the window size (steady state, after a flush)",
              ["n", "loaded nodes", "stubs", "entries held", "nodes KiB", "kept store blocks KiB", "local KiB",
               "Redis used_memory (MiB)"], rows,
              note=f"For comparison, FiBA in memory at n = {pow2(sizes[0])}: {entries} entries, "
                   f"{size / 2 ** 10:.0f} KiB (linear in n).")
    return rows


def main(argv: list[str] | None = None) -> None:
    p = common.parser(__doc__.splitlines()[0])
    p.add_argument("--exp", choices=["throughput", "memory", "all"], default="all")
    p.add_argument("--redis-url", default=None, help="an existing Redis (default: start one)")
    args = p.parse_args(argv)
    n = 2 ** 12 if args.quick else 2 ** 20
    steps = 2 ** 11 if args.quick else 2 ** 15
    ds = [0, 64] if args.quick else [0, 1024]
    sizes = [2 ** k for k in ((10, 12, 14) if args.quick else (16, 18, 20, 22))]
    run = common.Run(NAME, args, {"n": n, "steps": steps, "ds": ds, "sizes": sizes})
    server = None
    url = args.redis_url
    if url is None:
        from kvs.servers import RedisProcess
        server = RedisProcess()
        server.start()
        url = server.url
    try:
        csv = []
        if args.exp in ("throughput", "all"):
            for row in throughput(run, n, steps, ds, url):
                csv.append(["throughput", *row])
        if args.exp in ("memory", "all"):
            for row in memory(run, sizes, url):
                csv.append(["memory", *row])
        run.finish(["part", "n", "a", "b", "c", "d", "e"], csv)
    finally:
        kvs.disconnect(url)
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
