"""Server reflection in both versions of the protocol: ``grpc.reflection.v1alpha`` (what
grpcio-reflection serves) and ``grpc.reflection.v1`` (what newer clients ask first).

grpcio-reflection 1.85 implements v1alpha only (grpc/grpc#38576). The v1 protocol is
the same messages with the same field numbers under another package, so its calls are
answered by the v1alpha servicer through a generic handler, and the v1 file is added to
the descriptor pool (renamed from v1alpha) so that reflection can describe itself.
"""

from __future__ import annotations

from typing import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import reflection, reflection_pb2

ALPHA = reflection.SERVICE_NAME  # grpc.reflection.v1alpha.ServerReflection
V1 = "grpc.reflection.v1.ServerReflection"
_V1_FILE = "grpc/reflection/v1/reflection.proto"


def _add_v1_descriptor(pool: descriptor_pool.DescriptorPool) -> None:
    """Add ``grpc/reflection/v1/reflection.proto`` to ``pool`` (once): the v1alpha file
    with its package and type references renamed."""
    try:
        pool.FindFileByName(_V1_FILE)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    reflection_pb2.DESCRIPTOR.CopyToProto(proto)
    old, new = f".{proto.package}.", ".grpc.reflection.v1."
    proto.name, proto.package = _V1_FILE, "grpc.reflection.v1"
    proto.options.java_package = "io.grpc.reflection.v1"
    proto.options.go_package = "google.golang.org/grpc/reflection/grpc_reflection_v1"
    for message in proto.message_type:
        for field in message.field:
            if field.HasField("type_name"):  # messages only: setting it on a string field is an error
                field.type_name = field.type_name.replace(old, new, 1)
    for method in proto.service[0].method:
        method.input_type = method.input_type.replace(old, new, 1)
        method.output_type = method.output_type.replace(old, new, 1)
    pool.Add(proto)


def enable_reflection(server: grpc.aio.Server, service_names: Iterable[str]) -> None:
    """Serve reflection of ``service_names`` (and of itself) under v1alpha and v1."""
    _add_v1_descriptor(descriptor_pool.Default())
    names = (*service_names, ALPHA, V1)
    reflection.enable_server_reflection(names, server)
    servicer = reflection.aio.ReflectionServicer(names)
    handler = grpc.stream_stream_rpc_method_handler(
        servicer.ServerReflectionInfo,
        request_deserializer=reflection_pb2.ServerReflectionRequest.FromString,
        response_serializer=reflection_pb2.ServerReflectionResponse.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(V1, {"ServerReflectionInfo": handler}),))
