"""A FreeKill room's tap lines through the service, on SQLite and PostgreSQL: FreeKill's own verdict on each client
reply (the tap's checks, made inside the server) kept beside this engine's where it replays the room, and alone
where it does not (a room of standard_ex generals and cards): stored, listed and filtered, shown, never re-verified
as ours (docs/freekill-bridge.md#two-engines).

The two rooms are real: FreeKill's core 88a912f1 headless with the tap (tests/freekill_live/host.py), FreeKill's AI
on every seat but a few cheating client replies: tap_checked_std (standard generals: a second 杀, a card not held,
桃 at full HP, a 杀 at two players) and tap_checked_ext (standard_ex + shzl generals and 木牛流马: a card not held,
an empty discard, a card from the draw pile)."""

from __future__ import annotations

import lzma
import re
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest

from clients.cli import main
from clients.client import ListFilter, Metadata, VerifierClient
from service.server import BackgroundServer
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from tests.service.conftest import BACKENDS, serving

DATA = Path(__file__).resolve().parents[1] / "data" / "freekill"
STD = "tap_checked_std.log.xz"
EXT = "tap_checked_ext.log.xz"


def tap(name: str) -> bytes:
    return lzma.decompress((DATA / name).read_bytes())


@pytest.fixture(scope="module", params=BACKENDS)
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    folder = tmp_path_factory.mktemp("two-engines")
    with serving(request.param, folder, http_address="127.0.0.1:0") as srv:
        yield srv


def submit(server: BackgroundServer, data: bytes, name: str, tournament: str = "two-engines") -> spb.VerifyLogResponse:
    stub = spb_grpc.VerifierServiceStub(grpc.insecure_channel(server.address))  # type: ignore[no-untyped-call]
    res: spb.VerifyLogResponse = stub.VerifyLog(spb.VerifyLogRequest(
        foreign_log=spb.ForeignLog(engine="freekill", data=data, name=name),
        metadata=spb.SubmissionMetadata(tournament=tournament)))
    return res


def test_a_room_both_judge_keeps_both_verdicts_and_they_agree(server: BackgroundServer) -> None:
    res = submit(server, tap(STD), STD)
    info, replay = res.info, res.replay
    assert info.judged_by == "engine" and replay.followed and not replay.not_replayed
    assert sorted(info.violation_codes) == ["CARD_NOT_OWNED", "INVALID_TARGET", "PEACH_FULL_HP", "SLASH_LIMIT"]
    assert replay.server_judge.startswith("FreeKill")
    refused = [c for c in replay.server_checks if c.verdict == apb.SERVER_VERDICT_REFUSED]
    assert [c.code for c in refused] == ["FK_NOT_SELECTABLE", "FK_NOT_OFFERED", "FK_NOT_SELECTABLE",
                                         "FK_NOT_SELECTABLE"]
    # Each refusal is at the event our engine flagged, on the same seat, from the client.
    flagged = {a.index: a for a in replay.annotations if a.violations and not a.derived}
    for check in refused:
        assert check.HasField("event") and check.event in flagged, check
        assert flagged[check.event].source == pb.DECISION_SOURCE_CLIENT == check.source
    cov = replay.coverage
    assert (cov.client_replies, cov.judged_by_both, cov.judged_by_neither) == (5, 5, 0)
    assert list(replay.disagreements) == []
    assert replay.violation_count == 4  # the server's refusals are beside ours, not added to them


def test_a_room_our_engine_cannot_replay_is_stored_with_freekills_verdicts(server: BackgroundServer) -> None:
    data = tap(EXT)
    res = submit(server, data, EXT)
    info, replay = res.info, res.replay
    assert res.created and info.judged_by == "server"
    assert "card id 161" in replay.not_replayed and not replay.followed and not replay.annotations
    assert info.violation_count == 3 and list(info.violation_codes) == ["FK_NOT_FEASIBLE", "FK_NOT_OFFERED"]
    assert [s.general for s in info.seats] == ["sunce", "xuhuang", "xiahouyuan", "ex__liubei", "luji"]
    assert info.result.finished and list(info.result.winners) == [1, 4]
    assert replay.coverage.judged_by_server_only == 3
    with VerifierClient(server.address) as client:
        got = client.get(info.id, include_log=True, include_original=True)
        # (kept: the room's tap lines, without the server's other lines)
        assert not got.log.events and got.original == b"".join(
            line for line in data.splitlines(keepends=True) if b"[I] SGSV1 " in line)
        again = client.submit_record("freekill", data, EXT, Metadata(tournament="two-engines"))
        assert not again.created and again.info.id == info.id  # the same room is stored once
        ours = client.list(ListFilter(tournament="two-engines", judged_by="server"))
        assert [r.id for r in ours] == [info.id]
        by_code = client.list(ListFilter(tournament="two-engines", violation_code="FK_NOT_FEASIBLE"))
        assert [r.id for r in by_code] == [info.id]
        engine = client.list(ListFilter(tournament="two-engines", judged_by="engine"))
        assert info.id not in [r.id for r in engine]


def test_a_disagreement_is_listed_both_ways(server: BackgroundServer) -> None:
    text = tap(STD).decode()
    # FreeKill's check made to pass the second 杀 (record 220), and to refuse a legal reply (record 190).
    text = re.sub(r'("reply":220,"by":"client","verdict":)"refused","code":"FK_NOT_SELECTABLE"', r'\1"ok","code":""',
                  text)
    text = re.sub(r'("reply":190,"by":"client","verdict":)"ok"', r'\1"refused","code":"FK_NOT_OFFERED"', text)
    sample = server.server.metrics.registry.get_sample_value
    before = sample("sgs_verify_engine_disagreements_total") or 0
    res = submit(server, text.encode(), "disagreeing.log", tournament="disagree")
    assert sample("sgs_verify_engine_disagreements_total") == before + 2  # (the metric counts them)
    found = {d.reply: d for d in res.replay.disagreements}
    assert set(found) == {190, 220}
    assert list(found[220].engine_codes) == ["SLASH_LIMIT"] and found[220].server_verdict == apb.SERVER_VERDICT_OK
    assert list(found[190].engine_codes) == [] and found[190].server_code == "FK_NOT_OFFERED"


@pytest.mark.parametrize(("data", "says"), [
    (b"", "the record is empty"),
    (tap(STD) + tap(EXT), "one room's lines are imported at a time"),
    (re.sub(rb'"verdict":"refused"', b'"verdict":"maybe"', tap(STD), count=1), "a check's verdict is one of"),
    (b"\n".join(line for line in tap(STD).split(b"\n") if b'"seq":300,' not in line), "record 300 is missing"),
])
def test_a_bad_tap_record_is_refused_and_nothing_stored(server: BackgroundServer, data: bytes, says: str) -> None:
    with pytest.raises(grpc.RpcError) as info:
        submit(server, data, "bad.log", tournament="bad-tap")
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and says in (info.value.details() or "")
    with VerifierClient(server.address) as client:
        assert list(client.list(ListFilter(tournament="bad-tap"))) == []


def test_show_and_list_say_who_judged(server: BackgroundServer, capsys: pytest.CaptureFixture[str]) -> None:
    ext = submit(server, tap(EXT), EXT).info.id
    std = submit(server, tap(STD), STD).info.id
    capsys.readouterr()
    assert main(["show", "--server", server.address, ext]) == 0
    out = capsys.readouterr().out
    assert "not replayed by this engine: its record cannot be converted" in out
    assert "record 218: player 3 (seat 0), PlayCard: refused FK_NOT_OFFERED: card 22 is not offered" in out
    assert main(["show", "--server", server.address, std, "--violations"]) == 0
    out = capsys.readouterr().out
    assert "client replies 5: judged by both 5" in out and "DISAGREE" not in out
    assert main(["list", "--server", server.address, "--judged-by", "server", "--tournament", "two-engines"]) == 0
    assert ext[:12] in (listed := capsys.readouterr().out) and std[:12] not in listed
    assert listed.startswith("replay ") and "* not replayed by this engine" in listed  # (a header row, the mark said)
    assert main(["list", "--server", server.address, "--code", "fk_not_feasible", "--tournament", "two-engines"]) == 0
    assert ext[:12] in capsys.readouterr().out  # (FreeKill's codes are codes a list filters on)


def test_a_regression_run_leaves_the_servers_records_alone(server: BackgroundServer) -> None:
    submit(server, tap(EXT), EXT, tournament="regress-two")
    # (another name: the converted log names its file, so this is another replay than the other tests' own)
    std = submit(server, tap(STD), "regress.log", tournament="regress-two").info.id
    with VerifierClient(server.address) as client:
        last = list(client.regress(ListFilter(tournament="regress-two")))[-1]
        assert last.summary.replays == 1 and last.summary.changed == 0  # ours only
        assert client.get(std).info.judged_by == "engine"
        with pytest.raises(Exception, match="no verdict of this engine's to re-verify"):
            list(client.regress(ListFilter(judged_by="server")))


def test_the_viewer_shows_freekills_records_and_its_verdicts(server: BackgroundServer) -> None:
    ext = submit(server, tap(EXT), EXT).info.id
    std = submit(server, tap(STD), STD).info.id
    with httpx.Client(base_url=server.http_url, timeout=60) as client:
        page = client.get(f"/api/replays/{ext}").json()
        assert page["info"]["judged_by"] == "server" and len(page["events"]) == 10158
        refused = [a for a in page["annotations"] if a["violations"]]
        assert [(page["events"][a["index"]]["text"].split()[0], a["violations"][0]["code"]) for a in refused] == \
            [("#218", "FK_NOT_OFFERED"), ("#297", "FK_NOT_FEASIBLE"), ("#426", "FK_NOT_OFFERED")]
        assert page["verdict"]["server"]["coverage"]["server_only"] == 3
        both = client.get(f"/api/replays/{std}").json()
        assert both["info"]["judged_by"] == "engine" and both["verdict"]["server"]["coverage"]["both"] == 5
        assert both["verdict"]["server"]["disagreements"] == []
        listed = client.get("/api/replays", params={"judged_by": "server", "tournament": "two-engines"}).json()
        assert [r["id"] for r in listed["replays"]] == [ext]
        assert client.get("/api/replays", params={"judged_by": "nobody"}).status_code == 400


def test_standings_leave_a_record_this_engine_did_not_replay_unscored(server: BackgroundServer) -> None:
    ext = submit(server, tap(EXT), EXT, tournament="two-engines-standings").info
    std = submit(server, tap(STD), "standings.log", tournament="two-engines-standings").info
    with VerifierClient(server.address) as client:
        # (the room may have been stored by another test first, under its tournament: a replay is stored once)
        games = {g.replay_id: g for t in {ext.metadata.tournament, std.metadata.tournament}
                 for g in client.standings(t).games}
    assert games[ext.id].note == "not replayed by this engine (judged by its server's own rules): not scored"
    assert games[std.id].note == "" and games[std.id].scored
