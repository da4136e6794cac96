"""A server's SQLite store checkpoints its write-ahead log from a thread of its own (storage.database.
WalCheckpointer), never inside a save that a client waits for; any other store (the CLI's, a regression
run's) keeps SQLite's own checkpoints."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from service.server import open_store
from service.work import VerifyJob, run_job
from sgsverify.v1 import game_log_pb2 as pb
from storage import migrate
from storage.database import WalCheckpointer, sqlite_file, sqlite_url
from storage.store import Store, SubmissionMetadata
from tests.service.conftest import BACKENDS, fresh_database, server_config


def save_all(store: Store, games: list[pb.GameLog], tag: str) -> None:
    for i, log in enumerate(games):
        copy = pb.GameLog()
        copy.CopyFrom(log)
        copy.header.recorder = f"{tag}-{i}"
        store.save(run_job(VerifyJob(copy.SerializeToString(deterministic=True), SubmissionMetadata(), 100_000,
                                     canonical=True)))


def autocheckpoint(store: Store) -> int:
    with store.connect() as conn:
        return int(conn.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one())


def test_a_servers_sqlite_store_leaves_checkpoints_to_its_thread(tmp_path: Path, games: list[pb.GameLog]) -> None:
    store = open_store(server_config(sqlite_url(tmp_path / "s.db"), tmp_path))
    try:
        checkpointer = store.checkpointer
        assert checkpointer is not None and checkpointer.running
        assert autocheckpoint(store) == 0  # no save checkpoints
        save_all(store, games, "bg")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the thread's next passes copy the saves' frames back
            last = checkpointer.last
            if last is not None and last[1] > 0 and last[1] == last[2] and not checkpointer.failure:
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"the WAL was never checkpointed: {checkpointer.last} {checkpointer.failure!r}")
        assert store.count() == len(games)
    finally:
        store.close()
    assert not checkpointer.running  # stopped with the store, after a last pass
    assert checkpointer.failure == ""


def test_a_checkpoint_copies_every_frame_a_save_left(tmp_path: Path, games: list[pb.GameLog]) -> None:
    """The pass itself, without waiting for the thread: the frames the saves wrote are all checkpointed."""
    store = Store.open(sqlite_url(tmp_path / "s.db"), checkpoint_in_background=True)
    try:
        migrate.upgrade(store.engine)
        assert store.checkpointer is not None
        store.checkpointer.stop()  # (its thread out of the way: this test's passes are its own)
        store.checkpointer.checkpoint()
        save_all(store, games[:3], "fg")
        busy, log, done = store.checkpointer.checkpoint()
        assert busy == 0 and log > 0 and done == log
    finally:
        store.close()


def test_other_stores_keep_sqlites_own_checkpoints(tmp_path: Path) -> None:
    store = Store.open(sqlite_url(tmp_path / "s.db"))
    try:
        assert store.checkpointer is None
        assert autocheckpoint(store) == 1000
    finally:
        store.close()
    memory = Store.open("sqlite:///:memory:", checkpoint_in_background=True)
    try:
        assert memory.checkpointer is None  # no file, no WAL
    finally:
        memory.close()


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "sqlite"])
def test_postgresql_has_no_checkpointer(backend: str, tmp_path: Path) -> None:
    url, db = fresh_database(backend, tmp_path)
    try:
        store = Store.open(url, checkpoint_in_background=True)
        assert store.checkpointer is None
        store.close()
    finally:
        if db is not None:
            db.drop()


def test_a_pass_on_a_database_gone_is_recorded_not_raised(tmp_path: Path) -> None:
    """The file moved away while the server runs: the store says it is unavailable on its own calls; the
    checkpointer's pass fails quietly (it never creates the file) and says why."""
    checkpointer = WalCheckpointer(tmp_path / "never-there.db", interval=3600)
    checkpointer._pass()
    assert checkpointer.passes == 1 and "unable to open" in checkpointer.failure
    assert not (tmp_path / "never-there.db").exists()


def test_sqlite_file_of_urls(tmp_path: Path) -> None:
    assert sqlite_file(sqlite_url(tmp_path / "a.db")) == tmp_path / "a.db"
    assert sqlite_file("sqlite:///:memory:") is None
    assert sqlite_file("sqlite://") is None
    assert sqlite_file("postgresql://u@h/db") is None
