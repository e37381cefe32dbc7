"""The variance family of mta.columnar against the exact variance (fractions.Fraction) on
values whose magnitude dwarfs their spread (longs near 2**40, 2**52, 3e15 within +-8) and on
mixed magnitudes: partials keep their mean relative to a ref value, so the error is a few
ulps of the variance, not of the values (an absolute float mean's rounding, squared by Chan's
merge, was off by 25% here). Through every path: lift, reduce (slices), merge, sliding,
the streaming state with its snapshots (one taken before ``ref`` existed too)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from hypothesis import given, strategies as st

from conftest import hsettings
from kvs import codec
from mta.columnar import KINDS, sliding
from mta.columnar.state import KeyState

NAMES = ("var_pop", "var_samp", "stddev_pop", "stddev_samp")
#: A window's variance within this many ulps of the exact one (measured: under 2).
ULPS = 8


def exact(name: str, xs: list[int]) -> tuple[float, bool]:
    """(value, null) of ``name`` over ``xs``, exactly rounded (stddev: the sqrt of that)."""
    ddof = 1 if name.endswith("_samp") else 0
    if len(xs) <= ddof:
        return 0.0, True
    mean = Fraction(sum(xs), len(xs))
    var = float(sum((x - mean) ** 2 for x in xs) / (len(xs) - ddof))
    return (math.sqrt(var) if name.startswith("stddev") else var), False


def close(name: str, got: float, want: float) -> bool:
    """Within :data:`ULPS` ulps (of the variance: a stddev is squared back)."""
    if name.startswith("stddev"):
        got, want = got * got, want * want
    return abs(got - want) <= ULPS * math.ulp(want) + (0.0 if want else 1e-300)


@st.composite
def events(draw) -> list[tuple[int, int]]:
    """(time, value) sorted by time: values near one large base, some (mixed) near 0 or far off."""
    base = draw(st.sampled_from([2**40, -(2**40), 2**52, 3 * 10**15, 0]))
    near = st.integers(base - 8, base + 8)
    value = near | st.integers(-100, 100) if draw(st.booleans()) else near
    times = draw(st.lists(st.integers(0, 40), min_size=1, max_size=40))
    return sorted((t, draw(value)) for t in times)


def windows_of(evts, pane_len, size, step):
    """{window start pane: its values} of every window holding an event."""
    out: dict[int, list[int]] = {}
    for t, v in evts:
        p = t // pane_len
        for s in range(p - size + 1, p + 1):
            if s % step == 0:
                out.setdefault(s, []).append(v)
    return out


def slices(evts, pane_len):
    kinds = [KINDS[n] for n in NAMES]
    times = np.array([t for t, _ in evts], np.int64)
    values = np.array([v for _, v in evts], np.int64)
    pane = times // pane_len
    starts = np.concatenate(([0], np.flatnonzero(pane[1:] != pane[:-1]) + 1))
    lifted = [k.lift(values, None, times, np.arange(len(evts))) for k in kinds]
    return kinds, pane[starts], [k.reduce(c, starts) for k, c in zip(kinds, lifted)], lifted


@hsettings(max_examples=200)
@given(evts=events(), pane_len=st.sampled_from([1, 2, 5]), size=st.integers(1, 9), step=st.integers(1, 9))
def test_sliding_variance_of_large_values_is_within_ulps_of_the_exact_one(evts, pane_len, size, step) -> None:
    size, step = max(size, step), min(size, step)
    kinds, pane, cols, _ = slices(evts, pane_len)
    win = sliding(kinds, cols, np.zeros(len(pane), np.int64), pane, size, step, 0)
    want = windows_of(evts, pane_len, size, step)
    assert sorted(want) == win.start.tolist()
    for name, kind, c in zip(NAMES, kinds, win.cols):
        got, null = kind.lower(c)
        for s, g, z in zip(win.start.tolist(), got, null):
            w, wz = exact(name, want[s])
            assert bool(z) == wz and (wz or close(name, g, w)), (name, s, g, w, want[s])


@hsettings(max_examples=200)
@given(evts=events(), cut=st.integers(0, 40))
def test_reduce_and_merge_of_large_values_are_within_ulps_of_the_exact_one(evts, cut) -> None:
    kinds, _, _, lifted = slices(evts, 1)
    cut = min(cut, len(evts))
    xs = [v for _, v in evts]
    for name, kind, c in zip(NAMES, kinds, lifted):
        whole = kind.reduce(c, np.array([0]))
        parts = kind.reduce(c, np.array([0, cut]) if 0 < cut < len(evts) else np.array([0]))
        merged = kind.merge({f: a[:1] for f, a in parts.items()}, {f: a[-1:] for f, a in parts.items()}) \
            if len(parts["n"]) == 2 else parts
        rows = kind.merge(c, kind.identity(len(evts), c))  # identity on the right keeps each row
        w, wz = exact(name, xs)
        for folded in (whole, merged):
            got, null = kind.lower(folded)
            assert bool(null[0]) == wz and (wz or close(name, got[0], w)), (name, got[0], w, xs)
        assert all(np.array_equal(rows[f], c[f]) for f in kind.fields)


def test_the_outside_testers_windows_through_the_state_and_its_snapshots() -> None:
    """The reported case: var_pop over 2.5 s windows sliding by 500 ms (panes of 500 ms) was
    3.6874287935594716 for the window at 12 s, exactly 3.6875; every window within ulps."""
    evts = [(12_125_053, 1099511627781), (13_563_588, 1099511627780), (14_459_337, 1099511627776),
            (13_454_807, 1099511627780)]
    kinds = [KINDS[n] for n in NAMES]
    query = ("sliding", 2_500_000, 500_000, 0)
    for batches in ([evts], [[e] for e in evts]):  # one micro-batch, or one per event
        state = KeyState(kinds, [query], 500_000, 0)
        for seq, batch in enumerate(batches):
            state = KeyState(kinds, [query], 500_000, 0, state.snapshot())
            times = np.array([t for t, _ in batch], np.int64)
            values = np.array([v for _, v in batch], np.int64)
            state.add(times, np.arange(seq * 10, seq * 10 + len(batch)),
                      [k.lift(values, None, times, np.arange(len(batch))) for k in kinds])
        (win,) = state.advance(math.inf)
        assert win.start.tolist() == list(range(10_000_000, 14_500_000, 500_000))
        for name, kind, c in zip(NAMES, kinds, win.cols):
            got, null = kind.lower(c)
            for s, e, g, z in zip(win.start.tolist(), win.end.tolist(), got, null):
                w, wz = exact(name, [v for t, v in evts if s <= t < e])
                assert bool(z) == wz and (wz or close(name, g, w)), (name, s, g, w)
                if name == "var_pop" and s == 12_000_000:
                    assert abs(g - 3.6875) <= 2 * math.ulp(3.6875)


def test_a_snapshot_taken_before_ref_existed_reads_its_means_as_absolute() -> None:
    """Snapshots of format 1 held (n, mean, m2) with absolute means: they restore with ref 0."""
    kind = KINDS["var_pop"]
    query = ("sliding", 10, 10, 0)
    state = KeyState([kind], [query], 10, 0)
    state.add(np.array([1, 2, 12]), np.arange(3), [kind.lift(np.array([3, 5, 7]), None, np.array([1, 2, 12]),
                                                             np.arange(3))])
    held = state.cols[0]
    assert held["ref"].tolist() == [3.0, 7.0] and held["mean"].tolist() == [1.0, 0.0]
    snap = codec.unpack(state.snapshot())
    old = {"n": held["n"], "mean": held["ref"] + held["mean"], "m2": held["m2"]}
    snap["cols"] = ({name: (a.dtype.str, a.tobytes()) for name, a in old.items()},)
    restored = KeyState([kind], [query], 10, 0, codec.pack(snap))
    assert restored.cols[0]["ref"].tolist() == [0.0, 0.0]
    assert restored.cols[0]["mean"].tolist() == [4.0, 7.0]
    restored.add(np.array([13]), np.array([3]), [kind.lift(np.array([9]), None, np.array([13]), np.array([3]))])
    (win,) = restored.advance(math.inf)
    assert kind.lower(win.cols[0])[0].tolist() == [1.0, 1.0]
