"""mta.columnar against naive Python folds over the events (Spark semantics).

Every kind is checked through lift -> reduce -> lower, merge (associativity, and against the
fold of the union), and every window function against a per-window recomputation from the
raw events: sliding/tumbling at random sizes, steps and phases over sparse and dense data,
sessions, coarsen-then-slide, and the int64 overflow guard.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from conftest import hsettings
from hypothesis import given
from hypothesis import strategies as st

from mta.columnar import KINDS, Kind, coarsen, grid, sessions, sliding
from mta.columnar.windows import _running_max

NAN, INF = float("nan"), float("inf")
FLOAT_RESULTS = {"mean", "var_samp", "var_pop", "stddev_samp", "stddev_pop"}
VALUE_KINDS = {
    "int": [k for k in KINDS],
    "float": [k for k in KINDS],
    "offset": [k for k in KINDS],
    "str": ["count", "times", "first", "last", "first_ignore_nulls", "last_ignore_nulls", "min_by", "max_by"],
}
VALUES = {
    "int": st.integers(-100, 100) | st.integers(2**63 - 1000, 2**63 - 1) | st.integers(-(2**63), -(2**63) + 1000),
    "float": st.floats(-1e6, 1e6) | st.sampled_from([NAN, INF, -INF, -0.0, 0.0, 1.5]),
    "offset": st.floats(1e9, 1e9 + 16),  # far from 0 against their spread: variance must not cancel
    "str": st.text(alphabet="abc", max_size=2),
}
ORDERS = {
    "int": st.integers(-3, 3),
    "float": st.sampled_from([NAN, -0.0, 0.0, 1.0, -1.0, INF]),
    "str": st.text(alphabet="ab", max_size=2),
}

# --------------------------------------------------------------------------- naive oracles


def spark_less(x, y) -> bool:
    """x < y with NaN above every number."""
    if isinstance(x, float) and math.isnan(x):
        return False
    if isinstance(y, float) and math.isnan(y):
        return True
    return x < y


def float_sum(xs: list[float]) -> float:
    if any(math.isnan(x) for x in xs) or (INF in xs and -INF in xs):
        return NAN
    if INF in xs or -INF in xs:
        return INF if INF in xs else -INF
    return math.fsum(xs)


def naive(name: str, events: list[tuple]) -> tuple[object, bool]:
    """(value, is_null) of aggregation ``name`` over events (t, seq, value, order) in (t, seq) order."""
    vals = [e[2] for e in events if e[2] is not None]
    floats = any(isinstance(v, float) for v in vals)
    if name == "count":
        return len(vals), False
    if name == "times":
        return (min(e[0] for e in events), False) if events else (None, True)
    if name in ("first", "last", "first_ignore_nulls", "last_ignore_nulls"):
        taken = [e for e in events if e[2] is not None] if name.endswith("ignore_nulls") else events
        if not taken:
            return None, True
        e = taken[0] if name.startswith("first") else taken[-1]
        return e[2], e[2] is None
    if name in ("min_by", "max_by"):
        best = None
        for e in events:
            if e[3] is None:
                continue
            if best is None or (spark_less(e[3], best[3]) if name == "min_by" else spark_less(best[3], e[3])):
                best = e
        return (None, True) if best is None else (best[2], best[2] is None)
    ddof = 1 if name.endswith("_samp") else 0
    if len(vals) <= (ddof if name in FLOAT_RESULTS - {"mean"} else 0):
        return None, True
    if name == "sum":
        return (float_sum(vals) if floats else sum(vals)), False
    if name == "mean":
        return (float_sum(vals) / len(vals) if floats else sum(vals) / len(vals)), False
    if name in ("min", "max"):
        numbers = [v for v in vals if not (isinstance(v, float) and math.isnan(v))]
        if name == "min":
            return (min(numbers) if numbers else NAN), False
        return (NAN if len(numbers) < len(vals) else max(vals)), False
    xs = [float(v) for v in vals]
    if not all(math.isfinite(x) for x in xs):
        return NAN, False
    mean = sum(map(Fraction, xs)) / len(xs)
    var = float(sum((Fraction(x) - mean) ** 2 for x in xs) / (len(xs) - ddof))
    return (math.sqrt(var) if name.startswith("stddev") else var), False


def same(x, y) -> bool:
    if isinstance(x, float) or isinstance(y, float):
        return (math.isnan(x) and math.isnan(y)) if (math.isnan(x) or math.isnan(y)) else x == y
    return x == y


def check(name: str, got: object, got_null: bool, events: list[tuple], context: list[tuple] | None = None) -> None:
    """``got`` is the naive fold of ``events``; variances within rounding of the values in ``context``
    (default: the events; for windows, every event of the group: their blocks may reach further)."""
    want, want_null = naive(name, events)
    assert bool(got_null) == want_null, (name, got, want, events)
    if want_null:
        return
    finite = [float(e[2]) for e in events if e[2] is not None and not isinstance(e[2], str)]
    finite = [x for x in finite if math.isfinite(x)]
    scale = max(map(abs, finite), default=0.0)
    floats = any(isinstance(e[2], float) for e in events)
    if name in FLOAT_RESULTS or (name == "sum" and floats):
        g, w = float(got), float(want)
        if not math.isfinite(w):
            assert same(g, w), (name, g, w, events)
            return
        if name in ("sum", "mean"):
            tol = (sum(map(abs, finite)) if name == "sum" else scale) * 1e-9
        else:  # m2's error: about eps * size * Σ(x - c)² with c a mean of nearby values, plus
            # the rounding of stored means (an ulp of the values) times the spread, per merge
            near = [float(e[2]) for e in (context or events) if e[2] is not None]
            near = [x for x in near if math.isfinite(x)]
            ulp = math.ulp(max(map(abs, near)))
            spread = max(near) - min(near) + 4 * ulp
            tol = 1e-9 * spread * spread + 4 * len(near) * spread * ulp
        if name.startswith("stddev"):
            g, w = g * g, w * w
        assert abs(g - w) <= tol + 1e-12, (name, g, w, events)
    else:
        got = got.item() if isinstance(got, np.generic) else got
        assert same(got, want), (name, got, want, events)


# --------------------------------------------------------------------------- data


@st.composite
def event_lists(draw, vtype: str, otype: str, max_size: int = 30, spread: int | None = None):
    """Events (group, t, seq, value, order) sorted by (group, t, seq); None = null."""
    n = draw(st.integers(0, max_size))
    spread = spread if spread is not None else draw(st.sampled_from([3, 20, 100, 1000]))
    g = draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    t = draw(st.lists(st.integers(-spread // 3, spread), min_size=n, max_size=n))
    v = draw(st.lists(st.none() | VALUES[vtype], min_size=n, max_size=n))
    o = draw(st.lists(st.none() | ORDERS[otype], min_size=n, max_size=n))
    return sorted(zip(g, t, range(n), v, o))


def column(xs: list, vtype: str) -> tuple[np.ndarray, np.ndarray]:
    """A typed array with its null mask (nulls hold a placeholder)."""
    nulls = np.array([x is None for x in xs], dtype=bool)
    if vtype == "str":
        return np.array(xs, dtype=object), nulls
    real = vtype in ("float", "offset")
    fill = 0.0 if real else 0
    return np.array([fill if x is None else x for x in xs], dtype=np.float64 if real else np.int64), nulls


def lift(kind: Kind, events: list[tuple], vtype: str, otype: str):
    values, nulls = column([e[3] for e in events], vtype)
    order, order_nulls = column([e[4] for e in events], otype)
    times = np.array([e[1] for e in events], dtype=np.int64)
    seq = np.array([e[2] for e in events], dtype=np.int64)
    return kind.lift(values, nulls, times, seq, order=order, order_nulls=order_nulls)


def runs(keys: list[tuple]) -> np.ndarray:
    return np.array([i for i in range(len(keys)) if i == 0 or keys[i] != keys[i - 1]], dtype=np.int64)


def payload(events: list[tuple]) -> list[tuple]:
    """The oracle's view of events: (t, seq, value, order)."""
    return [e[1:] for e in events]


def slices(names, events, vtype, otype, pane_len):
    """Events folded into (group, pane) slices: (group, pane, cols per kind)."""
    keys = [(e[0], e[1] // pane_len) for e in events]
    starts = runs(keys)
    cols = [KINDS[n].reduce(lift(KINDS[n], events, vtype, otype), starts) for n in names]
    group = np.array([keys[i][0] for i in starts], dtype=np.int64)
    pane = np.array([keys[i][1] for i in starts], dtype=np.int64)
    return group, pane, cols


def types():
    return st.sampled_from(["int", "float", "str", "offset"]).flatmap(
        lambda vt: st.tuples(st.just(vt), st.sampled_from(["int", "float", "str"]))
    )


# --------------------------------------------------------------------------- kinds


@hsettings(max_examples=150)
@given(data=st.data(), vt_ot=types())
def test_reduce_and_merge_match_naive_folds(data, vt_ot):
    vtype, otype = vt_ot
    events = data.draw(event_lists(vtype, otype))
    # segments: runs of groups, cut further at random
    cuts = data.draw(st.lists(st.integers(0, len(events)), max_size=5))
    bounds = sorted({0, *[c for c in cuts if c < len(events)]} | set(runs([e[0] for e in events]).tolist()))
    bounds = bounds if events else []
    starts = np.array(bounds, dtype=np.int64)
    ends = list(bounds[1:]) + [len(events)]
    for name in VALUE_KINDS[vtype]:
        kind = KINDS[name]
        cols = lift(kind, events, vtype, otype)
        assert set(cols) == set(kind.fields)
        red = kind.reduce(cols, starts)
        values, nulls = kind.lower(red)
        assert len(values) == len(starts)
        for i, (a, b) in enumerate(zip(bounds, ends)):
            check(name, values[i], nulls[i], payload(events[a:b]))
        if len(starts) >= 3:  # consecutive partials: (a ⊕ b) ⊕ c == a ⊕ (b ⊕ c) == fold of the union
            a, b, c = ({f: x[s] for f, x in red.items()} for s in (slice(0, -2), slice(1, -1), slice(2, None)))
            left = kind.lower(kind.merge(kind.merge(a, b), c))
            right = kind.lower(kind.merge(a, kind.merge(b, c)))
            for i in range(len(starts) - 2):
                union = sorted(payload(events[bounds[i] : ends[i + 2]]))  # merge orders by (t, seq)
                check(name, left[0][i], left[1][i], union)
                check(name, right[0][i], right[1][i], union)


@pytest.mark.parametrize("name", list(KINDS))
def test_identity_is_neutral_and_empty_input(name):
    kind = KINDS[name]
    events = [(0, 5, 0, 7, 2), (0, 6, 1, None, None), (0, 9, 2, 3, 1)]
    cols = kind.reduce(lift(kind, events, "int", "int"), np.array([0]))
    empty = kind.identity(1, cols)
    for merged in (kind.merge(cols, empty), kind.merge(empty, cols)):
        check(name, kind.lower(merged)[0][0], kind.lower(merged)[1][0], payload(events))
    assert kind.lower(empty)[1][0] == (name != "count")
    none = kind.reduce(lift(kind, [], "int", "int"), np.zeros(0, dtype=np.int64))
    assert all(len(a) == 0 for a in none.values()) and set(none) == set(kind.fields)


def test_int64_overflow_guard_keeps_sums_exact():
    kind = KINDS["sum"]
    big = [2**62, 2**62, 2**62, -5]
    events = [(0, t, t, v, None) for t, v in enumerate(big)]
    cols = lift(kind, events, "int", "int")
    assert cols["s"].dtype == np.int64
    total = kind.lower(kind.reduce(cols, np.array([0])))[0][0]
    assert total == 3 * 2**62 - 5 and isinstance(total, int)
    halves = kind.reduce(cols, np.array([0, 2]))
    first, second = ({f: a[i : i + 1] for f, a in halves.items()} for i in (0, 1))
    assert kind.lower(kind.merge(first, second))[0][0] == 3 * 2**62 - 5
    win = sliding([kind], [cols], np.zeros(4, dtype=np.int64), np.arange(4), 3, 1)
    assert [int(x) for x in kind.lower(win.cols[0])[0]] == [2**62, 2**63, 3 * 2**62, 2 * 2**62 - 5, 2**62 - 5, -5]
    small = kind.reduce(lift(kind, events[3:], "int", "int"), np.array([0]))
    assert small["s"].dtype == np.int64  # int64 while a bound proves it exact


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint64, np.float32, np.bool_])
def test_narrow_and_unsigned_dtypes_fold_without_wrapping(dtype):
    """Partials may come straight from Arrow in their own dtype: sums widen, extremes keep it."""
    top = {np.int8: 100, np.int32: 2**30, np.uint8: 200, np.uint64: 2**63 + 7, np.float32: 1.5, np.bool_: True}[dtype]
    values = np.array([top, top, 0, top, top], dtype=dtype)
    nulls = np.array([False, False, False, True, False])
    plain = float if dtype is np.float32 else int
    group, pane = np.zeros(5, dtype=np.int64), np.arange(5)
    for name, fold in [("sum", sum), ("max", max), ("min", min)]:
        kind = KINDS[name]
        cols = kind.lift(values, nulls, pane, pane)
        win = sliding([kind], [cols], group, pane, 3, 1)
        got, null = kind.lower(win.cols[0])
        for s, x, z in zip(win.start.tolist(), got.tolist(), null.tolist()):
            held = [plain(values[p]) for p in range(s, s + 3) if 0 <= p < 5 and not nulls[p]]
            assert z == (not held) and (z or plain(x) == fold(held)), (name, s, x, held)
        whole = kind.lower(kind.reduce(cols, np.array([0])))[0][0]
        assert plain(whole) == fold(plain(v) for v, z in zip(values, nulls) if not z)
        twice, null = kind.lower(kind.merge(cols, cols))
        assert [None if z else plain(x) for x, z in zip(twice.tolist(), null.tolist())] == [
            None if z else fold([plain(v), plain(v)]) for v, z in zip(values, nulls)
        ]


# --------------------------------------------------------------------------- windows


def naive_sliding(events, pane_len, size, step, phase):
    """{(group, start): events} of every window holding an event."""
    out: dict[tuple[int, int], list] = {}
    for e in events:
        p = e[1] // pane_len
        for s in range(p - size + 1, p + 1):
            if s % step == phase % step:
                out.setdefault((e[0], s), []).append(e)
    return out


def check_windows(names, win, expected, size, events):
    keys = list(zip(win.group.tolist(), win.start.tolist()))
    groups = {g: payload([e for e in events if e[0] == g]) for g, _ in keys}
    assert keys == sorted(expected), (keys, sorted(expected))
    assert (win.end - win.start == size).all()
    for name, cols in zip(names, win.cols):
        values, nulls = KINDS[name].lower(cols)
        for i, key in enumerate(keys):
            check(name, values[i], nulls[i], payload(expected[key]), groups[key[0]])


@hsettings(max_examples=150)
@given(
    data=st.data(),
    vt_ot=types(),
    size=st.integers(1, 9),
    step=st.integers(1, 9),
    phase=st.integers(-5, 12),
    pane_len=st.sampled_from([1, 3]),
)
def test_sliding_matches_per_window_recomputation(data, vt_ot, size, step, phase, pane_len):
    vtype, otype = vt_ot
    size, step = max(size, step), min(size, step)
    events = data.draw(event_lists(vtype, otype, max_size=40))
    names = VALUE_KINDS[vtype]
    group, pane, cols = slices(names, events, vtype, otype, pane_len)
    win = sliding([KINDS[n] for n in names], cols, group, pane, size, step, phase)
    check_windows(names, win, naive_sliding(events, pane_len, size, step, phase), size, events)


@hsettings(max_examples=60)
@given(data=st.data(), size=st.integers(1, 40), step=st.integers(1, 40), phase=st.integers(0, 40))
def test_sliding_sparse_groups_with_long_gaps(data, size, step, phase):
    """Few events far apart (gaps >= size split clusters), dense bursts, several groups."""
    size, step = max(size, step), min(size, step)
    events = data.draw(event_lists("float", "int", max_size=25, spread=5000))
    names = ["sum", "min", "max", "var_pop", "first", "max_by", "count"]
    group, pane, cols = slices(names, events, "float", "int", 1)
    win = sliding([KINDS[n] for n in names], cols, group, pane, size, step, phase)
    check_windows(names, win, naive_sliding(events, 1, size, step, phase), size, events)


@hsettings(max_examples=80)
@given(
    data=st.data(),
    factor=st.integers(1, 5),
    cphase=st.integers(-3, 7),
    size=st.integers(1, 6),
    step=st.integers(1, 6),
    phase=st.integers(0, 6),
)
def test_coarsen_then_sliding_equals_sliding_on_the_fine_grid(data, factor, cphase, size, step, phase):
    size, step = max(size, step), min(size, step)
    events = data.draw(event_lists("int", "float", max_size=40))
    names = list(KINDS)
    kinds = [KINDS[n] for n in names]
    group, pane, cols = slices(names, events, "int", "float", 1)
    cg, cp, ccols = coarsen(kinds, cols, group, pane, factor, cphase)
    assert (np.diff(cg) >= 0).all() and all((np.diff(cp[cg == g]) > 0).all() for g in set(cg.tolist()))
    coarse = sliding(kinds, ccols, cg, cp, size, step, phase)
    fine = sliding(kinds, cols, group, pane, size * factor, step * factor, phase * factor + cphase)
    assert coarse.group.tolist() == fine.group.tolist()
    assert (coarse.start * factor + cphase).tolist() == fine.start.tolist()
    for kind, a, b in zip(kinds, coarse.cols, fine.cols):
        (av, an), (bv, bn) = kind.lower(a), kind.lower(b)
        assert an.tolist() == bn.tolist()
        for x, y, null in zip(av.tolist(), bv.tolist(), an.tolist()):
            assert null or same(x, y) or math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-6), (kind, x, y)


def naive_sessions(events, gap):
    """{(group, start): (end, events)}: an event joins the session whose last event is >= t - gap."""
    out: dict[tuple[int, int], tuple[int, list]] = {}
    current: dict[int, tuple[int, int]] = {}
    for e in events:
        g, t = e[0], e[1]
        if g in current and t <= current[g][1] + gap:
            key = (g, current[g][0])
            current[g] = (current[g][0], max(current[g][1], t))
        else:
            key = (g, t)
            current[g] = (t, t)
            out[key] = (0, [])
        out[key] = (current[g][1] + gap, out[key][1] + [e])
    return out


@hsettings(max_examples=120)
@given(data=st.data(), vt_ot=types(), gap=st.integers(1, 12), div=st.integers(1, 12))
def test_sessions_match_a_naive_session_builder(data, vt_ot, gap, div):
    vtype, otype = vt_ot
    events = data.draw(event_lists(vtype, otype, max_size=40))
    pane_len = max(1, min(div, gap))  # slices no longer than a gap
    names = ["times", *[n for n in VALUE_KINDS[vtype] if n != "times"]]
    group, pane, cols = slices(names, events, vtype, otype, pane_len)
    win = sessions([KINDS[n] for n in names], cols, group, cols[0]["lo"], cols[0]["hi"], gap)
    expected = naive_sessions(events, gap)
    keys = list(zip(win.group.tolist(), win.start.tolist()))
    assert keys == sorted(expected)
    assert win.end.tolist() == [expected[k][0] for k in keys]
    for name, c in zip(names, win.cols):
        values, nulls = KINDS[name].lower(c)
        for i, key in enumerate(keys):
            check(name, values[i], nulls[i], payload(expected[key][1]))


def test_sessions_exact_gap_and_single_events():
    kind = KINDS["count"]
    t = np.array([0, 10, 20, 31, 100], dtype=np.int64)
    g = np.zeros(5, dtype=np.int64)
    cols = kind.lift(t, None, t, np.arange(5))
    win = sessions([kind], [cols], g, t, t, 10)
    assert win.start.tolist() == [0, 31, 100] and win.end.tolist() == [30, 41, 110]
    assert win.cols[0]["n"].tolist() == [3, 1, 1]


@hsettings(max_examples=100)
@given(
    values=st.lists(st.integers(-50, 50), max_size=40),
    groups=st.lists(st.integers(0, 3), max_size=40),
)
def test_running_max_restarts_at_each_group(values, groups):
    n = min(len(values), len(groups))
    group = np.sort(np.array(groups[:n], dtype=np.int64))
    vals = np.array(values[:n], dtype=np.int64)
    want, best = [], None
    for i in range(n):
        best = vals[i] if i == 0 or group[i] != group[i - 1] else max(best, vals[i])
        want.append(int(best))
    assert _running_max(vals, group).tolist() == want


def test_empty_input_gives_no_windows():
    names = ["sum", "first", "var_pop"]
    group, pane, cols = slices(names, [], "int", "int", 1)
    kinds = [KINDS[n] for n in names]
    for win in (sliding(kinds, cols, group, pane, 5, 2), sessions(kinds, cols, group, pane, pane, 3)):
        assert len(win.group) == len(win.start) == len(win.end) == 0
        assert all(len(a) == 0 for c in win.cols for a in c.values())


def test_grid_is_the_longest_common_pane():
    assert grid([("sliding", 60, 20, 5), ("sliding", 40, 40, 15)]) == (10, 5)
    assert grid([("sliding", 60, 10, 5), ("sliding", 30, 30, 12)]) == (1, 0)
    assert grid([("sliding", 60, 20, 7)]) == (20, 7)
    assert grid([("sliding", 60, 20, 7), ("session", 30)]) == (10, 7)
    assert grid([("session", 12), ("session", 18)]) == (6, 0)
    with pytest.raises(ValueError):
        grid([])
