"""FiBA with its interior in a level store (mta/algorithms/fiba_store.py): the same answers
as a dict oracle on memory, file and Redis stores with tiny blocks and caches, reopening
from every flush, bounded local memory, reclaimed garbage, reads that fail before
anything changes, and a SIGKILL that loses nothing flushed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from functools import reduce
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kvs
from conftest import CountingStore, hsettings, open_store, reopen
from kvs import MemoryStore, StoreError
from mta.algorithms.fiba import FiBA
from mta.algorithms.fiba_store import StoredFiBA, _loaded
from mta.monoid import Monoid, Sum

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Cat(Monoid):
    """Tuple concatenation: associative, not commutative (order mistakes show)."""

    identity: tuple = ()

    def combine(self, a: tuple, b: tuple) -> tuple:
        return a + b

    def lift(self, value: Any) -> tuple:
        return (value,)

    def lower(self, partial: tuple) -> tuple:
        return partial


def fold(oracle: dict, low: Any = None, high: Any = None) -> tuple:
    keys = [k for k in sorted(oracle) if (low is None or k >= low) and (high is None or k <= high)]
    return reduce(lambda a, b: a + b, (oracle[k] for k in keys), ())


def same(tree: FiBA, oracle: dict) -> None:
    tree.check()
    assert tree.query() == fold(oracle)
    assert len(tree) == len(oracle)
    assert list(tree) == sorted(oracle.items())


OPS = st.lists(st.tuples(st.sampled_from(["insert", "insert", "insert", "retract", "upto", "range", "flush",
                                          "reopen", "search"]),
                         st.integers(0, 10_000), st.integers(-3, 64)), max_size=60)


@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
@given(arity=st.sampled_from([2, 3, 4]), prefill=st.integers(0, 400), ops=OPS, cache=st.sampled_from([1, 4, 64]),
       buffer=st.sampled_from([1, 5, 512]))
@hsettings(max_examples=25)
def test_stored_fiba_answers_as_the_oracle_through_flushes_and_reopens(request, kind, arity, prefill, ops, cache,
                                                                        buffer) -> None:
    store, again = open_store(kind, request)
    options = {"cache_size": cache, "buffer_size": buffer}
    tree = FiBA(Cat(), store=store, min_arity=arity, **options)
    oracle: dict[float, tuple] = {}
    for key in range(prefill):
        tree.insert(key, ("p",))
        oracle[key] = ("p",)
    newest = float(prefill)
    if prefill % 2:
        tree = reopen(tree, again, **options)
    for step, (op, a, b) in enumerate(ops):
        if op == "insert":  # at distance b below the newest key (b < 0: in order)
            key = newest + 1 if b < 0 else newest - b - (a % 7) / 8
            newest = max(newest, key)
            tree.insert(key, (step,))
            oracle[key] = oracle.get(key, ()) + (step,)
        elif op == "retract":
            keys = sorted(oracle)
            key = keys[a % len(keys)] if keys and a % 3 else a / 10
            assert tree.evict(key) == (key in oracle)
            oracle.pop(key, None)
        elif op == "upto":
            keys = sorted(oracle)
            bound = keys[a % len(keys)] if keys and a % 4 else newest + 1
            gone = [k for k in keys if k <= bound]
            assert tree.evict_upto(bound) == len(gone)
            for k in gone:
                del oracle[k]
        elif op == "range":
            low, high = newest - a % 40, newest - a % 40 + b
            assert tree.query_range(low, high) == fold(oracle, low, high)
        elif op == "search":
            limit = a % 12
            acc: tuple = ()
            expected = None
            for k in sorted(oracle):
                if len(acc + oracle[k]) > limit:
                    break
                acc += oracle[k]
                expected = (k, acc)
            assert tree.search(lambda agg: len(agg) <= limit) == expected
        elif op == "flush":
            tree.flush()
        else:
            tree = reopen(tree, again, **options)
        same(tree, oracle)
    same(reopen(tree, again, **options), oracle)


def fifo(tree: FiBA, n: int, rounds: int, start: int = 0) -> None:
    for i in range(start, start + n):
        tree.insert(i, 1)
    for i in range(start + n, start + n + rounds):
        tree.evict(tree.oldest()[0])
        tree.insert(i, 1)


def loaded_nodes(tree: StoredFiBA) -> int:
    """Nodes with their content in memory (stubs not counted), found from the root."""
    count, stack = 0, [tree._root]
    while stack:
        node = stack.pop()
        if _loaded(node):
            count += 1
            stack.extend(node.children or ())
    return count


def test_local_memory_is_the_spines_and_the_cache_whatever_the_window_size() -> None:
    counts = []
    for n in (2 ** 10, 2 ** 15):
        tree = FiBA(Sum(), store=MemoryStore(), min_arity=4, cache_size=32, buffer_size=64)
        fifo(tree, n, 3000)
        tree.flush()
        counts.append(loaded_nodes(tree))
    small, large = counts
    # Spines grow by a level or two (log n), nothing else: far below n / 7 nodes.
    assert large <= small + 16 and large < 100, counts


def test_garbage_is_reclaimed_after_fifo_runs_and_bulk_evictions() -> None:
    store = CountingStore()
    tree = FiBA(Sum(), store=store, min_arity=4, cache_size=64, buffer_size=128)
    n = 5000
    fifo(tree, n, 20 * n)
    tree.flush()
    level = store.level(0)
    assert level.tail > 5 * n // 3  # written many times over ...
    assert level.tail - level.head <= 2 * n // 3  # ... but only about one tree's worth kept (<= n / 3 nodes live)
    tree.evict_upto(tree.newest()[0] - 10)
    tree.flush()
    assert level.tail - level.head <= 10  # a bulk eviction frees what it cut off, without reading it


def unload_all(tree: StoredFiBA) -> None:
    """Make every stored node a stub (the next operation reads what it needs)."""
    tree.flush()
    size, tree.cache_size = tree.cache_size, 0
    tree._trim()
    tree.cache_size = size


class FailingLevel(kvs.base.Level):
    def __init__(self, inner: kvs.base.Level, switch: dict) -> None:
        self._inner, self._switch = inner, switch

    head = property(lambda self: self._inner.head)
    tail = property(lambda self: self._inner.tail)

    def read(self, start: int, stop: int) -> list[Any]:
        if self._switch["down"]:
            raise StoreError("the store is down")
        return self._inner.read(start, stop)

    def extend(self, values: list[Any]) -> None:
        self._inner.extend(values)

    def drop_until(self, index: int) -> None:
        self._inner.drop_until(index)

    def reset(self, index: int) -> None:
        self._inner.reset(index)


class FailingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.switch = {"down": False}

    def level(self, number: int) -> FailingLevel:
        return FailingLevel(super().level(number), self.switch)


@given(ops=st.lists(st.tuples(st.sampled_from(["insert", "retract", "upto", "range"]), st.integers(0, 3000),
                              st.booleans()), min_size=1, max_size=40))
@hsettings(max_examples=60)
def test_a_read_that_fails_changes_nothing(ops) -> None:
    """Each operation starts with every stored node a stub but (half the time) those on its
    search path, so that reads fail at the search or later, in rebalancing."""
    store = FailingStore()
    tree = FiBA(Cat(), store=store, min_arity=2, cache_size=10_000, buffer_size=1)
    oracle = {}
    for i in range(0, 3000, 3):
        tree.insert(i, (i,))
        oracle[i] = (i,)
    for i in range(0, 3000, 9):  # leaves nodes at their minimum, so that evictions rebalance
        tree.evict(i)
        del oracle[i]
    for op, a, path in ops:
        key = {"insert": a + 0.5, "retract": a - a % 3 + 3 * (a % 9 == 0)}.get(op, a)
        unload_all(tree)
        if path:
            tree._search_node(key)
        store.switch["down"] = True
        try:
            if op == "insert":
                tree.insert(key, ("x",))
            elif op == "retract":
                tree.evict(key)
            elif op == "upto":
                tree.evict_upto(key)
            else:
                tree.query_range(key, key + 50)
        except StoreError:
            store.switch["down"] = False
            same(tree, oracle)  # as before the call
            continue
        store.switch["down"] = False
        if op == "insert":
            oracle[key] = oracle.get(key, ()) + ("x",)
        elif op == "retract":
            oracle.pop(key, None)
        elif op == "upto":
            for k in [k for k in oracle if k <= key]:
                del oracle[k]
        same(tree, oracle)


CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    import kvs
    from mta.algorithms.fiba import FiBA
    from mta.monoid import Sum
    backend = kvs.connect({url!r})
    store = backend.store({wid!r}, backend.create({wid!r}, {{}}), block_size=8)
    tree = FiBA(Sum(), store=store, min_arity=3, cache_size=16, buffer_size=50)
    i = 0
    for round in range(4):
        for _ in range(1000):  # out of order: keys run backwards within each round
            tree.insert(round * 1000 + 999 - i % 1000, i)
            i += 1
        tree.evict_upto(round * 1000 - 500)
        tree.flush()
        print("flushed", i, flush=True)
    while True:  # unflushed (auto-commits in the background) until killed
        tree.insert(10_000 + i, i)
        i += 1
        if i % 500 == 0:
            time.sleep(0.01)
""")


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_sigkill_loses_nothing_flushed(request, kind) -> None:
    url = request.getfixturevalue(f"{kind}_url")
    wid = uuid.uuid4().hex
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=ROOT, url=url, wid=wid)],
                             stdout=subprocess.PIPE, text=True)
    try:
        for line in child.stdout:
            if int(line.split()[1]) == 4000:
                break
        time.sleep(0.3)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    backend = kvs.connect(url)
    store = backend.store(wid, take_over=True, block_size=8)
    tree = FiBA(Sum(), store=store, state=store.load(), min_arity=3)
    tree.check()
    # Round r put keys 1000r .. 1000r + 999 (value: arrival number) and evicted up to 1000r - 500.
    flushed = {k: 4999 - k for k in range(2501, 3000)} | {k: 6999 - k for k in range(3000, 4000)}
    later = {k: v for k, v in tree if k >= 10_000}  # auto-commits after the last flush, in order
    assert {k: v for k, v in tree if k < 10_000} == flushed
    assert sorted(later.values()) == list(range(4000, 4000 + len(later)))


def test_a_snapshot_copies_the_local_part_and_reads_nothing() -> None:
    store = FailingStore()
    tree = FiBA(Cat(), store=store, min_arity=2, cache_size=10_000)
    oracle = {i: (i,) for i in range(500)}
    for key, value in oracle.items():
        tree.insert(key, value)
    unload_all(tree)
    stubs_before = loaded_nodes(tree)
    store.switch["down"] = True  # a snapshot must not read: stubs are copied as stubs
    snapshot = tree.snapshot()
    store.switch["down"] = False
    assert loaded_nodes(tree) == stubs_before
    tree.begin_hold()
    for key in range(0, 500, 3):
        tree.evict(key)
    tree.insert(1000, ("x",))
    tree.restore(snapshot)
    tree.hold = False
    same(tree, oracle)


def test_a_snapshot_records_the_spines_and_the_changes_not_the_cache() -> None:
    """A batch's snapshot costs O(spines + changes since the last flush), whatever the cache holds."""
    tree = FiBA(Sum(), store=MemoryStore(), min_arity=2, cache_size=100_000)
    for key in range(5000):
        tree.insert(key, key)
    tree.flush()
    list(tree.entries(0, 5000))  # loads every node into the cache
    assert loaded_nodes(tree) > 1000

    def records(record: tuple) -> int:
        return 1 + sum(records(child) for child in record[2] or () if len(child) == 8)

    spines = records(tree.snapshot()[0])
    assert spines <= 2 * 12  # two spines of a tree of depth < 12
    tree.insert(2500, 1)  # one change inside: its leaf and the path up to a spine
    assert spines < records(tree.snapshot()[0]) <= spines + 12


def test_the_cache_keeps_no_dead_nodes_in_a_long_fifo_stream() -> None:
    """Nodes that were on a spine when they left the tree are dropped from the cache too
    (they once stayed, and local memory grew with the stream: 457 cached nodes, 390 dead,
    after 200 batches of this loop)."""
    from mta import TimeRange, Window

    w = Window(Sum(), TimeRange(3600), algorithm="fiba", store=kvs.connect("memory://"))
    tree = w._algorithm.tree
    for batch in range(200):
        w.insert_many([(batch * 1000 + i, i) for i in range(1000)])
        w.flush()
        assert len(tree._resident) <= tree.cache_size + 2 * 8  # the cache, and spine nodes once cached
    assert not [node for node in tree._resident.values() if not tree._live(node)]
    tree.check()


@pytest.mark.parametrize("kind", ["memory", "file"])
@given(arity=st.sampled_from([2, 3, 16]),
       ops=st.lists(st.tuples(st.sampled_from(["insert", "insert", "insert", "late", "evict", "upto", "reopen"]),
                              st.sampled_from([0.1, 1e6, 3.3, 1e-3, 7.0, 2.5e15]), st.integers(0, 30)),
                    max_size=80))
@hsettings(max_examples=30)
def test_float_aggregates_are_the_same_bits_after_reopening(request, kind, arity, ops) -> None:
    """The local aggregates are checkpointed as they are: recomputed on reopening, their
    grouping (appends fold left, the left finger's suffixes right) changed the last bits
    of float sums, unlike the tree that was never closed."""
    store, again = open_store(kind, request)
    tree = FiBA(Sum(), store=store, min_arity=arity, cache_size=4)
    twin = FiBA(Sum(), min_arity=arity)
    newest = 0
    for op, value, distance in ops:
        if op in ("insert", "late"):
            key = newest + 1 if op == "insert" else newest - distance - 0.5
            newest = max(newest, key)
            for t in (tree, twin):
                t.insert(key, value)
        elif op == "evict" and twin.oldest() is not None:
            key = twin.oldest()[0]
            assert tree.evict(key) and twin.evict(key)
        elif op == "upto":
            assert tree.evict_upto(newest - distance) == twin.evict_upto(newest - distance)
        elif op == "reopen":
            tree = reopen(tree, again, cache_size=4)
        assert float(tree.query()).hex() == float(twin.query()).hex()
    assert float(reopen(tree, again, cache_size=4).query()).hex() == float(twin.query()).hex()
