"""MTA windows as a PySpark operator: keyed event-time windows over any monoid and
slide policy, on batch and streaming DataFrames (see :func:`window_aggregate`)."""

from mta.watermarked import KeyWindow, Windowing
from spark_integration.windows import micros, session, window_aggregate

__all__ = ["KeyWindow", "Windowing", "micros", "session", "window_aggregate"]
