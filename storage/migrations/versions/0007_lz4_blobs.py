"""replays.log_bytes, verdicts.replay_blob: compressed with lz4 on PostgreSQL

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03 19:30:00

A log and a verdict are blobs of 10-30 KB, which PostgreSQL compresses when it stores them (TOAST), with pglz
by default. With lz4 a regression run's chunk of verdicts was written in 0.53-0.64 ms a verdict against
1.04-1.18 (the database server's work, on the machine of the benchmark; the blobs 4 % larger): the store's
writes are the service's hot path and a named run's cost. Only new values are compressed so; those stored
before stay as they are, and both are read alike. A server without lz4 (before PostgreSQL 14, or built
without it) keeps pglz. SQLite compresses nothing: nothing to do there. Frozen: this never imports the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BLOBS = (("replays", "log_bytes"), ("verdicts", "replay_blob"))


def _lz4_available() -> bool:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return False
    return bind.execute(sa.text("SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' "
                                "AND 'lz4' = ANY(enumvals)")).first() is not None


def upgrade() -> None:
    if _lz4_available():
        for table, column in BLOBS:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION lz4")


def downgrade() -> None:
    if _lz4_available():
        for table, column in BLOBS:
            op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION DEFAULT")
