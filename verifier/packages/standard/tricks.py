"""Non-delayed tricks of the standard deck (docs/rules.md#tricks). Each can be cancelled
for one target by 无懈可击 (Game.nullified)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import ClassVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import CardSpec, Use, armor_voids
from verifier.engine.game import Game, Settle, Violation
from verifier.packages.standard.basic import slash_effect
from verifier.packages.standard.package import PACKAGE


def reaches(game: Game, user: int, target: int, card_name: str) -> bool:
    """docs/rules.md#distance-limit: 顺手牵羊 and 兵粮寸断 need distance 1 (horses count, weapons do not), unless an
    effect lifts the limit for that card (奇才)."""
    d = game.distance(user, target)
    return d <= 1 or any(e.unlimited_distance(game, user, card_name) for e in game.effects_of(user)) or (
        game.ruleset.distance_limits and any(d <= e.distance_limit(game, user, card_name)
                                             for e in game.effects_of(user)))


def verify_reaches(game: Game, use: Use, target: int, card_name: str, label: str) -> Iterator[Violation]:
    if not reaches(game, use.user, target, card_name):
        yield Violation("DISTANCE_LIMIT", f"{label} needs distance 1; seat {target} is at distance "
                        f"{game.distance(use.user, target)} from seat {use.user}", use.user,
                        use.card.ids[0] if use.card.ids else None)


def one_other_target(game: Game, use: Use, what: str) -> Iterator[Violation]:
    if len(use.targets) != 1 or use.targets[0] == use.user:
        yield Violation("INVALID_TARGET", f"{what} takes exactly one other character as its target", use.user,
                        hard=True)


def card_of_each_target(game: Game, use: Use, name: str, settle: Callable[[list[int]], Settle[None]]
                        ) -> Settle[None]:
    """过河拆桥's and 顺手牵羊's effect on each target in turn (one in a legal use; a server's record may have carried
    out more, or the user themself): unless nullified for it, the user chooses one of its cards, which ``settle``
    discards or takes."""
    for target in use.targets:
        if not game.players[target].alive or (yield from game.nullified(name, target)):
            continue
        options = game.players[target].all_cards()
        if options:
            chosen = yield from game.choose(use.user, options, 1, name)
            if chosen:
                yield from settle(chosen)


class SelfTrick(CardSpec):
    """A trick whose only target is its user."""

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        return (user,)

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if use.targets != (use.user,):
            yield Violation("INVALID_TARGET", f"{self.name} targets only its user", use.user, hard=True)


class AreaTrick(CardSpec):
    """A trick aimed at a fixed set of characters; the log may name them (in any order: the rules fix it) or leave
    them out."""

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        expected = self.default_targets(game, use.user)
        if sorted(use.targets) != sorted(expected):
            yield Violation("INVALID_TARGET", f"{self.name} targets exactly seats {list(expected)}, not "
                            f"{list(use.targets)}", use.user, hard=True)

    def use(self, game: Game, use: Use) -> Settle[None]:
        # Settled in seat order from the user, whatever order the log names the targets in (default_targets' order).
        order = tuple(sorted(use.targets, key=lambda t: (t - use.user) % game.n))
        return CardSpec.use(self, game, use if order == use.targets else Use(use.user, use.card, order,
                                                                             use.damage_bonus))


@PACKAGE.card
class Nullification(CardSpec):
    """无懈可击: only played into a nullification window."""

    name = "nullification"
    play_phase = False


@PACKAGE.card
class ExNihilo(SelfTrick):
    """无中生有: draw 2."""

    name = "ex_nihilo"

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        # Its target draws: its user, unless a server's record carried out one aimed at another character.
        for t in use.targets:
            if game.players[t].alive and not (yield from game.nullified(self.name, t)):
                yield from game.draw(t, 2, pb.DRAW_REASON_CARD_EFFECT)


@PACKAGE.card
class Dismantlement(CardSpec):
    """过河拆桥: discard one card from another character's hand, equipment or judgment area."""

    name = "dismantlement"

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        yield from one_other_target(game, use, "过河拆桥")
        if len(use.targets) == 1 and not game.players[use.targets[0]].has_cards():
            yield Violation("INVALID_TARGET", f"seat {use.targets[0]} has no card for 过河拆桥 to discard",
                            use.user, hard=True)

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        yield from card_of_each_target(game, use, self.name, game.to_discard)

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(t,) for t in game.alive_seats() if t != user and game.players[t].has_cards()]


@PACKAGE.card
class Snatch(CardSpec):
    """顺手牵羊: take one card of a character at distance 1."""

    name = "snatch"

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        yield from one_other_target(game, use, "顺手牵羊")
        if len(use.targets) != 1:
            return
        t = use.targets[0]
        if not game.players[t].has_cards():
            yield Violation("INVALID_TARGET", f"seat {t} has no card for 顺手牵羊 to take", use.user, hard=True)
        yield from verify_reaches(game, use, t, self.name, "顺手牵羊")

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        yield from card_of_each_target(game, use, self.name, lambda chosen: game.to_hand(use.user, chosen))

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(t,) for t in game.alive_seats()
                if t != user and game.players[t].has_cards() and reaches(game, user, t, self.name)]


@PACKAGE.card
class Duel(CardSpec):
    """决斗: starting with the target, each plays 杀 in turn; the first who does not takes 1 damage."""

    name = "duel"

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        yield from one_other_target(game, use, "决斗")

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        # One target in a legal use; a server's record may have carried out more, or the user themself.
        for target in use.targets:
            if game.players[target].alive and game.players[use.user].alive \
                    and not (yield from game.nullified(self.name, target)):
                yield from duel_effect(game, use, target)

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(t,) for t in game.alive_seats() if t != user]


def duel_effect(game: Game, use: Use, target: int) -> Settle[None]:
    """决斗 once it is not nullified: from the target, each plays 杀 in turn (two each against 无双)."""
    responder, other = target, use.user
    while game.players[responder].alive and game.players[other].alive:
        needed = 1
        if game.has_skills:
            needed += sum(e.extra_responses(game, other, "duel") for e in game.players[other].skills)
        played = None
        for _ in range(needed):
            played = yield from game.ruleset.ask_for_card(game, responder, frozenset({"slash"}), "决斗")
            if played is None:
                break
        if played is None:
            yield from game.damage(other, responder, 1, card=use.card)
            return
        responder, other = other, responder


class MassAttack(AreaTrick):
    """Every other character, from the user's next seat, answers with ``answer`` or takes 1 damage."""

    answer: ClassVar[str] = ""
    label: ClassVar[str] = ""

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        return tuple(game.alive_seats(user)[1:])

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        wanted = frozenset({self.answer})
        for t in use.targets:
            if not game.players[t].alive or armor_voids(game, use, t) or (yield from game.nullified(self.name, t)):
                continue
            if (yield from game.ruleset.ask_for_card(game, t, wanted, self.label)) is None:
                yield from game.damage(use.user, t, 1, card=use.card)


@PACKAGE.card
class SavageAssault(MassAttack):
    """南蛮入侵: every other character, from the next seat, plays 杀 or takes 1 damage."""

    name = "savage_assault"
    answer = "slash"
    label = "南蛮入侵"


@PACKAGE.card
class ArcheryAttack(MassAttack):
    """万箭齐发: every other character, from the next seat, plays 闪 or takes 1 damage."""

    name = "archery_attack"
    answer = "jink"
    label = "万箭齐发"


@PACKAGE.card
class GodSalvation(AreaTrick):
    """桃园结义: every wounded character, from the user, recovers 1."""

    name = "god_salvation"

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        return tuple(game.alive_seats(user))

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        for t in use.targets:
            p = game.players[t]
            # A character at full HP is not affected, so no 无懈可击 window opens for them.
            if not p.alive or not p.wounded or (yield from game.nullified(self.name, t)):
                continue
            yield from game.recovered(t, game.recover(t, 1))


@PACKAGE.card
class AmazingGrace(AreaTrick):
    """五谷丰登: reveal one card per living character; from the user, each takes one."""

    name = "amazing_grace"

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        return tuple(game.alive_seats(user))

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        revealed: list[int] = []
        for _ in use.targets:
            cid = yield from game.take_top()
            game.processing.append(cid)
            game.journal.append(f"('proc', {cid})")
            revealed.append(cid)
        ev = pb.Event()
        ev.reveal.cards.extend(revealed)
        ev.reveal.reason = self.name
        # The revealed cards come off the top of the draw pile: other cards mean a stacked deck.
        game.emit(ev, "DRAW_NOT_TOP")
        for t in use.targets:
            if not revealed:
                break
            if not game.players[t].alive or (yield from game.nullified(self.name, t)):
                continue
            chosen = yield from game.choose(t, list(revealed), 1, self.name)
            if chosen:
                revealed.remove(chosen[0])
                yield from game.to_hand(t, chosen)
        yield from game.move_out(None, revealed, pb.ZONE_PROCESSING, pb.MOVE_REASON_LEFTOVER, "MOVE_MISMATCH")


@PACKAGE.card
class Collateral(CardSpec):
    """借刀杀人: A (with a weapon) must use 杀 on B in A's range, or give you the weapon."""

    name = "collateral"
    confirmed_targets = 1  # the weapon holder; the one it must attack is no target of the card

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if len(use.targets) != 2:
            yield Violation("INVALID_TARGET", "借刀杀人 names two characters: the weapon holder, then the one "
                            "they must attack", use.user, hard=True)
            return
        a, b = use.targets
        if a == use.user:
            yield Violation("INVALID_TARGET", "借刀杀人's first target must be another character", use.user,
                            hard=True)
        elif game.weapon(a) is None:
            yield Violation("INVALID_TARGET", f"seat {a} has no weapon for 借刀杀人", use.user, hard=True)
        elif b == a or not game.in_attack_range(a, b):
            yield Violation("INVALID_TARGET", f"seat {b} is not in seat {a}'s attack range for 借刀杀人",
                            use.user, hard=True)

    def can_carry_out(self, game: Game, use: Use) -> bool:
        # The weapon holder and whom they must attack, the holder with a weapon to give: nothing else can settle.
        return len(use.targets) == 2 and game.weapon(use.targets[0]) is not None

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        a, b = use.targets
        if (yield from game.nullified(self.name, a)):
            return
        slash = None
        if game.players[b].alive:
            slash = yield from game.ruleset.ask_for_card(game, a, frozenset({"slash"}), "借刀杀人", target=b,
                                                          settle_now=False)
        if slash is not None:
            yield from slash_effect(game, Use(a, slash, (b,)), b)
            game.processing_to_discard(slash.ids)
            return
        weapon = game.players[a].equips.get("weapon")
        if weapon is not None and game.players[use.user].alive:
            yield from game.move_out(a, [weapon], pb.ZONE_EQUIPMENT, pb.MOVE_REASON_WEAPON_GIVEN, "MOVE_MISMATCH",
                          to_seat=use.user)

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(a, b) for a in game.alive_seats() if a != user and game.weapon(a) is not None
                for b in game.alive_seats() if game.in_attack_range(a, b)]
