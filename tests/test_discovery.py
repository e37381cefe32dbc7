"""What a client that knows nothing yet can find out from `mta serve`, through a real channel
to a server that requires a token: health and reflection (v1alpha and v1) are open,
Describe lists what the server offers once the token is given."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2

from mta.client import Client
from mta.v1 import aggregation_pb2 as pb
from test_server import Server, error_of

TOKEN = "s3cret"
GOOD = (("authorization", f"Bearer {TOKEN}"),)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    server = Server(tmp_path_factory.mktemp("discovery") / "w.db", "--plugin", "plugins.sample_plugin",
                    env={"MTA_TOKEN": TOKEN})
    yield server
    server.stop()


def _reflect(channel: grpc.Channel, version: str, **request) -> reflection_pb2.ServerReflectionResponse:
    """One reflection call, without the token, on ``version`` ("v1alpha" or "v1"). v1 is
    the v1alpha protocol under another package (same messages, same field numbers), so
    the v1alpha classes encode its messages."""
    call = channel.stream_stream(f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                                 request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
                                 response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
    return next(call(iter([reflection_pb2.ServerReflectionRequest(**request)]), timeout=10))


@pytest.mark.parametrize("version", ["v1alpha", "v1"])
def test_health_and_reflection_are_open_without_the_token(guarded, version) -> None:
    health = health_pb2_grpc.HealthStub(guarded.channel)
    assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING
    listed = _reflect(guarded.channel, version, list_services="")
    assert {s.name for s in listed.list_services_response.service} == {
        "mta.v1.Aggregation", "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection",
        "grpc.reflection.v1.ServerReflection"}
    found = _reflect(guarded.channel, version, file_containing_symbol="mta.v1.Aggregation")
    files = [descriptor_pb2.FileDescriptorProto.FromString(f)
             for f in found.file_descriptor_response.file_descriptor_proto]
    service = next(s for f in files if f.package == "mta.v1" for s in f.service)
    assert "Describe" in {m.name for m in service.method}
    itself = _reflect(guarded.channel, version, file_containing_symbol="grpc.reflection.v1.ServerReflection")
    v1 = descriptor_pb2.FileDescriptorProto.FromString(itself.file_descriptor_response.file_descriptor_proto[0])
    assert (v1.name, v1.package) == ("grpc/reflection/v1/reflection.proto", "grpc.reflection.v1")
    assert v1.service[0].method[0].input_type == ".grpc.reflection.v1.ServerReflectionRequest"


def test_describe_needs_the_token_and_lists_builtins_and_plugins(guarded) -> None:
    stub = guarded.stub
    assert error_of(stub.Describe, pb.DescribeRequest()).code() == grpc.StatusCode.UNAUTHENTICATED
    assert {m.name for m in stub.Describe(pb.DescribeRequest(), metadata=GOOD).monoids} >= {"sum", "product"}
    with Client(guarded.address, token=TOKEN) as client:
        offered = client.describe()
    assert offered["policies"]["newest"] == {"description": "", "uses_timestamps": True,
                                             "params": {"n": {"type": "int", "required": False, "default": 3}}}
    assert offered["policies"]["max_size"]["params"] == {"n": {"type": "int", "required": True, "default": None}}
    assert not offered["policies"]["max_size"]["uses_timestamps"]
    assert offered["monoids"]["variance"]["params"] == {"ddof": {"type": "int", "required": False, "default": 0}}
    assert offered["algorithms"]["amta"]["is_default"] and not offered["algorithms"]["log_mta"]["is_default"]
    assert offered["predicates"]["above"]["params"] == {
        "threshold": {"type": "float", "required": True, "default": None},
        "dimension": {"type": "string", "required": False, "default": ""}}


def test_errors_over_the_wire_name_the_field_by_its_path(guarded) -> None:
    stub = guarded.stub
    both = pb.WindowSpec(name="both", monoid=pb.Component(name="sum"),
                         dimensions=[pb.Dimension(name="a", monoid=pb.Component(name="max"))])
    error = error_of(lambda r: stub.CreateWindow(r, metadata=GOOD), pb.CreateWindowRequest(spec=both))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details().startswith("spec.monoid, spec.dimensions: ")
    stub.CreateWindow(pb.CreateWindowRequest(spec=pb.WindowSpec(name="t", monoid=pb.Component(name="sum"))),
                      metadata=GOOD)
    late = pb.InsertRequest(window="t", columns=pb.Columns(ts=[1, 2, 0], values=[1, 1, 1]))
    error = error_of(lambda r: stub.Insert(r, metadata=GOOD), late)
    assert error.details().startswith("columns.ts[2]: timestamp 0 is older than the newest update 2")
    assert stub.GetWindow(pb.GetWindowRequest(name="t"), metadata=GOOD).length == 0
    assert [w.spec.name for w in stub.ListWindows(pb.ListWindowsRequest(), metadata=GOOD).windows] == ["t"]
