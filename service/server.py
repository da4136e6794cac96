"""The gRPC server: the VerifierService plus health checking and reflection, graceful stop.

``serve(config)`` runs until SIGTERM or SIGINT: health turns NOT_SERVING, new RPCs are
refused, in-flight RPCs get ``grace_seconds`` to finish, pending store writes complete (each
replay is one transaction, so nothing is half-written), then the pools and the database close.
``BackgroundServer`` runs the same server on its own event loop in a thread (tests, benchmark).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import errno
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import grpc
from grpc_health.v1 import health, health_pb2

from service import tls
from service.checked import OpenStreams, add_health
from service.config import ENV_DATA, ServiceConfig, default_data_dir, is_loopback, split_address
from service.guard import CLIENT_STREAMS, Authenticator, GuardInterceptor
from service.health import StoreHealth
from service.metrics import Metrics
from service.reflection import enable_server_reflection
from service.servicer import SERVICE_NAME, VerifierServicer, new_io_executor
from service.shared_limits import SharedLimits
from service.work import freeze_long_lived_objects
from service.workers import WorkerPool
from storage import migrate
from storage.access import OpenModeExposure, any_active_token, open_mode_exposure
from storage.database import make_private
from storage.store import SchemaOutOfDate, Store

if TYPE_CHECKING:
    from service.web.server import HttpFrontend

IO_THREADS = 4
log = logging.getLogger("sgs-verify.service")


class ServerStartError(RuntimeError):
    """The server could not start (address in use, database unusable); the message says why."""


def open_store(config: ServiceConfig) -> Store:
    """Open the configured database, migrating it when configured to (the SQLite default). The embedded
    database's folder is this user's only (0700): it is the server's own."""
    if config.embedded:
        config.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        make_private(config.data_dir, 0o700)
    store = Store.open(config.database_url, busy_timeout_ms=config.busy_timeout_ms,
                       pool_size=IO_THREADS, checkpoint_in_background=True)
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
        self.metrics = Metrics()
        self.auth: Authenticator | None = None
        self.guard: GuardInterceptor | None = None
        self.store_health: StoreHealth | None = None
        self.shared_limits: SharedLimits | None = None
        self.exposure: list[str] = []  # what a start on this configuration warns of
        self.logged_warnings: list[str] = []  # the start's warnings said in the log (open mode, TLS expiry)
        # The viewer's connection bounds (service.web.server.HttpFrontend: max_connections, header_seconds), when
        # not the defaults (the tests' smaller ones).
        self.http_bounds: dict[str, Any] = {}

    @property
    def address(self) -> str:
        host = self.config.address.rsplit(":", 1)[0]
        return f"{host}:{self.port}"

    async def _io(self, fn: Callable[..., Any], *args: Any) -> Any:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.io_executor, fn, *args)

    def _exposure(self, tokens: bool) -> list[str]:
        """What this configuration exposes (warnings, said at start); ServerStartError when it would serve a
        non-loopback address without TLS or without tokens and --insecure was not given."""
        config = self.config
        outside = [f"{address} ({what})" for address, what in config.addresses() if not is_loopback(address)]
        if not outside:
            return [] if tokens else ["authentication is OFF: no active token exists and every address is loopback, so "
                                      "anyone on this machine may use every RPC (sgs-verify token create turns it on)"]
        missing = ([] if config.tls else ["TLS (--tls-cert, --tls-key)"]) + \
            ([] if tokens else ["tokens (none exists: sgs-verify token create)"])
        if not missing:
            return []
        if not config.insecure:
            raise ServerStartError(f"{', '.join(outside)} is not a loopback address, and this server would serve it "
                                   f"without {' and without '.join(missing)}: set them up (docs/security.md), or "
                                   "pass --insecure to serve anyway")
        return [f"--insecure: serving {', '.join(outside)} without {' and without '.join(missing)}"
                + ("; tokens travel in the clear" if tokens and not config.tls else "")
                + ("; anyone who can reach it may use every RPC" if not tokens else "")]

    async def start(self) -> int:
        config = self.config
        if self.store is None:
            self.store = await asyncio.to_thread(open_store, config)
        limits = config.limits
        try:
            tls.check_files(config)
            end = tls.not_after(config.tls_cert) if config.tls_cert is not None else None
            if end is not None:
                self.metrics.tls_days_left.set_function(lambda: (end - time.time()) / 86400)
            tokens = await asyncio.to_thread(any_active_token, self.store)
            self.exposure = self._exposure(tokens)
            loud = _open_mode_warnings(await asyncio.to_thread(open_mode_exposure, self.store)) if not tokens else []
            expiring = tls.expiry_warning(config)
            loud += [expiring] if expiring is not None else []
            for warning in loud:  # (logged: a service manager keeps the log, not always the start lines)
                log.warning("%s", warning)
            self.logged_warnings = loud  # (the start lines do not say them again: the log said them)
        except ValueError as err:
            await self._close_resources()
            raise ServerStartError(str(err)) from None
        except Exception:
            await self._close_resources()
            raise
        self.pool = WorkerPool(config.workers, pin=config.pin_workers)
        self.io_executor = new_io_executor(IO_THREADS)
        pool = self.pool
        self.metrics.watch_workers(lambda: sum(max(0, w.busy - 1) for w in pool.workers),
                                   lambda: sum(w.busy for w in pool.workers),
                                   lambda: sum(w.games for w in pool.workers))
        self.store_health = StoreHealth(self.store, self.health, ("", SERVICE_NAME), config.health_interval_seconds,
                                        self.metrics)
        store_health = self.store_health
        servicer = VerifierServicer(self.store, limits, self.pool, self.io_executor, self.metrics,
                                    on_store_unavailable=store_health.poke)
        self.servicer = servicer
        self.auth = Authenticator(self.store, self._io, required=tokens)
        if not tokens:
            store_health.on_token = self.auth.require
        if limits.shared_limits:
            self.shared_limits = SharedLimits(self.store, self._io, limits.rate_limit, limits.rate_burst,
                                              limits.max_streams_per_tenant, CLIENT_STREAMS)
        self.guard = GuardInterceptor(self.auth, limits, self.metrics, self.shared_limits)
        server = grpc.aio.server(interceptors=[self.guard], options=[
            ("grpc.max_receive_message_length", limits.max_message_bytes),
            ("grpc.max_send_message_length", max(4 * limits.max_message_bytes, 64 * 1024 * 1024)),
            ("grpc.so_reuseport", 0),
            # Without BDP probing the HTTP/2 windows stay small, so a request waiting for the byte budget
            # (service/guard.py) is not received into gRPC's buffers meanwhile (measured: 8 waiting 15 MB
            # requests held ~65 MiB more with it). The cost: less throughput for large messages over
            # high-latency links.
            ("grpc.http2.bdp_probe", 0),
        ])
        server.add_generic_rpc_handlers((servicer.generic_handler(),))
        open_streams = OpenStreams()  # the streams of the services that need no token, counted together
        add_health(self.health, server, open_streams)  # requests that are not valid: INVALID_ARGUMENT (not UNKNOWN)
        enable_server_reflection((SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name), server,
                                 open_streams)
        # Asked first, so that a busy port is said plainly (gRPC would log a raw error of its own).
        failure: Exception | str | None = address_problem(config.address)
        if failure is None:
            try:
                if config.tls:
                    self.port = server.add_secure_port(config.address, tls.server_credentials(config))
                else:
                    self.port = server.add_insecure_port(config.address)
            except RuntimeError as err:
                self.port = 0
                failure = err
        if not self.port:
            await self._close_resources()
            raise ServerStartError(f"cannot listen on {config.address}: {failure or 'the address is in use'}")
        await self.pool.warm_up()
        try:
            if config.metrics_address is not None:
                self._start_metrics()
            if config.http_address is not None:
                self.http = await self._start_viewer(servicer)
        except Exception:
            self.metrics.stop()
            await self._close_resources()
            raise
        await server.start()
        self.server = server
        await store_health.check()  # SERVING (the store was just opened), and from now on as the store goes
        store_health.start()
        if self.shared_limits is not None:
            self.shared_limits.start()
        return self.port

    def _start_metrics(self) -> None:
        config = self.config
        assert config.metrics_address is not None
        host, port = split_address(config.metrics_address, "the metrics address (--metrics)")
        try:
            self.metrics.serve(host, port, certfile=str(config.tls_cert) if config.tls_cert else None,
                               keyfile=str(config.tls_key) if config.tls_key else None,
                               client_cafile=str(config.tls_client_ca) if config.tls_client_ca else None)
        except OSError as err:
            raise ServerStartError(f"cannot listen on {config.metrics_address} (metrics, --metrics): "
                                   f"{err.strerror or err}") from None

    @property
    def metrics_url(self) -> str | None:
        if self.config.metrics_address is None or not self.metrics.port:
            return None
        host = split_address(self.config.metrics_address, "--metrics")[0]
        host = f"[{host}]" if ":" in host else host
        return f"{'https' if self.config.tls else 'http'}://{host}:{self.metrics.port}/metrics"

    async def _start_viewer(self, servicer: VerifierServicer) -> HttpFrontend:
        """The viewer and its JSON API (service/web), on this event loop, over the same store, workers and
        I/O threads as gRPC."""
        config = self.config
        assert config.http_address is not None and self.store is not None
        assert self.pool is not None and self.io_executor is not None
        try:
            from service.web.app import ViewerApi, create_app, token_guard
            from service.web.security import ViewerShield, allowed_hosts
            from service.web.server import HttpFrontend
        except ImportError as err:
            raise ServerStartError(f"the viewer (--http) needs the web extra: pip install 'sgs-verify[web]' "
                                   f"({err})") from None
        assert self.auth is not None and self.guard is not None
        api = ViewerApi(self.store, servicer, self.pool, self.io_executor, config.limits, admission=self.guard)
        guard = token_guard(self.auth, self.guard.rates, self.metrics, self.viewer_guard, self.shared_limits)
        hosts = allowed_hosts(split_address(config.http_address, "--http")[0], config.http_hosts)
        app = ViewerShield(create_app(api, guard), hosts, tls=config.tls, metrics=self.metrics)
        frontend = HttpFrontend(app, config.http_address, config.grace_seconds, tls.uvicorn_options(config),
                                **self.http_bounds)
        try:
            await frontend.start()
        except OSError as err:
            raise ServerStartError(f"cannot listen on {config.http_address} (the viewer, --http): "
                                   f"{err.strerror or err}") from None
        return frontend

    async def stop(self, grace: float | None = None) -> None:
        """Refuse new RPCs, let in-flight ones finish (up to ``grace`` seconds), then close."""
        grace = self.config.grace_seconds if grace is None else grace
        if self.store_health is not None:
            await self.store_health.stop()
        await self.health.enter_graceful_shutdown()
        if self.http is not None:
            await self.http.stop(grace)
            self.http = None
        if self.server is not None:
            await self.server.stop(grace)
            self.server = None
        if self.shared_limits is not None:
            await self.shared_limits.stop()  # (the leases of the streams just ended deleted first)
        await asyncio.to_thread(self.metrics.stop)
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


def _open_mode_warnings(found: OpenModeExposure) -> list[str]:
    """Said loudly at start by a server running open over a store that was used with tokens (issue 27, item 5)."""
    warnings = []
    if found.other_tenants:
        names = ", ".join(found.other_tenants[:5]) + (", ..." if len(found.other_tenants) > 5 else "")
        warnings.append(f"this store holds replays of other tenants ({names}), and the server runs OPEN (no active "
                        "token): it serves the default tenant only, but anyone on this machine can use it as that "
                        "tenant — create a token (sgs-verify token create) to turn authentication on")
    if found.tokens:
        warnings.append(f"this store has {found.tokens} token(s), none active (all revoked), so the server runs OPEN: "
                        "was that meant? Anyone on this machine may use it as the default tenant")
    return warnings


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


def _pinned(server: VerificationServer) -> str:
    """Where the workers run, as the start line says it: their CPUs once each process is pinned ("" if not)."""
    cpus = [w.executor.cpu for w in server.pool.workers] if server.pool is not None else []
    if not cpus or any(cpu is None for cpu in cpus):
        return ""
    return " on CPUs " + ", ".join(str(cpu) for cpu in cpus)


def describe_start(server: VerificationServer) -> str:
    config = server.config
    assert server.store is not None
    where = (f"{config.data_dir / 'replays.sqlite3'} (embedded SQLite, {server.store.count()} replay(s))"
             if config.embedded else server.store.url)
    if config.embedded and not os.environ.get(ENV_DATA) and config.data_dir == default_data_dir():
        # The per-user default is shared by every checkout and every server this user runs without --data-dir.
        where += "; this user's default folder, shared by every checkout (--data-dir or $SGS_VERIFY_DATA for another)"
    limits = config.limits
    transport = ("TLS, client certificates required" if config.tls_client_ca else "TLS") if config.tls else "plaintext"
    auth = server.auth
    access = ("bearer tokens required (sgs-verify token list)" if auth is not None and auth.required
              else "OFF (no active token)")
    lines = [f"sgs-verify: listening on {server.address} (gRPC, {transport}; health and reflection on)",
             f"sgs-verify: data in {where}",
             f"sgs-verify: authentication: {access}",
             f"sgs-verify: {config.workers} verification worker(s){_pinned(server)}; limits: "
             f"{limits.max_events_per_game} events/game, "
             f"{limits.max_message_bytes} bytes/message, {limits.max_stream_messages} messages/stream, "
             f"{limits.deadline_seconds:g} s/verification, {limits.max_concurrent_rpcs} requests at once, "
             f"{limits.rate_limit:g} requests/s per tenant" + (" (off)" if not limits.rate_limit else "")
             + f", {limits.max_streams_per_tenant} streams per tenant"]
    if server.http is not None:
        lines.append(f"sgs-verify: viewer on {server.http.url} (JSON API under {server.http.url}api/)")
    if server.metrics_url is not None:
        lines.append(f"sgs-verify: Prometheus metrics on {server.metrics_url}")
    lines += [f"sgs-verify: WARNING: {warning}" for warning in server.exposure]
    return "\n".join(lines)


def return_large_blocks_to_the_system() -> None:
    """glibc: blocks of 1 MiB and more are mapped on their own and unmapped when freed, so that the memory of
    large requests goes back to the system once they are done (by default glibc raises that threshold as it
    sees large blocks freed, and then keeps them). Nothing elsewhere."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_mmap_threshold = -3
        libc.mallopt(m_mmap_threshold, 1 << 20)
    except (OSError, AttributeError):
        pass


async def serve(config: ServiceConfig, announce: Callable[[str], None] = print,
                started: Callable[[VerificationServer], Awaitable[None]] | None = None) -> None:
    """Run until SIGTERM/SIGINT, then stop gracefully. ``started`` runs once the server serves."""
    return_large_blocks_to_the_system()
    # The handlers come before the "listening" line, which a supervisor (or a test) may take as leave to send
    # SIGTERM: one that came before them ended the process with -15 (a stop asked for early is done at once).
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    server = VerificationServer(config)
    await server.start()
    announce(describe_start(server))
    sys.stdout.flush()
    if started is not None:
        await started(server)
        sys.stdout.flush()
    freeze_long_lived_objects()
    await stopping.wait()
    announce(f"sgs-verify: stopping (in-flight requests have {config.grace_seconds:g} s to finish)")
    sys.stdout.flush()
    await server.stop()
    # The loop's handlers go when asyncio.run closes the loop, which puts SIGTERM back to its default: a SIGTERM
    # then (a supervisor's or a test's second one, sent while the process is still ending: its workers, the
    # loop's shutdown) killed it with -15 after a clean stop. From here on a SIGTERM is ignored: the stop it
    # asks for is done. (SIGTERM blocked while the handler is swapped, so none lands on the default between.)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
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
