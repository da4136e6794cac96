"""Who may call what, and how much: the server interceptor in front of every VerifierService RPC
(docs/security.md).

For each RPC, before its handler runs and before any of its request is read:

1. a request id (the caller's ``x-request-id`` if it is a plain one, else a new one), sent back in the
   trailing metadata and written with every log line of the request;
2. authentication: ``authorization: Bearer TOKEN`` (UNAUTHENTICATED without one, or with one that is not
   a valid token) — unless the server runs open (loopback, no tokens exist);
3. the scope the method needs (PERMISSION_DENIED without it): submit, read, delete, admin;
4. limits, each RESOURCE_EXHAUSTED with a retry hint (google.rpc.RetryInfo in grpc-status-details-bin, and
   "retry in N s" in the message): RPCs in progress over every tenant, the tenant's request rate (a token
   bucket), the tenant's open client streams, and the request bytes held — a request is admitted only when
   its largest possible first message fits in the byte budget, so one that does not is refused unread.

A refused RPC is answered by a handler that reads nothing (a client-streaming one, whatever the method's
shape), so a large request is not buffered just to be refused. Health checking and reflection are not
intercepted: they stay open.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import logging
import re
import time
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import grpc
from google.protobuf.any_pb2 import Any as AnyMessage
from google.rpc import error_details_pb2, status_pb2

from service.config import Limits
from service.metrics import Metrics
from service.shared_limits import SharedLimits
from sgsverify.v1 import service_pb2 as spb
from storage.access import SCOPES, TokenInfo, check_token, token_hash
from storage.store import DEFAULT_TENANT, StorageUnavailable

SERVICE_NAME = spb.DESCRIPTOR.services_by_name["VerifierService"].full_name
# The scope each RPC needs.
METHOD_SCOPES = {"VerifyLog": "submit", "UploadLog": "submit", "VerifyLive": "submit", "GetReplay": "read",
                 "ListReplays": "read", "DeleteReplay": "delete", "Regress": "admin", "GetStandings": "read",
                 "ListRuns": "admin"}
CLIENT_STREAMS = frozenset({"UploadLog", "VerifyLive"})
# How long a checked token is believed: a revoked token stops working within this time on every server.
TOKEN_CACHE_SECONDS = 5.0
TOKEN_CACHE_SIZE = 10_000
# How long a request may wait for room in the byte budget before it is refused.
BUDGET_WAIT_SECONDS = 10.0
# After an RPC that held this much of requests, the cyclic garbage collector is run (GuardInterceptor._collect_soon).
LARGE_REQUEST_BYTES = 1 << 20
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

log = logging.getLogger("sgs-verify.service")
audit_log = logging.getLogger("sgs-verify.audit")
T = TypeVar("T")


# ---------------------------------------------------------------------------------------- who

@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a token's tenant and scopes, or everyone (a server running open)."""

    tenant: str
    scopes: frozenset[str]
    token_id: str = ""
    name: str = ""

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    @property
    def admin(self) -> bool:
        return "admin" in self.scopes

    @property
    def sees(self) -> str | None:
        """The tenant whose replays this caller sees; None: every tenant's (admin)."""
        return None if self.admin else self.tenant

    @property
    def actor(self) -> str:
        """As the audit log names it (never the token itself)."""
        if not self.token_id:
            return "local (no authentication)"
        return f"token {self.token_id}" + (f" ({self.name})" if self.name else "")


# A server running open (loopback, no tokens): every scope, replays stored in the default tenant.
OPEN = Principal(DEFAULT_TENANT, frozenset(SCOPES))


def principal_of(token: TokenInfo) -> Principal:
    return Principal(token.tenant, frozenset(token.scopes), token.id, token.name)


class Denied(Exception):
    """An RPC refused before its handler: the status, a message, and for limits when to retry."""

    def __init__(self, code: grpc.StatusCode, message: str, reason: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.reason = reason
        self.retry_after = retry_after


class Authenticator:
    """Checks bearer tokens against the store (through ``io``, a function running a store call off the event
    loop), keeping each answer for TOKEN_CACHE_SECONDS. ``required`` False: the server runs open."""

    def __init__(self, store: Any, io: Callable[..., Awaitable[Any]], required: bool) -> None:
        self.store = store
        self.io = io
        self.required = required
        self._cache: OrderedDict[str, tuple[TokenInfo | None, float]] = OrderedDict()

    def require(self) -> None:
        """From now on every call needs a token (the first token was created while the server ran open).
        There is no way back but a restart: revoking every token never opens a server."""
        if not self.required:
            self.required = True
            self._cache.clear()
            log.warning("a token exists now: authentication is on (every RPC needs a bearer token)")

    async def authenticate(self, authorization: str | None) -> Principal:
        """The caller of a request with this ``authorization`` value; Denied if it may not call."""
        if not self.required:
            return OPEN
        if not authorization:
            raise Denied(grpc.StatusCode.UNAUTHENTICATED, "this server needs a token: send `authorization: "
                         "Bearer TOKEN` (sgs-verify --token, $SGS_VERIFY_TOKEN)", "unauthenticated")
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise Denied(grpc.StatusCode.UNAUTHENTICATED, "the authorization is not `Bearer TOKEN`",
                         "unauthenticated")
        info = await self._check(token)
        if info is None:
            raise Denied(grpc.StatusCode.UNAUTHENTICATED, "the token is not valid (unknown, mistyped or revoked)",
                         "unauthenticated")
        return principal_of(info)

    async def _check(self, token: str) -> TokenInfo | None:
        key = token_hash(token)
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None and cached[1] > now:
            return cached[0]
        try:
            info: TokenInfo | None = await self.io(check_token, self.store, token)
        except StorageUnavailable as err:
            raise Denied(grpc.StatusCode.UNAVAILABLE, "the replay store is unavailable, so the token cannot be "
                         "checked; retry later", "store", retry_after=1.0) from err
        self._cache[key] = (info, now + TOKEN_CACHE_SECONDS)
        self._cache.move_to_end(key)
        while len(self._cache) > TOKEN_CACHE_SIZE:
            self._cache.popitem(last=False)
        return info


# ---------------------------------------------------------------------------------------- how much

class RateLimiter:
    """A token bucket per tenant: ``burst`` requests at once, refilled at ``rate`` per second."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, tenant: str) -> float | None:
        """None if the request may go on, else the seconds until it could."""
        if self.rate <= 0:
            return None
        now = self.clock()
        tokens, at = self._buckets.get(tenant, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens >= 1.0:
            self._buckets[tenant] = (tokens - 1.0, now)
            return None
        self._buckets[tenant] = (tokens, now)
        return (1.0 - tokens) / self.rate


class ByteBudget:
    """Request bytes held at once, over every request (on the event loop: no locks). Waiters are served in
    order, so a large request is not passed over for ever by small ones."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    def try_take(self, n: int) -> bool:
        if self.used + n > self.limit or self._waiters:
            return False
        self.used += n
        return True

    async def reserve(self, n: int, timeout: float) -> bool:
        if self.try_take(n):
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (n, future)
        self._waiters.append(entry)
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout)
            return True
        except TimeoutError:
            if future.done():  # granted at the last moment
                return True
            self._waiters.remove(entry)
            self._grant()
            return False

    def release(self, n: int) -> None:
        self.used = max(0, self.used - n)
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self.used + self._waiters[0][0] <= self.limit:
            n, future = self._waiters.popleft()
            if not future.done():
                self.used += n
                future.set_result(None)


# ---------------------------------------------------------------------------------------- one RPC

@dataclass(slots=True)
class RpcScope:
    """What the guard knows of the RPC in progress (service.guard.current()), and the budget bytes it holds."""

    request_id: str
    method: str
    principal: Principal
    budget: ByteBudget | None = None
    reserved: int = 0  # held for the first message, before it is read
    held: int = 0  # bytes of messages read and not released
    peak: int = 0  # the most it held of messages read
    started: float = field(default_factory=time.monotonic)

    def charge(self, size: int) -> str | None:
        """Account a message of ``size`` bytes just received; why it cannot be taken, if it cannot."""
        if self.budget is None:
            return None
        if self.reserved:
            reserved, self.reserved = self.reserved, 0
            if size <= reserved:
                self.held += size
                self.peak = max(self.peak, self.held)
                self.budget.release(reserved - size)
                return None
            self.budget.release(reserved)
        if self.budget.try_take(size):
            self.held += size
            self.peak = max(self.peak, self.held)
            return None
        return (f"the server holds {self.budget.limit} bytes of requests already (--max-buffered-bytes); retry in "
                f"1 s{f' (request id {self.request_id})' if self.request_id else ''}")

    def release_received(self) -> None:
        """The messages read so far are no longer held (a live game's batch, once the worker has it)."""
        if self.budget is not None and self.held:
            self.budget.release(self.held)
        self.held = 0

    def release_all(self) -> None:
        if self.budget is not None:
            self.budget.release(self.held + self.reserved)
        self.held = self.reserved = 0


_CURRENT: contextvars.ContextVar[RpcScope | None] = contextvars.ContextVar("sgs_verify_rpc", default=None)


def current() -> RpcScope | None:
    """The RPC the running code serves (set by the interceptor, seen by the deserializer and the handler)."""
    return _CURRENT.get()


def request_id() -> str:
    scope = _CURRENT.get()
    return "" if scope is None else str(scope.request_id)


class RequestIdFilter(logging.Filter):
    """Puts the request id (``%(request_id)s``) on every log record; "-" outside a request."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = request_id() or "-"
        return True


def retry_trailers(code: grpc.StatusCode, message: str, retry_after: float | None) -> list[tuple[str, Any]]:
    """grpc-status-details-bin with a google.rpc.RetryInfo, when there is a retry hint."""
    if retry_after is None:
        return []
    info = error_details_pb2.RetryInfo()
    info.retry_delay.FromTimedelta(timedelta(seconds=max(0.0, retry_after)))
    detail = AnyMessage()
    detail.Pack(info)
    status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
    return [("grpc-status-details-bin", status.SerializeToString())]


async def abort(context: grpc.aio.ServicerContext, code: grpc.StatusCode, message: str,
                retry_after: float | None = None) -> None:
    """End the RPC with this status (the request id and any retry hint in the trailers); raises AbortError."""
    trailers: list[tuple[str, Any]] = []
    rid = request_id()
    if rid:
        trailers.append(("x-request-id", rid))
    trailers += retry_trailers(code, message, retry_after)
    await context.abort(code, message, tuple(trailers))


def _metadata_value(metadata: Any, key: str) -> str | None:
    for k, v in metadata or ():
        if k == key:
            return v if isinstance(v, str) else None
    return None


def _code_name(context: grpc.aio.ServicerContext, error: BaseException | None) -> str:
    code = None
    try:
        code = context.code()
    except Exception:  # an older grpc.aio without code(): the error tells
        code = None
    if isinstance(code, grpc.StatusCode):
        return str(code.name)
    if isinstance(code, int):
        return next((str(c.name) for c in grpc.StatusCode if c.value[0] == code), "UNKNOWN")
    if error is None:
        return "OK"
    return "CANCELLED" if isinstance(error, asyncio.CancelledError) else "UNKNOWN"


class GuardInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    """Request ids, authentication, scopes and limits for every VerifierService RPC (see the module's text)."""

    def __init__(self, auth: Authenticator, limits: Limits, metrics: Metrics,
                 shared: SharedLimits | None = None) -> None:
        self.auth = auth
        self.shared = shared  # the rate and streams limits over every replica (the replica's own apply too)
        self.limits = limits
        self.metrics = metrics
        self.rates = RateLimiter(limits.rate_limit, limits.rate_burst)
        self.budget = ByteBudget(limits.max_buffered_bytes)
        self.in_flight = 0
        self.streams: Counter[str] = Counter()
        self._collect_pending = False
        metrics.buffered.set_function(lambda: self.budget.used)

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]],
                                details: grpc.HandlerCallDetails) -> Any:
        method_path: str = details.method
        if not method_path.startswith(f"/{SERVICE_NAME}/"):
            return await continuation(details)  # health checking, reflection: open
        handler = await continuation(details)
        if handler is None:
            return None  # UNIMPLEMENTED
        method = method_path.rsplit("/", 1)[1]
        metadata = details.invocation_metadata
        given = _metadata_value(metadata, "x-request-id")
        rid = given if given and REQUEST_ID.fullmatch(given) else uuid.uuid4().hex[:16]
        scope = RpcScope(rid, method, OPEN)
        _CURRENT.set(scope)
        try:
            scope.principal = await self.auth.authenticate(_metadata_value(metadata, "authorization"))
            await self._admit(scope)
        except Denied as denied:
            scope.release_all()
            self.metrics.refused.labels(denied.reason).inc()
            self.metrics.rpc_done(method, denied.code.name, time.monotonic() - scope.started)
            if denied.code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                log.warning("%s refused (%s): %s", method, denied.code.name, denied.message)
            return _refusal(handler, denied, rid)
        return self._wrap(handler, scope)

    async def _admit(self, scope: RpcScope) -> None:
        method, principal, limits = scope.method, scope.principal, self.limits
        scope_needed = METHOD_SCOPES.get(method, "admin")
        if not principal.allows(scope_needed):
            raise Denied(grpc.StatusCode.PERMISSION_DENIED, f"{method} needs a token with the {scope_needed!r} scope; "
                         f"this one ({principal.token_id}) has {', '.join(sorted(principal.scopes))}", "permission")
        if self.shared is not None:
            refusal = await self.shared.admit(method, principal.tenant)
            if refusal is not None:
                raise Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal.message, refusal.reason, refusal.retry_after)
        if self.in_flight >= limits.max_concurrent_rpcs:
            raise Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the server has {limits.max_concurrent_rpcs} requests in "
                         "progress, its limit (--max-concurrent); retry in 1 s", "concurrency", retry_after=1.0)
        wait = self.rates.take(principal.tenant)
        if wait is not None:
            raise Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, f"over this tenant's rate limit of {limits.rate_limit:g} "
                         f"requests per second (--rate-limit, burst {limits.rate_burst}); retry in {wait:.2f} s",
                         "rate", retry_after=wait)
        if method in CLIENT_STREAMS and self.streams[principal.tenant] >= limits.max_streams_per_tenant:
            raise Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, f"this tenant has {limits.max_streams_per_tenant} "
                         "streams open, its limit (--max-streams-per-tenant): finish one first; retry in 1 s",
                         "streams", retry_after=1.0)
        # Room for the largest first message, before any of it is read.
        if not await self.budget.reserve(limits.max_message_bytes, BUDGET_WAIT_SECONDS):
            raise Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the server holds {limits.max_buffered_bytes} bytes "
                         "of requests already (--max-buffered-bytes); retry in 1 s", "memory", retry_after=1.0)
        scope.budget = self.budget
        scope.reserved = limits.max_message_bytes
        # However the RPC ends — even a client gone before its message came, so that the handler never runs —
        # the bytes go back when the RPC's task does (release_all is idempotent).
        task = asyncio.current_task()
        if task is not None:
            task.add_done_callback(lambda _: scope.release_all())

    def _begin(self, scope: RpcScope, context: grpc.aio.ServicerContext) -> None:
        _CURRENT.set(scope)
        self.in_flight += 1
        self.metrics.in_flight.inc()
        if scope.method in CLIENT_STREAMS:
            self.streams[scope.principal.tenant] += 1
            self.metrics.streams.labels(scope.method).inc()
        context.set_trailing_metadata((("x-request-id", scope.request_id),))

    def _end(self, scope: RpcScope, context: grpc.aio.ServicerContext, error: BaseException | None) -> None:
        if scope.peak >= LARGE_REQUEST_BYTES:
            self._collect_soon()
        scope.release_all()
        self.in_flight -= 1
        self.metrics.in_flight.dec()
        if scope.method in CLIENT_STREAMS:
            self.streams[scope.principal.tenant] -= 1
            if self.streams[scope.principal.tenant] <= 0:
                del self.streams[scope.principal.tenant]
            self.metrics.streams.labels(scope.method).dec()
        self.metrics.rpc_done(scope.method, _code_name(context, error), time.monotonic() - scope.started)

    def _collect_soon(self) -> None:
        """gRPC's own objects of a call hold its request in reference cycles, which Python frees only when its
        cyclic collector runs — and that counts objects, not bytes: after a large request, collect once the call
        is gone, so that the memory the byte budget promised back is back."""
        if not self._collect_pending:
            self._collect_pending = True
            asyncio.get_running_loop().call_later(0.05, self._collect)

    def _collect(self) -> None:
        self._collect_pending = False
        gc.collect()

    def _wrap(self, handler: Any, scope: RpcScope) -> Any:
        if handler.response_streaming:
            inner_stream = handler.stream_stream if handler.request_streaming else handler.unary_stream

            async def streaming(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
                self._begin(scope, context)
                error: BaseException | None = None
                try:
                    async for item in inner_stream(request, context):
                        yield item
                except BaseException as err:
                    error = err
                    raise
                finally:
                    self._end(scope, context, error)
                    error = None  # no cycle frame -> exception -> traceback -> frame keeping the request alive

            field_name = "stream_stream" if handler.request_streaming else "unary_stream"
            return handler._replace(**{field_name: streaming})
        inner = handler.stream_unary if handler.request_streaming else handler.unary_unary

        async def unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
            self._begin(scope, context)
            error: BaseException | None = None
            try:
                return await inner(request, context)
            except BaseException as err:
                error = err
                raise
            finally:
                self._end(scope, context, error)
                error = None  # no cycle frame -> exception -> traceback -> frame keeping the request alive

        field_name = "stream_unary" if handler.request_streaming else "unary_unary"
        return handler._replace(**{field_name: unary})


def _refusal(handler: Any, denied: Denied, rid: str) -> Any:
    """A handler that answers ``denied`` without reading the request: client-streaming whatever the method's
    shape (the wire is the same), so gRPC does not receive a unary request's message first."""
    trailers = (("x-request-id", rid), *retry_trailers(denied.code, denied.message, denied.retry_after))

    async def refuse(request_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(denied.code, denied.message, trailers)

    async def refuse_stream(request_iterator: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        await context.abort(denied.code, denied.message, trailers)
        yield None  # unreachable: abort raises

    if handler.response_streaming:
        return grpc.stream_stream_rpc_method_handler(refuse_stream, request_deserializer=handler.request_deserializer,
                                                     response_serializer=handler.response_serializer)
    return grpc.stream_unary_rpc_method_handler(refuse, request_deserializer=handler.request_deserializer,
                                                response_serializer=handler.response_serializer)


async def idle_limited(messages: AsyncIterator[T], seconds: float, what: str) -> AsyncIterator[T]:
    """The messages of a client stream; StreamIdle when none comes for ``seconds`` while one is awaited.

    One watchdog timer per stream, not one per message (a timeout per message cost about a tenth of a live
    game's server time): each wait only notes when it began; the timer, when it fires, looks at that and
    either ends the wait (cancelling it, as asyncio.timeout does) or sets itself for the rest of the time."""
    iterator = messages.__aiter__()
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    began = loop.time()  # when the current (or last) wait for a message began
    waiting = False
    expired = False
    handle: asyncio.TimerHandle | None = None

    def watch() -> None:
        nonlocal handle, expired
        now = loop.time()
        if waiting and now - began >= seconds:
            expired = True
            task.cancel()
        else:
            handle = loop.call_at(began + seconds if waiting else now + seconds, watch)

    handle = loop.call_at(began + seconds, watch)
    try:
        while True:
            began = loop.time()
            waiting = True
            try:
                message = await iterator.__anext__()
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if expired and task.uncancel() == 0:
                    raise StreamIdle(f"{what} sent nothing for {seconds:g} s, this server's limit for an idle "
                                     "stream (--stream-idle-timeout): the stream is closed") from None
                raise
            finally:
                waiting = False
            yield message
    finally:
        if handle is not None:
            handle.cancel()


class StreamIdle(Exception):
    """A client stream sent nothing for too long."""
