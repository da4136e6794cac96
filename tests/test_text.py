"""verifier.text.describe, where its wording depends on what the event leaves out."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.text import describe


def test_a_move_says_its_reason_and_a_move_without_one_says_none() -> None:
    penalty = pb.Event(cards_moved=pb.CardsMoved(cards=[3], from_seat=1, from_zone=pb.ZONE_HAND,
                                                 to_zone=pb.ZONE_DISCARD_PILE, reason=pb.MOVE_REASON_KILL_PENALTY))
    assert describe(penalty).endswith("from seat 1's hand to discard_pile (kill_penalty)")
    # 不屈's 创: put from the draw pile on the general, a move with no reason of its own
    wound = pb.Event(cards_moved=pb.CardsMoved(cards=[3], from_zone=pb.ZONE_DRAW_PILE, to_seat=1,
                                               to_zone=pb.ZONE_GENERAL))
    assert describe(wound).endswith("from draw_pile to seat 1's general")
