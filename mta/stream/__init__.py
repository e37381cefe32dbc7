"""The Stream engine: many window queries over one stream, sharing slices (issue 17).

``Stream`` (one stream), ``KeyedStream`` (one state per key), ``Result``; window types
are in :mod:`mta.windows`, the final aggregation over slices in :mod:`mta.stream.final`.
"""

from mta.stream.engine import Stream
from mta.stream.keyed import KeyedStream
from mta.stream.queries import Result

__all__ = ["Stream", "KeyedStream", "Result"]
