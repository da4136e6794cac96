"""Delayed tricks of the standard deck: 乐不思蜀 and 闪电 (docs/rules.md#delayed-tricks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import Suit
from verifier.engine.effects import DelayedSpec, Use
from verifier.engine.game import Game, Settle, Violation
from verifier.packages.standard.package import PACKAGE


def verify_no_duplicate(game: Game, use: Use, name: str, target: int) -> Iterator[Violation]:
    """docs/rules.md#judgment-area: no judgment area may hold two cards of the same name."""
    held = [c for c in game.players[target].judgment if game.judgment_name(c) == name]
    if held:
        yield Violation("DUPLICATE_DELAYED_TRICK", f"seat {target}'s judgment area already holds "
                        f"{game.label(held[0])}; {game.used_card_label(use.card)} cannot be placed there too",
                        use.user, use.card.ids[0] if use.card.ids else None)


class PhaseSkipTrick(DelayedSpec):
    """A delayed trick on one other character: unless the judgment is ``escape_suit``, they skip
    ``skipped_phase``; then it is discarded (乐不思蜀, 兵粮寸断)."""

    escape_suit: ClassVar[Suit] = Suit.NONE
    skipped_phase: ClassVar[int] = 0
    label: ClassVar[str] = ""

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if len(use.targets) != 1 or use.targets[0] == use.user:
            yield Violation("INVALID_TARGET", f"{self.label} takes exactly one other character", use.user, hard=True)
            return
        yield from self.verify_reach(game, use, use.targets[0])
        yield from verify_no_duplicate(game, use, self.name, use.targets[0])

    def verify_reach(self, game: Game, use: Use, target: int) -> Iterator[Violation]:
        """A distance rule, for the tricks that have one."""
        return iter(())

    def can_reach(self, game: Game, user: int, target: int) -> bool:
        return True

    def use(self, game: Game, use: Use) -> Settle[None]:
        as_name = self.name if use.card.is_virtual else ""
        yield from game.to_judgment(use.targets[0], use.card.ids[0], as_name=as_name)

    def judge_phase(self, game: Game, seat: int, card_id: int) -> Settle[set[int]]:
        yield from game.to_processing([card_id])
        skip: set[int] = set()
        if not (yield from game.nullified(self.name, seat, card_id)):
            judged = yield from game.judge(seat, self.name)
            if judged.suit != self.escape_suit:
                skip.add(self.skipped_phase)
            yield from game.finish_judgment(seat, judged, self.name)
        game.processing_to_discard([card_id])
        return skip

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(t,) for t in game.alive_seats() if t != user and self.can_reach(game, user, t)
                and not any(game.judgment_name(c) == self.name for c in game.players[t].judgment)]


@PACKAGE.card
class Indulgence(PhaseSkipTrick):
    """乐不思蜀: on another character; unless the judgment is ♥, they skip their play phase."""

    name = "indulgence"
    label = "乐不思蜀"
    escape_suit = Suit.HEART
    skipped_phase = pb.PHASE_PLAY


@PACKAGE.card
class Lightning(DelayedSpec):
    """闪电: on yourself; ♠2-9 deals 3 thunder damage with no source, otherwise it moves on."""

    name = "lightning"

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        return (user,)

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if use.targets != (use.user,):
            yield Violation("INVALID_TARGET", "闪电 is placed only in its user's own judgment area", use.user,
                            hard=True)
            return
        yield from verify_no_duplicate(game, use, self.name, use.user)

    def use(self, game: Game, use: Use) -> Settle[None]:
        yield from game.to_judgment(use.user, use.card.ids[0])

    def judge_phase(self, game: Game, seat: int, card_id: int) -> Settle[set[int]]:
        yield from game.to_processing([card_id])
        if not (yield from game.nullified(self.name, seat, card_id)):
            judged = yield from game.judge(seat, self.name)
            struck = judged.suit == Suit.SPADE and 2 <= judged.number <= 9
            yield from game.finish_judgment(seat, judged, self.name)
            if struck:
                # Its damage has no source, but the 闪电 caused it and stays in the processing area until the
                # damage is settled (奸雄 may take it: docs/generals.md#jianxiong); then it is discarded.
                yield from game.damage(None, seat, 3, pb.DAMAGE_NATURE_THUNDER,
                                       card=game.ruleset.real_card(game.cards[card_id]))
                game.processing_to_discard([card_id])
                return set()
        yield from self.move_on(game, seat, card_id)
        return set()

    def move_on(self, game: Game, seat: int, card_id: int) -> Settle[None]:
        """To the next living character without a 闪电 (it stays if there is none)."""
        for nxt in [*game.alive_seats(seat)[1:], seat]:
            if not any(game.judgment_name(c) == self.name for c in game.players[nxt].judgment):
                break
        if nxt == seat:
            yield from game.to_judgment(seat, card_id)  # it stays: no move to record
        else:
            yield from game.move_out(seat, [card_id], pb.ZONE_JUDGMENT, pb.MOVE_REASON_LIGHTNING_MOVES,
                                     "MOVE_MISMATCH", to_seat=nxt, to_zone=pb.ZONE_JUDGMENT)
