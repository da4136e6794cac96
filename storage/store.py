"""The replay store: save a verified log whole (one transaction, idempotent by log hash), get
it back, list with filters and keyset paging, delete.

The store is synchronous and knows nothing of gRPC or protobuf messages: the service hands it
plain records (``NewReplay``) and gets plain records back. Annotations travel as one opaque
blob (the serialized AnnotatedReplay); violations are also rows, for the list filters.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import operator
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

from sqlalchemy import ColumnElement, Connection, Engine, and_, exists, func, or_, select, text
from sqlalchemy import exc as sa_exc
from sqlalchemy.orm import Session, selectinload, undefer

from storage.database import (
    SQLITE_BEGIN_OPTION,
    WalCheckpointer,
    create_database_engine,
    sqlite_file,
    sqlite_file_uri,
)
from storage.models import (
    DEFAULT_TENANT,
    SUBMISSION_RUN,
    AuditEntry,
    Replay,
    ReplaySeat,
    Verdict,
    ViolationRow,
)
from storage.writer import Cursor, RowWriter

HASH_LENGTH = 64
MIN_ID_PREFIX = 8
MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 50
# What a stored replay's text and numbers may be, the same on every backend (docs/service.md, "Field
# limits"): the sizes of their columns (storage/models.py), and for the texts that are indexed or
# listed with every replay, a bound that keeps their rows and list pages small. No stored text may
# hold a NUL character (PostgreSQL's text cannot), and every stored whole number fits a 32-bit column.
MAX_LABEL_LENGTH = 200  # metadata: tournament, round, table, submitter
MAX_PLAYER_LENGTH = 200  # a seat's player (indexed)
MAX_GENERAL_LENGTH = 64  # a seat's general
MAX_RULESET_LENGTH = 64
MAX_RECORDER_LENGTH = 200
MAX_CODE_LENGTH = 64  # a violation code
# How a record our engine did not replay is stored (NewReplay.log_format): a FreeKill room's tap lines.
SERVER_FORMATS: Final = ("fktap",)
JUDGES: Final = ("", "engine", "server")
MAX_RUN_NAME = 100
MAX_SEATS = 32
MAX_STORED_INT = 2**31 - 1
# The decision sources a violation can be filtered by (sgsverify.v1.DecisionSource, less UNSPECIFIED): the store
# knows nothing of protobuf, so the numbers are written out here (tests/test_decision_source.py checks them).
DECISION_SOURCES = {1: "client", 2: "ai", 3: "default"}
# A page token this store issues is ~130 characters; anything much longer is not one.
MAX_PAGE_TOKEN_LENGTH = 1000
_HEX = re.compile(r"[0-9a-f]+")
# A tenant's name: lower-case letters, digits and . _ -, at most 64 (it is a column and a label).
TENANT_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


def tenant_problem(name: str) -> str | None:
    if TENANT_NAME.fullmatch(name):
        return None
    return (f"tenant {name[:80]!r} is not a tenant name (1-64 of a-z, 0-9, '.', '_', '-', beginning with a "
            "letter or digit)")


def replay_id_for(tenant: str, log_sha256: str) -> str:
    """A replay's id: the log's hash in the default tenant (so ids stored before tenants existed stay
    valid), else the SHA-256 of the tenant's name and the log's hash. Each tenant thus has its own copy
    of a log, and one tenant's id says nothing about another's."""
    if tenant == DEFAULT_TENANT:
        return log_sha256
    return hashlib.sha256(f"sgs-verify replay\0{tenant}\0{log_sha256}".encode()).hexdigest()


# ---------------------------------------------------------------------------------------- errors

class StorageError(Exception):
    """Base class of the store's errors."""


class StorageUnavailable(StorageError):
    """The database cannot be reached or is locked; retrying later may succeed."""


class SchemaOutOfDate(StorageError):
    """The database's schema is not the one this version needs (run ``sgs-verify db upgrade``)."""


class ReplayNotFound(StorageError, LookupError):
    """No stored replay has this id (or id prefix)."""


class InvalidQuery(StorageError, ValueError):
    """A malformed id, filter or page token; the message says which."""


class InvalidRecord(StorageError, ValueError):
    """A record the store cannot hold (a text over its column's size, a NUL character, a number over
    32 bits): nothing of it was written, and trying again will not help. The message names the field."""


def text_problem(name: str, value: object, limit: int | None) -> str | None:
    """Why the text ``value`` of the field ``name`` cannot be stored or looked up, if it cannot."""
    if not isinstance(value, str):
        return None
    if "\0" in value:
        return f"{name} contains a NUL character (U+0000), which this service does not store"
    if limit is not None and len(value) > limit:
        return f"{name} is {len(value)} characters; the limit is {limit}"
    return None


def int_problem(name: str, value: object) -> str | None:
    """Why the whole number ``value`` of the field ``name`` cannot be stored, if it cannot."""
    if isinstance(value, int) and not -MAX_STORED_INT - 1 <= value <= MAX_STORED_INT:
        return f"{name} is {value}; the largest number this service stores is {MAX_STORED_INT}"
    return None


def _problems(*found: str | None) -> list[str]:
    return [p for p in found if p is not None]


def run_name_problems(name: str, what: str = "run name") -> list[str]:
    return _problems(text_problem(what, name, MAX_RUN_NAME))


# ---------------------------------------------------------------------------------------- records

R = TypeVar("R")


def pickled_by_fields(cls: type[R]) -> type[R]:
    """A record class pickled as its constructor's arguments, read off in C (operator.attrgetter). A verified
    game's record crosses from a worker process to the server with every game, and the __getstate__ /
    __setstate__ dataclasses give a slotted class loop over fields() in Python: this halves the pickling both
    ways (measured: 40 µs a game's answer -> 20 µs)."""
    names = tuple(f.name for f in fields(cls))  # type: ignore[arg-type]
    values = operator.attrgetter(*names)

    def __reduce__(self: R) -> tuple[type[R], tuple[object, ...]]:
        got = values(self)
        return cls, got if len(names) > 1 else (got,)

    cls.__reduce__ = __reduce__  # type: ignore[assignment,method-assign]
    return cls


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class SubmissionMetadata:
    tournament: str = ""
    round: str = ""
    table: str = ""
    submitter: str = ""

    def problems(self) -> list[str]:
        return _problems(*(text_problem(f"metadata.{name}", value, MAX_LABEL_LENGTH)
                           for name, value in (("tournament", self.tournament), ("round", self.round),
                                               ("table", self.table), ("submitter", self.submitter))))


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class SeatFacts:
    seat: int
    player: str
    role: int
    general: str


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class ViolationFacts:
    event_index: int | None  # None: a violation of the header
    derived: bool
    code: str
    message: str
    rule: str
    seat: int | None = None
    card: int | None = None
    # Who made the decision it is about (sgsverify.v1.DecisionSource: Annotation.source); 0 when the log does not
    # say, and for an outcome's, a derived one's or the header's.
    source: int = 0

    def problems(self) -> list[str]:
        """Why this violation cannot be stored, naming the event (or the header) it is about."""
        where = ("header" if self.event_index is None else
                 f"events[{self.event_index}]" + (" (an outcome derived before it)" if self.derived else ""))
        return _problems(int_problem(f"{where}: the seat of a {self.code} violation", self.seat),
                         int_problem(f"{where}: the card id of a {self.code} violation", self.card),
                         int_problem("an event index", self.event_index),
                         int_problem(f"{where}: the decision source of a {self.code} violation", self.source),
                         text_problem(f"{where}: a violation's code", self.code, MAX_CODE_LENGTH),
                         text_problem(f"{where}: the message of a {self.code} violation (it quotes the log)",
                                      self.message, None),
                         text_problem(f"{where}: the rule of a {self.code} violation", self.rule, None))


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class VerdictFacts:
    """One verification's summary, its violations, and the serialized AnnotatedReplay."""

    engine_version: str
    violation_count: int
    violation_codes: tuple[str, ...]
    followed: bool
    stopped_at: int | None
    stopped_reason: str
    finished: bool
    side: int
    winners: tuple[int, ...]
    result_reason: str
    annotation_count: int
    replay_blob: bytes = field(repr=False)
    violations: tuple[ViolationFacts, ...] = ()
    # Each seat's score in seat order (docs/rules.md#scoring); () when the game is not scored.
    scores: tuple[int, ...] = ()
    # Replies on which the recording server's own verdict differs from this engine's (AnnotatedReplay.disagreements:
    # counted for the metrics, not stored apart from the replay).
    disagreements: int = 0

    def problems(self) -> list[str]:
        found = _problems(text_problem("the engine version", self.engine_version, 100),
                          text_problem("the reason the log was not followed (it quotes the log)",
                                       self.stopped_reason, None),
                          text_problem("the result's reason (it quotes the log)", self.result_reason, None),
                          text_problem("the winners", " ".join(str(w) for w in self.winners), 64),
                          *(int_problem(name, value) for name, value in (
                              ("the violation count", self.violation_count), ("stopped_at", self.stopped_at),
                              ("the annotation count", self.annotation_count), ("the side", self.side))),
                          *(int_problem(f"the score of seat {i}", v) for i, v in enumerate(self.scores)))
        for v in self.violations:
            found += v.problems()
        return found


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class NewReplay:
    """Everything stored for one submitted log."""

    log_sha256: str
    log_bytes: bytes = field(repr=False)
    log_format: str  # "binary" or "json"
    event_count: int
    ruleset: str
    mode: int
    seed: int
    recorder: str
    seats: tuple[SeatFacts, ...]
    metadata: SubmissionMetadata
    verdict: VerdictFacts

    def problems(self) -> list[str]:
        """Why this record cannot be stored (the same on every backend), naming each field; [] if it can."""
        found = _problems(text_problem("header.ruleset", self.ruleset, MAX_RULESET_LENGTH),
                          text_problem("header.recorder", self.recorder, MAX_RECORDER_LENGTH),
                          int_problem("header.mode", self.mode), int_problem("the event count", self.event_count),
                          text_problem("log_format", self.log_format, 8))
        if len(self.seats) > MAX_SEATS:
            found.append(f"header.seats has {len(self.seats)} seats; the limit is {MAX_SEATS}")
        for s in self.seats[:MAX_SEATS]:
            found += _problems(text_problem(f"header.seats[{s.seat}].player", s.player, MAX_PLAYER_LENGTH),
                               text_problem(f"header.seats[{s.seat}].general", s.general, MAX_GENERAL_LENGTH),
                               int_problem(f"header.seats[{s.seat}].role", s.role))
        return found + self.metadata.problems() + self.verdict.problems()


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """A stored replay without its blobs: what lists show."""

    id: str
    submitted_at: datetime
    metadata: SubmissionMetadata
    log_format: str
    log_size: int
    event_count: int
    ruleset: str
    mode: int
    seed: int
    recorder: str
    seats: tuple[SeatFacts, ...]
    engine_version: str
    violation_count: int
    violation_codes: tuple[str, ...]
    followed: bool
    stopped_at: int | None
    stopped_reason: str
    finished: bool
    side: int
    winners: tuple[int, ...]
    result_reason: str
    annotation_count: int
    # Whose replay it is, and its log's hash (the id, in the default tenant).
    tenant: str = DEFAULT_TENANT
    log_sha256: str = ""
    # Each seat's score (docs/rules.md#scoring); () when not scored; None when the verdict was stored before
    # scores existed.
    scores: tuple[int, ...] | None = ()


@dataclass(frozen=True, slots=True)
class StoredReplay:
    summary: ReplaySummary
    replay_blob: bytes = field(repr=False)
    log_bytes: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class ReplayFilter:
    """List filters, combined with AND; empty strings and None match everything."""

    tournament: str = ""
    round: str = ""
    table: str = ""
    submitter: str = ""
    player: str = ""
    has_violations: bool | None = None
    violation_code: str = ""
    # Only replays with a violation on a decision of this source (sgsverify.v1.DecisionSource: 1 the player's
    # client, 2 an AI, 3 the default); with violation_code, one violation of that code on such a decision.
    # None (or 0): any.
    violation_source: int | None = None
    submitted_after: datetime | None = None  # inclusive
    submitted_before: datetime | None = None  # exclusive
    # Only this tenant's replays; None: every tenant's.
    tenant: str | None = None
    # Who judged: "engine" (replays our engine replayed), "server" (records it did not replay, stored in
    # SERVER_FORMATS with their recording server's verdicts); "": both.
    judged_by: str = ""

    def problems(self) -> list[str]:
        """Why this filter cannot be looked up (a NUL, a text longer than anything stored), naming the field."""
        return _problems(None if self.tenant is None else tenant_problem(self.tenant),
                         None if self.judged_by in JUDGES else
                         f"judged_by {self.judged_by[:40]!r} is one of engine, server (or empty: both)",
                         None if not self.violation_source or self.violation_source in DECISION_SOURCES else
                         f"violation_source {self.violation_source} is not a decision source (1 client, 2 AI, "
                         "3 default)",
                         *(text_problem(name, value, limit) for name, value, limit in (
            ("tournament", self.tournament, MAX_LABEL_LENGTH), ("round", self.round, MAX_LABEL_LENGTH),
            ("table", self.table, MAX_LABEL_LENGTH), ("submitter", self.submitter, MAX_LABEL_LENGTH),
            ("player", self.player, MAX_PLAYER_LENGTH), ("violation_code", self.violation_code, MAX_CODE_LENGTH))))


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A named re-verification run, as stored."""

    name: str
    replays: int
    engine_versions: tuple[str, ...]
    started: datetime
    finished: datetime


@dataclass(frozen=True, slots=True)
class Page:
    replays: list[ReplaySummary]
    next_page_token: str
    total_count: int


# ---------------------------------------------------------------------------------------- the store

def utc_now() -> datetime:
    return datetime.now(UTC)


class Store:
    """The replay store over one database (SQLite file or PostgreSQL)."""

    def __init__(self, engine: Engine, clock: Callable[[], datetime] = utc_now,
                 checkpointer: WalCheckpointer | None = None) -> None:
        self.engine = engine
        self.clock = clock
        self.sqlite = engine.dialect.name == "sqlite"
        self.checkpointer = checkpointer
        self.writer = RowWriter(engine)

    @classmethod
    def open(cls, url: str, *, busy_timeout_ms: int = 5000, connect_timeout_s: int = 5,
             pool_size: int = 5, clock: Callable[[], datetime] = utc_now,
             checkpoint_in_background: bool = False) -> Store:
        """``checkpoint_in_background`` (a server's store): an SQLite file's WAL is checkpointed by a thread of
        the store's (WalCheckpointer), never by a save; ignored for PostgreSQL and an in-memory database."""
        path = sqlite_file(url) if checkpoint_in_background else None
        engine = create_database_engine(url, busy_timeout_ms=busy_timeout_ms, connect_timeout_s=connect_timeout_s,
                                        pool_size=pool_size, checkpoint_in_background=path is not None)
        checkpointer = None if path is None else WalCheckpointer(path, busy_timeout_ms=busy_timeout_ms).start()
        return cls(engine, clock, checkpointer)

    @property
    def url(self) -> str:
        return self.engine.url.render_as_string(hide_password=True)

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.stop()
        self.engine.dispose()

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def _unavailable_on_failure(self) -> Iterator[None]:
        """Database errors as the store's own: a value the database refuses (DataError, or a limit of
        PostgreSQL's such as an index row's size) is permanent, InvalidRecord; a database that cannot be
        reached or stays locked is StorageUnavailable. Neither message carries the SQL statement."""
        try:
            yield
        except (sa_exc.DataError, sa_exc.OperationalError, sa_exc.InterfaceError, sa_exc.TimeoutError) as err:
            cause = err.orig if isinstance(err, sa_exc.DBAPIError) and err.orig is not None else err
            if isinstance(err, sa_exc.DataError) or _sqlstate(cause)[:2] in _PERMANENT_SQLSTATE_CLASSES:
                raise InvalidRecord(f"the replay store refused a value: {_first_line(cause)}") from err
            raise StorageUnavailable(f"the replay store ({self.url}) is unavailable: {_first_line(cause)}") from err

    @contextmanager
    def _session(self, write: bool = False) -> Iterator[Session]:
        """One transaction: committed if the block ends normally, rolled back otherwise."""
        with self._unavailable_on_failure(), self.engine.connect() as conn:
            if write and self.sqlite:
                conn.execution_options(**{SQLITE_BEGIN_OPTION: "IMMEDIATE"})
            with Session(bind=conn, expire_on_commit=False) as session, session.begin():
                yield session

    def ping(self, fresh: bool = False) -> None:
        """Raise StorageUnavailable unless the database answers. ``fresh``: on SQLite, through a new
        connection to the file (a pooled one keeps a moved or deleted file open and still answers)."""
        database = self.engine.url.database
        if fresh and self.sqlite and database and database != ":memory:":
            try:
                probe = sqlite3.connect(sqlite_file_uri(Path(database), "rw"), uri=True, timeout=5)
                try:
                    probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
                finally:
                    probe.close()
            except sqlite3.Error as err:
                raise StorageUnavailable(f"the replay store ({self.url}) is unavailable: {err}") from err
            return
        with self._unavailable_on_failure(), self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    def connect(self) -> Connection:
        return self.engine.connect()

    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[Session]:
        """One transaction for the store's other modules (storage/access.py): committed if the block ends
        normally; database failures as StorageUnavailable / InvalidRecord."""
        with self._session(write) as session:
            yield session

    @contextmanager
    def driver_transaction(self) -> Iterator[Cursor]:
        """A write transaction on the database driver's own cursor (storage/writer.py), for small statements on
        a hot path that Core's per-statement work would cost more than the database does (service/shared_limits:
        a request's admission). Parameters in the driver's style (sqlite3 takes ``:name``, psycopg ``%(name)s``);
        committed if the block ends normally; database failures as StorageUnavailable / InvalidRecord."""
        with self._unavailable_on_failure(), self.writer.transaction() as cursor:
            yield cursor

    # ------------------------------------------------------------------ writing

    def save(self, new: NewReplay, tenant: str = DEFAULT_TENANT) -> tuple[ReplaySummary, bool]:
        """Store a verified log as the tenant's, in one transaction. If the tenant already has the same log
        (by hash), nothing is written and its stored replay is returned; another tenant's copy is not looked
        at. Returns (summary, created). A record that cannot be stored (``NewReplay.problems``) is
        InvalidRecord, on every backend."""
        problems = new.problems() + _problems(tenant_problem(tenant))
        if problems:
            raise InvalidRecord("; ".join(problems))
        replay_id = replay_id_for(tenant, new.log_sha256)
        for _ in range(3):
            try:
                # (through the driver: this is the service's hot path, storage/writer.py)
                with self._unavailable_on_failure(), self.writer.transaction() as cursor:
                    now = self.clock()
                    if _insert_replay(self.writer, cursor, new, now, tenant, replay_id):
                        return _summary_of_new(new, now, tenant, replay_id), True
                    # (the tenant has this log: nothing was written, and the empty transaction ends)
            except sa_exc.IntegrityError:
                # Another writer stored the same log between our check and our insert — or the
                # record itself is unstorable, and then nothing of it was written.
                found = self.find(new.log_sha256, tenant)
                if found is None:
                    raise
                return found, False
            found = self.find(new.log_sha256, tenant)
            if found is not None:
                return found, False
            # (deleted between the check and the read: store it after all)
        raise StorageUnavailable("the replay store keeps deleting the log while it is stored; try again")

    def delete(self, replay_id: str, tenant: str | None = None, audit: Audit | None = None) -> None:
        """Delete a replay by its full id — only the tenant's, when one is given (ReplayNotFound for another
        tenant's, as for none). With ``audit``, an audit log entry is written in the same transaction."""
        if len(replay_id) != HASH_LENGTH or not _HEX.fullmatch(replay_id):
            raise InvalidQuery(f"replay id {replay_id!r} is not a full replay id (64 hex digits)")
        with self._session(write=True) as session:
            replay = session.get(Replay, replay_id)
            if replay is None or (tenant is not None and replay.tenant != tenant):
                raise ReplayNotFound(f"no stored replay has the id {replay_id!r}")
            if audit is not None:
                session.add(audit.entry(self.clock(), "replay.delete", replay.tenant, replay_id,
                                        f"tournament {replay.tournament!r}, submitter {replay.submitter!r}, "
                                        f"{replay.event_count} events"))
            session.delete(replay)

    # ------------------------------------------------------------------ reading

    def find(self, log_sha256: str, tenant: str = DEFAULT_TENANT) -> ReplaySummary | None:
        """The tenant's stored replay of this log, if there is one (cheap when there is none)."""
        replay_id = replay_id_for(tenant, log_sha256)
        # (the usual answer, none, from the driver's connection: no ORM session is set up for it)
        with self._unavailable_on_failure():
            if not self.writer.replay_exists(replay_id):
                return None
        with self._session() as session:
            replay = session.get(Replay, replay_id, options=[selectinload(Replay.seats)])
            return None if replay is None else self._summary(session, replay)

    def get(self, replay_id: str, include_log: bool = False, run: str = SUBMISSION_RUN,
            tenant: str | None = None) -> StoredReplay:
        """A stored replay by id or unique id prefix (at least 8 hex digits); with ``run``, its
        verdict as of that named re-verification run (ReplayNotFound if the run did not verify it).
        With ``tenant``, only that tenant's replays are looked at: another tenant's is not found, and
        does not make a prefix ambiguous."""
        key = replay_id.strip().lower()
        if len(key) < MIN_ID_PREFIX or len(key) > HASH_LENGTH or not _HEX.fullmatch(key):
            raise InvalidQuery(f"replay id {replay_id[:HASH_LENGTH + 8]!r} is not a hex SHA-256 or a prefix of at "
                               f"least {MIN_ID_PREFIX} hex digits")
        _check_run_name(run)
        with self._session() as session:
            if len(key) == HASH_LENGTH:
                replay = session.get(Replay, key, options=[selectinload(Replay.seats)])
                if replay is not None and tenant is not None and replay.tenant != tenant:
                    replay = None
            else:
                query = select(Replay).where(Replay.id.startswith(key, autoescape=True))
                if tenant is not None:
                    query = query.where(Replay.tenant == tenant)
                found = session.scalars(query.options(selectinload(Replay.seats)).limit(2)).all()
                if len(found) > 1:
                    raise InvalidQuery(f"replay id prefix {replay_id!r} is ambiguous: give more digits")
                replay = found[0] if found else None
            if replay is None:
                raise ReplayNotFound(f"no stored replay has the id {replay_id!r}")
            verdict = self._verdict(session, replay.id, run, with_replay=True)
            if verdict is None:
                raise ReplayNotFound(f"replay {replay.id[:12]} has no verdict of run {run!r}")
            return StoredReplay(_summary_of(replay, verdict), verdict.replay_blob,
                                replay.log_bytes if include_log else None)

    def resolve(self, replay_id: str, tenant: str | None = None) -> str:
        """The full id of the replay this id or unique prefix names (only the tenant's, when one is given);
        cheap: no blobs are read. InvalidQuery / ReplayNotFound as for ``get``."""
        key = replay_id.strip().lower()
        if len(key) < MIN_ID_PREFIX or len(key) > HASH_LENGTH or not _HEX.fullmatch(key):
            raise InvalidQuery(f"replay id {replay_id[:HASH_LENGTH + 8]!r} is not a hex SHA-256 or a prefix of at "
                               f"least {MIN_ID_PREFIX} hex digits")
        query = select(Replay.id).where(Replay.id == key if len(key) == HASH_LENGTH
                                        else Replay.id.startswith(key, autoescape=True))
        if tenant is not None:
            query = query.where(Replay.tenant == tenant)
        with self._session() as session:
            found = session.scalars(query.limit(2)).all()
        if len(found) > 1:
            raise InvalidQuery(f"replay id prefix {replay_id!r} is ambiguous: give more digits")
        if not found:
            raise ReplayNotFound(f"no stored replay has the id {replay_id!r}")
        return found[0]

    def list(self, filters: ReplayFilter = ReplayFilter(), page_size: int = DEFAULT_PAGE_SIZE,
             page_token: str = "") -> Page:
        """Replays matching the filters, newest first, one page at a time."""
        if page_size <= 0:
            page_size = DEFAULT_PAGE_SIZE
        page_size = min(page_size, MAX_PAGE_SIZE)
        _check_filters(filters)
        after = _decode_page_token(page_token) if page_token else None
        if (filters.submitted_after and filters.submitted_before
                and filters.submitted_after > filters.submitted_before):
            raise InvalidQuery("submitted_after is later than submitted_before")
        conditions = _conditions(filters)
        base = (select(Replay, Verdict)
                .join(Verdict, and_(Verdict.replay_id == Replay.id, Verdict.run == SUBMISSION_RUN)))
        if filters.has_violations is None and not filters.violation_code and not filters.violation_source:
            # Nothing asked of the verdict: every replay has exactly one submission verdict (save writes both in
            # one transaction), so the replays are counted alone, without the join.
            counted = select(func.count()).select_from(Replay).where(*conditions)
        else:
            counted = select(func.count()).select_from(base.where(*conditions).with_only_columns(Replay.id).subquery())
        with self._session() as session:
            total = session.scalar(counted) or 0
            query = base.where(*conditions)
            if after is not None:
                at, last_id = after
                query = query.where(or_(Replay.submitted_at < at,
                                        and_(Replay.submitted_at == at, Replay.id < last_id)))
            rows = session.execute(query.options(selectinload(Replay.seats))
                                   .order_by(Replay.submitted_at.desc(), Replay.id.desc())
                                   .limit(page_size + 1)).all()
            summaries = [_summary_of(r, v) for r, v in rows[:page_size]]
        token = ""
        if len(rows) > page_size:
            last = summaries[-1]
            token = _encode_page_token(last.submitted_at, last.id)
        return Page(summaries, token, total)

    def count(self) -> int:
        with self._session() as session:
            return session.scalar(select(func.count()).select_from(Replay)) or 0

    # ------------------------------------------------------------------ re-verification runs

    def ids(self, filters: ReplayFilter = ReplayFilter()) -> tuple[str, ...]:
        """The ids of every replay matching the list filters, in id order."""
        _check_filters(filters)
        query = (select(Replay.id)
                 .join(Verdict, and_(Verdict.replay_id == Replay.id, Verdict.run == SUBMISSION_RUN))
                 .where(*_conditions(filters)).order_by(Replay.id))
        with self._session() as session:
            return tuple(session.scalars(query))

    def logs(self, ids: Sequence[str]) -> dict[str, bytes]:
        """The logs (bytes as submitted) of these replays."""
        with self._session() as session:
            rows = session.execute(select(Replay.id, Replay.log_bytes).where(Replay.id.in_(ids))).all()
        return {i: b for i, b in rows}

    def verdict_blobs(self, ids: Sequence[str], run: str = SUBMISSION_RUN) -> dict[str, bytes]:
        """The serialized AnnotatedReplay of each of these replays' verdict of ``run`` (if any)."""
        _check_run_name(run)
        with self._session() as session:
            rows = session.execute(select(Verdict.replay_id, Verdict.replay_blob)
                                   .where(Verdict.replay_id.in_(ids), Verdict.run == run)).all()
        return {i: b for i, b in rows}

    def logs_and_verdict_blobs(self, ids: Sequence[str], run: str = SUBMISSION_RUN
                               ) -> tuple[dict[str, bytes], dict[str, bytes]]:
        """``logs`` and ``verdict_blobs`` in one query (a regression run's input): the logs of these replays,
        and the serialized AnnotatedReplay of each one's verdict of ``run`` (if any)."""
        _check_run_name(run)
        logs: dict[str, bytes] = {}
        blobs: dict[str, bytes] = {}
        with self._unavailable_on_failure():
            for replay_id, log, blob in self.writer.logs_and_verdict_blobs(ids, run):
                logs[replay_id] = log
                if blob is not None:
                    blobs[replay_id] = blob
        return logs, blobs

    def run_ids(self, run: str) -> set[str]:
        """The replays that already have a verdict of this run."""
        _check_run_name(run)
        with self._session() as session:
            return set(session.scalars(select(Verdict.replay_id).where(Verdict.run == run)))

    def runs(self) -> tuple[RunInfo, ...]:
        """Every named re-verification run: its size, engine versions and when it ran."""
        query = (select(Verdict.run, Verdict.engine_version, func.count(), func.min(Verdict.created_at),
                        func.max(Verdict.created_at))
                 .where(Verdict.run != SUBMISSION_RUN).group_by(Verdict.run, Verdict.engine_version)
                 .order_by(Verdict.run, Verdict.engine_version))  # (the versions in a stable order)
        out: dict[str, RunInfo] = {}
        with self._session() as session:
            for name, version, count, first, last in session.execute(query).all():
                first = _aware(first)
                last = _aware(last)
                prev = out.get(name)
                if prev is None:
                    out[name] = RunInfo(name, count, (version,), first, last)
                else:
                    out[name] = RunInfo(name, prev.replays + count, (*prev.engine_versions, version),
                                        min(prev.started, first), max(prev.finished, last))
        return tuple(out.values())

    def save_verdicts(self, run: str, verdicts: Sequence[tuple[str, VerdictFacts]]) -> None:
        """Store one run's verdicts of several replays in one transaction."""
        if run == SUBMISSION_RUN:
            raise InvalidQuery("a re-verification run needs a name (the empty name is the submission's)")
        _check_run_name(run)
        for _, facts in verdicts:
            problems = facts.problems()
            if problems:
                raise InvalidRecord("; ".join(problems))
        with self._unavailable_on_failure(), self.writer.transaction() as cursor:
            now = self.clock()
            self.writer.insert_verdicts(cursor, [_verdict_rows(replay_id, run, now, facts)
                                                 for replay_id, facts in verdicts])

    def delete_run(self, run: str) -> int:
        """Delete every verdict of a named run; returns how many there were."""
        if run == SUBMISSION_RUN:
            raise InvalidQuery("the submission's verdicts are not a run that can be deleted")
        _check_run_name(run)
        with self._session(write=True) as session:
            verdicts = session.scalars(select(Verdict).where(Verdict.run == run)).all()
            for verdict in verdicts:
                session.delete(verdict)
            return len(verdicts)

    # ------------------------------------------------------------------ helpers

    def _verdict(self, session: Session, replay_id: str, run: str = SUBMISSION_RUN,
                 with_replay: bool = False) -> Verdict | None:
        """The replay's verdict of ``run`` (the submission's by default; None if that run did not verify it);
        ``with_replay``: its replay_blob read with it (deferred otherwise)."""
        query = select(Verdict).where(Verdict.replay_id == replay_id, Verdict.run == run)
        if with_replay:
            query = query.options(undefer(Verdict.replay_blob))
        return session.scalars(query).one_or_none()

    def _summary(self, session: Session, replay: Replay) -> ReplaySummary:
        verdict = self._verdict(session, replay.id)
        if verdict is None:  # (save writes a replay and its submission's verdict in one transaction)
            raise RuntimeError(f"replay {replay.id[:12]} has no submission verdict: the database is inconsistent")
        return _summary_of(replay, verdict)


def _check_filters(filters: ReplayFilter) -> None:
    problems = filters.problems()
    if problems:
        raise InvalidQuery("; ".join(problems))


def judged_by(log_format: str) -> str:
    """Who judged a stored replay, from how its log is stored."""
    return "server" if log_format in SERVER_FORMATS else "engine"


def _check_run_name(run: str) -> None:
    problems = run_name_problems(run)
    if problems:
        raise InvalidQuery("; ".join(problems))


def _conditions(f: ReplayFilter) -> list[ColumnElement[bool]]:
    conds: list[ColumnElement[bool]] = []
    if f.tenant is not None:
        conds.append(Replay.tenant == f.tenant)
    for value, column in ((f.tournament, Replay.tournament), (f.round, Replay.round),
                          (f.table, Replay.table_label), (f.submitter, Replay.submitter)):
        if value:
            conds.append(column == value)
    if f.player:
        # The player's replays, found once off the seats' player index. (Correlated with each replay, as EXISTS,
        # SQLite looked the player up again for every replay it read: a list took minutes on a large store.)
        conds.append(Replay.id.in_(select(ReplaySeat.replay_id).where(ReplaySeat.player == f.player)))
    if f.has_violations is True:
        conds.append(Verdict.violation_count > 0)
    elif f.has_violations is False:
        # (< 1, not == 0: the same for a count, but SQLite takes an equality for a selective one and reads every
        # clean verdict off the count's index, then sorts them all; a range leaves the page to the order index.)
        conds.append(Verdict.violation_count < 1)
    if f.violation_code or f.violation_source:
        # (Both: one violation of that code on a decision of that source.)
        found = [ViolationRow.verdict_id == Verdict.id]
        if f.violation_code:
            found.append(ViolationRow.code == f.violation_code)
        if f.violation_source:
            found.append(ViolationRow.source == f.violation_source)
        conds.append(exists().where(*found))
    if f.judged_by == "server":
        conds.append(Replay.log_format.in_(SERVER_FORMATS))
    elif f.judged_by == "engine":
        conds.append(Replay.log_format.not_in(SERVER_FORMATS))
    if f.submitted_after is not None:
        conds.append(Replay.submitted_at >= f.submitted_after)
    if f.submitted_before is not None:
        conds.append(Replay.submitted_at < f.submitted_before)
    return conds


def _insert_replay(writer: RowWriter, cursor: Cursor, new: NewReplay, now: datetime, tenant: str,
                   replay_id: str) -> bool:
    """The rows of one replay; False (and nothing written) when the tenant has the log already."""
    m = new.metadata
    if not writer.insert_replay(cursor, {
            "id": replay_id, "tenant": tenant, "log_sha256": new.log_sha256, "submitted_at": now,
            "log_bytes": new.log_bytes, "log_format": new.log_format,
            "log_size": len(new.log_bytes), "event_count": new.event_count, "ruleset": new.ruleset, "mode": new.mode,
            "seed": str(new.seed), "recorder": new.recorder, "player_count": len(new.seats),
            "tournament": m.tournament, "round": m.round, "table_label": m.table, "submitter": m.submitter}):
        return False
    writer.insert_seats(cursor, [
        {"replay_id": replay_id, "seat": s.seat, "player": s.player, "role": s.role, "general": s.general}
        for s in new.seats])
    _insert_verdict(writer, cursor, replay_id, SUBMISSION_RUN, now, new.verdict)
    return True


def _insert_verdict(writer: RowWriter, cursor: Cursor, replay_id: str, run: str, now: datetime,
                    v: VerdictFacts) -> None:
    writer.insert_verdict(cursor, *_verdict_rows(replay_id, run, now, v))


def _verdict_rows(replay_id: str, run: str, now: datetime,
                  v: VerdictFacts) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A verdict's row and its violations' rows (their ``verdict_id`` left to the writer)."""
    return ({
        "replay_id": replay_id, "run": run, "created_at": now, "engine_version": v.engine_version,
        "violation_count": v.violation_count, "violation_codes": " ".join(v.violation_codes),
        "followed": v.followed, "stopped_at": v.stopped_at, "stopped_reason": v.stopped_reason,
        "finished": v.finished, "side": v.side, "winners": " ".join(str(w) for w in v.winners),
        "result_reason": v.result_reason, "annotation_count": v.annotation_count,
        "scores": " ".join(str(x) for x in v.scores), "replay_blob": v.replay_blob}, [
        {"event_index": x.event_index, "derived": x.derived, "code": x.code, "seat": x.seat, "card": x.card,
         "message": x.message, "rule": x.rule, "source": x.source} for x in v.violations])


def _summary_of_new(new: NewReplay, now: datetime, tenant: str, replay_id: str) -> ReplaySummary:
    v = new.verdict
    return ReplaySummary(
        id=replay_id, tenant=tenant, log_sha256=new.log_sha256, submitted_at=now, metadata=new.metadata,
        log_format=new.log_format,
        log_size=len(new.log_bytes), event_count=new.event_count, ruleset=new.ruleset, mode=new.mode, seed=new.seed,
        recorder=new.recorder, seats=new.seats, engine_version=v.engine_version, violation_count=v.violation_count,
        violation_codes=v.violation_codes, followed=v.followed, stopped_at=v.stopped_at,
        stopped_reason=v.stopped_reason, finished=v.finished, side=v.side, winners=v.winners,
        result_reason=v.result_reason, annotation_count=v.annotation_count, scores=v.scores)


def stored_scores(text: str | None) -> tuple[int, ...] | None:
    """A verdict's scores column: None (stored before scores existed) stays None."""
    return None if text is None else tuple(int(x) for x in text.split())


def _summary_of(replay: Replay, verdict: Verdict) -> ReplaySummary:
    return ReplaySummary(
        id=replay.id, tenant=replay.tenant, log_sha256=replay.log_sha256, submitted_at=replay.submitted_at,
        metadata=SubmissionMetadata(replay.tournament, replay.round, replay.table_label, replay.submitter),
        log_format=replay.log_format, log_size=replay.log_size, event_count=replay.event_count,
        ruleset=replay.ruleset, mode=replay.mode, seed=int(replay.seed), recorder=replay.recorder,
        seats=tuple(SeatFacts(s.seat, s.player, s.role, s.general) for s in replay.seats),
        engine_version=verdict.engine_version, violation_count=verdict.violation_count,
        violation_codes=tuple(verdict.violation_codes.split()), followed=verdict.followed,
        stopped_at=verdict.stopped_at, stopped_reason=verdict.stopped_reason, finished=verdict.finished,
        side=verdict.side, winners=tuple(int(w) for w in verdict.winners.split()),
        result_reason=verdict.result_reason, annotation_count=verdict.annotation_count,
        scores=stored_scores(verdict.scores))


@dataclass(frozen=True, slots=True)
class Audit:
    """Who does an audited action, and the request it is part of (storage/access.py writes the entries)."""

    actor: str
    request_id: str = ""

    def entry(self, at: datetime, action: str, tenant: str, target: str, detail: str) -> AuditEntry:
        return AuditEntry(at=at, actor=self.actor[:200], tenant=tenant, action=action, target=target[:200],
                          request_id=self.request_id[:64], detail=detail)


def _encode_page_token(at: datetime, replay_id: str) -> str:
    raw = json.dumps({"t": at.isoformat(), "id": replay_id}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


class _BadPageToken(ValueError):
    """A page token that decodes but is not one of ours; the message says why."""


def _decode_page_token(token: str) -> tuple[datetime, str]:
    if len(token) > MAX_PAGE_TOKEN_LENGTH:
        raise InvalidQuery(f"page_token is {len(token)} characters: it is not one this service issued "
                           f"(those are under {MAX_PAGE_TOKEN_LENGTH})")
    shown = token[:80]
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        doc = json.loads(raw)
        at = datetime.fromisoformat(doc["t"])
        replay_id = doc["id"]
        if not isinstance(replay_id, str) or len(replay_id) != HASH_LENGTH or not _HEX.fullmatch(replay_id):
            raise _BadPageToken("its id is not a replay id")
        at = _aware(at)
    except (binascii.Error, ValueError, KeyError, TypeError, RecursionError, OverflowError) as err:
        # Our own reason is said; a decoder's words (base64's, a codec's, JSON's) would tell the caller nothing.
        reason = f" ({err})" if isinstance(err, _BadPageToken) else ""
        raise InvalidQuery(f"page_token {shown!r} is not one this service issued{reason}: pass the "
                           "next_page_token of the previous answer unchanged, or none for the first page") from None
    return at, replay_id


def _aware(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


# SQLSTATE classes of errors that a retry cannot cure: 22 data exception (a value out of range, a NUL
# in text), 54 program limit exceeded (e.g. an index row over its size).
_PERMANENT_SQLSTATE_CLASSES = ("22", "54")


def _sqlstate(err: BaseException) -> str:
    state = getattr(err, "sqlstate", None)
    return state if isinstance(state, str) else ""


def _first_line(err: BaseException) -> str:
    lines = str(err).strip().splitlines()
    return lines[0] if lines else type(err).__name__


__all__ = [
    "DEFAULT_TENANT", "Audit",
    "InvalidQuery", "InvalidRecord", "NewReplay", "Page", "ReplayFilter", "ReplayNotFound", "ReplaySummary", "RunInfo",
    "SchemaOutOfDate", "SeatFacts", "StorageError", "StorageUnavailable", "Store", "StoredReplay", "SubmissionMetadata",
    "VerdictFacts", "ViolationFacts", "replay_id_for", "tenant_problem",
]
