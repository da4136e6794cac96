"""The hegemony generals package and what its skills share: the skills reused from identity mode, 拼点."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Package
from verifier.engine.game import Game, Settle, Violation
from verifier.engine.requests import UNANSWERED, choice_request
from verifier.packages import generals_standard

PACKAGE = Package("generals_hegemony")

# Skills whose 2014 hegemony text is the identity one (docs/generals-hegemony.md): the identity units.
REUSED = ("jianxiong", "fankui", "guicai", "ganglie", "tuxi", "luoyi", "tiandu", "yiji", "qingguo", "wusheng",
          "paoxiao", "guanxing", "longdan", "mashu", "tieji", "jizhi", "qicai")
# Wu's (docs/generals-hegemony.md#wu).
REUSED_WU = ("qixi", "keji", "kurou", "yingzi", "fanjian", "guose", "liuli", "jieyin")
for _name in (*REUSED, *REUSED_WU):
    PACKAGE.effects[_name] = generals_standard.PACKAGE.effects[_name]


def same_kingdom(game: Game, a: int, b: int) -> bool:
    """Of one kingdom (docs/rules.md#hegemony-kingdom)."""
    return game.mode.same_side(game, a, b)


def point_fight(game: Game, a: int, b: int, reason: str) -> Settle[bool]:
    """拼点: ``a`` and then ``b`` each choose a hand card (ChooseCards), both are shown and discarded; ``a`` wins
    with the higher number. A side with no hand card cannot fight: nobody is asked for a card and ``a`` loses
    (every skill refuses such a 拼点 before it gets here: its own hand, SKILL_PRECONDITION; a target's,
    INVALID_TARGET; a triggered one is not offered)."""
    if not game.players[a].hand or not game.players[b].hand:
        return False  # both sides first: ``a`` must not be asked for a card that is never shown
    chosen: list[int] = []
    for seat in (a, b):
        hand = game.players[seat].hand
        while True:
            answer = yield choice_request(seat, tuple(hand), 1, f"pindian/{reason}")
            if answer is None or answer is UNANSWERED:
                chosen.append(hand[0])
                game.report([Violation("INVALID_CHOICE", f"seat {seat} must show a hand card for {reason}'s 拼点; "
                                       f"the first one is taken", seat)])
                break
            assert isinstance(answer, pb.Event)
            cards = list(answer.choose_cards.cards)
            if len(cards) != 1 or cards[0] not in hand:
                game.report([Violation("INVALID_CHOICE", f"seat {seat} shows exactly one of their hand cards for "
                                       f"{reason}'s 拼点", seat, hard=True)])
                continue
            chosen.append(cards[0])
            break
    yield from game.to_processing(chosen)
    ev = pb.Event()
    ev.reveal.cards.extend(chosen)
    ev.reveal.reason = reason
    game.emit(ev, "MOVE_MISMATCH")
    game.processing_to_discard(chosen)
    return game.cards[chosen[0]].number > game.cards[chosen[1]].number
