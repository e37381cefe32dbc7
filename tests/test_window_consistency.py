"""One consistent window through batches, store failures and raising policies.

- Batches (``insert_many``, ``insert_checked``) reach a durable store as ``insert``
  leaves it: a commit that comes due during a batch is sent right after it, the
  local memory stays O(log n), and no checkpoint holds part of a batch.
- A call that fails (a cache miss while the store is down, a policy that raises)
  leaves the window exactly as it was before the call: every read agrees with
  that state, then and after the store is back.

Durable stores are real: a sqlite file (with failures injected in the backend's
calls) and a Redis server, read by a second process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import tracemalloc
import uuid
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kvs
from conftest import ALGORITHM_NAMES, TREE_ALGORITHMS, WindowOracle, hsettings
from kvs.codec import unpack
from mta import Collect, MaxSize, Sum, TimeRange, Window

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 100


def state(window: Window) -> tuple:
    """Everything observable about a window, without touching the store."""
    return len(window), window.query(), window.partial(), repr(window)


# --------------------------------------------------------------------------- batches on a durable store

CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from mta import Collect, Window
    w = Window(Collect(), store={url!r}, window_id={wid!r}, algorithm={algorithm!r})
    for start in range(0, 3000, {batch}):
        w.insert_many([(ts, ts) for ts in range(start, start + {batch})])
    w.wait_durable()  # waits for the commits sent so far; flushes nothing
    print("inserted", flush=True)
    time.sleep(120)
""")


@pytest.mark.parametrize("algorithm", ["amta", "log_mta"])
@pytest.mark.parametrize("kind", ["file", "redis"])
def test_another_process_finds_the_batches_of_a_killed_writer(request, kind, algorithm) -> None:
    """3,000 updates in batches of 100, then SIGKILL: another process opens the window and
    finds every update but at most one write buffer's worth (512), as after insert()."""
    url = request.getfixturevalue(f"{kind}_url")
    wid = uuid.uuid4().hex
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=ROOT, url=url, wid=wid, algorithm=algorithm,
                                                                 batch=BATCH)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "inserted"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    found = Window.open(url, wid, Collect(), take_over=True).query()  # its writer was killed
    assert found == list(range(len(found)))
    assert len(found) >= 3000 - 512
    assert len(found) % BATCH == 0  # whole batches only


def test_batches_keep_local_memory_bounded(file_url) -> None:
    """After each batch the window holds O(log n) locally, as after insert(): the memory
    it allocates does not grow with the number of updates it has seen."""
    w = Window(Sum(), store=file_url, buffer_size=64, cache_size=16)
    ts = 0

    def feed(batches: int) -> None:
        nonlocal ts
        for _ in range(batches):
            w.insert_many([(t, t) for t in range(ts, ts + BATCH)])
            ts += BATCH
            assert len(w._algorithm._leaves) <= 64 + 32 + BATCH

    feed(20)
    w.wait_durable()
    tracemalloc.start()
    try:
        feed(40)
        w.wait_durable()
        first = tracemalloc.get_traced_memory()[0]
        feed(80)
        w.wait_durable()
        second = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(w) == 14000 and w.query() == sum(range(14000))
    # 8,000 more updates: kept locally they would take more than 300 KB
    assert second - first < 64 * 1024


class Recording(kvs.FileBackend):
    """A file store that keeps the local state of every checkpoint it commits."""

    def __init__(self, path: Any) -> None:
        super().__init__(path)
        self.states: list[dict] = []

    def commit(self, window_id: str, writes: dict, deletes: list, checkpoint: bytes, lease: Any) -> None:
        super().commit(window_id, writes, deletes, checkpoint, lease)
        self.states.append(unpack(checkpoint)["state"])


def count_batches(total: Any, old: Any) -> bool:  # a user policy: not batchable, per update
    return total.count - old.count >= 250


@pytest.mark.parametrize("algorithm", TREE_ALGORITHMS)
@pytest.mark.parametrize("policy", [None, MaxSize(250), count_batches], ids=["none", "count", "user"])
def test_insert_many_commits_whole_batches_right_after_them(tmp_path, algorithm, policy) -> None:
    backend = Recording(tmp_path / "w.db")
    w = Window(Collect(), policy, algorithm=algorithm, store=backend, buffer_size=8, block_size=4,
               background=False)
    created = len(backend.states)
    for start in range(0, 1000, BATCH):
        w.insert_many([(ts, ts) for ts in range(start, start + BATCH)])
        # the write buffer filled up during the batch: its commit follows the batch at once
        assert backend.states[-1]["tail"] == start + BATCH
    assert len(backend.states) == created + 10
    w.close()
    assert Window.open(backend, w.id, Collect(), policy).query() == list(range(0 if policy is None else 750, 1000))


@pytest.mark.parametrize("algorithm", TREE_ALGORITHMS)
@pytest.mark.parametrize("policy", [MaxSize(250), count_batches], ids=["count", "user"])
def test_a_checkpoint_has_a_unit_of_work_and_its_note_or_neither(tmp_path, algorithm, policy) -> None:
    """As the server and the Spark operator do: a unit of work in several insert_checked
    calls (slices with ``enforce=False`` but the last; evictions between them), then its
    id in ``notes``, then a flush. Nothing commits before that flush."""
    backend = Recording(tmp_path / "w.db")
    w = Window(Collect(), policy, algorithm=algorithm, store=backend, buffer_size=8, block_size=4,
               background=False)
    created = len(backend.states)
    for number, start in enumerate(range(0, 2000, BATCH)):
        timestamps = list(range(start, start + BATCH))
        for cut in range(0, BATCH, 30):
            part = timestamps[cut:cut + 30]
            w.insert_checked(w.check(part, part), enforce=cut + 30 >= BATCH)
            w.evict(1)
        w.notes["batches"] = (*w.notes.get("batches", ()), number)
        w.flush(wait=False)
    assert len(backend.states) == created + 20
    for checkpoint in backend.states[created:]:
        assert checkpoint["tail"] == BATCH * len(checkpoint["annotations"]["notes"]["batches"])


# --------------------------------------------------------------------------- the store fails

def user_count(total: Any, old: Any) -> bool:
    return total.count - old.count >= 40


# Windows of tens of updates, over blocks of 1-4 nodes and caches of 1 or 2: most evictions
# and policy searches read the store.
POLICIES: dict[str, Callable[[Any, Any], bool]] = {"count": MaxSize(50), "time": TimeRange(30), "user": user_count}

updates = st.tuples(st.integers(0, 3), st.integers(-5, 9))  # (timestamp gap, value)
operations = st.lists(st.one_of(
    st.tuples(st.just("insert"), updates),
    st.tuples(st.just("batch"), st.lists(updates, max_size=40)),
    st.tuples(st.just("evict"), st.integers(0, 40)),
    st.tuples(st.just("evict_before"), st.integers(0, 30)),
    st.tuples(st.just("flush")),
    st.tuples(st.just("reopen")),  # caches start cold: the next reads miss
    st.tuples(st.just("down")),
    st.tuples(st.just("up")),
), max_size=50)


def reads_agree(window: Window, oracle: WindowOracle, store_up: bool) -> None:
    """Every public read describes the oracle's window (reads that need a store that is
    down may fail instead, but never show anything else)."""
    n = len(oracle.items)
    assert len(window) == n
    assert window.query() == oracle.query()
    assert f"len={n}" in repr(window)
    try:
        assert list(window) == oracle.partials()
        if not isinstance(oracle.policy, MaxSize):  # a window that keeps timestamps
            assert window.oldest_timestamp() == (oracle.items[0][0] if n else None)
    except kvs.StoreError:
        assert not store_up


def apply(window: Window, oracle: WindowOracle, op: tuple, newest: int) -> int:
    """Apply ``op`` to the window and, only if it succeeded, to the oracle; return the
    newest timestamp."""
    kind = op[0]
    if kind == "insert":
        (gap, value), = op[1:]
        window.insert(newest + gap, value)
        oracle.insert(newest + gap, value)
        return newest + gap
    if kind == "batch":
        batch, ts = [], newest
        for gap, value in op[1]:
            ts += gap
            batch.append((ts, value))
        window.insert_many(batch)
        for t, value in batch:
            oracle.insert(t, value)
        return ts
    if kind == "evict":
        k = min(op[1], len(oracle.items))
        window.evict(k)
        del oracle.items[:k]
    elif kind == "evict_before" and not isinstance(oracle.policy, MaxSize):
        horizon = newest - op[1]
        window.evict_before(horizon)
        oracle.items = [item for item in oracle.items if item[0] >= horizon]
    elif kind == "flush":
        window.flush()
    return newest


@given(st.sampled_from(TREE_ALGORITHMS), st.sampled_from(sorted(POLICIES)),
       st.sampled_from([(1, 1, 1), (2, 1, 2), (4, 2, 1), (3, 2, 4)]), operations)
@hsettings(max_examples=200)
def test_every_read_shows_the_window_before_a_failed_call(flaky, algorithm, policy_name, sizes, ops) -> None:
    """Random operations while the store goes down and comes back: each call succeeds or
    changes nothing, the reads always agree with the naive oracle, and the window that
    the store keeps once it is back is the oracle's."""
    buffer_size, cache_size, block_size = sizes
    policy = POLICIES[policy_name]
    flaky.down = False
    w = Window(Collect(), policy, algorithm=algorithm, store=flaky, buffer_size=buffer_size,
               cache_size=cache_size, block_size=block_size, background=False)
    oracle = WindowOracle(Collect(), policy)
    newest = 0
    for _ in range(4):  # a window of tens of updates, most of them in the store
        newest = apply(w, oracle, ("batch", [(1, newest)] * 50), newest)
    for op in ops:
        if op[0] in ("down", "up"):
            flaky.down = op[0] == "down"
            continue
        if op[0] == "reopen":
            if not flaky.down:
                w.close()  # one writer per window: the reopened one is the next
                w = Window.open(flaky, w.id, Collect(), policy)
                reads_agree(w, oracle, True)
            continue
        before = list(oracle.items)
        try:
            newest = apply(w, oracle, op, newest)
        except kvs.StoreError:
            assert flaky.down
            assert oracle.items == before  # the oracle is only changed by calls that succeed
        reads_agree(w, oracle, not flaky.down)
    flaky.down = False
    reads_agree(w, oracle, True)
    w.close()
    again = Window.open(flaky, w.id, Collect(), policy)
    assert list(again) == oracle.partials()


def last_400(total: Any, old: Any) -> bool:
    return total.last - old.last >= 400


COLD_CASES = [(policy, op) for policy in (MaxSize(400), TimeRange(400), last_400)
              for op in (("insert", (300, 7)), ("batch", [(1, 7)] * 20), ("evict", 150), ("evict_before", 100))
              if not (op[0] == "evict_before" and isinstance(policy, MaxSize))]  # needs timestamps


@pytest.mark.parametrize("algorithm", TREE_ALGORITHMS)
@pytest.mark.parametrize("policy,op", COLD_CASES,
                         ids=lambda x: x[0] if isinstance(x, tuple) else getattr(x, "__name__", repr(x)))
def test_each_call_on_a_cold_window_fails_whole_and_succeeds_once_the_store_is_back(
        flaky, algorithm, policy, op) -> None:
    """A window just reopened (empty caches) reads the store for evictions and policy
    searches: with the store down the call fails and changes nothing; retried, it works."""
    flaky.down = False
    w = Window(Collect(), policy, algorithm=algorithm, store=flaky, buffer_size=4, cache_size=2, block_size=2,
               background=False)
    oracle = WindowOracle(Collect(), policy)
    newest = apply(w, oracle, ("batch", [(1, 1)] * 1000), 0)
    w.close()
    w = Window.open(flaky, w.id, Collect(), policy)
    flaky.down = True
    with pytest.raises(kvs.StoreError, match="unchanged"):
        apply(w, oracle, op, newest)
    reads_agree(w, oracle, False)
    flaky.down = False
    reads_agree(w, oracle, True)
    apply(w, oracle, op, newest)
    reads_agree(w, oracle, True)


UNIT_CASES = [(algorithm, stop) for algorithm in TREE_ALGORITHMS for stop in ("policy", "caller")] + [
    ("amta", "store")]  # a cold AMTA reads the store to evict 600 (Log MTA may find them cached)


@pytest.mark.parametrize("algorithm,stop", UNIT_CASES)
def test_a_batch_in_slices_is_one_unit(flaky, algorithm, stop) -> None:
    """The server inserts a batch in slices (insert_slices): when the last slice fails (its
    policy search reads the store while it is down, or the policy raises) or the caller
    gives up between slices, none of the batch stays, the earlier slices included; the
    batch can then be retried."""
    flaky.down = False
    failing = {"on": False, "at": None}

    def policy(total: Any, old: Any) -> bool:
        if failing["on"] and total.last == failing["at"]:  # at the batch's last update, in its last slice
            raise PolicyFailure("the policy failed")
        return last_400(total, old)

    w = Window(Collect(), policy, algorithm=algorithm, store=flaky, buffer_size=4, cache_size=2, block_size=2,
               background=False)
    oracle = WindowOracle(Collect(), last_400)
    newest = apply(w, oracle, ("batch", [(1, 1)] * 1000), 0)
    w.close()
    w = Window.open(flaky, w.id, Collect(), policy)  # cold caches: the policy search reads the store
    timestamps = list(range(newest + 1, newest + 601))
    failing["at"] = timestamps[-1]
    slices = w.insert_slices(w.check(timestamps, [7] * 600), 256)
    if stop == "caller":
        next(slices), next(slices)  # two of three slices, then the caller gives up
        slices.close()
    else:
        flaky.down = stop == "store"
        failing["on"] = stop == "policy"
        with pytest.raises(kvs.StoreError if stop == "store" else PolicyFailure):
            list(slices)
        flaky.down = failing["on"] = False
    reads_agree(w, oracle, True)
    evicted = sum(w.insert_slices(w.check(timestamps, [7] * 600), 256))
    assert evicted == sum(oracle.insert(ts, 7) for ts in timestamps)
    reads_agree(w, oracle, True)


# --------------------------------------------------------------------------- the policy raises

class PolicyFailure(Exception):
    pass


class Raising:
    """A user policy that raises on the calls numbered in ``failing`` and otherwise asks ``base``."""

    def __init__(self, base: Callable[[Any, Any], bool], failing: set[int], batchable: bool) -> None:
        self.base = base
        self.failing = failing
        self.calls = 0
        self.batchable = batchable

    def __call__(self, total: Any, old: Any) -> bool:
        self.calls += 1
        if self.calls in self.failing:
            raise PolicyFailure(f"call {self.calls}")
        return self.base(total, old)


def keep_six(total: Any, old: Any) -> bool:
    return total.count - old.count >= 6


def stores(name: str) -> list[str]:
    return ["memory", "file"] if name in TREE_ALGORITHMS else ["memory"]


@pytest.mark.parametrize("name,where", [(n, s) for n in ALGORITHM_NAMES for s in stores(n)])
@given(st.sets(st.integers(1, 30), max_size=8), st.booleans(),
       st.lists(st.one_of(st.tuples(st.just("insert"), updates),
                          st.tuples(st.just("batch"), st.lists(updates, max_size=10)),
                          st.tuples(st.just("evict"), st.integers(0, 4))), max_size=30))
@hsettings(max_examples=40)
def test_a_policy_that_raises_leaves_the_window_as_it_was(tmp_path_factory, name, where, failing, batchable,
                                                          ops) -> None:
    """A single insertion or a whole batch: nothing of it stays, and the window goes on as
    the oracle (which asks the same policy, without the failures)."""
    policy = Raising(keep_six, failing, batchable)
    options = {}
    if where == "file":
        options = {"store": kvs.connect(tmp_path_factory.getbasetemp() / "raising.db"), "buffer_size": 2,
                   "cache_size": 1, "block_size": 2, "background": False}
    w = Window(Sum(), policy, algorithm=name, **options)
    oracle = WindowOracle(Sum(), keep_six)
    newest = 0
    for op in ops:
        before = state(w), list(w)
        copy = list(oracle.items)
        try:
            newest = apply(w, oracle, op, newest)
        except PolicyFailure:
            assert (state(w), list(w)) == before
            oracle.items = copy
        assert (list(w), w.query(), len(w)) == (oracle.partials(), oracle.query(), len(oracle.items))


@pytest.mark.parametrize("algorithm", TREE_ALGORITHMS)
@pytest.mark.parametrize("block_size", [1, 2, 8])
def test_insertions_never_read_the_store(tmp_path, algorithm, block_size) -> None:
    """An insertion keeps what the next one reads (Log MTA: a right child's left sibling
    too), so it cannot fail half done on a cache miss."""
    backend = kvs.connect(tmp_path / "w.db")
    w = Window(Sum(), algorithm=algorithm, store=backend, buffer_size=1, cache_size=1, block_size=block_size,
               background=False)
    reads = backend.round_trips.reads
    for ts in range(2000):
        w.insert(ts, ts)
    assert backend.round_trips.reads == reads
    w.close()
    assert Window.open(backend, w.id, Sum()).query() == sum(range(2000))
