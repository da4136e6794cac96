"""The replay store's tables, as SQLAlchemy 2 typed models.

    replays      one row per distinct log (id = SHA-256 of its canonical encoding): the log's
                 bytes as submitted, its header facts and the submission metadata
    replay_seats one row per seat: player, role, general (filter: player)
    verdicts     one verification of a replay by one engine: the summary and every annotation
                 (the serialized AnnotatedReplay). Keyed by (replay_id, run): the submission's
                 own verdict has run = "" — re-verification runs add rows with their run name
    violations   one row per violation of a verdict (filters: has violations, violation code, the source of
                 the decision it is about)
    api_tokens   one row per bearer token: its public id, tenant, scopes and the SHA-256 of the token
                 (the token itself is never stored); revoked tokens stay, with revoked_at
    audit_log    one row per audited action (a replay deleted, a token created or revoked): when,
                 who, which tenant, what
    tenant_rates one token bucket per tenant, shared by every replica (service/shared_limits.py)
    stream_leases one row per client stream open on any replica, with an expiry its replica renews

Changing a model needs a migration: ``alembic revision --autogenerate`` (see docs/service.md),
and ``tests/test_service_migrations.py`` fails while models and migrations disagree.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

# The run name of the verdict made when a replay is submitted.
SUBMISSION_RUN = ""
# The tenant of replays submitted without a token (a local server with no tokens) and of every replay
# stored before tenants existed; its replays' ids are their logs' hashes.
DEFAULT_TENANT = "default"

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime on every backend (SQLite keeps no time zone: naive means UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime: pass an aware (UTC) datetime")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Replay(Base):
    __tablename__ = "replays"

    # The log's hash in the default tenant; in another, a hash of the tenant and the log's hash
    # (storage.store.replay_id_for), so that every tenant has its own copy of a log.
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    # Who submitted it: the tenant of the token (docs/security.md). A tenant sees only its own.
    tenant: Mapped[str] = mapped_column(String(64))
    # The SHA-256 of the log's canonical encoding (the AnnotatedReplay's log_sha256).
    log_sha256: Mapped[str] = mapped_column(String(64))
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # The log exactly as submitted, and how it was encoded ("binary" or "json"). Deferred: read only where
    # asked for (a page of the list, a look-up by hash never needs it).
    log_bytes: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)
    log_format: Mapped[str] = mapped_column(String(8))
    log_size: Mapped[int] = mapped_column(BigInteger)
    event_count: Mapped[int] = mapped_column(Integer)
    # Header facts.
    ruleset: Mapped[str] = mapped_column(String(64))
    mode: Mapped[int] = mapped_column(Integer)
    seed: Mapped[str] = mapped_column(String(20))  # a uint64, as decimal text (no portable unsigned type)
    recorder: Mapped[str] = mapped_column(Text)
    player_count: Mapped[int] = mapped_column(Integer)
    # Submission metadata.
    tournament: Mapped[str] = mapped_column(String(200))
    round: Mapped[str] = mapped_column(String(200))
    table_label: Mapped[str] = mapped_column(String(200))
    submitter: Mapped[str] = mapped_column(String(200))

    seats: Mapped[list[ReplaySeat]] = relationship(
        back_populates="replay", cascade="all, delete-orphan", passive_deletes=True, order_by="ReplaySeat.seat")
    verdicts: Mapped[list[Verdict]] = relationship(
        back_populates="replay", cascade="all, delete-orphan", passive_deletes=True)

    # A list is newest first, (submitted_at, id) descending, a page at a time: these indexes hold the replays in
    # that order — all of them, a tenant's, a tournament's — so that a page is read off an index, not sorted
    # out of every matching replay (storage/migrations/versions/0004_list_order_indexes.py).
    __table_args__ = (UniqueConstraint("tenant", "log_sha256"),
                      Index("ix_replays_submitted_at_id", "submitted_at", "id"),
                      Index("ix_replays_tenant_submitted_at_id", "tenant", "submitted_at", "id"),
                      Index("ix_replays_tournament_submitted_at_id", "tournament", "submitted_at", "id"))


class ReplaySeat(Base):
    __tablename__ = "replay_seats"

    replay_id: Mapped[str] = mapped_column(ForeignKey("replays.id", ondelete="CASCADE"), primary_key=True)
    seat: Mapped[int] = mapped_column(Integer, primary_key=True)
    player: Mapped[str] = mapped_column(Text)
    role: Mapped[int] = mapped_column(Integer)
    general: Mapped[str] = mapped_column(String(64))

    replay: Mapped[Replay] = relationship(back_populates="seats")

    __table_args__ = (Index("ix_replay_seats_player", "player"),)


class Verdict(Base):
    __tablename__ = "verdicts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    replay_id: Mapped[str] = mapped_column(ForeignKey("replays.id", ondelete="CASCADE"))
    # "" for the verdict made at submission; a later re-verification run stores its own.
    run: Mapped[str] = mapped_column(String(100), default=SUBMISSION_RUN)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    engine_version: Mapped[str] = mapped_column(String(100))
    violation_count: Mapped[int] = mapped_column(Integer, index=True)
    violation_codes: Mapped[str] = mapped_column(Text)  # sorted, space-separated
    followed: Mapped[bool] = mapped_column(Boolean)
    stopped_at: Mapped[int | None] = mapped_column(Integer)
    stopped_reason: Mapped[str] = mapped_column(Text)
    finished: Mapped[bool] = mapped_column(Boolean)
    side: Mapped[int] = mapped_column(Integer)
    winners: Mapped[str] = mapped_column(String(64))  # seats, space-separated
    result_reason: Mapped[str] = mapped_column(Text)
    annotation_count: Mapped[int] = mapped_column(Integer)
    # Each seat's score (docs/rules.md#scoring), space-separated in seat order; "" when the game is not scored
    # (unfinished, hegemony); NULL for a verdict stored before scores existed (migration 0003).
    scores: Mapped[str | None] = mapped_column(Text)
    # The whole AnnotatedReplay (protobuf binary): every annotation, result and digests. Deferred, as log_bytes.
    replay_blob: Mapped[bytes] = mapped_column(LargeBinary, deferred=True)

    replay: Mapped[Replay] = relationship(back_populates="verdicts")
    violations: Mapped[list[ViolationRow]] = relationship(
        back_populates="verdict", cascade="all, delete-orphan", passive_deletes=True)

    __table_args__ = (UniqueConstraint("replay_id", "run"),)


class ViolationRow(Base):
    __tablename__ = "violations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    verdict_id: Mapped[int] = mapped_column(ForeignKey("verdicts.id", ondelete="CASCADE"), index=True)
    # The log event's index (derived outcomes: the event they were derived before);
    # None for a violation of the header.
    event_index: Mapped[int | None] = mapped_column(Integer)
    derived: Mapped[bool] = mapped_column(Boolean)
    code: Mapped[str] = mapped_column(String(64))
    seat: Mapped[int | None] = mapped_column(Integer)
    card: Mapped[int | None] = mapped_column(Integer)
    message: Mapped[str] = mapped_column(Text)
    rule: Mapped[str] = mapped_column(Text)
    # Who made the decision it is about (sgsverify.v1.DecisionSource: 1 the player's client, 2 an AI, 3 the
    # default on a timeout); 0 when the log does not say, and for outcomes and the header (migration 0005).
    source: Mapped[int] = mapped_column(Integer, server_default="0")

    verdict: Mapped[Verdict] = relationship(back_populates="violations")

    # (source, verdict_id): the list's "violations on a client's decisions" filter finds its few verdicts off the
    # index, as the code filter does, instead of reading every violation.
    __table_args__ = (Index("ix_violations_code_verdict_id", "code", "verdict_id"),
                      Index("ix_violations_source_verdict_id", "source", "verdict_id"))


class ApiToken(Base):
    """A bearer token (docs/security.md). The token is ``sgsv_<id>_<secret>``; only the SHA-256 of the whole
    token is kept, so the database cannot give a token away."""

    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(String(16), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    tenant: Mapped[str] = mapped_column(String(64), index=True)
    # Space-separated: submit, read, delete, admin.
    scopes: Mapped[str] = mapped_column(String(100))
    token_hash: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    created_by: Mapped[str] = mapped_column(String(200))
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class AuditEntry(Base):
    """One audited action: a replay deleted, a token created or revoked."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    # Who: "token ID (NAME)", "cli USER@HOST", or "local (no authentication)".
    actor: Mapped[str] = mapped_column(String(200))
    tenant: Mapped[str] = mapped_column(String(64))
    # replay.delete, token.create, token.revoke
    action: Mapped[str] = mapped_column(String(64))
    target: Mapped[str] = mapped_column(String(200))
    request_id: Mapped[str] = mapped_column(String(64))
    detail: Mapped[str] = mapped_column(Text)


class TenantRate(Base):
    """A tenant's request-rate token bucket, over every replica (service/shared_limits.py): ``tokens`` left at
    ``at`` (the database's clock, seconds since the epoch); ``granted``: whether the last request got one."""

    __tablename__ = "tenant_rates"

    tenant: Mapped[str] = mapped_column(String(64), primary_key=True)
    tokens: Mapped[float] = mapped_column(Float)
    at: Mapped[float] = mapped_column(Float)
    granted: Mapped[bool] = mapped_column(Boolean)


class StreamLease(Base):
    """A client stream open on some replica: counted against its tenant's streams at once until it ends or,
    its replica gone, ``expires_at`` (the database's clock) passes without a renewal."""

    __tablename__ = "stream_leases"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    tenant: Mapped[str] = mapped_column(String(64))
    replica: Mapped[str] = mapped_column(String(32), index=True)
    expires_at: Mapped[float] = mapped_column(Float)

    __table_args__ = (Index("ix_stream_leases_tenant_expires_at", "tenant", "expires_at"),)
