"""Equipment of 军争: 古锭刀, 朱雀羽扇, 藤甲, 白银狮子, 骅骝 (docs/rules.md#equipment)."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Effect, Use, UsedCard, missing_skill
from verifier.engine.game import DamageInfo, Game, Violation
from verifier.packages.maneuvering.package import PACKAGE
from verifier.packages.standard.equipment import DefensiveHorse, EquipSpec, Weapon

EQUIPMENT_NAMES = ("guding_blade", "fan", "vine", "silver_lion", "hualiu")

for _name in EQUIPMENT_NAMES:
    PACKAGE.card(type(f"Equip_{_name}", (EquipSpec,), {"name": _name, "__doc__": f"Equip {_name}."}))


@PACKAGE.effect
class GudingBlade(Weapon):
    """古锭刀: your 杀's damage to a target with no hand cards is increased by 1 (not damage passed on by
    铁锁连环)."""

    name = "guding_blade"

    def damage_caused(self, game: Game, info: DamageInfo) -> None:
        card = info.card
        if card is not None and card.name.endswith("slash") and not info.chained \
                and not game.players[info.target].hand:
            info.amount += 1


@PACKAGE.effect
class Fan(Weapon):
    """朱雀羽扇: you may use an ordinary 杀 as a 火杀 (a virtual fire_slash made from it), a 杀 made by a skill
    included (docs/rules.md#fan-skill-slash, as FreeKill: 龙胆, 武圣): ``VirtualCard.base_skill`` names that
    skill, which must be able to make a 杀 from the subcards."""

    name = "fan"
    converts_to = frozenset({"fire_slash"})

    def turns_slash(self, game: Game, seat: int, card: UsedCard) -> str:
        return "fire_slash" if card.name == "slash" else ""

    def verify_conversion(self, game: Game, seat: int, virtual: pb.VirtualCard) -> list[Violation]:
        cards = list(virtual.subcards)
        if virtual.base_skill:
            return self.verify_base(game, seat, virtual)
        if len(cards) != 1 or cards[0] not in game.cards or game.cards[cards[0]].name != "slash":
            return [Violation("INVALID_CONVERSION", "朱雀羽扇 makes a 火杀 from exactly one ordinary 杀 (not a 火杀 "
                              "or 雷杀)", seat, cards[0] if len(cards) == 1 else None, hard=True)]
        return game.verify_own_cards(seat, cards, ("hand",))

    @staticmethod
    def verify_base(game: Game, seat: int, virtual: pb.VirtualCard) -> list[Violation]:
        """The 杀 the base skill makes from the subcards, checked as that skill checks its own 杀."""
        name = virtual.base_skill
        base = next((e for e in game.effects_of(seat) if e.name == name), None)
        if base is None:
            missing = missing_skill(game, seat, name)
            return [missing or Violation("INVALID_CONVERSION", f"seat {seat} has no {name} to make the 杀 朱雀羽扇 "
                                         "turns into a 火杀", seat, hard=True)]
        if "slash" not in base.converts_to:
            return [Violation("INVALID_CONVERSION", f"{name} makes no 杀 for 朱雀羽扇 to turn into a 火杀", seat,
                              hard=True)]
        fan = game.players[seat].equips.get("weapon")
        if fan in virtual.subcards:
            # (武圣 on the ♦ 朱雀羽扇 itself: its effect cannot work on a 杀 made of it.)
            return [Violation("INVALID_CONVERSION", "朱雀羽扇 cannot turn a 杀 made of itself into a 火杀", seat, fan,
                              hard=True)]
        return base.verify_conversion(game, seat, pb.VirtualCard(name="slash", subcards=virtual.subcards,
                                                                  skill=name))


@PACKAGE.effect
class Vine(Effect):
    """藤甲: ordinary 杀, 南蛮入侵 and 万箭齐发 have no effect on you; fire damage to you is increased by 1."""

    name = "vine"
    is_armor = True
    VOID = frozenset({"slash", "savage_assault", "archery_attack"})

    def card_has_no_effect(self, game: Game, use: Use, target: int) -> bool:
        return use.card.name in self.VOID

    def damage_inflicted(self, game: Game, info: DamageInfo) -> None:
        if info.nature == pb.DAMAGE_NATURE_FIRE:
            info.amount += 1


@PACKAGE.effect
class SilverLion(Effect):
    """白银狮子: damage to you above 1 is reduced to 1; when it leaves your equipment area you recover 1."""

    name = "silver_lion"
    is_armor = True
    trigger_outcome = "recover"

    def damage_inflicted(self, game: Game, info: DamageInfo) -> None:
        if info.amount > 1:
            info.amount = 1

    def on_lost(self, game: Game, seat: int) -> None:
        game.recover(seat, 1)


@PACKAGE.effect
class Hualiu(DefensiveHorse):
    """骅骝: others' distance to you +1."""

    name = "hualiu"
