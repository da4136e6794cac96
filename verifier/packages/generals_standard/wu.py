"""Wu 吴: 孙权, 甘宁, 吕蒙, 黄盖, 周瑜, 大乔, 陆逊, 孙尚香."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import Game, Settle, Trigger, Violation
from verifier.engine.requests import UNANSWERED, suit_request
from verifier.packages.generals_standard.package import (
    PACKAGE,
    Skill,
    ViewAs,
    bad,
    check_cost,
    check_targets,
    offer,
)


@PACKAGE.effect
class Zhiheng(Skill):
    """制衡 [1/phase]: discard 1 or more cards (hand and/or equipped), then draw as many. With no card
    discarded (SKILL_COST; FreeKill let it through) it is still the phase's use, and draws none."""

    name, zh = "zhiheng", "制衡"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards = list(invoke.cards)
        if game.report(bad_targets(game, seat, invoke, self.name)
                       or check_cost(game, seat, cards, self.name, (1, 999), ("hand", "equip"))):
            return
        game.players[seat].skill_uses[self.name] = 1
        yield from game.to_discard(cards)
        yield from game.draw(seat, len(cards), pb.DRAW_REASON_SKILL)


def bad_targets(game: Game, seat: int, invoke: pb.InvokeSkill, skill: str) -> list[Violation]:
    return bad("INVALID_TARGET", f"{skill} takes no targets", seat) if invoke.targets else []


@PACKAGE.effect
class Jiuyuan(Skill):
    """救援 (lord, locked): a 桃 another Wu character uses on you recovers 1 more."""

    name, zh = "jiuyuan", "救援"

    def recover_bonus(self, game: Game, seat: int, user: int, card: UsedCard) -> int:
        return 1 if user != seat and game.players[user].kingdom == "wu" else 0


@PACKAGE.effect
class Qixi(ViewAs):
    """奇袭: any black card (hand or equipped) as a 过河拆桥."""

    name, zh = "qixi", "奇袭"
    converts_to = frozenset({"dismantlement"})
    zones = ("hand", "equip")
    what = "a black card"

    def fits(self, card: CardDef, name: str) -> bool:
        return card.color == Color.BLACK


@PACKAGE.effect
class Keji(Skill):
    """克己: if you used or played no 杀 in this turn's play phase, you may skip your discard phase."""

    name, zh = "keji", "克己"
    timings = frozenset({"before_phase"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.phase != pb.PHASE_DISCARD or game.players[owner].turn_flags.get("slash_in_play"):
            return
        if (yield from offer(game, owner, self.name)) is not None:
            ctx.skip = True


@PACKAGE.effect
class Kurou(Skill):
    """苦肉: in your play phase, any number of times, lose 1 HP, then draw 2 (only if you survive)."""

    name, zh = "kurou", "苦肉"
    active = True

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        if invoke.cards:
            game.report(bad("INVALID_CHOICE", "苦肉 takes no cards", seat))
            return
        if game.report(bad_targets(game, seat, invoke, self.name)):
            return
        yield from game.lose_hp(seat, 1)
        if game.players[seat].alive:
            yield from game.draw(seat, 2, pb.DRAW_REASON_SKILL)


@PACKAGE.effect
class Yingzi(Skill):
    """英姿: draw 1 more in your draw phase."""

    name, zh = "yingzi", "英姿"
    timings = frozenset({"draw_phase"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if not ctx.skip and (yield from offer(game, owner, self.name)) is not None:
            ctx.count += 1


@PACKAGE.effect
class Fanjian(Skill):
    """反间 [1/phase]: another character names a suit, then takes one of your hand cards blind; if its suit
    differs, you deal them 1 damage. They keep the card. With no hand card (SKILL_PRECONDITION; FreeKill let
    it through) it is the phase's use and nothing more happens: with no card to take there is nothing to name
    a suit for (FreeKill asks for none either: fk_rand_p10_23 seq 3367-3380)."""

    name, zh = "fanjian", "反间"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        targets = list(invoke.targets)
        problems = check_targets(game, seat, targets, self.name, (1, 1),
                                 lambda t: "is yourself" if t == seat else "")
        if not problems and invoke.cards:
            problems = bad("INVALID_CHOICE", "反间 names no cards: the target takes one blind", seat)
        if not problems and not game.players[seat].hand:
            problems = [Violation("SKILL_PRECONDITION", f"反间 gives the target one of your hand cards: seat {seat} "
                                  "has none (it counts as the phase's 反间; nothing follows)", seat)]
        if game.report(problems):
            return
        game.players[seat].skill_uses[self.name] = 1
        if not game.players[seat].hand:
            return
        target = targets[0]
        named = Suit.SPADE
        while True:
            answer = yield suit_request(target, self.name)
            if answer is None or answer is UNANSWERED:
                game.flag("WRONG_TIMING", f"seat {target} had to name a suit for 反间 (♠ assumed)", target)
                break
            assert isinstance(answer, pb.Event)
            if answer.choose_suit.suit == pb.SUIT_UNSPECIFIED:
                game.report(bad("INVALID_CHOICE", "反间: name one of the four suits", target))
                continue
            named = Suit(answer.choose_suit.suit)
            break
        hand = game.players[seat].hand
        chosen = (yield from game.choose(target, list(hand), 1, self.name)) if hand else None
        if not chosen:
            return
        yield from game.to_hand(target, chosen)
        if game.cards[chosen[0]].suit != named:
            yield from game.damage(seat, target, 1)


@PACKAGE.effect
class Guose(ViewAs):
    """国色: any ♦ card (hand or equipped) as a 乐不思蜀."""

    name, zh = "guose", "国色"
    converts_to = frozenset({"indulgence"})
    zones = ("hand", "equip")
    what = "a ♦ card"

    def fits(self, card: CardDef, name: str) -> bool:
        return card.suit == Suit.DIAMOND


@PACKAGE.effect
class Liuli(Skill):
    """流离: when you become the target of a 杀, you may discard a card and pass the 杀 to another
    character in your attack range (not its user; a legal target for it). The range is judged without
    the discarded card; a target out of range is reported (INVALID_TARGET) and the 杀 passed on all the
    same (FreeKill let a range that needed the discarded weapon or −1 horse through)."""

    name, zh = "liuli", "流离"
    timings = frozenset({"slash_targeted"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        user = ctx.source
        if ctx.target != owner or user is None or not game.players[owner].has_cards():
            return
        p = game.players[owner]
        if not (p.hand or p.equips):
            return
        while True:
            inv = yield from offer(game, owner, self.name, target=user)
            if inv is None:
                return
            cards, targets = list(inv.cards), list(inv.targets)
            problems = check_cost(game, owner, cards, self.name, (1, 1), ("hand", "equip"))
            if not any(v.hard for v in problems):
                card = cards[0] if cards else None
                problems += check_targets(game, owner, targets, self.name, (1, 1),
                                          lambda t: self.why_not(game, owner, user, t, ctx.use),
                                          lambda t: self.out_of_range(game, owner, t, card))  # noqa: B023
            if game.report(problems):
                continue
            yield from game.to_discard(cards)
            ctx.target = targets[0]
            return

    def why_not(self, game: Game, owner: int, user: int, t: int, use: Use | None) -> str:
        """Why ``t`` can never take the 杀 ``use`` (rejected); "" if they can."""
        if t == owner:
            return "is yourself"
        if t == user:
            return "is the 杀's user"
        if game.prohibited(user, t, use.card.name if use else "slash") is not None:
            return "cannot be the target of this 杀 (空城)"
        if use is not None and t in use.targets:
            return "is already a target of this 杀"
        return ""

    def why_not_legal(self, game: Game, owner: int, user: int, t: int, card: int | None, use: Use | None) -> str:
        """Why passing the 杀 to ``t`` for ``card`` breaks a rule, range included ("" if it is legal; for bots)."""
        return self.why_not(game, owner, user, t, use) or self.out_of_range(game, owner, t, card)

    @staticmethod
    def out_of_range(game: Game, owner: int, t: int, card: int | None) -> str:
        # Attack range and distance as they are once the discarded card is gone.
        rng, dist = game.attack_range(owner, without=card), game.distance(owner, t, without=card)
        return "" if dist <= rng else (f"is at distance {dist}, beyond your attack range {rng} once the discarded "
                                       "card is gone")


@PACKAGE.effect
class Qianxun(Skill):
    """谦逊 (locked): you cannot be the target of 顺手牵羊 or 乐不思蜀."""

    name, zh = "qianxun", "谦逊"

    def prohibits_target(self, game: Game, owner: int, user: int, card_name: str) -> bool:
        return card_name in ("snatch", "indulgence")


@PACKAGE.effect
class Lianying(Skill):
    """连营: after you lose your last hand card, you may draw 1."""

    name, zh = "lianying", "连营"
    timings = frozenset({"lost_hand"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if (yield from offer(game, owner, self.name)) is not None:
            yield from game.draw(owner, 1, pb.DRAW_REASON_SKILL)


@PACKAGE.effect
class Xiaoji(Skill):
    """枭姬: each time you lose a card from your equipment area, you may draw 2."""

    name, zh = "xiaoji", "枭姬"
    timings = frozenset({"lost_equip"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if (yield from offer(game, owner, self.name)) is not None:
            yield from game.draw(owner, 2, pb.DRAW_REASON_SKILL)


@PACKAGE.effect
class Jieyin(Skill):
    """结姻 [1/phase]: discard 2 hand cards; you and a wounded male character each recover 1. Without the
    two hand cards (SKILL_COST), or on a character who is not a wounded male (INVALID_TARGET), it is
    carried out all the same, as FreeKill did: the cards named are discarded, each recovers if wounded."""

    name, zh = "jieyin", "结姻"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards, targets = list(invoke.cards), list(invoke.targets)
        problems = check_cost(game, seat, cards, self.name, (2, 2), ("hand",))
        problems += check_targets(game, seat, targets, self.name, (1, 1), lambda t: "is yourself" if t == seat else "",
                                  lambda t: self.why_not(game, t))
        if game.report(problems):
            return
        game.players[seat].skill_uses[self.name] = 1
        yield from game.to_discard(cards)
        game.recover(targets[0], 1)  # the target first, then you (FreeKill's order)
        game.recover(seat, 1)

    @staticmethod
    def why_not(game: Game, t: int) -> str:
        p = game.players[t]
        if p.gender != pb.GENDER_MALE:
            return "is not male"
        return "" if p.wounded else "is not wounded"
