"""The Stream engine's final aggregation on the typed cores (issue 20) against the object one.

Two ``mta.Stream`` of the same monoid, final and queries get the same random operations:
one made with the typed cores in use (``typed.USE``, ``typed_ingest.USE``: its FiBA and
AMTAs are :class:`TypedFiBA` / :class:`TypedAMTA`; compiled when built, the same source
interpreted on the pure path), one on Python objects. Streams with late tuples, sessions
(which split slices), long sliding windows (so that ``auto`` uses its tree), and values that
demote the typed structures mid-stream (a huge int, a bool, a float among ints). Every call
must return the same (results compared by ``repr``: ints stay ints, floats bit for bit)."""

from __future__ import annotations

import contextlib
import functools
import math
import operator

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mta import Count, First, Last, Max, MaxCount, Mean, Min, MinCount, Record, StdDev, Stream, Sum, Variance
from mta.algorithms import typed
from mta.algorithms.amta import AmortizedMTA
from mta.algorithms.fiba import FiBA
from mta.algorithms.typed_amta import TypedAMTA
from mta.algorithms.typed_fiba import TypedFiBA
from mta.algorithms.typed_record_fiba import TypedRecordFiBA
from mta._extensions import load_pure
from mta.stream import typed_fold, typed_ingest
from mta.windows import Session, Sliding, Tumbling

MONOIDS = {"Sum": Sum, "Count": Count, "Min": Min, "Max": Max, "Mean": Mean, "MinCount": MinCount,
           "MaxCount": MaxCount, "First": First, "Last": Last, "Variance": Variance, "StdDev": lambda: StdDev(1),
           "Record(Sum, First)": lambda: Record(s=Sum(), f=First()),
           "Record(Last, Min, Mean)": lambda: Record(l=Last(), m=Min(), a=Mean())}
FINALS = ["lazy", "fiba", "auto", "amta"]
TYPED = (TypedFiBA, TypedAMTA, TypedRecordFiBA)


@contextlib.contextmanager
def cores(on: bool):
    """The typed cores in use (``on``) or not, as the compiled and the pure path have them."""
    saved = typed.USE, typed_ingest.USE
    typed.USE = typed_ingest.USE = on
    try:
        yield
    finally:
        typed.USE, typed_ingest.USE = saved


def make(monoid, final: str, queries: list, on: bool, lateness: float) -> Stream:
    with cores(on):
        stream = Stream(monoid, final=final, allowed_lateness=lateness)
        for name, spec in queries:
            stream.add(name, spec)
    return stream


def structures(stream: Stream) -> list:
    """The trees and AMTAs of the stream's final aggregation."""
    final = getattr(stream.final, "eager", stream.final)
    if hasattr(final, "tree"):
        return [final.tree[0]]
    return [fifo[0] for fifo in getattr(final, "fifos", {}).values()]


def outcome(call):
    try:
        got = call()
    except Exception as error:  # the error itself must be the same on both
        return ("error", type(error).__name__, str(error))
    if isinstance(got, list):
        return [(r.query, r.start, r.end, repr(r.value), r.count, r.final, r.replaces) for r in got]
    return repr(got)


def apply(stream: Stream, on: bool, op):
    with cores(on):
        if op[0] == "insert":
            return outcome(lambda: stream.insert(op[1], op[2]))
        return outcome(lambda: stream.advance(op[1]))


ints = st.integers(-1000, 1000)
plain = st.one_of(ints, ints, ints, st.sampled_from([0.5, -0.0, 0.0, 1e16]))
demoting = st.sampled_from([2 ** 70, -(2 ** 64), True, False, 1e300, 0.25, 2 ** 40])
queries = st.lists(
    st.one_of(st.builds(lambda size, slide: Sliding(size * slide, slide), st.integers(12, 40), st.integers(1, 2)),
              st.builds(Tumbling, st.integers(2, 30)),
              st.builds(Session, st.integers(2, 6))),
    min_size=1, max_size=4)


@st.composite
def scenarios(draw):
    ops = []
    t = draw(st.integers(-5, 5))
    demote = draw(st.booleans())
    values = st.one_of(plain, plain, plain, plain, demoting) if demote else plain
    for _ in range(draw(st.integers(1, 120))):
        if draw(st.integers(0, 9)) == 0:
            ops.append(("advance", t - draw(st.integers(0, 4))))
            continue
        t += draw(st.sampled_from([0, 1, 1, 1, 2, 5, -3]))  # in order, equal, a gap, out of order
        ops.append(("insert", t, draw(values)))
    ops.append(("advance", math.inf))
    return ops


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(monoid=st.sampled_from(sorted(MONOIDS)), final=st.sampled_from(FINALS), specs=queries,
       lateness=st.sampled_from([0, 0, 4]), data=st.data())
def test_typed_final_equals_object_final(monoid, final, specs, lateness, data):
    ops = data.draw(scenarios())
    named = [(f"q{i}", spec) for i, spec in enumerate(specs)]
    fast = make(MONOIDS[monoid](), final, named, True, lateness)
    slow = make(MONOIDS[monoid](), final, named, False, lateness)
    assert fast.final.typed and not slow.final.typed
    for op in ops:
        assert apply(fast, True, op) == apply(slow, False, op), op
        assert not any(isinstance(s, TYPED) for s in structures(slow))
        kinds = {type(s).__name__ for s in structures(fast)}
        if kinds:
            event(f"{final}: {', '.join(sorted(kinds))}")
    assert fast.dropped == slow.dropped


def run(final: str, values: list, on: bool, monoid=Sum) -> tuple[list, Stream]:
    stream = make(monoid(), final, [("q", Sliding(30, 1))], on, 0)
    out = []
    for t, v in enumerate(values):
        apply(stream, on, ("insert", t, v))
        if t % 7 == 6:
            out += apply(stream, on, ("advance", t - 1))
    return out, stream


@pytest.mark.parametrize("final", ["fiba", "auto", "amta"])
def test_long_windows_run_typed_and_demote_on_a_huge_int(final):
    """Windows of 30 slices: the typed tree / AMTAs serve them, and a sum beyond int64 midway
    demotes them to the object twins, with the object path's results all along."""
    values = [(-1) ** t * t for t in range(80)]
    fast, fast_stream = run(final, values, True)
    slow, _ = run(final, values, False)
    assert fast == slow and len(fast) > 50
    assert structures(fast_stream) and all(isinstance(s, TYPED) for s in structures(fast_stream))
    values[60] = 2 ** 70
    fast, fast_stream = run(final, values, True)
    slow, _ = run(final, values, False)
    assert fast == slow
    assert any(int(r[3]) > 2 ** 64 for r in fast)
    assert all(isinstance(s, (FiBA, AmortizedMTA)) for s in structures(fast_stream))


def record():
    return Record(s=Sum(), f=First())


def test_records_run_typed_and_demote():
    """A Record of Sum and First: one typed tree per field in lockstep, demoted (every field
    joined into the object one) by a float among the ints."""
    values = list(range(70))
    fast, fast_stream = run("fiba", values, True, record)
    assert fast == run("fiba", values, False, record)[0] and len(fast) > 40
    assert all(isinstance(s, TypedRecordFiBA) for s in structures(fast_stream))
    values[50] = 0.5
    fast, fast_stream = run("fiba", values, True, record)
    assert fast == run("fiba", values, False, record)[0]
    assert all(isinstance(s, FiBA) for s in structures(fast_stream))


def test_a_records_amta_is_the_object_one():
    """``amta`` keeps a Record's AMTAs as objects (measured faster than a TypedAMTA per field)."""
    values = list(range(70))
    fast, fast_stream = run("amta", values, True, record)
    assert fast == run("amta", values, False, record)[0] and len(fast) > 40
    assert structures(fast_stream) and all(type(s) is AmortizedMTA for s in structures(fast_stream))


def test_float_sums_are_bit_for_bit_the_object_ones():
    values = [0.1 * t + 1e16 * (t % 3 == 0) for t in range(90)]
    fast, fast_stream = run("auto", values, True)
    slow, _ = run("auto", values, False)
    assert fast == slow
    assert isinstance(structures(fast_stream)[0], TypedFiBA)


terms = st.one_of(st.integers(-10, 10), st.integers(-(2 ** 64), 2 ** 64), st.sampled_from([2 ** 62 - 1, -(2 ** 62) + 1, 2 ** 62]),
                  st.floats(allow_nan=True), st.sampled_from([True, False, -0.0, 0.0, 0.1]))


@settings(max_examples=500, deadline=None)
@given(xs=st.lists(terms, min_size=1, max_size=30), data=st.data())
def test_add_range_is_the_left_fold_of_plus(xs, data):
    """typed_fold.add_range (compiled when built) and its pure twin give reduce(operator.add)'s result, or error."""
    i = data.draw(st.integers(0, len(xs) - 1))
    j = data.draw(st.integers(i + 1, len(xs)))
    field = data.draw(st.sampled_from([-1, 0, 1]))
    aggs = xs if field < 0 else [(x, -x) if field == 0 else (None, x) for x in xs]
    want = outcome(lambda: functools.reduce(operator.add, [a if field < 0 else a[field] for a in aggs[i + 1:j]],
                                            aggs[i] if field < 0 else aggs[i][field]))
    for module in (typed_fold, load_pure("mta.stream.typed_fold")):
        assert outcome(lambda: module.add_range(aggs, i, j, field)) == want


@pytest.mark.parametrize("monoid", [Sum, Mean])
def test_lazy_sum_and_mean_fold_in_c(monoid):
    stream = make(monoid(), "lazy", [("q", Sliding(40, 1))], True, 0)
    assert stream.final.added == ((-1,) if monoid is Sum else (0, 1))
    assert make(monoid(), "lazy", [("q", Sliding(40, 1))], False, 0).final.added is None
