"""Shu 蜀: 刘备, 关羽, 张飞, 诸葛亮, 赵云, 马超, 黄月英."""

from __future__ import annotations

from typing import ClassVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import Game, Settle, Trigger, Violation
from verifier.engine.requests import UNANSWERED, choice_request
from verifier.packages.generals_standard.package import (
    PACKAGE,
    SLASHES,
    Skill,
    ViewAs,
    bad,
    check_cost,
    check_targets,
    offer,
)


@PACKAGE.effect
class Rende(Skill):
    """仁德: give hand cards to another character, any number of times; the first time the total given
    this phase reaches 2, recover 1 (only if wounded; the threshold counts either way)."""

    name, zh = "rende", "仁德"
    active = True
    threshold: ClassVar[int] = 2  # the total given that recovers 1 (the hegemony 仁德's is 3)

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards, targets = list(invoke.cards), list(invoke.targets)
        problems = check_cost(game, seat, cards, self.name, (1, 999), ("hand",), verb="gives")
        problems += check_targets(game, seat, targets, self.name, (1, 1),
                                  lambda t: "is yourself" if t == seat else "")
        if game.report(problems):
            return
        uses = game.players[seat].skill_uses
        before = uses.get(self.name, 0)
        uses[self.name] = before + len(cards)
        yield from game.to_hand(targets[0], cards)
        if before < self.threshold <= before + len(cards):
            game.recover(seat, 1)


@PACKAGE.effect
class Jijiang(Skill):
    """激将 (lord): when you need a 杀, the other Shu characters are asked for one in turn order (行动顺序: from the
    current player, docs/generals.md#jijiang); in your play phase, InvokeSkill jijiang with the 杀's target asks them
    for a 杀 you then use."""

    name, zh = "jijiang", "激将"
    provides = frozenset({"slash"})
    active = True

    def supply(self, game: Game, seat: int, target: int | None) -> Settle[UsedCard | None]:
        for other in game.alive_seats(game.current):
            if other == seat or game.players[other].kingdom != "shu":
                continue
            card = yield from game.ruleset.ask_for_card(game, other, frozenset({"slash"}), self.name,
                                                         target=target, settle_now=False)
            if card is not None:
                return card
        return None

    def provide(self, game: Game, seat: int, reason: str) -> Settle[UsedCard | None]:
        card = yield from self.supply(game, seat, None)
        if card is not None:
            game.processing_to_discard(card.ids)
        return card

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        spec = game.ruleset.cards["slash"]
        targets = tuple(invoke.targets)
        probe = Use(seat, UsedCard("slash", (), Suit.NONE, Color.NONE, 0, skill=self.name), targets)
        problems: list[Violation] = []
        if invoke.cards:
            problems = bad("INVALID_CHOICE", "激将 names no cards of yours: the 杀 comes from others", seat)
        for t in targets:
            if t < game.n and game.players[t].alive and game.prohibited(seat, t, "slash") is not None:
                problems = bad("TARGET_PROHIBITED", f"seat {t} cannot be the target of a 杀 now", seat)
        if game.report(problems or list(spec.verify_use(game, probe))):
            return
        card = yield from self.supply(game, seat, targets[0] if targets else None)
        if card is None:
            return
        card = yield from self.turned(game, seat, card)
        game.players[seat].turn_flags["slash_in_play"] = 1
        if game.mode.use_hook:
            game.mode.card_used(game, seat, card.name, targets)
        yield from spec.use(game, Use(seat, card, targets))

    @staticmethod
    def turned(game: Game, seat: int, card: UsedCard) -> Settle[UsedCard]:
        """The lord uses the 杀 another character gave: their own effects may turn it as they would a 杀 of
        their own (朱雀羽扇, invoked after the answer: InvokeSkill fan)."""
        for eff in game.effects_of(seat):
            name = eff.turns_slash(game, seat, card)
            if name and (yield from offer(game, seat, eff.name)) is not None:
                return UsedCard(name, card.ids, card.suit, card.color, card.number, skill=eff.name)
        return card


@PACKAGE.effect
class Wusheng(ViewAs):
    """武圣: any red card (hand or equipped) as a 杀."""

    name, zh = "wusheng", "武圣"
    converts_to = frozenset({"slash"})
    zones = ("hand", "equip")
    what = "a red card"

    def fits(self, card: CardDef, name: str) -> bool:
        return card.color == Color.RED


@PACKAGE.effect
class Paoxiao(Skill):
    """咆哮 (locked): no limit on 杀 in your play phase."""

    name, zh = "paoxiao", "咆哮"

    def unlimited_slash(self, game: Game, seat: int) -> bool:
        return True


@PACKAGE.effect
class Guanxing(Skill):
    """观星: at the start of your preparation phase, look at the top X cards (X = living characters, at
    most 5) and put them back on top and/or at the bottom in any order (ChooseCards cards / bottom)."""

    name, zh = "guanxing", "观星"
    timings = frozenset({"phase_start"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.phase != pb.PHASE_START or (yield from offer(game, owner, self.name)) is None:
            return
        x = min(5, len(game.alive_seats()))
        seen: list[int] = []
        for _ in range(x):
            seen.append((yield from game.take_top()))
            game.processing.append(seen[-1])  # looked at: in the processing area until put back
        top, bottom = list(seen), []
        while True:
            answer = yield choice_request(owner, tuple(seen), x, self.name)
            if answer is None or answer is UNANSWERED:
                break
            assert isinstance(answer, pb.Event)
            a, b = list(answer.choose_cards.cards), list(answer.choose_cards.bottom)
            if sorted(a + b) != sorted(seen):
                game.report(bad("INVALID_CHOICE", "观星 puts back exactly the cards looked at, each once (top "
                                "in cards, bottom in bottom)", owner))
                continue
            top, bottom = a, b
            break
        for cid in seen:
            game.processing.remove(cid)
        game.draw_pile = list(reversed(bottom)) + game.draw_pile + list(reversed(top))
        game.journal.append(f"('guanxing', {tuple(top)!r}, {tuple(bottom)!r})")


@PACKAGE.effect
class Kongcheng(Skill):
    """空城 (locked): with no hand cards you cannot be chosen as the target of 杀 or 决斗."""

    name, zh = "kongcheng", "空城"

    def prohibits_target(self, game: Game, owner: int, user: int, card_name: str) -> bool:
        return (card_name in SLASHES or card_name == "duel") and not game.players[owner].hand


@PACKAGE.effect
class Longdan(ViewAs):
    """龙胆: a 杀 as a 闪, or a 闪 as a 杀 (hand cards)."""

    name, zh = "longdan", "龙胆"
    converts_to = frozenset({"slash", "jink"})
    what = "a 闪 (for a 杀) or a 杀 (for a 闪)"

    def fits(self, card: CardDef, name: str) -> bool:
        return card.name in SLASHES if name == "jink" else card.name == "jink"


@PACKAGE.effect
class Mashu(Skill):
    """马术 (locked): your distance to others −1."""

    name, zh = "mashu", "马术"

    def distance_from(self, game: Game, seat: int) -> int:
        return -1


@PACKAGE.effect
class Tieji(Skill):
    """铁骑: after you target a character with 杀, you may judge; if red, they cannot use 闪 against it."""

    name, zh = "tieji", "铁骑"
    timings = frozenset({"slash_target_chosen"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.source != owner or (yield from offer(game, owner, self.name, target=ctx.target)) is None:
            return
        judged = yield from game.judge(owner, self.name)
        if judged.color == Color.RED:
            ctx.no_jink = True
        yield from game.finish_judgment(owner, judged, self.name)


@PACKAGE.effect
class Jizhi(Skill):
    """集智: when you use a non-converted normal trick, you may draw 1."""

    name, zh = "jizhi", "集智"
    timings = frozenset({"card_used"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        card: UsedCard = ctx.card
        if ctx.seat != owner or card.real is None or card.real.type != "trick":
            return
        if (yield from offer(game, owner, self.name)) is not None:
            yield from game.draw(owner, 1, pb.DRAW_REASON_SKILL)


@PACKAGE.effect
class Qicai(Skill):
    """奇才 (locked): your tricks have no distance limit."""

    name, zh = "qicai", "奇才"

    def unlimited_distance(self, game: Game, seat: int, card_name: str) -> bool:
        spec = game.ruleset.cards.get(card_name)
        card = next((c for c in game.cards.values() if c.name == card_name), None)
        return spec is not None and card is not None and card.type in ("trick", "delayed_trick")
