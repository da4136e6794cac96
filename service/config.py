"""The service's settings: address, database, data folder, worker count and limits.

Every setting has a default (``sgs-verify serve`` needs none), an environment variable, and
a command-line option (clients/commands/service.py); the option wins over the variable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from storage.database import is_sqlite, sqlite_url
from verifier.logio import MAX_LOG_EVENTS

ENV_ADDRESS = "SGS_VERIFY_ADDRESS"
ENV_DB = "SGS_VERIFY_DB"
ENV_DATA = "SGS_VERIFY_DATA"
ENV_WORKERS = "SGS_VERIFY_WORKERS"
ENV_MAX_EVENTS = "SGS_VERIFY_MAX_EVENTS"
ENV_MAX_MESSAGE_BYTES = "SGS_VERIFY_MAX_MESSAGE_BYTES"
ENV_MAX_STREAM_MESSAGES = "SGS_VERIFY_MAX_STREAM_MESSAGES"
ENV_DEADLINE = "SGS_VERIFY_DEADLINE"
ENV_MAX_RECORD_BYTES = "SGS_VERIFY_MAX_RECORD_BYTES"
ENV_GRACE = "SGS_VERIFY_GRACE"
ENV_HTTP = "SGS_VERIFY_HTTP"

DEFAULT_ADDRESS = "127.0.0.1:50051"
DATABASE_FILE = "replays.sqlite3"


class ConfigError(ValueError):
    """A setting that cannot be used; the message names it."""


def default_data_dir() -> Path:
    """$SGS_VERIFY_DATA, else $XDG_DATA_HOME/sgs-verify, else ~/.local/share/sgs-verify."""
    explicit = os.environ.get(ENV_DATA)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg).expanduser() / "sgs-verify"
    try:
        return Path.home() / ".local" / "share" / "sgs-verify"
    except RuntimeError:  # no home directory: the working directory, then
        return Path("sgs-verify-data").resolve()


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"${name}={raw!r} is not a whole number") from None


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"${name}={raw!r} is not a number") from None


@dataclass(frozen=True, slots=True)
class Limits:
    """What one request may ask of the server. Over a limit: RESOURCE_EXHAUSTED (or
    DEADLINE_EXCEEDED for the deadline), with a message naming the limit and its option."""

    # Events in one game (whole log, upload or live stream); `sgs-verify check` has the same default.
    max_events_per_game: int = MAX_LOG_EVENTS
    # The largest request message the server accepts (gRPC's receive limit).
    max_message_bytes: int = 16 * 1024 * 1024
    # Messages in one client stream (upload or live).
    max_stream_messages: int = 10_000
    # The longest one verification may take, in seconds (a caller's shorter deadline wins).
    deadline_seconds: float = 60.0
    # The largest record of another engine (ForeignLog) taken, in one message or all the chunks of an
    # upload together: a FreeKill transcript of a long game is ~15 MB.
    max_record_bytes: int = 64 * 1024 * 1024

    @classmethod
    def from_env(cls) -> Limits:
        d = cls()
        return cls(max_events_per_game=_env_int(ENV_MAX_EVENTS, d.max_events_per_game),
                   max_message_bytes=_env_int(ENV_MAX_MESSAGE_BYTES, d.max_message_bytes),
                   max_stream_messages=_env_int(ENV_MAX_STREAM_MESSAGES, d.max_stream_messages),
                   deadline_seconds=_env_float(ENV_DEADLINE, d.deadline_seconds),
                   max_record_bytes=_env_int(ENV_MAX_RECORD_BYTES, d.max_record_bytes))

    def check(self) -> None:
        for name in ("max_events_per_game", "max_message_bytes", "max_stream_messages", "deadline_seconds",
                     "max_record_bytes"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, not {getattr(self, name)}")


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    address: str = DEFAULT_ADDRESS
    # None: the embedded SQLite file in data_dir (migrated automatically).
    db_url: str | None = None
    data_dir: Path = field(default_factory=default_data_dir)
    # Verification worker processes.
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    limits: Limits = field(default_factory=Limits)
    # On SIGTERM, how long in-flight RPCs may take to finish.
    grace_seconds: float = 30.0
    # SQLite: how long a write waits for the lock before the store reports itself unavailable.
    busy_timeout_ms: int = 5000
    # Apply migrations at start: None means for SQLite only (PostgreSQL: `sgs-verify db upgrade`).
    migrate: bool | None = None
    # Where the annotated replay viewer and its JSON API listen (HTTP, host:port); None: not served.
    http_address: str | None = None

    @classmethod
    def from_env(cls) -> ServiceConfig:
        d = cls()
        return cls(address=os.environ.get(ENV_ADDRESS) or d.address,
                   db_url=os.environ.get(ENV_DB) or None,
                   data_dir=default_data_dir(),
                   workers=_env_int(ENV_WORKERS, d.workers),
                   limits=Limits.from_env(),
                   grace_seconds=_env_float(ENV_GRACE, d.grace_seconds),
                   http_address=os.environ.get(ENV_HTTP) or None)

    @property
    def database_url(self) -> str:
        return self.db_url or sqlite_url(self.data_dir / DATABASE_FILE)

    @property
    def embedded(self) -> bool:
        return self.db_url is None

    @property
    def should_migrate(self) -> bool:
        return is_sqlite(self.database_url) if self.migrate is None else self.migrate

    def check(self) -> None:
        if self.workers < 1:
            raise ConfigError(f"workers must be at least 1, not {self.workers}")
        if self.grace_seconds < 0:
            raise ConfigError(f"grace_seconds must not be negative, not {self.grace_seconds}")
        self.limits.check()
        if self.http_address is not None:
            split_address(self.http_address, "the viewer's address (--http)")


def split_address(address: str, what: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8080`` for IPv6) as (host, port); ConfigError naming ``what`` otherwise."""
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"{what} {address!r} is not HOST:PORT (e.g. 127.0.0.1:8080; port 0 picks a free one)")
    return host, int(port)
