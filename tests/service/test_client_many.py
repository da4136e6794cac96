"""VerifierClient.verify_many / upload_many: many logs with several calls going at once on one channel, each log's
outcome in the order given, a bad log not stopping the others, and the number of calls in flight held to."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path

import grpc
import pytest

from clients.client import InvalidRequest, Metadata, Submission, VerifierClient
from clients.selfplay import play_game
from service.server import BackgroundServer
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
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


# ------------------------------------------------------------------ calls in flight, on a server that counts them

class CountingServer:
    """A VerifyLog server whose calls each wait until ``hold`` calls are going at once (or 2 s pass), so a client
    that keeps fewer going is seen; records the most it saw and the calls cancelled."""

    def __init__(self, hold: int) -> None:
        self.hold = hold
        self.active = 0
        self.most = 0
        self.cancelled = 0
        self.lock = threading.Condition()
        self.server = grpc.server(futures.ThreadPoolExecutor(16))
        handler = grpc.unary_unary_rpc_method_handler(self.verify, request_deserializer=spb.VerifyLogRequest.FromString,
                                                      response_serializer=spb.VerifyLogResponse.SerializeToString)
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "sgsverify.v1.VerifierService", {"VerifyLog": handler}),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

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
            outcomes.close()  # ("slow" x2 are going; the fourth was never started)
            deadline = time.monotonic() + 10
            while counting.cancelled < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
        assert counting.cancelled == 2 and counting.most <= 3
    finally:
        counting.server.stop(None)
