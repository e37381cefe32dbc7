"""The per-key windows a watermark closes (:mod:`mta.watermarked`: the Spark operator's engine
off its columnar path) against naive recomputation of Spark's windows (no Spark needed)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings as hsettings, strategies as st

from mta import Window
from mta.monoid import Collect, Sum
from mta.watermarked import KeyWindow, Windowing
from mta.watermarked.held import window_policy


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
    """Fed in micro-batches that advance to rising watermarks, with late events (all their
    windows closed) mixed in, through a state round trip each time: the rows of the batch
    run, up to the last watermark."""
    untils = sorted(untils)
    stream = KeyWindow(Collect(), Windowing(size=size, slide=slide))
    on_time, rows, dropped, done = [], [], 0, -math.inf
    for until in [*untils, math.inf]:
        piece = [e for e in events if done <= e[0] < until]
        stale = [e for e in late if e[0] % slide < size and e[0] - e[0] % slide + size <= done]  # all closed
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


@given(events_strategy, st.integers(1, 30), st.integers(1, 30), st.lists(st.integers(-40, 130), max_size=6),
       st.sampled_from(["time", "policy", "event"]))
@hsettings(max_examples=120, deadline=None)
def test_a_window_whose_levels_live_in_a_store_gives_the_rows_of_one_in_lists(events, size, slide, untils,
                                                                              kind) -> None:
    """Reopened from the store at every piece, with tiny buffers and caches (every
    eviction and oldest-time read goes to the store): the rows of the listed window."""
    import kvs

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


def spark_streaming_windows(batches: list[tuple[list[tuple[int, int]], int]], size: int, slide: int,
                            offset: int = 0):
    """Spark's streaming ``groupBy(window(ts, size, slide))`` in append mode, naively, for one
    key: ``batches`` are (events arriving, the batch's watermark). A window takes an event
    of batch n iff its end is after the watermark of batch n - 1 (none before the first);
    it is reported, with every event it took, in the first batch whose watermark reaches
    its end; windows start at ``offset + k * slide``. Returns the rows as (batch, start, end, sorted values) and the events that no
    window took although some window holds them."""
    held, reported, rows, late, previous = {}, set(), [], 0, -math.inf
    for n, (events, watermark) in enumerate(batches):
        for t, v in events:
            starts = list(range(t - (t - offset) % slide, t - size, -slide))  # the windows holding t
            taken = [s for s in starts if s + size > previous]
            for s in taken:
                held.setdefault(s, []).append(v)
            late += bool(starts) and not taken
        for s in sorted(held):
            if s + size <= watermark and s not in reported:
                reported.add(s)
                rows.append((n, s, s + size, sorted(held[s])))
        previous = watermark
    return rows, late


def run_like_the_processor(batches, windowing: Windowing, stored: bool = False):
    """What :class:`spark_integration.streaming.MTAProcessor` does with one key: in a batch
    with its events, catch up to the previous batch's watermark, add them, advance to the
    batch's; in a batch without, advance only when its timer (at ``next_report``) fires.
    The window's state makes a round trip (and a stored window is reopened) at every call."""
    import kvs

    backend, state, rows, previous = kvs.connect("memory://"), None, [], -math.inf
    policy = window_policy(windowing, stored=True)
    for n, (events, watermark) in enumerate(batches):
        window = None
        if stored:
            window = (Window(Collect(), policy, store=backend, window_id="w", buffer_size=1, cache_size=1,
                             block_size=2) if state is None else Window.open(backend, "w", Collect(), policy))
        key = KeyWindow(Collect(), windowing, state, stored=window)
        wake = key.next_report()
        out = []
        if events:
            if previous > key.done:
                out += key.advance(previous)
            key.add([t for t, _ in events], Collect().lift_many([v for _, v in events]))
            out += key.advance(watermark) if watermark > key.done else []
        elif wake is not None and wake <= watermark:
            out += key.advance(watermark)
        rows += [(n, start, end, sorted(values)) for start, end, values in lowered(out)]
        state = key.state()
        if stored:
            window.close()
        previous = watermark
    return rows, state["late"]


batches_strategy = st.lists(st.tuples(st.lists(st.tuples(st.integers(-30, 150), st.integers(0, 10**6)), max_size=8),
                                      st.integers(0, 40)), min_size=1, max_size=8)


@given(batches_strategy, st.integers(-40, 60), st.integers(1, 40), st.integers(1, 40), st.integers(-39, 39),
       st.booleans())
@hsettings(max_examples=300, deadline=None)
def test_a_stream_takes_late_events_as_spark_does(batches, start, size, slide, offset, stored) -> None:
    """Spark's rule, against its naive model: events behind the current watermark still
    count in every window that the previous batch's watermark left open (the others of a
    sliding window miss them); a key idle for batches learns nothing until its timer or
    its next events; rows come out in the batch Spark reports them in. Windows start at
    ``offset + k * slide`` (Spark's startTime, ``abs(offset) < slide``)."""
    offset = int(math.copysign(abs(offset) % slide, offset))
    watermarks, level = [], start
    for _, step in batches:
        level += step
        watermarks.append(level)
    fed = [(events, watermark) for (events, _), watermark in zip(batches, watermarks)]
    assert run_like_the_processor(fed, Windowing(size=size, slide=slide, offset=offset), stored) == \
        spark_streaming_windows(fed, size, slide, offset)


def test_a_straggler_counts_in_its_open_windows_only() -> None:
    """A sliding window (20, every 10) whose window [70, 90) was reported at watermark 95:
    an event at 85 misses it but counts in [80, 100), whose events up to 90 are already in
    the MTA window; one at 75 misses both of its windows and is late."""
    key = KeyWindow(Sum(), Windowing(size=20, slide=10))
    key.add([72, 81, 88, 93], [1, 10, 100, 1000])
    assert key.advance(95) == [(60, 80, 1), (70, 90, 111)]
    assert key.add([85, 75], [10_000, 100_000]) == [1] and key.late == 1
    key = KeyWindow(Sum(), Windowing(size=20, slide=10), key.state())  # the straggler survives a round trip
    assert key.advance(130) == [(80, 100, 11110), (90, 110, 1000)]


@given(batches_strategy, st.integers(-40, 60), st.integers(1, 30), st.sampled_from(["policy", "event"]))
@hsettings(max_examples=150, deadline=None)
def test_policy_windows_and_reactive_rows_drop_only_the_events_of_closed_rows(batches, start, slide, emit) -> None:
    """The same rule beyond Spark's windows: an event of a batch is late only when its row
    (its slide interval; with emit="event" the row right after it) ended at or before the
    previous batch's watermark; the others give the batch run's rows, in time order."""
    def policy(total, old):
        return len(total.value) - len(old.value) >= 3

    windowing = Windowing(slide=slide if emit == "policy" else None, policy=policy,
                          emit="window" if emit == "policy" else "event")
    watermarks, level = [], start
    for _, step in batches:
        level += step
        watermarks.append(level)
    fed = [(events, watermark) for (events, _), watermark in zip(batches, watermarks)]
    rows, late = run_like_the_processor(fed, windowing)

    def row_end(t):
        return -((-(t + 1)) // slide) * slide if emit == "policy" else t + 1

    taken, previous = [], -math.inf
    for events, watermark in fed:
        taken += [e for e in events if row_end(e[0]) > previous]
        previous = watermark
    batch = KeyWindow(Collect(), windowing)
    taken.sort(key=lambda e: e[0])
    batch.add([t for t, _ in taken], Collect().lift_many([v for _, v in taken]))
    expected = [row for row in lowered(batch.advance(math.inf)) if row_end(row[1] - 1) <= watermarks[-1]] \
        if emit == "policy" else [row for row in lowered(batch.advance(math.inf)) if row[0] < watermarks[-1]]
    assert [row[1:] for row in rows] == [(s, e, sorted(v)) for s, e, v in expected]
    assert late == sum(len(events) for events, _ in fed) - len(taken)
