"""verdicts: each seat's score

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03 10:00:00

A verdict keeps the seats' scores (docs/rules.md#scoring) as a column of its own, space-separated in seat
order, for the tournament standings. The verdicts stored before stay NULL: scored by an engine that had no
scores (their replays' blobs have none either), they are listed in the standings as not scored. Frozen:
this never imports the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.add_column(sa.Column("scores", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("verdicts", schema=None) as batch_op:
        batch_op.drop_column("scores")
