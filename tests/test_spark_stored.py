"""The step protocol of windows kept in Redis (spark_integration.stored), without Spark:
a replayed call gets its output again and changes nothing; disagreements stop."""

from __future__ import annotations

import math
import uuid

import pytest

import kvs
from mta.monoid import Collect
from mta.watermarked import Windowing
from spark_integration.stored import Output, StoredKeys, delete_windows


def keys(redis_url: str) -> StoredKeys:
    return StoredKeys(redis_url, f"q{uuid.uuid4().hex[:8]}", Collect(), Windowing(size=10, slide=5))


def call(stored: StoredKeys, key: tuple, step: int, times: list[int], until: float) -> Output:
    """One processor call: open at Spark's ``step``, apply unless replayed, commit."""
    window, out = stored.open(key, step)
    if out is None:
        window.add(times, Collect().lift_many(times))
        out = Output(window.advance(until), window.late, [])
        stored.commit(window, step + 1, out)
    return out


def test_a_replayed_call_gets_its_output_again_and_is_not_applied_twice(redis_url) -> None:
    stored = keys(redis_url)
    first = call(stored, ("a",), 0, [1, 2, 3], 6)
    second = call(stored, ("a",), 1, [7, 8, 20], 16)  # Spark crashes before committing step 2
    replayed = call(stored, ("a",), 1, [7, 8, 20], 16)  # the replay: the same input
    assert replayed.rows == second.rows and replayed.rows  # window [5, 15) = (7, 8)
    assert Collect().lower(second.rows[-1][2]) == [7, 8]
    last = call(stored, ("a",), 2, [], math.inf)  # counted once: 20 alone in its windows
    assert [Collect().lower(p) for _, _, p in last.rows] == [[20], [20]]
    assert [Collect().lower(p) for _, _, p in first.rows] == [[1, 2, 3]]  # window [-5, 5)
    assert [Collect().lower(p) for _, _, p in call(stored, ("b",), 0, [4], 5).rows] == [[4]]  # its own window


def test_a_store_that_disagrees_with_spark_stops_the_query(redis_url) -> None:
    stored = keys(redis_url)
    call(stored, ("a",), 0, [1], 6)
    call(stored, ("a",), 1, [2], 6)
    with pytest.raises(kvs.StoreError, match="at step 2 but Spark's checkpoint at step 0"):
        stored.open(("a",), 0)  # e.g. the Redis windows of an earlier run of the query
    kvs.connect(redis_url).delete(stored.window_id(("a",)))
    with pytest.raises(kvs.StoreError, match="is gone, but Spark's checkpoint has 2 steps"):
        stored.open(("a",), 2)


def test_windows_are_named_per_query_and_key(redis_url) -> None:
    stored = keys(redis_url)
    call(stored, ("a", 1), 0, [1], 6)
    window_id = stored.window_id(("a", 1))
    assert window_id.startswith(stored.name + ":") and window_id != stored.window_id(("a", 2))
    assert kvs.connect(redis_url).meta(window_id)["labels"] == {"query": stored.name, "key": "['a', 1]"}
    with pytest.raises(ValueError, match="window id"):
        StoredKeys(redis_url, "no spaces", Collect(), Windowing(size=10))


def test_delete_windows_removes_one_querys_windows_only(redis_url) -> None:
    mine, other = keys(redis_url), keys(redis_url)
    for key in ("a", "b"):
        call(mine, (key,), 0, [1], 6)
    call(other, ("a",), 0, [1], 6)
    assert delete_windows(redis_url, mine.name) == 2
    assert call(mine, ("a",), 0, [2], 6).rows  # a fresh start at step 0
    assert other.open(("a",), 1)[1] is None  # untouched


def test_a_second_attempt_takes_a_key_over_and_the_first_fails_without_writing(redis_url) -> None:
    """A speculative or retried task attempt opens a key that an attempt still alive (or
    dead, its lease not yet expired) holds: it takes the key over at once, and the first
    attempt's commit raises WindowFenced and lands nothing."""
    stored = keys(redis_url)
    call(stored, ("a",), 0, [1, 2], 6)
    slow, _ = stored.open(("a",), 1)  # attempt 1 of the task at step 1, still running
    slow.add([7], Collect().lift_many([7]))
    slow_out = Output(slow.advance(16), slow.late, [])
    fast = call(stored, ("a",), 1, [7, 8], 16)  # attempt 2: takes the key over, commits step 2
    with pytest.raises(kvs.WindowFenced, match="another writer took it over"):
        stored.commit(slow, 2, slow_out)
    assert call(stored, ("a",), 1, [7, 8], 16).rows == fast.rows  # what Spark commits is attempt 2's
    assert Collect().lower(fast.rows[-1][2]) == [7, 8]
