"""Every cell of the fourth-edition scoring table, every personal bonus and every scoring ruling
(docs/rules.md#scoring), with exact values computed by hand in each case.

Each case is an end of game built from a header's roles: the deaths in order, each with its killer (None:
no killer), applied to a fresh identity game; the mode's own victory check must end the game at the last
death (or, for a draw, the core's draw), and the scores are the mode's. The real games behind the same rules
are the scenarios in tests/scenarios/scoring/.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import Game, GameEnded
from verifier.packages.modes import identity, scoring
from verifier.replay import default_ruleset

L, Y, R, S = pb.ROLE_LORD, pb.ROLE_LOYALIST, pb.ROLE_REBEL, pb.ROLE_SPY


def game_with(roles: Sequence[int]) -> Game:
    header = pb.GameHeader(ruleset="identity/1", mode=pb.MODE_IDENTITY, seed=1)
    header.options.generals = pb.GENERALS_MODE_WHITE
    if len(roles) in (6, 8) and list(roles).count(S) == 2:
        header.options.role_variant = pb.ROLE_VARIANT_TWO_SPIES
    for role in roles:
        header.seats.add(role=role)
    return identity.new_game(header, default_ruleset(header))


def play_out(roles: Sequence[int], deaths: Sequence[tuple[int, int | None]]) -> tuple[GameEnded, list[int]]:
    """Apply the deaths in order; the game must end exactly at the last one. The end and the scores."""
    game = game_with(roles)
    return end_of(game, deaths)


def end_of(game: Game, deaths: Sequence[tuple[int, int | None]]) -> tuple[GameEnded, list[int]]:
    for k, (victim, killer) in enumerate(deaths):
        game.players[victim].alive = False
        death = pb.Death(seat=victim)
        if killer is not None:
            death.killer = killer
        game.mode.fill_death(game, victim, death)  # as Game.die does: the mode notes the death
        try:
            game.mode.check_victory(game, victim)
        except GameEnded as end:
            assert k == len(deaths) - 1, f"the game ended early, at death {k}"
            game.finish(end)
            return end, [s.score for s in end.scores]
    raise AssertionError("the deaths do not end the game")


def scores(roles: Sequence[int], deaths: Sequence[tuple[int, int | None]], side: int) -> list[int]:
    end, found = play_out(roles, deaths)
    assert end.side == side
    return found


# ---------------------------------------------------------------------------------------- the lord's side wins

def test_lord_side_lord_and_loyalists_with_living_counts_and_bonuses() -> None:
    # 7 players: lord 0, loyalists 1 and 2, rebels 3-5, spy 6. Rebel 3 kills loyalist 2; loyalist 1 kills rebel 3
    # and the spy; the lord kills rebel 4; rebel 5 dies with no killer. Alive at the end: lord, loyalist 1.
    roles = [L, Y, Y, R, R, R, S]
    got = scores(roles, [(2, 3), (3, 1), (4, 0), (5, None), (6, 1)], pb.SIDE_LORD)
    # lord 4 + 2×1 = 6, +1 rebel 4 = 7; loyalist 1: 5 + 1 = 6, +1 rebel 3, +1 spy = 8; loyalist 2 (dead): 5 + 1 = 6;
    # rebel 3: 0, +1 for loyalist 2 (a rebel's bonus counts whoever wins) = 1; rebels 4, 5: 0; the spy died with
    # the loyalist alive (no final one-on-one): 0.
    assert got == [7, 8, 6, 1, 0, 0, 0]


def test_lord_side_no_living_loyalist() -> None:
    # 5 players: lord 0, loyalist 1, rebels 2-3, spy 4. A rebel kills the loyalist, the lord the others, the spy last.
    got = scores([L, Y, R, R, S], [(1, 2), (2, 0), (3, 0), (4, 0)], pb.SIDE_LORD)
    # lord 4 + 2×0 = 4, +3 kills = 7; loyalist 5 + 0 = 5; rebel 2: +1 for the loyalist; rebel 3: 0;
    # the spy lost the final one-on-one: N = 5.
    assert got == [7, 5, 1, 0, 5]


def test_final_one_on_one_needs_the_lord_alone() -> None:
    # The spy dies last but a loyalist is still alive: no final one-on-one (S-3).
    got = scores([L, Y, R, S], [(2, 1), (3, 0)], pb.SIDE_LORD)
    assert got == [4 + 2 + 1, 5 + 1 + 1, 0, 0]


def test_final_one_on_one_whoever_kills_the_spy() -> None:
    # S-3 asks only that the spy died while it and the lord were the only living characters: a death with no killer
    # (闪电) counts, and the lord gets no bonus for it.
    got = scores([L, Y, R, S], [(1, 2), (2, 0), (3, None)], pb.SIDE_LORD)
    assert got == [4 + 1, 5, 1, 4]


def test_two_spies_only_the_last_loses_the_final_one_on_one() -> None:
    # 8 players, two spies (6, 7): everyone but the lord dies; spy 6 dies with spy 7 alive, spy 7 last.
    roles = [L, Y, Y, R, R, R, S, S]
    got = scores(roles, [(1, 3), (2, 3), (3, 0), (4, 0), (5, 0), (6, 0), (7, 0)], pb.SIDE_LORD)
    # lord 4 + 0 + 5 kills = 9; loyalists 5 each; rebel 3: +2 (two loyalists); spy 6: 0; spy 7: N = 8.
    assert got == [9, 5, 5, 2, 0, 0, 0, 8]


# ---------------------------------------------------------------------------------------- the rebels win

def test_rebels_win_living_rebels_and_the_lord_bonus() -> None:
    # 5 players: rebel 2 kills the spy, rebel 3 the loyalist, rebel 2 the lord; both rebels alive.
    got = scores([L, Y, R, R, S], [(4, 2), (1, 3), (0, 2)], pb.SIDE_REBELS)
    # rebels 3 × 2 = 6; rebel 2 +1 spy +2 lord = 9; rebel 3 +1 loyalist = 7; lord, loyalist, dead spy 0.
    assert got == [0, 0, 9, 7, 0]


def test_rebels_win_dead_rebels_and_a_living_spy() -> None:
    # The loyalist kills rebel 2 (no bonus: its side lost); rebel 3 kills the lord: 3 × 1 living rebel + 2.
    # The spy is alive: 1.
    got = scores([L, Y, R, R, S], [(2, 1), (0, 3)], pb.SIDE_REBELS)
    assert got == [0, 0, 3, 3 + 2, 1]


def test_rebels_win_when_a_loyalist_kills_the_lord() -> None:
    # The lord killed by its own loyalist: the rebels win; nobody gets the +2 (only a rebel killer does).
    got = scores([L, Y, R, S], [(0, 1)], pb.SIDE_REBELS)
    assert got == [0, 0, 3, 1]


def test_rebels_win_spy_dead_scores_zero() -> None:
    got = scores([L, Y, R, S], [(3, 2), (0, 2)], pb.SIDE_REBELS)
    assert got == [0, 0, 3 + 1 + 2, 0]


def test_rebels_win_losing_lord_and_loyalist_get_no_bonus() -> None:
    # The lord kills a rebel and the loyalist the spy, but the rebels win: their kills earn nothing.
    got = scores([L, Y, R, R, S], [(2, 0), (4, 1), (0, 3)], pb.SIDE_REBELS)
    assert got == [0, 0, 3, 3 + 2, 0]


# ---------------------------------------------------------------------------------------- the spy wins

def test_spy_wins() -> None:
    # 5 players: the spy kills everyone, the lord last.
    got = scores([L, Y, R, R, S], [(1, 4), (2, 4), (3, 4), (0, 4)], pb.SIDE_SPY)
    # spy 4 + 2 × 5 = 14 (no kill bonus for a spy); lord 1; loyalist 0 (S-1); rebels 0.
    assert got == [1, 0, 0, 0, 14]


def test_spy_wins_rebel_bonus_counts_lord_bonus_does_not() -> None:
    # Rebel 2 kills the loyalist, the lord kills rebel 2, the spy kills the lord and is the sole survivor. A
    # rebel's bonus counts whoever wins (+1); the lord's does not (its side lost): it scores 1.
    got = scores([L, Y, R, S], [(1, 2), (2, 0), (0, 3)], pb.SIDE_SPY)
    assert got == [1, 0, 0 + 1, 4 + 2 * 4]


def test_two_spies_the_lone_spy_wins_the_other_scores_as_a_loser() -> None:
    # 6 players, two spies (4, 5): spy 5 kills rebels and loyalist, then spy 4; then the lord: spy 5 wins (S-5).
    got = scores([L, Y, R, R, S, S], [(1, 5), (2, 5), (3, 5), (4, 5), (0, 5)], pb.SIDE_SPY)
    assert got == [1, 0, 0, 0, 0, 4 + 2 * 6]


def test_two_spies_alive_when_the_lord_dies_rebels_win() -> None:
    got = scores([L, Y, R, R, S, S], [(1, 4), (2, 4), (3, 4), (0, 4)], pb.SIDE_REBELS)
    assert got == [0, 0, 0, 0, 1, 1]


# ---------------------------------------------------------------------------------------- kills, draws

def test_kills_with_no_killer_or_by_oneself_earn_nothing() -> None:
    got = scores([L, Y, R, S], [(2, 2), (3, None)], pb.SIDE_LORD)
    assert got == [4 + 2, 5 + 1, 0, 0]


def test_a_kill_by_a_killer_already_dead_counts() -> None:
    # Loyalist 1 is dead when damage it dealt kills rebel 2 (S-7): the kill is still its.
    got = scores([L, Y, R, S], [(1, 3), (2, 1), (3, 0)], pb.SIDE_LORD)
    assert got == [4 + 1, 5 + 1, 0, 4]


def test_draw_scores_zero_for_everyone() -> None:
    game = game_with([L, Y, R, S])
    game.players[2].alive = False
    scoring.note_death(game, 2, 0)
    end = GameEnded(pb.SIDE_NONE, [], "draw game")
    game.finish(end)
    assert [s.score for s in end.scores] == [0, 0, 0, 0]
    assert all(s.basis == "draw game: 0" for s in end.scores)


@pytest.mark.parametrize(("role", "side", "cell"), [
    (L, pb.SIDE_LORD, scoring.Cell(base=4, per_loyalist=2)), (L, pb.SIDE_REBELS, None),
    (L, pb.SIDE_SPY, scoring.Cell(1)),
    (Y, pb.SIDE_LORD, scoring.Cell(base=5, per_loyalist=1)), (Y, pb.SIDE_REBELS, None), (Y, pb.SIDE_SPY, None),
    (R, pb.SIDE_LORD, None), (R, pb.SIDE_REBELS, scoring.Cell(per_rebel=3)), (R, pb.SIDE_SPY, None),
    (S, pb.SIDE_LORD, scoring.Cell(per_player=1, condition="lost_final_duel")),
    (S, pb.SIDE_REBELS, scoring.Cell(base=1, condition="alive")),
    (S, pb.SIDE_SPY, scoring.Cell(base=4, per_player=2, condition="lone_spy")),
])
def test_the_table_is_the_rule_books(role: int, side: int, cell: scoring.Cell | None) -> None:
    """The data table, cell by cell, as docs/rules.md#scoring-table prints it (None: 0)."""
    assert scoring.TABLE.get((role, side)) == cell


def test_basis_explains_the_score() -> None:
    end, _ = play_out([L, Y, R, S], [(2, 1), (3, 0)])
    assert [s.basis for s in end.scores] == [
        "the lord's side won: lord: 4 + 2 × 1 living loyalist = 6; +1 for killing spy seat 3 → 7",
        "the lord's side won: loyalist: 5 + 1 × 1 living loyalist = 6; +1 for killing rebel seat 2 → 7",
        "the lord's side won: rebel: 0",
        "the lord's side won: spy, not the loser of a final one-on-one with the lord: 0",
    ]


def test_regression_runs_compare_scores_only_where_the_stored_verdict_has_them() -> None:
    from clients.selfplay import play_game
    from service.regress import compare
    from sgsverify.v1 import annotation_pb2 as apb
    from verifier import verify

    now = verify(play_game(3, 6))
    assert now.result.finished and now.result.scores
    assert not compare("r", now, now).changed
    before_scoring = apb.AnnotatedReplay()
    before_scoring.CopyFrom(now)
    del before_scoring.result.scores[:]  # a verdict stored by an engine without scores: not a change
    assert not compare("r", before_scoring, now).changed
    other = apb.AnnotatedReplay()
    other.CopyFrom(now)
    other.result.scores[0].score += 1
    report = compare("r", other, now)
    assert report.changed and report.scores_changed and not report.winner_changed
    assert report.stored_scores[0] == now.result.scores[0].score + 1
    assert list(report.new_scores) == [s.score for s in now.result.scores]


def test_scores_recorded_for_a_game_that_is_not_scored() -> None:
    """Hegemony has no scoring: a recorded score is SCORE_MISMATCH (ignored), the end itself stays judged."""
    from clients.selfplay import play_game
    from sgsverify.v1 import annotation_pb2 as apb
    from verifier import verify

    log = play_game(1, 5, mode=pb.MODE_HEGEMONY)
    last = len(log.events) - 1
    assert log.events[last].WhichOneof("kind") == "game_over"
    log.events[last].game_over.scores.extend([1] * 5)
    replay = verify(log)
    assert not replay.result.scores
    [ann] = [a for a in replay.annotations if a.violations]
    assert ann.index == last and [v.code for v in ann.violations] == ["SCORE_MISMATCH"]
    assert ann.violations[0].handling == apb.HANDLING_IGNORED and "not scored" in ann.violations[0].message


def test_recorded_scores_change_no_digest() -> None:
    """Scores are not part of the state: the same game with and without recorded scores has the same digests."""
    from clients.selfplay import play_game
    from verifier import verify

    log = play_game(4, 6)  # (self-play records the scores)
    assert log.events[-1].game_over.scores
    scored = verify(log)
    log.events[-1].game_over.ClearField("scores")
    plain = verify(log)
    assert scored.violation_count == 0 and plain.violation_count == 0
    assert [a.digest for a in scored.annotations] == [a.digest for a in plain.annotations]
    assert scored.final_digest == plain.final_digest


def test_rebirth_reborn_characters_count_as_dead_and_give_no_bonus() -> None:
    """The rebirth variant (docs/rules.md#rebirth): a reborn character is alive for nothing in the scores (S-9) —
    not in the living counts, not for a spy's "alive" — and its death again earns its killer nothing (S-10)."""
    from verifier.packages.modes.rebirth import RebirthMode

    header = pb.GameHeader(ruleset="identity/1", mode=pb.MODE_IDENTITY, seed=1)
    header.options.generals = pb.GENERALS_MODE_STANDARD
    header.options.rebirth = True
    generals = ["liubei", "guanyu", "zhangfei", "zhaoyun", "machao", "caocao", "zhugeliang"]
    for role, general in zip([L, Y, Y, R, R, R, S], generals, strict=True):
        header.seats.add(role=role, general=general)
    game = identity.new_game(header, default_ruleset(header))
    mode = game.mode
    assert isinstance(mode, RebirthMode)

    def die(victim: int, killer: int) -> None:
        game.players[victim].alive = False
        mode.fill_death(game, victim, pb.Death(seat=victim, killer=killer))
        mode.check_victory(game, victim)  # the game goes on

    def reborn(seat: int) -> None:
        mode.reborn.setdefault(seat, []).append(game.players[seat].general)
        game.revive(seat)

    # Rebel 3 kills loyalist 1 (+1), who is reborn; rebel 4 kills it again (no bonus: it was reborn). Loyalist 2
    # kills rebel 3, who is reborn, then rebel 5 and the spy; the lord kills rebel 4: the lord's side wins, with
    # rebel 3 reborn and alive (dead for victory and for the scores).
    die(1, 3)
    reborn(1)
    die(1, 4)
    die(3, 2)
    reborn(3)
    die(5, 2)
    die(6, 2)
    end, got = end_of(game, [(4, 0)])
    assert end.side == pb.SIDE_LORD
    # lord 4 + 2 × 1 living loyalist (loyalist 2) = 6, +1 rebel 4 = 7; loyalist 1 (dead) 5 + 1 = 6; loyalist 2
    # 5 + 1 = 6, +1 rebel 3, +1 rebel 5, +1 spy = 9; rebel 3 +1 for loyalist 1 (before its rebirth) = 1; rebel 4: 0
    # (its kill was of a reborn loyalist); rebel 5: 0; the spy died with others alive: 0.
    assert got == [7, 6, 9, 1, 0, 0, 0]


@pytest.mark.parametrize("players", [4, 5, 8, 10])
def test_self_play_records_the_rules_scores_and_a_changed_one_is_caught(players: int) -> None:
    """Self-play games record their scores in GameOver, as a scoring client would: they verify clean, and
    the same game with one seat's score changed is SCORE_MISMATCH at the GameOver (the rules' scores stand)."""
    from clients.selfplay import play_game
    from verifier import verify

    log = play_game(7100 + players, players)
    end = log.events[-1].game_over
    assert len(end.scores) == players
    replay = verify(log)
    assert replay.violation_count == 0
    assert [s.score for s in replay.result.scores] == list(end.scores)
    end.scores[0] += 1
    wrong = verify(log)
    assert list(wrong.violation_codes) == ["SCORE_MISMATCH"]
    flagged = [a for a in wrong.annotations if a.violations]
    assert [a.index for a in flagged] == [len(log.events) - 1]
    assert [s.score for s in wrong.result.scores] == [s.score for s in replay.result.scores]
