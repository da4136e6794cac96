"""Alembic environment for the replay store.

The service runs migrations through storage/migrate.py, which hands over an open connection
(config.attributes["connection"]) inside a transaction that already holds the migration lock.
The `alembic` command line (storage/alembic.ini) gives the URL with ``-x url=...`` instead.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from storage.database import create_database_engine
from storage.models import Base

config = context.config
target_metadata = Base.metadata


def run_with(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        transaction_per_migration=False,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_with(connection)
        return
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("give the database URL: alembic -x url=sqlite:///PATH ...")
    engine = create_database_engine(url)
    try:
        with engine.connect() as conn:
            run_with(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run them against a database")
run_online()
