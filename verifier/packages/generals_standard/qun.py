"""Qun 群: 华佗, 吕布, 貂蝉."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import Game, Settle, Trigger
from verifier.packages.generals_standard.package import (
    PACKAGE,
    Skill,
    ViewAs,
    bad,
    check_cost,
    check_targets,
    offer,
)
from verifier.packages.standard.tricks import duel_effect


@PACKAGE.effect
class Qingnang(Skill):
    """青囊 [1/phase]: discard a hand card; a wounded character (you too) recovers 1."""

    name, zh = "qingnang", "青囊"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards, targets = list(invoke.cards), list(invoke.targets)
        problems = check_cost(game, seat, cards, self.name, (1, 1), ("hand",))
        problems += check_targets(game, seat, targets, self.name, (1, 1),
                                  lambda t: "" if game.players[t].wounded else "is not wounded")
        if game.report(problems):
            return
        game.players[seat].skill_uses[self.name] = 1
        yield from game.to_discard(cards)
        game.recover(targets[0], 1)


@PACKAGE.effect
class Jijiu(ViewAs):
    """急救: outside your turn, any red card (hand or equipped) as a 桃."""

    name, zh = "jijiu", "急救"
    converts_to = frozenset({"peach"})
    zones = ("hand", "equip")
    what = "a red card"

    def fits(self, card: CardDef, name: str) -> bool:
        return card.color == Color.RED

    def timing(self, game: Game, seat: int) -> str:
        return "works only outside your own turn" if game.current == seat else ""


@PACKAGE.effect
class Wushuang(Skill):
    """无双 (locked): your 杀 needs two 闪; in a 决斗 with you, your opponent plays two 杀 each time."""

    name, zh = "wushuang", "无双"

    def extra_responses(self, game: Game, seat: int, reason: str) -> int:
        return 1


@PACKAGE.effect
class Lijian(Skill):
    """离间 [1/phase]: discard a card and choose two other male characters; the second is treated as using
    a 决斗 on the first, which cannot be nullified."""

    name, zh = "lijian", "离间"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards, targets = list(invoke.cards), list(invoke.targets)
        problems = check_cost(game, seat, cards, self.name, (1, 1), ("hand", "equip"))
        problems += check_targets(game, seat, targets, self.name, (2, 2),
                                  lambda t: "is yourself" if t == seat else
                                  ("" if game.players[t].gender == pb.GENDER_MALE else "is not male"))
        if not any(v.hard for v in problems):
            first, second = targets
            if game.prohibited(second, first, "duel") is not None:
                problems += bad("TARGET_PROHIBITED", f"seat {first} cannot be the target of a 决斗 now", seat)
        if game.report(problems):
            return
        game.players[seat].skill_uses[self.name] = 1
        yield from game.to_discard(cards)
        first, second = targets
        yield from self.duel(game, second, first)

    def duel(self, game: Game, user: int, target: int) -> Settle[None]:
        """The 决斗 ``user`` is treated as using on ``target``; identity's cannot be nullified."""
        duel = UsedCard("duel", (), Suit.NONE, Color.NONE, 0, skill=self.name)
        yield from duel_effect(game, Use(user, duel, (target,)), target)


@PACKAGE.effect
class Biyue(Skill):
    """闭月: at the start of your finish phase, you may draw 1."""

    name, zh = "biyue", "闭月"
    timings = frozenset({"phase_start"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.phase == pb.PHASE_FINISH and (yield from offer(game, owner, self.name)) is not None:
            yield from game.draw(owner, 1, pb.DRAW_REASON_SKILL)
