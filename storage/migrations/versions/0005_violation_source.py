"""violations: the source of the decision each is about

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 10:00:00

A log can say who made each decision (Event.source: the player's client, an AI standing in, the default on a
timeout; the FreeKill bridge's tap does). Each violation row keeps the source of the decision it is about, so
that the list can find the replays with a violation on a client's decision — a modified client — apart from
those where an AI or a default broke a rule (ListReplaysRequest.violation_source, `sgs-verify list --source`).
The rows stored before get 0 (not recorded): their logs said nothing of it, or they were stored by an engine
that did not carry it. Frozen: this never imports the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("violations", schema=None) as batch_op:
        batch_op.add_column(sa.Column("source", sa.Integer(), server_default="0", nullable=False))
        batch_op.create_index("ix_violations_source_verdict_id", ["source", "verdict_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("violations", schema=None) as batch_op:
        batch_op.drop_index("ix_violations_source_verdict_id")
        batch_op.drop_column("source")
