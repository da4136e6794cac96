"""Cheat detection, measured: a small version of `sgs-verify cheats`.

Self-play games are mutated in every applicable way (clients/cheats/mutator.py); every injected
cheat must be reported with its code on its event, and no unaltered game may be flagged.
The one kind self-play rarely offers a place for (the lord killing a loyalist, for the
penalty) is also played deliberately.
"""

from __future__ import annotations

import json
from functools import cache

import pytest
from google.protobuf import json_format

from clients.cheats.mutator import KINDS, find_mutations
from clients.cli import main
from clients.commands.cheats import Collateral, Report, Tally, check_game, run_report, select_kinds
from sgsverify.v1 import game_log_pb2 as pb
from tests.test_cheats_tournament import house_rule_injections
from verifier import verify
from verifier.replay import completed

SEED, GAMES, PLAYERS = 12, 6, (5, 10)


@cache
def small_report() -> Report:
    return run_report(GAMES, PLAYERS, SEED, per_kind=2)


@cache
def maneuvering_report() -> Report:
    """The same on the 160-card deck (军争): its own kinds find places only there."""
    return run_report(GAMES, PLAYERS, SEED, per_kind=2, packages=("maneuvering",))


@cache
def generals_report() -> Report:
    """Games with the standard generals (their skills): the skill-abuse kinds find places only there. Seeds
    1-4 with 8 players offer a place for every one of them (激将 by a 刘备 who is not the lord, 武圣, 倾国, ...)."""
    return run_report(4, (8,), 1, per_kind=2, generals=True)


@cache
def hegemony_report() -> Report:
    """Hegemony games (国战): the hegemony kinds find places only there; seeds 0, 5 and 8 with 6 players (the rotating
    deal: five Wei, five Wu with 甘宁, 陆逊 and 孙权, 关羽 among Shu and Wu) offer a place for each (a careerist, a
    same-kingdom kill, a reveal for a skill, ...) and for the skill-abuse kinds (a second 制衡 or 天义, 武圣, 奇袭 and
    度势 from the wrong card, a skill not had)."""
    kinds = select_kinds(None, "hegemony")
    report = Report(kinds, tallies={k.name: Tally() for k in kinds})
    for seed in (0, 5, 8):
        report.add(check_game(seed, 6, per_kind=2, mode="hegemony"))
    return report


@cache
def dark_souls_report() -> Report:
    """Identity games with dark souls (暗魂): its kinds find places only there (a soul that acted, a live 游助 or 罗汉,
    a possession); seeds 12-15 with 5 and 10 players offer places for each."""
    return run_report(4, PLAYERS, SEED, per_kind=2, dark_souls=True)


DARK_SOULS_KINDS = {"soul_acts_twice", "youzhu_out_of_timing", "luohan_out_of_damage", "possession_left_out",
                    "possess_the_dead"}

HEGEMONY_KINDS = {"hidden_skill", "reveal_out_of_timing", "same_kingdom_kill_unpunished", "reward_miscounted",
                  "careerist_not_made", "winner_declared_early"}

GENERALS_KINDS = {"skill_not_owned", "lord_skill_not_lord", "skill_twice", "wusheng_black", "qingguo_red",
                  "guose_not_diamond", "qixi_red"}
# The skill-abuse kinds that apply in hegemony games too (a face-down general is revealed with the use); the
# limited skill used twice is played deliberately (limited_skill_used).
HEGEMONY_SKILL_KINDS = {"skill_not_owned", "skill_twice", "wusheng_black", "qixi_red", "duoshi_black"}


@cache
def lord_kills_loyalist() -> pb.GameLog:
    """Four players; the lord equips 诸葛连弩 and kills the loyalist with four 杀, so pays the penalty
    (discards the last hand card and the crossbow). Recorded complete."""
    doc = {
        "header": {
            "ruleset": "identity/1", "mode": "MODE_IDENTITY", "seed": "5",
            "options": {"generals": "GENERALS_MODE_WHITE"},
            "seats": [{"role": "ROLE_LORD"}, {"role": "ROLE_LOYALIST"}, {"role": "ROLE_REBEL"}, {"role": "ROLE_SPY"}],
            "setup": {"stackedTop": True, "drawPile": [33, 45], "startingHands": [
                {"seat": 0, "cards": [29, 14, 16, 17]}, {"seat": 1, "cards": [18, 19, 20, 21]},
                {"seat": 2, "cards": [30, 35, 37, 39]}, {"seat": 3, "cards": [41, 43, 44, 46]}]},
        },
        "events": [{"useCard": {"seat": 0, "card": {"id": 29}}}]
        + [{"useCard": {"seat": 0, "card": {"id": c}, "targets": [1]}} for c in (14, 16, 17, 33)]
        + [{"endPlayPhase": {"seat": 0}}],
    }
    decisions = json_format.ParseDict(doc, pb.GameLog())
    return completed(decisions, verify(decisions))


@cache
def limited_skill_used() -> pb.GameLog:
    """A hegemony game in which 庞统 uses 涅槃 (tests/scenarios/hegemony/skills/niepan_twice.json without its second
    invocation), recorded complete: a place for limited_twice in his next play phase."""
    path = "tests/scenarios/hegemony/skills/niepan_twice.json"
    with open(path, encoding="utf-8") as f:
        decisions = json_format.ParseDict(json.load(f)["log"], pb.GameLog())
    del decisions.events[14]
    return completed(decisions, verify(decisions))


def describe_failures(report: Report) -> str:
    return "\n".join(f"{f.verdict} {f.kind} seed {f.seed} p{f.players} @{f.index}: {f.note}; expected {f.code}, "
                     f"got {f.reported}" for f in report.failures[:20])


def report_for(deck: str) -> Report:
    return {"standard": small_report, "maneuvering": maneuvering_report, "generals": generals_report,
            "hegemony": hegemony_report, "dark_souls": dark_souls_report}[deck]()


@pytest.mark.parametrize("deck", ["standard", "maneuvering", "generals", "hegemony", "dark_souls"])
def test_no_false_positives(deck: str) -> None:
    report = report_for(deck)
    assert report.games == {"generals": 4, "hegemony": 3, "dark_souls": 4 * len(PLAYERS)}.get(deck,
                                                                                            GAMES * len(PLAYERS))
    assert report.false_positives == []


def test_hegemony_kinds() -> None:
    """Every hegemony kind is injected in the hegemony games (and only there) and caught right; the role-based
    identity kinds are not tried there."""
    tallies = hegemony_report().tallies
    for name in HEGEMONY_KINDS:
        assert tallies[name].injected > 0, name
        assert tallies[name].caught == tallies[name].injected, (name, tallies[name])
        assert name not in small_report().tallies
    assert {"reward_for_non_rebel", "missing_lord_penalty", "unowed_penalty", "wrong_winner"}.isdisjoint(tallies)


@pytest.mark.parametrize("deck", ["standard", "maneuvering", "generals", "hegemony", "dark_souls"])
def test_every_injected_cheat_is_caught_with_its_code_at_its_event(deck: str) -> None:
    report = report_for(deck)
    assert report.missed == 0, describe_failures(report)
    for name, t in report.tallies.items():
        assert t.caught == t.injected, (name, t, describe_failures(report))


def test_generals_skill_abuse_kinds() -> None:
    """Every skill-abuse kind is injected in the generals games (and only there) and caught right."""
    generals = generals_report().tallies
    for name in GENERALS_KINDS:
        assert generals[name].injected > 0, name
        assert generals[name].caught == generals[name].injected, (name, generals[name])
        assert small_report().tallies[name].injected == 0, name  # no skills without generals


def test_dark_souls_kinds() -> None:
    """Every dark-souls kind is injected in the dark-souls games (and only there) and caught right."""
    tallies = dark_souls_report().tallies
    for name in DARK_SOULS_KINDS:
        assert tallies[name].injected > 0, name
        assert tallies[name].caught == tallies[name].injected, (name, tallies[name])
        assert small_report().tallies[name].injected == 0, name  # no souls without the option


def test_lord_penalty_played_deliberately() -> None:
    log = lord_kills_loyalist()
    clean = verify(log)
    assert clean.violation_count == 0 and clean.followed
    result = check_game(0, 4, log=log)
    assert result.clean_codes == []
    assert result.failures == []
    assert result.tallies["missing_lord_penalty"].caught == 1
    assert result.tallies["unowed_penalty"].injected == 0  # the penalty was due here


def test_hegemony_skill_abuse_kinds() -> None:
    """The skill-abuse kinds find places in hegemony games too and are caught right; a limited skill used again
    (涅槃, played deliberately) is SKILL_LIMIT where it is invoked."""
    tallies = hegemony_report().tallies
    for name in HEGEMONY_SKILL_KINDS:
        assert tallies[name].injected > 0, name
        assert tallies[name].caught == tallies[name].injected, (name, tallies[name])
    log = limited_skill_used()
    clean = verify(log)
    assert clean.violation_count == 0 and clean.followed
    result = check_game(0, 4, log=log, mode="hegemony")
    assert result.clean_codes == [] and result.failures == []
    assert result.tallies["limited_twice"].injected > 0
    assert result.tallies["limited_twice"].caught == result.tallies["limited_twice"].injected


def test_every_kind_is_injected() -> None:
    injected = {name: t.injected + maneuvering_report().tallies[name].injected
                + generals_report().tallies[name].injected for name, t in small_report().tallies.items()}
    for name, t in check_game(0, 4, log=lord_kills_loyalist()).tallies.items():
        injected[name] += t.injected
    for name, t in hegemony_report().tallies.items():
        injected[name] = injected.get(name, 0) + t.injected
    for name in DARK_SOULS_KINDS:
        injected[name] += dark_souls_report().tallies[name].injected
    injected["limited_twice"] += check_game(0, 4, log=limited_skill_used(), mode="hegemony",
                                            kind_names=["limited_twice"]).tallies["limited_twice"].injected
    for name, n in house_rule_injections().items():  # seed 003's clock and protection (their own games)
        injected[name] = n
    assert {k.name for k in KINDS} == set(injected)
    assert [name for name, n in injected.items() if n == 0] == []


def test_mutations_are_well_formed_and_not_already_reported() -> None:
    from clients.selfplay import play_game

    log = play_game(SEED, 8)
    clean = verify(log)
    n = len(log.header.seats)
    original = log.SerializeToString(deterministic=True)
    for mutations in find_mutations(log, per_kind=1).values():
        for m in mutations:
            bad = m.apply(log)
            assert bad != log and log.SerializeToString(deterministic=True) == original, m  # the original is untouched
            assert pb.GameLog.FromString(bad.SerializeToString()) == bad
            assert not m.caught(clean), m  # the expected verdict is not there without the cheat
            for ev in m.edit.events:
                kind = ev.WhichOneof("kind")
                assert kind is not None
                body = getattr(ev, kind)
                if hasattr(body, "seat"):
                    assert body.seat < n


@cache
def slash_dodged() -> pb.GameLog:
    """Four players; the lord uses 杀 on the rebel, who dodges with 闪, and ends the play phase with five cards
    (three 杀 among them) at 4 HP. Recorded complete: the log ends in the discard phase, one card due."""
    doc = {
        "header": {
            "ruleset": "identity/1", "mode": "MODE_IDENTITY", "seed": "7",
            "options": {"generals": "GENERALS_MODE_WHITE"},
            "seats": [{"role": "ROLE_LORD"}, {"role": "ROLE_REBEL"}, {"role": "ROLE_LOYALIST"}, {"role": "ROLE_SPY"}],
            "setup": {"stackedTop": True, "drawPile": [30, 33], "startingHands": [
                {"seat": 0, "cards": [14, 16, 17, 57]}, {"seat": 1, "cards": [84, 85, 86, 88]},
                {"seat": 2, "cards": [59, 61, 65, 67]}, {"seat": 3, "cards": [18, 19, 20, 21]}]},
        },
        "events": [{"useCard": {"seat": 0, "card": {"id": 14}, "targets": [1]}},
                   {"respond": {"seat": 1, "card": {"id": 84}}},
                   {"endPlayPhase": {"seat": 0}}],
    }
    decisions = json_format.ParseDict(doc, pb.GameLog())
    return completed(decisions, verify(decisions))


def test_spliced_collateral_counted_on_a_hand_checked_log() -> None:
    """A second 杀 spliced in before the lord ends the play phase (event 11). The verifier applies it, so
    the rest of the log is the game without it: the rebel does not dodge it and the log leaves out the
    damage (1), and the lord, one card down, owes no discard, so the engine runs on past the discard phase
    the log ends waiting in: finish phase, turn 2, the rebel's start, draw phase, draw and play phase (6).
    Seven collateral violations, all MISSING_OUTCOME. Rejected cheats (a card not owned, out of turn) and
    recorded outcomes (a stacked draw) leave the log as it was: none."""
    log = slash_dodged()
    assert log.header.options.outcomes == pb.OUTCOME_RECORDING_COMPLETE and verify(log).violation_count == 0
    assert [m.index for m in find_mutations(log, per_kind=1)["second_slash"]] == [11]
    result = check_game(0, 4, ["second_slash", "card_not_in_hand", "out_of_turn", "stacked_draw"], per_kind=1, log=log)
    assert result.failures == [] and all(t.caught == t.injected == 1 for t in result.tallies.values())
    slash = result.collateral["second_slash"]
    assert (slash.measured, slash.total, slash.most, slash.none, slash.stopped) == (1, 7, 7, 0, 0)
    assert slash.codes == {"MISSING_OUTCOME": 7} and slash.mean == 7.0
    for name in ("card_not_in_hand", "out_of_turn", "stacked_draw"):
        c = result.collateral[name]
        assert (c.measured, c.total, c.none) == (1, 0, 1), name
    # The report: mean and max over the measured cheats of a kind; the JSON says the same.
    report = Report([k for k in KINDS if k.name in result.tallies])
    report.add(result)
    report.add(check_game(0, 4, ["second_slash"], log=lord_kills_loyalist()))  # crossbow: no second 杀 to splice
    assert report.collateral["second_slash"].as_json() == {"measured": 1, "mean": 7.0, "max": 7, "total": 7,
                                                            "none": 0, "not_followed": 0,
                                                            "codes": {"MISSING_OUTCOME": 7}}
    # A removed kill penalty of hand and equipment is two derived moves, both the cheat's own.
    penalty = check_game(0, 4, ["missing_lord_penalty"], log=lord_kills_loyalist()).collateral
    assert (penalty["missing_lord_penalty"].measured, penalty["missing_lord_penalty"].total) == (1, 0)


def test_spliced_collateral_only_on_complete_recordings() -> None:
    partial = pb.GameLog()
    partial.CopyFrom(slash_dodged())
    partial.header.options.outcomes = pb.OUTCOME_RECORDING_PARTIAL
    result = check_game(0, 4, ["second_slash"], log=partial)
    assert result.tallies["second_slash"].injected == 1 and result.collateral == {}


def test_collateral_adds_up() -> None:
    a = Collateral(measured=2, total=10, most=8, none=0, stopped=1, codes={"X": 10})
    a.add(Collateral(measured=3, total=5, most=4, none=1, codes={"X": 1, "Y": 4}))
    assert (a.measured, a.total, a.most, a.none, a.stopped, a.codes) == (5, 15, 8, 1, 1, {"X": 11, "Y": 4})
    assert a.mean == 3.0 and Collateral().mean == 0.0


def test_cli_table_json_and_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    small = ["cheats", "--games", "1", "--players", "4", "--seed", "3"]
    assert main([*small, "--kinds", "second_slash,stacked_draw"]) == 0
    out = capsys.readouterr().out
    assert "second_slash" in out and "OK: 0 missed, 0 false positive(s)" in out
    assert "coll. mean" in out and "complete-recording logs" in out
    assert main([*small, "--kinds", "wrong_hp", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is True and [k["kind"] for k in body["kinds"]] == ["wrong_hp"]
    assert body["kinds"][0]["collateral"]["measured"] == body["kinds"][0]["caught"]
    assert body["collateral"]["measured"] == body["kinds"][0]["caught"]
    assert body["kinds"][0]["injected"] == body["kinds"][0]["caught"] > 0
    assert main(["cheats", "--kinds", "no_such_cheat"]) == 2
    assert main([*small, "--packages", "maneuvering", "--kinds", "chain_damage_unpaid,supply_shortage_too_far"]) == 0
    assert "with maneuvering" in capsys.readouterr().out
    assert main([*small, "--packages", "mahjong"]) == 2
    assert main(["cheats", "--games", "1", "--players", "8", "--seed", "1", "--generals", "--kinds",
                 "skill_not_owned,lord_skill_not_lord", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is True and body["generals"] is True
    assert all(k["injected"] == k["caught"] > 0 for k in body["kinds"]), body["kinds"]
    assert main(["cheats", "--games", "1", "--players", "6", "--seed", "2", "--mode", "hegemony", "--kinds",
                 "hidden_skill,careerist_not_made"]) == 0
    out = capsys.readouterr().out
    assert "in hegemony mode" in out and "OK: 0 missed, 0 false positive(s)" in out
    assert main(["cheats", "--mode", "hegemony", "--kinds", "wrong_winner"]) == 2  # an identity-only kind
    assert main(["cheats", "--mode", "hegemony", "--generals"]) == 2
