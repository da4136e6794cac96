"""The standard services' handlers (health checking, reflection) with their requests parsed leniently:
bytes that are no valid request end the RPC with INVALID_ARGUMENT saying so, where grpcio's own
registration (``FromString`` as the deserializer) answers UNKNOWN ("Unexpected DecodeError") — the audit's
fuzzing found it (docs/fuzzing.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from service.servicer import MalformedRequest, lenient


async def _refuse(context: grpc.aio.ServicerContext, request: MalformedRequest, where: str) -> None:
    failure = request.failure(where)
    await context.abort(failure.code, failure.message)


def checked_unary(handler: Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]
                  ) -> Callable[[Any, grpc.aio.ServicerContext], Awaitable[Any]]:
    async def call(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, MalformedRequest):
            await _refuse(context, request, "the request")
        return await handler(request, context)

    return call


def checked_unary_stream(handler: Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]
                         ) -> Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]:
    async def call(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        if isinstance(request, MalformedRequest):
            await _refuse(context, request, "the request")
            return
        async for response in handler(request, context):
            yield response

    return call


def checked_stream_stream(handler: Callable[[AsyncIterator[Any], grpc.aio.ServicerContext], AsyncIterator[Any]]
                          ) -> Callable[[AsyncIterator[Any], grpc.aio.ServicerContext], AsyncIterator[Any]]:
    async def call(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        async def parsed() -> AsyncIterator[Any]:
            number = 0
            async for request in requests:
                number += 1
                if isinstance(request, MalformedRequest):
                    await _refuse(context, request, f"request message {number}")
                    return
                yield request

        async for response in handler(parsed(), context):
            yield response

    return call


def add_health(servicer: Any, server: grpc.aio.Server) -> None:
    """grpc.health.v1.Health (Check, List, Watch) of ``servicer`` on ``server``."""
    from grpc_health.v1 import health_pb2

    handlers = {
        "Check": grpc.unary_unary_rpc_method_handler(
            checked_unary(servicer.Check), request_deserializer=lenient(health_pb2.HealthCheckRequest),
            response_serializer=health_pb2.HealthCheckResponse.SerializeToString),
        "Watch": grpc.unary_stream_rpc_method_handler(
            checked_unary_stream(servicer.Watch), request_deserializer=lenient(health_pb2.HealthCheckRequest),
            response_serializer=health_pb2.HealthCheckResponse.SerializeToString),
    }
    if hasattr(servicer, "List") and hasattr(health_pb2, "HealthListRequest"):
        handlers["List"] = grpc.unary_unary_rpc_method_handler(
            checked_unary(servicer.List), request_deserializer=lenient(health_pb2.HealthListRequest),
            response_serializer=health_pb2.HealthListResponse.SerializeToString)
    name = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, handlers),))
