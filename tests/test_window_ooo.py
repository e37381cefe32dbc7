"""Out-of-order windows: ``Window(..., algorithm="fiba" | "btree" | "sorted")``.

Every test compares the window with :class:`OrderedOracle`, a plain sorted list that
recomputes everything: updates in timestamp order (equal timestamps in arrival
order), the policy judged on timestamp-ordered prefixes, the frontier (the newest
timestamp that has left the window) and late updates. The monoid is mostly
``Collect`` (concatenation: not commutative, so an update filed out of place shows).
"""

from __future__ import annotations

import bisect
import math
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from functools import reduce
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

import kvs
from conftest import hsettings
from mta import Collect, MaxSize, Sum, TimeRange, Window
from mta.policy import Agg, any_of

ROOT = str(Path(__file__).resolve().parent.parent)
ORDERED = ["fiba", "btree", "sorted"]


def last_six(total: Any, old: Any) -> bool:  # a user policy (not batchable): the 6 newest stay
    return total.count - old.count >= 6


def last_25(total: Any, old: Any) -> bool:  # a user policy (not batchable)
    return total.count - old.count >= 25


def short_text(total: Any, old: Any) -> bool:  # reads the value: at most 20 values stay
    return len(total.value) - len(old.value) >= 20


POLICIES: dict[str, Callable[[Any, Any], bool] | None] = {
    "none": None, "count": MaxSize(30), "time": TimeRange(25), "any": any_of(TimeRange(30), MaxSize(20)),
    "user": last_25, "value": short_text}


class OrderedOracle:
    """What an out-of-order window must hold, recomputed from a sorted list."""

    def __init__(self, monoid: Any, policy: Callable[[Any, Any], bool] | None, late: str = "refuse") -> None:
        self.monoid, self.policy, self.late = monoid, policy, late
        self.items: list[tuple[Any, int, Any]] = []  # (timestamp, arrival, partial), sorted
        self.arrivals = 0
        self.frontier: Any = None

    def _agg(self, items: list) -> Agg:
        value = reduce(self.monoid.combine, (p for _, _, p in items), self.monoid.identity)
        return Agg(len(items), items[-1][0] if items else None, value)

    def _left(self, timestamp: Any) -> None:
        if self.frontier is None or timestamp > self.frontier:
            self.frontier = timestamp

    def _check(self, timestamps: list) -> None:
        bound = self.frontier if self.late == "refuse" else None
        if bound is not None and any(t < bound for t in timestamps):
            raise ValueError("late")

    def _add(self, timestamp: Any, value: Any) -> None:
        bisect.insort(self.items, (timestamp, self.arrivals, self.monoid.lift(value)))
        self.arrivals += 1

    def _enforce(self) -> int:
        if self.policy is None:
            return 0
        total = self._agg(self.items)
        n = 0
        while n < len(self.items) and self.policy(total, self._agg(self.items[:n + 1])):
            n += 1
        self.evict(n)
        return n

    def insert(self, timestamp: Any, value: Any) -> int:
        return self.insert_many([(timestamp, value)])

    def insert_many(self, batch: list) -> int:
        self._check([t for t, _ in batch])  # against the frontier before the batch
        if getattr(self.policy, "batchable", True):
            for t, v in batch:
                self._add(t, v)
            return self._enforce() if batch else 0
        evicted = 0
        for t, v in batch:
            self._add(t, v)
            evicted += self._enforce()
        return evicted

    def evict(self, k: int) -> None:
        if k:
            self._left(self.items[k - 1][0])
            del self.items[:k]

    def evict_before(self, timestamp: Any) -> int:
        n = sum(1 for item in self.items if item[0] < timestamp)
        del self.items[:n]
        self._left(timestamp)
        return n

    def retract(self, timestamp: Any) -> int:
        kept = [item for item in self.items if item[0] != timestamp]
        n = len(self.items) - len(kept)
        self.items = kept
        return n

    def partials(self) -> list:
        return [p for _, _, p in self.items]

    def query(self, low: Any = -math.inf, high: Any = math.inf) -> Any:
        partials = [p for t, _, p in self.items if low <= t <= high]
        return self.monoid.lower(reduce(self.monoid.combine, partials, self.monoid.identity))


def same(window: Window, oracle: OrderedOracle, ranges: list[tuple[int, int]] = ()) -> None:
    assert len(window) == len(oracle.items)
    assert list(window) == oracle.partials()
    assert window.query() == oracle.query()
    assert window.frontier == oracle.frontier
    assert window.oldest_timestamp() == (oracle.items[0][0] if oracle.items else None)
    for low, high in ranges:
        assert window.query(low, high) == oracle.query(low, high)
        assert window.tally(low, high) == (sum(1 for t, _, _ in oracle.items if low <= t <= high),
                                           oracle.query(low, high))
        assert window.query(t_from=low) == oracle.query(low=low)
        assert window.query(t_to=high) == oracle.query(high=high)


def apply(window: Window, oracle: OrderedOracle, op: tuple, newest: int) -> int:
    """Apply ``op`` to both (the oracle only if the window accepted it); timestamps are
    relative to ``newest``, the largest so far, which this returns."""
    saved = (list(oracle.items), oracle.arrivals, oracle.frontier)
    try:
        return _apply(window, oracle, op, newest)
    except kvs.StoreError:
        oracle.items, oracle.arrivals, oracle.frontier = saved
        raise


def _apply(window: Window, oracle: OrderedOracle, op: tuple, newest: int) -> int:
    kind = op[0]
    if kind in ("insert", "batch"):
        batch = [(max(0, newest + delta), value) for delta, value in (op[1:] if kind == "insert" else op[1])]
        try:
            expected = oracle.insert_many(batch)
        except ValueError:
            with pytest.raises(ValueError, match="late"):
                window.insert(*batch[0]) if kind == "insert" else window.insert_many(batch)
            return newest
        got = window.insert(*batch[0]) if kind == "insert" else window.insert_many(batch)
        assert got == expected
        return max([newest, *(t for t, _ in batch)])
    if kind == "evict":
        k = min(op[1], len(oracle.items))
        window.evict(k)
        oracle.evict(k)
    elif kind == "evict_before":
        assert window.evict_before(newest - op[1]) == oracle.evict_before(newest - op[1])
    elif kind == "retract":
        assert window.retract(newest - op[1]) == oracle.retract(newest - op[1])
    elif kind == "flush":
        window.flush()
    return newest


update = st.tuples(st.integers(-12, 3), st.integers(0, 99))  # (timestamp relative to the newest, value)
operations = st.lists(st.one_of(
    st.tuples(st.just("insert"), update),
    st.tuples(st.just("batch"), st.lists(update, max_size=12)),
    st.tuples(st.just("evict"), st.integers(0, 4)),
    st.tuples(st.just("evict_before"), st.integers(0, 15)),
    st.tuples(st.just("retract"), st.integers(0, 10)),
), min_size=5, max_size=50)
#: A first batch that fills trees of min arity 2 a few levels deep (unless the policy keeps few).
prefill = st.lists(st.tuples(st.integers(-40, 2), st.integers(0, 99)), min_size=20, max_size=80)


@given(st.sampled_from([("fiba", {"min_arity": 2}), ("fiba", {"min_arity": 3}), ("btree", {"min_arity": 2}),
                        ("sorted", {})]),
       st.sampled_from(sorted(POLICIES)), st.sampled_from(["refuse", "include"]), prefill, operations,
       st.lists(st.tuples(st.integers(-15, 5), st.integers(-15, 5)), min_size=1, max_size=3))
@hsettings(max_examples=300)
def test_an_out_of_order_window_is_the_oracle(algorithm, policy_name, late, first, ops, offsets) -> None:
    name, options = algorithm
    policy = POLICIES[policy_name]
    w = Window(Collect(), policy, algorithm=name, late=late, **options)
    oracle = OrderedOracle(Collect(), policy, late)
    newest = apply(w, oracle, ("batch", first), 40)
    for op in ops:
        newest = apply(w, oracle, op, newest)
        same(w, oracle, [(newest + a, newest + b) for a, b in offsets])
        w._algorithm.tree.check()


in_order = st.lists(st.one_of(
    st.tuples(st.just("insert"), st.tuples(st.integers(0, 3), st.integers(0, 9))),
    st.tuples(st.just("batch"), st.lists(st.tuples(st.integers(0, 3), st.integers(0, 9)), max_size=10)),
    st.tuples(st.just("evict"), st.integers(0, 3)),
    st.tuples(st.just("evict_before"), st.integers(0, 10)),
), min_size=5, max_size=50)


@given(st.sampled_from(ORDERED), st.sampled_from(sorted(POLICIES)), in_order)
@hsettings(max_examples=150)
def test_an_in_order_program_gives_the_same_results_as_with_amta(name, policy_name, ops) -> None:
    policy = POLICIES[policy_name]
    windows = [Window(Collect(), policy, algorithm=name), Window(Collect(), policy)]
    newest = 0
    for op in ops:
        if op[0] == "evict_before" and policy_name in ("count", "none"):
            continue  # an in-order window with a count or no policy keeps no timestamps
        results = []
        for w in windows:
            if op[0] == "insert":
                (gap, value), = op[1:]
                results.append(w.insert(newest + gap, value))
            elif op[0] == "batch":
                ts, batch = newest, []
                for gap, value in op[1]:
                    ts += gap
                    batch.append((ts, value))
                results.append(w.insert_many(batch))
            elif op[0] == "evict":
                results.append(w.evict(min(op[1], len(w))))
            else:
                results.append(w.evict_before(newest - op[1]))
        newest += sum(gap for gap, _ in (op[1:] if op[0] == "insert" else op[1] if op[0] == "batch" else ()))
        assert results[0] == results[1]
        assert list(windows[0]) == list(windows[1])
        assert windows[0].query() == windows[1].query()


def test_a_late_update_is_refused_naming_both_timestamps_and_changes_nothing() -> None:
    w = Window(Collect(), TimeRange(10), algorithm="fiba")
    w.insert_many([(t, t) for t in (5, 3, 20, 12, 11)])  # 20 evicts 3 and 5 (<= 20 - 10): frontier 5
    assert w.frontier == 5 and w.query() == [11, 12, 20]
    before = (list(w), w.frontier)
    with pytest.raises(ValueError, match=r"timestamp 4 is late: older than 5, the window's frontier"):
        w.insert(4, 4)
    with pytest.raises(ValueError, match=r"update 2: timestamp 1 is late"):
        w.insert_many([(15, 15), (6, 6), (1, 1)])
    assert (list(w), w.frontier) == before
    assert w.insert(5, 5) == 1  # at the frontier: not late, but out of the time range
    assert w.insert(13, 13) == 0 and w.query() == [11, 12, 13, 20]


def test_late_include_counts_a_late_update_in_for_the_policy_to_judge() -> None:
    w = Window(Sum(), None, algorithm="fiba", late="include")
    w.insert_many([(t, t) for t in range(10)])
    assert w.evict_before(5) == 5 and w.frontier == 5
    assert w.insert(2, 100) == 0 and w.query() == 100 + sum(range(5, 10))
    assert w.query(0, 4) == 100
    refusing = Window(Sum(), None, algorithm="fiba")
    refusing.evict_before(5)  # a horizon moves the frontier even over an empty window
    with pytest.raises(ValueError, match="older than 5"):
        refusing.insert(2, 100)


def test_equal_timestamps_stay_apart_in_arrival_order_and_retract_removes_them_all() -> None:
    w = Window(Collect(), MaxSize(4), algorithm="fiba", min_arity=2)
    for t, v in [(3, "a"), (1, "b"), (3, "c"), (2, "d"), (3, "e")]:
        w.insert(t, v)
    assert w.query() == ["d", "a", "c", "e"]  # MaxSize counts updates: (1, "b") left
    assert w.frontier == 1
    assert w.query(3, 3) == ["a", "c", "e"] and w.query(2, 2.5) == ["d"] and w.query(4, 9) == []
    assert w.retract(3) == 3 and w.query() == ["d"] and w.frontier == 1  # a retraction is no eviction
    assert w.retract(3) == 0


@pytest.mark.parametrize("call, error, match", [
    (lambda w: w.query(1, 2), TypeError, "out-of-order window"),
    (lambda w: w.retract(1), TypeError, "out-of-order window"),
    (lambda w: w.frontier, TypeError, "out-of-order window"),
])
def test_in_order_windows_refuse_what_needs_timestamp_order(call, error, match) -> None:
    with pytest.raises(error, match=match):
        call(Window(Sum(), TimeRange(5)))


def test_bad_arguments_raise_before_anything_is_built() -> None:
    with pytest.raises(ValueError, match="late= is an option of the out-of-order algorithms"):
        Window(Sum(), TimeRange(5), late="include")
    with pytest.raises(ValueError, match="late must be one of"):
        Window(Sum(), TimeRange(5), algorithm="fiba", late="drop")
    with pytest.raises(ValueError, match="min_arity"):
        Window(Sum(), algorithm="fiba", min_arity=1)
    with pytest.raises(ValueError, match="takes no store"):
        Window(Sum(), algorithm="btree", store="memory://")
    w = Window(Sum(), TimeRange(5), algorithm="fiba")
    w.insert(1, 1)
    for bad in ("1", math.nan):
        with pytest.raises(TypeError, match="t_from"):
            w.query(bad, 2)
    with pytest.raises(TypeError, match="t_to"):
        w.query(0, "2")
    with pytest.raises(ValueError, match="finite"):
        w.retract(math.inf)
    assert w.query(3, 1) == 0  # an empty range
    assert list(w) == [1]


def test_a_user_policy_that_raises_leaves_the_window_as_it_was() -> None:
    calls = []

    def fragile(total: Agg, old: Agg) -> bool:
        calls.append(total.count)
        if total.count >= 5:
            raise RuntimeError("policy bug")
        return False

    w = Window(Collect(), fragile, algorithm="fiba", min_arity=2)
    w.insert_many([(4, 4), (2, 2), (3, 3), (1, 1)])
    for call in (lambda: w.insert(0, 0), lambda: w.insert_many([(9, 9), (0, 0)])):
        with pytest.raises(RuntimeError, match="policy bug"):
            call()
        assert w.query() == [1, 2, 3, 4] and len(w) == 4
        w._algorithm.tree.check()
    assert calls


# --------------------------------------------------------------------------- on a store

store_operations = st.lists(st.one_of(
    st.tuples(st.just("insert"), update),
    st.tuples(st.just("batch"), st.lists(update, max_size=30)),
    st.tuples(st.just("evict"), st.integers(0, 20)),
    st.tuples(st.just("evict_before"), st.integers(0, 15)),
    st.tuples(st.just("retract"), st.integers(0, 10)),
    st.tuples(st.just("flush")),
    st.tuples(st.just("reopen")),
    st.tuples(st.just("down")),
    st.tuples(st.just("up")),
), min_size=5, max_size=40)


def reads_agree(window: Window, oracle: OrderedOracle, store_up: bool) -> None:
    """The window's reads describe the oracle's window (a read that needs a store that is
    down may fail instead, never show anything else)."""
    assert len(window) == len(oracle.items)
    assert window.query() == oracle.query()
    assert window.frontier == oracle.frontier
    try:
        assert list(window) == oracle.partials()
        newest = oracle.items[-1][0] if oracle.items else 0
        assert window.query(newest - 6, newest - 2) == oracle.query(newest - 6, newest - 2)
    except kvs.StoreError:
        assert not store_up


@given(st.sampled_from(["count", "time", "user", "none"]), st.sampled_from([(1, 1, 1), (2, 1, 2), (4, 2, 1)]),
       store_operations)
@hsettings(max_examples=120)
def test_a_stored_out_of_order_window_fails_whole_and_survives_reopening(flaky, policy_name, sizes, ops) -> None:
    """FiBA in a store with caches of a node or two, the store going down and coming back:
    each call succeeds or changes nothing, and the reads and the reopened window are the oracle's."""
    policy = {"count": MaxSize(40), "time": TimeRange(30), "user": last_six, "none": None}[policy_name]
    buffer_size, cache_size, block_size = sizes
    flaky.down = False
    w = Window(Collect(), policy, algorithm="fiba", store=flaky, min_arity=2, buffer_size=buffer_size,
               cache_size=cache_size, block_size=block_size, background=False)
    oracle = OrderedOracle(Collect(), policy)
    newest = apply(w, oracle, ("batch", [(-(i * 7) % 23, i) for i in range(40)]), 30)
    for op in ops:
        if op[0] in ("down", "up"):
            flaky.down = op[0] == "down"
            continue
        if op[0] == "reopen":
            if not flaky.down:
                w.close()
                w = Window.open(flaky, w.id, Collect(), policy)
                reads_agree(w, oracle, True)
            continue
        try:
            newest = apply(w, oracle, op, newest)
        except kvs.StoreError as error:
            assert flaky.down and (op[0] == "flush" or "unchanged" in str(error))
        reads_agree(w, oracle, not flaky.down)
    flaky.down = False
    w._algorithm.tree.check()
    w.close()
    again = Window.open(flaky, w.id, Collect(), policy)
    reads_agree(again, oracle, True)
    again._algorithm.tree.check()
    again.close()


@pytest.mark.parametrize("kind", ["memory", "file", "redis"])
def test_reopened_windows_go_on_numbering_and_refusing_where_they_were(request, kind) -> None:
    url = kvs.connect("memory://") if kind == "memory" else request.getfixturevalue(f"{kind}_url")
    w = Window(Collect(), MaxSize(3), algorithm="fiba", store=url, late="include", min_arity=2, cache_size=2)
    oracle = OrderedOracle(Collect(), MaxSize(3), "include")
    for t in (5, 1, 5, 3, 9, 5):
        assert w.insert(t, t * 10 + oracle.arrivals) == oracle.insert(t, t * 10 + oracle.arrivals)
    w.close()
    again = Window.open(url, w.id, Collect(), MaxSize(3))
    assert again.frontier == oracle.frontier == 5
    assert again.insert(5, 99) == oracle.insert(5, 99)  # equal timestamps: after the earlier ones
    assert again.insert(2, 7) == oracle.insert(2, 7)    # late, counted in (the stored option), and evicted
    assert list(again) == oracle.partials()
    again.close()


BATCH = 100


def test_a_checkpoint_has_a_unit_of_work_and_its_note_or_neither(tmp_path) -> None:
    """As the server and the Spark operator use a window: a unit in several slices with
    evictions between them, then its note, then a flush; nothing commits before it."""
    from test_window_consistency import Recording

    backend = Recording(tmp_path / "w.db")
    w = Window(Collect(), MaxSize(250), algorithm="fiba", store=backend, min_arity=2, buffer_size=8,
               block_size=4, background=False, late="include")
    created = len(backend.states)
    for number in range(12):
        timestamps = [(number * 37 + i * 61) % 1000 for i in range(BATCH)]  # out of order
        for cut in range(0, BATCH, 30):
            part = timestamps[cut:cut + 30]
            w.insert_checked(w.check(part, part), enforce=cut + 30 >= BATCH)
            w.evict(1)
        w.notes["batches"] = (*w.notes.get("batches", ()), number)
        w.flush(wait=False)
    assert len(backend.states) == created + 12
    for checkpoint in backend.states[created:]:
        annotations = checkpoint["annotations"]
        assert annotations["order"]["arrivals"] == BATCH * len(annotations["notes"]["batches"])


CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from mta import Collect, TimeRange, Window
    w = Window(Collect(), TimeRange(500), algorithm="fiba", store={url!r}, window_id={wid!r},
               min_arity=3, cache_size=8, buffer_size=16)
    for number in range(10_000):
        # batch n: 50 timestamps from 10n to 10n + 49, backwards
        w.insert_many([(10 * number + 49 - i, number * 100 + i) for i in range(50)])
        w.flush()
        print(number, flush=True)
""")


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_sigkill_loses_no_acknowledged_batch(request, kind) -> None:
    url = request.getfixturevalue(f"{kind}_url")
    wid = uuid.uuid4().hex
    child = subprocess.Popen([sys.executable, "-c", CHILD.format(root=ROOT, url=url, wid=wid)],
                             stdout=subprocess.PIPE, text=True)
    acknowledged = -1
    try:
        for line in child.stdout:
            acknowledged = int(line)
            if acknowledged >= 60:
                break
        time.sleep(0.2)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert acknowledged >= 60
    w = Window.open(url, wid, Collect(), TimeRange(500), take_over=True)
    w._algorithm.tree.check()
    done = next(n for n in range(acknowledged, 10_000) if w.query() and max(v // 100 for v in w.query()) == n)
    oracle = OrderedOracle(Collect(), TimeRange(500))
    for number in range(done + 1):  # whole batches, at least every acknowledged one
        oracle.insert_many([(10 * number + 49 - i, number * 100 + i) for i in range(50)])
    assert list(w) == oracle.partials()
    w.close()


@pytest.mark.parametrize("algorithm", ORDERED)
@pytest.mark.parametrize("monoid", [Sum(), Collect()], ids=repr)
def test_out_of_order_windows_pickle_and_go_on_as_the_original(algorithm, monoid) -> None:
    """An in-memory out-of-order window pickles (FiBA.__new__ required the monoid, which
    unpickling does not pass), with its tree, arrival numbers and frontier."""
    import pickle

    window = Window(monoid, TimeRange(10), algorithm=algorithm, late="include")
    for t in [3, 1, 2, 9, 12, 5, 5]:
        window.insert(t, t)
    again = pickle.loads(pickle.dumps(window))
    assert (again.query(), list(again), again.frontier) == (window.query(), list(window), window.frontier)
    for t in [4, 15, 14, 14, 30, 2]:
        outcomes = []
        for w in (window, again):
            try:
                outcomes.append(w.insert(t, t))
            except ValueError as error:
                outcomes.append(str(error))
        assert outcomes[0] == outcomes[1]
        assert (again.query(), list(again), again.frontier) == (window.query(), list(window), window.frontier)
    assert window.retract(14) == again.retract(14) and again.query() == window.query()


@pytest.mark.parametrize("algorithm", ORDERED + ["amta", "two_stacks", "daba"])
@pytest.mark.parametrize("bound, error, match", [
    (math.nan, ValueError, r"evict_before's bound must be finite, got nan"),
    (math.inf, ValueError, r"evict_before's bound must be finite, got inf"),
    (-math.inf, ValueError, r"evict_before's bound must be finite, got -inf"),
    (True, TypeError, r"evict_before's bound must be an int or a float, got bool True"),
    ("5", TypeError, r"evict_before's bound must be an int or a float, got str '5'"),
    (None, TypeError, r"evict_before's bound must be an int or a float, got NoneType None")])
def test_evict_before_checks_its_bound_as_insert_checks_a_timestamp(algorithm, bound, error, match) -> None:
    """A bad bound raised a bare TypeError (a string) or became the frontier (NaN, inf, True):
    out of order and in order, on the typed and the object (``Collect``) cores."""
    for monoid in (Sum(), Collect()):
        w = Window(monoid, TimeRange(100), algorithm=algorithm)
        w.insert_many([(t, t) for t in (1, 2, 3)])
        w.evict_before(2)
        before = (list(w), w.query(), w.frontier if algorithm in ORDERED else None)
        with pytest.raises(error, match=match):
            w.evict_before(bound)
        assert (list(w), w.query(), w.frontier if algorithm in ORDERED else None) == before
        assert w.evict_before(3) == 1 and w.query() == monoid.lower(monoid.lift(3))


@pytest.mark.parametrize("algorithm", ORDERED + ["amta", "two_stacks"])
def test_evict_before_takes_an_int_beyond_the_float_range_and_numpy_scalars(algorithm) -> None:
    np = pytest.importorskip("numpy")
    w = Window(Sum(), TimeRange(1e300), algorithm=algorithm)
    w.insert_many([(t, t) for t in (1, 2, 3)])
    assert w.evict_before(np.int64(2)) == 1 and w.evict_before(np.float64(2.5)) == 1 and w.query() == 3
    assert w.evict_before(-(10**400)) == 0 and w.evict_before(10**400) == 1 and len(w) == 0
    if algorithm in ORDERED:
        assert w.frontier == 10**400
        with pytest.raises(ValueError, match="is late"):
            w.insert(10**399, 1)
    w.insert(10**401, 5)
    assert w.query() == 5
