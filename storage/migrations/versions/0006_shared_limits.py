"""tenant_rates, stream_leases: per-tenant limits shared by every replica

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 10:40:00

Replicas behind one load balancer share one database, so a tenant's request rate and its streams at once
are kept there (service/shared_limits.py, issue 30): one token bucket row per tenant, updated by one UPSERT
per admitted request, and one lease row per open client stream, which its replica renews while the stream
lives — a replica killed mid-stream leaves leases that lapse on their own. Times are the database's clock,
in seconds since the epoch, so that replicas' clocks never disagree. Frozen: this never imports the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "tenant_rates",
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("granted", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", name=op.f("pk_tenant_rates")),
    )
    op.create_table(
        "stream_leases",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("replica", sa.String(length=32), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_stream_leases")),
    )
    with op.batch_alter_table("stream_leases", schema=None) as batch_op:
        batch_op.create_index("ix_stream_leases_tenant_expires_at", ["tenant", "expires_at"], unique=False)
        batch_op.create_index("ix_stream_leases_replica", ["replica"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("stream_leases", schema=None) as batch_op:
        batch_op.drop_index("ix_stream_leases_replica")
        batch_op.drop_index("ix_stream_leases_tenant_expires_at")
    op.drop_table("stream_leases")
    op.drop_table("tenant_rates")
