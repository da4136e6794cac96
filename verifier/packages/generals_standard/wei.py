"""Wei 魏: 曹操, 司马懿, 夏侯惇, 张辽, 许褚, 郭嘉, 甄姬."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit
from verifier.engine.effects import UsedCard
from verifier.engine.game import DamageInfo, Game, Settle, Trigger, Violation
from verifier.packages.generals_standard.package import (
    PACKAGE,
    SLASHES,
    Skill,
    ViewAs,
    bad,
    check_cards,
    check_targets,
    offer,
    offer_with_targets,
)


@PACKAGE.effect
class Jianxiong(Skill):
    """奸雄: after you take damage, you may gain the card that caused it, if it is still in the processing
    area: also 闪电 (discarded only once its damage is settled) and, for damage passed on by 铁锁连环, the
    card that caused the first damage (docs/generals.md#jianxiong; FreeKill and QSanguosha offer both)."""

    name, zh = "jianxiong", "奸雄"
    timings = frozenset({"damaged"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        card: UsedCard | None = ctx.card
        if card is None:
            return
        ids = [c for c in card.ids if c in game.processing]
        if not ids or (yield from offer(game, owner, self.name)) is None:
            return
        yield from game.to_hand(owner, ids)


@PACKAGE.effect
class Hujia(Skill):
    """护驾 (lord): when you need a 闪, the other Wei characters are asked for one in turn order (行动顺序: from the
    current player, docs/generals.md#hujia)."""

    name, zh = "hujia", "护驾"
    provides = frozenset({"jink"})

    def provide(self, game: Game, seat: int, reason: str) -> Settle[UsedCard | None]:
        for other in game.alive_seats(game.current):
            if other == seat or game.players[other].kingdom != "wei":
                continue
            card = yield from game.ruleset.ask_for_card(game, other, frozenset({"jink"}), self.name)
            if card is not None:
                return card
        return None


@PACKAGE.effect
class Guicai(Skill):
    """鬼才: before any judgment card takes effect, you may play a hand card to replace it."""

    name, zh = "guicai", "鬼才"
    timings = frozenset({"judging"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        while game.players[owner].hand:
            inv = yield from offer(game, owner, self.name, target=ctx.seat)
            if inv is None:
                return
            cards = list(inv.cards)
            if game.report(check_cards(game, owner, cards, self.name, (1, 1), ("hand",))):
                continue
            old: CardDef = ctx.card
            yield from game.to_processing(cards)
            game.processing_to_discard([old.id])
            ctx.card = game.cards[cards[0]]
            return


@PACKAGE.effect
class Fankui(Skill):
    """反馈: after you take damage, you may gain one card (hand or equipped) of the source."""

    name, zh = "fankui", "反馈"
    timings = frozenset({"damaged"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        src = ctx.source
        if src is None or not game.players[src].alive:
            return
        zones = ("equip",) if src == owner else ("hand", "equip")
        s = game.players[src]
        if not (s.equips or (s.hand and "hand" in zones)):
            return
        while True:
            inv = yield from offer(game, owner, self.name, target=src)
            if inv is None:
                return
            cards = list(inv.cards)
            if game.report(check_cards(game, src, cards, self.name, (1, 1), zones)):
                continue
            yield from game.to_hand(owner, cards)
            return


@PACKAGE.effect
class Ganglie(Skill):
    """刚烈: after you take damage, you may judge; unless ♥, the source discards 2 hand cards or takes
    1 damage from you (a source with fewer than 2 hand cards must take the damage). After damage with no
    source, or whose source is dead, it may still be invoked: the judgment is made (鬼才 may replace it),
    with no further effect (docs/rules.md#ganglie-no-source, as FreeKill: fk_rand_p6_11 seq 2137-2157)."""

    name, zh = "ganglie", "刚烈"
    timings = frozenset({"damaged"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        src = ctx.source
        if (yield from offer(game, owner, self.name, target=src)) is None:
            return
        judged = yield from game.judge(owner, self.name)
        hit = judged.suit != Suit.HEART
        yield from game.finish_judgment(owner, judged, self.name)
        if not hit or src is None or not game.players[src].alive:
            return
        hand = game.players[src].hand
        if len(hand) >= 2:
            chosen = yield from game.choose(src, list(hand), 2, self.name, optional=True)
            if chosen:
                yield from game.to_discard(chosen)
                return
        yield from game.damage(owner, src, 1)


def other_with_hand(game: Game, owner: int, t: int) -> str:
    """Why ``t`` cannot lose a hand card to 突袭 (or 巧变's take), or ""."""
    return "is yourself" if t == owner else ("" if game.players[t].hand else "has no hand cards")


def one_hand_card_each(game: Game, owner: int, inv: pb.InvokeSkill, mismatch: str) -> list[Violation]:
    """突袭's and 巧变's cards: one hand card of each target, in the targets' order; ``mismatch`` says the counts
    differ."""
    if len(inv.cards) != len(inv.targets):
        return bad("INVALID_CHOICE", mismatch, owner)
    problems: list[Violation] = []
    for t, c in zip(inv.targets, inv.cards, strict=True):
        problems += game.verify_own_cards(t, [c], ("hand",))
    return problems


@PACKAGE.effect
class Tuxi(Skill):
    """突袭: in your draw phase, instead of drawing, take one hand card from each of 1-2 others."""

    name, zh = "tuxi", "突袭"
    timings = frozenset({"draw_phase"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if not any(game.players[t].hand for t in game.alive_seats() if t != owner):
            return
        inv = yield from offer_with_targets(
            game, owner, self.name, (1, 2), lambda t: other_with_hand(game, owner, t),
            after=lambda inv: one_hand_card_each(game, owner, inv, f"突袭 takes one hand card from each target: "
                                                 f"{len(inv.targets)} target(s), {len(inv.cards)} card(s)"))
        if inv is None:
            return
        ctx.skip = True
        for t, c in zip(inv.targets, inv.cards, strict=True):
            # (A skill set off by the first card's loss may have moved the second one: 死谏 discards it.)
            if c in game.players[t].hand:
                yield from game.to_hand(owner, [c])


@PACKAGE.effect
class Luoyi(Skill):
    """裸衣: draw 1 fewer in your draw phase; this turn your 杀 and 决斗 deal +1 damage."""

    name, zh = "luoyi", "裸衣"
    timings = frozenset({"draw_phase"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.skip or ctx.count <= 0 or (yield from offer(game, owner, self.name)) is None:
            return
        ctx.count -= 1
        game.players[owner].turn_flags[self.name] = 1

    def damage_caused(self, game: Game, info: DamageInfo) -> None:
        seat, card = info.source, info.card
        if card is None or seat is None or info.chained or game.current != seat \
                or not game.players[seat].turn_flags.get(self.name):
            return  # (passed-on damage carries the first damage's amount, 裸衣's +1 included)
        if card.name in SLASHES or card.name == "duel":
            info.amount += 1


@PACKAGE.effect
class Tiandu(Skill):
    """天妒: after your judgment card takes effect, you may gain it."""

    name, zh = "tiandu", "天妒"
    timings = frozenset({"judged"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        card: CardDef = ctx.card
        if ctx.seat != owner or card.id not in game.processing:
            return
        if (yield from offer(game, owner, self.name)) is not None:
            yield from game.to_hand(owner, [card.id])


@PACKAGE.effect
class Yiji(Skill):
    """遗计: for each point of damage you take, you may draw the top 2 cards and give any of them to
    others (InvokeSkill yiji with the cards and one target, as often as you like; decline to keep)."""

    name, zh = "yiji", "遗计"
    timings = frozenset({"damaged"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        carried: pb.InvokeSkill | None = None
        for _ in range(ctx.amount):
            if not game.players[owner].alive:
                return
            inv = carried if carried is not None else (yield from offer(game, owner, self.name))
            carried = None
            if inv is None:
                return
            if inv.cards or inv.targets:
                # The first invocation only draws; misnamed cards are reported and the draw goes on.
                game.flag("INVALID_CHOICE", "遗计 draws first: the invocation names no cards or targets, the "
                          "giving follows", owner)
            drawn = yield from game.draw(owner, 2, pb.DRAW_REASON_SKILL)
            left = [c for c in drawn if c in game.players[owner].hand]
            while left:
                give = yield from offer(game, owner, self.name, target=owner)  # target: the giving step
                if give is None:
                    break
                cards, targets = list(give.cards), list(give.targets)
                if not cards and not targets:
                    # Giving nothing: the giving is over and this is the next point's invocation.
                    carried = give
                    break
                wrong = [c for c in cards if c not in left]
                problems = check_targets(game, owner, targets, self.name, (1, 1),
                                         lambda t: "is yourself" if t == owner else "")
                if not cards or wrong:
                    problems = bad("INVALID_CHOICE", "遗计 gives only cards it just drew", owner)
                if game.report(problems):
                    continue
                yield from game.to_hand(targets[0], cards)
                left = [c for c in left if c not in cards]


@PACKAGE.effect
class Luoshen(Skill):
    """洛神: at the start of your preparation phase, judge; each black result is gained and you may go on."""

    name, zh = "luoshen", "洛神"
    timings = frozenset({"phase_start"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.phase != pb.PHASE_START:
            return
        while game.players[owner].alive:
            if (yield from offer(game, owner, self.name)) is None:
                return
            judged = yield from game.judge(owner, self.name)
            if judged.color == Color.BLACK:
                yield from game.to_hand(owner, [judged.id])
                continue
            yield from game.finish_judgment(owner, judged, self.name)
            return


@PACKAGE.effect
class Qingguo(ViewAs):
    """倾国: any black hand card as a 闪."""

    name, zh = "qingguo", "倾国"
    converts_to = frozenset({"jink"})
    what = "a black hand card"

    def fits(self, card: CardDef, name: str) -> bool:
        return card.color == Color.BLACK
