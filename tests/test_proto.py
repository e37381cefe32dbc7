"""The generated gRPC code is what scripts/gen_proto.sh makes of proto/mta/v1 today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROTOS = sorted((ROOT / "proto" / "mta" / "v1").glob("*.proto"))
GENERATED = [f"{p.stem}{suffix}" for p in PROTOS for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")]


def test_there_is_an_idl() -> None:
    assert [p.name for p in PROTOS] == ["aggregation.proto"]


@pytest.mark.parametrize("name", GENERATED)
def test_generated_code_is_current(tmp_path, name) -> None:
    subprocess.run([sys.executable, "-m", "grpc_tools.protoc", "-I", str(ROOT / "proto"), f"--python_out={tmp_path}",
                    f"--pyi_out={tmp_path}", f"--grpc_python_out={tmp_path}", *map(str, PROTOS)], check=True)
    fresh = (tmp_path / "mta" / "v1" / name).read_text()
    assert (ROOT / "mta" / "v1" / name).read_text() == fresh, f"mta/v1/{name} is stale: run scripts/gen_proto.sh"


def test_the_service_has_every_rpc_of_the_design() -> None:
    from mta.v1 import aggregation_pb2

    methods = aggregation_pb2.DESCRIPTOR.services_by_name["Aggregation"].methods_by_name
    assert set(methods) == {"CreateWindow", "GetWindow", "ListWindows", "DeleteWindow", "Insert", "Ingest",
                            "Query", "Evict", "Retract", "Flush", "Watch", "Describe",
                            "CreateStream", "GetStream", "ListStreams", "DeleteStream", "AddQuery", "RemoveQuery",
                            "StreamInsert", "StreamIngest", "Advance", "StreamWatch"}
    assert methods["Ingest"].client_streaming and methods["Ingest"].server_streaming
    assert methods["Watch"].server_streaming and not methods["Watch"].client_streaming
    assert methods["StreamIngest"].client_streaming and methods["StreamIngest"].server_streaming
    assert methods["StreamWatch"].server_streaming and not methods["StreamWatch"].client_streaming
