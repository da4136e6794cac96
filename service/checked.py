"""The standard services' handlers (health checking, reflection) with their requests parsed leniently:
bytes that are no valid request end the RPC with INVALID_ARGUMENT saying so, where grpcio's own
registration (``FromString`` as the deserializer) answers UNKNOWN ("Unexpected DecodeError") — the audit's
fuzzing found it (docs/fuzzing.md)."""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from service.guard import StreamIdle, idle_limited
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


def checked_unary_stream(handler: Callable[[Any, grpc.aio.ServicerContext], Any]
                         ) -> Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]:
    """``handler`` may be an async generator of the responses, or a coroutine that writes them itself with
    ``context.write`` (grpc_health's Health.Watch is one: iterating it failed every Watch with UNKNOWN)."""

    async def call(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        if isinstance(request, MalformedRequest):
            await _refuse(context, request, "the request")
            return
        responses = handler(request, context)
        if inspect.isawaitable(responses):
            await responses
            return
        async for response in responses:
            yield response

    return call


# The open services' streams (reflection, Health/Watch need no token): at most this many at once, this many from
# one address, and a reflection stream that asks nothing for this long is ended (issue 27, item 10: 3,000
# unauthenticated reflection streams were accepted and never idled out).
OPEN_STREAMS = 64
OPEN_STREAMS_PER_PEER = 8
OPEN_STREAM_IDLE_SECONDS = 30.0


def peer_host(context: grpc.aio.ServicerContext) -> str:
    """The caller's address without its port ("ipv4:127.0.0.1:5555" -> "ipv4:127.0.0.1")."""
    peer = str(context.peer() or "")
    return peer.rsplit(":", 1)[0] if peer.count(":") >= 2 else peer


class OpenStreams:
    """Counts the open services' streams, in all and by peer address (on the event loop: no locks)."""

    def __init__(self, total: int | None = None, per_peer: int | None = None) -> None:
        self.total = OPEN_STREAMS if total is None else total
        self.per_peer = OPEN_STREAMS_PER_PEER if per_peer is None else per_peer
        self.open = 0
        self.by_peer: Counter[str] = Counter()

    def enter(self, peer: str) -> str | None:
        """Count a new stream from ``peer``; why it may not open, if it may not (then it is not counted)."""
        if self.open >= self.total:
            return f"{self.total} streams of health checking and reflection are open, this server's limit; retry later"
        if self.by_peer[peer] >= self.per_peer:
            return (f"this address has {self.per_peer} streams of health checking and reflection open, its limit; "
                    "close one first")
        self.open += 1
        self.by_peer[peer] += 1
        return None

    def leave(self, peer: str) -> None:
        self.open -= 1
        self.by_peer[peer] -= 1
        if self.by_peer[peer] <= 0:
            del self.by_peer[peer]


def checked_stream_stream(handler: Callable[[AsyncIterator[Any], grpc.aio.ServicerContext], AsyncIterator[Any]],
                          limits: OpenStreams | None = None, idle_seconds: float | None = None
                          ) -> Callable[[AsyncIterator[Any], grpc.aio.ServicerContext], AsyncIterator[Any]]:
    """``limits``: the streams counted there (refused RESOURCE_EXHAUSTED over them); ``idle_seconds``: a stream
    that sends nothing for that long is ended DEADLINE_EXCEEDED."""

    async def call(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        peer = peer_host(context)
        if limits is not None:
            refused = limits.enter(peer)
            if refused is not None:
                await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refused)
        try:
            source = requests if idle_seconds is None else idle_limited(requests, idle_seconds, "the stream")

            async def parsed() -> AsyncIterator[Any]:
                number = 0
                async for request in source:
                    number += 1
                    if isinstance(request, MalformedRequest):
                        await _refuse(context, request, f"request message {number}")
                        return
                    yield request

            idle: StreamIdle | None = None
            try:
                async for response in handler(parsed(), context):
                    yield response
            except StreamIdle as err:
                idle = err
            if idle is not None:
                await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(idle))
        finally:
            if limits is not None:
                limits.leave(peer)

    return call


def limited_unary_stream(handler: Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]],
                         limits: OpenStreams) -> Callable[[Any, grpc.aio.ServicerContext], AsyncIterator[Any]]:
    """A server-streaming handler whose streams are counted in ``limits`` (Health/Watch)."""

    async def call(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        peer = peer_host(context)
        refused = limits.enter(peer)
        if refused is not None:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refused)
        try:
            async for response in handler(request, context):
                yield response
        finally:
            limits.leave(peer)

    return call


def add_health(servicer: Any, server: grpc.aio.Server, limits: OpenStreams | None = None) -> None:
    """grpc.health.v1.Health (Check, List, Watch) of ``servicer`` on ``server``; Watch streams counted in
    ``limits`` (a new OpenStreams when not given)."""
    limits = OpenStreams() if limits is None else limits
    from grpc_health.v1 import health_pb2

    handlers = {
        "Check": grpc.unary_unary_rpc_method_handler(
            checked_unary(servicer.Check), request_deserializer=lenient(health_pb2.HealthCheckRequest),
            response_serializer=health_pb2.HealthCheckResponse.SerializeToString),
        "Watch": grpc.unary_stream_rpc_method_handler(
            limited_unary_stream(checked_unary_stream(servicer.Watch), limits),
            request_deserializer=lenient(health_pb2.HealthCheckRequest),
            response_serializer=health_pb2.HealthCheckResponse.SerializeToString),
    }
    if hasattr(servicer, "List") and hasattr(health_pb2, "HealthListRequest"):
        handlers["List"] = grpc.unary_unary_rpc_method_handler(
            checked_unary(servicer.List), request_deserializer=lenient(health_pb2.HealthListRequest),
            response_serializer=health_pb2.HealthListResponse.SerializeToString)
    name = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(name, handlers),))
