"""The Spark operator's per-key engine against naive recomputation (no Spark needed)."""

from __future__ import annotations

import datetime
import math

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from mta import Window
from mta.monoid import Collect, Sum
from spark_integration import KeyWindow, Windowing, micros


def naive_time_windows(events: list[tuple[int, int]], size: int, slide: int,
                       offset: int = 0) -> list[tuple[int, int, list]]:
    """Spark's window(ts, size, slide, startTime=offset): every window [offset + k * slide, + size)
    holding an event, its values in time order."""
    starts = set()
    for t, _ in events:
        starts.update(s for s in range(t - size + 1, t + 1) if (s - offset) % slide == 0)
    ordered = sorted(events, key=lambda e: e[0])  # stable: ties keep arrival order
    return [(s, s + size, [v for t, v in ordered if s <= t < s + size]) for s in sorted(starts)]


def lowered(rows, monoid=Collect()):
    """The engine reports partials: the results are their lower."""
    return [(start, end, monoid.lower(partial)) for start, end, partial in rows]


events_strategy = st.lists(st.tuples(st.integers(-30, 120), st.integers(0, 10**6)), max_size=40)


@given(events_strategy, st.integers(1, 40), st.integers(1, 40), st.integers(-45, 45))
@hsettings(max_examples=300, deadline=None)
def test_time_windows_equal_spark_semantics(events, size, slide, offset) -> None:
    """Any start offset (Spark's startTime), negative times and offsets included."""
    window = KeyWindow(Collect(), Windowing(size=size, slide=slide, offset=offset))
    window.add([t for t, _ in events], Collect().lift_many([v for _, v in events]))
    assert lowered(window.advance(math.inf)) == naive_time_windows(events, size, slide, offset)


@given(events_strategy, st.integers(1, 30), st.integers(1, 30), st.lists(st.integers(-40, 130), max_size=6),
       st.lists(st.tuples(st.integers(-40, 130), st.integers(0, 9)), max_size=5))
@hsettings(max_examples=200, deadline=None)
def test_a_stream_of_pieces_gives_the_batch_rows_and_drops_only_the_late(events, size, slide, untils, late) -> None:
    """Fed in micro-batches that advance to rising watermarks, with late events mixed in,
    through a state round trip each time: the rows of the batch run, up to the last watermark."""
    untils = sorted(untils)
    stream = KeyWindow(Collect(), Windowing(size=size, slide=slide))
    on_time, rows, dropped, done = [], [], 0, -math.inf
    for until in [*untils, math.inf]:
        piece = [e for e in events if done <= e[0] < until]
        stale = [e for e in late if e[0] < done]
        stream = KeyWindow(Collect(), Windowing(size=size, slide=slide), stream.state())
        indices = stream.add([t for t, _ in piece + stale], Collect().lift_many([v for _, v in piece + stale]))
        assert sorted(indices) == list(range(len(piece), len(piece) + len(stale)))
        rows += stream.advance(until)
        on_time += piece
        dropped += len(stale)
        done = max(done, until)
    assert stream.late == dropped
    assert lowered(rows) == naive_time_windows(on_time, size, slide)


@given(events_strategy, st.integers(1, 30), st.sampled_from(["window", "event"]))
@hsettings(max_examples=150, deadline=None)
def test_policy_windows_and_reactive_rows_equal_a_naive_window(events, slide, emit) -> None:
    """The paper's section 3.2 policy (keep the newest whose sum stays <= 10) on Sum and Collect."""
    def policy(total, old):
        return total.value[0] - old.value[0] > 10

    from mta.monoid import Record

    monoid = Record(total=Sum(), items=Collect())
    values = [{"total": v % 5, "items": v} for _, v in events]
    window = KeyWindow(monoid, Windowing(slide=slide if emit == "window" else None, policy=policy, emit=emit))
    window.add([t for t, _ in events], monoid.lift_many(values))
    rows = lowered(window.advance(math.inf), monoid)
    oracle = Window(monoid, policy, algorithm="naive")
    ordered = sorted(zip([t for t, _ in events], values), key=lambda e: e[0])
    expected = []
    if emit == "event":
        for t, v in ordered:
            oracle.insert(t, v)
            expected.append((t, t, oracle.query()))
    else:
        i = 0
        while i < len(ordered):
            end = -((-(ordered[i][0] + 1)) // slide) * slide
            times = []
            while i < len(ordered) and ordered[i][0] < end:
                oracle.insert(*ordered[i])
                times.append(ordered[i][0])
                i += 1
            kept = [t for t, _ in ordered[:i]][i - len(oracle):]
            expected.append((kept[0], end, oracle.query()))
    assert rows == expected


def test_bad_windowing_is_refused() -> None:
    with pytest.raises(ValueError, match="size"):
        Windowing()
    with pytest.raises(ValueError, match="slide must be a positive"):
        Windowing(size=10, slide=0)
    with pytest.raises(ValueError, match="once per slide"):
        Windowing(policy=lambda total, old: False)
    with pytest.raises(ValueError, match="emit"):
        Windowing(size=10, emit="sometimes")
    with pytest.raises(ValueError, match="either size"):
        Windowing(size=10, slide=5, policy=lambda total, old: False)
    with pytest.raises(ValueError, match="offset must be an integer"):
        Windowing(size=10, offset=1.5)


@pytest.mark.parametrize("value, expected", [(2, 2_000_000), (0.5, 500_000),
                                             (datetime.timedelta(minutes=1, microseconds=3), 60_000_003)])
def test_durations(value, expected) -> None:
    """Numbers are seconds; interval strings are Spark's (tests/test_spark_dropin.py)."""
    assert micros(value) == expected


@pytest.mark.parametrize("bad", [-2, True, None, math.nan, datetime.timedelta(seconds=-1)])
def test_bad_durations_are_refused(bad) -> None:
    with pytest.raises((ValueError, TypeError), match="duration"):
        micros(bad)


@given(events_strategy, st.integers(1, 30), st.integers(1, 30), st.lists(st.integers(-40, 130), max_size=6),
       st.sampled_from(["time", "policy", "event"]))
@hsettings(max_examples=120, deadline=None)
def test_a_window_whose_levels_live_in_a_store_gives_the_rows_of_one_in_lists(events, size, slide, untils,
                                                                              kind) -> None:
    """Reopened from the store at every piece, with tiny buffers and caches (every
    eviction and oldest-time read goes to the store): the rows of the listed window."""
    import kvs
    from spark_integration.engine import window_policy

    def policy(total, old):
        return len(total.value) - len(old.value) >= 3 or total.last - old.last > size

    windowing = {"time": Windowing(size=size, slide=slide), "policy": Windowing(slide=slide, policy=policy),
                 "event": Windowing(size=size, emit="event")}[kind]
    backend = kvs.connect("memory://")
    stored_policy = window_policy(windowing, stored=True)
    listed = KeyWindow(Collect(), windowing)
    expected, got, state = [], [], None
    for number, until in enumerate([*sorted(untils), math.inf]):
        piece = [e for e in events if listed.done <= e[0] < until]
        times, values = [t for t, _ in piece], Collect().lift_many([v for _, v in piece])
        listed.add(times, values)
        expected += listed.advance(until)
        window = (Window(Collect(), stored_policy, store=backend, window_id="w", buffer_size=1, cache_size=1,
                         block_size=2) if number == 0 else Window.open(backend, "w", Collect(), stored_policy))
        stream = KeyWindow(Collect(), windowing, state, stored=window)
        stream.add(times, values)
        got += stream.advance(until)
        state = stream.state()
        assert "times" not in state and len(window) <= len(listed.window)
        window.close()
    assert lowered(got) == lowered(expected)
