"""replays: indexes in the list's order

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02 03:00:00

A list (ListReplays, `sgs-verify list`, the viewer) is newest first — submitted_at, then id, descending —
one page at a time. The indexes on submitted_at, on tournament and on (tenant, submitted_at) did not hold
that order, so a page was sorted out of every matching replay: with 20,000 replays stored, 210-240 ms for
the first page on SQLite, growing with the store (bench/list_bench.py; 6-16 ms after, most of it the total
count). Each is replaced by one that ends in (submitted_at, id), the list's order: the whole store's, a
tenant's and a tournament's pages are read off an index. They still serve the look-ups the old ones did (a
tournament's replays, a tenant's, a date range). Frozen: this never imports the models.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("replays", schema=None) as batch_op:
        batch_op.create_index("ix_replays_submitted_at_id", ["submitted_at", "id"], unique=False)
        batch_op.create_index("ix_replays_tenant_submitted_at_id", ["tenant", "submitted_at", "id"], unique=False)
        batch_op.create_index("ix_replays_tournament_submitted_at_id", ["tournament", "submitted_at", "id"],
                              unique=False)
        batch_op.drop_index("ix_replays_submitted_at")
        batch_op.drop_index("ix_replays_tournament")
        batch_op.drop_index("ix_replays_tenant_submitted_at")


def downgrade() -> None:
    with op.batch_alter_table("replays", schema=None) as batch_op:
        batch_op.create_index("ix_replays_tenant_submitted_at", ["tenant", "submitted_at"], unique=False)
        batch_op.create_index("ix_replays_tournament", ["tournament"], unique=False)
        batch_op.create_index("ix_replays_submitted_at", ["submitted_at"], unique=False)
        batch_op.drop_index("ix_replays_tournament_submitted_at_id")
        batch_op.drop_index("ix_replays_tenant_submitted_at_id")
        batch_op.drop_index("ix_replays_submitted_at_id")
