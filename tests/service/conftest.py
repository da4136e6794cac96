"""Fixtures for the service and storage tests: databases on both backends, self-play games,
servers on loopback.

PostgreSQL: the server at 127.0.0.1:5432 (user postgres, else root; database `test` for the
admin connection). Each test that needs a database gets a fresh one, dropped afterwards. If the
server cannot be reached the PostgreSQL cases are skipped — unless CI=true, where they fail.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from clients.selfplay import play_game
from service.config import Limits, ServiceConfig
from service.server import BackgroundServer, open_store
from sgsverify.v1 import game_log_pb2 as pb
from storage import migrate
from storage.database import create_database_engine, sqlite_url
from storage.store import Store

PG_HOST, PG_PORT = "127.0.0.1", 5432
PG_USERS = ("postgres", "root")
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]

_pg_user: str | None = None
_pg_checked = False


def pg_user() -> str | None:
    """The user that can create databases, or None if the server is not there."""
    global _pg_user, _pg_checked
    if not _pg_checked:
        _pg_checked = True
        for user in PG_USERS:
            try:
                with psycopg.connect(host=PG_HOST, port=PG_PORT, user=user, dbname="test", connect_timeout=3):
                    _pg_user = user
                    break
            except psycopg.Error:
                continue
    return _pg_user


def require_pg() -> str:
    user = pg_user()
    if user is None:
        message = f"PostgreSQL is not reachable at {PG_HOST}:{PG_PORT}"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: the PostgreSQL tests must run)")
        pytest.skip(message)
    return user


def pg_url(user: str, database: str, port: int = PG_PORT) -> str:
    return f"postgresql+psycopg://{user}@{PG_HOST}:{port}/{database}"


class PgDatabase:
    """A scratch PostgreSQL database, created empty and dropped on close."""

    def __init__(self) -> None:
        self.user = require_pg()
        self.name = f"sgsv_test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user=self.user, dbname="test", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.name}"')

    def url(self, port: int = PG_PORT) -> str:
        return pg_url(self.user, self.name, port)

    def drop(self) -> None:
        with psycopg.connect(host=PG_HOST, port=PG_PORT, user=self.user, dbname="test", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


@pytest.fixture
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database URL on the backend given by the test's `backend` parameter."""
    backend = request.node.callspec.params["backend"]
    if backend == "sqlite":
        yield sqlite_url(tmp_path / "replays.sqlite3")
        return
    db = PgDatabase()
    try:
        yield db.url()
    finally:
        db.drop()


@pytest.fixture
def database(empty_database: str) -> str:
    """A migrated database URL."""
    engine = create_database_engine(empty_database)
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()
    return empty_database


def fresh_database(backend: str, folder: Path) -> tuple[str, PgDatabase | None]:
    """For module-scoped fixtures: a migrated database and the handle that drops it."""
    if backend == "sqlite":
        url, db = sqlite_url(folder / "replays.sqlite3"), None
    else:
        db = PgDatabase()
        url = db.url()
    engine = create_database_engine(url)
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()
    return url, db


@pytest.fixture(scope="session")
def games() -> list[pb.GameLog]:
    """Complete, clean self-play games (5 players), seeds 1-8."""
    return [play_game(seed, 5) for seed in range(1, 9)]


@contextlib.contextmanager
def serving(backend: str, folder: Path, **changes: object) -> Iterator[BackgroundServer]:
    """A running server (server_config with ``changes``) over a fresh, migrated database of ``backend``: for a module's
    own fixture. The database is dropped after."""
    url, pg = fresh_database(backend, folder)
    srv = BackgroundServer(server_config(url, folder, **changes)).start()
    try:
        yield srv
    finally:
        srv.stop()
        if pg is not None:
            pg.drop()


def server_config(url: str, folder: Path, **changes: object) -> ServiceConfig:
    settings: dict[str, object] = {"address": "127.0.0.1:0", "db_url": url, "data_dir": folder, "workers": 2,
                                   "limits": Limits(), "grace_seconds": 5.0}
    settings.update(changes)
    return ServiceConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture(scope="module", params=BACKENDS)
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    """A running server over a fresh, migrated database, shared by a module's tests."""
    backend = request.param
    folder = tmp_path_factory.mktemp(f"service-{backend}")
    url, db = fresh_database(backend, folder)
    server = BackgroundServer(server_config(url, folder)).start()
    server.backend = backend  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.stop()
        if db is not None:
            db.drop()


class Held:
    """Stands in for one of a store's methods: each call says it has begun, waits to be released, then raises
    ``fail`` (when set) or runs the method, and says when it is done."""

    def __init__(self, method: Callable[..., Any]) -> None:
        self.method = method
        self.entered = threading.Event()
        self.release = threading.Event()
        self.done = threading.Event()
        self.fail: BaseException | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.entered.set()
        self.release.wait(20)
        try:
            if self.fail is not None:
                raise self.fail
            return self.method(*args, **kwargs)
        finally:
            self.done.set()


@contextlib.contextmanager
def server_holding(backend: str, folder: Path, method: str) -> Iterator[tuple[BackgroundServer, Store, Held]]:
    """A server (one worker) whose store's ``method`` is Held; released and stopped at the end."""
    url, db = fresh_database(backend, folder)
    config = server_config(url, folder, workers=1)
    store = open_store(config)
    hold = Held(getattr(store, method))
    setattr(store, method, hold)
    server = BackgroundServer(config, store).start()
    try:
        yield server, store, hold
    finally:
        hold.release.set()
        server.stop()
        if db is not None:
            db.drop()


class TcpProxy:
    """A loopback TCP proxy we can cut and restore, to take a database "down" without touching it."""

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.port = 0
        self.listener: socket.socket | None = None
        self.sockets: list[socket.socket] = []
        self.lock = threading.Lock()

    def start(self) -> TcpProxy:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return self

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def stop(self) -> None:
        """Refuse new connections and cut every open one."""
        if self.listener is not None:
            with contextlib.suppress(OSError):
                self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in its thread
            self.listener.close()
            self.listener = None
        with self.lock:
            for s in self.sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self.sockets.clear()


def make_token(url: str, tenant: str, scopes: str, name: str = "") -> str:
    """A token in the database at ``url`` (as `sgs-verify token create` makes one)."""
    from storage.access import create_token
    from storage.store import Audit, Store

    store = Store.open(url)
    try:
        token, _ = create_token(store, tenant, scopes.split(","), name or f"{tenant} {scopes}", Audit("tests"))
    finally:
        store.close()
    return token
