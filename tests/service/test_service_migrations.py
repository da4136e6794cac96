"""Migrations on SQLite and PostgreSQL: upgrade from empty, models and migrations agree
(`alembic check`), downgrade/upgrade round trip, and replicas upgrading (and, on SQLite, switching a
new file to WAL) at once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect

from storage import migrate
from storage.database import create_database_engine, sqlite_url
from storage.models import Base
from tests.service.conftest import BACKENDS

pytestmark = pytest.mark.parametrize("backend", BACKENDS)

TABLES = {"replays", "replay_seats", "verdicts", "violations"}


def test_upgrade_from_empty_and_check_clean(backend: str, empty_database: str) -> None:
    engine = create_database_engine(empty_database)
    try:
        assert migrate.current_revision(engine) is None
        migrate.upgrade(engine)
        assert migrate.current_revision(engine) == migrate.head_revision()
        assert set(inspect(engine).get_table_names()) >= TABLES
        migrate.check(engine)  # raises if the models need a migration that does not exist
        migrate.upgrade(engine)  # a second upgrade is a no-op
        assert migrate.is_current(engine)
    finally:
        engine.dispose()


def test_downgrade_upgrade_round_trip(backend: str, empty_database: str) -> None:
    engine = create_database_engine(empty_database)
    try:
        migrate.upgrade(engine)
        before = {t: sorted(c["name"] for c in inspect(engine).get_columns(t)) for t in TABLES}
        migrate.downgrade(engine, "base")
        assert migrate.current_revision(engine) is None
        assert not TABLES & set(inspect(engine).get_table_names())
        migrate.upgrade(engine)
        after = {t: sorted(c["name"] for c in inspect(engine).get_columns(t)) for t in TABLES}
        assert after == before
        assert set(Base.metadata.tables) == TABLES
        migrate.check(engine)
    finally:
        engine.dispose()


def upgrade_at_once(engines: list[Engine]) -> list[BaseException]:
    """Each engine upgrades from its own thread, all released at the same moment; what they raised."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(engines))

    def upgrade(engine: Engine) -> None:
        try:
            start.wait()
            migrate.upgrade(engine)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=upgrade, args=(e,)) for e in engines]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_replicas_upgrading_at_once(backend: str, empty_database: str) -> None:
    """Two replicas start against an empty database at the same moment: both succeed, once."""
    engines = [create_database_engine(empty_database) for _ in range(3)]
    errors = upgrade_at_once(engines)
    try:
        assert not errors, errors
        assert migrate.current_revision(engines[0]) == migrate.head_revision()
        migrate.check(engines[0])
    finally:
        for e in engines:
            e.dispose()


def test_many_replicas_opening_new_sqlite_files_at_once(backend: str, tmp_path: Path) -> None:
    """Switching a new SQLite file to WAL takes an exclusive lock that SQLite does not wait for: six
    replicas opening (and migrating) a new file at once, a hundred times over, must all succeed."""
    if backend != "sqlite":
        return  # nothing to check: PostgreSQL has no journal mode to switch
    for round_ in range(100):
        url = sqlite_url(tmp_path / f"replays-{round_}.sqlite3")
        engines = [create_database_engine(url) for _ in range(6)]
        errors = upgrade_at_once(engines)
        try:
            assert not errors, (round_, errors)
            assert migrate.is_current(engines[0])
        finally:
            for e in engines:
                e.dispose()
