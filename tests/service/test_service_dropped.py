"""A client that drops its connection mid-stream: nothing half-written is stored, and the
service goes on serving (on SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import grpc
import pytest

from clients.client import ListFilter, VerifierClient
from clients.selfplay import play_game
from service.server import BackgroundServer
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc


def chunks_then_hang(first: object, rest: Sequence[object], sent: threading.Event, release: threading.Event
                     ) -> Iterator[object]:
    """Send some batches, then stall like a client whose connection is about to drop."""
    yield first
    yield from rest
    sent.set()
    release.wait(20)


@pytest.fixture
def client(service: BackgroundServer) -> Iterator[VerifierClient]:
    with VerifierClient(service.address, timeout=30) as c:
        yield c


def assert_nothing_stored_and_still_serving(client: VerifierClient, tournament: str) -> None:
    assert list(client.list(ListFilter(tournament=tournament))) == []
    log = play_game(3, 4)
    log.header.recorder = f"after {tournament}"
    done = client.verify(log)
    assert done.info.violation_count == 0


@pytest.mark.parametrize("rpc", ["UploadLog", "VerifyLive"])
def test_dropped_stream_stores_nothing(service: BackgroundServer, client: VerifierClient, rpc: str) -> None:
    log = play_game(41, 6)
    tournament = f"dropped-{rpc}-{service.backend}"  # type: ignore[attr-defined]
    metadata = spb.SubmissionMetadata(tournament=tournament)
    events = list(log.events)
    request_type = spb.UploadLogRequest if rpc == "UploadLog" else spb.VerifyLiveRequest
    first = request_type(header=log.header, metadata=metadata, events=events[:100])
    rest = [request_type(events=events[100:200])]
    sent, release = threading.Event(), threading.Event()
    with grpc.insecure_channel(service.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        requests = chunks_then_hang(first, rest, sent, release)
        if rpc == "UploadLog":
            call = stub.UploadLog.future(requests, timeout=30)
            assert sent.wait(10)
        else:
            call = stub.VerifyLive(requests, timeout=30)
            assert next(call).events_received > 0  # the server was judging the game
            assert sent.wait(10)
        call.cancel()
        release.set()
    assert_nothing_stored_and_still_serving(client, tournament)
