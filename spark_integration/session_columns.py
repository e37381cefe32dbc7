"""Session windows on Spark DataFrames: the columns the operator adds before a key's
:class:`~mta.watermarked.sessions.SessionWindow` sees its events (each event's end with a
dynamic gap, and on a stream the watermark Spark's ``session_window`` has)."""

from __future__ import annotations

from typing import Any, Callable

#: The column of each event's session end (µs) when the gap is dynamic.
SESSION_END = "mta_session_end"
#: Streaming: each event's ``time + gap`` as a timestamp, carrying the watermark.
SESSION_WATERMARK = "mta_session_watermark"


def session_watermark(df: Any, time_micros: Any, gap: int, delay: int) -> Any:
    """``df`` with the watermark Spark's ``session_window`` has, on a column that makes
    Spark drop the late events as its session aggregation does (``time_micros``: the
    event time in microseconds, as the operator aligns it).

    Spark's watermark is ``max(time) - delay``; its session aggregation drops an event
    when ``time + gap`` is at or before the previous micro-batch's watermark (which a
    stateful processor is not told). A watermark on ``time + gap`` with delay ``delay +
    gap`` has the same value, and ``transformWithStateInPandas`` drops exactly the rows
    whose ``time + gap`` is at or before the previous micro-batch's watermark."""
    from pyspark.sql import functions as F

    end = F.timestamp_micros(time_micros + F.lit(gap))
    return df.withColumn(SESSION_WATERMARK, end).withWatermark(SESSION_WATERMARK, f"{delay + gap} microseconds")


def dynamic_session_end(df: Any, time: str, gap: Any, kind: str, to_micros: Callable[[Any, str], Any]) -> Any:
    """``df`` with each event's session end (µs, by ``to_micros`` of a ``kind`` time) by
    Spark's own arithmetic (``time + gap`` in the session time zone), without the rows
    Spark's ``session_window`` drops: a null time, or a gap that is null, zero or negative."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    probe = df.select(gap.alias("gap")).schema["gap"].dataType
    interval = gap.cast("interval") if isinstance(probe, StringType) else gap
    df = df.withColumn(SESSION_END, to_micros(F.col(time) + interval, kind))
    start = to_micros(F.col(time), kind)
    return df.where(F.col(SESSION_END).isNotNull() & (F.col(SESSION_END) > start))
