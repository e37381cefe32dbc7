"""Streams fold each micro-batch partition's events into slices before the state
(spark_integration.columnar.Fold): a key's state fed the folded slices must give the
windows and late counts it gives when fed the events, and the stream the rows of Spark's
own streaming windows, with the fold in the plan."""

from __future__ import annotations

import contextlib
import io
import math
import uuid

import numpy as np
import pyarrow as pa
from hypothesis import given, strategies as st

from conftest import hsettings
from mta.columnar import KINDS, grid
from mta.columnar.state import KeyState
from spark_integration.columnar import EVENTS, Fold
from spark_integration.slicing import Sliced, shared_columns

SLICED = [Sliced("n", "count", ("i",), "bigint", "bigint"), Sliced("s", "sum", ("i",), "bigint", "bigint"),
          Sliced("hi", "max", ("i",), "bigint", "bigint"), Sliced("lo", "min", ("f",), "double", "double"),
          Sliced("a", "mean", ("f",), "double", "double"), Sliced("v", "var_samp", ("f",), "double", "double"),
          Sliced("c", "count", ("name",), "string", "bigint")]
KIND_LIST = [KINDS[s.kind] for s in SLICED]
QUERIES = [("sliding", 30, 10, 0), ("sliding", 20, 20, 5)]
PANE, ORIGIN = grid(QUERIES)

event = st.tuples(st.sampled_from(["a", "b", None]), st.integers(0, 120),
                  st.one_of(st.none(), st.integers(-50, 50), st.sampled_from([2 ** 62, 2 ** 62 + 7, -2 ** 63])),
                  st.one_of(st.none(), st.floats(-1e3, 1e3)), st.sampled_from(["x", None]))


def table(events: list[tuple]) -> pa.Table:
    """Events as the stream's prepared columns: key, time, values with null masks."""
    ints, floats = [e[2] for e in events], [e[3] for e in events]
    return pa.table({"k": pa.array([e[0] for e in events], pa.string()),
                     "t": pa.array([e[1] for e in events], pa.int64()),
                     "mta_in_i": pa.array([0 if v is None else v for v in ints], pa.int64()),
                     "mta_null_i": pa.array([v is None for v in ints]),
                     "mta_in_f": pa.array([0.0 if v is None else v for v in floats], pa.float64()),
                     "mta_null_f": pa.array([v is None for v in floats]),
                     "name": pa.array([e[4] for e in events], pa.string())})


def lifted(events: list[tuple]) -> list[dict]:
    ints, floats = [e[2] for e in events], [e[3] for e in events]
    columns = {"i": (np.array([0 if v is None else v for v in ints], np.int64), np.array([v is None for v in ints])),
               "f": (np.array([0.0 if v is None else v for v in floats]), np.array([v is None for v in floats])),
               "name": (np.zeros(len(events), np.int64), np.array([e[4] is None for e in events]))}
    zeros = np.zeros(len(events), np.int64)
    return [kind.lift(*columns[s.inputs[0]], zeros, zeros) for kind, s in zip(KIND_LIST, SLICED)]


def folded(events: list[tuple], pieces: int) -> dict:
    """Per key, the Fold's output rows of ``events`` arriving in ``pieces`` Arrow batches."""
    fold = Fold(["k"], "t", SLICED, PANE, ORIGIN)
    whole = table(events)
    batches = [b for piece in np.array_split(np.arange(len(events)), pieces) if len(piece)
               for b in whole.take(pa.array(piece, pa.int64())).to_batches()]
    out = pa.Table.from_batches(list(fold(iter(batches)))).to_pydict() if events else {}
    per_key: dict = {}
    for row in range(len(out.get("t", []))):
        per_key.setdefault(out["k"][row], []).append(row)
    columns = shared_columns(SLICED)
    if events:
        assert set(out) == {"k", "t", EVENTS, *columns.values()}
    return {key: (np.array(out["t"])[rows], np.array(out[EVENTS])[rows],
                  [{f: np.array(out[columns[(i, f)]])[rows] for f in KINDS[s.kind].fields}
                   for i, s in enumerate(SLICED)])
            for key, rows in per_key.items()}


def results(state: KeyState, until: float) -> list:
    out = []
    for w in state.advance(until):
        lowered = [kind.lower(c) for kind, c in zip(KIND_LIST, w.cols)]
        out.append((w.start.tolist(), w.end.tolist(), [(v.tolist(), z.tolist()) for v, z in lowered]))
    return out


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


@hsettings(max_examples=150)
@given(st.lists(event, max_size=60), st.lists(event, max_size=60), st.integers(0, 130), st.integers(1, 4))
def test_a_state_fed_folded_slices_gives_the_windows_and_late_counts_of_one_fed_events(
        first: list[tuple], second: list[tuple], watermark: int, pieces: int) -> None:
    """Two micro-batches with the watermark between them (late events in the second): per key,
    the same windows (integers exact, floats to rounding: the fold merges in another order),
    the same late counts, and event counts that add up."""
    by_events: dict = {}
    by_slices: dict = {}
    for n, batch in enumerate((first, second)):
        slices = folded(batch, pieces)
        keys = {e[0] for e in batch}
        assert set(slices) == keys
        for key in keys:
            mine = [e for e in batch if e[0] == key]
            times, events, cols = slices[key]
            assert events.sum() == len(mine) and (events > 0).all()
            for state in (by_events, by_slices):
                if key not in state:
                    state[key] = KeyState(KIND_LIST, QUERIES, PANE, ORIGIN)
                    if n:
                        state[key].advance(watermark)
            seq = np.arange(len(mine), dtype=np.int64)
            by_events[key].add(np.array([e[1] for e in mine], np.int64), seq, lifted(mine))
            by_slices[key].add(times, np.arange(len(times), dtype=np.int64), cols, events)
        if n == 0:
            for key in by_events:
                assert same(results(by_slices[key], watermark), results(by_events[key], watermark))
    for key in by_events:
        assert same(results(by_slices[key], math.inf), results(by_events[key], math.inf))
        assert by_slices[key].late == by_events[key].late


def test_fields_equal_by_construction_share_one_column() -> None:
    """Every kind's n over a column, sum's and mean's s: 10 columns for the 14 fields of SLICED."""
    columns = shared_columns(SLICED)
    assert len(columns) == 14 and len(set(columns.values())) == 10
    assert columns[(0, "n")] == columns[(1, "n")] == columns[(2, "n")] != columns[(3, "n")] == columns[(5, "n")]
    assert columns[(2, "m")] != columns[(3, "m")] and columns[(6, "n")] not in (columns[(0, "n")], columns[(3, "n")])


def test_integer_sums_beyond_int64_go_on_as_events() -> None:
    """A slice whose sum int64 cannot hold is not folded: its events go on one by one, exact."""
    events = [("a", 1, 2 ** 62, 0.0, "x")] * 3 + [("a", 2, 5, 1.0, "x"), ("a", 15, 1, 1.0, None)]
    times, counts, cols = folded(events, 1)["a"]
    assert sorted(counts.tolist()) == [1, 1, 1, 1, 1]  # the pane holding the big ones goes raw
    state = KeyState(KIND_LIST, QUERIES, PANE, ORIGIN)
    state.add(times, np.arange(len(times), dtype=np.int64), cols, counts)
    windows = state.advance(math.inf)[0]
    assert KINDS["sum"].lower(windows.cols[1])[0].tolist()[0] == 3 * 2 ** 62 + 5


def test_a_stream_of_order_free_aggregations_folds_and_gives_sparks_rows(spark, tmp_path) -> None:
    """Late events and keys sitting out, against Spark's own streaming windows: the plan folds
    (MapInArrow before the state), the rows are Spark's, and the late counts are those of the
    unfolded plan (a `first` keeps it from folding)."""
    from spark_integration import window_aggregate
    from test_spark import AGGS, run, stream, write_file
    from test_spark_late import DELAY, compare, late_stream

    batches = late_stream(11, size=30, batches=5)
    compare(spark, tmp_path / "rows", batches, "30 seconds", "10 seconds")  # rows against Spark's
    for rows in batches:
        write_file(spark, tmp_path / "in", rows)
    late = {}
    for label, aggs in (("folded", AGGS), ("events", {**AGGS, "f": ("v", "first")})):
        query = window_aggregate(stream(spark, tmp_path / "in"), "k", "ts", aggs, size="30 seconds",
                                 slide="10 seconds", watermark=f"{DELAY} seconds", late_count=True)
        plan = io.StringIO()
        with contextlib.redirect_stdout(plan):
            query.explain()
        assert ("MapInArrow" in plan.getvalue()) == (label == "folded"), plan.getvalue()
        name = f"fold_{label}_{uuid.uuid4().hex[:8]}"
        run(query, name, tmp_path / f"ck_{label}")
        out = spark.table(name)
        late[label] = sorted((r.k, r.window.start, r.late) for r in out.collect())
    assert late["folded"] == late["events"]
    assert any(count for _, _, count in late["folded"])  # late events were met
