"""Equipment of the standard deck: weapons, armor and horses (docs/rules.md#equipment).

Each equipment name is a card spec (equipping it) and, where it has one, an effect.
"""

from __future__ import annotations

from collections.abc import Iterator

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import DEFENSIVE_HORSE, OFFENSIVE_HORSE, Color
from verifier.engine.effects import CardSpec, Effect, Use, UsedCard
from verifier.engine.game import Game, Settle, Violation
from verifier.engine.requests import UNANSWERED, offer_request
from verifier.packages.standard.basic import slash_effect, verify_slash_targets
from verifier.packages.standard.package import PACKAGE

EQUIPMENT_NAMES = (
    "crossbow", "double_sword", "qinggang_sword", "ice_sword", "blade", "spear", "axe", "halberd",
    "kylin_bow", "eight_diagram", "renwang_shield", "jueying", "dilu", "zhuahuangfeidian", "chitu",
    "dayuan", "zixing",
)


class EquipSpec(CardSpec):
    """Using an equipment card puts it into its slot (an occupied slot's card is discarded)."""

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        return (user,)

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if use.card.is_virtual:
            yield Violation("INVALID_CONVERSION", "equipment must be a real card", use.user, hard=True)
        elif use.targets != (use.user,):
            yield Violation("INVALID_TARGET", f"seat {use.user} can equip {use.card.real and use.card.real.label()} "
                            "only on themself", use.user, hard=True)

    def use(self, game: Game, use: Use) -> Settle[None]:
        # Its user's own slot; a server's record may have carried out one put on another character (its first target).
        yield from game.equip(use.targets[0] if use.targets else use.user, use.card.ids[0])


for _name in EQUIPMENT_NAMES:
    PACKAGE.card(type(f"Equip_{_name}", (EquipSpec,), {"name": _name, "__doc__": f"Equip {_name}."}))


def offered(game: Game, seat: int, skill: str, target: int | None = None) -> Settle[pb.Event | None]:
    """Offer an optional effect; the answer if it is invoked, None if declined."""
    while True:
        answer = yield offer_request(seat, skill, target=target)
        if answer is None or answer is UNANSWERED:
            return None
        assert isinstance(answer, pb.Event)
        if answer.HasField("invoke_skill") and answer.invoke_skill.skill == skill:
            return answer
        game.report([Violation("SKILL_NOT_AVAILABLE", f"seat {seat} may invoke only {skill} here", seat,
                               hard=True)])


# ---------------------------------------------------------------------------- weapons

class Weapon(Effect):
    """A weapon sets its holder's attack range to its own range."""

    def attack_range(self, game: Game, seat: int) -> int | None:
        weapon = game.weapon(seat)
        return weapon.attack_range if weapon else None


@PACKAGE.effect
class Crossbow(Weapon):
    """诸葛连弩: no limit on 杀 in your play phase."""

    name = "crossbow"

    def unlimited_slash(self, game: Game, seat: int) -> bool:
        return True


@PACKAGE.effect
class DoubleSword(Weapon):
    """雌雄双股剑: after targeting the opposite gender, they discard a hand card or you draw 1."""

    name = "double_sword"

    def on_slash_target(self, game: Game, use: Use, target: int) -> Settle[None]:
        a, b = game.players[use.user].gender, game.players[target].gender
        if not a or not b or a == b:
            return
        if (yield from offered(game, use.user, self.name, target)) is None:
            return
        hand = game.players[target].hand
        chosen = (yield from game.choose(target, list(hand), 1, self.name, optional=True)) if hand else None
        if chosen:
            yield from game.to_discard(chosen)
        else:
            yield from game.draw(use.user, 1, pb.DRAW_REASON_CARD_EFFECT)


@PACKAGE.effect
class QinggangSword(Weapon):
    """青釭剑: your 杀 ignores the target's armor."""

    name = "qinggang_sword"
    ignores_armor = True


@PACKAGE.effect
class IceSword(Weapon):
    """寒冰剑: instead of the damage, discard 2 of the target's hand or equipped cards."""

    name = "ice_sword"

    def on_slash_hit(self, game: Game, use: Use, target: int) -> Settle[bool]:
        t = game.players[target]
        if not (t.hand or t.equips):
            return False
        if (yield from offered(game, use.user, self.name, target)) is None:
            return False
        for _ in range(2):
            options = [*t.hand, *t.equipped()]
            if not options:
                break
            chosen = yield from game.choose(use.user, options, 1, self.name)
            if chosen:
                yield from game.to_discard(chosen)
        return True


@PACKAGE.effect
class Blade(Weapon):
    """青龙偃月刀: after a 闪 cancels your 杀, you may use another 杀 on the same target."""

    name = "blade"

    def on_slash_jinked(self, game: Game, use: Use, target: int) -> Settle[bool]:
        while game.players[target].alive and game.players[use.user].alive:
            answer = yield offer_request(use.user, self.name, frozenset({"slash"}), target)
            if answer is None or answer is UNANSWERED:
                return False
            assert isinstance(answer, pb.Event)
            if not answer.HasField("respond"):
                game.report([Violation("WRONG_CARD", f"青龙偃月刀 takes a 杀 from seat {use.user}", use.user,
                                       hard=True)])
                continue
            card = game.ruleset.resolve_card(game, use.user, answer.respond.card)
            if card is None:
                continue
            if not card.name.endswith("slash"):
                game.report([Violation("WRONG_CARD", f"青龙偃月刀 takes a 杀, not {game.used_card_label(card)}",
                                       use.user, card.ids[0] if card.ids else None, hard=True)])
                continue
            # No distance limit, and it does not count toward the play phase's 杀 limit.
            follow_up = Use(use.user, card, (target,))
            yield from game.to_processing(card.ids)
            yield from slash_effect(game, follow_up, target)
            game.processing_to_discard(card.ids)
            return False
        return False


@PACKAGE.effect
class Spear(Weapon):
    """丈八蛇矛: use or play any 2 hand cards as a 杀."""

    name = "spear"
    converts_to = frozenset({"slash"})

    def verify_conversion(self, game: Game, seat: int, virtual: pb.VirtualCard) -> list[Violation]:
        cards = list(virtual.subcards)
        if len(cards) != 2:
            return [Violation("INVALID_CONVERSION", f"丈八蛇矛 makes a 杀 from exactly 2 hand cards, not "
                              f"{len(cards)}", seat, hard=True)]
        return game.verify_own_cards(seat, cards, ("hand",))


@PACKAGE.effect
class Axe(Weapon):
    """贯石斧: after a 闪 cancels your 杀, discard 2 cards (not the axe) and it hits anyway."""

    name = "axe"

    def on_slash_jinked(self, game: Game, use: Use, target: int) -> Settle[bool]:
        p = game.players[use.user]
        while True:
            answer = yield from offered(game, use.user, self.name, target)
            if answer is None:
                return False
            cost = list(answer.invoke_skill.cards)
            problems = game.verify_own_cards(use.user, cost, ("hand", "equip"))
            if p.equips.get("weapon") in cost:
                problems.append(Violation("INVALID_CHOICE", "贯石斧 cannot discard itself", use.user,
                                          p.equips["weapon"], hard=True))
            if len(cost) != 2:
                problems.append(Violation("INVALID_CHOICE", f"贯石斧 needs exactly 2 cards, not {len(cost)}",
                                          use.user, hard=True))
            if game.report(problems):
                continue
            yield from game.to_discard(cost)
            return True


@PACKAGE.effect
class Halberd(Weapon):
    """方天画戟: a 杀 made of your last hand card(s) may take up to 2 extra targets."""

    name = "halberd"

    def extra_slash_targets(self, game: Game, use: Use) -> int:
        hand = game.players[use.user].hand
        ids = set(use.card.ids)
        return 2 if ids and ids == set(hand) else 0


@PACKAGE.effect
class KylinBow(Weapon):
    """麒麟弓: when your 杀 would deal damage, you may discard one of the target's horses."""

    name = "kylin_bow"

    def on_slash_hit(self, game: Game, use: Use, target: int) -> Settle[bool]:
        t = game.players[target]
        horses = [t.equips[s] for s in (DEFENSIVE_HORSE, OFFENSIVE_HORSE) if s in t.equips]
        if not horses:
            return False
        while True:
            answer = yield from offered(game, use.user, self.name, target)
            if answer is None:
                return False
            chosen = list(answer.invoke_skill.cards)
            if len(chosen) != 1 or chosen[0] not in horses:
                game.report([Violation("INVALID_CHOICE", f"麒麟弓 discards exactly one of seat {target}'s horses",
                                       use.user, hard=True)])
                continue
            yield from game.to_discard(chosen)
            return False


# ---------------------------------------------------------------------------- armor

@PACKAGE.effect
class EightDiagram(Effect):
    """八卦阵: when you need a 闪, you may judge; red counts as a 闪."""

    name = "eight_diagram"
    provides = frozenset({"jink"})
    is_armor = True

    def provide(self, game: Game, seat: int, reason: str) -> Settle[UsedCard | None]:
        card = yield from game.judge(seat, self.name)
        yield from game.finish_judgment(seat, card, self.name)
        if card.color == Color.RED:
            return UsedCard("jink", (), card.suit, card.color, card.number, skill=self.name)
        return None


@PACKAGE.effect
class RenwangShield(Effect):
    """仁王盾: black 杀 have no effect on you."""

    name = "renwang_shield"
    is_armor = True

    def slash_has_no_effect(self, game: Game, use: Use) -> bool:
        return use.card.color == Color.BLACK


# ---------------------------------------------------------------------------- horses

class DefensiveHorse(Effect):
    """+1 horse: others' distance to you +1."""

    def distance_to(self, game: Game, seat: int) -> int:
        return 1


class OffensiveHorse(Effect):
    """−1 horse: your distance to others −1."""

    def distance_from(self, game: Game, seat: int) -> int:
        return -1


for _name in ("jueying", "dilu", "zhuahuangfeidian"):
    PACKAGE.effect(type(f"Horse_{_name}", (DefensiveHorse,), {"name": _name}))
for _name in ("chitu", "dayuan", "zixing"):
    PACKAGE.effect(type(f"Horse_{_name}", (OffensiveHorse,), {"name": _name}))

__all__ = ["EQUIPMENT_NAMES", "verify_slash_targets"]
