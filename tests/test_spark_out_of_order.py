"""Out-of-order micro-batches through the Spark operator (issue #16), against Spark's own
streaming ``groupBy(k, window(...))``: seeded random streams where each event arrives a
random lag after its time (up to four micro-batches late, some behind the watermark and
dropped), many events at equal times, several keys, tumbling and sliding windows (panes
shorter than the slide too). Time windows of commutative aggregations put each batch's
events into their panes as they come (:mod:`mta.watermarked.panes`)."""

from __future__ import annotations

import random

import pytest

from test_spark_late import DELAY, compare

BATCH = 30  # seconds of arrival time per micro-batch


def disordered_stream(seed: int, size: int, slide: int, batches: int = 8, per_batch: int = 40,
                      lag: int = 4 * BATCH) -> list[list[tuple]]:
    """Micro-batches of (key, seconds, v, x) in arrival order: event times drawn at random
    (whole seconds, so many are equal), half of them arriving within 10 s, the others 0 to
    ``lag`` seconds after their time.
    Checked to hold late events (all their windows closed by the previous batch's watermark,
    Spark's rule) and events of a sliding window that miss some of their windows only."""
    rng = random.Random(seed)
    arrivals = []
    for _ in range(batches * per_batch):
        t = 1000 + rng.randrange(batches * BATCH)
        arrival = t + rng.randrange(10 if rng.random() < 0.5 else lag)
        arrivals.append((arrival, (rng.choice(["k0", "k1", "k2", "k3"]), t, rng.randrange(-50, 100),
                                   rng.uniform(-1, 1))))
    arrivals.sort(key=lambda a: a[0])
    out: list[list[tuple]] = [[] for _ in range(batches + lag // BATCH + 1)]
    for arrival, row in arrivals:
        out[(arrival - 1000) // BATCH].append(row)
    out = [rows for rows in out if rows]
    late = partly = 0
    previous, newest = 0, None
    for rows in out:
        for _, t, _, _ in rows:
            ends = [s + size for s in range(t - t % slide, t - size, -slide)]
            closed = sum(end <= previous for end in ends)
            late += closed == len(ends)
            partly += 0 < closed < len(ends)
        newest = max([t for _, t, _, _ in rows] + ([newest] if newest is not None else []))
        previous = max(previous, newest - DELAY)  # the next batch's W[n-1]
    assert late and (partly or size == slide), (late, partly)
    return out


@pytest.mark.parametrize("seed, size, slide", [(11, 20, 20), (12, 30, 10), (13, 45, 15), (14, 40, 25)])
def test_out_of_order_micro_batches_give_spark_streaming_rows(spark, tmp_path, seed, size, slide) -> None:
    compare(spark, tmp_path, disordered_stream(seed, size, slide), f"{size} seconds", f"{slide} seconds")
