"""Migrations on SQLite and PostgreSQL: upgrade from empty, models and migrations agree
(`alembic check`), downgrade/upgrade round trip, a database of the previous revision with replays in it
upgraded (0001 -> 0002: tenants), and replicas upgrading (and, on SQLite, switching a new file to WAL) at
once."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, inspect, text

from storage import migrate
from storage.database import create_database_engine, sqlite_url
from storage.models import Base
from tests.service.conftest import BACKENDS

pytestmark = pytest.mark.parametrize("backend", BACKENDS)

TABLES = {"replays", "replay_seats", "verdicts", "violations", "api_tokens", "audit_log",
          "tenant_rates", "stream_leases"}


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


def test_upgrade_from_0001_keeps_every_replay(backend: str, empty_database: str) -> None:
    """Replays stored by the previous schema become the default tenant's, under the same ids, with their
    verdicts; afterwards another tenant can store the same log as a replay of its own."""
    from clients.selfplay import play_game
    from service.work import VerifyJob, run_job
    from storage.store import DEFAULT_TENANT, Store, SubmissionMetadata

    engine = create_database_engine(empty_database)
    try:
        migrate.upgrade(engine, "0001")
        records = [run_job(VerifyJob(play_game(seed, 5).SerializeToString(deterministic=True),
                                     SubmissionMetadata(tournament="old"), 100_000, canonical=True))
                   for seed in (1, 2)]
        with engine.begin() as conn:  # rows as revision 0001 wrote them
            for r in records:
                conn.execute(text("INSERT INTO replays (id, submitted_at, log_bytes, log_format, log_size, "
                                  "event_count, ruleset, mode, seed, recorder, player_count, tournament, round, "
                                  "table_label, submitter) VALUES (:id, :at, :log, 'binary', :size, :events, "
                                  "'standard', 1, '1', '', 5, 'old', '', '', '')"),
                             {"id": r.log_sha256, "at": datetime(2026, 1, 1, tzinfo=UTC), "log": r.log_bytes,
                              "size": len(r.log_bytes), "events": r.event_count})
                v = r.verdict
                conn.execute(text("INSERT INTO verdicts (replay_id, run, created_at, engine_version, "
                                  "violation_count, violation_codes, followed, stopped_at, stopped_reason, finished, "
                                  "side, winners, result_reason, annotation_count, replay_blob) VALUES (:id, '', "
                                  ":at, :ev, 0, '', :t, NULL, '', :t, 0, '', '', :n, :blob)"),
                             {"id": r.log_sha256, "at": datetime(2026, 1, 1, tzinfo=UTC), "ev": v.engine_version,
                              "t": True, "n": v.annotation_count, "blob": v.replay_blob})
        migrate.upgrade(engine)
        migrate.check(engine)
        store = Store(engine)
        for r in records:
            got = store.get(r.log_sha256)
            assert got.summary.tenant == DEFAULT_TENANT and got.summary.log_sha256 == r.log_sha256
            assert got.replay_blob == r.verdict.replay_blob
            assert store.find(r.log_sha256) is not None
            assert store.find(r.log_sha256, "acme") is None
        # Verdicts from before scores existed (0003) have none: the standings list their games, unscored.
        from storage.standings import standings

        assert all(store.get(r.log_sha256).summary.scores is None for r in records)
        old = standings(store, "old")
        assert [g.scored for g in old.games] == [False, False] and not any(p.games for p in old.players)
        assert all(g.note.startswith("verified before scores existed") for g in old.games)
        theirs, created = store.save(records[0], "acme")
        assert created and theirs.id != records[0].log_sha256 and theirs.log_sha256 == records[0].log_sha256
        assert theirs.scores == records[0].verdict.scores and theirs.scores  # a new verdict has them
        assert standings(store, "old", tenant="acme").games[0].scored
        assert store.count() == 3
        migrate.downgrade(engine, "0001")  # the other tenant's copy cannot keep an id of its own there
        assert migrate.current_revision(engine) == "0001"
        with engine.connect() as conn:
            assert sorted(conn.execute(text("SELECT id FROM replays")).scalars()) == sorted(
                r.log_sha256 for r in records)
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


def test_blobs_are_compressed_with_lz4_on_postgresql(backend: str, empty_database: str) -> None:
    """Migration 0007: on a PostgreSQL server with lz4, the logs' and verdicts' blobs are stored compressed with
    it (a value stored after the upgrade says so), and a downgrade gives the columns back their default."""
    engine = create_database_engine(empty_database)
    if not backend.startswith("postgres"):  # (SQLite compresses nothing: the revision changes nothing there)
        try:
            migrate.upgrade(engine, "0006")
            migrate.upgrade(engine)
            assert migrate.current_revision(engine) == migrate.head_revision()
            migrate.downgrade(engine, "0006")
            assert migrate.current_revision(engine) == "0006"
        finally:
            engine.dispose()
        return

    def compression() -> dict[str, str]:
        with engine.connect() as conn:
            rows = conn.execute(text(
                "SELECT attrelid::regclass::text || '.' || attname, attcompression FROM pg_attribute "
                "WHERE (attrelid = 'replays'::regclass AND attname = 'log_bytes') "
                "OR (attrelid = 'verdicts'::regclass AND attname = 'replay_blob')")).all()
        return {name: str(code) for name, code in rows}

    try:
        with engine.connect() as conn:
            lz4 = conn.execute(text("SELECT 'lz4' = ANY(enumvals) FROM pg_settings "
                                    "WHERE name = 'default_toast_compression'")).scalar()
        if not lz4:
            pytest.skip("this PostgreSQL server has no lz4")
        migrate.upgrade(engine, "0006")
        assert set(compression().values()) == {""}
        migrate.upgrade(engine)
        assert compression() == {"replays.log_bytes": "l", "verdicts.replay_blob": "l"}
        with engine.begin() as conn:  # a value large enough to be compressed
            conn.execute(text("INSERT INTO replays (id, tenant, log_sha256, submitted_at, log_bytes, log_format, "
                              "log_size, event_count, ruleset, mode, seed, recorder, player_count, tournament, "
                              "round, table_label, submitter) VALUES ('probe', 't', 'h', now(), :blob, 'f', 1, 1, "
                              "'r', 0, '0', '', 4, '', '', '', '')"), {"blob": b"sgs" * 10_000})
            assert conn.execute(text("SELECT pg_column_compression(log_bytes) FROM replays "
                                     "WHERE id = 'probe'")).scalar() == "lz4"
            conn.execute(text("DELETE FROM replays WHERE id = 'probe'"))
        migrate.downgrade(engine, "0006")
        assert set(compression().values()) == {""}
    finally:
        engine.dispose()
