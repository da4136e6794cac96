"""Opening a database by URL: SQLite (WAL, foreign keys, busy timeout, BEGIN IMMEDIATE for
writes) or PostgreSQL through psycopg 3 (pre-pinged pooled connections)."""

from __future__ import annotations

import sqlite3
import time
import urllib.parse
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

# How a write transaction asks SQLite to take the write lock up front (Connection execution option).
SQLITE_BEGIN_OPTION = "sgs_sqlite_begin"

DEFAULT_BUSY_TIMEOUT_MS = 5000
DEFAULT_CONNECT_TIMEOUT_S = 5


class UnsupportedDatabaseURL(ValueError):
    """A database URL that is unreadable or names a backend the store does not support."""


def sqlite_url(path: Path) -> str:
    return URL.create("sqlite", database=str(path)).render_as_string(hide_password=False)


def normalize_url(url: str) -> URL:
    """The URL SQLAlchemy should use: plain postgresql:// URLs get the psycopg 3 driver."""
    try:
        parsed = make_url(url)
    except ArgumentError as err:
        raise UnsupportedDatabaseURL(f"not a database URL: {url!r} ({err})") from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def sqlite_file_uri(path: Path, mode: str) -> str:
    """An SQLite URI for ``path`` opened in ``mode`` (ro, rw, rwc)."""
    return f"file:{urllib.parse.quote(str(path.resolve()))}?mode={mode}"


def is_sqlite(url: str | URL) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def create_database_engine(url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
                           connect_timeout_s: int = DEFAULT_CONNECT_TIMEOUT_S, pool_size: int = 5) -> Engine:
    parsed = normalize_url(url)
    backend = parsed.get_backend_name()
    # hide_parameters: an error's text (logged, never sent to a client) leaves out the values bound to its
    # statement — they are players' logs, token hashes.
    if backend == "sqlite":
        kwargs: dict[str, Any] = {}
        if parsed.database and parsed.database != ":memory:" and not parsed.query.get("uri"):
            path = Path(parsed.database)
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                sqlite3.connect(path).close()
            timeout = busy_timeout_ms / 1000
            # Later connections open the file read-write but never create it: a database file moved or
            # deleted while the server runs is "unavailable", not silently replaced by an empty one.
            kwargs["creator"] = lambda: sqlite3.connect(sqlite_file_uri(path, "rw"), uri=True,
                                                        check_same_thread=False, timeout=timeout)
        engine = create_engine(parsed, connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
                               hide_parameters=True, **kwargs)
        _configure_sqlite(engine, busy_timeout_ms)
        return engine
    if backend == "postgresql":
        return create_engine(parsed, pool_pre_ping=True, pool_size=pool_size, max_overflow=pool_size,
                             pool_timeout=connect_timeout_s, connect_args={"connect_timeout": connect_timeout_s},
                             hide_parameters=True)
    raise UnsupportedDatabaseURL(f"unsupported database URL {parsed.render_as_string()!r}: use sqlite:///PATH or "
                     "postgresql+psycopg://USER@HOST:PORT/DB")


def _configure_sqlite(engine: Engine, busy_timeout_ms: int) -> None:
    """pysqlite's own transaction handling is off: we emit BEGIN ourselves (the documented recipe),
    so that reads see one snapshot and writes take the write lock before reading (no upgrade
    deadlocks under WAL)."""

    @event.listens_for(engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            _enable_wal(cursor, busy_timeout_ms)
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def on_begin(conn: Any) -> None:
        mode = conn.get_execution_options().get(SQLITE_BEGIN_OPTION, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


def _enable_wal(cursor: Any, busy_timeout_ms: int) -> None:
    """Switch the database to WAL (a no-op once it is). The switch takes an exclusive lock, and while
    another connection holds a lock SQLite answers "database is locked" at once instead of waiting
    for the busy timeout — replicas opening a new database together hit it — so it is retried until
    that timeout has passed."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    delay = 0.005
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
