"""Several consistent cheats in one game: `sgs-verify cheats --consistent --cheats-per-game K`.

Up to K bots cheat once each, one in each of K spans of the honest game's turns, and the engine
carries every cheat out while the game goes on (clients/cheats/selfplay.py). Verification must
report each cheat at its own event with its code and nothing else: a violation may neither hide
the next one nor leave anything behind.
"""

from __future__ import annotations

import json
from functools import cache

import pytest

from clients.cheats.selfplay import (
    CONSISTENT_KINDS,
    CheatingGame,
    PlacedCheat,
    Spans,
    honest_turns,
    judge,
    judge_each,
    play_cheating_game,
)
from clients.cli import main
from clients.commands.cheats import ConsistentReport, check_consistent, run_consistent
from clients.selfplay import play_game
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify

KIND = {k.name: k for k in CONSISTENT_KINDS}


@cache
def three_per_game(deck: str) -> ConsistentReport:
    """Two 8-player games per deck, played once per kind for three cheats each."""
    if deck == "maneuvering":
        return run_consistent(2, (8,), 20, packages=("maneuvering",), cheats=3)
    return run_consistent(2, (8,), 1, generals=deck == "generals", cheats=3)


@pytest.mark.parametrize("deck", ["standard", "maneuvering", "generals"])
def test_every_cheat_of_every_game_is_caught_at_its_event_with_no_collateral(deck: str) -> None:
    report = three_per_game(deck)
    assert report.failures == [], report.failures[:5]
    for name, t in report.tallies.items():
        assert (t.caught, t.other_code, t.missed, t.collateral) == (t.injected, 0, 0, 0), (name, t)
        assert sum(report.placed[name]) == t.played == 2, name  # every game counted once, by cheats placed
        assert t.injected == sum(n * games for n, games in enumerate(report.placed[name])), name
    assert report.ok
    assert sum(games[3] for games in report.placed.values()) > 0  # some games got all three


def test_three_cheats_by_three_seats_one_per_span_far_apart() -> None:
    game = play_cheating_game(1, 8, KIND["second_slash"], cheats=3)
    spans = Spans(3, honest_turns(1, 8))
    cheats = game.cheats
    assert len(cheats) == 3 and game.wanted == 3
    assert len({c.seat for c in cheats}) == 3  # different bots
    assert [spans.of(c.turn) for c in cheats] == [0, 1, 2]  # one per span
    assert [c.turn for c in cheats] == [1, 16, 44]  # far apart
    replay = verify(game.log)
    flagged = [(a.index, [v.code for v in a.violations]) for a in replay.annotations if a.violations]
    assert flagged == [(c.index, ["SLASH_LIMIT"]) for c in cheats] and replay.followed
    assert [(j.verdict, j.collateral) for j in judge_each(game, replay)] == [("caught", [])] * 3
    # Before the first cheat the game is the honest one of the seed; it goes on to its end after the last.
    honest = play_game(1, 8)
    first = cheats[0].index
    assert game.log.events[:first] == honest.events[:first] and game.log.events[first] != honest.events[first]
    assert game.log.events[-1].HasField("game_over")


def test_spans_cut_the_honest_turns_and_the_last_takes_the_rest() -> None:
    spans = Spans(3, 30)
    assert [spans.of(t) for t in (0, 1, 10, 11, 20, 21, 30, 31, 99)] == [0, 0, 0, 1, 1, 2, 2, 2, 2]
    assert [Spans(3, 2).of(t) for t in (1, 2, 3)] == [0, 1, 2]  # fewer turns than spans
    assert {Spans().of(t) for t in range(50)} == {0}  # one span: the whole game
    with pytest.raises(ValueError):
        Spans(0, 10)


def test_same_seed_same_games_and_moments() -> None:
    kind = KIND["unowed_discard"]
    a = play_cheating_game(2, 8, kind, cheats=3)
    b = play_cheating_game(2, 8, kind, cheats=3, turns=honest_turns(2, 8))
    assert a.log.SerializeToString(deterministic=True) == b.log.SerializeToString(deterministic=True)
    assert a.cheats == b.cheats and a.cheats
    assert check_consistent(2, 5, ["short_discard", "skipped_discard"], cheats=2) == \
        check_consistent(2, 5, ["short_discard", "skipped_discard"], cheats=2)
    # One cheat per game is the game it always was.
    one = play_cheating_game(2, 8, kind)
    assert play_cheating_game(2, 8, kind, cheats=1).log == one.log and len(one.cheats) == 1


def fake_game(kind: str, *cheats: tuple[int, bool]) -> CheatingGame:
    return CheatingGame(1, 8, KIND[kind], pb.GameLog(),
                        [PlacedCheat(i, d, f"cheat at {i}", seat, 0) for seat, (i, d) in enumerate(cheats)],
                        wanted=len(cheats))


def replay_with(*flags: tuple[int, bool, list[str]], stopped_at: int | None = None,
                header: tuple[str, ...] = ()) -> apb.AnnotatedReplay:
    replay = apb.AnnotatedReplay(followed=stopped_at is None)
    for index, derived, codes in flags:
        a = replay.annotations.add(index=index, derived=derived)
        for code in codes:
            a.violations.add(code=code)
    for code in header:
        replay.header_violations.add(code=code)
    if stopped_at is not None:
        replay.stopped_at = stopped_at
    return replay


def test_judging_charges_each_violation_to_the_latest_cheat_before_it() -> None:
    # Three discard cheats: at event 10, derived before event 20 (a skipped discard), at event 30.
    game = fake_game("short_discard", (10, False), (20, True), (30, False))
    replay = replay_with(
        (5, False, ["UNEXPECTED_OUTCOME"]),   # before any cheat: the first one's
        (10, False, ["HAND_LIMIT"]),          # cheat 1, caught
        (15, False, ["WRONG_TIMING"]),        # after cheat 1: its collateral
        (20, False, ["HAND_LIMIT"]),          # event 20 comes after the derived annotation of cheat 2: not it
        (30, False, ["HAND_LIMIT", "DAMAGE_MISMATCH"]),  # cheat 3, caught, and one more there
        header=("PLAYER_COUNT",), stopped_at=33)
    each = judge_each(game, replay)
    assert [(j.verdict, j.collateral) for j in each] == [
        ("caught", ["5:UNEXPECTED_OUTCOME", "15:WRONG_TIMING", "PLAYER_COUNT"]),
        ("other_code", ["20:HAND_LIMIT"]),
        ("caught", ["30:DAMAGE_MISMATCH", "NOT_FOLLOWED@33"]),
    ]
    assert judge(game, replay).verdict == "other_code" and len(judge(game, replay).collateral) == 6
    # A derived annotation at 20 is cheat 2's own place; a cheat with nothing charged to it is missed.
    replay = replay_with((10, False, ["HAND_LIMIT"]), (20, True, ["HAND_LIMIT"]))
    assert [j.verdict for j in judge_each(game, replay)] == ["caught", "caught", "missed"]
    assert judge(game, replay).verdict == "missed"
    one = fake_game("short_discard", (10, False))  # one cheat: everything is its collateral, as always
    assert judge_each(one, replay_with((3, False, ["X"]), (10, False, ["HAND_LIMIT"]), (40, True, ["Y"]))) == \
        [judge(one, replay_with((3, False, ["X"]), (10, False, ["HAND_LIMIT"]), (40, True, ["Y"])))]


def test_cli_cheats_per_game(capsys: pytest.CaptureFixture[str]) -> None:
    small = ["cheats", "--consistent", "--games", "2", "--players", "8", "--seed", "1", "--kinds",
             "second_slash,unowed_discard"]
    assert main([*small, "--cheats-per-game", "3"]) == 0
    out = capsys.readouterr().out
    assert "up to 3 bots cheating once each" in out and "placed 0/1/2/3" in out
    assert "0 other code, 0 missed, 0 collateral violation(s)" in out
    assert main([*small, "--cheats-per-game", "2", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is True and body["cheats_per_game"] == 2
    for k in body["kinds"]:
        assert len(k["placed"]) == 3 and sum(k["placed"]) == k["played"] == 2
        assert k["injected"] == k["caught"] == sum(n * games for n, games in enumerate(k["placed"]))
    assert [(g["seed"], g["players"]) for g in body["placed_per_game"]] == [(1, 8), (2, 8)]
    assert all(set(g["placed"]) == {"second_slash", "unowed_discard"} for g in body["placed_per_game"])
    # One per game is the report it always was (no placed counts).
    assert main([*small, "--cheats-per-game", "1", "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert "cheats_per_game" not in one and "placed" not in one["kinds"][0]
    for bad in (["--cheats-per-game", "0"], ["--cheats-per-game", "-2"]):
        assert main([*small, *bad]) == 2
        assert "--cheats-per-game must be at least 1" in capsys.readouterr().err
    assert main(["cheats", "--games", "1", "--cheats-per-game", "2"]) == 2  # only with --consistent
    with pytest.raises(ValueError):
        run_consistent(1, (5,), 1, cheats=0)
