"""The pairing rules of recorded outcomes (docs/log-format.md#outcomes, #move-order; verifier/pairing.py's
docstring numbers them), one test per rule."""

from __future__ import annotations

from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import Game, Outcome, Violation
from verifier.packages.modes.identity import IdentityMode
from verifier.pairing import (
    left_out_code,
    mismatch,
    outcome_key,
    paired,
    rules_outcome_of_kind,
    same_moved_cards,
    same_outcome,
    unexpected,
    unpaired,
)
from verifier.replay import default_ruleset, verify
from verifier.setup import new_game


def draw(seat: int, reason: int, cards: list[int]) -> pb.Event:
    return pb.Event(draw_cards=pb.DrawCards(seat=seat, cards=cards, reason=reason))  # type: ignore[arg-type]


def move(cards: list[int], from_seat: int | None, from_zone: int, reason: int, to_zone: int = pb.ZONE_DISCARD_PILE
         ) -> pb.CardsMoved:
    m = pb.CardsMoved(cards=cards, from_zone=from_zone, to_zone=to_zone, reason=reason)  # type: ignore[arg-type]
    if from_seat is not None:
        m.from_seat = from_seat
    return m


def test_a_draw_is_about_its_seat_and_reason() -> None:
    half_fish = draw(0, pb.DRAW_REASON_HALF_FISH, [296])
    assert outcome_key(half_fish, "draw_cards") != outcome_key(draw(0, pb.DRAW_REASON_DRAW_PHASE, [296, 297]),
                                                               "draw_cards")
    assert outcome_key(draw(1, pb.DRAW_REASON_CARD_EFFECT, [1, 2]), "draw_cards") != outcome_key(
        draw(4, pb.DRAW_REASON_CARD_EFFECT, [1, 2]), "draw_cards")
    # (the cards are content: another count of the same draw is that draw's DRAW_COUNT)
    assert outcome_key(draw(0, pb.DRAW_REASON_DRAW_PHASE, [1, 2, 3]), "draw_cards") == outcome_key(
        draw(0, pb.DRAW_REASON_DRAW_PHASE, [1, 2]), "draw_cards")


def test_a_move_is_about_its_reason_and_where_the_cards_come_from() -> None:
    def key(m: pb.CardsMoved) -> tuple[int, ...]:
        return outcome_key(pb.Event(cards_moved=m), "cards_moved")

    death2 = move([1], 2, pb.ZONE_HAND, pb.MOVE_REASON_DEATH)
    assert key(death2) != key(move([1], 3, pb.ZONE_HAND, pb.MOVE_REASON_DEATH))
    assert key(death2) != key(move([1], 2, pb.ZONE_EQUIPMENT, pb.MOVE_REASON_DEATH))
    assert key(death2) != key(move([1], 2, pb.ZONE_HAND, pb.MOVE_REASON_KILL_PENALTY))
    assert key(death2) == key(move([5, 6], 2, pb.ZONE_HAND, pb.MOVE_REASON_DEATH))


def test_a_move_is_a_set_of_cards() -> None:
    rules = move([29, 32], 0, pb.ZONE_EQUIPMENT, pb.MOVE_REASON_KILL_PENALTY)
    assert same_moved_cards(rules, move([32, 29], 0, pb.ZONE_EQUIPMENT, pb.MOVE_REASON_KILL_PENALTY))
    assert not same_moved_cards(rules, move([32, 32], 0, pb.ZONE_EQUIPMENT, pb.MOVE_REASON_KILL_PENALTY))
    assert not same_moved_cards(rules, move([32], 0, pb.ZONE_EQUIPMENT, pb.MOVE_REASON_KILL_PENALTY))
    assert not same_moved_cards(rules, move([32, 29], 0, pb.ZONE_HAND, pb.MOVE_REASON_KILL_PENALTY))
    assert not same_moved_cards(rules, move([32, 29], 0, pb.ZONE_EQUIPMENT, pb.MOVE_REASON_KILL_PENALTY,
                                            to_zone=pb.ZONE_HAND))


def test_a_move_from_or_to_the_draw_pile_keeps_its_order() -> None:
    rules = pb.CardsMoved(cards=[7, 8], from_zone=pb.ZONE_DRAW_PILE, to_seat=1, to_zone=pb.ZONE_GENERAL)
    assert not same_moved_cards(rules, pb.CardsMoved(cards=[8, 7], from_zone=pb.ZONE_DRAW_PILE, to_seat=1,
                                                     to_zone=pb.ZONE_GENERAL))
    back = pb.CardsMoved(cards=[7, 8], from_seat=1, from_zone=pb.ZONE_HAND, to_zone=pb.ZONE_DRAW_PILE)
    assert not same_moved_cards(back, pb.CardsMoved(cards=[8, 7], from_seat=1, from_zone=pb.ZONE_HAND,
                                                    to_zone=pb.ZONE_DRAW_PILE))


# ---------------------------------------------------------------- rule 1: identity, by kind


def test_damage_is_about_its_target_and_a_marker_about_its_seat_and_phase() -> None:
    def damage(target: int, amount: int, source: int | None = None) -> pb.Event:
        ev = pb.Event(damage=pb.Damage(target=target, amount=amount, hp_after=1))
        if source is not None:
            ev.damage.source = source
        return ev

    assert outcome_key(damage(2, 1), "damage") == outcome_key(damage(2, 3, source=1), "damage")
    assert outcome_key(damage(2, 1), "damage") != outcome_key(damage(3, 1), "damage")
    phase = pb.Event(phase_start=pb.PhaseStart(seat=1, phase=pb.PHASE_DRAW))
    assert outcome_key(phase, "phase_start") != outcome_key(
        pb.Event(phase_start=pb.PhaseStart(seat=1, phase=pb.PHASE_PLAY)), "phase_start")
    assert outcome_key(phase, "phase_start") != outcome_key(
        pb.Event(phase_start=pb.PhaseStart(seat=2, phase=pb.PHASE_DRAW)), "phase_start")
    for kind, one, other in [("recover", pb.Event(recover=pb.Recover(seat=1, amount=1)),
                              pb.Event(recover=pb.Recover(seat=2, amount=1))),
                             ("death", pb.Event(death=pb.Death(seat=1)), pb.Event(death=pb.Death(seat=2))),
                             ("turn_start", pb.Event(turn_start=pb.TurnStart(seat=0, turn=1)),
                              pb.Event(turn_start=pb.TurnStart(seat=1, turn=1)))]:
        assert outcome_key(one, kind) != outcome_key(other, kind), kind


def test_a_reshuffle_and_the_end_are_the_rules_one_at_that_point() -> None:
    assert outcome_key(pb.Event(reshuffle=pb.Reshuffle(order=[1, 2])), "reshuffle") == outcome_key(
        pb.Event(reshuffle=pb.Reshuffle(order=[2, 1])), "reshuffle") == ()
    assert outcome_key(pb.Event(game_over=pb.GameOver(winners=[0])), "game_over") == ()


# ---------------------------------------------------------------- rule 2: content is a mismatch of that outcome


def test_what_the_outcome_says_is_content_reported_as_its_mismatch() -> None:
    rules = Outcome(draw(0, pb.DRAW_REASON_DRAW_PHASE, [1, 2]), "DRAW_NOT_TOP")
    assert mismatch(rules, draw(0, pb.DRAW_REASON_DRAW_PHASE, [1, 2, 3]), "draw_cards").code == "DRAW_COUNT"
    assert mismatch(rules, draw(0, pb.DRAW_REASON_DRAW_PHASE, [1, 9]), "draw_cards").code == "DRAW_NOT_TOP"
    hit = Outcome(pb.Event(damage=pb.Damage(target=1, amount=1, hp_after=3)), "DAMAGE_MISMATCH")
    assert mismatch(hit, pb.Event(damage=pb.Damage(target=1, amount=2, hp_after=2)), "damage").code \
        == "DAMAGE_MISMATCH"
    assert mismatch(hit, pb.Event(damage=pb.Damage(target=1, amount=1, hp_after=2)), "damage").code == "HP_MISMATCH"


# ---------------------------------------------------------------- rule 3: which derived outcome


def test_a_recorded_outcome_pairs_with_the_first_equal_else_the_first_of_its_identity() -> None:
    other_seat = Outcome(draw(1, pb.DRAW_REASON_DRAW_PHASE, [5, 6]), "DRAW_NOT_TOP")
    first = Outcome(draw(0, pb.DRAW_REASON_DRAW_PHASE, [1, 2]), "DRAW_NOT_TOP")
    equal = Outcome(draw(0, pb.DRAW_REASON_DRAW_PHASE, [3, 4]), "DRAW_NOT_TOP")
    expected = [other_seat, first, equal]
    assert paired(expected, draw(0, pb.DRAW_REASON_DRAW_PHASE, [3, 4]), "draw_cards", None) == 2
    assert paired(expected, draw(0, pb.DRAW_REASON_DRAW_PHASE, [7]), "draw_cards", None) == 1
    assert paired(expected, draw(2, pb.DRAW_REASON_DRAW_PHASE, [5, 6]), "draw_cards", None) is None
    assert paired(expected, draw(0, pb.DRAW_REASON_CARD_EFFECT, [1, 2]), "draw_cards", None) is None


def test_a_recorded_reward_pairs_only_with_a_derived_reward() -> None:
    reward = draw(0, pb.DRAW_REASON_KILL_REWARD, [1, 2, 3])
    assert paired([Outcome(draw(0, pb.DRAW_REASON_KILL_REWARD, [4, 5, 6]), "KILL_REWARD")], reward, "draw_cards",
                  None) == 0
    # (a reward the rules do not owe is no wrong count of another draw, even an equal one)
    assert paired([Outcome(draw(0, pb.DRAW_REASON_DRAW_PHASE, [1, 2, 3]), "DRAW_NOT_TOP")], reward, "draw_cards",
                  None) is None


# ---------------------------------------------------------------- rule 4: equal outcomes


def four_players() -> Game:
    header = pb.GameHeader(ruleset="identity/1", mode=pb.MODE_IDENTITY, seed=7)
    header.options.generals = pb.GENERALS_MODE_WHITE
    for i in range(4):
        header.seats.add(player=f"p{i}")
    return new_game(header, default_ruleset(header))


def test_a_dead_source_may_be_recorded_as_none() -> None:
    game = four_players()
    rules = pb.Event(damage=pb.Damage(target=2, source=1, amount=1, hp_after=0))
    recorded = pb.Event(damage=pb.Damage(target=2, amount=1, hp_after=0))
    assert not same_outcome(rules, recorded, game)  # the source lives: leaving it out is another damage
    game.players[1].alive = False
    assert same_outcome(rules, recorded, game)
    killed = pb.Event(death=pb.Death(seat=2, killer=1))
    assert same_outcome(killed, pb.Event(death=pb.Death(seat=2)), game)
    assert not same_outcome(recorded, rules, game)  # (only the rules' source may be left out, not added)


# ---------------------------------------------------------------- rule 5: none is about it


def test_an_outcome_none_is_about_names_the_rules_one_only_for_markers_damage_and_claims() -> None:
    draw_phase = Outcome(pb.Event(phase_start=pb.PhaseStart(seat=0, phase=pb.PHASE_DRAW)), "TURN_MISMATCH")
    seat0_draw = Outcome(draw(0, pb.DRAW_REASON_DRAW_PHASE, [1, 2]), "DRAW_NOT_TOP")
    expected = [seat0_draw, draw_phase]
    play = pb.Event(phase_start=pb.PhaseStart(seat=0, phase=pb.PHASE_PLAY))
    assert rules_outcome_of_kind(expected, play, "phase_start") == 1
    assert rules_outcome_of_kind(expected, draw(3, pb.DRAW_REASON_DRAW_PHASE, [1, 2]), "draw_cards") is None
    reward = draw(0, pb.DRAW_REASON_KILL_REWARD, [1, 2, 3])
    assert rules_outcome_of_kind(expected, reward, "draw_cards") is None
    assert rules_outcome_of_kind([*expected, Outcome(draw(1, pb.DRAW_REASON_KILL_REWARD, [4, 5, 6]), "KILL_REWARD")],
                                 reward, "draw_cards") == 2


def test_an_outcome_none_is_about_is_flagged_by_what_it_claims() -> None:
    def code(ev: pb.Event, after_the_end: bool = False) -> str:
        kind = ev.WhichOneof("kind")
        assert kind is not None
        return unexpected(ev, kind, after_the_end).code

    assert code(draw(0, pb.DRAW_REASON_DRAW_PHASE, [1])) == "UNEXPECTED_OUTCOME"
    assert code(draw(0, pb.DRAW_REASON_KILL_REWARD, [1, 2, 3])) == "KILL_REWARD"
    assert code(pb.Event(cards_moved=move([1], 0, pb.ZONE_HAND, pb.MOVE_REASON_KILL_PENALTY))) == "KILL_PENALTY"
    assert code(pb.Event(game_over=pb.GameOver(winners=[0]))) == "GAME_RESULT"
    assert code(pb.Event(rebirth=pb.Rebirth(seat=1))) == "REBIRTH_COUNT"
    assert code(draw(0, pb.DRAW_REASON_DRAW_PHASE, [1]), after_the_end=True) == "AFTER_GAME_OVER"


class DrainingMode(IdentityMode):
    """A mode with outcomes of its own (as the last-three clock's drain): an HP loss none is about is its rule
    broken, and its drain left out keeps its code."""

    def unexpected_outcome(self, game: Game, ev: pb.Event, kind: str) -> Violation | None:
        if kind == "lose_hp":
            return Violation("DRAIN_MISMATCH", "a drain where none is due", ev.lose_hp.seat)
        return super().unexpected_outcome(game, ev, kind)

    def keeps_code_when_missing(self, code: str) -> bool:
        return code == "DRAIN_MISMATCH" or super().keeps_code_when_missing(code)


def test_a_mode_with_a_rule_of_its_own_has_the_first_say_on_an_outcome_none_is_about() -> None:
    game = four_players()
    game.mode = DrainingMode()
    loss = pb.Event(lose_hp=pb.LoseHp(seat=2, amount=1))
    assert unpaired([], loss, "lose_hp", game, after_the_end=False).code == "DRAIN_MISMATCH"
    assert unpaired([], loss, "lose_hp", four_players(), after_the_end=False).code == "UNEXPECTED_OUTCOME"
    assert unpaired([], loss, "lose_hp", game, after_the_end=True).code == "AFTER_GAME_OVER"  # (over: not asked)
    # where the mode has nothing to say, the usual rule: against the rules' outcome of its kind, else its claim
    rules_damage = Outcome(pb.Event(damage=pb.Damage(target=1, amount=1, hp_after=2)), "DAMAGE_MISMATCH")
    damage = pb.Event(damage=pb.Damage(target=3, amount=1, hp_after=2))
    assert unpaired([rules_damage], damage, "damage", game, after_the_end=False).code == "DAMAGE_MISMATCH"
    assert unpaired([], draw(0, pb.DRAW_REASON_DRAW_PHASE, [1]), "draw_cards", game,
                    after_the_end=False).code == "UNEXPECTED_OUTCOME"


def test_a_mode_says_which_of_its_outcomes_keep_their_code_when_left_out() -> None:
    game = four_players()
    drain = Outcome(pb.Event(lose_hp=pb.LoseHp(seat=2, amount=1)), "DRAIN_MISMATCH")
    assert left_out_code(drain, game) == "MISSING_OUTCOME"
    game.mode = DrainingMode()
    assert left_out_code(drain, game) == "DRAIN_MISMATCH"
    assert left_out_code(Outcome(draw(0, pb.DRAW_REASON_DRAW_PHASE, [1, 2]), "DRAW_NOT_TOP"), game) == \
        "MISSING_OUTCOME"
    assert left_out_code(Outcome(draw(0, pb.DRAW_REASON_KILL_REWARD, [1, 2, 3]), "KILL_REWARD"), None) == \
        "KILL_REWARD"
    assert left_out_code(Outcome(pb.Event(rebirth=pb.Rebirth(seat=1)), "REBIRTH_MISMATCH"), None) == "REBIRTH_COUNT"


# ---------------------------------------------------------------- rule 6: skipped outcomes are added as derived


def test_the_derived_outcomes_a_recorded_one_skips_are_added_and_in_a_complete_log_missing() -> None:
    from clients.selfplay import play_game

    log = play_game(3, 4)
    draws = [i for i, ev in enumerate(log.events)
             if ev.HasField("draw_cards") and ev.draw_cards.reason == pb.DRAW_REASON_DRAW_PHASE]
    left_out = draws[2]
    partial = pb.GameLog()
    partial.CopyFrom(log)
    del partial.events[left_out]
    partial.header.options.outcomes = pb.OUTCOME_RECORDING_PARTIAL
    replay = verify(partial)
    added = [a for a in replay.annotations if a.derived and a.event == log.events[left_out]]
    assert len(added) == 1 and added[0].status == apb.STATUS_DERIVED
    assert not [v for a in replay.annotations for v in a.violations]
    partial.header.options.outcomes = pb.OUTCOME_RECORDING_COMPLETE
    missing = [v.code for a in verify(partial).annotations for v in a.violations]
    assert missing == ["MISSING_OUTCOME"]
