"""The engine on durable backends: the sqlite file store, a real Redis server and a
3-master Redis Cluster.

The property-based suite of test_algorithms.py runs unchanged on each backend,
with tiny write buffers, caches and blocks so that every path (commits, cache
misses and refills, background deletes, bulk evictions across blocks) is taken,
and a window reopened from its last checkpoint must carry on exactly like the
one that was never closed.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

import kvs
from conftest import TREE_ALGORITHMS, hsettings, new_window_store
from mta.algorithms import ALGORITHMS
from test_algorithms import CASES, check_same, draw_ops, run_operations

STORE_CASES = ["sum", "max", "collect", "record"]
TINY = {"buffer_size": 2, "cache_size": 2}
durable_settings = hsettings(max_examples=8, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _params() -> list:
    return [pytest.param(name, case, id=f"{name}-{case}") for name in TREE_ALGORITHMS for case in STORE_CASES]


@pytest.mark.parametrize("name, case_name", _params())
@given(data=st.data())
@durable_settings
def test_random_operations_on_a_durable_store(backend, name, case_name, data) -> None:
    case = CASES[case_name]
    _, store = new_window_store(backend)
    run_operations(ALGORITHMS[name](case.monoid, store=store, **TINY), case, draw_ops(data, case_name))


@pytest.mark.parametrize("name, case_name", _params())
@given(data=st.data())
@durable_settings
def test_reopened_window_carries_on_like_the_original(backend, name, case_name, data) -> None:
    """Random operations, a flush, a reopen from the store alone, more random operations."""
    case = CASES[case_name]
    window_id, store = new_window_store(backend)
    agg = ALGORITHMS[name](case.monoid, store=store, **TINY)
    items = run_operations(agg, case, draw_ops(data, case_name, "before"))
    agg.flush()
    store.release()
    again = backend.store(window_id, block_size=store.block_size, delete_batch=store.delete_batch)
    reopened = ALGORITHMS[name](case.monoid, store=again, state=again.load(), **TINY)
    check_same(reopened, case.monoid, items)
    run_operations(reopened, case, draw_ops(data, case_name, "after"), items)


@pytest.mark.parametrize("name", TREE_ALGORITHMS)
def test_failed_commits_change_nothing_stored_and_a_flush_retries_them(backend, name, monkeypatch) -> None:
    case = CASES["sum"]
    window_id, store = new_window_store(backend)
    agg = ALGORITHMS[name](case.monoid, store=store, **TINY)
    items = run_operations(agg, case, [("burst", 50, 1)])
    agg.flush()
    before = backend.load(window_id)

    def refuse(*args, **kwargs):
        raise kvs.StoreError("injected: store unreachable")

    monkeypatch.setattr(backend, "commit", refuse)
    # Insertions go on in memory; their automatic commits fail and are remembered.
    run_operations(agg, case, [("burst", 40, 2), ("evict", "half", 0), ("burst", 40, 3)], items)
    backend.writer.wait(store)  # the automatic commits are sent in the background
    assert isinstance(agg.commit_error, kvs.StoreError)
    with pytest.raises(kvs.StoreError, match="injected"):
        agg.flush()
    assert backend.load(window_id) == before  # nothing half-written
    monkeypatch.undo()
    agg.flush()
    assert agg.commit_error is None
    store.release()
    again = backend.store(window_id, block_size=store.block_size, delete_batch=store.delete_batch)
    check_same(ALGORITHMS[name](case.monoid, store=again, state=again.load(), **TINY), case.monoid, items)
