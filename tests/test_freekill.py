"""Real games from FreeKill (tests/data/freekill/transcripts: 25 server transcripts of FreeKill
88a912f1, SmartAI and random AI, 4 to 10 players, 10 of them with actions FreeKill's server let
through): imported, verified to their exact verdicts, every listed deviation flagged at its event
and nothing else; client replays (.fk.rep) built per seat import to the same game; the command
line; and every way an input can be wrong.

tests/data/freekill/expected.json is made by ``python tools/freekill_report.py
tests/data/freekill/transcripts --deviations tests/data/freekill/deviations.jsonl --expected
tests/data/freekill/expected.json`` (review the diff: a changed verdict on a real game must be
explained by a ruling)."""

from __future__ import annotations

import dataclasses
import importlib.util
import io
import json
import lzma
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from google.protobuf import json_format

from clients.cli import main
from importers.freekill import FKREP, TRANSCRIPT, ImportFailure, import_freekill
from importers.freekill import convert as fkconvert
from importers.freekill.cards import CardTableError, card_table
from importers.freekill.fkrep import fkrep_from_transcript
from importers.freekill.transcript import read_transcript
from sgsverify.v1 import game_log_pb2 as pb
from verifier import load_log, verify

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "freekill"
GAMES = sorted(p.name.removesuffix(".xz") for p in (DATA / "transcripts").glob("*.jsonl.xz"))
EXPECTED: dict[str, dict[str, Any]] = json.loads((DATA / "expected.json").read_text(encoding="utf-8"))


def raw(game: str) -> bytes:
    return lzma.decompress((DATA / "transcripts" / f"{game}.xz").read_bytes())


@cache
def lines(game: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in raw(game).decode("utf-8").splitlines() if line.strip()]


def report_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("freekill_report", ROOT / "tools" / "freekill_report.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["freekill_report"] = module
    spec.loader.exec_module(module)
    return module


def test_the_corpus() -> None:
    """At least 20 games, 10-player ones (FreeKill's house role table) and SmartAI ones among them."""
    assert len(GAMES) >= 20 and sorted(EXPECTED) == GAMES
    assert sum("_p10_" in g for g in GAMES) >= 5
    assert sum(not g.startswith("fk_rand") for g in GAMES) >= 5


@pytest.mark.parametrize("game", GAMES)
def test_each_game_verifies_to_its_exact_verdict(game: str) -> None:
    imported = import_freekill(raw(game), game)
    assert imported.format == TRANSCRIPT
    log = imported.log
    origin = log.header.origin
    assert (origin.engine, origin.engine_version, origin.format, origin.source) == \
        ("freekill", "88a912f1", "freekill-transcript", game)
    replay = verify(log)
    got = {"events": len(log.events), "followed": replay.followed, "finished": replay.result.finished,
           "side": pb.Side.Name(replay.result.side), "winners": list(replay.result.winners),
           "header_notices": [n.code for n in replay.header_notices],
           "violations": [[a.index, v.code] for a in replay.annotations for v in a.violations]}
    assert got == EXPECTED[game]
    assert not replay.header_violations
    # The house role table is declared for FreeKill's 10 players (1-3-5-1), and only there.
    assert got["header_notices"] == (["HOUSE_ROLE_TABLE"] if "_p10_" in game else [])


def test_every_listed_deviation_is_flagged_at_its_event_and_nothing_else(capsys: pytest.CaptureFixture[str]) -> None:
    tool = report_tool()
    code = tool.main([str(DATA / "transcripts"), "--deviations", str(DATA / "deviations.jsonl"), "--json"])
    body = json.loads(capsys.readouterr().out)
    assert code == 0, body
    assert body["imported"] == len(GAMES) and body["missed"] == [] and body["other_violations"] == []
    listed = sum(1 for line in (DATA / "deviations.jsonl").read_text().splitlines() if line.strip())
    assert sum(k["listed"] for k in body["deviations"].values()) == listed > 50
    # Each kind with the codes the rules give it (docs/rules.md; docs/codes.md).
    assert set(body["deviations"]["SKILL_COST"]["flagged_with"]) <= {"SKILL_COST", "INVALID_TARGET+SKILL_COST"}
    assert set(body["deviations"]["EMPTY_TARGET"]["flagged_with"]) == {"INVALID_TARGET"}
    assert set(body["deviations"]["LIULI_DISCARDED_RANGE"]["flagged_with"]) == {"INVALID_TARGET"}


def test_a_game_the_report_cannot_import_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"seq": 1, "kind": "meta", "players": 4}\n', encoding="utf-8")
    assert report_tool().main([str(bad), "--deviations", str(DATA / "deviations.jsonl")]) == 2
    assert "broken.jsonl: cannot import: the record" in capsys.readouterr().out


@pytest.mark.parametrize("game", ["fk_p5_r5.jsonl", "fk_rand_p10_23.jsonl", "fk_rand_p7_9.jsonl"])
def test_client_replays_import_to_the_same_game(game: str) -> None:
    """Each seat's .fk.rep (no replies, other players' requests missing) gives the transcript's events,
    but for the suit named for 反间 and who made each decision, which only replies show; and the same verdict."""
    transcript = import_freekill(raw(game), game).log
    verdict = verify(transcript)
    players = next(d["data"] for d in lines(game) if d.get("cmd") == "ArrangeSeats")
    for player in players:
        imported = import_freekill(fkrep_from_transcript(lines(game), player), f"{game}.seat.fk.rep")
        assert imported.format == FKREP
        log = imported.log
        assert log.header.setup == transcript.header.setup and list(log.header.seats) == list(transcript.header.seats)
        assert [without_suit(e) for e in log.events] == [without_suit(e) for e in transcript.events], player
        again = verify(log)
        assert [(a.index, [v.code for v in a.violations]) for a in again.annotations] == \
            [(a.index, [v.code for v in a.violations]) for a in verdict.annotations]


def without_suit(ev: pb.Event) -> pb.Event:
    out = pb.Event()
    out.CopyFrom(ev)
    if out.HasField("choose_suit"):
        out.choose_suit.ClearField("suit")
    out.ClearField("source")  # who made a decision is in the replies, which a client replay does not hold
    return out


@pytest.mark.parametrize("game", GAMES)
def test_inferred_nullification_targets_are_the_requested_ones(game: str) -> None:
    """无懈可击 targets come from the trick's course (a client replay has no other players' requests);
    where the transcript has the request, it names the same target."""
    messages = read_transcript(io.StringIO(raw(game).decode("utf-8"))).messages
    conv = fkconvert.Converter(messages, fkconvert.players_of(messages), card_table("88a912f1"))
    conv.run(conv.read_setup())
    assert [(seq, inferred) for seq, inferred, _ in conv.prompted] == \
        [(seq, prompted) for seq, _, prompted in conv.prompted]


# ---------------------------------------------------------------------------------------- the command line

def test_import_writes_one_log_per_input_and_reports_the_others(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "fk_rand_p4_35.jsonl"
    good.write_bytes(raw("fk_rand_p4_35.jsonl"))
    packed = tmp_path / "fk_rand_p8_23.jsonl.xz"
    packed.write_bytes((DATA / "transcripts" / "fk_rand_p8_23.jsonl.xz").read_bytes())
    bad = tmp_path / "notes.jsonl"
    bad.write_text("hello\n", encoding="utf-8")
    out = tmp_path / "logs"
    assert main(["import", "freekill", str(good), str(bad), str(packed), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "notes.jsonl: cannot import: not FreeKill input" in err
    written = sorted(p.name for p in out.iterdir())
    assert written == ["fk_rand_p4_35.pb", "fk_rand_p8_23.pb"]
    log = load_log((out / "fk_rand_p4_35.pb").read_bytes())
    assert log == import_freekill(raw("fk_rand_p4_35.jsonl"), "fk_rand_p4_35.jsonl").log
    assert main(["import", "freekill", str(good), "--out", str(out), "--json"]) == 0
    as_json = json_format.Parse((out / "fk_rand_p4_35.json").read_text(encoding="utf-8"), pb.GameLog())
    assert as_json == log
    assert main(["check", str(out / "fk_rand_p4_35.pb")]) == 0


def test_check_from_freekill(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    game = tmp_path / "fk_p5_r5.jsonl"
    game.write_bytes(raw("fk_p5_r5.jsonl"))
    assert main(["check", "--from", "freekill", str(game)]) == 1  # 制衡 with no card, 7 times
    out = capsys.readouterr().out
    assert out.count(": SKILL_COST:") == 7 and "origin: freekill 88a912f1" in out
    assert main(["check", "--from", "freekill", "--json", str(game)]) == 1
    (body,) = json.loads(capsys.readouterr().out)
    assert body["origin"]["engine"] == "freekill" and body["violation_codes"] == ["SKILL_COST"]
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(b"\x00\x01")
    assert main(["check", "--from", "freekill", str(junk)]) == 2
    assert "cannot import it from freekill" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------- bad input

def failure(data: bytes) -> str:
    with pytest.raises(ImportFailure) as info:
        import_freekill(data, "x")
    return str(info.value)


def test_inputs_that_are_not_freekill_records_are_refused_clearly() -> None:
    assert "not FreeKill input" in failure(b"")
    assert "not FreeKill input" in failure(b"PK\x03\x04 a zip file")
    assert "not a FreeKill transcript: line 1: not JSON" in failure(b"{not json\n")
    assert "starts with its meta line" in failure(b'{"seq": 1, "kind": "notify", "cmd": "x"}\n')
    assert "no seating" in failure(b'{"seq": 1, "kind": "meta", "players": 4}\n')
    assert "not UTF-8" in failure(b'{"seq": 1, "kind": "meta", "players": 4}\n\xff\xfe\n')
    assert "only identity mode" in failure(b'{"seq": 1, "kind": "meta", "players": 4, '
                                           b'"settings": {"gameMode": "heg_mode"}}\n')
    assert "cannot be read" in failure(b"\xfd7zXZ\x00 not really xz")
    assert "not a FreeKill client replay" in failure(b"\x00\x00\x00\x10\x78 not zlib")


def edited(game: str, change: Any) -> bytes:
    out = []
    for d in lines(game):
        d2 = change(json.loads(json.dumps(d)))
        if d2 is not None:
            out.append(json.dumps(d2, ensure_ascii=False))
    return ("\n".join(out) + "\n").encode("utf-8")


def test_a_record_from_another_card_table_is_refused_not_mapped() -> None:
    """Every card the record describes is checked against the table: a different card under an id
    means another FreeKill version or card set."""
    def swap(d: dict[str, Any]) -> dict[str, Any]:
        if d.get("cmd") == "MoveCards":
            for move in d["data"][0]:
                for info in move["moveInfo"]:
                    if info.get("cardId") == 9 and "beforeCard" in info:
                        info["beforeCard"]["3"] = 4  # ♦ instead of ♣
        return d
    why = failure(edited("fk_rand_p4_35.jsonl", swap))
    assert "another FreeKill version or card set" in why and "card 9 as slash diamond 3" in why
    with pytest.raises(CardTableError, match="no card table for FreeKill version"):
        card_table("0.5.0")


def test_a_card_id_outside_the_table_is_refused() -> None:
    def bogus(d: dict[str, Any]) -> dict[str, Any]:
        if d.get("cmd") == "GameLog" and d["data"].get("type") == "#UseCardToTargets" and d["seq"] > 100:
            d["data"]["card"] = [999]
        return d
    assert "card id 999 is not in FreeKill 88a912f1's table" in failure(edited("fk_rand_p4_35.jsonl", bogus))


def test_a_player_who_is_not_at_the_table_is_refused() -> None:
    def stranger(d: dict[str, Any]) -> dict[str, Any]:
        if d.get("cmd") == "GameLog" and d["data"].get("type") == "$TurnStart" and d["seq"] > 150:
            d["data"]["from"] = 42
        return d
    assert "names no player of this table: 42" in failure(edited("fk_rand_p4_35.jsonl", stranger))


def test_freekills_time_out_draw_leaves_the_game_unfinished() -> None:
    """FreeKill calls a game that goes on too long a draw (its room rule): no rule of the game does, so
    the log ends there unfinished instead of recording a result the verifier would call wrong."""
    def time_out(d: dict[str, Any]) -> Any:
        if d.get("cmd") == "GameOver":
            return [{"seq": d["seq"] - 1, "kind": "notify", "to": d["to"], "cmd": "GameLog",
                     "data": {"type": "#TimeOutDraw", "toast": True}}, {**d, "data": ""}]
        return d
    out = []
    for d in lines("fk_rand_p4_35.jsonl"):
        d2 = time_out(json.loads(json.dumps(d)))
        out += d2 if isinstance(d2, list) else [d2]
    imported = import_freekill("\n".join(json.dumps(d) for d in out).encode(), "x")
    assert not any(e.HasField("game_over") for e in imported.log.events)
    assert any("time-out rule" in n for n in imported.log.header.origin.notes)
    assert verify(imported.log).violation_count == 0


def test_a_reconnect_recording_is_refused() -> None:
    from importers.freekill.fkrep import read_fkrep, recording_from_transcript, write_fkrep

    rec = dataclasses.replace(recording_from_transcript(lines("fk_rand_p4_35.jsonl"), 1), reconnect=True)
    data = write_fkrep(rec)
    assert read_fkrep(data).reconnect
    assert "'reconnect' recording starts in the middle of the game" in failure(data)
