"""`mta serve` seen from Node.js (@grpc/grpc-js, @grpc/proto-loader): a client in another
language describes the server, is refused with the field's path, streams batches waiting
for each ack (none may be withheld), sends an out-of-order batch and queries a time range
(algorithm "fiba"), and reads the results.

Needs `node` and `npm` (and the npm registry, or npm's cache): the packages pinned in
tests/node/package-lock.json are installed into a temporary directory by `npm ci`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from test_server import Server

NODE = Path(__file__).resolve().parent / "node"
ROOT = NODE.parent.parent


@pytest.fixture(scope="module")
def node_client(tmp_path_factory) -> Path:
    """A directory with client.js and its packages installed."""
    where = tmp_path_factory.mktemp("node")
    for name in ("package.json", "package-lock.json", "connect.js", "client.js", "stream_client.js"):
        shutil.copy(NODE / name, where / name)
    subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline", "--ignore-scripts"], cwd=where,
                   check=True, capture_output=True, timeout=300)
    return where


def test_a_node_client_describes_the_server_and_gets_field_paths(node_client, tmp_path) -> None:
    server = Server(tmp_path / "w.db", env={"MTA_TOKEN": "s3cret"})
    try:
        run = subprocess.run(["node", "client.js", server.address, str(ROOT / "proto"), "s3cret"], cwd=node_client,
                             capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert {"count", "sum", "variance"} <= set(seen["monoids"])
    assert seen["time_range"]["uses_timestamps"] is True
    assert [(p["name"], p["type"], p["required"]) for p in seen["time_range"]["params"]] == [("width", "float", True)]
    refusals = {name: (seen[name]["code"], seen[name]["details"].partition(": ")[0])
                for name in ("both", "width", "late", "nan")}
    assert refusals == {"both": ("INVALID_ARGUMENT", "spec.monoid, spec.dimensions"),
                        "width": ("INVALID_ARGUMENT", 'spec.policy.params["width"]'),
                        "late": ("INVALID_ARGUMENT", "columns.ts[2]"),
                        "nan": ("INVALID_ARGUMENT", 'updates[1].dimensions["peak"]')}
    # every ack came while the producer waited for it (the stream stayed open after the last)
    assert seen["acks"] == [f"n{i}" for i in range(5)]
    # out of order into "ooo" (TimeRange(5)): 7, 2, 9, 4, 4 keep 7 and 9, and 4 is the frontier
    assert (seen["ooo"]["inserted"], seen["ooo"]["evicted"]) == (5, 3)
    assert (seen["ooo_late"]["code"], seen["ooo_late"]["details"].partition(" is late")[0]) == \
        ("INVALID_ARGUMENT", "columns.ts[1]: timestamp 3")
    assert [(r["window"], r["length"], r["values"]) for r in seen["ooo_range"]] == [("ooo", 1, {"value": 4})]
    assert (seen["ooo_range_refused"]["code"], seen["ooo_range_refused"]["details"].partition(": ")[0]) == \
        ("INVALID_ARGUMENT", "range, windows[0]")
    # nothing was inserted in "node": empty, and mean and max have no result of nothing; "acks" has 1+2+3+4+5
    results = {r["window"]: (r.get("length", 0), r.get("values", {})) for r in seen["query"]}
    assert results == {"node": (0, {}), "acks": (5, {"value": 15}), "ooo": (2, {"value": 5})}


def test_a_node_client_runs_a_stream(node_client, tmp_path) -> None:
    """Create, watch, insert out of order, advance, add a query, a late update: what the
    Node client saw is what the library's engine reports for the same calls."""
    from mta import Stream, Sum
    from mta.windows import Count, Session, Tumbling

    server = Server(tmp_path / "w.db", env={"MTA_TOKEN": "s3cret"})
    try:
        run = subprocess.run(["node", "stream_client.js", server.address, str(ROOT / "proto"), "s3cret"],
                             cwd=node_client, capture_output=True, text=True, timeout=60)
    finally:
        server.stop()
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert (seen["bad"]["code"], seen["bad"]["details"].partition(": ")[0]) == \
        ("INVALID_ARGUMENT", "spec.queries[0].window.sliding.slide")
    engine = Stream(Sum(), allowed_lateness=5)
    engine.add("t10", Tumbling(10))
    engine.add("gap", Session(3))

    def rows(results):
        return [[r.query, r.start, r.end, r.count, r.value, r.final] for r in results]

    engine.insert_many(zip([12, 1, 5, 3, 14], [1.0, 2.0, 4.0, 8.0, 16.0]))
    first = rows(engine.advance(11))
    engine.add("c2", Count(2))
    taken = engine.insert_many(zip([9, 0, 20], [32.0, 64.0, 128.0]))
    second = rows(engine.advance(30))
    assert seen["inserted"] == [5, 0] and seen["late"] == [taken, 3 - taken] == [2, 1]
    assert (seen["first"], seen["second"]) == (first, second)
    assert any(not final for *_, final in second)  # the late update was reported again
    assert seen["watched"] == first + second
    info = seen["info"]
    assert ([q["name"] for q in info["spec"]["queries"]], info["watermark"], info["dropped"]) == \
        (["t10", "gap", "c2"], 30, 1)
