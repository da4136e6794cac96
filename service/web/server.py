"""The viewer's HTTP server: uvicorn serving the Starlette app on the running event loop, the one
grpc.aio uses, so one process serves both (service/server.py starts and stops it with gRPC).

The socket is bound here (port 0 picks a free one), and uvicorn's own signal handling is off: the
service's ``serve`` handles SIGTERM and SIGINT and stops both servers.

Connections are bounded (docs/security.md#viewer): at most ``max_connections`` open at once (for one more,
the longest idle one — no request in progress — is closed; with none idle, the new one is), and a connection
must send a request's headers within ``header_seconds`` of connecting (or of its last answer; over TLS, its
handshake too) or it is closed — uvicorn has neither, so a thousand connections that never finish their
headers held the process's file descriptors for ever, which gRPC and the store share.
A flood of either is logged once a minute with its count, not once per connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
from collections.abc import Generator
from typing import Any, ClassVar

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from service.config import split_address
from service.web.security import RateLimitedLog

log = logging.getLogger("sgs-verify.viewer")
# The viewer is a person's tool and a small API: a few browser tabs keep some connections each.
MAX_CONNECTIONS = 256
# A request's headers must come within this time of the connection (or of the last answer on it).
HEADER_SECONDS = 10.0
# How long an idle keep-alive connection stays open between requests.
KEEP_ALIVE_SECONDS = 5


class BoundedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a bound on open connections and a deadline for a request's headers (the
    bounds are class attributes of a subclass made per server: ``bounded_protocol``)."""

    max_connections = MAX_CONNECTIONS
    header_seconds = HEADER_SECONDS
    flood_log = RateLimitedLog(log, burst=1, window=60.0)
    counts: ClassVar[dict[str, int]] = {"over": 0, "slow": 0}
    _header_timer: asyncio.TimerHandle | None = None
    _idle_since = 0.0  # (the loop's time) since when it has had no request in progress

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        full = len(self.connections) >= self.max_connections
        super().connection_made(transport)
        self._idle_since = self.loop.time()
        if full:
            # Make room by closing the connection that has waited longest without a request in progress (one that
            # never finished its headers, or an idle keep-alive one), so that half-open connections held open on
            # purpose cannot keep everyone else out; refuse this one only when every other is serving a request.
            idle = [c for c in self.connections
                    if c is not self and isinstance(c, BoundedH11) and c._awaiting_headers()]
            self.counts["over"] += 1
            self.flood_log.warning("the viewer has %d connections open, its limit: for each new one the longest idle "
                                   "is closed (%d so far; %d closed for not sending their headers within %g s)",
                                   self.max_connections, self.counts["over"], self.counts["slow"],
                                   self.header_seconds)
            if not idle:
                transport.abort()
                return
            min(idle, key=lambda c: c._idle_since).transport.abort()
        self._await_headers()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._awaiting_headers():
            if self._header_timer is None:
                self._await_headers()
        elif self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        super().on_response_complete()  # (the keep-alive timer bounds the wait for the next request's first byte)
        self._idle_since = self.loop.time()
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _awaiting_headers(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _await_headers(self) -> None:
        self._header_timer = self.loop.call_later(self.header_seconds, self._headers_late)

    def _headers_late(self) -> None:
        self._header_timer = None
        if self._awaiting_headers() and not self.transport.is_closing():
            self.counts["slow"] += 1
            self.flood_log.warning("closed a viewer connection that sent no request's headers within %g s "
                                   "(%d so far)", self.header_seconds, self.counts["slow"])
            self.transport.abort()


def bounded_protocol(max_connections: int, header_seconds: float) -> type[BoundedH11]:
    return type("BoundedH11", (BoundedH11,), {"max_connections": max_connections, "header_seconds": header_seconds,
                                              "flood_log": RateLimitedLog(log, burst=1, window=60.0),
                                              "counts": {"over": 0, "slow": 0}})


class _Uvicorn(uvicorn.Server):
    handshake_seconds = HEADER_SECONDS

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the service's own handlers stop this server

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's, with a TLS handshake bounded like a request's headers: a connection in its handshake is not
        yet the protocol's (BoundedH11 sees it only after), and asyncio's default gives it 60 s. uvicorn has no
        option for it, so its one call of the loop's create_server is given the timeout, while it starts."""
        loop = asyncio.get_running_loop()
        if self.config.ssl is None:
            await super().startup(sockets)
            return
        loop.create_server = functools.partial(loop.create_server,  # type: ignore[method-assign]
                                               ssl_handshake_timeout=self.handshake_seconds)
        try:
            await super().startup(sockets)
        finally:
            del loop.create_server  # (the instance attribute goes; the loop's own method is back)


_ACCEPT_FAILED = "socket.accept() out of system resource"
_accept_log = RateLimitedLog(log, burst=1, window=60.0)


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Out of file descriptors (EMFILE), asyncio logs a traceback for each listening socket at every retry of its
    accept, a second apart: the server's log grew by megabytes a minute. Said once a minute instead, without the
    traceback; every other report of the loop goes where it went."""
    previous = loop.get_exception_handler()
    if getattr(previous, "quiets_accept_errors", False):
        return

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if str(context.get("message", "")).startswith(_ACCEPT_FAILED):
            _accept_log.warning("cannot accept connections: %s (the process is out of file descriptors?)",
                                context.get("exception"))
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handler.quiets_accept_errors = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handler)


class HttpFrontend:
    def __init__(self, app: ASGIApp, address: str, grace_seconds: float,
                 tls: dict[str, Any] | None = None, max_connections: int = MAX_CONNECTIONS,
                 header_seconds: float = HEADER_SECONDS) -> None:
        """``tls``: uvicorn's ssl_* settings (service/tls.py); the viewer is then served over HTTPS."""
        self.app = app
        self.protocol = bounded_protocol(max_connections, header_seconds)
        self.tls = tls or {}
        self.address = address
        self.grace_seconds = grace_seconds
        self.port = 0
        self.host = ""
        self._server: _Uvicorn | None = None
        self._task: asyncio.Task[None] | None = None
        self._socket: socket.socket | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    async def start(self) -> int:
        """Bind and serve; OSError when the address cannot be listened on."""
        host, port = split_address(self.address, "the viewer's address (--http)")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host, port), family=family)
        sock.setblocking(False)
        self._socket = sock
        self.host, self.port = host, sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=max(1, int(self.grace_seconds)), server_header=False,
                                http=self.protocol, timeout_keep_alive=KEEP_ALIVE_SECONDS, **self.tls)
        quiet_accept_errors(asyncio.get_running_loop())
        server = _Uvicorn(config)
        server.handshake_seconds = self.protocol.header_seconds
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="sgs-verify-http")
        while not server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise OSError(f"the viewer's HTTP server on {self.address} stopped at start")
            await asyncio.sleep(0.01)
        return self.port

    async def stop(self, grace: float | None = None) -> None:
        """Stop accepting, let open requests finish (up to ``grace`` seconds, default the configured), close."""
        if self._server is not None and self._task is not None:
            if grace is not None:
                self._server.config.timeout_graceful_shutdown = max(1, int(grace))
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._server = None
        self._task = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
