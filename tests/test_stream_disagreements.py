"""Where the Stream engine and STREAM-SPEC disagree now: minimal reproductions found by the
oracle (tests/stream_oracle.py) and test_stream_properties.py, one test each, expected values
from the spec. They fail until the engine is fixed, then move to test_stream_regressions.py."""

from __future__ import annotations

import pytest

from mta import Stream, Sum
from mta.windows import Session, Tumbling


def rows(results):
    return [(r.query, r.start, r.end, r.value, r.count, r.final, tuple(r.replaces)) for r in results]


@pytest.mark.parametrize("final", ["eager", "fiba", "lazy", "amta", "auto"])
def test_eager_stores_keep_a_tuple_waiting_at_the_watermark(final):
    """With final="eager" or "fiba", the tuple at 6 (= the watermark, value 1) is counted in
    [3, 8) and [4, 7) but missing from their sums (1110 and 1010 instead of 1111 and 1011) once
    late tuples at 3 and 5 split the slices around it; lazy, amta and auto are right."""
    s = Stream(Sum(), allowed_lateness=3, final=final)
    s.add("t", Tumbling(3, offset=1))
    s.add("s", Session(2))
    s.insert(6, 1)
    s.insert(4, 10)
    assert rows(s.advance(6)) == [("s", 4, 6, 10, 1, True, ())]
    s.insert(3, 100)
    s.insert(5, 1000)
    assert rows(s.advance(6)) == [("t", 1, 4, 100, 1, False, ())]
    assert rows(s.advance(46)) == [("s", 3, 8, 1111, 4, False, ((4, 6),)), ("t", 4, 7, 1011, 3, True, ())]
