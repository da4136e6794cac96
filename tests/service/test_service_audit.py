"""Regression tests for the audit's service findings, on SQLite and PostgreSQL: a binary log that begins
like JSON (D1); input that puts a lone surrogate into an error message (D2); values the store cannot hold —
NUL characters, texts over their columns' sizes, numbers over 32 bits, huge player names, timestamps out
of range, a deeply nested page token (D3-D8) — each refused at the edge with INVALID_ARGUMENT naming the
field and the limit, the same on both backends and never with an SQL statement; server reflection v1
(D17); worker processes that end with a killed server (D11); `regress --server --list-runs` (D19: it lists
the runs, verifies nothing); a busy port and `list`'s player names (D20); health checking and reflection
given bytes that are no request (found by fuzzing, docs/fuzzing.md)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2 as rpb

from clients.selfplay import play_game
from service.server import BackgroundServer
from service.servicer import LIVE_IN_FLIGHT
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from storage.store import MAX_STORED_INT
from tests.test_audit_offline import LONE_SURROGATE, json_looking_binary_log

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def stub(service: BackgroundServer) -> Iterator[spb_grpc.VerifierServiceStub]:
    options = [("grpc.max_send_message_length", 64 << 20), ("grpc.max_receive_message_length", 64 << 20)]
    with grpc.insecure_channel(service.address, options=options) as channel:
        yield spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]


def status_of(call: Callable[[], object]) -> tuple[grpc.StatusCode, str]:
    try:
        call()
    except grpc.RpcError as err:
        return err.code(), err.details() or ""
    raise AssertionError("the call succeeded")


def no_sql(details: str) -> None:
    for word in ("SELECT", "INSERT", "[SQL", "sqlalche", "psycopg", "Traceback"):
        assert word not in details, details


def game(seed: int, label: str) -> pb.GameLog:
    log = play_game(seed, 5)
    log.header.recorder = label
    return log


# ---------------------------------------------------------------------------------------- D1, D2

def test_a_binary_log_that_begins_like_json_is_verified(stub: spb_grpc.VerifierServiceStub) -> None:
    data = json_looking_binary_log()
    res = stub.VerifyLog(spb.VerifyLogRequest(encoded_log=data, summary_only=True), timeout=60)
    assert res.created and res.replay.violation_count == 0
    got = stub.GetReplay(spb.GetReplayRequest(id=res.info.id, include_log=True, include_original=True), timeout=30)
    assert got.original == data and got.log == pb.GameLog.FromString(data)


@pytest.mark.parametrize("data", [
    LONE_SURROGATE,
    b'{"header": {"seats": [{"player": "\\udfff"}]}}',
    b'{"header": {"ruleset": 5, "recorder": "' + b"x" * 100_000 + b'"}}',  # an error quoting a huge value
])
def test_an_error_message_that_would_quote_the_input_is_answered(stub: spb_grpc.VerifierServiceStub,
                                                                 data: bytes) -> None:
    code, details = status_of(lambda: stub.VerifyLog(spb.VerifyLogRequest(encoded_log=data), timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("VerifyLogRequest.encoded_log: not a GameLog in JSON")
    assert len(details) <= 1000


def test_submit_of_a_lone_surrogate_ends(service: BackgroundServer, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(LONE_SURROGATE)
    out = subprocess.run([sys.executable, "-m", "clients.cli", "submit", "--server", service.address, str(bad)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2
    assert "not submitted: INVALID_ARGUMENT" in out.stderr and "Traceback" not in out.stderr


# ---------------------------------------------------------------------------------------- D3-D8: logs

def _nul_player(log: pb.GameLog) -> None:
    log.header.seats[0].player = "a\0b"


def _huge_player(log: pb.GameLog) -> None:
    log.header.seats[1].player = "x" * 5_000_000


def _long_general(log: pb.GameLog) -> None:
    log.header.seats[2].general = "g" * 65


def _long_ruleset(log: pb.GameLog) -> None:
    log.header.ruleset = "identity/" + "1" * 60


def _long_recorder(log: pb.GameLog) -> None:
    log.header.recorder = "r" * 201


def _many_seats(log: pb.GameLog) -> None:
    for _ in range(40):
        log.header.seats.add(player="extra")


def _big_card(log: pb.GameLog) -> None:
    for event in log.events:
        if event.WhichOneof("kind") == "use_card":
            event.use_card.card.id = MAX_STORED_INT + 1
            return
    raise AssertionError("no use_card in the game")


def _big_seat(log: pb.GameLog) -> None:
    for event in log.events:
        if event.WhichOneof("kind") == "use_card":
            event.use_card.seat = 2**32 - 1
            return
    raise AssertionError("no use_card in the game")


LOG_CASES = {
    "nul-player": (_nul_player, "header.seats[0].player contains a NUL character"),
    "huge-player": (_huge_player, "header.seats[1].player is 5000000 characters; the limit is 200"),
    "long-general": (_long_general, "header.seats[2].general is 65 characters; the limit is 64"),
    "long-ruleset": (_long_ruleset, "header.ruleset is 69 characters; the limit is 64"),
    "long-recorder": (_long_recorder, "header.recorder is 201 characters; the limit is 200"),
    "many-seats": (_many_seats, "header.seats has 45 seats; the limit is 32"),
    "big-card": (_big_card, f"is {MAX_STORED_INT + 1}; the largest number this service stores is {MAX_STORED_INT}"),
}


@pytest.mark.parametrize("case", list(LOG_CASES))
@pytest.mark.parametrize("how", ["log", "encoded_log", "upload", "live"])
def test_a_log_the_store_cannot_hold_is_invalid_on_every_backend(stub: spb_grpc.VerifierServiceStub, case: str,
                                                                 how: str) -> None:
    mutate, expected = LOG_CASES[case]
    label = f"limits-{case}-{how}"
    log = game(7, label)
    mutate(log)
    if how == "log":
        call: Callable[[], object] = lambda: stub.VerifyLog(spb.VerifyLogRequest(log=log), timeout=60)  # noqa: E731
    elif how == "encoded_log":
        call = lambda: stub.VerifyLog(spb.VerifyLogRequest(encoded_log=log.SerializeToString()),  # noqa: E731
                                      timeout=60)
    elif how == "upload":
        call = lambda: stub.UploadLog(iter([spb.UploadLogRequest(header=log.header),  # noqa: E731
                                            spb.UploadLogRequest(events=log.events)]), timeout=60)
    else:
        call = lambda: list(stub.VerifyLive(iter([spb.VerifyLiveRequest(header=log.header),  # noqa: E731
                                                  spb.VerifyLiveRequest(events=log.events)]), timeout=60))
    code, details = status_of(call)
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert expected in details
    no_sql(details)
    listed = stub.ListReplays(spb.ListReplaysRequest(page_size=1000), timeout=30).replays
    assert not [r for r in listed if r.recorder == label]  # nothing of it was stored


def test_a_seat_out_of_range_is_a_verdict_on_every_backend(stub: spb_grpc.VerifierServiceStub) -> None:
    """A number over 32 bits that the violations do not carry is stored like any other (the log is bytes)."""
    log = game(7, "big-seat")
    _big_seat(log)
    res = stub.VerifyLog(spb.VerifyLogRequest(log=log, summary_only=True), timeout=60)
    assert res.created and res.replay.violation_count > 0
    assert all(v.seat <= MAX_STORED_INT for a in stub.GetReplay(spb.GetReplayRequest(id=res.info.id), timeout=30)
               .replay.annotations for v in a.violations)


def test_nul_in_metadata_is_invalid(stub: spb_grpc.VerifierServiceStub) -> None:
    req = spb.VerifyLogRequest(log=game(8, "nul-meta"), metadata=spb.SubmissionMetadata(tournament="a\0b"))
    code, details = status_of(lambda: stub.VerifyLog(req, timeout=60))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "metadata.tournament contains a NUL character" in details


# ---------------------------------------------------------------------------------------- D3-D8: queries

def _token(doc: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode()


def _timestamp(field: str, seconds: int = 0, nanos: int = 0) -> spb.ListReplaysRequest:
    req = spb.ListReplaysRequest()
    getattr(req, field).seconds = seconds
    getattr(req, field).nanos = nanos
    return req


LIST_CASES = {
    "nul-tournament": (spb.ListReplaysRequest(tournament="a\0"), "ListReplaysRequest.tournament contains a NUL"),
    "nul-round": (spb.ListReplaysRequest(round="\0"), "ListReplaysRequest.round contains a NUL"),
    "nul-table": (spb.ListReplaysRequest(table="\0"), "ListReplaysRequest.table contains a NUL"),
    "nul-submitter": (spb.ListReplaysRequest(submitter="\0"), "ListReplaysRequest.submitter contains a NUL"),
    "nul-player": (spb.ListReplaysRequest(player="a\0"), "ListReplaysRequest.player contains a NUL"),
    "nul-code": (spb.ListReplaysRequest(violation_code="a\0"), "ListReplaysRequest.violation_code contains a NUL"),
    "long-player": (spb.ListReplaysRequest(player="p" * 201), "ListReplaysRequest.player is 201 characters"),
    "long-code": (spb.ListReplaysRequest(violation_code="C" * 65), "violation_code is 65 characters; the limit is 64"),
    "after-huge": (_timestamp("submitted_after", 2**62), "ListReplaysRequest.submitted_after.seconds is 461"),
    "before-negative": (_timestamp("submitted_before", -2**62), "ListReplaysRequest.submitted_before.seconds is -"),
    "after-nanos": (_timestamp("submitted_after", 0, -5), "ListReplaysRequest.submitted_after.nanos is -5"),
    "before-nanos": (_timestamp("submitted_before", 0, 10**9), "submitted_before.nanos is 1000000000"),
    "deep-token": (spb.ListReplaysRequest(page_token=base64.urlsafe_b64encode(b"[" * 100_000).decode()),
                   "page_token is 133336 characters"),
    "deep-short-token": (spb.ListReplaysRequest(page_token=base64.urlsafe_b64encode(b"[" * 700).decode()),
                         "is not one this service issued"),
    "nul-token": (spb.ListReplaysRequest(page_token=_token({"t": "2020-01-01T00:00:00", "id": "a" * 63 + "\0"})),
                  "its id is not a replay id"),
    "year-1-token": (spb.ListReplaysRequest(page_token=_token({"t": "0001-01-01T00:00:00", "id": 5})),
                     "its id is not a replay id"),
}


@pytest.mark.parametrize("case", list(LIST_CASES))
def test_a_list_filter_that_cannot_match_is_invalid(stub: spb_grpc.VerifierServiceStub, case: str) -> None:
    req, expected = LIST_CASES[case]
    code, details = status_of(lambda: stub.ListReplays(req, timeout=30))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert expected in details
    no_sql(details)


def test_the_extreme_timestamps_are_valid(stub: spb_grpc.VerifierServiceStub) -> None:
    req = _timestamp("submitted_after", -62_135_596_800)
    req.submitted_before.seconds = 253_402_300_799
    req.submitted_before.nanos = 999_999_999
    assert stub.ListReplays(req, timeout=30).total_count >= 0


@pytest.mark.parametrize(("req", "expected"), [
    (spb.RegressRequest(filter=_timestamp("submitted_after", 2**62)), "RegressRequest.filter.submitted_after"),
    (spb.RegressRequest(filter=spb.ListReplaysRequest(player="\0")), "RegressRequest.filter.player contains a NUL"),
    (spb.RegressRequest(run="a\0"), "RegressRequest.run contains a NUL"),
    (spb.RegressRequest(run="r" * 101), "RegressRequest.run is 101 characters; the limit is 100"),
    (spb.RegressRequest(run="x", against="\0"), "RegressRequest.against contains a NUL"),
])
def test_a_regress_request_that_cannot_match_is_invalid(stub: spb_grpc.VerifierServiceStub,
                                                        req: spb.RegressRequest, expected: str) -> None:
    code, details = status_of(lambda: list(stub.Regress(req, timeout=60)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert expected in details
    no_sql(details)


@pytest.mark.parametrize(("call", "expected"), [
    (lambda s: s.DeleteReplay(spb.DeleteReplayRequest(id="a" * 63 + "\0"), timeout=30), "is not a full replay id"),
    (lambda s: s.DeleteReplay(spb.DeleteReplayRequest(id="g" * 64), timeout=30), "is not a full replay id"),
    (lambda s: s.GetReplay(spb.GetReplayRequest(id="a" * 64, run="\0"), timeout=30),
     "GetReplayRequest.run contains a NUL"),
    (lambda s: s.GetReplay(spb.GetReplayRequest(id="a" * 64, run="r" * 101), timeout=30),
     "GetReplayRequest.run is 101 characters"),
], ids=["delete-nul", "delete-not-hex", "get-run-nul", "get-run-long"])
def test_ids_and_run_names(stub: spb_grpc.VerifierServiceStub,
                           call: Callable[[spb_grpc.VerifierServiceStub], object], expected: str) -> None:
    code, details = status_of(lambda: call(stub))
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert expected in details
    no_sql(details)


def test_a_live_game_over_the_limits_stops_at_its_batch(stub: spb_grpc.VerifierServiceStub) -> None:
    log = game(9, "live-big-card")
    _big_card(log)
    got: list[spb.VerifyLiveResponse] = []

    def call() -> None:
        requests = [spb.VerifyLiveRequest(header=log.header)]
        requests += [spb.VerifyLiveRequest(events=log.events[i:i + 8]) for i in range(0, len(log.events), 8)]
        for res in stub.VerifyLive(iter(requests), timeout=60):
            got.append(res)

    code, details = status_of(call)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith("VerifyLiveRequest message ") and "card id" in details
    assert got and not any(r.HasField("finished") for r in got)
    listed = stub.ListReplays(spb.ListReplaysRequest(page_size=1000), timeout=30).replays
    assert not [r for r in listed if r.recorder == "live-big-card"]


def test_a_live_batch_refused_after_many_sent_ahead_answers_every_batch_before_it(
        stub: spb_grpc.VerifierServiceStub) -> None:
    """The server sends batches to the worker ahead of their answers (LIVE_IN_FLIGHT): a batch that cannot be
    taken, far into the stream, still ends the call only after one answer for each message before it, in order."""
    log = game(11, "live-late-big-card")
    late = [i for i, ev in enumerate(log.events) if ev.WhichOneof("kind") == "use_card"][-1]
    log.events[late].use_card.card.id = MAX_STORED_INT + 1
    size = 4
    bad_message = 1 + late // size  # (message 0 carries the header)
    assert bad_message > 2 * LIVE_IN_FLIGHT, "the bad batch must come well after the batches sent ahead"
    got: list[spb.VerifyLiveResponse] = []

    def call() -> None:
        requests = [spb.VerifyLiveRequest(header=log.header)]
        requests += [spb.VerifyLiveRequest(events=log.events[i:i + size]) for i in range(0, len(log.events), size)]
        for res in stub.VerifyLive(iter(requests), timeout=60):
            got.append(res)

    code, details = status_of(call)
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.startswith(f"VerifyLiveRequest message {bad_message}:") and "card id" in details
    assert [r.events_received for r in got] == [min(m * size, len(log.events)) for m in range(bad_message)]
    assert not any(r.HasField("finished") for r in got)


def test_a_huge_upload_is_refused_before_it_fills_the_memory(stub: spb_grpc.VerifierServiceStub) -> None:
    """The events of an upload together are bound like a whole log (64 MiB), not only their count."""
    log = game(10, "huge-upload")
    fat = pb.Event()
    fat.use_card.seat = 0
    fat.use_card.targets.extend([1] * 4_000_000)  # ~4 MB in one event

    def requests() -> Iterator[spb.UploadLogRequest]:
        yield spb.UploadLogRequest(header=log.header)
        for _ in range(20):
            yield spb.UploadLogRequest(events=[fat])

    code, details = status_of(lambda: stub.UploadLog(requests(), timeout=120))
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED, details
    # the log's own cap (64 MiB of events), or before it the server's budget of request bytes held
    assert "bytes together" in details or "--max-buffered-bytes" in details


# ---------------------------------------------------------------------------------------- D17

def test_server_reflection_v1_and_v1alpha(service: BackgroundServer) -> None:
    """Generic clients (grpcurl, Postman) ask grpc.reflection.v1 first; older ones v1alpha."""
    with grpc.insecure_channel(service.address) as channel:
        for version in ("v1", "v1alpha"):
            call = channel.stream_stream(f"/grpc.reflection.{version}.ServerReflection/ServerReflectionInfo",
                                         request_serializer=rpb.ServerReflectionRequest.SerializeToString,
                                         response_deserializer=rpb.ServerReflectionResponse.FromString)
            answers = list(call(iter([
                rpb.ServerReflectionRequest(list_services=""),
                rpb.ServerReflectionRequest(file_containing_symbol="sgsverify.v1.VerifierService"),
                rpb.ServerReflectionRequest(file_containing_symbol=f"grpc.reflection.{version}.ServerReflection"),
            ]), timeout=30))
            names = {s.name for s in answers[0].list_services_response.service}
            assert {"sgsverify.v1.VerifierService", "grpc.health.v1.Health",
                    "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"} <= names
            for answer in answers[1:]:
                assert answer.HasField("file_descriptor_response"), answer
            files = [descriptor_pb2.FileDescriptorProto.FromString(raw)
                     for raw in answers[1].file_descriptor_response.file_descriptor_proto]
            assert any(s.name == "VerifierService" for f in files for s in f.service)


# ---------------------------------------------------------------------------------------- D11, D20

def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        with open(task / "children") as f:
            found |= {int(p) for p in f.read().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_workers_end_with_a_killed_server(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "clients.cli", "serve", "--address", "127.0.0.1:0", "--workers",
                             "2", "--data-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=ROOT, start_new_session=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if "limits:" in line:
                break
        workers = {p for p in _children(proc.pid) if "spawn_main" in Path(f"/proc/{p}/cmdline").read_text()}
        assert len(workers) == 2
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        deadline = time.monotonic() + 60  # a liveness bound, not a timing assertion: they end within ~1 s
        while any(_alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [p for p in workers if _alive(p)]
    finally:
        with contextlib.suppress(ProcessLookupError):  # whatever is left of the server's process group
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def test_a_busy_port_says_so(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "clients.cli", "serve", "--address", f"127.0.0.1:{port}",
                              "--workers", "1", "--data-dir", str(tmp_path)], capture_output=True, text=True,
                             cwd=ROOT, timeout=120)
    assert out.returncode == 2
    assert out.stderr.strip() == (f"sgs-verify: cannot listen on 127.0.0.1:{port}: the port is in use (is another "
                                  "server running there?); choose another with --address")


# ---------------------------------------------------------------------------------------- D19, D20 (CLI)

def test_regress_list_runs_on_a_server_lists_and_runs_nothing(service: BackgroundServer,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """It used to ignore --list-runs and re-verify every stored replay on the server (then it was refused);
    now the server lists its runs (ListRuns) and nothing is verified."""
    import re

    from clients import cli
    from clients.client import VerifierClient

    with VerifierClient(service.address) as client:
        before = client.list_runs()
        code = cli.main(["regress", "--server", service.address, "--list-runs"])
        out, err = capsys.readouterr()
        assert client.list_runs() == before  # no run made or resumed
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == len(before)  # no regression run, no summary
    assert all(re.match(r"\S+: \d+ replay\(s\), \d{4}-\d\d-\d\d \d\d:\d\d–\d\d:\d\d UTC, ", line) for line in lines)


def test_list_shows_every_player_whole(stub: spb_grpc.VerifierServiceStub, service: BackgroundServer,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    from clients import cli

    log = game(12, "long-names")
    for i, seat in enumerate(log.header.seats):
        seat.player = f"a-player-with-a-rather-long-name-{i}"
    stub.VerifyLog(spb.VerifyLogRequest(log=log, summary_only=True,
                                        metadata=spb.SubmissionMetadata(tournament="long-names")), timeout=60)
    assert cli.main(["list", "--server", service.address, "--tournament", "long-names"]) == 0
    out = capsys.readouterr().out
    row = out.splitlines()[1]  # (under the header row)
    assert row.endswith(",".join(s.player for s in log.header.seats))


# ---------------------------------------------------------------------------------------- found by fuzzing

@pytest.mark.parametrize("method", ["/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch",
                                    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                                    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"])
def test_health_and_reflection_refuse_bytes_that_are_no_request(service: BackgroundServer, method: str) -> None:
    """grpcio's own registration answered UNKNOWN ("Unexpected DecodeError")."""
    junk = b"\xff\xff\xff"  # a field tag that never ends
    with grpc.insecure_channel(service.address) as channel:
        try:
            if method.endswith("/Check"):
                channel.unary_unary(method)(junk, timeout=30)
            elif method.endswith("/Watch"):
                next(iter(channel.unary_stream(method)(junk, timeout=30)))
            else:
                list(channel.stream_stream(method)(iter([junk]), timeout=30))
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err
            assert "is not a valid" in (err.details() or "")
        else:
            raise AssertionError("the junk was answered")
        # and a valid request still works
        if method.endswith("/Check"):
            from grpc_health.v1 import health_pb2, health_pb2_grpc

            res = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
            assert res.status == health_pb2.HealthCheckResponse.SERVING
