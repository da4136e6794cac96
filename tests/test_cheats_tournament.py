"""Cheat detection with seed 003's last-three clock and first-out protection (clients/cheats/tournament.py): in
self-play games played with them every drain skipped or recorded too early, and every hit the protection prevents
recorded as dealt, is caught with its code at its event, and no unaltered game is flagged. Damage the protection
only reduces is rare in self-play (it takes 2 points at once on the protected character), so that kind is also
tried on the hand-written complete logs of tests/scenarios/first_out/."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from google.protobuf import json_format

from clients.cli import main
from clients.commands.cheats import Report, check_game, run_report
from clients.selfplay.tournament import SEEDED, HouseRules
from sgsverify.v1 import game_log_pb2 as pb

KINDS = ("drain_skipped", "drain_too_early", "protection_ignored", "protected_hit_at_one_hp")
SCENARIOS = Path(__file__).parent / "scenarios" / "first_out"
# Hand-written complete logs with a place for a protection kind self-play seldom offers.
SCENARIO_KINDS = [("protection_reduced", "protection_ignored"), ("protection_legal", "protected_hit_at_one_hp")]


@cache
def house_report() -> Report:
    return run_report(5, (5, 8), 1, list(KINDS), per_kind=2, packages=("maneuvering",),
                      house=HouseRules(last_three_clock=True, protected_seat=SEEDED))


def scenario_log(name: str) -> pb.GameLog:
    doc = json.loads((SCENARIOS / f"{name}.json").read_text(encoding="utf-8"))
    return json_format.ParseDict(doc["log"], pb.GameLog())


def house_rule_injections() -> dict[str, int]:
    """How many cheats of each house-rule kind these tests inject (tests/test_cheats.py: every kind is injected)."""
    injected = {name: t.injected for name, t in house_report().tallies.items()}
    for scenario, kind in SCENARIO_KINDS:
        injected[kind] += check_game(0, 4, [kind], log=scenario_log(scenario)).tallies[kind].injected
    return injected


def test_no_false_positives_with_the_house_rules() -> None:
    report = house_report()
    assert report.games == 10
    assert report.false_positives == []


def test_every_injected_house_rule_cheat_is_caught() -> None:
    report = house_report()
    for name in ("drain_skipped", "drain_too_early", "protected_hit_at_one_hp"):
        assert report.tallies[name].injected > 0, name
    for name, t in report.tallies.items():
        assert t.caught == t.injected, (name, t, report.failures[:5])


@pytest.mark.parametrize(("scenario", "kind"), SCENARIO_KINDS)
def test_protection_cheats_on_the_scenarios(scenario: str, kind: str) -> None:
    """The hand-written logs: 酒 + 杀 reduced to 1 point (recorded in full: 2 points, 0 HP), and a 杀 prevented in
    full at 1 HP (recorded as dealt)."""
    result = check_game(0, 4, [kind], log=scenario_log(scenario))
    assert result.clean_codes == []
    t = result.tallies[kind]
    assert t.injected >= 1 and t.caught == t.injected, (t, result.failures)


def test_cli_house_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cheats", "--games", "1", "--players", "5", "--seed", "3", "--last-three-clock", "--protected-seat",
                 "seeded", "--kinds", "drain_too_early"]) == 0
    out = capsys.readouterr().out
    assert "with the last-three clock and a seeded protected seat" in out
    assert main(["cheats", "--players", "5", "--protected-seat", "5"]) == 2  # not at a 5-seat table
    assert main(["cheats", "--mode", "hegemony", "--last-three-clock"]) == 2
    assert main(["cheats", "--consistent", "--protected-seat", "1"]) == 2


def test_selfplay_cli_house_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sgs-verify selfplay --last-three-clock --protected-seat N` writes games with the options, which check clean."""
    assert main(["selfplay", "--games", "2", "--players", "5", "--seed", "8", "--last-three-clock", "--protected-seat",
                 "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "game-s8-p5: 299 events, rebels win, 1 drain(s), seat 2 protected" in out
    for path in sorted(tmp_path.glob("*.pb")):
        log = pb.GameLog.FromString(path.read_bytes())
        assert log.header.options.last_three_clock and log.header.options.protected_seat == 2
    assert main(["check", str(tmp_path)]) == 0
    assert main(["selfplay", "--players", "5", "--protected-seat", "5", "--out", str(tmp_path)]) == 2
    assert main(["selfplay", "--rebirth", "--last-three-clock", "--out", str(tmp_path)]) == 2
