"""Where the Stream engine and STREAM-SPEC disagree now: minimal reproductions found by the
oracle (tests/stream_oracle.py) and test_stream_properties.py, one test each, expected values
from the spec. They fail until the engine is fixed, then move to test_stream_regressions.py."""

from __future__ import annotations

from mta import Stream, Sum
from mta.windows import Sliding


def test_a_tuple_in_a_gap_between_sliding_windows_belongs_to_none():
    """Sliding(1, 3): windows [3k, 3k + 1); 1 and 2 fall in gaps. After an advance between them,
    the engine counts the tuple at 2 into [3, 4) (reported with value 7, count 1). Since main
    7663eba ("a new slice never starts before where the dropped slices ended")."""
    s = Stream(Sum())
    s.add("w", Sliding(1, 3))
    s.insert(1, 5)
    assert s.advance(2) == []
    s.insert(2, 7)
    assert s.advance(42) == []
