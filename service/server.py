"""The gRPC server: the VerifierService plus health checking and reflection, graceful stop.

``serve(config)`` runs until SIGTERM or SIGINT: health turns NOT_SERVING, new RPCs are
refused, in-flight RPCs get ``grace_seconds`` to finish, pending store writes complete (each
replay is one transaction, so nothing is half-written), then the pools and the database close.
``BackgroundServer`` runs the same server on its own event loop in a thread (tests, benchmark).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import signal
import socket
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from service.config import ServiceConfig
from service.reflection import enable_server_reflection
from service.servicer import SERVICE_NAME, VerifierServicer, new_io_executor
from service.workers import WorkerPool
from storage import migrate
from storage.store import SchemaOutOfDate, Store

if TYPE_CHECKING:
    from service.web.server import HttpFrontend

IO_THREADS = 4


class ServerStartError(RuntimeError):
    """The server could not start (address in use, database unusable); the message says why."""


def open_store(config: ServiceConfig) -> Store:
    """Open the configured database, migrating it when configured to (the SQLite default)."""
    store = Store.open(config.database_url, busy_timeout_ms=config.busy_timeout_ms,
                       pool_size=IO_THREADS)
    try:
        if config.should_migrate:
            migrate.upgrade(store.engine)
        else:
            current, head = migrate.current_revision(store.engine), migrate.head_revision()
            if current != head:
                raise SchemaOutOfDate(
                    f"the database {store.url} is at schema revision {current or '(empty)'}, this version needs "
                    f"{head}: run `sgs-verify db upgrade --db URL` first (or serve with --migrate)")
    except Exception:
        store.close()
        raise
    return store


class VerificationServer:
    """One server: gRPC on grpc.aio, the worker pool, the store."""

    def __init__(self, config: ServiceConfig, store: Store | None = None, viewer_guard: Any = None) -> None:
        """``viewer_guard``: decides which /api/ requests of the viewer may go on (service.web.app.Guard;
        None lets all through)."""
        config.check()
        self.config = config
        self.store = store
        self.owns_store = store is None
        self.port = 0
        self.server: grpc.aio.Server | None = None
        self.health = health.aio.HealthServicer()
        self.pool: WorkerPool | None = None
        self.io_executor: ThreadPoolExecutor | None = None
        self.viewer_guard = viewer_guard
        self.servicer: VerifierServicer | None = None
        self.http: HttpFrontend | None = None

    @property
    def address(self) -> str:
        host = self.config.address.rsplit(":", 1)[0]
        return f"{host}:{self.port}"

    async def start(self) -> int:
        config = self.config
        if self.store is None:
            self.store = await asyncio.to_thread(open_store, config)
        limits = config.limits
        self.pool = WorkerPool(config.workers)
        self.io_executor = new_io_executor(IO_THREADS)
        servicer = VerifierServicer(self.store, limits, self.pool, self.io_executor)
        self.servicer = servicer
        server = grpc.aio.server(options=[
            ("grpc.max_receive_message_length", limits.max_message_bytes),
            ("grpc.max_send_message_length", max(4 * limits.max_message_bytes, 64 * 1024 * 1024)),
            ("grpc.so_reuseport", 0),
        ])
        server.add_generic_rpc_handlers((servicer.generic_handler(),))
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        enable_server_reflection((SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name), server)
        # Asked first, so that a busy port is said plainly (gRPC would log a raw error of its own).
        failure: Exception | str | None = address_problem(config.address)
        if failure is None:
            try:
                self.port = server.add_insecure_port(config.address)
            except RuntimeError as err:
                self.port = 0
                failure = err
        if not self.port:
            await self._close_resources()
            raise ServerStartError(f"cannot listen on {config.address}: {failure or 'the address is in use'}")
        await self.pool.warm_up()
        if config.http_address is not None:
            try:
                self.http = await self._start_viewer(servicer)
            except Exception:
                await self._close_resources()
                raise
        await server.start()
        self.server = server
        for name in ("", SERVICE_NAME):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        return self.port

    async def _start_viewer(self, servicer: VerifierServicer) -> HttpFrontend:
        """The viewer and its JSON API (service/web), on this event loop, over the same store, workers and
        I/O threads as gRPC."""
        config = self.config
        assert config.http_address is not None and self.store is not None
        assert self.pool is not None and self.io_executor is not None
        try:
            from service.web.app import ViewerApi, allow_all, create_app
            from service.web.server import HttpFrontend
        except ImportError as err:
            raise ServerStartError(f"the viewer (--http) needs the web extra: pip install 'sgs-verify[web]' "
                                   f"({err})") from None
        api = ViewerApi(self.store, servicer, self.pool, self.io_executor, config.limits)
        frontend = HttpFrontend(create_app(api, self.viewer_guard or allow_all), config.http_address,
                                config.grace_seconds)
        try:
            await frontend.start()
        except OSError as err:
            raise ServerStartError(f"cannot listen on {config.http_address} (the viewer, --http): "
                                   f"{err.strerror or err}") from None
        return frontend

    async def stop(self, grace: float | None = None) -> None:
        """Refuse new RPCs, let in-flight ones finish (up to ``grace`` seconds), then close."""
        grace = self.config.grace_seconds if grace is None else grace
        await self.health.enter_graceful_shutdown()
        if self.http is not None:
            await self.http.stop(grace)
            self.http = None
        if self.server is not None:
            await self.server.stop(grace)
            self.server = None
        await self._close_resources()

    async def _close_resources(self) -> None:
        def close() -> None:
            # Pending store writes finish before the database closes.
            if self.io_executor is not None:
                self.io_executor.shutdown(wait=True)
            if self.pool is not None:
                self.pool.shutdown()
            if self.store is not None and self.owns_store:
                self.store.close()

        await asyncio.to_thread(close)

    async def wait(self) -> None:
        if self.server is not None:
            await self.server.wait_for_termination()


def address_problem(address: str) -> str | None:
    """Why the server could not listen on HOST:PORT — the port is in use, the host is not this machine's
    — or None if it can (or if that cannot be told before trying: gRPC then says)."""
    host, _, port_text = address.rpartition(":")
    host = host.strip("[]")
    try:
        port = int(port_text)
    except ValueError:
        return f"{port_text!r} is not a port number (HOST:PORT)"
    if port == 0:
        return None
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as err:
        return f"the host {host!r} cannot be resolved ({err})"
    for family, kind, proto, _, sockaddr in infos:
        with contextlib.closing(socket.socket(family, kind, proto)) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC binds
            if family == socket.AF_INET6:
                with contextlib.suppress(OSError):
                    probe.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                probe.bind(sockaddr)
            except OSError as err:
                if err.errno == errno.EADDRINUSE:
                    return "the port is in use (is another server running there?); choose another with --address"
                if err.errno == errno.EADDRNOTAVAIL:
                    return f"{host} is not an address of this machine"
                if err.errno == errno.EACCES:
                    return f"no permission to listen on port {port} (ports below 1024 need privileges)"
                return err.strerror or str(err)
    return None


def describe_start(server: VerificationServer) -> str:
    config = server.config
    assert server.store is not None
    where = (f"{config.data_dir / 'replays.sqlite3'} (embedded SQLite)" if config.embedded
             else server.store.url)
    limits = config.limits
    return (f"sgs-verify: listening on {server.address} (gRPC, plaintext; health and reflection on)\n"
            f"sgs-verify: data in {where}\n"
            f"sgs-verify: {config.workers} verification worker(s); limits: {limits.max_events_per_game} events/game, "
            f"{limits.max_message_bytes} bytes/message, {limits.max_stream_messages} messages/stream, "
            f"{limits.deadline_seconds:g} s/verification"
            + (f"\nsgs-verify: viewer on {server.http.url} (HTTP; JSON API under {server.http.url}api/)"
               if server.http is not None else ""))


async def serve(config: ServiceConfig, announce: Callable[[str], None] = print,
                started: Callable[[VerificationServer], Awaitable[None]] | None = None) -> None:
    """Run until SIGTERM/SIGINT, then stop gracefully. ``started`` runs once the server serves."""
    server = VerificationServer(config)
    await server.start()
    announce(describe_start(server))
    sys.stdout.flush()
    if started is not None:
        await started(server)
        sys.stdout.flush()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    await stopping.wait()
    announce(f"sgs-verify: stopping (in-flight requests have {config.grace_seconds:g} s to finish)")
    sys.stdout.flush()
    await server.stop()
    announce("sgs-verify: stopped")


class BackgroundServer:
    """A VerificationServer on its own event loop in a daemon thread."""

    def __init__(self, config: ServiceConfig, store: Store | None = None, viewer_guard: Any = None) -> None:
        self.server = VerificationServer(config, store, viewer_guard)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="sgs-verify-server", daemon=True)

    def start(self) -> BackgroundServer:
        self.thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result()
        except BaseException:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            raise
        return self

    @property
    def address(self) -> str:
        return self.server.address

    @property
    def http_url(self) -> str:
        """The viewer's base URL (http://host:port/); the server must have been started with an HTTP address."""
        assert self.server.http is not None, "no --http address was configured"
        return self.server.http.url

    def stop(self, grace: float | None = 1.0) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(grace), self.loop).result()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
