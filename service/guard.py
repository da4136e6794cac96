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
import contextlib
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
# How long a request may wait for room in the byte budget with the budget standing still (nothing taken, read or
# given back) before it is refused: while it moves, the uploads ahead of it are being read in turn, and it waits
# on (ByteBudget.reserve); a holder that sends nothing leaves it standing still.
BUDGET_WAIT_SECONDS = 30.0
# After an RPC that held this much of requests, the cyclic garbage collector is run (GuardInterceptor._collect_soon).
LARGE_REQUEST_BYTES = 1 << 20
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

log = logging.getLogger("sgs-verify.service")
audit_log = logging.getLogger("sgs-verify.audit")
T = TypeVar("T")


# ---------------------------------------------------------------------------------------- who

@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a token's tenant and scopes, or anyone on this machine (a server running open: every
    scope, but in the default tenant only — ``confined``)."""

    tenant: str
    scopes: frozenset[str]
    token_id: str = ""
    name: str = ""
    confined: bool = False  # sees its own tenant only, whatever its scopes (open mode)

    def allows(self, scope: str) -> bool:
        return scope in self.scopes or "admin" in self.scopes

    @property
    def admin(self) -> bool:
        """Over every tenant (an admin token; never open mode)."""
        return "admin" in self.scopes and not self.confined

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


# A server running open (loopback, no active token): every scope, in the default tenant only — its replays are
# the only ones it sees or stores (docs/security.md; issue 27, item 5: it was admin over every tenant).
OPEN = Principal(DEFAULT_TENANT, frozenset(SCOPES), confined=True)


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
    """Request bytes held at once, over every request (on the event loop: no locks), and by each tenant.

    - ``limit``: over every tenant; ``tenant_share``: what one tenant may hold of it, so that one tenant's
      requests (silent ones included) never leave the others without room.
    - Waiters are served in order, so a large request is not passed over for ever by small ones — except a
      waiter held back only by its own tenant's share, which does not hold up other tenants.
    - The turn (``take_turn``): when a stream that already holds bytes needs room for its next message and
      there is none, it waits for the turn; the stream holding the turn reads on past the budget (by at most
      the one game it is reading, which the server bounds on its own), so streams that each hold part of the
      budget and each need more are finished one after the other instead of all waiting for each other and
      failing together (issue 27, item 11). What it reads past the budget is counted in ``past``, outside the
      budget and its tenant's share (``read_past``): the turn is not room taken from the others, who keep theirs
      however long it is held (issue 43, N1: a 64 MiB upload dribbled a byte every 2 s, or a 56 MiB stream gone
      quiet, held the whole budget, and every other tenant's call waited 30 s and was refused)."""

    def __init__(self, limit: int, tenant_share: int | None = None) -> None:
        self.limit = limit
        self.tenant_share = limit if tenant_share is None else tenant_share
        self.used = 0
        self.by_tenant: Counter[str] = Counter()
        # Of ``used``: room held for first messages not read yet (each call's room for its largest message,
        # RpcScope.reserved), in all and by tenant. A promise of room, not bytes in memory.
        self.unread = 0
        self.unread_by_tenant: Counter[str] = Counter()
        # Room promised to first messages and taken meanwhile by streams' later messages (take_past_promises), in
        # all and by tenant: what the promised messages must make up for when they come (settle_promise).
        self.overbooked = 0
        self.overbooked_by_tenant: Counter[str] = Counter()
        # (n, tenant, granted, promised: the room is a first message's, promised as it is granted)
        self._waiters: deque[tuple[int, str, asyncio.Future[None], bool]] = deque()
        self.turn: object | None = None  # who holds the turn (an RpcScope)
        self.past = 0  # bytes the turn's holder read past the budget (not in ``used``): at most the one game
        self.moved = 0  # how many times bytes were taken, read or given back: a waiter waits while it changes
        self._turn_waiters: deque[tuple[object, asyncio.Future[None]]] = deque()
        self._room = asyncio.Event()

    def _fits(self, n: int, tenant: str) -> bool:
        return self.used + n <= self.limit and self.by_tenant[tenant] + n <= self.tenant_share

    def _within_share(self, n: int, tenant: str) -> bool:
        return self.by_tenant[tenant] + n <= self.tenant_share

    def _queue_ahead(self) -> bool:
        """Whether a waiter is ahead that only global room holds back (it must not be passed over)."""
        return any(self._within_share(n, tenant) for n, tenant, _, _ in self._waiters)

    def _add(self, n: int, tenant: str) -> None:
        self.used += n
        self.by_tenant[tenant] += n
        self.moved += 1

    def try_take(self, n: int, tenant: str = "", before_waiters: bool = False) -> bool:
        """Take ``n`` bytes now if they fit; ``before_waiters``: even with requests waiting (a message of a
        request already admitted)."""
        if not self._fits(n, tenant) or (not before_waiters and self._queue_ahead()):
            return False
        self._add(n, tenant)
        return True

    def read_past(self, n: int) -> None:
        """Count ``n`` bytes the stream holding the turn reads where they do not fit: past the budget, and past its
        tenant's share (the server's bound on one game bounds them), not in the room the others are served from."""
        self.past += n
        self.moved += 1

    def release_past(self, n: int) -> None:
        self.past = max(0, self.past - n)
        self.moved += 1

    def room_for(self, n: int, tenant: str = "") -> bool:
        return self._fits(n, tenant)

    def promise(self, n: int, tenant: str) -> None:
        """``n`` bytes just reserved are room held for a first message not read yet."""
        self.unread += n
        self.unread_by_tenant[tenant] += n

    def keep_promise(self, n: int, tenant: str, freed: int | None = None) -> None:
        """The first message came (or never will): its ``n`` bytes of room are no longer a promise; ``freed`` (all
        ``n`` unless said) of them go back, which makes up for as much room taken past the promises."""
        freed = n if freed is None else freed
        self.unread = max(0, self.unread - n)
        self.overbooked = 0 if not self.unread else max(0, self.overbooked - freed)
        left = self.unread_by_tenant[tenant] - n
        if left > 0:
            self.unread_by_tenant[tenant] = left
            self._repay(tenant, freed)
        else:
            del self.unread_by_tenant[tenant]
            del self.overbooked_by_tenant[tenant]  # nothing promised is left to come: nothing to make up for

    def _repay(self, tenant: str, freed: int) -> None:
        left = self.overbooked_by_tenant[tenant] - freed
        if left > 0:
            self.overbooked_by_tenant[tenant] = left
        else:
            del self.overbooked_by_tenant[tenant]

    def fits_read(self, n: int, tenant: str) -> bool:
        """Do ``n`` more bytes fit among the bytes actually read (the room promised to first messages left out)?"""
        return (self.used - self.unread + n <= self.limit
                and self.by_tenant[tenant] - self.unread_by_tenant[tenant] + n <= self.tenant_share)

    def take_past_promises(self, n: int, tenant: str) -> bool:
        """Take ``n`` bytes of a stream's later message where they fit among the bytes actually read, the room
        promised to first messages not read yet left out; what they take of that room is owed (settle_promise)."""
        if not self.fits_read(n, tenant):
            return False
        self.overbooked += max(0, self.used + n - self.limit) - max(0, self.used - self.limit)
        by_tenant = self.by_tenant[tenant]
        self.overbooked_by_tenant[tenant] += (max(0, by_tenant + n - self.tenant_share)
                                              - max(0, by_tenant - self.tenant_share))
        if not self.overbooked_by_tenant[tenant]:
            del self.overbooked_by_tenant[tenant]
        self._add(n, tenant)
        return True

    def settle_promise(self, reserved: int, size: int, tenant: str) -> bool:
        """A first message of ``size`` bytes came for the ``reserved`` room promised to it: whether it is taken.
        It is, unless streams have taken promised room meanwhile (of its tenant's share, or of the budget) and it
        no longer fits among the bytes actually read: then it is refused, so that what is held never passes the
        budget or a tenant's share. Either way the room it does not keep makes up for room taken."""
        taken = size <= reserved
        if taken and self.overbooked:
            taken = self.used - self.unread + size <= self.limit
        if taken and self.overbooked_by_tenant[tenant]:
            taken = self.by_tenant[tenant] - self.unread_by_tenant[tenant] + size <= self.tenant_share
        self.keep_promise(reserved, tenant, freed=reserved - size if taken else reserved)
        return taken

    async def reserve(self, n: int, timeout: float, tenant: str = "", promised: bool = False) -> bool:
        """Take ``n`` bytes, waiting in order for room; False once ``timeout`` s pass with the budget standing still
        (no bytes taken, read or given back meanwhile). While it moves, the requests ahead are being read and
        answered, and a waiter's turn is coming: it waits on (issue 43, N7: of 8 concurrent 60 MiB uploads of two
        tenants, the 4 queued behind their tenants' shares were refused after 30 s while the others were still
        being read, instead of being finished in turn). ``promised``: the room is for a first message not read yet
        (``promise``), so counted the moment it is granted — not once the waiter runs again, by when a stream's
        later message may have come and found the room taken, yet not promised, and been refused."""
        if self.try_take(n, tenant):
            if promised:
                self.promise(n, tenant)
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (n, tenant, future, promised)
        self._waiters.append(entry)
        moved = self.moved
        try:
            while True:
                try:
                    await asyncio.wait_for(asyncio.shield(future), timeout)
                    return True
                except TimeoutError:
                    if future.done():  # granted at the last moment
                        return True
                    if self.moved != moved:
                        moved = self.moved
                        continue
                    self._waiters.remove(entry)
                    self._grant()
                    return False
        except asyncio.CancelledError:
            if future.done():
                if promised:
                    self.keep_promise(n, tenant)
                self.release(n, tenant)
            elif entry in self._waiters:
                self._waiters.remove(entry)
                self._grant()
            raise

    def release(self, n: int, tenant: str = "") -> None:
        self.moved += 1
        self.used = max(0, self.used - n)
        left = self.by_tenant[tenant] - n
        if left > 0:
            self.by_tenant[tenant] = left
        else:
            del self.by_tenant[tenant]
        self._grant()

    def _grant(self) -> None:
        for entry in list(self._waiters):
            n, tenant, future, promised = entry
            if future.done():
                self._waiters.remove(entry)
                continue
            if not self._within_share(n, tenant):
                continue  # its own tenant's share holds it back, not the others
            if self.used + n > self.limit:
                break  # in order: nobody passes a request that waits for global room
            self._waiters.remove(entry)
            self._add(n, tenant)
            if promised:
                self.promise(n, tenant)
            future.set_result(None)
        self._room.set()  # wakes the streams waiting for room (room_or_turn), each to look again
        self._room = asyncio.Event()

    async def room_or_turn(self, n: int, tenant: str, holder: object, timeout: float) -> bool:
        """Wait until ``n`` more bytes fit for ``tenant``, or ``holder`` has the turn; False after ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self._fits(n, tenant) and self.turn is not holder:
            if self.turn is None:
                self.turn = holder
                return True
            if not any(h is holder for h, _ in self._turn_waiters):
                self._turn_waiters.append((holder, loop.create_future()))
            room = self._room
            left = deadline - loop.time()
            if left <= 0:
                self._leave_turn_queue(holder)
                return False
            room_waiter: asyncio.Future[Any] = asyncio.ensure_future(room.wait())
            turn_waiter: asyncio.Future[Any] = next(f for h, f in self._turn_waiters if h is holder)
            try:
                done, _ = await asyncio.wait((room_waiter, turn_waiter), timeout=left,
                                             return_when=asyncio.FIRST_COMPLETED)
            finally:
                room_waiter.cancel()
            if not done:
                self._leave_turn_queue(holder)
                return False
        self._leave_turn_queue(holder)
        return True

    def _leave_turn_queue(self, holder: object) -> None:
        for entry in list(self._turn_waiters):
            if entry[0] is holder:
                self._turn_waiters.remove(entry)

    def end_turn(self, holder: object) -> None:
        """``holder`` holds nothing more of the budget: the turn (if it had it) passes on, in order."""
        self._leave_turn_queue(holder)
        if self.turn is not holder:
            return
        self.turn = None
        while self._turn_waiters:
            nxt, future = self._turn_waiters.popleft()
            if not future.done():
                self.turn = nxt
                future.set_result(None)
                break


# ---------------------------------------------------------------------------------------- one RPC

@dataclass(slots=True)
class RpcScope:
    """What the guard knows of the RPC in progress (service.guard.current()), and the budget bytes it holds."""

    request_id: str
    method: str
    principal: Principal
    budget: ByteBudget | None = None
    reserved: int = 0  # held for the first message, before it is read
    next_room: int = 0  # held for an upload's next message, from when it was seen to fit until it comes
    held: int = 0  # bytes of messages read and not released, in the budget
    past: int = 0  # and past it, read with the turn (ByteBudget.read_past)
    peak: int = 0  # the most it held of messages read (in and past the budget)
    started: float = field(default_factory=time.monotonic)
    max_events: int = 0  # the server's limit of events in one game (0: not counted)
    events: int = 0  # events received so far (counted on the wire, before parsing)
    revoked: bool = False  # its token was found revoked while it ran: it is being cut
    first_read: bool = False  # its first message has arrived
    first_read_before: bool = False  # (charge: the message being charged is a later one)
    counted: bool = False  # in the guard's calls in progress (and streams per tenant)

    @property
    def tenant(self) -> str:
        return self.principal.tenant

    def charge(self, size: int) -> str | None:
        """Account a message of ``size`` bytes just received; why it cannot be taken, if it cannot."""
        self.first_read_before = self.first_read
        self.first_read = True
        budget = self.budget
        if budget is None:
            return None
        if self.next_room:  # (an upload's later message, for which room was held since it was seen: _gated)
            room, self.next_room = self.next_room, 0
            if size <= room:
                budget.release(room - size, self.tenant)
                self.held += size
                self.peak = max(self.peak, self.held + self.past)
                return None
            budget.release(room, self.tenant)
        if self.reserved:
            reserved, self.reserved = self.reserved, 0
            if budget.settle_promise(reserved, size, self.tenant):
                self.held += size
                self.peak = max(self.peak, self.held + self.past)
                budget.release(reserved - size, self.tenant)
                return None
            budget.release(reserved, self.tenant)
            if size <= reserved:  # its room was taken by streams' later messages meanwhile: refused, not held
                return self._refusal(budget)
        if budget.try_take(size, self.tenant, before_waiters=True):
            pass
        elif budget.turn is self:
            budget.read_past(size)  # (where it does not fit: outside the room the others are served from)
            self.past += size
            self.peak = max(self.peak, self.held + self.past)
            return None
        elif self.first_read_before and budget.take_past_promises(size, self.tenant):
            # A later message of a stream, read once the stream saw room for it (Guard._gated), where the room has
            # since been promised to other calls' first messages, not yet read (their callers had the reservation
            # while this stream's client was still sending): it is taken, past those promises, within the limits
            # in bytes actually read; a promised message that then no longer fits is refused (settle_promise).
            # One call just begun is told to retry rather than a stream in progress cut (a CI run: a well-behaved
            # live game's second message refused while two calls of its tenant had just been admitted).
            pass
        else:
            return self._refusal(budget)
        self.held += size
        self.peak = max(self.peak, self.held + self.past)
        return None

    def _refusal(self, budget: ByteBudget) -> str:
        return (f"the server holds {budget.limit} bytes of requests already (--max-buffered-bytes), "
                f"{budget.by_tenant[self.tenant]} of them this tenant's (its share: {budget.tenant_share}); "
                f"retry in 1 s{f' (request id {self.request_id})' if self.request_id else ''}")

    def release_received(self) -> None:
        """The messages read so far are no longer held (a live game's batch, once the worker has it)."""
        if self.budget is not None:
            if self.past:
                self.budget.release_past(self.past)
            if self.held:
                self.budget.release(self.held, self.tenant)
            self.budget.end_turn(self)
        self.held = self.past = 0

    def release_all(self) -> None:
        if self.budget is not None:
            if self.reserved:
                self.budget.keep_promise(self.reserved, self.tenant)
            if self.past:
                self.budget.release_past(self.past)
            if self.held + self.reserved + self.next_room:
                self.budget.release(self.held + self.reserved + self.next_room, self.tenant)
            self.budget.end_turn(self)
        self.held = self.reserved = self.past = self.next_room = 0


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
        self.budget = ByteBudget(limits.max_buffered_bytes, limits.tenant_share)
        self.in_flight = 0
        self.streams: Counter[str] = Counter()
        self._collect_pending = False
        self._checks: set[asyncio.Task[None]] = set()
        metrics.buffered.set_function(lambda: self.budget.used)

    async def intercept_service(self, continuation: Callable[[Any], Awaitable[Any]],
                                details: grpc.HandlerCallDetails) -> Any:
        method_path: str = details.method
        if not method_path.startswith(f"/{SERVICE_NAME}/"):
            return await continuation(details)  # health checking, reflection: open (limited on their own)
        handler = await continuation(details)
        if handler is None:
            return None  # UNIMPLEMENTED
        method = method_path.rsplit("/", 1)[1]
        metadata = details.invocation_metadata
        given = _metadata_value(metadata, "x-request-id")
        rid = given if given and REQUEST_ID.fullmatch(given) else uuid.uuid4().hex[:16]
        scope = RpcScope(rid, method, OPEN, max_events=self.limits.max_events_per_game)
        _CURRENT.set(scope)
        authorization = _metadata_value(metadata, "authorization")
        try:
            scope.principal = await self.auth.authenticate(authorization)
            await self._admit(scope)
        except Denied as denied:
            scope.release_all()
            self._uncount(scope)
            self.metrics.refused.labels(denied.reason).inc()
            self.metrics.rpc_done(method, denied.code.name, time.monotonic() - scope.started)
            if denied.code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
                log.warning("%s refused (%s): %s", method, denied.code.name, denied.message)
            return _refusal(handler, denied, rid)
        return self._wrap(handler, scope, authorization)

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
        # Counted at once, with no await between the checks above and the counts: calls arriving together must not
        # all pass the checks before any is counted (40 streams opened at once were all taken, over a cap of 32).
        self._count(scope)
        task = asyncio.current_task()
        if task is not None:  # (however the call ends, even before its handler runs: _uncount is idempotent)
            task.add_done_callback(lambda _: self._uncount(scope))
        # Room for the largest first message, before any of it is read — within the tenant's share of the budget,
        # and only for as long as the first message takes to come (--first-message-timeout, see _first).
        if not await self.budget.reserve(limits.max_message_bytes, BUDGET_WAIT_SECONDS, principal.tenant,
                                         promised=True):
            raise Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the server holds {limits.max_buffered_bytes} bytes "
                         "of requests already (--max-buffered-bytes), or this tenant its share of them "
                         f"({self.budget.tenant_share}); retry in 1 s", "memory", retry_after=1.0)
        scope.budget = self.budget
        scope.reserved = limits.max_message_bytes  # (promised by reserve, as it was granted)
        # However the RPC ends — even a client gone before its message came, so that the handler never runs —
        # the bytes go back when the RPC's task does (release_all is idempotent).
        if task is not None:
            task.add_done_callback(lambda _: scope.release_all())

    @contextlib.asynccontextmanager
    async def admitted(self, principal: Principal, method: str, reserve: int) -> AsyncIterator[RpcScope]:
        """The same accounting for a request that does not come through gRPC (the viewer's upload, service/web):
        counted in --max-concurrent and, as a client stream, in the tenant's --max-streams-per-tenant, with
        ``reserve`` bytes of the budget held from before its body is read until it ends (waiting up to
        BUDGET_WAIT_SECONDS for room, as an RPC's first message does). Denied when a limit refuses it (the
        refusal counted, like an RPC's); the scope of its caller and rate are the caller's to check first. With
        limits shared over replicas, it holds one of the tenant's streams over every replica too."""
        lease: str | None = None
        if self.shared is not None:
            refusal, lease = await self.shared.hold_stream(method, principal.tenant)
            if refusal is not None:
                raise self._refused(Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal.message, refusal.reason,
                                           refusal.retry_after))
        try:
            async with self._admitted_here(principal, method, reserve) as scope:
                yield scope
        finally:
            if lease is not None and self.shared is not None:
                self.shared.release(lease)

    @contextlib.asynccontextmanager
    async def _admitted_here(self, principal: Principal, method: str, reserve: int) -> AsyncIterator[RpcScope]:
        """``admitted``'s accounting in this replica."""
        limits = self.limits
        if self.in_flight >= limits.max_concurrent_rpcs:
            raise self._refused(Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the server has "
                                       f"{limits.max_concurrent_rpcs} requests in progress, its limit "
                                       "(--max-concurrent); retry in 1 s", "concurrency", retry_after=1.0))
        if self.streams[principal.tenant] >= limits.max_streams_per_tenant:
            raise self._refused(Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, f"this tenant has "
                                       f"{limits.max_streams_per_tenant} uploads and streams open, its limit "
                                       "(--max-streams-per-tenant): finish one first; retry in 1 s", "streams",
                                       retry_after=1.0))
        # Counted while it waits for room, so that waiting requests are bound by --max-concurrent too.
        self.in_flight += 1
        self.streams[principal.tenant] += 1
        self.metrics.in_flight.inc()
        self.metrics.streams.labels(method).inc()
        scope = RpcScope(uuid.uuid4().hex[:16], method, principal)
        budget, tenant = self.budget, principal.tenant
        no_room = Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, f"the server holds {limits.max_buffered_bytes} bytes "
                         "of requests already (--max-buffered-bytes), or this tenant its share of them "
                         f"({budget.tenant_share}); retry in 1 s", "memory", retry_after=1.0)
        try:
            # Up to the tenant's share, as an RPC's first message; the rest (a record larger than the share) as a
            # stream's later messages: when room comes, or with the budget's turn (read past it, one at a time).
            first = min(reserve, budget.tenant_share)
            if not await budget.reserve(first, BUDGET_WAIT_SECONDS, tenant):
                raise self._refused(no_room)
            scope.budget, scope.held, scope.peak = budget, first, first
            rest = reserve - first
            if rest and budget.try_take(rest, tenant, before_waiters=True):
                scope.held += rest
            elif rest:
                if not await budget.room_or_turn(rest, tenant, scope, BUDGET_WAIT_SECONDS):
                    raise self._refused(no_room)
                if budget.try_take(rest, tenant, before_waiters=True):
                    scope.held += rest
                elif budget.turn is scope:  # past the budget and the share: not the others' room (N1)
                    budget.read_past(rest)
                    scope.past = rest
                else:
                    raise self._refused(no_room)
            scope.peak = reserve
            yield scope
        finally:
            if scope.peak >= LARGE_REQUEST_BYTES:
                self._collect_soon()
            scope.release_all()
            self.in_flight -= 1
            self.metrics.in_flight.dec()
            self.streams[principal.tenant] -= 1
            if self.streams[principal.tenant] <= 0:
                del self.streams[principal.tenant]
            self.metrics.streams.labels(method).dec()

    def _refused(self, denied: Denied) -> Denied:
        self.metrics.refused.labels(denied.reason).inc()
        return denied

    def _count(self, scope: RpcScope) -> None:
        """The call is in progress (--max-concurrent), and a client stream of its tenant's (--max-streams-...)."""
        scope.counted = True
        self.in_flight += 1
        self.metrics.in_flight.inc()
        if scope.method in CLIENT_STREAMS:
            self.streams[scope.principal.tenant] += 1
            self.metrics.streams.labels(scope.method).inc()

    def _uncount(self, scope: RpcScope) -> None:
        if not scope.counted:
            return
        scope.counted = False
        self.in_flight -= 1
        self.metrics.in_flight.dec()
        if scope.method in CLIENT_STREAMS:
            self.streams[scope.principal.tenant] -= 1
            if self.streams[scope.principal.tenant] <= 0:
                del self.streams[scope.principal.tenant]
            self.metrics.streams.labels(scope.method).dec()

    def _begin(self, scope: RpcScope, context: grpc.aio.ServicerContext, authorization: str | None
               ) -> _TokenWatch | None:
        _CURRENT.set(scope)
        context.set_trailing_metadata((("x-request-id", scope.request_id),))
        task = asyncio.current_task()
        if not scope.principal.token_id or task is None or not authorization:
            return None
        return self._watch_token(scope, task, authorization)

    def _watch_token(self, scope: RpcScope, task: asyncio.Task[Any], authorization: str) -> _TokenWatch:
        """Re-check the call's token every TOKEN_CACHE_SECONDS while it runs (a long stream, a slow verification):
        once it is revoked the call is cancelled — so nothing is stored for it — and answered UNAUTHENTICATED
        (issue 27, item 9). A check is the authenticator's, cached as any: within 2 x TOKEN_CACHE_SECONDS."""
        loop = asyncio.get_running_loop()
        watch = _TokenWatch()

        async def check() -> None:
            try:
                await self.auth.authenticate(authorization)
            except Denied as denied:
                if denied.code == grpc.StatusCode.UNAUTHENTICATED and not task.done():
                    scope.revoked = True
                    log.warning("%s cut: its token %s is no longer valid (revoked while the call ran)",
                                scope.method, scope.principal.token_id)
                    task.cancel()
                    return
            if not task.done() and not watch.stopped:
                watch.handle = loop.call_later(TOKEN_CACHE_SECONDS, start)

        def start() -> None:
            checker = loop.create_task(check())
            self._checks.add(checker)  # (a task nothing refers to may be collected before it runs)
            checker.add_done_callback(self._checks.discard)

        watch.handle = loop.call_later(TOKEN_CACHE_SECONDS, start)
        return watch

    def _end(self, scope: RpcScope, context: grpc.aio.ServicerContext, error: BaseException | None,
             watch: _TokenWatch | None) -> None:
        if watch is not None:
            watch.cancel()
        if scope.peak >= LARGE_REQUEST_BYTES:
            self._collect_soon()
        scope.release_all()
        self._uncount(scope)
        code = "UNAUTHENTICATED" if scope.revoked else _code_name(context, error)
        self.metrics.rpc_done(scope.method, code, time.monotonic() - scope.started)

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

    async def _first(self, scope: RpcScope, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
        """The first request message, which must come within --first-message-timeout of the call: until it does,
        the call holds room in the byte budget for it (issue 27, item 1: silent calls held it for ever)."""
        seconds = self.limits.first_message_seconds
        try:
            async with asyncio.timeout(seconds):
                return await anext(requests)
        except TimeoutError:
            self.metrics.refused.labels("first-message").inc()
            await abort(context, grpc.StatusCode.DEADLINE_EXCEEDED, f"{scope.method} sent no request message within "
                        f"{seconds:g} s of the call, this server's limit (--first-message-timeout)")
        except StopAsyncIteration:
            if scope.method in CLIENT_STREAMS:
                return _NO_MESSAGE  # (an empty stream: its handler says what it lacks)
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, f"{scope.method} sent no request message")
        raise AssertionError("unreachable: abort raises")

    async def _gated(self, scope: RpcScope, requests: AsyncIterator[Any], first: Any,
                     context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        """A client stream's messages: the first (already read), then each later one read only once the budget
        has room for it or this stream has the turn (ByteBudget: streams that need more are served in turn)."""
        if first is _NO_MESSAGE:
            return
        yield first
        budget, need = self.budget, self.limits.max_message_bytes
        while True:
            waits = not budget.room_for(need, scope.tenant) and budget.turn is not scope
            if waits and not await budget.room_or_turn(need, scope.tenant, scope, self.limits.stream_idle_seconds):
                await abort(context, grpc.StatusCode.RESOURCE_EXHAUSTED, "no room in the server's budget of "
                            f"request bytes (--max-buffered-bytes) for {self.limits.stream_idle_seconds:g} s; "
                            "retry in 1 s", retry_after=1.0)
            if (scope.method == "UploadLog" and budget.turn is not scope and not scope.next_room
                    and budget.try_take(need, scope.tenant, before_waiters=True)):
                # An upload's messages come one after the other: the room it was seen to have is held for its next
                # message until that comes (charge), so that other streams' messages, read meanwhile, cannot take
                # it and have this one refused mid-upload (issue 43, N7: 4 of 8 concurrent 60 MiB uploads were
                # refused so). A live game's next batch may be minutes away: its room is not held.
                scope.next_room = need
            try:
                message = await anext(requests)
            except StopAsyncIteration:
                return
            yield message

    async def _revoked(self, scope: RpcScope, context: grpc.aio.ServicerContext) -> None:
        task = asyncio.current_task()
        if task is not None:
            while task.uncancel():
                pass
        self.metrics.refused.labels("unauthenticated").inc()
        await abort(context, grpc.StatusCode.UNAUTHENTICATED, "the token was revoked while the call ran: it is "
                    "ended, and nothing it sent is stored")

    def _wrap(self, handler: Any, scope: RpcScope, authorization: str | None) -> Any:
        """The handler behind the guard, as a client-streaming one whatever its shape (the wire is the same), so
        that the guard reads the first message itself, within --first-message-timeout."""
        unary_request = not handler.request_streaming
        if handler.response_streaming:
            inner_stream = handler.stream_stream if handler.request_streaming else handler.unary_stream

            async def streaming(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
                                ) -> AsyncIterator[Any]:
                watch = self._begin(scope, context, authorization)
                error: BaseException | None = None
                try:
                    first = await self._first(scope, requests, context)
                    source = first if unary_request else self._gated(scope, requests, first, context)
                    async for item in inner_stream(source, context):
                        yield item
                except asyncio.CancelledError as err:
                    if not scope.revoked:
                        error = err
                        raise
                    await self._revoked(scope, context)
                except BaseException as err:
                    error = err
                    raise
                finally:
                    self._end(scope, context, error, watch)
                    error = None  # no cycle frame -> exception -> traceback -> frame keeping the request alive

            return grpc.stream_stream_rpc_method_handler(streaming, request_deserializer=handler.request_deserializer,
                                                         response_serializer=handler.response_serializer)
        inner = handler.stream_unary if handler.request_streaming else handler.unary_unary

        async def unary(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
            watch = self._begin(scope, context, authorization)
            error: BaseException | None = None
            try:
                first = await self._first(scope, requests, context)
                return await inner(first if unary_request else self._gated(scope, requests, first, context), context)
            except asyncio.CancelledError as err:
                if not scope.revoked:
                    error = err
                    raise
                await self._revoked(scope, context)
            except BaseException as err:
                error = err
                raise
            finally:
                self._end(scope, context, error, watch)
                error = None  # no cycle frame -> exception -> traceback -> frame keeping the request alive

        return grpc.stream_unary_rpc_method_handler(unary, request_deserializer=handler.request_deserializer,
                                                    response_serializer=handler.response_serializer)


_NO_MESSAGE = object()  # a client stream closed before its first message


class _TokenWatch:
    """The timer of a call's next token check (GuardInterceptor._watch_token)."""

    def __init__(self) -> None:
        self.handle: asyncio.TimerHandle | None = None
        self.stopped = False

    def cancel(self) -> None:
        self.stopped = True
        if self.handle is not None:
            self.handle.cancel()


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
