"""Shu 蜀 in hegemony: 关羽, 张飞, 赵云, 马超, 黄月英 and 诸葛亮's 观星 are identity units (package.REUSED); the rest
is here: 仁德 (heg_rende), 空城 (heg_kongcheng), 烈弓, 狂骨, 连环, 涅槃, 火计, 看破, 八阵, 享乐, 放权, 祸首, 再起,
巨象, 烈刃, 淑慎, 神智."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit
from verifier.engine.effects import UsedCard
from verifier.engine.game import DamageInfo, Game, Settle, Trigger
from verifier.packages.generals_hegemony.package import PACKAGE, point_fight, same_kingdom
from verifier.packages.generals_standard.package import (
    SLASHES,
    Skill,
    ViewAs,
    check_hand_cost,
    offer,
    offer_with_targets,
)
from verifier.packages.generals_standard.shu import Rende
from verifier.packages.maneuvering.tricks import CHAINED

KUANGGU = "kuanggu/close"  # Game.package_state: the damage 狂骨 applies to (their source was at distance ≤ 1)


@PACKAGE.effect
class HegRende(Rende):
    """仁德 (hegemony): as identity's, but the recovery comes when the total given this phase reaches 3."""

    name, zh = "heg_rende", "仁德"
    threshold = 3


@PACKAGE.effect
class HegKongcheng(Skill):
    """空城 (hegemony, locked): when you become the target of a 杀 or 决斗 with no hand cards, you cancel yourself."""

    name, zh = "heg_kongcheng", "空城"
    timings = frozenset({"target_confirming"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        card: UsedCard = ctx.card
        if (card.name in SLASHES or card.name == "duel") and not game.players[owner].hand:
            ctx.skip = True
        return
        yield  # pragma: no cover


@PACKAGE.effect
class Liegong(Skill):
    """烈弓: in your play phase, after your 杀 targets a character whose hand count is at least your HP or at most your
    attack range, you may make it unable to use 闪 against it."""

    name, zh = "liegong", "烈弓"
    timings = frozenset({"slash_target_chosen"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        t = ctx.target
        if ctx.source != owner or t is None or game.current != owner or game.phase != pb.PHASE_PLAY:
            return
        n = len(game.players[t].hand)
        if not (n >= game.players[owner].hp or n <= game.attack_range(owner)):
            return
        if (yield from offer(game, owner, self.name, target=t)) is not None:
            ctx.no_jink = True


@PACKAGE.effect
class Kuanggu(Skill):
    """狂骨 (locked): for each point of damage you deal to a character at distance ≤ 1 from you (measured before the
    damage), you recover 1."""

    name, zh = "kuanggu", "狂骨"

    def damage_caused(self, game: Game, info: DamageInfo) -> None:
        if info.source is not None and game.distance(info.source, info.target) <= 1:
            game.package_state.setdefault(KUANGGU, []).append(info)


def kuanggu_rule(game: Game, info: DamageInfo) -> Settle[None]:
    pending = game.package_state.get(KUANGGU)
    if not pending or not any(i is info for i in pending):
        return
    pending[:] = [i for i in pending if i is not info]
    src = info.source
    if src is not None and game.players[src].alive and game.skill_of(src, "kuanggu") is not None:
        yield from game.recovered(src, game.recover(src, info.amount))


PACKAGE.after_damage.append(kuanggu_rule)


@PACKAGE.effect
class Lianhuan(ViewAs):
    """连环: a ♣ hand card as 铁锁连环, which may also be recast."""

    name, zh = "lianhuan", "连环"
    converts_to = frozenset({"iron_chain"})
    what = "a ♣ hand card"
    recasts = True

    def fits(self, card: CardDef, name: str) -> bool:
        return card.suit == Suit.CLUB


@PACKAGE.effect
class Niepan(Skill):
    """涅槃 (limited: once a game): while you are dying you may discard all your cards, turn face up and unchained,
    draw 3 and set your HP to 3 (at most your max HP)."""

    name, zh = "niepan", "涅槃"
    timings = frozenset({"dying"})
    limited = True

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        p = game.players[owner]
        if ctx.seat != owner or p.marks.get(self.name) or (yield from offer(game, owner, self.name)) is None:
            return
        game.set_mark(owner, self.name, 1)
        yield from game.to_discard(p.all_cards())
        game.set_mark(owner, "turned_over", 0)
        game.set_mark(owner, CHAINED, 0)
        yield from game.draw(owner, 3, pb.DRAW_REASON_SKILL)
        yield from game.recovered(owner, game.recover(owner, min(3, p.max_hp) - p.hp))


@PACKAGE.effect
class Huoji(ViewAs):
    """火计: a red hand card as 火攻."""

    name, zh = "huoji", "火计"
    converts_to = frozenset({"fire_attack"})
    what = "a red hand card"

    def fits(self, card: CardDef, name: str) -> bool:
        return card.color == Color.RED


@PACKAGE.effect
class Kanpo(ViewAs):
    """看破: a black hand card as 无懈可击."""

    name, zh = "kanpo", "看破"
    converts_to = frozenset({"nullification"})
    what = "a black hand card"

    def fits(self, card: CardDef, name: str) -> bool:
        return card.color == Color.BLACK


@PACKAGE.effect
class Bazhen(Skill):
    """八阵 (locked): with no armor equipped you are treated as having 八卦阵 (InvokeSkill bazhen for its judgment);
    what ignores armor ignores it."""

    name, zh = "bazhen", "八阵"
    provides = frozenset({"jink"})
    is_armor = True

    def can_provide(self, game: Game, seat: int) -> bool:
        return "armor" not in game.players[seat].equips

    def provide(self, game: Game, seat: int, reason: str) -> Settle[UsedCard | None]:
        card = yield from game.judge(seat, "eight_diagram")
        yield from game.finish_judgment(seat, card, "eight_diagram")
        if card.color == Color.RED:
            return UsedCard("jink", (), card.suit, card.color, card.number, skill=self.name)
        return None


@PACKAGE.effect
class Xiangle(Skill):
    """享乐 (locked): when you become the target of another's 杀, it discards a basic card (ChooseCards) or the 杀 has
    no effect on you."""

    name, zh = "xiangle", "享乐"
    timings = frozenset({"target_confirming"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        card: UsedCard = ctx.card
        user = ctx.source
        if card.name not in SLASHES or user is None or user == owner:
            return
        # (Not the 杀 itself: being used, it is on its way out of the hand.)
        basics = [c for c in game.players[user].hand if game.cards[c].type == "basic" and c not in card.ids]
        chosen = (yield from game.choose(user, basics, 1, self.name, optional=True)) \
            if basics and game.players[user].alive else None
        if chosen:
            yield from game.to_discard(chosen)
        else:
            ctx.skip = True


@PACKAGE.effect
class Fangquan(Skill):
    """放权: you may skip your play phase; then at the end of the turn you may discard a hand card and choose another
    character (InvokeSkill fangquan, cards [it], targets [t]): it takes an extra turn."""

    name, zh = "fangquan", "放权"
    timings = frozenset({"before_phase", "turn_end"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        p = game.players[owner]
        if timing == "before_phase":
            if ctx.phase == pb.PHASE_PLAY and not ctx.skip and (yield from offer(game, owner, self.name)) is not None:
                ctx.skip = True
                p.turn_flags[self.name] = 1
            return
        if not p.turn_flags.get(self.name) or not p.hand:
            return
        inv = yield from offer_with_targets(
            game, owner, self.name, (1, 1), lambda t: "is yourself" if t == owner else "",
            before=lambda inv: [v for v in check_hand_cost(game, owner, list(inv.cards), self.name, (1, 1)) if v.hard],
            # (an equipped card of its own: SKILL_COST, paid with it all the same)
            after=lambda inv: check_hand_cost(game, owner, list(inv.cards), self.name, (1, 1)))
        if inv is None:
            return
        p.turn_flags.pop(self.name, None)
        yield from game.to_discard(list(inv.cards))
        game.extra_turns.append(inv.targets[0])


def savage_assault(ctx: Trigger) -> bool:
    card: UsedCard | None = ctx.card
    return card is not None and card.name == "savage_assault"


@PACKAGE.effect
class Huoshou(Skill):
    """祸首 (locked): 南蛮入侵 has no effect on you; the damage of another's 南蛮入侵 is dealt by you."""

    name, zh = "huoshou", "祸首"
    timings = frozenset({"target_confirming"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if savage_assault(ctx):
            ctx.skip = True
        return
        yield  # pragma: no cover

    def redirect_source(self, game: Game, owner: int, info: DamageInfo) -> int | None:
        card = info.card
        if card is None or card.name != "savage_assault" or info.source == owner or info.chained:
            return None
        return owner


@PACKAGE.effect
class Zaiqi(Skill):
    """再起: at the start of your draw phase, if you are wounded, you may reveal the top X cards instead of drawing
    (X = your lost HP): you recover 1 for each ♥ among them, which are discarded, and gain the rest."""

    name, zh = "zaiqi", "再起"
    timings = frozenset({"draw_phase"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        p = game.players[owner]
        if ctx.skip or not p.wounded or (yield from offer(game, owner, self.name)) is None:
            return
        ctx.skip = True
        shown = []
        for _ in range(p.max_hp - p.hp):
            cid = yield from game.take_top()
            game.processing.append(cid)
            game.journal.append(f"('proc', {cid})")
            shown.append(cid)
        ev = pb.Event()
        ev.reveal.cards.extend(shown)
        ev.reveal.reason = self.name
        game.emit(ev, "MOVE_MISMATCH")
        hearts = [c for c in shown if game.cards[c].suit == Suit.HEART]
        if hearts:
            yield from game.recovered(owner, game.recover(owner, len(hearts)))
        game.processing_to_discard(hearts)
        rest = [c for c in shown if c not in hearts]
        if rest:
            yield from game.to_hand(owner, rest)


@PACKAGE.effect
class Juxiang(Skill):
    """巨象 (locked): 南蛮入侵 has no effect on you; once another's 南蛮入侵 has settled, you gain it."""

    name, zh = "juxiang", "巨象"
    timings = frozenset({"target_confirming", "card_done"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if not savage_assault(ctx):
            return
        if timing == "target_confirming":
            ctx.skip = True
            return
        card: UsedCard = ctx.card
        ids = [c for c in card.ids if c in game.discard_pile]
        if ctx.seat != owner and ids:
            for c in ids:
                game.discard_pile.remove(c)
            yield from game.to_hand(owner, ids)


@PACKAGE.effect
class Lieren(Skill):
    """烈刃: after your 杀 damages a character you may 拼点 with it; if you win, you take one of its cards
    (ChooseCards)."""

    name, zh = "lieren", "烈刃"


def lieren_rule(game: Game, info: DamageInfo) -> Settle[None]:
    src, target, card = info.source, info.target, info.card
    if src is None or card is None or info.chained or card.name not in SLASHES or src == target:
        return
    if game.skill_of(src, "lieren") is None and not any(e.name == "lieren" for e in game.players[src].latent_skills):
        return
    if not game.players[src].alive or not game.players[target].alive or not game.players[src].hand \
            or not game.players[target].hand:
        return
    if (yield from offer(game, src, "lieren", target=target)) is None:
        return
    if (yield from point_fight(game, src, target, "lieren")) and game.players[target].has_cards():
        chosen = yield from game.choose(src, game.players[target].all_cards(), 1, "lieren")
        if chosen:
            yield from game.to_hand(src, chosen)


PACKAGE.after_damage.append(lieren_rule)


@PACKAGE.effect
class Shushen(Skill):
    """淑慎: for each point you recover you may choose another character of your kingdom (targets [t]): it draws 1."""

    name, zh = "shushen", "淑慎"
    timings = frozenset({"recovered"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        for _ in range(ctx.amount):
            if not any(t != owner and same_kingdom(game, owner, t) for t in game.alive_seats()):
                return
            inv = yield from offer_with_targets(
                game, owner, self.name, (1, 1),
                lambda t: "is yourself" if t == owner else (
                    "" if same_kingdom(game, owner, t) else "is not of your kingdom"))
            if inv is None:
                return
            yield from game.draw(inv.targets[0], 1, pb.DRAW_REASON_SKILL)


@PACKAGE.effect
class Shenzhi(Skill):
    """神智: at the start of your start phase you may discard all your hand cards; if they were at least as many as
    your HP, you recover 1."""

    name, zh = "shenzhi", "神智"
    timings = frozenset({"phase_start"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        p = game.players[owner]
        if ctx.phase != pb.PHASE_START or not p.hand or (yield from offer(game, owner, self.name)) is None:
            return
        count = len(p.hand)
        yield from game.to_discard(list(p.hand))
        if count >= p.hp:
            yield from game.recovered(owner, game.recover(owner, 1))
