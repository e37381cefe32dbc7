"""The Stream engine against the brute-force oracle (tests/stream_oracle.py), with hypothesis.

Every window type x in-order and out-of-order data x a commutative (Sum over ints) and a
non-commutative (Collect) monoid; lateness boundaries, sessions merged by late tuples, count
windows under out-of-order data with and without invert, queries added and removed
mid-stream, snapshot/restore mid-stream, KeyedStream against per-key oracles, and each
``final=`` store. Every advance's whole result list is compared with the oracle's, in the
spec's order; ``dropped``, ``watermark`` and the ``on_late`` calls are compared too.

Timestamps are ints (exact) except in the float test (dyadic timestamps, values compared
with a tolerance).
"""

from __future__ import annotations

import functools
import operator
import os
import tempfile
import math
import uuid
from collections import defaultdict
from contextlib import nullcontext
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import hsettings
from kvs import connect
from mta import (Collect, KeyedStream, Last, Max, MaxSize, Median, Monoid, Quantile, Record, Stream, Sum,
                 TimeRange)
from stream_oracle import (Count, CountEvery, Expected, KeyedOracle, PolicyEvery, Punctuation, Session, Sliding,
                           StreamOracle, Tumbling, result_tuple)

FINALS = ("auto", "lazy", "eager", "amta", "fiba", "shared")
KINDS = ("tumbling", "sliding", "session", "count", "count_every", "punctuation", "policy")


class SumNoInverse(Monoid):
    """Sum that declares no inverse and no selection: count windows must recompute."""

    identity = 0
    commutative = True
    combine = staticmethod(operator.add)


def is_punctuation(value: Any) -> bool:
    return value % 3 == 0


def sum_at_most_10(total: Any, old: Any) -> bool:
    """The MTA paper's section 3.2 policy over Record(max, sum, last): the newest updates whose
    sum stays <= 10."""
    return total.value.sum - old.value.sum + old.value.last > 10


def keep_two(total: Any, old: Any) -> bool:
    """A user policy (a plain callable): keep the two newest tuples."""
    return total[0] - old[0] >= 2


MONOIDS = {"sum": Sum, "collect": Collect, "max": Max, "sum_no_inverse": SumNoInverse, "median": Median,
           "quantile": lambda: Quantile(0.9)}


# --------------------------------------------------------------------------- strategies

def window_spec(kind: str) -> st.SearchStrategy:
    """The oracle's spec of a random window of ``kind`` (small sizes: windows overlap, close often)."""
    sizes = st.integers(1, 8)
    if kind == "tumbling":
        return st.builds(Tumbling, sizes, st.integers(-3, 3))
    if kind == "sliding":
        return st.builds(Sliding, sizes, sizes, st.integers(-3, 3))
    if kind == "session":
        return st.builds(Session, st.integers(1, 6))
    if kind == "count":
        return st.builds(Count, st.integers(1, 5), st.none() | st.integers(1, 5))
    if kind == "count_every":
        return st.builds(CountEvery, st.integers(1, 4), st.integers(1, 6))
    if kind == "punctuation":
        return st.just(Punctuation(is_punctuation))
    if kind == "policy":
        return st.builds(PolicyEvery, st.sampled_from([MaxSize(3), TimeRange(4), keep_two]), st.integers(1, 6))
    raise ValueError(kind)


any_window = st.sampled_from(KINDS).flatmap(window_spec)


@st.composite
def scenarios(draw: Any, kinds: tuple[str, ...] = KINDS, in_order: bool = False, max_ops: int = 30,
              lateness: st.SearchStrategy = st.integers(0, 8), extra_queries: int = 1, mid_queries: bool = False,
              snapshots: bool = False, keys: tuple | None = None,
              values: st.SearchStrategy = st.integers(0, 99), ahead: int = 6) -> tuple[list, list, int]:
    """(queries, ops, allowed_lateness): one query of each of ``kinds`` plus up to ``extra_queries``
    of any type, then inserts and advances.

    In order: every tuple's ts is >= the watermark and >= the previous ts. Out of order: tuples
    land up to lateness + 2 below the watermark (some dropped) and up to ``ahead`` above it; some
    advances go back (no-ops). Some inserts come in batches (``insert_many``). ``mid_queries``:
    queries are added, removed, added again under a removed name, and refused (a name in use, an
    absent one) between them; ``snapshots``: the engine is snapshot (or saved)
    and restored (or loaded) into a new one; ``keys``: KeyedStream ops.
    """
    allowed = draw(lateness)
    queries = [(f"q{i}", draw(window_spec(k))) for i, k in enumerate(kinds)]
    queries += [(f"x{i}", draw(any_window)) for i in range(draw(st.integers(0, extra_queries)))]
    names = [n for n, _ in queries]
    removed: list[str] = []
    ops: list[tuple] = []
    watermark = cur = 0  # cur: the in-order clock (newest ts or watermark)
    for i in range(draw(st.integers(1, max_ops))):
        choice = draw(st.integers(0, 9))
        if choice < 6:
            batch = []
            for _ in range(draw(st.sampled_from([1, 1, 1, 1, 2, 3, 4]))):
                if in_order:
                    ts = cur = cur + draw(st.integers(0, 3))
                else:
                    ts = watermark + draw(st.integers(-(allowed + 2), ahead))
                value = draw(values)
                batch.append((draw(st.sampled_from(keys)), ts, value) if keys else (ts, value))
            ops.append(("insert", *batch[0]) if len(batch) == 1 else ("insert_many", batch))
        elif choice < 8 or not (mid_queries or snapshots):
            if in_order:
                w = cur = cur + draw(st.integers(0, 4))
            else:
                w = watermark + draw(st.integers(-2, 8))
            watermark = max(watermark, w)
            ops.append(("advance", w))
        elif mid_queries and (choice == 8 or not snapshots):
            what = draw(st.sampled_from(["remove", "add", "add", "readd", "bad"]))
            if what == "remove" and names:
                name = draw(st.sampled_from(names))
                names.remove(name)
                removed.append(name)
                ops.append(("remove", name))
            elif what == "bad":  # refused: a name in use (ValueError), an absent one (KeyError)
                ops.append(("add", names[0], draw(any_window)) if names else ("remove", "absent"))
            else:
                name = draw(st.sampled_from(removed)) if what == "readd" and removed else f"m{i}"
                if name in removed:
                    removed.remove(name)
                names.append(name)
                ops.append(("add", name, draw(any_window)))
        else:
            ops.append(("snapshot", draw(st.sampled_from(["bytes", "keys"] if keys else ["bytes", "kvs"]))))
    ops.append(("advance", max(watermark, cur) + 40))  # closes every time window still open
    return queries, ops, allowed


# --------------------------------------------------------------------------- the harness

@functools.cache
def _backend() -> Any:
    """One sqlite kvs backend for the module's save/load runs (each run its own stream id)."""
    return connect(os.path.join(tempfile.mkdtemp(prefix="stream-props-"), "streams.db"))


def _approx(results: list[Expected], tolerance: float | None) -> list:
    if tolerance is None:
        return results
    return [r._replace(value=pytest.approx(r.value, abs=tolerance)) for r in results]


class Run:
    """One engine and one oracle fed the same ops; every advance compared."""

    def __init__(self, monoid: Monoid, queries: list, allowed: Any, final: str = "eager", *,
                 keyed: bool = False, ordered: bool = False, tolerance: float | None = None,
                 optimizer: Any = "triweave") -> None:
        self.monoid, self.allowed, self.final, self.keyed, self.ordered = monoid, allowed, final, keyed, ordered
        self.optimizer = optimizer
        self.tolerance = tolerance
        self.late: list[tuple] = []
        self.specs: dict[str, Any] = {}  # current queries in add order (what restore needs)
        self.engine = self._new_engine()
        self.oracle = KeyedOracle(monoid, allowed) if keyed else StreamOracle(monoid, allowed)
        for name, spec in queries:
            self.apply(("add", name, spec))

    def _new_engine(self) -> Any:
        if self.keyed:
            return KeyedStream(self.monoid, allowed_lateness=self.allowed, final=self.final,
                               optimizer=self.optimizer)
        return Stream(self.monoid, allowed_lateness=self.allowed, final=self.final, ordered=self.ordered,
                      on_late=lambda ts, value: self.late.append((ts, value)), optimizer=self.optimizer)

    def apply(self, op: tuple) -> None:
        kind, args = op[0], op[1:]
        if kind == "insert":
            assert self.engine.insert(*args) == self.oracle.insert(*args), op
        elif kind == "insert_many":
            (batch,) = args
            assert self.engine.insert_many(iter(batch)) == sum(self.oracle.insert(*t) for t in batch), op
        elif kind == "advance":
            got = [result_tuple(r) for r in self.engine.advance(*args)]
            want = self.oracle.advance(*args)
            if self.keyed:  # the spec orders results within a key only
                got, want = _by_key(got), _by_key(want)
                assert got.keys() == want.keys(), op
                for key in got:
                    assert got[key] == _approx(want[key], self.tolerance), (op, key)
            else:
                assert got == _approx(want, self.tolerance), op
            assert self.engine.watermark == self.oracle.watermark
        elif kind == "add":
            name, spec = args
            expect_error = name in self.specs
            with pytest.raises(ValueError) if expect_error else nullcontext():
                self.engine.add(name, spec.engine())
            if not expect_error:
                self.oracle.add(name, spec)
                self.specs[name] = spec
        elif kind == "remove":
            (name,) = args
            with pytest.raises(KeyError) if name not in self.specs else nullcontext():
                self.engine.remove(name)
            if name in self.specs:
                self.oracle.remove(name)
                del self.specs[name]
        elif kind == "snapshot" and args == ("keys",):  # KeyedStream: every key's state put back
            for key in self.engine.keys():
                self.engine.restore_key(key, self.engine.snapshot_key(key))
        elif kind == "snapshot":  # bytes: snapshot/restore; kvs: save, close, load
            (via,) = args
            restored = self._new_engine()
            for name, spec in self.specs.items():
                restored.add(name, spec.engine())
            if via == "bytes":
                data = self.engine.snapshot()
                assert isinstance(data, bytes)
                restored.restore(data)
            else:
                stream_id = uuid.uuid4().hex  # a new one: the old id's writer may be a stream restored since
                self.engine.save(_backend(), stream_id)
                self.engine.close()
                restored.load(_backend(), stream_id)
            self.engine = restored
        else:
            raise ValueError(op)
        assert self.engine.dropped == self.oracle.dropped

    def run(self, ops: list) -> None:
        for op in ops:
            self.apply(op)
        if not self.keyed:
            assert self.late == self.oracle.late


def _by_key(results: list[Expected]) -> dict:
    grouped: dict[Any, list] = defaultdict(list)
    for r in results:
        grouped[r.key].append(r)
    return dict(grouped)


# --------------------------------------------------------------------------- the matrix

@pytest.mark.parametrize("monoid", ["sum", "collect"])
@pytest.mark.parametrize("in_order", [True, False], ids=["in_order", "out_of_order"])
@pytest.mark.parametrize("kind", KINDS)
@hsettings(max_examples=50)
@given(data=st.data())
def test_window_type_against_oracle(kind: str, in_order: bool, monoid: str, data: st.DataObject) -> None:
    """One query of ``kind`` (and maybe one of any type sharing the stream) against the oracle."""
    queries, ops, allowed = data.draw(scenarios((kind,), in_order=in_order), label="scenario")
    final = data.draw(st.sampled_from(FINALS), label="final")
    Run(MONOIDS[monoid](), queries, allowed, final).run(ops)


@pytest.mark.parametrize("monoid", ["sum", "max", "sum_no_inverse", "collect"])
@hsettings(max_examples=100)
@given(data=st.data())
def test_count_windows_out_of_order(monoid: str, data: st.DataObject) -> None:
    """Count windows shift under late tuples: invertible (Sum), selection (Max), neither
    (SumNoInverse), non-commutative (Collect); several count queries share the stream."""
    queries, ops, allowed = data.draw(scenarios(("count", "count", "count_every"), max_ops=40,
                                                lateness=st.integers(0, 12)), label="scenario")
    Run(MONOIDS[monoid](), queries, allowed, data.draw(st.sampled_from(FINALS))).run(ops)


@pytest.mark.parametrize("final", FINALS)
@hsettings(max_examples=150)
@given(data=st.data())
def test_tuples_around_the_watermark(final: str, data: st.DataObject) -> None:
    """Tuples at and just around the watermark, late ones splitting the slices next to them."""
    queries, ops, allowed = data.draw(scenarios(("tumbling", "session"), ahead=3, extra_queries=0,
                                                lateness=st.integers(1, 6)), label="scenario")
    Run(Sum(), queries, allowed, final).run(ops)


@pytest.mark.parametrize("final", FINALS)
@hsettings(max_examples=60)
@given(data=st.data())
def test_every_type_on_one_stream(final: str, data: st.DataObject) -> None:
    """All window types on one stream, out of order, per final= store; the holistic monoids
    (exact Median and 0.9-Quantile: sorted run-length-encoded partials) too."""
    queries, ops, allowed = data.draw(scenarios(KINDS, max_ops=40), label="scenario")
    monoid = data.draw(st.sampled_from(["sum", "collect", "median", "quantile"]))
    Run(MONOIDS[monoid](), queries, allowed, final).run(ops)


@hsettings(max_examples=100)
@given(data=st.data())
def test_context_aware_windows_under_late_tuples(data: st.DataObject) -> None:
    """Sessions and punctuations under tuples late by up to 14: sessions extended, merged,
    created between emitted ones; punctuation windows split."""
    queries, ops, allowed = data.draw(scenarios(("session", "session", "punctuation"), max_ops=40, extra_queries=0,
                                                lateness=st.integers(6, 12)), label="scenario")
    monoid = data.draw(st.sampled_from(["sum", "collect"]))
    Run(MONOIDS[monoid](), queries, allowed, data.draw(st.sampled_from(FINALS))).run(ops)


@hsettings(max_examples=100)
@given(data=st.data())
def test_queries_added_and_removed_mid_stream(data: st.DataObject) -> None:
    queries, ops, allowed = data.draw(scenarios(("sliding", "session"), max_ops=40, mid_queries=True),
                                      label="scenario")
    monoid = data.draw(st.sampled_from(["sum", "collect"]))
    Run(MONOIDS[monoid](), queries, allowed, data.draw(st.sampled_from(FINALS))).run(ops)


@pytest.mark.parametrize("kinds", [("tumbling", "session"), ("sliding", "session"), ("count", "session"),
                                   ("punctuation", "session"), ("count_every", "tumbling"), ("policy", "count")],
                         ids="-".join)
@hsettings(max_examples=100)
@given(data=st.data())
def test_query_removed_while_another_runs(kinds: tuple[str, str], data: st.DataObject) -> None:
    """One of two queries is removed at any point: the other's results must not change (the
    slices and tuples it needs stay)."""
    queries, ops, allowed = data.draw(scenarios(kinds, in_order=data.draw(st.booleans(), label="in order"),
                                                max_ops=30, extra_queries=0), label="scenario")
    where = data.draw(st.integers(0, len(ops) - 1), label="removed before op")
    ops = ops[:where] + [("remove", data.draw(st.sampled_from(["q0", "q1"]), label="removed"))] + ops[where:]
    monoid = data.draw(st.sampled_from(["sum", "collect"]))
    Run(MONOIDS[monoid](), queries, allowed, data.draw(st.sampled_from(FINALS))).run(ops)


@hsettings(max_examples=100)
@given(data=st.data())
def test_snapshot_restore_mid_stream(data: st.DataObject) -> None:
    """The run goes on in a new Stream restored from a snapshot or loaded from a kvs (sqlite)
    backend, taken between any two ops."""
    queries, ops, allowed = data.draw(scenarios(KINDS, max_ops=30, mid_queries=True, snapshots=True),
                                      label="scenario")
    monoid = data.draw(st.sampled_from(["sum", "collect"]))
    Run(MONOIDS[monoid](), queries, allowed, data.draw(st.sampled_from(FINALS))).run(ops)


@hsettings(max_examples=60)
@given(data=st.data())
def test_keyed_stream_against_per_key_oracles(data: st.DataObject) -> None:
    queries, ops, allowed = data.draw(scenarios(("tumbling", "session", "count"), max_ops=40, mid_queries=True,
                                                snapshots=True, keys=("a", "b", "c")), label="scenario")
    monoid = data.draw(st.sampled_from(["sum", "collect"]))
    Run(MONOIDS[monoid](), queries, allowed, data.draw(st.sampled_from(FINALS)), keyed=True).run(ops)


@st.composite
def open_sessions(draw: Any) -> tuple[list, list, int]:
    """Dense data (no gap): one session stays open while the watermark moves on, tuples late
    by up to the lateness + 1, queries of any type added on the way, snapshots."""
    allowed = draw(st.integers(0, 6))
    ops: list[tuple] = []
    for t in range(draw(st.integers(10, 60))):
        ops.append(("insert", t, draw(st.integers(0, 99))))
        if draw(st.integers(0, 4)) == 0:
            ops.append(("insert", t - draw(st.integers(0, allowed + 1)), draw(st.integers(0, 99))))
        if draw(st.integers(0, 2)) == 0:
            ops.append(("advance", t - draw(st.integers(0, 3))))
        if draw(st.integers(0, 15)) == 0:
            ops.append(("add", f"m{t}", draw(any_window)))
        if draw(st.integers(0, 20)) == 0:
            ops.append(("snapshot", "bytes"))
    ops.append(("advance", 200))
    return [("s", Session(draw(st.integers(4, 8))))], ops, allowed


@hsettings(max_examples=60)
@given(data=st.data())
def test_equal_queries_under_several_names(data: st.DataObject) -> None:
    """The same window under two names (the engine may compute it once): both report, also
    after one is removed and added again, and through snapshots."""
    kind = data.draw(st.sampled_from(["tumbling", "sliding", "session", "count"]), label="kind")
    window = data.draw(window_spec(kind), label="window")
    queries, ops, allowed = data.draw(scenarios((kind,), max_ops=30, snapshots=True), label="scenario")
    removal = data.draw(st.integers(0, len(ops) - 1), label="removal")
    back = data.draw(st.integers(removal, len(ops) - 1), label="back")
    ops = ops[:removal] + [("remove", "a")] + ops[removal:back] + [("add", "a", window)] + ops[back:]
    monoid = data.draw(st.sampled_from(["sum", "collect"]))
    Run(MONOIDS[monoid](), [("a", window), ("b", window)] + queries, allowed,
        data.draw(st.sampled_from(FINALS))).run(ops)


@hsettings(max_examples=40)
@given(data=st.data())
def test_long_open_session_with_queries_added_later(data: st.DataObject) -> None:
    """Queries added while a session is open must still see every tuple from their watermark
    on, and late tuples reach back into the open session."""
    queries, ops, allowed = data.draw(open_sessions(), label="scenario")
    monoid = data.draw(st.sampled_from(["sum", "collect"]))
    Run(MONOIDS[monoid](), queries, allowed, data.draw(st.sampled_from(FINALS))).run(ops)


@hsettings(max_examples=50)
@given(data=st.data())
def test_policy_of_the_paper_on_a_record(data: st.DataObject) -> None:
    """Policy(wsp) with a user policy reading a Record's fields, next to a session and a count."""
    every = data.draw(st.integers(1, 6))
    queries, ops, allowed = data.draw(scenarios(("session", "count"), extra_queries=0, values=st.integers(0, 6)),
                                      label="scenario")
    queries.append(("paper", PolicyEvery(sum_at_most_10, every)))
    monoid = Record(max=Max(), sum=Sum(), last=Last())
    Run(monoid, queries, allowed, data.draw(st.sampled_from(FINALS))).run(ops)


@hsettings(max_examples=50)
@given(data=st.data())
def test_ordered_stream_in_order(data: st.DataObject) -> None:
    """ordered=True with in-order data gives the same results."""
    queries, ops, allowed = data.draw(scenarios(KINDS, in_order=True), label="scenario")
    Run(Sum(), queries, allowed, data.draw(st.sampled_from(FINALS)), ordered=True).run(ops)


@hsettings(max_examples=80)
@given(data=st.data())
def test_float_timestamps(data: st.DataObject) -> None:
    """Dyadic float timestamps (exact bounds) and float values (sums within a tolerance)."""
    queries = [("t", Tumbling(1.0)), ("s", Sliding(1.5, 0.5, 0.25)), ("g", Session(0.75)),
               ("m", CountEvery(3, 1.25)), ("c", Count(3, 2))]
    allowed = data.draw(st.sampled_from([0.0, 0.5, 1.25]))
    ops: list[tuple] = []
    watermark = 0.0
    for _ in range(data.draw(st.integers(1, 30))):
        if data.draw(st.integers(0, 3)):
            ts = watermark + data.draw(st.integers(-8, 30)) * 0.125
            ops.append(("insert", ts, data.draw(st.floats(-100, 100, allow_nan=False))))
        else:
            watermark = max(watermark, watermark + data.draw(st.integers(-2, 12)) * 0.25)
            ops.append(("advance", watermark))
    ops.append(("advance", watermark + 20.0))
    Run(Sum(), queries, allowed, data.draw(st.sampled_from(FINALS)), tolerance=1e-6).run(ops)


# --------------------------------------------------------------------------- lateness boundaries

@pytest.mark.parametrize("allowed", [0, 3])
def test_lateness_boundary_is_inclusive(allowed: int) -> None:
    run = Run(Sum(), [("t", Tumbling(10))], allowed)
    run.run([("insert", 12, 1), ("advance", 20), ("insert", 20 - allowed, 2), ("insert", 19 - allowed, 4),
             ("advance", 30)])
    assert run.engine.dropped == 1
    assert run.late == [(19 - allowed, 4)]


@hsettings(max_examples=80)
@given(allowed=st.integers(0, 6), watermark=st.integers(-5, 20), offsets=st.lists(st.integers(-8, 3), max_size=8))
def test_lateness_boundaries(allowed: int, watermark: int, offsets: list[int]) -> None:
    """Tuples around watermark - allowed_lateness: accepted from it on, dropped (counted, on_late) below."""
    ops = [("insert", watermark + 1, 1), ("advance", watermark)]
    ops += [("insert", watermark - allowed + d, d) for d in offsets]
    ops.append(("advance", watermark + 30))
    run = Run(Sum(), [("t", Tumbling(4)), ("s", Session(3))], allowed)
    run.run(ops)
    assert run.engine.dropped == sum(1 for d in offsets if d < 0)


def _exact(r: Expected) -> tuple:
    """A result with its value compared exactly: a float by its hex (NaN included), else type and repr."""
    v = r.value
    return r._replace(value=("float", v.hex()) if type(v) is float else (type(v).__name__, repr(v)))


_SUM_VALUES = st.sampled_from([1e16, -1e16, 1, 2, 3, 0.5, 1.0, 0.1, 2 ** 60])
_LAST_VALUES = st.sampled_from([float("nan"), 1, 2.0, -0.0, 0.0, math.inf])


@pytest.mark.parametrize("monoid", ["sum", "last"])
@hsettings(max_examples=150)
@given(data=st.data())
def test_count_windows_with_late_tuples_equal_the_fold_exactly(monoid: str, data: st.DataObject) -> None:
    """Sliding-by-one count windows (one tuple per slice, so each window is the fold of its
    tuples in order) under late tuples: float Sum (a shift must not invert a float out) and
    Last with NaN (a NaN aggregate must not read as another selected tuple); values bit for bit."""
    agg, values = (Sum(), _SUM_VALUES) if monoid == "sum" else (Last(), _LAST_VALUES)
    engine, oracle = Stream(agg, allowed_lateness=100), StreamOracle(agg, 100)
    for i, size in enumerate(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=2), label="sizes")):
        engine.add(f"c{i}", Count(size, 1).engine())
        oracle.add(f"c{i}", Count(size, 1))
    watermark = 0
    for op in data.draw(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 40), values), max_size=30), label="ops"):
        kind, ts, value = op
        if kind == 0:
            watermark = max(watermark, ts)
            want = [_exact(r) for r in oracle.advance(watermark)]
            assert [_exact(result_tuple(r)) for r in engine.advance(watermark)] == want, op
        else:
            assert engine.insert(ts, value) == oracle.insert(ts, value), op
    want = [_exact(r) for r in oracle.advance(100)]
    assert [_exact(result_tuple(r)) for r in engine.advance(100)] == want
