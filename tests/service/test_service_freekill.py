"""FreeKill records through the service (ForeignLog), on SQLite and PostgreSQL: a transcript in one
message or in chunks, a client replay, the same game from both formats stored once per format but
judged alike, and every way a foreign record is refused (unknown engine, empty, too large, mixed
with a header, garbage) with INVALID_ARGUMENT or RESOURCE_EXHAUSTED and nothing stored."""

from __future__ import annotations

import gzip
import json
import lzma
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from clients.cli import main
from clients.client import Metadata, VerifierClient
from importers.freekill import import_freekill
from importers.freekill.fkrep import fkrep_from_transcript
from service.config import Limits
from service.server import BackgroundServer
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from tests.service.conftest import BACKENDS, serving

DATA = Path(__file__).resolve().parents[1] / "data" / "freekill" / "transcripts"
GAME = "fk_p5_r5.jsonl"  # SmartAI, 5 players; 制衡 with no card 7 times (SKILL_COST)


def transcript(game: str = GAME) -> bytes:
    return lzma.decompress((DATA / f"{game}.xz").read_bytes())


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    folder = tmp_path_factory.mktemp("freekill-service")
    with serving(request.param, folder, limits=Limits(max_record_bytes=4 * 1024 * 1024)) as srv:
        yield srv


def stub(server: BackgroundServer) -> spb_grpc.VerifierServiceStub:
    return spb_grpc.VerifierServiceStub(grpc.insecure_channel(server.address))  # type: ignore[no-untyped-call]


def test_a_transcript_in_one_message_is_imported_verified_and_stored(server: BackgroundServer) -> None:
    res = stub(server).VerifyLog(spb.VerifyLogRequest(
        foreign_log=spb.ForeignLog(engine="freekill", data=transcript(), name=GAME),
        metadata=spb.SubmissionMetadata(tournament="freekill-test")))
    assert res.created and res.info.violation_codes == ["SKILL_COST"] and res.info.violation_count == 7
    expected = import_freekill(transcript(), GAME).log
    with VerifierClient(server.address) as client:
        stored = client.get(res.info.id, include_log=True)
    assert stored.log == expected  # the converted log is what is stored
    assert stored.log.header.origin.source == GAME


def test_chunks_and_client_replays(server: BackgroundServer) -> None:
    game = "fk_rand_p4_35.jsonl"
    data = transcript(game)
    with VerifierClient(server.address) as client:
        sub = client.submit_record("freekill", data, game, Metadata(tournament="chunks"), chunk_size=4096)
        assert sub.created and sub.info.violation_count == 0 and sub.info.event_count == 85
        again = client.submit_record("freekill", data, game, chunk_size=1 << 20)
        assert not again.created and again.info.id == sub.info.id  # idempotent: the same converted log
        lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
        replay = fkrep_from_transcript(lines, 1)
        rep = client.submit_record("freekill", replay, "seat.fk.rep")
        # Another input format is another log (its origin differs), with the same verdict and digests.
        assert rep.created and rep.info.id != sub.info.id
        assert rep.replay.final_digest == sub.replay.final_digest
        assert rep.info.violation_count == 0


def test_the_command_line_submits_freekill_records(server: BackgroundServer, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "fk_rand_p8_23.jsonl.xz"
    path.write_bytes((DATA / "fk_rand_p8_23.jsonl.xz").read_bytes())
    assert main(["submit", "--from", "freekill", "--server", server.address, str(path)]) == 0
    assert "186 events, 0 violation(s)" in capsys.readouterr().out


@pytest.mark.parametrize(("request_", "code", "says"), [
    (spb.VerifyLogRequest(foreign_log=spb.ForeignLog(engine="qsanguosha", data=b"x")),
     grpc.StatusCode.INVALID_ARGUMENT, "engine 'qsanguosha' has no importer"),
    (spb.VerifyLogRequest(foreign_log=spb.ForeignLog(engine="freekill")),
     grpc.StatusCode.INVALID_ARGUMENT, "the record is empty"),
    (spb.VerifyLogRequest(foreign_log=spb.ForeignLog(engine="freekill", data=b"{garbage\n")),
     grpc.StatusCode.INVALID_ARGUMENT, "cannot import the freekill record: not a FreeKill transcript: line 1"),
    (spb.VerifyLogRequest(foreign_log=spb.ForeignLog(engine="freekill", data=b"x" * (4 * 1024 * 1024 + 1))),
     grpc.StatusCode.RESOURCE_EXHAUSTED, "over 4194304 bytes"),
    # 20 KB packed, 5 MB unpacked: the server's --max-record-bytes bounds the record unpacked too (issue 27.3)
    (spb.VerifyLogRequest(foreign_log=spb.ForeignLog(engine="freekill", data=gzip.compress(
        b'{"seq": 1, "kind": "meta", "players": 4}\n' + b'{"seq": 2, "kind": "log"}\n' * 200_000))),
     grpc.StatusCode.INVALID_ARGUMENT, "cannot import the freekill record: the input is over 4194304 bytes unpacked"),
])
def test_bad_foreign_records_are_refused(server: BackgroundServer, request_: spb.VerifyLogRequest,
                                         code: grpc.StatusCode, says: str) -> None:
    with pytest.raises(grpc.RpcError) as info:
        stub(server).VerifyLog(request_)
    assert info.value.code() == code and says in (info.value.details() or "")


def test_an_upload_is_a_record_or_a_log_never_both(server: BackgroundServer) -> None:
    log = import_freekill(transcript("fk_rand_p4_35.jsonl"), "x").log
    mixed = [spb.UploadLogRequest(foreign=spb.ForeignLog(engine="freekill", data=b"{"), header=log.header)]
    late = [spb.UploadLogRequest(header=log.header), spb.UploadLogRequest(foreign=spb.ForeignLog(data=b"{"))]
    events = [spb.UploadLogRequest(foreign=spb.ForeignLog(engine="freekill", data=b"{")),
              spb.UploadLogRequest(events=log.events[:3])]
    too_big = [spb.UploadLogRequest(foreign=spb.ForeignLog(engine="freekill", data=b"x" * 3_000_000)),
               spb.UploadLogRequest(foreign=spb.ForeignLog(data=b"x" * 3_000_000))]
    for messages, code in ((mixed, grpc.StatusCode.INVALID_ARGUMENT), (late, grpc.StatusCode.INVALID_ARGUMENT),
                           (events, grpc.StatusCode.INVALID_ARGUMENT), (too_big, grpc.StatusCode.RESOURCE_EXHAUSTED)):
        with pytest.raises(grpc.RpcError) as info:
            stub(server).UploadLog(iter(messages))
        assert info.value.code() == code, info.value.details()


def test_a_client_database_is_submitted_recording_by_recording(server: BackgroundServer, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The server takes one record per submission: `submit` splits FreeKill's client database into its
    recordings (a bad row is reported, the others stored); the server itself refuses a database of more
    than one recording, saying where to take it."""
    import sqlite3

    lines = [json.loads(line) for line in transcript("fk_rand_p4_35.jsonl").decode().splitlines() if line.strip()]
    recordings = [fkrep_from_transcript(lines, 2).hex(), "zz", fkrep_from_transcript(lines, 3, container="json").hex()]
    db = tmp_path / "client.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE myGameRecordings (id INTEGER PRIMARY KEY, recording TEXT)")
    con.executemany("INSERT INTO myGameRecordings (recording) VALUES (?)", [(r,) for r in recordings])
    con.commit()
    con.close()
    assert main(["submit", "--from", "freekill", "--server", server.address, str(db)]) == 2
    captured = capsys.readouterr()
    assert f"{db} [recording 1]: " in captured.out and f"{db} [recording 3]: " in captured.out
    assert f"{db} [recording 2]: not submitted: recording 2 of the database: it is not a .fk.rep as hex" \
        in captured.err
    assert "submitted 2 of 3 record(s) of 1 file(s)" in captured.out
    with pytest.raises(grpc.RpcError) as info:
        stub(server).VerifyLog(spb.VerifyLogRequest(foreign_log=spb.ForeignLog(engine="freekill",
                                                                               data=db.read_bytes())))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "FreeKill's client database with 3 recordings: one record is taken here" in (info.value.details() or "")
