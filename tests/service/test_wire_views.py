"""Re-tagging runs of fields through the `repeated bytes` views (sgsverify/internal/wire_views.proto): the same
bytes as building the target message from parsed messages would give."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from clients.client import Metadata, VerifierClient
from clients.selfplay import play_game
from service.work import canonical_bytes, events_encoding, retagged
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from verifier import Verifier


@pytest.fixture(scope="module")
def game() -> pb.GameLog:
    return play_game(77, 5)


def test_events_encoding_is_the_canonical_gamelog_of_the_requests_events(game: pb.GameLog) -> None:
    events = list(game.events)
    for start in range(0, len(events), 50):
        batch = events[start:start + 50]
        expected = canonical_bytes(pb.GameLog(events=batch))
        # The first message of a stream also carries the header and metadata: they are left out.
        live = spb.VerifyLiveRequest(header=game.header, events=batch, discard=True,
                                     metadata=spb.SubmissionMetadata(tournament="t"))
        upload = spb.UploadLogRequest(header=game.header, events=batch, summary_only=True)
        assert events_encoding(live) == expected
        assert events_encoding(upload) == expected
        assert pb.GameLog.FromString(events_encoding(live)).events == batch


def test_events_encoding_of_no_events_is_empty(game: pb.GameLog) -> None:
    assert events_encoding(spb.VerifyLiveRequest(header=game.header)) == b""


def test_retagged_moves_the_annotations_of_a_replay_into_a_live_response(game: pb.GameLog) -> None:
    verifier = Verifier(game.header)
    verifier.follow(game.events)
    wire = bytes(verifier.wire)  # AnnotatedReplay.annotations (field 3), as the verifier writes them
    annotations = apb.AnnotatedReplay.FromString(wire).annotations
    assert len(annotations) > 100
    response = spb.VerifyLiveResponse.FromString(retagged(memoryview(wire)[0:], 3, 1))
    assert list(response.annotations) == list(annotations)
    assert retagged(b"", 3, 1) == b""


def test_retagged_leaves_out_fields_of_other_numbers() -> None:
    one = pb.Event(turn_start=pb.TurnStart(seat=1, turn=2)).SerializeToString()
    two = pb.Event(phase_start=pb.PhaseStart(seat=0, phase=pb.PHASE_DRAW)).SerializeToString()
    # (GameLog: a header, field 1, before its events, field 2)
    data = pb.GameLog(header=pb.GameHeader(seed=5), events=[pb.Event.FromString(one), pb.Event.FromString(two)])
    moved = spb.UploadLogRequest.FromString(retagged(data.SerializeToString(), 2, 3))
    assert not moved.HasField("header")
    assert [e.SerializeToString() for e in moved.events] == [one, two]


def test_the_client_upload_sends_the_log_in_batches_of_its_own_encoding(game: pb.GameLog) -> None:
    """VerifierClient.upload's messages, read back: the header and metadata once, every event in order."""
    sent: list[bytes] = []

    def upload_bytes(requests: Iterable[bytes], **_: object) -> spb.VerifyLogResponse:
        sent.extend(requests)
        return spb.VerifyLogResponse()

    client = VerifierClient("127.0.0.1:1")  # (never connects: the call is the recorder above)
    try:
        client._upload_bytes = upload_bytes
        client.upload(game, Metadata(tournament="t"), batch_size=40)
    finally:
        client.close()
    messages = [spb.UploadLogRequest.FromString(m) for m in sent]
    assert len(messages) == -(-len(game.events) // 40)
    assert messages[0].header == game.header and messages[0].metadata.tournament == "t"
    assert all(not m.HasField("header") and not m.HasField("metadata") for m in messages[1:])
    assert all(len(m.events) == 40 for m in messages[:-1])
    assert [e for m in messages for e in m.events] == list(game.events)


def test_the_client_live_batches_are_the_requests_encoding(game: pb.GameLog) -> None:
    from clients.client import _events_request

    batch = list(game.events)[:64]
    assert _events_request(batch) == spb.VerifyLiveRequest(events=batch).SerializeToString()
    assert _events_request([]) == b""
    with pytest.raises(TypeError, match="a batch holds events"):
        _events_request([batch[0], pb.GameHeader()])  # type: ignore[list-item]
