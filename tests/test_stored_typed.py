"""Stored windows on the typed core (:mod:`mta.algorithms.stored_typed`, issue 20): a new
stored window with the default options runs TypedTimed / TypedAMTA when compiled, and writes
what the stored AmortizedMTA would write. Checked here:

- its checkpoint and stored levels are the AmortizedMTA's (the live part, floats bit for bit)
  after random insertions, batches, bulk evictions and flushes, through several buffer moves;
- over the random sequences of ``test_stored_compiled`` (memory, file, Redis; reopening
  mid-way), its results are the in-memory windows', and a second process on the other path
  goes on with it;
- past :data:`LOCAL_LIMIT` updates it hands over to the stored AmortizedMTA in the same state;
- reopened with fewer, it goes on on the typed core, with the AmortizedMTA's checkpoint,
  levels and results; a window the typed core cannot hold reopens as the AmortizedMTA;
- on a durable store it commits as often as the AmortizedMTA (one write per 512 updates).

Runs on both paths: on the pure one the same windows run the object AMTA.
"""

from __future__ import annotations

import os
import random
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kvs
import mta
from mta import Window
from mta.algorithms import stored_typed
from mta.algorithms.amta import AmortizedMTA
from mta.monoid import Max, Mean, Sum
from mta.policy import MaxSize, TimeRange
from tests.conftest import Flaky
from tests.test_typed_amta import MONOIDS as CORE_MONOIDS
from tests.test_typed_amta import identical, partials
from tests.test_stored_compiled import MONOIDS, POLICIES, Run, child, exact, in_memory_runs, ops, stored_run

#: The AmortizedMTA's own defaults, given explicitly: the window then runs the object AMTA.
OBJECT = {"buffer_size": 512}


def typed_kind(window: Window) -> bool:
    return isinstance(window._algorithm, (stored_typed.StoredTimed, stored_typed.StoredAMTA))


def same_steps(rng: random.Random, typed: Window, objects: Window, policy: Any, clock: int, sizes: list[int]) -> int:
    """One random batch (of a size in ``sizes``) into both windows, one at a time or as a
    batch, sometimes an ``evict_before``; both answer alike. Returns the new clock."""
    batch = []
    for _ in range(rng.choice(sizes)):
        clock += rng.choice([0, 1, 1, 2])
        batch.append((clock, rng.choice([0.1, 0.2, 1e16, -1e16, 1 / 3, 7.0, 2.5])))
    if rng.random() < 0.5:
        assert [typed.insert(*u) for u in batch] == [objects.insert(*u) for u in batch]
    else:
        assert typed.insert_many(batch) == objects.insert_many(batch)
    if isinstance(policy, TimeRange) and rng.random() < 0.2:
        assert typed.evict_before(clock - 200) == objects.evict_before(clock - 200)
    assert exact(typed.query()) == exact(objects.query()) and len(typed) == len(objects)
    return clock


def live(state: dict[str, Any], levels: list[list[Any]]) -> dict[str, Any]:
    """A checkpoint and the stored levels, but what AmortizedMTA never reads (leaves before
    the head, nodes not wholly in the window), floats as hex."""
    head = state["head"]
    bufs = [[v for j, v in enumerate(buf, state["bstart"][n]) if j << n >= head] for n, buf in enumerate(state["bufs"])]
    kept = [[v for j, v in enumerate(nodes) if j << n >= head] for n, nodes in enumerate(levels)]
    return {k: exact(v) for k, v in {**state, "bufs": bufs, "stored": kept}.items()}


def stored_levels(window: Window, number: int) -> list[list[Any]]:
    """Each level's stored nodes from index 0 (None below the level's head)."""
    return stored(window._algorithm.store, number)


def stored(store: kvs.LevelStore, number: int) -> list[list[Any]]:
    """The first ``number`` levels' stored nodes from index 0 (None below the level's head)."""
    out = []
    for n in range(number):
        level = store.level(n)
        out.append([None] * level.head + level.read(level.head, level.tail))
    return out


@pytest.mark.skipif(not mta.COMPILED, reason="the typed core is compiled only")
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("monoid, policy", [(Sum, TimeRange(700)), (Mean, MaxSize(1500)), (Max, TimeRange(3000)),
                                            (Sum, None)])
def test_checkpoint_and_levels_are_the_object_algorithms(seed, monoid, policy, monkeypatch) -> None:
    monkeypatch.setattr(stored_typed, "LOCAL_LIMIT", 100_000)  # no policy: the window grows
    rng = random.Random(seed)
    url = f"memory://stored-typed-{os.getpid()}"
    typed = Window(monoid(), policy, store=url)
    objects = Window(monoid(), policy, store=url, **OBJECT)
    assert typed_kind(typed) and not typed_kind(objects)
    clock = 0
    for _ in range(12):
        clock = same_steps(rng, typed, objects, policy, clock, [1, 30, 400, 900])
        typed.flush()
        objects.flush()
        state = typed._algorithm.checkpoint()
        assert typed_kind(typed)
        levels = len(state["bufs"])
        assert live(state, stored_levels(typed, levels)) == live(objects._algorithm.checkpoint(),
                                                                 stored_levels(objects, levels))
    typed.close()
    objects.close()


def urls(kind: str, file_url: str, redis_url: str) -> str:
    return {"memory": f"memory://stored-typed-{os.getpid()}", "file": file_url, "redis": redis_url}[kind]


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(monoid=st.sampled_from(sorted(MONOIDS)), policy=st.sampled_from(sorted(POLICIES)),
       width=st.sampled_from([1, 3, 10, 40]), sequence=ops, kind=st.sampled_from(["memory", "file", "redis"]))
def test_typed_stored_window_matches_in_memory_windows(monoid, policy, width, sequence, kind, file_url,
                                                       redis_url) -> None:
    typed, objects = in_memory_runs(monoid, policy, width, sequence)
    assert stored_run(urls(kind, file_url, redis_url), monoid, policy, width, sequence, {}) == objects == typed


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(monoid=st.sampled_from(sorted(MONOIDS)), policy=st.sampled_from(sorted(POLICIES)),
       width=st.sampled_from([3, 10, 40, 200]), sequence=ops, kind=st.sampled_from(["memory", "file", "redis"]))
def test_a_window_past_the_local_limit_goes_on_as_the_stored_amta(monoid, policy, width, sequence, kind, file_url,
                                                                  redis_url) -> None:
    typed, objects = in_memory_runs(monoid, policy, width, sequence)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(stored_typed, "LOCAL_LIMIT", 12)
        assert stored_run(urls(kind, file_url, redis_url), monoid, policy, width, sequence, {}) == objects == typed


@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
def test_the_hand_over_keeps_the_window(kind, file_url, redis_url, monkeypatch) -> None:
    """A window that outgrows the typed core continues as the stored AmortizedMTA, and reopens
    as such, bit for bit as a window that ran the stored AmortizedMTA all along."""
    monkeypatch.setattr(stored_typed, "LOCAL_LIMIT", 1000)
    url = urls(kind, file_url, redis_url)
    window_id = uuid.uuid4().hex
    w = Window(Sum(), TimeRange(1500), store=url, window_id=window_id)
    reference = Window(Sum(), TimeRange(1500), store=url, **OBJECT)
    for t in range(3000):
        x = (t % 11) / 3 + (1e16 if t % 97 == 0 else 0.0)
        assert w.insert(t, x) == reference.insert(t, x)
        assert exact(w.query()) == exact(reference.query())
        assert typed_kind(w) is (mta.COMPILED and t < 1000)
    w.close()
    again = Window.open(url, window_id, Sum(), TimeRange(1500))
    assert isinstance(again._algorithm, AmortizedMTA)
    assert len(again) == len(reference) and again.oldest_timestamp() == 1500
    assert exact(again.query()) == exact(reference.query())
    again.close()
    reference.close()


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(monoid=st.sampled_from(sorted(MONOIDS)), policy=st.sampled_from(sorted(POLICIES)),
       width=st.sampled_from([3, 10]), first=ops, second=ops, third=ops, kind=st.sampled_from(["file", "redis"]))
def test_a_second_process_on_the_other_path_goes_on_with_a_typed_stored_window(monoid, policy, width, first, second,
                                                                               third, kind, file_url,
                                                                               redis_url) -> None:
    url = urls(kind, file_url, redis_url)
    window_id = uuid.uuid4().hex
    make = MONOIDS[monoid]
    run = Run(Window(make(), POLICIES[policy](width), store=url, window_id=window_id))
    assert typed_kind(run.window) is mta.COMPILED
    for op in first:
        run.apply(op)
    run.window.close()
    other = child(url, window_id, monoid, policy, width, run.clock, second)
    assert other["compiled"] is not mta.COMPILED
    again = Run(Window.open(url, window_id, make(), POLICIES[policy](width)), other["clock"])
    for op in third:
        again.apply(op)
    again.window.close()
    typed, objects = in_memory_runs(monoid, policy, width, [*first, *second, *third])
    assert run.results + other["results"] + again.results == objects == typed


@pytest.mark.parametrize("policy", [TimeRange(1000), MaxSize(1000)])
def test_commits_as_often_as_the_object_algorithm(policy, redis_url) -> None:
    """One commit per 512 updates on Redis, as the stored AmortizedMTA, and nothing read
    (commits sent on the caller's thread, ``background=False``: in the background, those
    that queue up behind one in flight are merged, as many as the writer thread lets)."""
    backend = kvs.connect(redis_url)
    counted = []
    for options in ({}, OBJECT):
        w = Window(Sum(), policy, store=backend, background=False, **options)
        w.flush()
        before = kvs.RoundTrips(backend.round_trips.reads, backend.round_trips.writes)
        for t in range(8192):
            w.insert(t, float(t % 5))
        w.wait_durable()
        counted.append((backend.round_trips.reads - before.reads, backend.round_trips.writes - before.writes))
        assert w.query() == 2000.0
        w.close()
    assert counted[0][0] == (0 if mta.COMPILED else counted[1][0])
    assert counted[0][1] == counted[1][1] == 8192 // (512 + 32)  # a move leaves the incomplete chunk


@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
@pytest.mark.parametrize("policy", [TimeRange(3), MaxSize(1), MaxSize(0), TimeRange(600), None])
def test_small_and_large_windows_over_many_buffer_moves(kind, policy, file_url, redis_url) -> None:
    """Windows whose head runs ahead of the leaf buffer's start (everything moved to the store
    is evicted) and windows that keep stored leaves, committed and reopened now and then: as
    a window that runs the stored AmortizedMTA (in memory: as the in-memory window too)."""
    url = urls(kind, file_url, redis_url)
    ids = [uuid.uuid4().hex, uuid.uuid4().hex]
    w = Window(Mean(), policy, store=url, window_id=ids[0])
    reference = Window(Mean(), policy, store=url, window_id=ids[1], **OBJECT)
    in_memory = Window(Mean(), policy)
    for t in range(2500):
        x = float(t % 13) / 7
        evicted = in_memory.insert(t // 2, x)
        assert w.insert(t // 2, x) == reference.insert(t // 2, x) == evicted
        assert exact(w.query()) == exact(reference.query()) and len(w) == len(reference) == len(in_memory)
        assert kind != "memory" or exact(w.query()) == exact(in_memory.query())
        if t % 700 == 699:
            w.close()
            reference.close()
            w, reference = (Window.open(url, i, Mean(), policy) for i in ids)
            assert typed_kind(w) is mta.COMPILED and not typed_kind(reference)  # reopened on the typed core
    w.close()
    reference.close()


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_a_few_evictions_into_the_next_chunk_go_in_bulk_on_a_durable_store(kind, file_url, redis_url) -> None:
    """On a durable store AmortizedMTA evicts a few in bulk when single evictions would read
    the store (the head enters a new chunk, the stack runs short): the typed core too, or the
    floats differ (here from t = 1262, two evicted from leaf 62)."""
    url = urls(kind, file_url, redis_url)
    w = Window(Mean(), TimeRange(600), store=url)
    reference = Window(Mean(), TimeRange(600), store=url, **OBJECT)
    for t in range(1600):
        x = float(t % 13) / 7
        assert w.insert(t // 2, x) == reference.insert(t // 2, x)
        assert exact(w.query()) == exact(reference.query())
    assert typed_kind(w) is mta.COMPILED
    w.close()
    reference.close()


@pytest.mark.parametrize("kind", ["file", "redis"])
@pytest.mark.parametrize("policy", [TimeRange(10**9), MaxSize(10**6)], ids=repr)
@pytest.mark.parametrize("columns", [False, True], ids=["one at a time", "numpy batches"])
def test_a_commit_during_an_insertion_records_its_timestamp(kind, policy, columns, file_url, redis_url) -> None:
    """A background commit sent during an insertion (the leaf buffer moved at 544 updates)
    records the window's newest timestamp, that insertion's: a writer that dies without
    flushing reopens holding updates up to t = 543 and refuses an older timestamp (the
    typed path wrote the newest after the core's push, so the commit recorded 542 and the
    reopened window took 542.5)."""
    import numpy as np
    url = urls(kind, file_url, redis_url)
    window_id = uuid.uuid4().hex
    w = Window(Sum(), policy, store=url, window_id=window_id)
    if columns:
        for start in range(0, 700, 100):
            w.insert_many(np.arange(start, start + 100, dtype=np.int64), np.ones(100))
    else:
        for t in range(700):
            w.insert(t, 1.0)
    w._algorithm.store.drain()  # the commits sent, none added: as if the writer died here
    again = Window.open(url, window_id, Sum(), policy, take_over=True)
    held = len(again)
    assert 0 < held < 700 and again.query() == held and again._newest == held - 1
    with pytest.raises(ValueError, match=f"older than the newest update {held - 1}"):
        again.insert(held - 1.5, 1.0)
    again.close()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
@pytest.mark.parametrize("monoid, policy", [(Sum, TimeRange(700)), (Mean, MaxSize(1500)), (Max, TimeRange(3000)),
                                            (Sum, None)])
def test_a_reopened_window_goes_on_on_the_typed_core_as_the_object_algorithm(seed, kind, monoid, policy, file_url,
                                                                             redis_url) -> None:
    """Reopened (fewer than LOCAL_LIMIT updates), a stored window runs the typed core again,
    and its results, checkpoint and stored levels stay the AmortizedMTA's."""
    rng = random.Random(seed)
    url = urls(kind, file_url, redis_url)
    ids = [uuid.uuid4().hex, uuid.uuid4().hex]
    typed = Window(monoid(), policy, store=url, window_id=ids[0])
    objects = Window(monoid(), policy, store=url, window_id=ids[1], **OBJECT)
    clock = 0
    for _ in range(9):
        clock = same_steps(rng, typed, objects, policy, clock, [1, 30, 350])
        if rng.random() < 0.6:
            typed.close()
            objects.close()
            typed, objects = (Window.open(url, i, monoid(), policy) for i in ids)
            assert typed_kind(typed) is mta.COMPILED and not typed_kind(objects)
            assert exact(typed.query()) == exact(objects.query()) and len(typed) == len(objects)
        typed.flush()
        objects.flush()
        state = typed._algorithm.checkpoint()
        levels = len(state["bufs"])
        assert live(state, stored_levels(typed, levels)) == live(objects._algorithm.checkpoint(),
                                                                 stored_levels(objects, levels))
    typed.close()
    objects.close()


@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
def test_a_window_the_typed_core_cannot_hold_reopens_as_the_stored_amta(kind, file_url, redis_url) -> None:
    """Ints and floats in one Sum window (the typed core demoted it): reopened, it goes on as
    the AmortizedMTA, as a window that ran the AmortizedMTA all along."""
    url = urls(kind, file_url, redis_url)
    ids = [uuid.uuid4().hex, uuid.uuid4().hex]
    windows = [Window(Sum(), TimeRange(50), store=url, window_id=ids[0]),
               Window(Sum(), TimeRange(50), store=url, window_id=ids[1], **OBJECT)]
    updates = [(t, t % 7 if t % 3 else 0.1 * t) for t in range(40)]
    for w in windows:
        w.insert_many(updates[:10])
        for u in updates[10:]:
            w.insert(*u)
        w.close()
    again = [Window.open(url, i, Sum(), TimeRange(50)) for i in ids]
    assert not typed_kind(again[0]) and isinstance(again[0]._algorithm, AmortizedMTA)
    for t in range(40, 200):
        assert again[0].insert(t, 1 / 3) == again[1].insert(t, 1 / 3)
        assert exact(again[0].query()) == exact(again[1].query())
    for w in again:
        w.close()


class ReadsFail(Flaky):
    """A file store whose reads of levels fail while ``down`` (its checkpoint still loads)."""

    def load(self, window_id: str, lease: Any = None) -> bytes | None:
        return kvs.FileBackend.load(self, window_id, lease)


def test_a_failed_read_while_reopening_opens_nothing_and_keeps_the_window(tmp_path) -> None:
    """Reopening reads the store (on the typed core its live leaves; on either the policy's
    search): a StoreError there fails ``Window.open`` (the lease released: the next open
    needs no take-over) and changes nothing in the store."""
    backend = ReadsFail(tmp_path / "w.db")
    ids = [uuid.uuid4().hex, uuid.uuid4().hex]
    windows = [Window(Mean(), TimeRange(900), store=backend, window_id=ids[0]),
               Window(Mean(), TimeRange(900), store=backend, window_id=ids[1], **OBJECT)]
    for w in windows:
        for t in range(2000):
            w.insert(t, (t % 17) / 3)
        w.close()
    backend.down = True
    with pytest.raises(kvs.StoreError):
        Window.open(backend, ids[0], Mean(), TimeRange(900))
    backend.down = False
    again = [Window.open(backend, i, Mean(), TimeRange(900)) for i in ids]
    assert typed_kind(again[0]) is mta.COMPILED
    for t in range(2000, 3000):
        assert again[0].insert(t, 1 / 7) == again[1].insert(t, 1 / 7)
        assert exact(again[0].query()) == exact(again[1].query())
    for w in again:
        w.close()


@pytest.mark.parametrize("policy", [TimeRange(50_000), MaxSize(50_000), None])
def test_a_large_stored_window_keeps_little_of_it_local(policy) -> None:
    """A window that grows to 50,000 updates keeps less than LOCAL_LIMIT leaves in the typed
    core, then (handed over) only the AmortizedMTA's write buffers, caches and stack (the
    pure path: the AmortizedMTA all along)."""
    w = Window(Sum(), policy, store=f"memory://stored-typed-{os.getpid()}")
    reference = Window(Sum(), policy)
    for start in range(0, 60_000, 1000):
        batch = [(t, float(t % 7)) for t in range(start, start + 1000)]
        if start % 5000:
            assert w.insert_many(batch) == reference.insert_many(batch)
        else:
            assert [w.insert(*u) for u in batch] == [reference.insert(*u) for u in batch]
        algorithm = w._algorithm
        if typed_kind(w):
            assert len(w) < stored_typed.LOCAL_LIMIT
        else:
            assert isinstance(algorithm, AmortizedMTA) and (len(w) >= stored_typed.LOCAL_LIMIT - 1000 or not mta.COMPILED)
            assert len(algorithm._bufs[0]) <= 512 + 32 and all(len(buf) <= 512 for buf in algorithm._bufs[1:])
            assert all(len(cache) <= 512 for cache in algorithm._caches) and len(algorithm._stack or ()) < 64
        assert w.query() == reference.query() and len(w) == len(reference)
    assert len(w) == (60_000 if policy is None else 50_000)
    w.close()


def _core_ops(name: str, kind: str) -> st.SearchStrategy:
    """Insertions (a drawn run repeated: windows of hundreds to thousands, through leaf-buffer
    moves), evictions of a few or of many, reopenings."""
    return st.lists(st.one_of(st.tuples(st.just("many"), st.lists(partials(name, kind), min_size=1, max_size=40),
                                        st.sampled_from([1, 20, 150])),
                              st.tuples(st.just("evict"), st.sampled_from([0, 1, 2, 3, 31, 33, 100, 700])),
                              st.tuples(st.just("reopen"))), min_size=1, max_size=14)


@settings(max_examples=50, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(["sum", "count", "min", "max", "mean", "mincount", "maxcount", "first",
                                             "last", "variance", "variance1", "stddev", "argmin", "argmax"]),
       kind=st.sampled_from(["float", "int"]))
def test_every_typed_monoid_reopens_on_the_typed_core_as_the_object_algorithm(data, name, kind) -> None:
    """Each built-in number monoid, each kind: a stored typed core reopened from its
    checkpoint (R0 and R1 decoded, Variance's merged partials of either kind included) goes
    on as the AmortizedMTA reopened from its own, bit for bit (on the pure path too: the
    classes are used directly)."""
    monoid = CORE_MONOIDS[name]
    typed, objects = stored_typed.StoredAMTA(monoid, kvs.MemoryStore()), AmortizedMTA(monoid, kvs.MemoryStore())
    for op in data.draw(_core_ops(name, kind)):
        if op[0] == "many":
            for partial in op[1] * op[2]:
                typed.insert(partial)
                objects.insert(partial)
        elif op[0] == "evict":
            k = min(op[1], len(objects))
            typed.evict(k)
            objects.evict(k)
        else:
            typed.flush()
            objects.flush()
            typed = stored_typed.StoredAMTA.over(monoid, typed.store, None, typed.checkpoint())
            objects = AmortizedMTA(monoid, objects.store, state=objects.checkpoint())
            assert isinstance(typed, stored_typed.StoredAMTA) is (len(objects) < stored_typed.LOCAL_LIMIT)
        assert identical(typed.query(), objects.query()) and len(typed) == len(objects)
    typed.flush()
    objects.flush()
    levels = len(objects.checkpoint()["bufs"])
    assert live(typed.checkpoint(), stored(typed.store, levels)) == live(objects.checkpoint(), stored(objects.store, levels))


@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
def test_a_window_handed_over_reopens_on_the_typed_core_once_small_again(kind, file_url, redis_url) -> None:
    """Past LOCAL_LIMIT a window runs the AmortizedMTA; shrunk below it and reopened, the
    typed core again, with the checkpoint, levels and results of a window that ran the
    AmortizedMTA all along."""
    url = urls(kind, file_url, redis_url)
    ids = [uuid.uuid4().hex, uuid.uuid4().hex]
    policy = TimeRange(6000)
    w = Window(Mean(), policy, store=url, window_id=ids[0])
    reference = Window(Mean(), policy, store=url, window_id=ids[1], **OBJECT)
    updates = [(t, (t % 19) / 7 + (1e16 if t % 501 == 0 else 0.0)) for t in range(5000)]
    updates += [(t, (t % 5) / 3) for t in range(10_000, 11_500)]  # a jump in time: below LOCAL_LIMIT again
    for start in range(0, len(updates), 700):
        batch = updates[start:start + 700]
        assert w.insert_many(batch) == reference.insert_many(batch)
        assert exact(w.query()) == exact(reference.query()) and len(w) == len(reference)
    assert not typed_kind(w) and len(w) < stored_typed.LOCAL_LIMIT
    for window in (w, reference):
        window.close()
    w, reference = (Window.open(url, i, Mean(), policy) for i in ids)
    assert typed_kind(w) is mta.COMPILED
    for t in range(11_500, 14_000):
        assert w.insert(t, (t % 7) / 3) == reference.insert(t, (t % 7) / 3)
        assert exact(w.query()) == exact(reference.query())
    w.flush()
    reference.flush()
    state = w._algorithm.checkpoint()
    levels = len(state["bufs"])
    assert live(state, stored_levels(w, levels)) == live(reference._algorithm.checkpoint(), stored_levels(reference, levels))
    w.close()
    reference.close()
