"""Windows in durable stores through ``mta.Window``: reopening, crashes, faults,
round trips, Redis Cluster, listing and deleting, and bad layouts.

Every test talks to a real store: a sqlite file or a Redis server / 3-master
cluster started by the test session (never skipped).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from fractions import Fraction
from functools import reduce

import pytest
import redis

import kvs
from kvs import codec
from kvs.servers import RedisProcess
from mta import MaxSize, TimeRange, Window
from mta.monoid import Collect, First, Max, Monoid, Record, Sum, Variance

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def window_id() -> str:
    return uuid.uuid4().hex


def expected_collect(values: list, keep: int) -> tuple:
    return tuple(values[-keep:]) if values else ()


# --------------------------------------------------------------------------- reopen through Window

@pytest.mark.parametrize("algorithm", ["amta", "log_mta"])
@pytest.mark.parametrize("background", [True, False], ids=["background", "inline"])
def test_window_reopens_with_everything_flushed(backend, algorithm, background) -> None:
    wid = window_id()
    values = list(range(3000))
    with Window(Collect(), MaxSize(700), algorithm=algorithm, store=backend, window_id=wid,
                buffer_size=64, cache_size=32, block_size=16, background=background) as w:
        for ts, v in enumerate(values):
            w.insert(ts, v)
    again = Window.open(backend, wid, Collect(), MaxSize(700))
    assert again.algorithm == algorithm
    assert again.query() == list(values[-700:])
    with pytest.raises(ValueError, match="older than the newest"):
        again.insert(10, 1)  # the newest timestamp survived too
    again.insert(3000, 3000)
    assert again.query() == list(values[-699:]) + [3000]


def test_time_policy_window_is_enforced_again_on_reopen(backend) -> None:
    """An automatic commit happens inside insert, before the policy runs: reopening enforces it."""
    wid = window_id()
    w = Window(Sum(), TimeRange(50), store=backend, window_id=wid, buffer_size=8, block_size=4)
    for ts in range(1000):
        w.insert(ts, ts)
    expected = w.query()
    w.close()
    assert Window.open(backend, wid, Sum(), TimeRange(50)).query() == expected == sum(range(950, 1000))


def test_reopen_checks_monoid_and_policy_kind(backend) -> None:
    wid = window_id()
    Window(Record(s=Sum(), m=Max()), TimeRange(5), store=backend, window_id=wid).close()
    with pytest.raises(ValueError, match="aggregates"):
        Window.open(backend, wid, Sum(), TimeRange(5))
    with pytest.raises(ValueError, match="aggregates"):
        Window.open(backend, wid, Record(s=Sum(), x=Max()), TimeRange(5))
    with pytest.raises(ValueError, match="timestamps"):
        Window.open(backend, wid, Record(s=Sum(), m=Max()), MaxSize(5))
    Window.open(backend, wid, Record(s=Sum(), m=Max()), TimeRange(9))  # another time policy is fine


def test_existing_missing_and_bad_window_ids(backend) -> None:
    wid = window_id()
    Window(Sum(), store=backend, window_id=wid)
    with pytest.raises(kvs.StoreError, match="already exists"):
        Window(Sum(), store=backend, window_id=wid)
    with pytest.raises(kvs.StoreError, match="no window"):
        Window.open(backend, "missing-" + wid, Sum())
    for bad in ["", "a{b}", "x" * 201, "sp ace", 5]:
        with pytest.raises(ValueError, match="window id"):
            Window(Sum(), store=backend, window_id=bad)
    with pytest.raises(ValueError, match="window_id needs a store"):
        Window(Sum(), window_id="w")
    with pytest.raises(ValueError, match="takes no store"):
        Window(Sum(), algorithm="two_stacks", store=backend)


def test_windows_are_listed_and_deleted_with_all_their_keys(redis_url) -> None:
    backend = kvs.connect(redis_url)
    client = redis.Redis.from_url(redis_url)
    wid = window_id()
    w = Window(Sum(), MaxSize(100), store=backend, window_id=wid, buffer_size=8, block_size=4)
    for ts in range(500):
        w.insert(ts, 1)
    w.close()
    assert wid in backend.windows()
    assert len(client.keys(f"mta:{{{wid}}}:*")) == 2
    assert backend.delete(wid) is True
    assert client.keys(f"mta:{{{wid}}}:*") == []
    assert wid not in backend.windows()
    assert backend.delete(wid) is False


def test_file_store_lists_and_deletes(file_url) -> None:
    backend = kvs.connect(file_url)
    ids = sorted(window_id() for _ in range(3))
    for wid in ids:
        Window(Sum(), store=file_url, window_id=wid).close()
    assert set(ids) <= set(backend.windows())
    assert backend.delete(ids[0]) and ids[0] not in backend.windows()


def test_memory_url_reopens_in_the_same_process() -> None:
    backend = kvs.connect("memory://")
    w = Window(Sum(), MaxSize(10), store=backend, window_id="m")
    for ts in range(100):
        w.insert(ts, ts)
    w.close()
    assert Window.open(backend, "m", Sum(), MaxSize(10)).query() == sum(range(90, 100))
    assert kvs.connect("memory://").windows() == []  # every memory:// URL is a new backend


# --------------------------------------------------------------------------- values and layouts

def test_user_types_need_a_registered_codec(backend, request) -> None:
    class Money:
        def __init__(self, cents: int) -> None:
            self.cents = cents

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Money) and other.cents == self.cents

    class MoneySum(Monoid):
        identity = Money(0)

        @staticmethod
        def combine(a: Money, b: Money) -> Money:
            return Money(a.cents + b.cents)

        def lift(self, value: int) -> Money:
            return Money(value)

    wid = window_id()
    with pytest.raises(TypeError, match="cannot store a .*Money"):
        Window(MoneySum(), store=backend, window_id=wid)
    assert wid not in backend.windows()  # nothing half-created
    code = {"file": 40, "redis": 41, "cluster": 42}[request.node.callspec.params["backend"]]
    codec.register(Money, code, lambda m: codec.pack(m.cents), lambda b: Money(codec.unpack(b)))
    w = Window(MoneySum(), store=backend, window_id=wid, buffer_size=4, block_size=4)
    for ts in range(40):
        w.insert(ts, ts)
    w.close()
    assert Window.open(backend, wid, MoneySum()).partial() == Money(sum(range(40)))


def test_exact_values_survive_the_store(backend) -> None:
    """Big ints, fractions, tuples and First's private identity come back as they went in."""
    monoid = Record(v=Variance(), f=First(), s=Sum())
    wid = window_id()
    w = Window(monoid, MaxSize(50), store=backend, window_id=wid, buffer_size=4, block_size=4)
    values = [{"v": Fraction(i, 7), "f": i, "s": 2 ** 80 + i} for i in range(200)]
    for ts, value in enumerate(values):
        w.insert(ts, value)
    w.close()
    again = Window.open(backend, wid, monoid, MaxSize(50))
    assert again.partial() == reduce(monoid.combine, map(monoid.lift, values[-50:]))
    empty = Window(Record(f=First()), store=backend)
    empty.close()
    assert Window.open(backend, empty.id, Record(f=First())).query() == {"f": None}


def test_foreign_and_corrupted_redis_layouts_are_detected(redis_url) -> None:
    backend = kvs.connect(redis_url)
    client = redis.Redis.from_url(redis_url)
    client.set("mta:{foreign}:meta", "not a hash")
    with pytest.raises(kvs.StoreError, match="refused|not an"):
        Window.open(backend, "foreign", Sum())
    client.hset("mta:{alien}:meta", mapping={"format": "something/9", "meta": b"x"})
    with pytest.raises(kvs.StoreError, match="not an mta-window"):
        Window.open(backend, "alien", Sum())
    for damage, error in [(lambda key: client.hset(key, "0:0:300", b"\xc1garbage"), "not valid msgpack"),
                          (lambda key: client.hdel(key, "0:0:400"), "missing")]:
        wid = window_id()
        w = Window(Sum(), MaxSize(1000), store=backend, window_id=wid, buffer_size=8, cache_size=4, block_size=4)
        for ts in range(2000):
            w.insert(ts, 1)
        w.close()
        damage(f"mta:{{{wid}}}:nodes")  # live leaves [1000, 2000): level 0, generation 0, blocks 250-499
        again = Window.open(backend, wid, Sum(), MaxSize(1000))
        with pytest.raises(kvs.StoreError, match=error):
            for ts in range(2000, 4000):
                again.insert(ts, 1)
    wid = window_id()
    Window(Sum(), MaxSize(1000), store=backend, window_id=wid).close()
    client.hset(f"mta:{{{wid}}}:meta", "state", b"\xc1")
    with pytest.raises(kvs.StoreError, match="not valid msgpack"):
        Window.open(backend, wid, Sum(), MaxSize(1000))


def test_a_file_that_is_not_a_store_is_refused(tmp_path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(kvs.StoreError, match="not an mta file store"):
        kvs.connect(junk)
    import sqlite3
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(kvs.StoreError, match="something else"):
        kvs.connect(other)


# --------------------------------------------------------------------------- round trips

@pytest.mark.parametrize("algorithm", ["amta", "log_mta"])
def test_steady_state_round_trips(redis_url, algorithm) -> None:
    """At most one write per full write buffer and one read per cache refill (plus the
    refill of the leaf cache's neighbour level now and then), counted exactly."""
    backend = kvs.connect(redis_url)
    n, buffer_size, cache_size = 4096, 512, 512
    w = Window(Sum(), MaxSize(n), algorithm=algorithm, store=backend, buffer_size=buffer_size,
               cache_size=cache_size)
    ts = 0
    for ts in range(3 * n):
        w.insert(ts, 1)
    before = kvs.RoundTrips(backend.round_trips.reads, backend.round_trips.writes)
    steps = 16 * buffer_size
    for ts in range(ts + 1, ts + 1 + steps):
        w.insert(ts, 1)
    writes = backend.round_trips.writes - before.writes
    reads = backend.round_trips.reads - before.reads
    assert writes <= steps // buffer_size + 1
    # The leaf cache is refilled once per cache_size evictions; the upper levels hold
    # n / 2^l nodes each and are read about as often as their caches run out.
    assert reads <= 2 * (steps // cache_size) + 2
    assert w.query() == n


# --------------------------------------------------------------------------- crash and faults

CHILD = """
import sys, time
sys.path.insert(0, {root!r})
from mta import Window, TimeRange
from mta.monoid import Collect
w = Window(Collect(), TimeRange(300), store={url!r}, window_id={wid!r}, buffer_size=32, block_size=16)
ts = 0
for round in range(5):
    for _ in range(500):
        w.insert(ts, ts * 7 % 1000)
        ts += 1
    w.flush()
    print("flushed", ts, flush=True)
while True:  # keep inserting, unflushed, until killed
    w.insert(ts, ts * 7 % 1000)
    ts += 1
    if ts % 1000 == 0:
        time.sleep(0.01)
"""


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_sigkill_loses_nothing_flushed(request, kind) -> None:
    url = request.getfixturevalue(f"{kind}_url")
    wid = window_id()
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=ROOT, url=url, wid=wid)],
                             stdout=subprocess.PIPE, text=True)
    try:
        flushed = 0
        for line in child.stdout:
            flushed = int(line.split()[1])
            if flushed == 2500:
                break
        time.sleep(0.3)  # let it insert (and auto-commit) some more
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert flushed == 2500
    w = Window.open(url, wid, Collect(), TimeRange(300), take_over=True)  # its writer is dead
    newest = w._newest
    assert newest >= 2499
    expected = [ts * 7 % 1000 for ts in range(newest + 1) if ts > newest - 300]
    assert w.query() == expected


def test_redis_restart_mid_stream_loses_nothing_flushed() -> None:
    with RedisProcess(appendonly=True) as server:
        backend = kvs.RedisBackend(server.url, retries=2, backoff=0.01, backoff_cap=0.05, socket_timeout=1)
        monoid, keep = Collect(), 400
        w = Window(monoid, MaxSize(keep), store=backend, buffer_size=16, cache_size=8, block_size=8)
        values: list[int] = []
        for ts in range(1000):
            w.insert(ts, ts)
            values.append(ts)
        w.flush()
        server.stop()
        # Insertions go on in memory; the store's failure shows at flush (or at a cache
        # miss, which leaves the window as it was).
        errors = 0
        for ts in range(1000, 1100):
            try:
                w.insert(ts, ts)
                values.append(ts)
            except kvs.StoreError:
                errors += 1
            assert w.query() == values[-keep:]
        with pytest.raises(kvs.StoreError, match="failed after retries"):
            w.flush()
        assert errors < 100
        server.start()
        w.flush()  # retried: now everything the window holds is durable
        after = w.query()
        assert after == values[-keep:]  # nothing lost, and no failed insertion left a trace
        again = Window.open(backend, w.id, monoid, MaxSize(keep), take_over=True)
        assert again.query() == after
        for ts in range(1600, 2000):
            again.insert(ts, ts)
        assert again.query() == (after + list(range(1600, 2000)))[-keep:]
        backend.close()


def test_a_failed_read_leaves_the_window_as_it_was() -> None:
    """A cache miss while the store is down fails the call and changes nothing: every read
    shows the window before the call, then and after the store is back."""
    with RedisProcess(appendonly=True) as server:
        backend = kvs.RedisBackend(server.url, retries=1, backoff=0.01, backoff_cap=0.02, socket_timeout=1)
        w = Window(Sum(), MaxSize(100), store=backend, buffer_size=16, cache_size=4, block_size=4)
        for ts in range(1000):
            w.insert(ts, ts)
        w.flush()
        for ts in range(1000, 1010):  # not flushed: kept in memory through the failures
            w.insert(ts, ts)
        before = (len(w), w.query(), list(range(910, 1010)))
        assert before[:2] == (100, sum(range(910, 1010)))
        server.stop()
        with pytest.raises(kvs.StoreError, match="unchanged"):
            w.evict(60)  # needs nodes from the store
        assert (len(w), w.query()) == before[:2]
        server.start()
        assert (len(w), w.query(), list(w)) == before
        w.insert(1010, 5)
        assert w.query() == sum(range(911, 1010)) + 5
        backend.close()


# --------------------------------------------------------------------------- Redis Cluster

def test_cluster_windows_stay_in_one_slot_and_spread_over_nodes(cluster_url) -> None:
    backend = kvs.connect(cluster_url)
    client = backend.client
    ids = [f"w{i}" + window_id()[:6] for i in range(24)]
    for i, wid in enumerate(ids):
        w = Window(Sum(), MaxSize(300), store=backend, window_id=wid, buffer_size=16, block_size=8)
        for ts in range(1000):
            w.insert(ts, i)
        w.close()
    nodes = set()
    for wid in ids:
        meta, tree = f"mta:{{{wid}}}:meta", f"mta:{{{wid}}}:nodes"
        assert client.keyslot(meta) == client.keyslot(tree)
        nodes.add(client.get_node_from_key(meta).name)
    assert len(nodes) == 3
    for i, wid in enumerate(ids):
        assert Window.open(backend, wid, Sum(), MaxSize(300)).query() == 300 * i
    assert set(ids) <= set(backend.windows())


def test_cluster_property_like_run_with_bulk_evictions(cluster_url) -> None:
    backend = kvs.connect(cluster_url)
    for algorithm in ["amta", "log_mta"]:
        w = Window(Collect(), TimeRange(700), algorithm=algorithm, store=backend, buffer_size=8, cache_size=4,
                   block_size=4)
        values = []
        for ts in range(0, 6000, 3):
            w.insert(ts, ts)
            values.append(ts)
            if ts % 999 == 0:
                w.evict(len(w) // 2)
                values = values[len(values) - len(w):]
        assert w.query() == values
        w.close()
        assert Window.open(backend, w.id, Collect(), TimeRange(700)).query() == values


def test_many_windows_share_one_connection_pool(redis_url) -> None:
    assert kvs.connect(redis_url) is kvs.connect(redis_url)
    backend = kvs.connect(redis_url)
    windows = [Window(Sum(), MaxSize(50), store=redis_url, buffer_size=8, block_size=8) for _ in range(200)]
    for ts in range(100):
        for w in windows:
            w.insert(ts, 1)
    for w in windows:
        w.close()
    assert all(w.backend is backend for w in windows)
    # One connection for this thread, one for the backend's writer thread and one for its
    # lease keeper (it renews the leases of windows open for a third of their ttl): not one per window.
    assert len(backend.client.connection_pool._connections) <= 3


@pytest.mark.parametrize("algorithm", ["amta", "log_mta"])
def test_a_bulk_eviction_reads_the_store_a_constant_number_of_times(redis_url, algorithm) -> None:
    """The nodes a bulk eviction needs come in a few batched reads, not one per level."""
    backend = kvs.connect(redis_url)
    n = 2 ** 16
    w = Window(Sum(), store=backend, algorithm=algorithm)
    w.insert_many((ts, 1) for ts in range(n))
    w.flush()
    agg = w._algorithm
    ts = n
    for k in [3, 700, 5000, 40000, 60000]:
        keep = len(w) - k
        before = backend.round_trips.reads
        assert agg.enforce(lambda total, old: total - old >= keep) == k
        assert backend.round_trips.reads - before <= 4
        assert w.query() == keep
        w.insert_many((ts + i, 1) for i in range(k))
        ts += k


def test_labels_and_notes_survive_a_reopen(backend) -> None:
    wid = window_id()
    w = Window(Sum(), MaxSize(10), store=backend, window_id=wid, labels={"spec": b"\x01\x02", "owner": "x"})
    w.notes["batches"] = ("b1", "b2")
    for ts in range(30):
        w.insert(ts, 1)
    w.flush(wait=False)
    w.wait_durable()
    w.notes["batches"] = ("b3",)  # not flushed: the reopened window has the flushed notes
    again = Window.open(backend, wid, Sum(), MaxSize(10), take_over=True)
    assert again.labels == {"spec": b"\x01\x02", "owner": "x"}
    assert again.notes == {"batches": ("b1", "b2")}
    assert again.query() == 10
