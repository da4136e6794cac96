"""Delayed tricks of the standard deck: 乐不思蜀 and 闪电 (docs/rules.md#delayed-tricks)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import Suit
from verifier.engine.effects import DelayedSpec, Use
from verifier.engine.game import Game, Settle, Violation
from verifier.packages.standard.package import PACKAGE


def holds(game: Game, target: int, name: str) -> int | None:
    """The card of that name in ``target``'s judgment area, if any."""
    return next((c for c in game.players[target].judgment if game.judgment_name(c) == name), None)


def verify_no_duplicate(game: Game, use: Use, name: str, target: int) -> Iterator[Violation]:
    """docs/rules.md#judgment-area: no judgment area may hold two cards of the same name."""
    held = holds(game, target, name)
    if held is not None:
        yield Violation("DUPLICATE_DELAYED_TRICK", f"seat {target}'s judgment area already holds "
                        f"{game.label(held)}; {game.used_card_label(use.card)} cannot be placed there too: it goes "
                        "to the discard pile with no effect", use.user, use.card.ids[0] if use.card.ids else None)


def place(game: Game, use: Use, name: str, target: int | None) -> Settle[None]:
    """Put a used delayed trick in ``target``'s judgment area (docs/rules.md#judgment-area). One that cannot lie there —
    the area already holds one of its name (DUPLICATE_DELAYED_TRICK), or a server's record carried out a use with no
    living target — is used with no effect: to the discard pile, as FreeKill's server does."""
    if target is None or not game.players[target].alive or holds(game, target, name) is not None:
        yield from game.to_processing(use.card.ids)
        game.processing_to_discard(use.card.ids)
        return
    yield from game.to_judgment(target, use.card.ids[0], as_name=name if use.card.is_virtual else "")


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
        # (its first target: a server's record may have carried out a use naming none, or more than one)
        yield from place(game, use, self.name, use.targets[0] if use.targets else None)

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
        # Its user's own area; a server's record may have carried out one placed in another's (its first target).
        yield from place(game, use, self.name, use.targets[0] if use.targets else use.user)

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
