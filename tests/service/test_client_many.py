"""VerifierClient.verify_many / upload_many: many logs with several calls going at once on one channel, each log's
outcome in the order given, a bad log not stopping the others, and the number of calls in flight held to."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from clients.client import InvalidRequest, LimitExceeded, Metadata, Submission, VerifierClient, retrying
from clients.selfplay import play_game
from service.config import Limits
from service.guard import retry_trailers
from service.server import BackgroundServer
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from tests.service.conftest import fresh_database, server_config
from tests.service.test_service_rpc import second_slash_log


@pytest.fixture
def client(service: BackgroundServer) -> Iterator[VerifierClient]:
    with VerifierClient(service.address, timeout=60) as c:
        yield c


def unique_games(label: str, count: int) -> list[pb.GameLog]:
    logs = []
    for seed in range(count):
        log = play_game(40 + seed, 5)
        log.header.recorder = f"{label} {seed}"
        logs.append(log)
    return logs


def test_verify_many_answers_each_log_in_order_as_verify_does(client: VerifierClient, tmp_path: Path) -> None:
    logs = unique_games("verify_many", 5)
    cheat = second_slash_log()
    cheat.header.recorder = "verify_many cheat"
    missing = tmp_path / "missing.pb"
    on_disk = tmp_path / "game.pb"
    on_disk.write_bytes(logs[4].SerializeToString())
    items: list[pb.GameLog | bytes | Path] = [logs[0], logs[1].SerializeToString(), b"\xff not a log", cheat,
                                              missing, logs[2], logs[3], on_disk]
    outcomes = list(client.verify_many(items, Metadata(tournament="t-many"), in_flight=3))
    assert len(outcomes) == len(items)
    assert isinstance(outcomes[2], InvalidRequest)  # the bad log is its own outcome; the ones after it go on
    assert isinstance(outcomes[4], FileNotFoundError)
    stored = [o for o in outcomes if isinstance(o, Submission)]
    assert len(stored) == 6 and all(s.created for s in stored)
    assert outcomes[3].replay.violation_codes == ["SLASH_LIMIT"]  # type: ignore[union-attr]
    assert all(s.info.metadata.tournament == "t-many" for s in stored)
    assert all(len(s.replay.annotations) == 0 for s in stored)  # summary only, unless asked
    # each outcome is its own log's: the same replay as verify gives for it, in the same place
    for item, outcome in zip([logs[0], logs[1], cheat, logs[2], logs[3], logs[4]], stored, strict=True):
        again = client.verify(item)
        assert (again.id, again.created) == (outcome.id, False)
        assert again.info.event_count == outcome.info.event_count == len(item.events)


def test_upload_many_stores_what_upload_would(client: VerifierClient) -> None:
    logs = unique_games("upload_many", 4)
    outcomes = list(client.upload_many(logs, batch_size=50, in_flight=2, summary_only=False))
    assert all(isinstance(o, Submission) and o.created for o in outcomes)
    for log, outcome in zip(logs, outcomes, strict=True):
        assert isinstance(outcome, Submission)
        assert len(outcome.replay.annotations) >= len(log.events)
        whole = client.verify(log)
        assert (whole.id, whole.created) == (outcome.id, False)
        assert whole.replay == outcome.replay
    # the same logs again: each is found stored, none is stored twice
    assert [o.created for o in client.upload_many(logs) if isinstance(o, Submission)] == [False] * 4


def test_bad_arguments_are_refused_before_any_call(client: VerifierClient) -> None:
    with pytest.raises(ValueError, match="in_flight"):
        client.verify_many([], in_flight=0)
    with pytest.raises(ValueError, match="batch size"):
        client.upload_many([], batch_size=0)
    with pytest.raises(ValueError, match="max_retries"):
        client.upload_many([], max_retries=-1)


# ------------------------------------------------------------------ calls in flight, on a server that counts them

VerifyLogHandler = Callable[[spb.VerifyLogRequest, grpc.ServicerContext], spb.VerifyLogResponse]


def verify_log_server(verify: VerifyLogHandler) -> tuple[grpc.Server, int]:
    """A gRPC server (started) with only VerifyLog, answered by ``verify``; and its port."""
    server = grpc.server(futures.ThreadPoolExecutor(16))
    handler = grpc.unary_unary_rpc_method_handler(verify, request_deserializer=spb.VerifyLogRequest.FromString,
                                                  response_serializer=spb.VerifyLogResponse.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "sgsverify.v1.VerifierService", {"VerifyLog": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port

class CountingServer:
    """A VerifyLog server whose calls each wait until ``hold`` calls are going at once (or 2 s pass), so a client
    that keeps fewer going is seen; records the most it saw and the calls cancelled."""

    def __init__(self, hold: int) -> None:
        self.hold = hold
        self.active = 0
        self.most = 0
        self.cancelled = 0
        self.lock = threading.Condition()
        self.server, self.port = verify_log_server(self.verify)

    def verify(self, request: spb.VerifyLogRequest, context: grpc.ServicerContext) -> spb.VerifyLogResponse:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
            self.lock.notify_all()
            self.lock.wait_for(lambda: self.active >= self.hold, timeout=2.0)
        if request.log.header.recorder == "slow":  # (held until the client goes away)
            deadline = time.monotonic() + 10
            while context.is_active() and time.monotonic() < deadline:
                time.sleep(0.01)
            if not context.is_active():
                with self.lock:
                    self.cancelled += 1
        with self.lock:
            self.active -= 1
        return spb.VerifyLogResponse(info=spb.ReplayInfo(id=request.log.header.recorder), created=True)


@pytest.mark.parametrize("in_flight", [1, 3])
def test_the_calls_in_flight_are_as_many_as_asked(in_flight: int) -> None:
    counting = CountingServer(hold=in_flight)
    try:
        logs = [pb.GameLog(header=pb.GameHeader(recorder=f"log {i}")) for i in range(7)]
        with VerifierClient(f"127.0.0.1:{counting.port}", timeout=30) as client:
            outcomes = list(client.verify_many(logs, in_flight=in_flight))
        assert [o.id for o in outcomes if isinstance(o, Submission)] == [f"log {i}" for i in range(7)]
        assert counting.most == in_flight
    finally:
        counting.server.stop(None)


def test_stopping_early_cancels_the_calls_still_going() -> None:
    counting = CountingServer(hold=1)
    try:
        logs = [pb.GameLog(header=pb.GameHeader(recorder=name)) for name in ("fast", "slow", "slow", "slow")]
        with VerifierClient(f"127.0.0.1:{counting.port}", timeout=30) as client:
            outcomes = client.verify_many(logs, in_flight=3)
            first = next(outcomes)
            assert isinstance(first, Submission) and first.id == "fast"
            # Both "slow" calls were started with "fast", but on a busy machine one may not have reached the
            # server yet: a call cancelled before its handler runs is never seen there, so wait until both are.
            with counting.lock:
                assert counting.lock.wait_for(lambda: counting.active == 2, timeout=10)
            outcomes.close()  # ("slow" x2 are going; the fourth was never started)
            deadline = time.monotonic() + 10
            while counting.cancelled < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        assert counting.cancelled == 2 and counting.most <= 3
    finally:
        counting.server.stop(None)


# ------------------------------------------------------------------ a server that refuses for a while

class RefusingServer:
    """A VerifyLog server that refuses calls as RESOURCE_EXHAUSTED, the first ``refusals`` of them (-1: every
    one), with a retry hint of ``hint`` seconds (None: no hint), and answers the rest; counts the calls."""

    def __init__(self, refusals: int, hint: float | None = 0.01) -> None:
        self.refusals = refusals
        self.hint = hint
        self.calls = 0
        self.lock = threading.Lock()
        self.server, self.port = verify_log_server(self.verify)

    def verify(self, request: spb.VerifyLogRequest, context: grpc.ServicerContext) -> spb.VerifyLogResponse:
        with self.lock:
            self.calls += 1
            refuse = self.refusals < 0 or self.calls <= self.refusals
        if refuse:
            message = "too many requests: retry later"
            context.set_trailing_metadata(retry_trailers(grpc.StatusCode.RESOURCE_EXHAUSTED, message, self.hint))
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message)
        return spb.VerifyLogResponse(info=spb.ReplayInfo(id=request.log.header.recorder), created=True)


def logs_named(count: int) -> list[pb.GameLog]:
    return [pb.GameLog(header=pb.GameHeader(recorder=f"log {i}")) for i in range(count)]


def test_a_log_refused_for_a_while_is_sent_again_when_the_server_says() -> None:
    refusing = RefusingServer(refusals=5)
    try:
        with VerifierClient(f"127.0.0.1:{refusing.port}", timeout=30) as client:
            outcomes = list(client.verify_many(logs_named(6), in_flight=3))
        assert [o.id for o in outcomes if isinstance(o, Submission)] == [f"log {i}" for i in range(6)]
        assert refusing.calls == 6 + 5
    finally:
        refusing.server.stop(None)


@pytest.mark.parametrize(("hint", "retries", "calls"), [(None, 8, 2), (0.01, 3, 2 * (3 + 1))],
                         ids=["no hint: not sent again", "past the retries"])
def test_a_refusal_without_a_hint_or_past_the_retries_is_the_outcome(hint: float | None, retries: int,
                                                                     calls: int) -> None:
    refusing = RefusingServer(refusals=-1, hint=hint)
    try:
        with VerifierClient(f"127.0.0.1:{refusing.port}", timeout=30) as client:
            outcomes = list(client.verify_many(logs_named(2), in_flight=2, max_retries=retries))
        assert [type(o) for o in outcomes] == [LimitExceeded, LimitExceeded]
        assert refusing.calls == calls
    finally:
        refusing.server.stop(None)


def test_retrying_one_call() -> None:
    refusing = RefusingServer(refusals=2)
    try:
        with VerifierClient(f"127.0.0.1:{refusing.port}", timeout=30) as client:
            sub = retrying(lambda: client.verify(logs_named(1)[0]))
            assert sub.id == "log 0" and refusing.calls == 3
            refusing.refusals = -1  # (from now on, every call)
            with pytest.raises(LimitExceeded):
                retrying(lambda: client.verify(logs_named(1)[0]), max_retries=1)
            assert refusing.calls == 3 + 2
    finally:
        refusing.server.stop(None)


def test_many_logs_past_a_servers_rate_limit_are_all_stored(tmp_path: Path) -> None:
    """The service's own rate limit (2 requests a second per tenant here, 2 at once): every log is stored, the
    client waiting as the server asks."""
    url, _ = fresh_database("sqlite", tmp_path)
    server = BackgroundServer(server_config(url, tmp_path, limits=Limits(rate_limit=2.0, rate_burst=2))).start()
    try:
        logs = unique_games("rate limited", 5)
        with VerifierClient(server.address, timeout=60) as client:
            outcomes = list(client.verify_many(logs, in_flight=4))
        assert all(isinstance(o, Submission) and o.created for o in outcomes), outcomes
    finally:
        server.stop()
