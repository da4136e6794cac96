"""Two header additions for logs from other engines: a declared role table (options.role_table,
with the HOUSE_ROLE_TABLE header notice when it is not the rule book's) and where a log came from
(header.origin, out of the digest chain). The rule verdicts are in tests/scenarios/setup/
(house_roles_*, declared_roles_*, bad_role_table_*); here: the dealing, the digests, the notice
API, the catalogue and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf import json_format

from clients.commands.service import replay_lines
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from tests.test_malformed import run_cli
from verifier import Verifier, verify
from verifier.codes import CATALOGUE, NOTICES
from verifier.engine.effects import Ruleset
from verifier.packages.modes.identity import (
    LORD,
    LOYALIST,
    REBEL,
    ROLE_TABLE,
    SPY,
    TWO_SPIES_VARIANT,
    role_list,
    roles_to_deal,
)
from verifier.replay import default_ruleset, initial_digest
from verifier.rng import shuffled
from verifier.setup import new_game
from verifier.text import origin

ROOT = Path(__file__).resolve().parent.parent
SETUP = ROOT / "tests" / "scenarios" / "setup"
FREEKILL_10 = pb.RoleTable(lords=1, loyalists=3, rebels=5, spies=1)


def scenario_log(name: str) -> pb.GameLog:
    doc = json.loads((SETUP / f"{name}.json").read_text(encoding="utf-8"))
    return json_format.ParseDict(doc["log"], pb.GameLog())


def freekill_origin(fmt: str) -> pb.LogOrigin:
    return pb.LogOrigin(engine="freekill", engine_version="88a912f1", format=fmt, source=f"game-0412.{fmt[9:]}",
                        notes=["roles from FreeKill's 10-player table", "reshuffles recorded"])


def header(players: int, seed: int = 5, table: pb.RoleTable | None = None) -> pb.GameHeader:
    h = pb.GameHeader(ruleset="identity/1", mode=pb.MODE_IDENTITY, seed=seed,
                      options=pb.GameOptions(generals=pb.GENERALS_MODE_WHITE), seats=[pb.Seat()] * players)
    if table is not None:
        h.options.role_table.CopyFrom(table)
    return h


# ---------------------------------------------------------------------------------------- the contract

def test_the_new_fields_keep_their_numbers() -> None:
    assert pb.GameOptions.DESCRIPTOR.fields_by_name["role_table"].number == 7
    assert pb.GameHeader.DESCRIPTOR.fields_by_name["origin"].number == 8
    assert [(f.name, f.number) for f in pb.RoleTable.DESCRIPTOR.fields] == [
        ("lords", 1), ("loyalists", 2), ("rebels", 3), ("spies", 4)]
    assert [(f.name, f.number) for f in pb.LogOrigin.DESCRIPTOR.fields] == [
        ("engine", 1), ("engine_version", 2), ("format", 3), ("source", 4), ("notes", 5)]
    assert apb.AnnotatedReplay.DESCRIPTOR.fields_by_name["header_notices"].number == 12
    assert [(f.name, f.number) for f in apb.HeaderNotice.DESCRIPTOR.fields] == [
        ("code", 1), ("message", 2), ("rule", 3)]


def test_notice_codes_are_their_own_catalogue() -> None:
    assert "HOUSE_ROLE_TABLE" in NOTICES
    assert not set(NOTICES) & set(CATALOGUE)
    for n in NOTICES.values():
        assert n.name.isupper() and n.rule and n.meaning


# ---------------------------------------------------------------------------------------- dealing

@pytest.mark.parametrize("players", sorted(ROLE_TABLE))
def test_a_declared_rule_book_table_deals_as_the_standard_path(players: int) -> None:
    loyal, rebel, spy = ROLE_TABLE[players]
    declared = header(players, table=pb.RoleTable(lords=1, loyalists=loyal, rebels=rebel, spies=spy))
    assert roles_to_deal(declared) == (role_list(players, pb.ROLE_VARIANT_STANDARD), [])
    assert roles_to_deal(header(players)) == (role_list(players, pb.ROLE_VARIANT_UNSPECIFIED), [])
    for seed in range(5):
        declared.seed = seed
        plain = header(players, seed)
        assert [p.role for p in new_game(declared, _ruleset()).players] == \
            [p.role for p in new_game(plain, _ruleset()).players]
    if players in TWO_SPIES_VARIANT:
        loyal, rebel, spy = TWO_SPIES_VARIANT[players]
        declared.options.role_table.CopyFrom(pb.RoleTable(lords=1, loyalists=loyal, rebels=rebel, spies=spy))
        assert roles_to_deal(declared) == (role_list(players, pb.ROLE_VARIANT_TWO_SPIES), [])


def test_a_house_table_is_dealt_from_the_roles_stream() -> None:
    for seed in (1, 35, 2**64 - 1):
        game = new_game(header(10, seed, FREEKILL_10), _ruleset())
        roles = [p.role for p in game.players]
        want = [LORD] + [LOYALIST] * 3 + [REBEL] * 5 + [SPY]
        assert roles == shuffled(seed, "roles", [int(r) for r in want])
        assert sorted(roles) == sorted(want)


def test_the_house_table_notice() -> None:
    v = Verifier(header(10, 35, FREEKILL_10))
    assert [n.code for n in v.header_notices] == ["HOUSE_ROLE_TABLE"]
    message = v.header_notices[0].message
    assert "1 lord, 3 loyalists, 5 rebels, 1 spy" in message and "1 lord, 3 loyalists, 4 rebels, 2 spies" in message
    replay = v.finish()
    assert [(n.code, n.rule) for n in replay.header_notices] == [("HOUSE_ROLE_TABLE", NOTICES["HOUSE_ROLE_TABLE"].rule)]
    assert replay.violation_count == 0 and not replay.violation_codes and not replay.header_violations
    # an unusable header gets no notice, only its violations
    bad = header(10, 35, FREEKILL_10)
    bad.setup.draw_pile.append(999)
    replay = verify(pb.GameLog(header=bad))
    assert [v.code for v in replay.header_violations] == ["BAD_SETUP"] and not replay.header_notices


def test_the_notice_api_takes_notice_codes_only() -> None:
    v = Verifier(header(4))
    v.notice("HOUSE_ROLE_TABLE", "a remark")
    replay = v.finish()
    assert [(n.code, n.message) for n in replay.header_notices] == [("HOUSE_ROLE_TABLE", "a remark")]
    assert replay.violation_count == 0
    with pytest.raises(ValueError, match="not a notice code"):
        v.notice("SLASH_LIMIT", "a violation is not a notice")


# ---------------------------------------------------------------------------------------- the origin

def test_the_origin_does_not_change_the_digests() -> None:
    log = scenario_log("house_roles_10p_freekill")
    plain = verify(log)
    digests = [a.digest for a in plain.annotations]
    for fmt in ("freekill-transcript", "freekill-fkrep"):
        imported = pb.GameLog()
        imported.CopyFrom(log)
        imported.header.origin.CopyFrom(freekill_origin(fmt))
        replay = verify(imported)
        assert [a.digest for a in replay.annotations] == digests
        assert replay.final_digest == plain.final_digest
        assert initial_digest(imported.header) == initial_digest(log.header)
        # the log is another log (another id), the game is the same game
        assert replay.log_sha256 != plain.log_sha256
        assert [n.code for n in replay.header_notices] == ["HOUSE_ROLE_TABLE"]
        assert replay.violation_count == 0 and replay.result == plain.result


def test_the_role_table_is_part_of_the_game() -> None:
    assert initial_digest(header(10, 5, FREEKILL_10)) != initial_digest(header(10, 5))


def test_origin_in_one_line() -> None:
    o = freekill_origin("freekill-fkrep")
    o.notes.append("two\nlines")
    assert origin(o) == ("freekill 88a912f1, format freekill-fkrep, source game-0412.fkrep; notes: roles from "
                         "FreeKill's 10-player table; reshuffles recorded; two lines")
    assert origin(pb.LogOrigin()) == ""
    assert origin(pb.LogOrigin(notes=["only a note"])) == "notes: only a note"


def test_the_documented_freekill_header() -> None:
    """docs/log-format.md's example header (House role tables) starts a game judged by 1/3/5/1, with
    the notice the page quotes."""
    page = (ROOT / "docs" / "log-format.md").read_text(encoding="utf-8")
    section = page.split("### House role tables", 1)[1]
    example = section.split("```json", 1)[1].split("```", 1)[0]
    h = json_format.Parse(example, pb.GameHeader())
    assert h.options.role_table == FREEKILL_10 and h.origin.engine == "freekill"
    v = Verifier(h)
    assert not v.header_violations and v.game is not None
    (notice,) = v.header_notices
    quoted = " ".join(section.split("Its replay has the notice `", 1)[1].split("`", 1)[0].split())
    assert quoted == f"{notice.code}: {notice.message}"


# ---------------------------------------------------------------------------------------- the command line

def imported_file(tmp_path: Path) -> tuple[Path, pb.GameLog]:
    log = scenario_log("house_roles_10p_freekill")
    log.header.origin.CopyFrom(freekill_origin("freekill-fkrep"))
    path = tmp_path / "fk10.json"
    path.write_text(json_format.MessageToJson(log, ensure_ascii=False), encoding="utf-8")
    return path, log


def test_check_prints_the_origin_and_the_notice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = imported_file(tmp_path)
    code, out, err = run_cli(["check", str(path)], capsys)
    assert code == 0, out + err  # a notice is not a violation
    lines = out.splitlines()
    assert f"{path}: origin: freekill 88a912f1, format freekill-fkrep, source game-0412.fkrep; notes: roles from " \
           "FreeKill's 10-player table; reshuffles recorded" in lines
    assert any(line.startswith(f"{path}: header notice (not a violation): HOUSE_ROLE_TABLE: ") for line in lines)
    assert f"{path}: 10 events, 0 violation(s); rebels win, seats [1, 3, 4, 6, 8]" in lines


def test_check_json_has_the_origin_and_the_notice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, log = imported_file(tmp_path)
    code, out, _ = run_cli(["check", "--json", str(path)], capsys)
    assert code == 0
    (report,) = json.loads(out)
    assert [n["code"] for n in report["header_notices"]] == ["HOUSE_ROLE_TABLE"]
    assert report["origin"] == json_format.MessageToDict(log.header.origin, preserving_proto_field_name=True)
    assert report["origin"]["engine_version"] == "88a912f1"
    assert report.get("violation_count", 0) == 0 and report["violations"] == []


def test_show_prints_the_origin_and_the_notice(tmp_path: Path) -> None:
    _, log = imported_file(tmp_path)
    res = spb.GetReplayResponse(replay=verify(log), log=log)
    lines = list(replay_lines(res))
    assert "  origin: freekill 88a912f1, format freekill-fkrep, source game-0412.fkrep; notes: roles from " \
           "FreeKill's 10-player table; reshuffles recorded" in lines
    assert any(line.startswith("  header notice (not a violation): HOUSE_ROLE_TABLE: ") for line in lines)


def _ruleset() -> Ruleset:
    return default_ruleset(header(4))
