"""Stored windows on both paths (issue 20): a window with a policy of ours searches the
stored AmortizedMTA on counts and timestamps only (:meth:`AmortizedMTA.condemned_in_order`).
Over random insert / insert_many / evict_before / query / flush / close-and-reopen sequences
a stored window (memory://, file, Redis) gives an in-memory window's results, floats bit
for bit: the typed core's (compiled; it demotes mid-stream on a value it cannot hold) and
the object AMTA's, whose counts are checked against the same policy searched on combined
prefixes. A second process on the other path (pure when this one is compiled, and the other
way round) reopens the window and goes on with it.

The file runs on both paths (scripts/test.sh runs it again with ``MTA_NO_EXTENSIONS=1``);
examples are derandomized, so both paths see the same sequences.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mta
from mta import Window
from mta.monoid import Max, Mean, Sum
from mta.policy import MaxSize, TimeRange, any_of

ROOT = Path(__file__).resolve().parent.parent

MONOIDS = {"sum": Sum, "mean": Mean, "max": Max}
POLICIES = {"time": lambda w: TimeRange(w), "size": lambda w: MaxSize(w),
            "any": lambda w: any_of(TimeRange(w), MaxSize(3 * w))}
#: Tiny buffers, caches and blocks: the store is written and read within a few updates.
STORED = {"buffer_size": 4, "cache_size": 4, "block_size": 2}

# floats whose sums round differently in another order; 2**70 is an int no typed core holds
values = st.one_of(st.sampled_from([0.1, 0.2, 0.3, 1e16, -1e16, 1 / 3, -2.5, 7.0]), st.integers(-50, 50))
odd_values = st.one_of(values, st.just(2 ** 70))
step = st.tuples(st.integers(0, 3), values)
ops = st.lists(st.one_of(
    st.tuples(st.just("insert"), step),
    st.tuples(st.just("many"), st.lists(step, max_size=40)),
    st.tuples(st.just("query")),
    st.tuples(st.just("flush")),
    st.tuples(st.just("reopen")),
    st.tuples(st.just("odd"), st.tuples(st.integers(0, 3), odd_values)),
    st.tuples(st.just("before"), st.integers(-2, 30)),
), max_size=40)


def exact(value: Any) -> Any:
    """``value`` with every float as its hex (bit-for-bit comparison; JSON-safe)."""
    if isinstance(value, float):
        return value.hex()
    if isinstance(value, (tuple, list)):
        return [exact(v) for v in value]
    return value


class Run:
    """Applies operations to a stored window and keeps the results: time advances by each step's delta."""

    def __init__(self, window: Window, clock: int = 0) -> None:
        self.window = window
        self.clock = clock
        self.results: list[Any] = []

    def apply(self, op: tuple | list, reopen: Any = None) -> None:
        """Apply ``op`` (as generated, or through JSON: see :func:`encode`); ``reopen`` closes
        and reopens the window (a stored one)."""
        op = decode(op) if isinstance(op, list) else op
        kind = op[0]
        w = self.window
        if kind in ("insert", "odd"):
            self.clock += op[1][0]
            self.results.append(["evicted", w.insert(self.clock, op[1][1])])
        elif kind == "many":
            batch = []
            for delta, value in op[1]:
                self.clock += delta
                batch.append((self.clock, value))
            self.results.append(["evicted", w.insert_many(batch)])
        elif kind == "before":
            try:
                self.results.append(["evicted", w.evict_before(self.clock - op[1])])
            except TypeError:  # a count-only window keeps no timestamps: refused, unchanged
                self.results.append(["evicted", "refused"])
        elif kind == "query":
            self.results.append(["query", exact(w.query()), len(w)])
        elif kind == "flush":
            w.flush()
        elif kind == "reopen" and reopen is not None:
            w.close()
            self.window = reopen()
        self.results.append(["state", exact(self.window.query()), len(self.window)])


def counts(results: list[Any]) -> list[Any]:
    """The results without values: what was evicted, how many are left."""
    return [entry if entry[0] == "evicted" else [entry[0], entry[-1]] for entry in results]


def in_memory_runs(monoid: str, policy: str, width: int, sequence: list) -> list[list[Any]]:
    """The results of the typed in-memory window and of the object AMTA in memory, after
    checking the counts of the latter against the same policy as a user's (searched on
    combined prefixes, :meth:`AmortizedMTA.condemned`, and enforced after every update)."""
    out = []
    for options in ({}, {"buffer_size": 4}):
        run = Run(Window(MONOIDS[monoid](), POLICIES[policy](width), **options))
        for op in sequence:
            run.apply(op)
        out.append(run.results)
    ours = POLICIES[policy](width)
    oracle = Run(Window(MONOIDS[monoid](), lambda total, old: ours(total, old), buffer_size=4))
    refused = ["evicted", "refused"]
    for op in sequence:
        if policy == "size" and op[0] == "before":  # the oracle keeps timestamps, MaxSize's window does not
            oracle.results += [refused, ["state", None, len(oracle.window)]]
        else:
            oracle.apply(op)
    assert counts(oracle.results) == counts(out[1])
    return out


def stored_run(url: str, monoid: str, policy: str, width: int, sequence: list,
               options: dict[str, Any] = STORED) -> list[Any]:
    window_id = uuid.uuid4().hex
    make = MONOIDS[monoid]
    run = Run(Window(make(), POLICIES[policy](width), store=url, window_id=window_id, **options))
    for op in sequence:
        run.apply(op, lambda: Window.open(url, window_id, make(), POLICIES[policy](width)))
    run.window.close()
    return run.results


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(monoid=st.sampled_from(sorted(MONOIDS)), policy=st.sampled_from(sorted(POLICIES)),
       width=st.sampled_from([1, 3, 10, 40]), sequence=ops, kind=st.sampled_from(["memory", "file", "redis"]))
def test_stored_window_matches_in_memory_windows(monoid, policy, width, sequence, kind, file_url, redis_url) -> None:
    url = {"memory": f"memory://stored-compiled-{os.getpid()}", "file": file_url, "redis": redis_url}[kind]
    typed, objects = in_memory_runs(monoid, policy, width, sequence)
    assert typed == objects
    assert stored_run(url, monoid, policy, width, sequence) == objects


# A second process: opens the window, applies its operations, prints its results and clock.
CHILD = """
import json, sys
sys.path.insert(0, {root!r})
import mta
from tests.test_stored_compiled import MONOIDS, POLICIES, Run
from mta import Window
args = json.loads(sys.stdin.read())
monoid, policy, width = MONOIDS[args["monoid"]](), POLICIES[args["policy"]](args["width"]), args["width"]
run = Run(Window.open(args["url"], args["id"], monoid, policy), args["clock"])
for op in args["ops"]:
    run.apply(op)
run.window.close()
print(json.dumps({{"compiled": mta.COMPILED, "results": run.results, "clock": run.clock}}))
"""


def child(url: str, window_id: str, monoid: str, policy: str, width: int, clock: int, sequence: list) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if mta.COMPILED:
        env["MTA_NO_EXTENSIONS"] = "1"
    else:
        env.pop("MTA_NO_EXTENSIONS", None)
    payload = json.dumps({"url": url, "id": window_id, "monoid": monoid, "policy": policy, "width": width,
                          "clock": clock, "ops": [encode(op) for op in sequence]})
    done = subprocess.run([sys.executable, "-c", CHILD.format(root=str(ROOT))], input=payload, env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout)


def encode(op: tuple) -> list:
    """An operation through JSON: floats as hex strings, decoded again by :func:`decode`."""
    def value(v: Any) -> Any:
        return {"hex": v.hex()} if isinstance(v, float) else v
    if op[0] in ("insert", "odd"):
        return [op[0], [op[1][0], value(op[1][1])]]
    if op[0] == "many":
        return [op[0], [[d, value(v)] for d, v in op[1]]]
    return list(op)


def decode(op: list) -> tuple:
    def value(v: Any) -> Any:
        return float.fromhex(v["hex"]) if isinstance(v, dict) else v
    if op[0] in ("insert", "odd"):
        return (op[0], (op[1][0], value(op[1][1])))
    if op[0] == "many":
        return (op[0], [(d, value(v)) for d, v in op[1]])
    return tuple(op)


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(monoid=st.sampled_from(sorted(MONOIDS)), policy=st.sampled_from(sorted(POLICIES)),
       width=st.sampled_from([3, 10]), first=ops, second=ops, third=ops, kind=st.sampled_from(["file", "redis"]))
def test_a_second_process_on_the_other_path_goes_on_with_the_window(monoid, policy, width, first, second, third,
                                                                     kind, file_url, redis_url) -> None:
    url = {"file": file_url, "redis": redis_url}[kind]
    window_id = uuid.uuid4().hex
    make = MONOIDS[monoid]
    run = Run(Window(make(), POLICIES[policy](width), store=url, window_id=window_id, **STORED))
    for op in first:
        run.apply(op)
    run.window.close()
    other = child(url, window_id, monoid, policy, width, run.clock, second)
    assert other["compiled"] is not mta.COMPILED
    again = Run(Window.open(url, window_id, make(), POLICIES[policy](width)), other["clock"])
    for op in third:
        again.apply(op)
    again.window.close()
    stored = run.results + other["results"] + again.results
    typed, objects = in_memory_runs(monoid, policy, width, [*first, *second, *third])
    assert stored == objects == typed


@settings(max_examples=20, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(policy=st.sampled_from(sorted(POLICIES)), width=st.integers(1, 300),
       batches=st.lists(st.tuples(st.integers(1, 700), st.integers(0, 3), st.integers(0, 2 ** 32)), min_size=1, max_size=6),
       kind=st.sampled_from(["memory", "redis"]))
def test_large_batches_search_the_stored_tree(policy, width, batches, kind, redis_url) -> None:
    """Batches of hundreds: the policy's search descends the stored levels (bulk evictions)."""
    url = {"memory": f"memory://stored-compiled-{os.getpid()}", "redis": redis_url}[kind]
    sequence = []
    for size, spread, seed in batches:
        sequence.append(("many", [((seed >> (i % 32)) % (spread + 1), (seed % 1000 + i) / 7) for i in range(size)]))
        sequence.append(("query",))
    typed, objects = in_memory_runs("sum", policy, width, sequence)
    assert typed == objects
    assert stored_run(url, "sum", policy, width, sequence) == objects


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("width", [1, 7, 100])
def test_bulk_evictions_by_count_and_by_time(policy, width, redis_url) -> None:
    """Runs of equal timestamps (the count decides) and of spread ones (the time decides)."""
    sequence = []
    for size, spread in [(700, 0), (1, 1), (300, 2), (33, 0), (513, 1), (64, 0), (2, 5)]:
        sequence.append(("many", [(int(i % (spread + 1) == 0) * spread, (i * 31 % 1000) / 7) for i in range(size)]))
        sequence.append(("query",))
    typed, objects = in_memory_runs("sum", policy, width, sequence)
    assert typed == objects
    assert stored_run(redis_url, "sum", policy, width, sequence) == objects
