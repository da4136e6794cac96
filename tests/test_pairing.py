"""The pairing rules of recorded outcomes (docs/log-format.md#outcomes, #move-order), one test per rule."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.replay import outcome_key, same_moved_cards


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
