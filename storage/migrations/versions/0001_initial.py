"""initial schema: replays, seats, verdicts, violations

Revision ID: 0001
Revises:
Create Date: 2026-11-29 23:29:18.389933

The tables of storage/models.py as first published. Migrations are frozen: they never import
the models, so later model changes cannot change what this revision does.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "replays",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("log_bytes", sa.LargeBinary(), nullable=False),
        sa.Column("log_format", sa.String(length=8), nullable=False),
        sa.Column("log_size", sa.BigInteger(), nullable=False),
        sa.Column("event_count", sa.Integer(), nullable=False),
        sa.Column("ruleset", sa.String(length=64), nullable=False),
        sa.Column("mode", sa.Integer(), nullable=False),
        sa.Column("seed", sa.String(length=20), nullable=False),
        sa.Column("recorder", sa.Text(), nullable=False),
        sa.Column("player_count", sa.Integer(), nullable=False),
        sa.Column("tournament", sa.String(length=200), nullable=False),
        sa.Column("round", sa.String(length=200), nullable=False),
        sa.Column("table_label", sa.String(length=200), nullable=False),
        sa.Column("submitter", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_replays")),
    )
    with op.batch_alter_table("replays", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_replays_submitted_at"), ["submitted_at"], unique=False)
        batch_op.create_index(batch_op.f("ix_replays_tournament"), ["tournament"], unique=False)

    op.create_table(
        "replay_seats",
        sa.Column("replay_id", sa.String(length=64), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("player", sa.Text(), nullable=False),
        sa.Column("role", sa.Integer(), nullable=False),
        sa.Column("general", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["replay_id"], ["replays.id"], name=op.f("fk_replay_seats_replay_id_replays"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("replay_id", "seat", name=op.f("pk_replay_seats")),
    )
    with op.batch_alter_table("replay_seats", schema=None) as batch_op:
        batch_op.create_index("ix_replay_seats_player", ["player"], unique=False)

    op.create_table(
        "verdicts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("replay_id", sa.String(length=64), nullable=False),
        sa.Column("run", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("engine_version", sa.String(length=100), nullable=False),
        sa.Column("violation_count", sa.Integer(), nullable=False),
        sa.Column("violation_codes", sa.Text(), nullable=False),
        sa.Column("followed", sa.Boolean(), nullable=False),
        sa.Column("stopped_at", sa.Integer(), nullable=True),
        sa.Column("stopped_reason", sa.Text(), nullable=False),
        sa.Column("finished", sa.Boolean(), nullable=False),
        sa.Column("side", sa.Integer(), nullable=False),
        sa.Column("winners", sa.String(length=64), nullable=False),
        sa.Column("result_reason", sa.Text(), nullable=False),
        sa.Column("annotation_count", sa.Integer(), nullable=False),
        sa.Column("replay_blob", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["replay_id"], ["replays.id"], name=op.f("fk_verdicts_replay_id_replays"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_verdicts")),
        sa.UniqueConstraint("replay_id", "run", name=op.f("uq_verdicts_replay_id")),
    )
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_verdicts_violation_count"), ["violation_count"], unique=False)

    op.create_table(
        "violations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("verdict_id", sa.Integer(), nullable=False),
        sa.Column("event_index", sa.Integer(), nullable=True),
        sa.Column("derived", sa.Boolean(), nullable=False),
        sa.Column("code", sa.String(length=64), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=True),
        sa.Column("card", sa.Integer(), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("rule", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["verdict_id"], ["verdicts.id"], name=op.f("fk_violations_verdict_id_verdicts"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_violations")),
    )
    with op.batch_alter_table("violations", schema=None) as batch_op:
        batch_op.create_index("ix_violations_code_verdict_id", ["code", "verdict_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_violations_verdict_id"), ["verdict_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("violations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_violations_verdict_id"))
        batch_op.drop_index("ix_violations_code_verdict_id")

    op.drop_table("violations")
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_verdicts_violation_count"))

    op.drop_table("verdicts")
    with op.batch_alter_table("replay_seats", schema=None) as batch_op:
        batch_op.drop_index("ix_replay_seats_player")

    op.drop_table("replay_seats")
    with op.batch_alter_table("replays", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_replays_tournament"))
        batch_op.drop_index(batch_op.f("ix_replays_submitted_at"))

    op.drop_table("replays")
