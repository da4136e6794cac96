"""The service's settings: address, database, data folder, worker count and limits.

Every setting has a default (``sgs-verify serve`` needs none), an environment variable, and
a command-line option (clients/commands/service.py); the option wins over the variable.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from storage.database import is_sqlite, sqlite_url
from verifier.logio import MAX_LOG_EVENTS

ENV_ADDRESS = "SGS_VERIFY_ADDRESS"
ENV_DB = "SGS_VERIFY_DB"
ENV_DATA = "SGS_VERIFY_DATA"
ENV_WORKERS = "SGS_VERIFY_WORKERS"
ENV_PIN_WORKERS = "SGS_VERIFY_PIN_WORKERS"
ENV_MAX_EVENTS = "SGS_VERIFY_MAX_EVENTS"
ENV_MAX_MESSAGE_BYTES = "SGS_VERIFY_MAX_MESSAGE_BYTES"
ENV_MAX_STREAM_MESSAGES = "SGS_VERIFY_MAX_STREAM_MESSAGES"
ENV_DEADLINE = "SGS_VERIFY_DEADLINE"
ENV_MAX_RECORD_BYTES = "SGS_VERIFY_MAX_RECORD_BYTES"
ENV_GRACE = "SGS_VERIFY_GRACE"
ENV_HTTP = "SGS_VERIFY_HTTP"
ENV_HTTP_HOSTS = "SGS_VERIFY_HTTP_HOSTS"
ENV_TLS_CERT = "SGS_VERIFY_TLS_CERT"
ENV_TLS_KEY = "SGS_VERIFY_TLS_KEY"
ENV_TLS_CLIENT_CA = "SGS_VERIFY_TLS_CLIENT_CA"
ENV_METRICS = "SGS_VERIFY_METRICS"
ENV_MAX_CONCURRENT = "SGS_VERIFY_MAX_CONCURRENT"
ENV_RATE_LIMIT = "SGS_VERIFY_RATE_LIMIT"
ENV_RATE_BURST = "SGS_VERIFY_RATE_BURST"
ENV_MAX_STREAMS = "SGS_VERIFY_MAX_STREAMS_PER_TENANT"
ENV_SHARED_LIMITS = "SGS_VERIFY_SHARED_LIMITS"
ENV_STREAM_IDLE = "SGS_VERIFY_STREAM_IDLE_TIMEOUT"
ENV_MAX_BUFFERED_BYTES = "SGS_VERIFY_MAX_BUFFERED_BYTES"
ENV_FIRST_MESSAGE = "SGS_VERIFY_FIRST_MESSAGE_TIMEOUT"

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


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"${name}={raw!r} is not a yes or no (1/0, true/false, yes/no, on/off)")


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
    # RPCs in progress at once, over every tenant (health and reflection are not counted).
    max_concurrent_rpcs: int = 256
    # Each tenant's requests per second (a token bucket: ``rate_burst`` at once, refilled at this rate);
    # 0: no rate limit.
    rate_limit: float = 100.0
    rate_burst: int = 200
    # Upload and live streams one tenant may have open at once.
    max_streams_per_tenant: int = 32
    # The rate and streams limits above hold over every replica sharing the store (service/shared_limits.py),
    # not only this one; $SGS_VERIFY_SHARED_LIMITS=0: each replica's own only (no store write per request).
    shared_limits: bool = True
    # A client stream (upload, live game) that sends nothing for this long is ended.
    stream_idle_seconds: float = 300.0
    # Request bytes the server holds at once, over every request: a request is admitted only when its
    # largest possible first message (max_message_bytes) fits, before any of it is read.
    max_buffered_bytes: int = 64 * 1024 * 1024
    # An RPC whose first request message has not come this long after the call is ended: until it comes, the
    # call holds room for it in the byte budget (a silent call must not hold it for ever).
    first_message_seconds: float = 10.0

    @property
    def tenant_share(self) -> int:
        """The bytes of requests one tenant may hold at once: half the budget, and at least one largest message
        (so that no tenant, silent calls and all, leaves the others without room)."""
        return max(self.max_message_bytes, self.max_buffered_bytes // 2)

    @classmethod
    def from_env(cls) -> Limits:
        d = cls()
        return cls(max_events_per_game=_env_int(ENV_MAX_EVENTS, d.max_events_per_game),
                   max_message_bytes=_env_int(ENV_MAX_MESSAGE_BYTES, d.max_message_bytes),
                   max_stream_messages=_env_int(ENV_MAX_STREAM_MESSAGES, d.max_stream_messages),
                   deadline_seconds=_env_float(ENV_DEADLINE, d.deadline_seconds),
                   max_record_bytes=_env_int(ENV_MAX_RECORD_BYTES, d.max_record_bytes),
                   max_concurrent_rpcs=_env_int(ENV_MAX_CONCURRENT, d.max_concurrent_rpcs),
                   rate_limit=_env_float(ENV_RATE_LIMIT, d.rate_limit),
                   rate_burst=_env_int(ENV_RATE_BURST, d.rate_burst),
                   max_streams_per_tenant=_env_int(ENV_MAX_STREAMS, d.max_streams_per_tenant),
                   shared_limits=os.environ.get(ENV_SHARED_LIMITS, "1").strip().lower() not in ("0", "false", "no",
                                                                                               "off"),
                   stream_idle_seconds=_env_float(ENV_STREAM_IDLE, d.stream_idle_seconds),
                   max_buffered_bytes=_env_int(ENV_MAX_BUFFERED_BYTES, d.max_buffered_bytes),
                   first_message_seconds=_env_float(ENV_FIRST_MESSAGE, d.first_message_seconds))

    def check(self) -> None:
        for name in ("max_events_per_game", "max_message_bytes", "max_stream_messages", "deadline_seconds",
                     "max_record_bytes", "max_concurrent_rpcs", "rate_burst", "max_streams_per_tenant",
                     "stream_idle_seconds", "max_buffered_bytes", "first_message_seconds"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, not {getattr(self, name)}")
        if self.rate_limit < 0:
            raise ConfigError(f"rate_limit must not be negative (0 turns it off), not {self.rate_limit}")
        if self.max_buffered_bytes < self.max_message_bytes:
            raise ConfigError(f"max_buffered_bytes ({self.max_buffered_bytes}) must be at least max_message_bytes "
                              f"({self.max_message_bytes}): no message could be admitted")


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    address: str = DEFAULT_ADDRESS
    # None: the embedded SQLite file in data_dir (migrated automatically).
    db_url: str | None = None
    data_dir: Path = field(default_factory=default_data_dir)
    # Verification worker processes.
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    # With a worker for every CPU, each worker process on a CPU of its own, in turn (service.workers.worker_cpus);
    # False leaves them to the OS.
    pin_workers: bool = True
    limits: Limits = field(default_factory=Limits)
    # On SIGTERM, how long in-flight RPCs may take to finish.
    grace_seconds: float = 30.0
    # SQLite: how long a write waits for the lock before the store reports itself unavailable.
    busy_timeout_ms: int = 5000
    # Apply migrations at start: None means for SQLite only (PostgreSQL: `sgs-verify db upgrade`).
    migrate: bool | None = None
    # Where the annotated replay viewer and its JSON API listen (HTTP, host:port); None: not served.
    http_address: str | None = None
    # Other host names the viewer answers to (besides loopback names and --http's host): a request whose Host
    # header names none of them is refused (DNS rebinding; docs/security.md#viewer).
    http_hosts: tuple[str, ...] = ()
    # TLS: the server's certificate chain and key (PEM), and optionally the CA whose client certificates
    # are required (docs/security.md). The viewer and the metrics endpoint use them too.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    tls_client_ca: Path | None = None
    # Serve on a non-loopback address without TLS, or without tokens (docs/security.md).
    insecure: bool = False
    # Where Prometheus metrics are served (HTTP, host:port); None: not served.
    metrics_address: str | None = None
    # How often the store is checked for the health service (and, while no token exists, for a first one).
    health_interval_seconds: float = 5.0

    @classmethod
    def from_env(cls) -> ServiceConfig:
        d = cls()
        return cls(address=os.environ.get(ENV_ADDRESS) or d.address,
                   db_url=os.environ.get(ENV_DB) or None,
                   data_dir=default_data_dir(),
                   workers=_env_int(ENV_WORKERS, d.workers),
                   pin_workers=_env_bool(ENV_PIN_WORKERS, d.pin_workers),
                   limits=Limits.from_env(),
                   grace_seconds=_env_float(ENV_GRACE, d.grace_seconds),
                   http_address=os.environ.get(ENV_HTTP) or None,
                   http_hosts=tuple(h.strip() for h in os.environ.get(ENV_HTTP_HOSTS, "").split(",") if h.strip()),
                   tls_cert=_env_path(ENV_TLS_CERT), tls_key=_env_path(ENV_TLS_KEY),
                   tls_client_ca=_env_path(ENV_TLS_CLIENT_CA),
                   metrics_address=os.environ.get(ENV_METRICS) or None)

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

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
        if self.health_interval_seconds <= 0:
            raise ConfigError(f"health_interval_seconds must be positive, not {self.health_interval_seconds}")
        self.limits.check()
        if self.http_address is not None:
            split_address(self.http_address, "the viewer's address (--http)")
        if self.metrics_address is not None:
            split_address(self.metrics_address, "the metrics address (--metrics)")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ConfigError("TLS needs both --tls-cert and --tls-key")
        if self.tls_client_ca is not None and self.tls_cert is None:
            raise ConfigError("--tls-client-ca needs TLS (--tls-cert and --tls-key)")
        for name in ("tls_cert", "tls_key", "tls_client_ca"):
            path = getattr(self, name)
            if path is not None and not Path(path).is_file():
                raise ConfigError(f"--{name.replace('_', '-')} {path}: no such file")

    def addresses(self) -> list[tuple[str, str]]:
        """Every address the server listens on, with what it is: (address, what)."""
        found = [(self.address, "gRPC (--address)")]
        if self.http_address is not None:
            found.append((self.http_address, "the viewer (--http)"))
        if self.metrics_address is not None:
            found.append((self.metrics_address, "metrics (--metrics)"))
        return found


def is_loopback(address: str) -> bool:
    """Whether HOST:PORT names this machine's loopback only (127.0.0.0/8, ::1, localhost); a wildcard
    (0.0.0.0, ::, an empty host) or any other host is not."""
    host = address.rpartition(":")[0].strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _env_path(name: str) -> Path | None:
    raw = os.environ.get(name)
    return Path(raw).expanduser() if raw else None


def split_address(address: str, what: str) -> tuple[str, int]:
    """``host:port`` (``[::1]:8080`` for IPv6) as (host, port); ConfigError naming ``what`` otherwise."""
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"{what} {address!r} is not HOST:PORT (e.g. 127.0.0.1:8080; port 0 picks a free one)")
    return host, int(port)
