"""Tricks of 军争: 火攻 and 铁锁连环, and 铁锁连环's passing on of damage (docs/rules.md#tricks).

A character's chain is ``Player.marks["chained"]``. It changes only in two ways, both implied by
the log (docs/log-format.md): a 铁锁连环 that is not nullified for a target toggles it, and a chained
character who takes fire or thunder damage is unchained.
"""

from __future__ import annotations

from collections.abc import Iterator

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import CardSpec, Use
from verifier.engine.game import DamageInfo, Game, Settle, Violation
from verifier.packages.maneuvering.package import PACKAGE

CHAINED = "chained"


def is_chained(game: Game, seat: int) -> bool:
    return bool(game.players[seat].marks.get(CHAINED))


@PACKAGE.card
class FireAttack(CardSpec):
    """火攻: a character with hand cards (you too) shows one; if you discard a hand card of the same
    suit, they take 1 fire damage from you. On a character with no hand card (the 火攻 itself not counted)
    it is reported and carried out without effect."""

    name = "fire_attack"

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if len(use.targets) != 1:
            yield Violation("INVALID_TARGET", "火攻 takes exactly one character as its target", use.user, hard=True)
            return
        t = use.targets[0]
        if not any(c not in use.card.ids for c in game.players[t].hand):
            # Soft: the 火攻 is used and resolves without effect (FreeKill let 火攻 on oneself with no other
            # hand card through, and the game went on).
            yield Violation("INVALID_TARGET", f"seat {t} has no hand card to show for 火攻 (once it is used); it "
                            "is carried out without effect", use.user, use.card.ids[0] if use.card.ids else None)

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        # One target in a legal use; a server's record may have carried out more (each in turn) or none.
        for target in use.targets:
            yield from self.fire_attack(game, use, target)

    def fire_attack(self, game: Game, use: Use, target: int) -> Settle[None]:
        user = use.user
        if (yield from game.nullified(self.name, target)):
            return
        hand = game.players[target].hand
        if not hand or not game.players[target].alive:
            return
        shown = yield from game.choose(target, list(hand), 1, "火攻 (a hand card to show)")
        if not shown or not game.players[user].alive:
            return
        suit = game.cards[shown[0]].suit
        same = [c for c in game.players[user].hand if game.cards[c].suit == suit]
        if not same:
            return
        paid = yield from game.choose(user, same, 1, f"火攻 (a {suit.symbol} hand card to discard)", optional=True)
        if paid:
            yield from game.to_discard(paid)
            yield from game.damage(user, target, 1, pb.DAMAGE_NATURE_FIRE, card=use.card)

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(t,) for t in game.alive_seats() if game.players[t].hand]


@PACKAGE.card
class IronChain(CardSpec):
    """铁锁连环: 1 or 2 characters (you may be one) are chained or unchained; or recast it."""

    name = "iron_chain"
    recastable = True

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if not 1 <= len(use.targets) <= 2 or len(set(use.targets)) != len(use.targets):
            yield Violation("INVALID_TARGET", f"铁锁连环 takes 1 or 2 different characters, not {list(use.targets)} "
                            "(or it is recast: UseCard.recast)", use.user, hard=True)

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        # Each target in seat order from the user, each with its own 无懈可击 window.
        for t in game.alive_seats(use.user):
            if t not in use.targets or (yield from game.nullified(self.name, t)):
                continue
            game.set_mark(t, CHAINED, 0 if is_chained(game, t) else 1)

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        seats = game.alive_seats(user)
        return [(a,) for a in seats] + [(a, b) for i, a in enumerate(seats) for b in seats[i + 1:]]


def pass_on(game: Game, info: DamageInfo) -> Settle[None]:
    """docs/rules.md#chained-damage: fire or thunder damage to a chained character unchains them; unless it was
    itself passed on, it is then passed on to every other chained character, in seat order from the
    current player, with the same source and nature and the amount the first target took (after its own
    armor: 藤甲 +1, 白银狮子's cap; 酒 and 古锭刀 included); each recipient's own armor then applies to its
    share (the ruling on the amount, as QSanguosha and FreeKill)."""
    if info.nature == pb.DAMAGE_NATURE_NORMAL or not is_chained(game, info.target):
        return
    game.set_mark(info.target, CHAINED, 0)
    if info.chained:
        return
    for seat in game.alive_seats(game.current):
        if seat != info.target and game.players[seat].alive and is_chained(game, seat):
            # The card that caused the first damage caused this one too (奸雄 may take it while it is still in
            # the processing area); what it added (裸衣, 古锭刀, 酒) is in the amount already.
            yield from game.damage(info.source, seat, info.amount, info.nature, card=info.card, chained=True)


PACKAGE.after_damage.append(pass_on)
