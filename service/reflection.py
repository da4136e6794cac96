"""Server reflection, both versions: grpc.reflection.v1 and grpc.reflection.v1alpha.

Generic clients (grpcurl, Postman, Evans) ask v1 first and some never fall back, but grpcio-reflection
(1.85) implements v1alpha only. The two are one protocol under two package names — the same messages,
field for field — so one servicer answers both, and the v1 file (v1alpha's, renamed) is added to the
descriptor pool, so that reflection describes itself under either name.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool
from grpc_reflection.v1alpha import _async as reflection_aio
from grpc_reflection.v1alpha import reflection_pb2 as rpb

from service import checked
from service.checked import OpenStreams, checked_stream_stream
from service.servicer import lenient

V1ALPHA_SERVICE = "grpc.reflection.v1alpha.ServerReflection"
V1_SERVICE = "grpc.reflection.v1.ServerReflection"
_V1_FILE = "grpc/reflection/v1/reflection.proto"


def _renamed(type_name: str) -> str:
    return type_name.replace(".grpc.reflection.v1alpha.", ".grpc.reflection.v1.", 1)


def _rename_messages(messages: Iterable[descriptor_pb2.DescriptorProto]) -> None:
    for message in messages:
        for f in message.field:
            if f.HasField("type_name"):
                f.type_name = _renamed(f.type_name)
        _rename_messages(message.nested_type)


def add_v1_descriptor(pool: descriptor_pool.DescriptorPool | None = None) -> None:
    """Put grpc/reflection/v1/reflection.proto into the pool (the default one), once."""
    pool = pool or descriptor_pool.Default()
    try:
        pool.FindFileByName(_V1_FILE)
        return
    except KeyError:
        pass
    proto = descriptor_pb2.FileDescriptorProto()
    rpb.DESCRIPTOR.CopyToProto(proto)
    proto.name = _V1_FILE
    proto.package = "grpc.reflection.v1"
    _rename_messages(proto.message_type)
    for service in proto.service:
        for method in service.method:
            method.input_type = _renamed(method.input_type)
            method.output_type = _renamed(method.output_type)
    pool.AddSerializedFile(proto.SerializeToString())


def enable_server_reflection(service_names: Iterable[str], server: grpc.aio.Server,
                             limits: OpenStreams | None = None) -> None:
    """Reflection v1 and v1alpha on ``server``, listing ``service_names`` and both reflection services. It needs no
    token, so its streams are limited (``limits``, shared with Health/Watch: in all and per address) and idle
    out after OPEN_STREAM_IDLE_SECONDS."""
    add_v1_descriptor()
    servicer = reflection_aio.ReflectionServicer((*service_names, V1_SERVICE, V1ALPHA_SERVICE))
    handler = grpc.stream_stream_rpc_method_handler(
        checked_stream_stream(servicer.ServerReflectionInfo, OpenStreams() if limits is None else limits,
                              checked.OPEN_STREAM_IDLE_SECONDS),
        request_deserializer=lenient(rpb.ServerReflectionRequest),
        response_serializer=rpb.ServerReflectionResponse.SerializeToString)
    server.add_generic_rpc_handlers(tuple(grpc.method_handlers_generic_handler(name, {"ServerReflectionInfo": handler})
                                          for name in (V1_SERVICE, V1ALPHA_SERVICE)))
