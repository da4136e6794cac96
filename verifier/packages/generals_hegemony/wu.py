"""Wu 吴 in hegemony: 甘宁, 吕蒙, 黄盖, 周瑜, 大乔 and 孙尚香's 结姻 are identity units (package.REUSED_WU); the rest is
here: 制衡 (heg_zhiheng), 谦逊 (heg_qianxun), 度势, 枭姬 (heg_xiaoji), 英魂, 天香, 红颜, 天义, 不屈, 好施, 缔盟, 直谏,
固政, 短兵, 奋迅 (docs/generals-hegemony.md#wu)."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import DamageInfo, Game, Settle, Trigger, Violation
from verifier.engine.requests import option_request
from verifier.packages.generals_hegemony.package import PACKAGE, point_fight
from verifier.packages.generals_standard.package import (
    SLASHES,
    Skill,
    ViewAs,
    bad,
    check_cards,
    check_hand_cost,
    check_targets,
    offer,
    offer_with_targets,
)
from verifier.packages.generals_standard.wu import Zhiheng


def choose_option(game: Game, seat: int, options: tuple[str, ...], reason: str) -> Settle[str]:
    """A mandatory ChooseOption: one of ``options`` (the first when the log gives none, reported)."""
    while True:
        answer = yield option_request(seat, options, reason, optional=False)
        if not isinstance(answer, pb.Event):
            game.flag("INVALID_CHOICE", f"seat {seat} had to choose {' or '.join(options)} for {reason} "
                      f"({options[0]} taken)", seat)
            return options[0]
        option = answer.choose_option.option
        if option in options:
            return option
        game.report(bad("INVALID_CHOICE", f"seat {seat} for {reason}: {option!r} is not one of "
                        f"{', '.join(options)}", seat))


@PACKAGE.effect
class HegZhiheng(Zhiheng):
    """制衡 (hegemony) [1/phase]: as identity's, but at most X cards, X = your max HP (more is rejected)."""

    name, zh = "heg_zhiheng", "制衡"

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        most = game.players[seat].max_hp
        if len(invoke.cards) > most:
            game.report(bad("SKILL_COST", f"制衡 discards at most {most} card(s) (the max HP), not "
                            f"{len(invoke.cards)}", seat))
            return
        yield from super().activate(game, seat, invoke)


@PACKAGE.effect
class HegQianxun(Skill):
    """谦逊 (hegemony, locked): when you become the target of 顺手牵羊 or 乐不思蜀, you cancel yourself as a target."""

    name, zh = "heg_qianxun", "谦逊"
    timings = frozenset({"target_confirming"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        card: UsedCard = ctx.card
        if card.name in ("snatch", "indulgence"):
            ctx.skip = True
        return
        yield  # pragma: no cover


@PACKAGE.effect
class Duoshi(ViewAs):
    """度势: a red hand card as 以逸待劳, at most 4 times per phase (the fifth is SKILL_LIMIT)."""

    name, zh = "duoshi", "度势"
    converts_to = frozenset({"await_exhausted"})
    what = "a red hand card"
    timings = frozenset({"card_used"})
    most = 4

    def fits(self, card: CardDef, name: str) -> bool:
        return card.color == Color.RED

    def verify_conversion(self, game: Game, seat: int, virtual: pb.VirtualCard) -> list[Violation]:
        if game.players[seat].skill_uses.get(self.name, 0) >= self.most:
            return bad("SKILL_LIMIT", f"seat {seat} already used 度势 {self.most} times in this phase", seat)
        return super().verify_conversion(game, seat, virtual)

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        card: UsedCard = ctx.card
        if ctx.seat == owner and card is not None and card.skill == self.name:
            uses = game.players[owner].skill_uses
            uses[self.name] = uses.get(self.name, 0) + 1
        return
        yield  # pragma: no cover


@PACKAGE.effect
class HegXiaoji(Skill):
    """枭姬 (hegemony): each time cards leave your equipment area, you may draw 2 — once per move, however many
    equipment cards it takes (identity: per card)."""

    name, zh = "heg_xiaoji", "枭姬"
    timings = frozenset({"lost_equip"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        # The same move's other equipment losses are still pending (Game.fire_losses): they are this one.
        game.lost[:] = [entry for entry in game.lost if entry != (owner, "equip")]
        if (yield from offer(game, owner, self.name)) is not None:
            yield from game.draw(owner, 2, pb.DRAW_REASON_SKILL)


@PACKAGE.effect
class Yinghun(Skill):
    """英魂: at the start of your start phase, if you are wounded, you may choose another character (targets [t]);
    X = your lost HP; with X > 1 you choose (ChooseOption) "draw_x" (it draws X, then discards 1) or "discard_x"
    (it draws 1, then discards X); with X = 1 it draws 1 and discards 1. It discards what it has, if fewer."""

    name, zh = "yinghun", "英魂"
    timings = frozenset({"phase_start"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        me = game.players[owner]
        if ctx.phase != pb.PHASE_START or not me.wounded:
            return
        inv = yield from offer_with_targets(game, owner, self.name, (1, 1),
                                            lambda t: "is yourself" if t == owner else "")
        if inv is None:
            return
        t, x = inv.targets[0], me.max_hp - me.hp
        option = (yield from choose_option(game, owner, ("draw_x", "discard_x"), self.name)) if x > 1 else "draw_x"
        draw, discard = (x, 1) if option == "draw_x" else (1, x)
        yield from game.draw(t, draw, pb.DRAW_REASON_SKILL)
        victim = game.players[t]
        cards = [*victim.hand, *victim.equipped()]
        if victim.alive and cards:
            chosen = yield from game.choose(t, cards, min(discard, len(cards)), self.name)
            if chosen:
                yield from game.to_discard(chosen)


@PACKAGE.effect
class Tianxiang(Skill):
    """天香: when you would take damage, you may discard a ♥ hand card (红颜: ♠ too) and choose another character
    (InvokeSkill tianxiang, cards [it], targets [t]): the damage is dealt to it instead (same source, amount,
    nature and card); once that damage has settled, it draws X, X = its lost HP."""

    name, zh = "tianxiang", "天香"
    timings = frozenset({"damage_incoming"})

    def hearts(self, game: Game, owner: int) -> list[int]:
        return [c for c in game.players[owner].hand if game.card_as(owner, c).suit == Suit.HEART]

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        info: DamageInfo = ctx.damage
        if ctx.seat != owner or not self.hearts(game, owner):
            return
        while True:
            inv = yield from offer(game, owner, self.name)
            if inv is None:
                return
            cards, targets = list(inv.cards), list(inv.targets)
            problems = check_hand_cost(game, owner, cards, self.name, (1, 1))  # (an equipped card: paid, flagged)
            if not problems and game.card_as(owner, cards[0]).suit != Suit.HEART:
                problems = bad("SKILL_COST", f"天香 discards a ♥ hand card, not {game.label(cards[0])}", owner)
            if not any(v.hard for v in problems):
                problems += check_targets(game, owner, targets, self.name, (1, 1),
                                          lambda t: "is yourself" if t == owner else "")
            if game.report(problems):
                continue
            break
        ctx.skip = True
        yield from game.to_discard(cards)
        t = targets[0]
        yield from game.damage(info.source, t, info.amount, info.nature, info.card, ignores_armor=info.ignores_armor,
                               chained=info.chained)
        p = game.players[t]
        if p.alive and p.max_hp > p.hp:
            yield from game.draw(t, p.max_hp - max(p.hp, 0), pb.DRAW_REASON_SKILL)


@PACKAGE.effect
class Hongyan(Skill):
    """红颜 (locked): your ♠ cards count as ♥ (Game.card_as: the cards you use, play, convert or pay with, and
    judgments on you)."""

    name, zh = "hongyan", "红颜"

    def seen_suit(self, game: Game, seat: int, card: CardDef) -> Suit:
        return Suit.HEART if card.suit == Suit.SPADE else card.suit


TIANYI = "tianyi"  # Player.turn_flags: 1 won (more 杀), 2 lost (no 杀) this turn


@PACKAGE.effect
class Tianyi(Skill):
    """天义 [1/phase]: 拼点 with another character (targets [t]). Won: this turn you may use one more 杀, your 杀
    has no distance limit and may take one more target. Not won: you cannot use 杀 this turn."""

    name, zh = "tianyi", "天义"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        targets = list(invoke.targets)
        problems: list[Violation] = []
        if not game.players[seat].hand:
            problems = bad("SKILL_PRECONDITION", "天义's 拼点 needs a hand card of yours", seat)
        elif invoke.cards:
            problems = bad("INVALID_CHOICE", "天义 names no cards: the 拼点 asks for them", seat)
        else:
            problems = check_targets(game, seat, targets, self.name, (1, 1),
                                     lambda t: "is yourself" if t == seat else (
                                         "" if game.players[t].hand else "has no hand card"))
        if game.report(problems):
            return
        game.players[seat].skill_uses[self.name] = 1
        won = yield from point_fight(game, seat, targets[0], self.name)
        game.players[seat].turn_flags[TIANYI] = 1 if won else 2

    @staticmethod
    def state(game: Game, seat: int) -> int:
        return game.players[seat].turn_flags.get(TIANYI, 0) if game.current == seat else 0

    def unlimited_slash(self, game: Game, seat: int) -> bool:
        return self.state(game, seat) == 1 and game.players[seat].slash_count < 2

    def extra_slash_targets(self, game: Game, use: Use) -> int:
        return 1 if self.state(game, use.user) == 1 else 0

    def unlimited_distance(self, game: Game, seat: int, card_name: str) -> bool:
        return card_name in SLASHES and self.state(game, seat) == 1

    def forbids_use(self, game: Game, seat: int, card_name: str) -> str:
        return "天义 was not won: no 杀 this turn" if card_name in SLASHES and self.state(game, seat) == 2 else ""


@PACKAGE.effect
class Buqu(Skill):
    """不屈: when you are dying (HP ≤ 0) you may put the top cards of the draw pile on your general as 创
    (InvokeSkill buqu; CardsMoved to ZONE_GENERAL) until there are 1 − HP of them; while their numbers all
    differ you leave the dying state at once (nobody is asked for 桃). When you recover, the newest 创 go to the
    discard pile until 1 − HP remain (all of them at HP ≥ 1)."""

    name, zh = "buqu", "不屈"
    timings = frozenset({"dying"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        p = game.players[owner]
        if ctx.seat != owner or p.hp > 0 or (yield from offer(game, owner, self.name)) is None:
            return
        while len(p.pile) < 1 - p.hp:
            cid = yield from game.take_top()
            game.to_pile(owner, [cid])
        numbers = [game.cards[c].number for c in p.pile]
        if len(set(numbers)) == len(numbers):
            ctx.skip = True

    def after_recover(self, game: Game, seat: int) -> None:
        p = game.players[seat]
        keep = max(0, 1 - p.hp)
        if len(p.pile) > keep:
            game.pile_out(seat, list(reversed(p.pile[keep:])))


HAOSHI = "haoshi"  # Player.turn_flags: 好施 was invoked this draw phase


@PACKAGE.effect
class Haoshi(Skill):
    """好施: in your draw phase you may draw 2 more; then, with more than 5 hand cards, you give half of them
    (rounded down) to the other character with the fewest hand cards (InvokeSkill haoshi, cards, targets [t]:
    one of those tied for fewest)."""

    name, zh = "haoshi", "好施"
    timings = frozenset({"draw_phase", "draw_done"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        p = game.players[owner]
        if timing == "draw_phase":
            if not ctx.skip and (yield from offer(game, owner, self.name)) is not None:
                ctx.count += 2
                p.turn_flags[HAOSHI] = 1
            return
        if not p.turn_flags.pop(HAOSHI, 0) or len(p.hand) <= 5:
            return
        give = len(p.hand) // 2
        fewest = self.fewest(game, owner)
        p.turn_flags[HAOSHI + "/give"] = 1  # the giving step is offered (for bots)
        while True:
            inv = yield from offer(game, owner, self.name)
            if inv is None:
                game.flag("INVALID_CHOICE", f"好施: seat {owner} must give {give} hand cards to one of {fewest} (the "
                          "first ones to the first of them are given)", owner)
                cards, t = p.hand[:give], fewest[0]
                break
            cards, targets = list(inv.cards), list(inv.targets)
            problems = check_hand_cost(game, owner, cards, self.name, (give, give))
            if not any(v.hard for v in problems):
                problems += check_targets(game, owner, targets, self.name, (1, 1),
                                          lambda t: "" if t in fewest else
                                          f"is not among the fewest hand cards ({fewest})")
            if game.report(problems):
                continue
            t = targets[0]
            break
        p.turn_flags.pop(HAOSHI + "/give", None)
        yield from game.to_hand(t, cards)

    @staticmethod
    def fewest(game: Game, owner: int) -> list[int]:
        others = [t for t in game.alive_seats() if t != owner]
        least = min(len(game.players[t].hand) for t in others)
        return [t for t in others if len(game.players[t].hand) == least]


@PACKAGE.effect
class Dimeng(Skill):
    """缔盟 [1/phase]: choose two other characters (targets [a, b]) and discard exactly X cards, hand or equipped
    (X = the difference of their hand counts, maybe 0): they swap hands."""

    name, zh = "dimeng", "缔盟"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards, targets = list(invoke.cards), list(invoke.targets)
        problems = check_targets(game, seat, targets, self.name, (2, 2), lambda t: "is yourself" if t == seat else "")
        if not problems:
            a, b = (game.players[t] for t in targets)
            x = abs(len(a.hand) - len(b.hand))
            if len(cards) != x:
                problems = bad("SKILL_COST", f"缔盟 discards exactly {x} card(s) (the difference of the hand counts), "
                               f"not {len(cards)}", seat)
            else:
                problems = game.verify_own_cards(seat, cards, ("hand", "equip"))
        if game.report(problems):
            return
        game.players[seat].skill_uses[self.name] = 1
        yield from game.to_discard(cards)
        first, second = targets
        a_hand, b_hand = list(game.players[first].hand), list(game.players[second].hand)
        yield from game.to_hand(second, a_hand)
        yield from game.to_hand(first, b_hand)


@PACKAGE.effect
class Zhijian(Skill):
    """直谏: in your play phase, any number of times, put an equipment card from your hand into another
    character's equipment area (cards [it], targets [t]; that slot empty), then draw 1."""

    name, zh = "zhijian", "直谏"
    active = True

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards, targets = list(invoke.cards), list(invoke.targets)
        problems = check_cards(game, seat, cards, self.name, (1, 1), ("hand",))
        if not problems and game.cards[cards[0]].type != "equip":
            problems = bad("SKILL_COST", f"直谏 puts an equipment card, not {game.label(cards[0])}", seat)
        slot = game.cards[cards[0]].subtype if not problems else ""
        problems = problems or check_targets(game, seat, targets, self.name, (1, 1),
                                             lambda t: "is yourself" if t == seat else (
                                                 f"already has a {slot}" if slot in game.players[t].equips else ""))
        if game.report(problems):
            return
        yield from game.equip(targets[0], cards[0])
        yield from game.draw(seat, 1, pb.DRAW_REASON_SKILL)


GUZHENG = "guzheng/left"  # Game.package_state: the cards 固政 is offered for


@PACKAGE.effect
class Guzheng(Skill):
    """固政: at the end of another character's discard phase you may give it back one of the hand cards it
    discarded in the phase that are still in the discard pile, and then gain all the others (InvokeSkill
    guzheng, cards [the one given back, then all the others or none])."""

    name, zh = "guzheng", "固政"
    timings = frozenset({"discard_phase_end"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        victim = ctx.seat
        left = [c for c in (ctx.cards or ()) if c in game.discard_pile]
        if victim == owner or not left:
            return
        game.package_state[GUZHENG] = left  # (what is offered, for bots)
        while True:
            inv = yield from offer(game, owner, self.name, target=victim)
            if inv is None:
                return
            cards = list(inv.cards)
            problems: list[Violation] = []
            if not cards or cards[0] not in left:
                problems = bad("INVALID_CHOICE", f"固政 gives back one of the cards seat {victim} discarded in this "
                               f"phase that are still in the discard pile ({[game.label(c) for c in left]})", owner)
            elif len(cards) > 1 and sorted(cards[1:]) != sorted(c for c in left if c != cards[0]):
                problems = bad("INVALID_CHOICE", "固政 gains all the other discarded cards or none", owner)
            if game.report(problems):
                continue
            break
        for c in cards:
            game.discard_pile.remove(c)
        yield from game.to_hand(victim, cards[:1])
        if cards[1:]:
            yield from game.to_hand(owner, cards[1:])


@PACKAGE.effect
class Duanbing(Skill):
    """短兵: your 杀 may take one more target, at distance 1 from you (with it, one of the targets is at distance 1)."""

    name, zh = "duanbing", "短兵"

    def extra_slash_targets(self, game: Game, use: Use) -> int:
        return 1 if any(game.distance(use.user, t) == 1 for t in use.targets) else 0


FENXUN = "fenxun"  # Player.turn_flags: 1 + the seat 奋迅 brought to distance 1 this turn


@PACKAGE.effect
class Fenxun(Skill):
    """奋迅 [1/phase]: discard a card (cards [it], hand or equipped) and choose another character (targets [t]):
    your distance to it counts as 1 for the rest of this turn."""

    name, zh = "fenxun", "奋迅"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards, targets = list(invoke.cards), list(invoke.targets)
        problems = check_cards(game, seat, cards, self.name, (1, 1), ("hand", "equip"))
        problems = problems or check_targets(game, seat, targets, self.name, (1, 1),
                                             lambda t: "is yourself" if t == seat else "")
        if game.report(problems):
            return
        game.players[seat].skill_uses[self.name] = 1
        yield from game.to_discard(cards)
        game.players[seat].turn_flags[FENXUN] = 1 + targets[0]

    def distance_fixed(self, game: Game, seat: int, to: int) -> int | None:
        if game.current == seat and game.players[seat].turn_flags.get(FENXUN) == 1 + to:
            return 1
        return None
