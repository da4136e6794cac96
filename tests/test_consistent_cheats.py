"""Consistent cheats, measured: a small version of `sgs-verify cheats --consistent`.

A bot makes one illegal decision the engine still applies and the game goes on from it
(clients/cheats/selfplay.py). Verifying such a log must report the cheat's code at the
cheat's event and nothing else: the verifier applies the same decision, so everything after
it matches. The seeds are chosen so that every kind is injected at least once.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from clients.cheats.mutator import find_mutations
from clients.cheats.selfplay import (
    CONSISTENT_KINDS,
    SLASHES,
    ConsistentKind,
    illegal_use,
    judge,
    play_cheating_game,
)
from clients.cli import main
from clients.commands.cheats import ConsistentReport, run_consistent
from clients.selfplay import play_game
from clients.selfplay.base import BotError
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify

KIND = {k.name: k for k in CONSISTENT_KINDS}
MANEUVERING_KINDS = {k.name for k in CONSISTENT_KINDS if "maneuvering" in k.packages}


@cache
def standard_report() -> ConsistentReport:
    """Seeds 18-23 with 5 and 8 players: every kind of the standard deck finds a place (two 乐不思蜀 on one
    character among them)."""
    return run_consistent(6, (5, 8), 18)


@cache
def maneuvering_report() -> ConsistentReport:
    """The 160-card deck, seeds 20-22 with 8 players: a second 酒 in one turn and a 兵粮寸断 too far too."""
    return run_consistent(3, (8,), 20, packages=("maneuvering",))


@cache
def generals_report() -> ConsistentReport:
    """With the standard generals (their skills in play around the cheat)."""
    return run_consistent(3, (6,), 1, generals=True)


def report_for(deck: str) -> ConsistentReport:
    return {"standard": standard_report, "maneuvering": maneuvering_report, "generals": generals_report}[deck]()


def describe(report: ConsistentReport) -> str:
    return "\n".join(f"{f.verdict} {f.kind} seed {f.seed} p{f.players} @{f.index}{'d' if f.derived else ''}: "
                     f"{f.note}; expected {f.code}, collateral {f.collateral}" for f in report.failures[:20])


@pytest.mark.parametrize("deck", ["standard", "maneuvering", "generals"])
def test_every_cheat_is_caught_at_its_event_and_nothing_else_is_reported(deck: str) -> None:
    report = report_for(deck)
    assert report.failures == [], describe(report)
    for name, t in report.tallies.items():
        assert (t.caught, t.other_code, t.missed, t.collateral) == (t.injected, 0, 0, 0), (name, t)
    assert report.ok


def test_every_kind_is_injected() -> None:
    standard, maneuvering = standard_report(), maneuvering_report()
    assert set(standard.unplayable) == MANEUVERING_KINDS  # (no 酒 or 兵粮寸断 in the standard deck)
    assert set(maneuvering.tallies) == set(KIND)
    for name in KIND:
        injected = maneuvering.tallies[name].injected
        if name not in MANEUVERING_KINDS:
            assert standard.tallies[name].injected > 0, name
            injected += standard.tallies[name].injected
        assert injected > 0, name
    # The kinds asked for: at least second 杀, 杀 out of range, 桃 at full HP and a too-short discard.
    assert {"second_slash", "slash_out_of_range", "peach_at_full_hp", "short_discard"} <= set(KIND)


def test_the_game_is_the_honest_one_up_to_the_cheat_and_goes_on_from_it() -> None:
    """The moment comes from the seed's cheat stream; before it the honest bot played as in plain self-play."""
    honest = play_game(19, 8)
    for name in ("second_slash", "slash_out_of_range", "peach_at_full_hp", "short_discard"):
        game = play_cheating_game(19, 8, KIND[name])
        assert game.index is not None and not game.derived, name
        i = game.index
        assert game.log.events[:i] == honest.events[:i], name
        assert game.log.events[i] != honest.events[i], name
        assert game.log.events[-1].HasField("game_over"), name  # the game was played to its end
        again = play_cheating_game(19, 8, KIND[name])  # deterministic
        assert again.log.SerializeToString(deterministic=True) == game.log.SerializeToString(deterministic=True)
        assert again.index == i


def test_a_skipped_discard_is_reported_where_the_log_goes_on_without_it() -> None:
    game = play_cheating_game(16, 8, KIND["skipped_discard"])
    assert game.index is not None and game.derived
    before = game.log.events[game.index - 1]
    assert before.HasField("phase_start") and before.phase_start.phase == pb.PHASE_DISCARD
    assert not game.log.events[game.index].HasField("choose_cards")
    replay = verify(game.log)
    flagged = [(a.index, a.derived, [v.code for v in a.violations]) for a in replay.annotations if a.violations]
    assert flagged == [(game.index, True, ["HAND_LIMIT"])]


def test_a_mutated_copy_is_noisy_where_the_played_cheat_is_not() -> None:
    """Why this measure exists: a second 杀 spliced into a finished log leaves the rest of the log the game
    without it (collateral violations); the same cheat played through the engine leaves none."""
    log = play_game(18, 8)
    spliced = find_mutations(log, per_kind=1)["second_slash"][0]
    replay = verify(spliced.apply(log))
    assert spliced.caught(replay) and replay.violation_count > 1
    game = play_cheating_game(18, 8, KIND["second_slash"])
    replay = verify(game.log)
    assert judge(game, replay).collateral == [] and replay.violation_codes == ["SLASH_LIMIT"]


@pytest.mark.parametrize(("name", "kind", "code"), [("stacked_draw", "draw_cards", "DRAW_NOT_TOP"),
                                               ("extra_draw", "draw_cards", "DRAW_COUNT"),
                                               ("wrong_judgment", "judgment", "JUDGMENT_MISMATCH")])
def test_a_made_up_outcome_the_game_went_on_from_is_adopted(name: str, kind: str, code: str) -> None:
    """A client that stacks its draw or changes a judgment records the game that followed from it: the
    verifier flags the outcome once, adopts it (the hand, the judgment card the players had), and finds
    nothing else, where the same outcome spliced into the honest game leaves the rest at odds with it."""
    game = play_cheating_game(19, 8, KIND[name])
    assert game.index is not None and not game.derived
    honest = play_game(19, 8)
    i = game.index
    assert game.log.events[i].HasField(kind) and game.log.events[:i] == honest.events[:i]
    replay = verify(game.log)
    flagged = [(a.index, [(v.code, v.handling) for v in a.violations]) for a in replay.annotations if a.violations]
    assert flagged == [(i, [(code, apb.HANDLING_ADOPTED)])]
    (at,) = (a for a in replay.annotations if a.index == i and not a.derived)
    assert replay.followed and "adopted" in at.violations[0].message


def test_judge_counts_collateral_and_misses() -> None:
    game = play_cheating_game(20, 8, KIND["peach_at_full_hp"])
    assert game.index is not None
    clean = judge(game, verify(game.log))
    assert (clean.verdict, clean.collateral) == ("caught", [])
    cut = pb.GameLog()
    cut.CopyFrom(game.log)
    del cut.events[-1]  # the game_over a complete log must record
    cut_judged = judge(game, verify(cut))
    assert cut_judged.verdict == "caught" and cut_judged.collateral == [f"{len(cut.events)}d:MISSING_OUTCOME"]
    honest = judge(game, verify(play_game(20, 8)))  # no cheat in it: nothing at the cheat's event
    assert (honest.verdict, honest.collateral) == ("missed", [])


def test_the_engine_must_flag_the_cheat_and_only_it() -> None:
    """A kind whose decision the engine flags with another code is a bug in the cheating bot, not a result."""
    wrong = ConsistentKind("mislabelled", "PEACH_FULL_HP", "a second 杀 claimed as 桃 at full HP",
                           illegal_use(SLASHES, "SLASH_LIMIT"))
    with pytest.raises(BotError, match="SLASH_LIMIT"):
        play_cheating_game(18, 8, wrong, percent=100)


def test_cli_table_json_list_and_exit_status(capsys: pytest.CaptureFixture[str]) -> None:
    small = ["cheats", "--consistent", "--games", "2", "--players", "5", "--seed", "18"]
    assert main([*small, "--kinds", "second_slash,skipped_discard,second_analeptic"]) == 0
    out = capsys.readouterr().out
    assert "collateral" in out and "second_slash" in out and "(needs --packages maneuvering)" in out
    assert "OK: 4 of 4 caught at their event, 0 other code, 0 missed, 0 collateral violation(s)" in out
    assert main([*small, "--kinds", "short_discard", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is True and body["consistent"] is True and [k["kind"] for k in body["kinds"]] == ["short_discard"]
    assert body["kinds"][0]["injected"] == body["kinds"][0]["caught"] > 0 and body["kinds"][0]["collateral"] == 0
    assert main(["cheats", "--consistent", "--list"]) == 0
    assert set(capsys.readouterr().out.split()) >= set(KIND)
    assert main(["cheats", "--consistent", "--kinds", "card_not_in_hand"]) == 2  # a mutator kind: not played
