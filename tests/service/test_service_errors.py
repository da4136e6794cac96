"""What the service refuses, and how: malformed input (INVALID_ARGUMENT, saying what and
where), over-limit input (RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED), missing replays
(NOT_FOUND), and a store that is down (UNAVAILABLE, then recovery)."""

from __future__ import annotations

import gc
import os
import queue
import signal
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

from clients.client import (
    DeadlineExceeded,
    InvalidRequest,
    LimitExceeded,
    ListFilter,
    Metadata,
    NotFound,
    ServiceUnavailable,
    VerifierClient,
)
from clients.selfplay import play_game
from service.config import Limits
from service.server import BackgroundServer
from service.servicer import SERVICE_NAME
from service.workers import WorkerPool
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from storage.database import SQLITE_BEGIN_OPTION, create_database_engine
from tests.service.conftest import PgDatabase, TcpProxy, fresh_database, require_pg, server_config


@pytest.fixture(scope="module")
def sqlite_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    folder = tmp_path_factory.mktemp("errors")
    url, _ = fresh_database("sqlite", folder)
    with BackgroundServer(server_config(url, folder)) as server:
        yield server


@pytest.fixture
def client(sqlite_service: BackgroundServer) -> Iterator[VerifierClient]:
    with VerifierClient(sqlite_service.address, timeout=30) as c:
        yield c


@pytest.fixture(scope="module")
def stub(sqlite_service: BackgroundServer) -> Iterator[spb_grpc.VerifierServiceStub]:
    with grpc.insecure_channel(sqlite_service.address) as channel:
        yield spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]


def status_of(call: object) -> tuple[grpc.StatusCode, str]:
    try:
        call()  # type: ignore[operator]
    except grpc.RpcError as err:
        return err.code(), err.details()
    raise AssertionError("the call succeeded")


def game(seed: int = 3) -> pb.GameLog:
    return play_game(seed, 5)


# ---------------------------------------------------------------------------------------- malformed

def test_verify_without_a_log(stub: spb_grpc.VerifierServiceStub) -> None:
    code, details = status_of(lambda: stub.VerifyLog(spb.VerifyLogRequest(), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "carries no log" in details


def test_verify_log_without_header(stub: spb_grpc.VerifierServiceStub) -> None:
    req = spb.VerifyLogRequest()
    req.log.events.add().end_play_phase.seat = 0
    code, details = status_of(lambda: stub.VerifyLog(req, timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "VerifyLogRequest.log has no header" in details


@pytest.mark.parametrize(("data", "expected"), [
    (b"", "encoded_log is empty"),
    (b"\xff\xff\xff garbage", "encoded_log: not a binary GameLog"),
    (b'{"header": {"seed": "x"}}', "encoded_log: not a GameLog in JSON"),
    (b'{"header": {}, "events": [{"noSuchEvent": {}}]}', "noSuchEvent"),
    (b"\xc3\x28{", "encoded_log: not a binary GameLog"),
])
def test_verify_unreadable_bytes(client: VerifierClient, data: bytes, expected: str) -> None:
    with pytest.raises(InvalidRequest, match=expected):
        client.verify(data)


def test_bytes_that_are_no_request_at_all(sqlite_service: BackgroundServer) -> None:
    with grpc.insecure_channel(sqlite_service.address) as channel:
        raw = channel.unary_unary("/sgsverify.v1.VerifierService/VerifyLog")
        code, details = status_of(lambda: raw(b"\x0a\xff\xff\xff\xff", timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "not a valid VerifyLogRequest" in details


def test_metadata_too_long(client: VerifierClient) -> None:
    with pytest.raises(InvalidRequest, match=r"metadata.tournament is 201 characters; the limit is 200"):
        client.verify(game(), Metadata(tournament="x" * 201))


def test_upload_stream_shapes(stub: spb_grpc.VerifierServiceStub) -> None:
    log = game()
    code, details = status_of(lambda: stub.UploadLog(iter([]), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "stream is empty" in details
    code, details = status_of(lambda: stub.UploadLog(iter([spb.UploadLogRequest(events=log.events[:5])]),
                                                     timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "message 0 has no header" in details
    twice = [spb.UploadLogRequest(header=log.header), spb.UploadLogRequest(events=log.events[:5]),
             spb.UploadLogRequest(header=log.header)]
    code, details = status_of(lambda: stub.UploadLog(iter(twice), timeout=10))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "message 2 carries a header" in details


def test_live_stream_shapes(stub: spb_grpc.VerifierServiceStub) -> None:
    log = game()
    code, details = status_of(lambda: list(stub.VerifyLive(iter([spb.VerifyLiveRequest(events=log.events[:3])]),
                                                           timeout=10)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "message 0 has no header" in details
    msgs = [spb.VerifyLiveRequest(header=log.header), spb.VerifyLiveRequest(metadata=Metadata(tournament="x"))]
    code, details = status_of(lambda: list(stub.VerifyLive(iter(msgs), timeout=10)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "message 1 carries a header or metadata" in details


def test_get_list_delete_refusals(client: VerifierClient) -> None:
    with pytest.raises(InvalidRequest, match="not a hex SHA-256"):
        client.get("nothex!")
    with pytest.raises(InvalidRequest, match="at least 8"):
        client.get("abc")
    with pytest.raises(NotFound, match="no stored replay"):
        client.get("f" * 64)
    with pytest.raises(InvalidRequest, match="not a full replay id"):
        client.delete("abcdef12")
    with pytest.raises(NotFound):
        client.delete("e" * 64)
    with pytest.raises(InvalidRequest, match="page_token"):
        client.list_page(page_token="bogus!")


# ---------------------------------------------------------------------------------------- limits

@pytest.fixture(scope="module")
def limited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    """A server with small limits and a deadline no verification can meet."""
    folder = tmp_path_factory.mktemp("limits")
    url, _ = fresh_database("sqlite", folder)
    limits = Limits(max_events_per_game=200, max_message_bytes=32 * 1024, max_stream_messages=5,
                    deadline_seconds=1e-6)
    with BackgroundServer(server_config(url, folder, limits=limits)) as server:
        yield server


def long_game() -> pb.GameLog:
    log = game(5)
    assert len(log.events) > 200
    return log


def test_too_many_events(limited: BackgroundServer) -> None:
    log = long_game()
    with VerifierClient(limited.address, timeout=30) as c:
        # (counted on the wire before the log is parsed, and only up to the limit: issue 27, item 4)
        with pytest.raises(LimitExceeded, match=r"has more than 200 events .* at most 200 per game"):
            c.verify(log)
        with pytest.raises(LimitExceeded, match="at most 200 per game"):
            c.upload(log, batch_size=100)
        with pytest.raises(LimitExceeded, match="at most 200 per game"):
            list(c.live(log.header, log.events, batch_size=150))


def test_message_too_large(limited: BackgroundServer) -> None:
    big = pb.GameLog(header=long_game().header)
    while big.ByteSize() < 40 * 1024:
        big.events.extend(long_game().events)
    with VerifierClient(limited.address, timeout=30) as c, pytest.raises(LimitExceeded, match="larger than max"):
        c.verify(big)


def test_stream_too_long(limited: BackgroundServer) -> None:
    log = long_game()
    with VerifierClient(limited.address, timeout=30) as c:
        with pytest.raises(LimitExceeded, match="more than 5 messages"):
            c.upload(log, batch_size=10)
        with pytest.raises(LimitExceeded, match="more than 5 messages"):
            list(c.live(log.header, log.events, batch_size=10))


def test_verification_deadline(limited: BackgroundServer) -> None:
    log = game(6)
    del log.events[150:]
    # (as bytes: a GameLog is also looked up in the store meanwhile, and while that look-up holds the server's
    # interpreter, a worker fast enough could answer before the loop saw the deadline pass)
    with VerifierClient(limited.address, timeout=30) as c, pytest.raises(DeadlineExceeded, match="--deadline"):
        c.verify(log.SerializeToString())


def test_callers_own_deadline(client: VerifierClient) -> None:
    with pytest.raises(DeadlineExceeded):
        client.verify(game(7), timeout=0.0005)


# ---------------------------------------------------------------------------------------- storage down

def test_sqlite_locked_is_unavailable_then_recovers(tmp_path: Path) -> None:
    url, _ = fresh_database("sqlite", tmp_path)
    config = replace(server_config(url, tmp_path), busy_timeout_ms=200)
    log = game(8)
    locker = create_database_engine(url)
    try:
        with BackgroundServer(config) as server, VerifierClient(server.address, timeout=30) as c:
            with locker.connect() as conn:
                conn.execution_options(**{SQLITE_BEGIN_OPTION: "EXCLUSIVE"})
                conn.exec_driver_sql("SELECT 1")  # another process holds the write lock
                with pytest.raises(ServiceUnavailable, match="locked by another writer") as raised:
                    c.verify(log)
                assert "sqlite" not in str(raised.value) and "/" not in raised.value.details  # no URL, no path
                conn.rollback()
            assert c.verify(log).created
            assert len(list(c.list())) == 1
    finally:
        locker.dispose()


@pytest.mark.postgres
def test_postgres_down_is_unavailable_then_recovers(tmp_path: Path) -> None:
    require_pg()
    db = PgDatabase()
    proxy = TcpProxy(5432).start()
    try:
        fresh = db.url()
        from storage import migrate

        engine = create_database_engine(fresh)
        migrate.upgrade(engine)
        engine.dispose()
        log = game(9)
        with BackgroundServer(server_config(db.url(proxy.port), tmp_path)) as server, \
                VerifierClient(server.address, timeout=30) as c:
            c.verify(game(10))
            proxy.stop()
            with pytest.raises(ServiceUnavailable, match="unavailable"):
                c.verify(log)
            with pytest.raises(ServiceUnavailable):
                c.list_page(ListFilter())
            wait_for_health(c, "NOT_SERVING")  # the failed calls made the server check its store at once
            proxy.start()
            wait_for_health(c, "SERVING")
            assert c.verify(log).created
            assert len(list(c.list())) == 2
    finally:
        proxy.stop()
        db.drop()


def wait_for_health(c: VerifierClient, status: str, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while (now := c.health()) != status:
        assert time.monotonic() < deadline, f"health stayed {now}, not {status}"
        time.sleep(0.1)
    assert c.health(SERVICE_NAME) == status


# ---------------------------------------------------------------------------------------- workers

def kill_worker(pool: WorkerPool, index: int) -> None:
    """Kill a worker process as the OOM killer would (SIGKILL), and wait for it to be gone."""
    process = pool.workers[index].executor.process
    assert process.pid is not None and process.pid > 0
    os.kill(process.pid, signal.SIGKILL)
    process.join(10)


def test_a_dead_worker_is_replaced(tmp_path: Path) -> None:
    """A worker killed while idle: a whole log is retried on its replacement (the work is pure);
    a live game that was on it fails with UNAVAILABLE, and the next one works."""
    url, _ = fresh_database("sqlite", tmp_path)
    with BackgroundServer(server_config(url, tmp_path)) as server, \
            VerifierClient(server.address, timeout=30) as c:
        pool = server.server.pool
        assert pool is not None

        first = pool.workers[0].executor
        kill_worker(pool, 0)
        assert c.verify(game(11)).created
        assert pool.workers[0].executor is not first
        log = game(12)
        outbox: queue.Queue[list[pb.Event] | None] = queue.Queue()

        def batches() -> Iterator[list[pb.Event]]:
            while (batch := outbox.get()) is not None:
                yield batch

        updates = c.live(log.header, batches())
        next(updates)  # the game is started on a worker, and waits for events
        live_worker = next(i for i, w in enumerate(pool.workers) if w.games)
        kill_worker(pool, live_worker)
        outbox.put(list(log.events[:50]))
        outbox.put(None)
        with pytest.raises(ServiceUnavailable, match="worker process died"):
            list(updates)
        again = list(c.live(log.header, log.events))
        assert again[-1].finished is not None and again[-1].finished.stored


def test_a_worker_killed_with_live_batches_in_flight_fails_the_game_cleanly(tmp_path: Path) -> None:
    """A live game's batches run ahead of their answers (up to LIVE_IN_FLIGHT): when its worker dies with
    several on their way, the call ends UNAVAILABLE, no answer's error is left for asyncio to report, and the
    next game works."""
    url, _ = fresh_database("sqlite", tmp_path)
    with BackgroundServer(server_config(url, tmp_path)) as server, \
            VerifierClient(server.address, timeout=30) as c:
        pool = server.server.pool
        assert pool is not None
        reported: list[str] = []
        loop = server.loop
        loop.call_soon_threadsafe(loop.set_exception_handler, lambda _, ctx: reported.append(str(ctx.get("message"))))
        log = game(13)
        updates = c.live(log.header, log.events, batch_size=4)
        next(updates)  # the header's answer: the game is on a worker, and its batches are on their way
        live_worker = next(i for i, w in enumerate(pool.workers) if w.games)
        kill_worker(pool, live_worker)
        with pytest.raises(ServiceUnavailable, match="worker process died"):
            list(updates)
        again = list(c.live(log.header, log.events, batch_size=4))
        assert again[-1].finished is not None and again[-1].finished.stored
        loop.call_soon_threadsafe(gc.collect)  # (an unretrieved error is reported when its future is freed)
        time.sleep(0.5)
        assert reported == []
