"""tenants, API tokens and the audit log

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 10:00:00

Every replay gets a tenant and its log's hash as columns of their own: the replays stored before
are the default tenant's ("default"), where a replay's id stays its log's hash, so their ids do not
change. A log is stored once per tenant (unique tenant, log_sha256). New tables: api_tokens (bearer
tokens, hashed) and audit_log. Frozen: this never imports the models.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("replays", schema=None) as batch_op:
        batch_op.add_column(sa.Column("tenant", sa.String(length=64), nullable=False, server_default="default"))
        batch_op.add_column(sa.Column("log_sha256", sa.String(length=64), nullable=True))
    op.execute("UPDATE replays SET log_sha256 = id")
    with op.batch_alter_table("replays", schema=None) as batch_op:
        batch_op.alter_column("tenant", existing_type=sa.String(length=64), server_default=None)
        batch_op.alter_column("log_sha256", existing_type=sa.String(length=64), nullable=False)
        batch_op.create_unique_constraint(batch_op.f("uq_replays_tenant"), ["tenant", "log_sha256"])
        batch_op.create_index("ix_replays_tenant_submitted_at", ["tenant", "submitted_at"], unique=False)

    op.create_table(
        "api_tokens",
        sa.Column("id", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.String(length=100), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
    )
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_api_tokens_tenant"), ["tenant"], unique=False)

    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("tenant", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target", sa.String(length=200), nullable=False),
        sa.Column("request_id", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_audit_log_at"), ["at"], unique=False)


def downgrade() -> None:
    """Back to one tenant: only the default tenant's replays can keep their ids, so the other tenants'
    replays are deleted (with their verdicts), as are the tokens and the audit log."""
    with op.batch_alter_table("audit_log", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_audit_log_at"))
    op.drop_table("audit_log")
    with op.batch_alter_table("api_tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_api_tokens_tenant"))
    op.drop_table("api_tokens")
    op.execute("DELETE FROM violations WHERE verdict_id IN (SELECT v.id FROM verdicts v JOIN replays r "
               "ON r.id = v.replay_id WHERE r.tenant <> 'default')")
    op.execute("DELETE FROM verdicts WHERE replay_id IN (SELECT id FROM replays WHERE tenant <> 'default')")
    op.execute("DELETE FROM replay_seats WHERE replay_id IN (SELECT id FROM replays WHERE tenant <> 'default')")
    op.execute("DELETE FROM replays WHERE tenant <> 'default'")
    with op.batch_alter_table("replays", schema=None) as batch_op:
        batch_op.drop_index("ix_replays_tenant_submitted_at")
        batch_op.drop_constraint(batch_op.f("uq_replays_tenant"), type_="unique")
        batch_op.drop_column("log_sha256")
        batch_op.drop_column("tenant")
