"""The replay store on SQLite and PostgreSQL: whole-replay writes, idempotency, filters,
paging, deletion, concurrent writers, and reporting itself unavailable."""

from __future__ import annotations

import threading
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, insert, text
from sqlalchemy.exc import IntegrityError

from service.work import VerifyJob, run_job
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from storage.database import SQLITE_BEGIN_OPTION, create_database_engine, sqlite_url
from storage.models import Replay, ReplaySeat, Verdict, ViolationRow
from storage.store import (
    InvalidQuery,
    NewReplay,
    ReplayFilter,
    ReplayNotFound,
    StorageUnavailable,
    Store,
    SubmissionMetadata,
    replay_id_for,
)
from tests.service.conftest import BACKENDS, TcpProxy, require_pg

pytestmark = pytest.mark.parametrize("backend", BACKENDS)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(minutes=1)
        return self.now


def record(log: pb.GameLog, **meta: str) -> NewReplay:
    return run_job(VerifyJob(log.SerializeToString(deterministic=True), SubmissionMetadata(**meta), 100_000,
                             canonical=True))


def with_slash_violation(log: pb.GameLog) -> pb.GameLog:
    """A copy whose verdict has violations (an event after the game is over)."""
    out = pb.GameLog()
    out.CopyFrom(log)
    extra = out.events.add()
    extra.end_play_phase.seat = 0
    return out


def test_save_get_roundtrip(backend: str, database: str, games: list[pb.GameLog]) -> None:
    store = Store.open(database)
    try:
        new = record(games[0], tournament="cup", round="1", table="A", submitter="me")
        summary, created = store.save(new)
        assert created
        assert summary.id == new.log_sha256
        stored = store.get(summary.id, include_log=True)
        assert stored.log_bytes == new.log_bytes
        replay = apb.AnnotatedReplay.FromString(stored.replay_blob)
        assert replay.log_sha256 == summary.id
        assert len(replay.annotations) == new.verdict.annotation_count
        s = stored.summary
        assert s.metadata == SubmissionMetadata("cup", "1", "A", "me")
        assert [seat.player for seat in s.seats] == [seat.player for seat in games[0].header.seats]
        assert all(seat.role for seat in s.seats)  # roles as dealt from the seed
        assert s.seed == games[0].header.seed and s.event_count == len(games[0].events)
        assert s.engine_version == replay.engine_version and s.finished
        assert store.get(summary.id[:10]).summary.id == summary.id  # a unique prefix does
    finally:
        store.close()


def test_same_log_twice_is_one_replay(backend: str, database: str, games: list[pb.GameLog]) -> None:
    store = Store.open(database)
    try:
        first, created1 = store.save(record(games[1], tournament="a"))
        second, created2 = store.save(record(games[1], tournament="b"))
        assert (created1, created2) == (True, False)
        assert second.id == first.id and second.metadata.tournament == "a"
        assert store.count() == 1
    finally:
        store.close()


def test_concurrent_writers_of_the_same_and_different_logs(backend: str, database: str,
                                                           games: list[pb.GameLog]) -> None:
    store = Store.open(database)
    records = [record(g) for g in games[:4]]
    outcomes: list[tuple[str, bool]] = []
    errors: list[BaseException] = []

    def write(new: NewReplay) -> None:
        try:
            summary, created = store.save(new)
            outcomes.append((summary.id, created))
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(r,)) for r in records for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        assert not errors
        assert store.count() == 4
        for r in records:  # each log created exactly once, the others saw it stored
            assert sorted(created for rid, created in outcomes if rid == r.log_sha256) == [False, False, True]
    finally:
        store.close()


def test_list_filters_and_paging(backend: str, database: str, games: list[pb.GameLog]) -> None:
    clock = Clock()
    store = Store.open(database, clock=clock)
    try:
        ids = []
        for i, g in enumerate(games[:6]):
            log = with_slash_violation(g) if i % 2 else g
            ids.append(store.save(record(log, tournament="spring" if i < 4 else "autumn", round=str(i),
                                         submitter="s"))[0].id)
        assert store.list().total_count == 6
        assert [s.id for s in store.list().replays] == ids[::-1]  # newest first
        assert store.list(ReplayFilter(tournament="spring")).total_count == 4
        assert store.list(ReplayFilter(round="3", tournament="spring")).total_count == 1
        flagged = store.list(ReplayFilter(has_violations=True))
        assert {s.id for s in flagged.replays} == {ids[1], ids[3], ids[5]}
        assert store.list(ReplayFilter(has_violations=False)).total_count == 3
        code = flagged.replays[0].violation_codes[0]
        assert store.list(ReplayFilter(violation_code=code)).total_count == 3
        assert store.list(ReplayFilter(violation_code="NO_SUCH_CODE")).total_count == 0
        assert store.list(ReplayFilter(player="bot-4")).total_count == 6
        assert store.list(ReplayFilter(player="nobody")).total_count == 0
        third = store.get(ids[2]).summary.submitted_at
        window = ReplayFilter(submitted_after=third, submitted_before=third + timedelta(minutes=2))
        assert [s.id for s in store.list(window).replays] == [ids[3], ids[2]]
        # keyset paging: pages of 4 cover everything once, in order
        page1 = store.list(page_size=4)
        page2 = store.list(page_size=4, page_token=page1.next_page_token)
        assert page1.next_page_token and not page2.next_page_token
        assert [s.id for s in page1.replays + page2.replays] == ids[::-1]
        with pytest.raises(InvalidQuery):
            store.list(page_token="not a token")
        with pytest.raises(InvalidQuery):
            store.list(ReplayFilter(submitted_after=third, submitted_before=third - timedelta(days=1)))
    finally:
        store.close()


def test_delete_removes_everything(backend: str, database: str, games: list[pb.GameLog]) -> None:
    store = Store.open(database)
    try:
        bad = with_slash_violation(games[2])
        summary, _ = store.save(record(bad))
        store.delete(summary.id)
        with pytest.raises(ReplayNotFound):
            store.get(summary.id)
        with pytest.raises(ReplayNotFound):
            store.delete(summary.id)
        with store.connect() as conn:
            for table in ("replays", "replay_seats", "verdicts", "violations"):
                assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar() == 0, table
    finally:
        store.close()


def test_bad_ids(backend: str, database: str) -> None:
    store = Store.open(database)
    try:
        for bad in ("xyz", "abc", "g" * 64, "a" * 65):
            with pytest.raises(InvalidQuery):
                store.get(bad)
        with pytest.raises(ReplayNotFound):
            store.get("0" * 64)
    finally:
        store.close()


def test_a_failed_write_leaves_nothing(backend: str, database: str, games: list[pb.GameLog]) -> None:
    """A replay is stored whole or not at all: when its last row (a violation) breaks a NOT NULL
    constraint, the replay, seats and verdict written before it in the transaction are gone."""
    store = Store.open(database)
    try:
        new = record(with_slash_violation(games[3]))
        broken = replace(new.verdict.violations[-1], code=None)  # type: ignore[arg-type]
        bad = replace(new, verdict=replace(new.verdict, violations=(*new.verdict.violations, broken)))
        with pytest.raises(IntegrityError):
            store.save(bad)
        assert store.count() == 0
        with store.connect() as conn:
            for table in ("replays", "replay_seats", "verdicts", "violations"):
                assert conn.execute(text(f"SELECT count(*) FROM {table}")).scalar() == 0, table
        assert store.save(new)[1]  # and the store still works
    finally:
        store.close()


def test_sqlite_pragmas(backend: str, database: str) -> None:
    if backend != "sqlite":
        return  # nothing to check: PostgreSQL has no such settings
    store = Store.open(database)
    try:
        with store.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000
    finally:
        store.close()


def test_unavailable_then_recovers(backend: str, database: str, games: list[pb.GameLog], tmp_path: Path) -> None:
    """SQLite: another process holds the write lock; PostgreSQL: the connection path is cut."""
    new = record(games[4])
    if backend == "sqlite":
        store = Store.open(database, busy_timeout_ms=200)
        locker = create_database_engine(database)
        try:
            with locker.connect() as conn:
                conn.execution_options(**{SQLITE_BEGIN_OPTION: "EXCLUSIVE"})
                conn.exec_driver_sql("SELECT 1")  # BEGIN EXCLUSIVE: the write lock is held
                with pytest.raises(StorageUnavailable, match="locked"):
                    store.save(new)
                conn.rollback()
            assert store.save(new)[1]
        finally:
            locker.dispose()
            store.close()
        return
    require_pg()
    proxy = TcpProxy(5432).start()
    db_name = database.rsplit("/", 1)[1]
    user = database.split("//", 1)[1].split("@", 1)[0]
    store = Store.open(f"postgresql+psycopg://{user}@127.0.0.1:{proxy.port}/{db_name}", connect_timeout_s=2)
    try:
        store.ping()
        proxy.stop()
        with pytest.raises(StorageUnavailable):
            store.save(new)
        with pytest.raises(StorageUnavailable):
            store.list()
        with pytest.raises(StorageUnavailable):  # (a regression run's read, on the driver's own connection)
            store.logs_and_verdict_blobs(["0" * 64])
        proxy.start()  # same port
        assert store.save(new)[1]
        assert store.list().total_count == 1
    finally:
        proxy.stop()
        store.close()


def test_unreachable_database_url_is_unavailable(backend: str, tmp_path: Path) -> None:
    if backend == "sqlite":
        blocker = tmp_path / "not-a-folder"
        blocker.write_text("x")
        url = sqlite_url(blocker / "sub" / "replays.sqlite3")
        with pytest.raises(OSError):
            Store.open(url)
        return
    require_pg()
    store = Store.open("postgresql+psycopg://postgres@127.0.0.1:1/none", connect_timeout_s=1)
    try:
        with pytest.raises(StorageUnavailable):
            store.ping()
    finally:
        store.close()


def test_a_list_page_and_a_look_up_read_no_log_or_replay(backend: str, database: str,
                                                         games: list[pb.GameLog]) -> None:
    """A page of the list and a look-up by hash need only the summaries: the logs and the annotated replays
    (the large columns) stay in the database; a replay asked for by id still comes with them."""
    store = Store.open(database)
    try:
        for i, log in enumerate(games[:3]):
            store.save(record(log, tournament=f"t{i}"))
        statements: list[str] = []

        def seen(conn: object, cursor: object, statement: str, *args: object) -> None:
            statements.append(statement)

        event.listen(store.engine, "before_cursor_execute", seen)
        page = store.list(page_size=2)
        found = store.find(page.replays[0].log_sha256)
        assert found is not None and len(page.replays) == 2
        assert statements and not [s for s in statements if "log_bytes" in s or "replay_blob" in s]
        stored = store.get(page.replays[0].id, include_log=True)
        assert stored.replay_blob and stored.log_bytes
        assert apb.AnnotatedReplay.FromString(stored.replay_blob).log_sha256 == page.replays[0].log_sha256
        event.remove(store.engine, "before_cursor_execute", seen)
    finally:
        store.close()


def page_plan(store: Store, backend: str, filters: ReplayFilter, page_token: str = "") -> tuple[str, str]:
    """The query plan of the statement that reads a page of ``store.list`` (the one ordered by date), as the
    database explains it, and the page's next token. PostgreSQL is told to avoid sorts and sequential scans, so
    that on a test's few rows it shows whether an index can give the order at all."""
    statements: list[tuple[str, Any]] = []

    def seen(conn: object, cursor: object, statement: str, parameters: Any, *args: object) -> None:
        statements.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", seen)
    try:
        page = store.list(filters, page_size=2, page_token=page_token)
    finally:
        event.remove(store.engine, "before_cursor_execute", seen)
    statement, parameters = next(s for s in statements if "ORDER BY" in s[0])
    with store.engine.connect() as conn:
        if backend != "sqlite":
            conn.exec_driver_sql("SET enable_sort = off")
            conn.exec_driver_sql("SET enable_seqscan = off")
        prefix = "EXPLAIN QUERY PLAN " if backend == "sqlite" else "EXPLAIN "
        rows = conn.exec_driver_sql(prefix + statement, parameters).fetchall()
    return "\n".join(str(row[-1]) for row in rows), page.next_page_token


def test_a_list_page_is_read_in_index_order_not_sorted(backend: str, database: str,
                                                       games: list[pb.GameLog]) -> None:
    """A page is newest first, and the store's indexes hold replays in that order (the whole store's, a
    tenant's, a tournament's): the database reads a page off an index instead of sorting every matching replay
    (with 20,000 stored, over 200 ms a page on SQLite before; migration 0004)."""
    store = Store.open(database, clock=Clock())
    try:
        for i, log in enumerate(games[:5]):
            store.save(record(log, tournament=f"t{i % 2}"), tenant="a" if i % 2 else "b")
        for filters in (ReplayFilter(), ReplayFilter(tenant="a"), ReplayFilter(tournament="t0"),
                        ReplayFilter(tournament="t0", tenant="b"), ReplayFilter(has_violations=False),
                        ReplayFilter(has_violations=True, tenant="a")):
            plan, token = page_plan(store, backend, filters)
            assert "TEMP B-TREE" not in plan and "Sort" not in plan, f"{filters}:\n{plan}"
            if token:  # the next page too (the keyset condition)
                plan, _ = page_plan(store, backend, filters, token)
                assert "TEMP B-TREE" not in plan and "Sort" not in plan, f"{filters}, page 2:\n{plan}"
        # A player's replays are looked up once, not again for each replay read (which made a list quadratic).
        plan, _ = page_plan(store, backend, ReplayFilter(player=games[0].header.seats[0].player))
        assert "CORRELATED" not in plan and "SubPlan" not in plan, plan
    finally:
        store.close()


def test_the_writer_stores_what_core_would(backend: str, database: str, games: list[pb.GameLog]) -> None:
    """storage/writer.py writes through the driver: its rows hold exactly the values SQLAlchemy Core's inserts of
    the same record hold (dates, booleans, NULLs, blobs), read back raw on both backends."""
    at = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
    store = Store.open(database, clock=lambda: at)
    try:
        log = with_slash_violation(games[2])
        log.events[-1].source = pb.DECISION_SOURCE_AI  # (its violation is stored with the decision's source)
        new = record(log, tournament="cup", round="2", table="B", submitter="s")
        assert new.verdict.violations and new.seats and new.verdict.stopped_at is None
        assert {x.source for x in new.verdict.violations} == {pb.DECISION_SOURCE_AI}
        ours, _ = store.save(new, tenant="writer")
        core_id = replay_id_for("core", new.log_sha256)
        v, m = new.verdict, new.metadata
        with store.engine.begin() as conn:
            conn.execute(insert(Replay), {
                "id": core_id, "tenant": "core", "log_sha256": new.log_sha256, "submitted_at": at,
                "log_bytes": new.log_bytes, "log_format": new.log_format, "log_size": len(new.log_bytes),
                "event_count": new.event_count, "ruleset": new.ruleset, "mode": new.mode, "seed": str(new.seed),
                "recorder": new.recorder, "player_count": len(new.seats), "tournament": m.tournament,
                "round": m.round, "table_label": m.table, "submitter": m.submitter})
            conn.execute(insert(ReplaySeat), [
                {"replay_id": core_id, "seat": s.seat, "player": s.player, "role": s.role, "general": s.general}
                for s in new.seats])
            verdict_id = conn.execute(insert(Verdict).returning(Verdict.id), {
                "replay_id": core_id, "run": "", "created_at": at, "engine_version": v.engine_version,
                "violation_count": v.violation_count, "violation_codes": " ".join(v.violation_codes),
                "followed": v.followed, "stopped_at": v.stopped_at, "stopped_reason": v.stopped_reason,
                "finished": v.finished, "side": v.side, "winners": " ".join(map(str, v.winners)),
                "result_reason": v.result_reason, "annotation_count": v.annotation_count,
                "scores": " ".join(map(str, v.scores)), "replay_blob": v.replay_blob}).scalar_one()
            conn.execute(insert(ViolationRow), [
                {"verdict_id": verdict_id, "event_index": x.event_index, "derived": x.derived, "code": x.code,
                 "seat": x.seat, "card": x.card, "message": x.message, "rule": x.rule, "source": x.source}
                for x in v.violations])

        def raw_rows(sql: str, replay_id: str) -> list[tuple[Any, ...]]:
            with store.engine.connect() as conn:
                cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
                cursor.execute(sql.replace("?", "%s") if backend != "sqlite" else sql, (replay_id,))
                return [tuple(row) for row in cursor.fetchall()]

        tables = {
            "replays": "SELECT log_sha256, submitted_at, log_bytes, log_format, log_size, event_count, ruleset, mode, "
                       "seed, recorder, player_count, tournament, round, table_label, submitter FROM replays "
                       "WHERE id = ?",
            "replay_seats": "SELECT seat, player, role, general FROM replay_seats WHERE replay_id = ? ORDER BY seat",
            "verdicts": "SELECT run, created_at, engine_version, violation_count, violation_codes, followed, "
                        "stopped_at, stopped_reason, finished, side, winners, result_reason, annotation_count, "
                        "scores, replay_blob FROM verdicts WHERE replay_id = ?",
            "violations": "SELECT x.event_index, x.derived, x.code, x.seat, x.card, x.message, x.rule, x.source "
                          "FROM violations x JOIN verdicts v ON v.id = x.verdict_id WHERE v.replay_id = ? "
                          "ORDER BY x.id"}
        for table, sql in tables.items():
            mine, theirs = raw_rows(sql, ours.id), raw_rows(sql, core_id)
            assert mine and mine == theirs, table
    finally:
        store.close()


def test_a_runs_verdicts_saved_together_hold_the_rows_each_saved_alone_holds(backend: str, database: str,
                                                                            games: list[pb.GameLog]) -> None:
    """A regression run saves a chunk's verdicts together (on PostgreSQL in two batched statements, their ids
    read back in order): every verdict and violation row is what saving each verdict on its own writes, each
    violation under its own verdict, verdicts without violations among them."""
    at = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
    store = Store.open(database, clock=lambda: at)
    try:
        records = [record(with_slash_violation(log) if i % 3 else log) for i, log in enumerate(games[:6])]
        ids = [store.save(new)[0].id for new in records]
        facts = [(replay_id, new.verdict) for replay_id, new in zip(ids, records, strict=True)]
        assert sorted(len(f.violations) > 0 for _, f in facts) == [False, False, True, True, True, True]
        store.save_verdicts("together", facts)
        for replay_id, verdict in facts:
            store.save_verdicts("alone", [(replay_id, verdict)])

        def rows(run: str) -> list[tuple[Any, ...]]:
            with store.engine.connect() as conn:
                cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
                cursor.execute(
                    "SELECT v.replay_id, v.engine_version, v.violation_count, v.violation_codes, v.annotation_count, "
                    "v.replay_blob, x.event_index, x.derived, x.code, x.seat, x.card, x.message, x.rule, x.source "
                    "FROM verdicts v LEFT JOIN violations x ON x.verdict_id = v.id "
                    f"WHERE v.run = '{run}' ORDER BY v.replay_id, x.id")
                return [tuple(row) for row in cursor.fetchall()]

        together = rows("together")
        assert together == rows("alone")
        assert len({row[0] for row in together}) == 6
        assert sum(row[8] is not None for row in together) == sum(len(f.violations) for _, f in facts)
    finally:
        store.close()


def test_a_runs_input_is_read_in_one_query_as_stored(backend: str, database: str, games: list[pb.GameLog]) -> None:
    """A regression run's chunk: each replay's log and its verdict of the run compared against, as stored (on
    PostgreSQL read in binary format), a replay without a verdict of that run and an id not stored left out."""
    store = Store.open(database)
    try:
        records = [record(with_slash_violation(log) if i % 2 else log) for i, log in enumerate(games[:4])]
        ids = [store.save(new)[0].id for new in records]
        store.save_verdicts("named", [(ids[1], records[1].verdict)])
        logs, blobs = store.logs_and_verdict_blobs([*ids, "f" * 64])
        assert logs == {i: new.log_bytes for i, new in zip(ids, records, strict=True)}
        assert blobs == {i: new.verdict.replay_blob for i, new in zip(ids, records, strict=True)}
        assert all(type(b) is bytes for b in [*logs.values(), *blobs.values()])
        logs, blobs = store.logs_and_verdict_blobs(ids, "named")
        assert set(logs) == set(ids) and blobs == {ids[1]: records[1].verdict.replay_blob}
        assert store.logs_and_verdict_blobs([]) == ({}, {})
    finally:
        store.close()
