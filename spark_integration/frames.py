"""What the per-key engine hands Spark: the internal columns of its frames, and each
key's output rows as a pandas DataFrame (the batch path's ``applyInPandas`` and the
streaming processor share them)."""

from __future__ import annotations

from typing import Any

from spark_integration.aggregations import Aggregations
from spark_integration.columnar import END, START
from spark_integration.stored import Output

#: The event time in microseconds (internal columns carry no leading underscore: TWS builds
#: its frames through itertuples).
TIME = "mta_time"
#: The side output: a late event's time.
LATE_TIME = "mta_late_time"


def late_column(column: str) -> str:
    """The internal column of input ``column`` in a late event of the side output."""
    return f"mta_late_{column}"


def frame(key: tuple, keys: list[str], aggs: Aggregations, out: Output, side: list[str] | None) -> Any:
    """The output rows of one key as a pandas DataFrame (each field lowered column by
    column); with ``side`` (the input columns), the late events after them."""
    import pandas as pd

    rows, extra = out.rows, len(out.late_events or ()) if side is not None else 0
    n = len(rows) + extra
    data: dict[str, Any] = {k: [v] * n for k, v in zip(keys, key)}
    data[START] = [r[0] for r in rows]
    data[END] = [r[1] for r in rows]
    for i, name in enumerate(aggs.columns):  # the Record's fields, in order
        data[name] = aggs.lower(name, [r[2][i] for r in rows], extra)
    data["late"] = [out.late] * n
    columns = [*keys, START, END, *aggs.columns, "late"]
    if side is not None:
        columns += [LATE_TIME, *map(late_column, side)]
        events = list(zip(*out.late_events)) if extra else [()] * (1 + len(side))
        for column, values in zip([LATE_TIME, *map(late_column, side)], events):
            data[column] = [None] * len(rows) + list(values)
        if extra:  # object columns: ints and nulls stay ints and nulls
            for column in (START, END):
                data[column] = pd.Series(data[column] + [None] * extra, dtype=object)
    return pd.DataFrame(data, columns=columns)


def late_rows(frame: Any, indices: list[int], side: list[str]) -> list[tuple]:
    """The late events ``indices`` of a pandas ``frame``: (time, *side columns) as plain values."""
    picked = frame.iloc[indices]
    return list(zip(*(picked[c].tolist() for c in [TIME, *side])))
