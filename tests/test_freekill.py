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
import sqlite3
import sys
import zlib
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


@pytest.mark.parametrize(("container", "version"), [("cbor", "0.5.22"), ("json", "0.5.11")])
@pytest.mark.parametrize("game", ["fk_p5_r5.jsonl", "fk_rand_p10_23.jsonl", "fk_rand_p7_9.jsonl"])
def test_client_replays_import_to_the_same_game(game: str, container: str, version: str) -> None:
    """Each seat's .fk.rep (no replies, other players' requests missing), as a real client of that
    version writes it (CBOR from v0.5.12, JSON up to v0.5.11), gives the transcript's events, but for
    the suit named for 反间 and who made each decision, which only replies show; and the same verdict.
    The version is FreeKill's release, which names no card set: the card table is the one the record's
    cards fit."""
    transcript = import_freekill(raw(game), game).log
    verdict = verify(transcript)
    players = next(d["data"] for d in lines(game) if d.get("cmd") == "ArrangeSeats")
    for player in players:
        data = fkrep_from_transcript(lines(game), player, version=version, container=container)
        assert data[4:6] == b"\x78\x9c" and (zlib.decompress(data[4:])[:1] == b"[") == (container == "json")
        imported = import_freekill(data, f"{game}.seat.fk.rep")
        assert imported.format == FKREP
        log = imported.log
        origin = log.header.origin
        assert (origin.engine_version, log.header.recorder) == (version, f"FreeKill {version}, imported by sgs-verify")
        assert any(n.startswith("card table 88a912f1, which all ") for n in origin.notes)
        assert log.header.setup == transcript.header.setup and list(log.header.seats) == list(transcript.header.seats)
        assert [without_suit(e) for e in log.events] == [without_suit(e) for e in transcript.events], player
        again = verify(log)
        assert [(a.index, [v.code for v in a.violations]) for a in again.annotations] == \
            [(a.index, [v.code for v in a.violations]) for a in verdict.annotations]


@pytest.mark.parametrize("game", GAMES)
def test_every_game_from_a_real_version_replay_gets_the_transcripts_verdict(game: str) -> None:
    """One seat of every test game (a different seat from game to game), in both containers with the
    version that wrote it: the transcript's exact verdict (tests/data/freekill/expected.json)."""
    players = next(d["data"] for d in lines(game) if d.get("cmd") == "ArrangeSeats")
    player = players[GAMES.index(game) % len(players)]
    for container, version in (("cbor", "0.5.22"), ("json", "0.5.11")):
        replay_name = f"{game}.{container}.fk.rep"
        log = import_freekill(fkrep_from_transcript(lines(game), player, version=version, container=container),
                              replay_name).log
        assert (log.header.origin.format, log.header.origin.engine_version) == (FKREP, version)
        replay = verify(log)
        got = {"events": len(log.events), "followed": replay.followed, "finished": replay.result.finished,
               "side": pb.Side.Name(replay.result.side), "winners": list(replay.result.winners),
               "header_notices": [n.code for n in replay.header_notices],
               "violations": [[a.index, v.code] for a in replay.annotations for v in a.violations]}
        assert got == EXPECTED[game], (container, player)


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
    assert "only identity rooms" in failure(b'{"seq": 1, "kind": "meta", "players": 4, '
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


def test_a_replay_whose_cards_match_no_table_is_refused_naming_the_card() -> None:
    """A .fk.rep is judged by its cards, not its version string: one whose cards fit no table is refused,
    naming the first card that does not fit; any version string with cards that fit imports."""
    def swap(d: dict[str, Any]) -> dict[str, Any]:
        if d.get("cmd") == "MoveCards":
            for move in d["data"][0]:
                for info in move["moveInfo"]:
                    if info.get("cardId") == 9 and "beforeCard" in info:
                        info["beforeCard"]["3"] = 4  # ♦ instead of ♣
        return d
    changed = [json.loads(t) for t in edited("fk_rand_p4_35.jsonl", swap).decode().splitlines()]
    for container in ("cbor", "json"):
        why = failure(fkrep_from_transcript(changed, 1, container=container))
        assert why.startswith("the record's cards match no card table here: record position ")
        assert "the record shows card 9 as slash diamond 3, but FreeKill 88a912f1's table has slash club 3" in why
    odd = import_freekill(fkrep_from_transcript(lines("fk_rand_p4_35.jsonl"), 1, version="v0.9.9-nightly"), "x")
    assert odd.log.header.origin.engine_version == "v0.9.9-nightly"
    assert import_freekill(raw("fk_rand_p4_35.jsonl"), "x").log.header.origin.engine_version == "88a912f1"


# ---------------------------------------------------------------------------------------- the client database

def client_database(path: Path, recordings: list[Any], table: str = "myGameRecordings") -> bytes:
    """An SQLite file shaped like FreeKill's client database: a row per recording, its .fk.rep as hex."""
    con = sqlite3.connect(path)
    try:
        con.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY AUTOINCREMENT, pid INTEGER, recording TEXT)")
        con.executemany(f"INSERT INTO {table} (pid, recording) VALUES (1, ?)", [(r,) for r in recordings])
        con.commit()
    finally:
        con.close()
    return path.read_bytes()


def three_recordings() -> list[bytes]:
    p5 = next(d["data"] for d in lines("fk_p5_r5.jsonl") if d.get("cmd") == "ArrangeSeats")
    return [fkrep_from_transcript(lines("fk_rand_p4_35.jsonl"), 1),
            fkrep_from_transcript(lines("fk_rand_p4_35.jsonl"), 4, container="json"),
            fkrep_from_transcript(lines("fk_p5_r5.jsonl"), p5[0])]


def test_a_client_database_imports_every_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from importers.freekill import DATABASE, import_records
    from importers.freekill.fkrep import read_fkrep

    recordings = three_recordings()
    names = [str(read_fkrep(r).name) for r in recordings]
    db = tmp_path / "freekill-client.db"
    records = import_records(client_database(db, [r.hex() for r in recordings]), db.name)
    assert [r.name for r in records] == names and all(r.part for r in records)
    for record, data in zip(records, recordings, strict=True):
        assert not isinstance(record.result, ImportFailure)
        alone = import_freekill(data, "x.fk.rep").log
        assert list(record.result.log.events) == list(alone.events)
        assert record.result.log.header.setup == alone.header.setup
        assert record.result.log.header.origin.source == f"freekill-client.db: {record.name}"
    assert "one log per recording" in failure(db.read_bytes())  # one record only, there
    one = client_database(tmp_path / "one.db", [recordings[0].hex()])
    assert import_freekill(one, "one.db").log.events == import_freekill(recordings[0], "x").log.events
    assert DATABASE == "freekill-database"

    out = tmp_path / "logs"
    assert main(["import", "freekill", str(db), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{n}.pb" for n in names)
    assert load_log((out / f"{names[2]}.pb").read_bytes()) == records[2].result.log  # type: ignore[union-attr]
    assert f"{db} [{names[0]}] -> {out / names[0]}.pb: 85 events, 4 seats" in capsys.readouterr().out

    assert main(["check", "--from", "freekill", str(db)]) == 1  # 制衡 with no card, 7 times, in fk_p5_r5
    text = capsys.readouterr().out
    assert text.count(": SKILL_COST:") == 7 and f"{db} [{names[2]}]: 394 events, 7 violation(s)" in text
    assert "checked 1 file(s) (3 records): 3 readable, 0 unreadable, 7 violation(s)" in text


def test_a_bad_recording_in_a_database_loses_none_of_the_others(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    recordings = three_recordings()
    rows: list[Any] = [recordings[0].hex(), "not hex", recordings[1][:-10].hex(), recordings[2]]  # the last a BLOB
    db = tmp_path / "client.db"
    client_database(db, rows)
    out = tmp_path / "logs"
    assert main(["import", "freekill", str(db), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert f"{db} [recording 2]: cannot import: recording 2 of the database: it is not a .fk.rep as hex" in captured.err
    assert f"{db} [recording 3]: cannot import: recording 3 of the database: not a FreeKill client replay: " \
           "truncated zlib stream" in captured.err
    assert len(list(out.iterdir())) == 2
    assert "imported 2 of 4 record(s) from 1 file(s)" in captured.out
    assert main(["check", "--from", "freekill", "--json", str(db)]) == 2
    body = json.loads(capsys.readouterr().out)
    assert [r["readable"] for r in body] == [True, False, False, True]


def test_an_sqlite_file_that_is_not_freekills_is_refused(tmp_path: Path) -> None:
    other = client_database(tmp_path / "other.db", ["00"], table="games")
    assert failure(other) == "an SQLite database, but not FreeKill's client database: it has no table " \
        "myGameRecordings"
    assert failure(client_database(tmp_path / "empty.db", [])) == \
        "FreeKill's client database holds no recording (myGameRecordings is empty)"
    broken = bytearray(other)
    broken[100:] = b"\xff" * (len(broken) - 100)
    assert failure(bytes(broken)).startswith("the SQLite database cannot be read: ")
    con = sqlite3.connect(tmp_path / "nocolumn.db")
    con.execute("CREATE TABLE myGameRecordings (id INTEGER, data TEXT)")
    con.commit()
    con.close()
    assert failure((tmp_path / "nocolumn.db").read_bytes()).endswith("has no column recording")


def test_a_failure_quoting_a_huge_value_says_it_in_bounded_words() -> None:
    lines = [json.dumps({"seq": 0, "kind": "meta", "players": 2, "settings": {"gameMode": "aaa_role_mode"}}),
             json.dumps({"seq": 1, "kind": "notify", "cmd": "ArrangeSeats", "data": [7] * 50_000, "to": [1, 2]}),
             json.dumps({"seq": 2, "kind": "notify", "cmd": "GameLog", "data": {"type": "$RoundStart"}, "to": [1, 2]})]
    with pytest.raises(ImportFailure) as info:
        import_freekill("\n".join(lines).encode(), "huge.jsonl")
    assert len(str(info.value)) < 500 and "more characters" in str(info.value)


def test_a_transcript_cut_mid_line_says_how_much_of_it_is_whole() -> None:
    data = lzma.decompress((DATA / "transcripts" / "fk_rand_p4_35.jsonl.xz").read_bytes())[:30_000]
    with pytest.raises(ImportFailure, match=r"line 212: the transcript ends in the middle of this line \(its 211 "
                                            r"lines before it are whole"):
        import_freekill(data, "cut.jsonl")
