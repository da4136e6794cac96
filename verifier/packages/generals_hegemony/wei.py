"""Wei 魏 in hegemony: 曹操, 司马懿, 夏侯惇, 张辽, 许褚, 郭嘉 and 甄姬's 倾国 are identity units (package.REUSED); the
rest is here: 洛神 (heg_luoshen), 神速, 巧变, 断粮, 据守, 强袭, 驱虎, 节命, 行殇, 放逐, 骁果."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import Game, Settle, Trigger, Violation
from verifier.packages.generals_hegemony.package import PACKAGE, point_fight
from verifier.packages.generals_standard.package import (
    Skill,
    ViewAs,
    bad,
    check_cards,
    check_hand_cost,
    check_targets,
    offer,
    offer_with_targets,
)
from verifier.packages.generals_standard.shu import Jijiang
from verifier.packages.generals_standard.wei import one_hand_card_each, other_with_hand
from verifier.packages.standard.basic import verify_slash_targets

TURNED_OVER = "turned_over"  # Player.marks: the core skips a turned-over character's next turn (叠置)


def turn_over(game: Game, seat: int) -> None:
    """叠置 / 平置: turn the character over, or back."""
    game.set_mark(seat, TURNED_OVER, 0 if game.players[seat].marks.get(TURNED_OVER) else 1)


@PACKAGE.effect
class HegLuoshen(Skill):
    """洛神 (hegemony): at the start of your start phase you may judge, again after each black result; the black
    cards wait in the processing area and are gained together at the end; the red one is discarded."""

    name, zh = "heg_luoshen", "洛神"
    timings = frozenset({"phase_start"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.phase != pb.PHASE_START:
            return
        black: list[int] = []
        while game.players[owner].alive:
            if (yield from offer(game, owner, self.name)) is None:
                break
            judged = yield from game.judge(owner, self.name)
            if judged.color == Color.BLACK:
                black.append(judged.id)
                continue
            yield from game.finish_judgment(owner, judged, self.name)
            break
        kept = [c for c in black if c in game.processing]
        if kept and game.players[owner].alive:
            yield from game.to_hand(owner, kept)
        game.processing_to_discard(black)


def shensu_slash(game: Game, owner: int, target: int) -> Settle[None]:
    """神速's 杀: treated as used on ``target``, with no distance limit; 朱雀羽扇 may make it a 火杀 (the hegemony
    wording: InvokeSkill fan, offered right after 神速's invocation, as for a 杀 激将 brings)."""
    card = yield from Jijiang.turned(game, owner, UsedCard("slash", (), Suit.NONE, Color.NONE, 0, skill="shensu"))
    yield from game.ruleset.use_as(game, Use(owner, card, (target,)))


@PACKAGE.effect
class Shensu(Skill):
    """神速: before your judgment phase you may skip it and your draw phase (InvokeSkill shensu, targets [t]); before
    your play phase you may skip it and discard an equipment card (cards [it], targets [t]); each time you are
    treated as using a 杀 on t, with no distance limit."""

    name, zh = "shensu", "神速"
    timings = frozenset({"before_phase"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.phase not in (pb.PHASE_JUDGMENT, pb.PHASE_PLAY) or ctx.skip:
            return
        play = ctx.phase == pb.PHASE_PLAY
        p = game.players[owner]
        if play and not any(game.cards[c].type == "equip" for c in [*p.hand, *p.equipped()]):
            return
        p.turn_flags["shensu_play"] = 1 if play else 0  # which option is offered (for bots)
        while True:
            inv = yield from offer(game, owner, self.name)
            if inv is None:
                return
            targets, cards = list(inv.targets), list(inv.cards)
            probe = Use(owner, UsedCard("slash", (), Suit.NONE, Color.NONE, 0, skill=self.name), tuple(targets))
            problems = [v for v in verify_slash_targets(game, probe, check_range=False) if v.hard]
            if not problems and game.players[targets[0]].alive is False:
                problems = bad("INVALID_TARGET", f"神速: seat {targets[0]} is dead", owner)
            if not problems and play:
                problems = check_cards(game, owner, cards, self.name, (1, 1), ("hand", "equip"))
                if not problems and game.cards[cards[0]].type != "equip":
                    problems = bad("SKILL_COST", f"神速 discards an equipment card, not {game.label(cards[0])}", owner)
            elif not problems and cards:
                problems = bad("INVALID_CHOICE", "神速 before the judgment phase costs no card", owner)
            if game.report(problems):
                continue
            ctx.skip = True
            if play:
                yield from game.to_discard(cards)
            elif ctx.skipped is not None:
                ctx.skipped.add(pb.PHASE_DRAW)
            yield from shensu_slash(game, owner, targets[0])
            return


@PACKAGE.effect
class Qiaobian(Skill):
    """巧变: before your judgment, draw, play or discard phase you may discard a hand card to skip it (InvokeSkill
    qiaobian, cards [it]); for a skipped draw phase you may then take a hand card from each of 1-2 others (targets,
    cards as 突袭), for a skipped play phase move one card of a judgment or equipment area into the same area of
    another (cards [it], targets [to])."""

    name, zh = "qiaobian", "巧变"
    timings = frozenset({"before_phase"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.phase not in (pb.PHASE_JUDGMENT, pb.PHASE_DRAW, pb.PHASE_PLAY, pb.PHASE_DISCARD) or ctx.skip:
            return
        if ctx.skipped is not None and ctx.phase in ctx.skipped:
            return
        p = game.players[owner]
        if not p.hand:
            return
        p.turn_flags["qiaobian_step"] = 0  # which step is offered (for bots): the skip
        while True:
            inv = yield from offer(game, owner, self.name)
            if inv is None:
                return
            cards = list(inv.cards)
            if game.report(check_cards(game, owner, cards, self.name, (1, 1), ("hand",))):
                continue
            break
        ctx.skip = True
        yield from game.to_discard(cards)
        p.turn_flags["qiaobian_step"] = ctx.phase
        if ctx.phase == pb.PHASE_DRAW:
            yield from self.take(game, owner)
        elif ctx.phase == pb.PHASE_PLAY:
            yield from self.move(game, owner)
        p.turn_flags["qiaobian_step"] = 0

    def take(self, game: Game, owner: int) -> Settle[None]:
        if not any(game.players[t].hand for t in game.alive_seats() if t != owner):
            return
        inv = yield from offer_with_targets(
            game, owner, self.name, (1, 2), lambda t: other_with_hand(game, owner, t),
            after=lambda inv: one_hand_card_each(game, owner, inv, "巧变 takes one hand card from each target"))
        if inv is None:
            return
        for t, c in zip(inv.targets, inv.cards, strict=True):
            if c in game.players[t].hand:  # (as 突袭: a loss skill may have moved it meanwhile)
                yield from game.to_hand(owner, [c])

    def move(self, game: Game, owner: int) -> Settle[None]:
        while True:
            inv = yield from offer(game, owner, self.name)
            if inv is None:
                return
            cards, targets = list(inv.cards), list(inv.targets)
            where = game.owner_zone(cards[0]) if len(cards) == 1 and cards[0] in game.cards else None
            problems: list[Violation] = []
            if where is None or where[1] == "hand" or len(targets) != 1 or targets[0] >= game.n \
                    or targets[0] == where[0] or not game.players[targets[0]].alive:
                problems = bad("INVALID_CHOICE", "巧变 moves one card of a judgment or equipment area to another "
                               "living character's same area", owner)
            elif where[1] == "equip" and game.cards[cards[0]].subtype in game.players[targets[0]].equips:
                problems = bad("INVALID_CHOICE", f"seat {targets[0]} already has a {game.cards[cards[0]].subtype}",
                               owner)
            elif where[1] == "judgment" and any(game.judgment_name(c) == game.judgment_name(cards[0])
                                                for c in game.players[targets[0]].judgment):
                problems = bad("INVALID_CHOICE", f"seat {targets[0]} already has a {game.judgment_name(cards[0])}",
                               owner)
            if game.report(problems):
                continue
            cid, to = cards[0], targets[0]
            if where is not None and where[1] == "equip":
                yield from game.equip(to, cid)
            else:
                yield from game.to_judgment(to, cid, game.judgment_as.get(cid, ""))
            return


@PACKAGE.effect
class Duanliang(ViewAs):
    """断粮: a black basic or equipment card (hand or equipped) as 兵粮寸断; your 兵粮寸断 reaches distance 2."""

    name, zh = "duanliang", "断粮"
    converts_to = frozenset({"supply_shortage"})
    zones = ("hand", "equip")
    what = "a black basic or equipment card"

    def fits(self, card: CardDef, name: str) -> bool:
        return card.color == Color.BLACK and card.type in ("basic", "equip")

    def distance_limit(self, game: Game, seat: int, card_name: str) -> int:
        return 2 if card_name == "supply_shortage" else 0


@PACKAGE.effect
class Jushou(Skill):
    """据守: at the start of your finish phase you may draw 3, then turn over (叠置)."""

    name, zh = "jushou", "据守"
    timings = frozenset({"phase_start"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.phase != pb.PHASE_FINISH or (yield from offer(game, owner, self.name)) is None:
            return
        yield from game.draw(owner, 3, pb.DRAW_REASON_SKILL)
        turn_over(game, owner)


@PACKAGE.effect
class Qiangxi(Skill):
    """强袭 (once per play phase): lose 1 HP or discard a weapon card (cards [it]) to deal 1 damage to a character
    in your attack range (targets [t])."""

    name, zh = "qiangxi", "强袭"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards, targets = list(invoke.cards), list(invoke.targets)
        problems = check_cards(game, seat, cards, self.name, (0, 1), ("hand", "equip"))
        if not problems and cards and game.cards[cards[0]].subtype != "weapon":
            problems = bad("SKILL_COST", f"强袭 discards a weapon card, not {game.label(cards[0])}", seat)
        without = cards[0] if cards else None
        if not problems:
            problems = check_targets(game, seat, targets, self.name, (1, 1),
                                     lambda t: "is yourself" if t == seat else (
                                         "" if game.distance(seat, t, without) <= game.attack_range(seat, without)
                                         else "is not in your attack range"))
        if game.report(problems):
            return
        game.players[seat].skill_uses[self.name] = 1
        if cards:
            yield from game.to_discard(cards)
        else:
            yield from game.lose_hp(seat, 1)
        if game.players[targets[0]].alive:
            yield from game.damage(seat, targets[0], 1)


@PACKAGE.effect
class Quhu(Skill):
    """驱虎 (once per play phase): 拼点 with a character with more HP than you (InvokeSkill quhu, targets [it, and the
    character in its attack range it is to damage, if there is one]); if you win it deals 1 damage to that
    character, else it deals 1 damage to you."""

    name, zh = "quhu", "驱虎"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        targets = list(invoke.targets)
        me = game.players[seat]
        problems: list[Violation] = []
        if not me.hand:
            problems = bad("SKILL_PRECONDITION", "驱虎's 拼点 needs a hand card of yours", seat)
        elif not targets or targets[0] >= game.n or targets[0] == seat or not game.players[targets[0]].alive:
            problems = bad("INVALID_TARGET", "驱虎 names another living character to 拼点 with", seat)
        else:
            tiger = targets[0]
            t = game.players[tiger]
            wolves = [w for w in game.alive_seats() if w != tiger and game.in_attack_range(tiger, w)]
            if t.hp <= me.hp or not t.hand:
                problems = bad("INVALID_TARGET", f"驱虎: seat {tiger} needs more HP than you and a hand card", seat)
            elif len(targets) != (2 if wolves else 1) or (wolves and targets[1] not in wolves):
                problems = bad("INVALID_TARGET", f"驱虎 names, after seat {tiger}, one character in its attack range "
                               f"({wolves or 'none'})", seat)
        if game.report(problems):
            return
        game.players[seat].skill_uses[self.name] = 1
        won = yield from point_fight(game, seat, targets[0], self.name)
        if won:
            if len(targets) == 2 and game.players[targets[1]].alive and game.players[targets[0]].alive:
                yield from game.damage(targets[0], targets[1], 1)
        elif game.players[targets[0]].alive:
            yield from game.damage(targets[0], seat, 1)
        else:
            yield from game.damage(None, seat, 1)


@PACKAGE.effect
class Jieming(Skill):
    """节命: for each point of damage you take, you may choose a character (targets [t]): it draws up to X hand cards,
    X = its max HP (at most 5)."""

    name, zh = "jieming", "节命"
    timings = frozenset({"damaged"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        for _ in range(ctx.amount):
            if not game.players[owner].alive:
                return
            inv = yield from offer_with_targets(game, owner, self.name, (1, 1), lambda t: "")
            if inv is None:
                return
            t = inv.targets[0]
            p = game.players[t]
            short = min(p.max_hp, 5) - len(p.hand)
            if short > 0:
                yield from game.draw(t, short, pb.DRAW_REASON_SKILL)


@PACKAGE.effect
class Xingshang(Skill):
    """行殇: when another character dies you may gain all its hand and equipment cards."""

    name, zh = "xingshang", "行殇"
    timings = frozenset({"death"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        dead = game.players[ctx.seat]
        cards = [*dead.hand, *dead.equipped()]
        if ctx.seat == owner or not cards or (yield from offer(game, owner, self.name, target=ctx.seat)) is None:
            return
        yield from game.to_hand(owner, cards)


@PACKAGE.effect
class Fangzhu(Skill):
    """放逐: after you take damage you may choose another character (targets [t]): it draws X (your lost HP) and
    turns over."""

    name, zh = "fangzhu", "放逐"
    timings = frozenset({"damaged"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        inv = yield from offer_with_targets(game, owner, self.name, (1, 1),
                                            lambda t: "is yourself" if t == owner else "")
        if inv is None:
            return
        t = inv.targets[0]
        me = game.players[owner]
        lost = me.max_hp - max(me.hp, 0)
        if lost > 0:
            yield from game.draw(t, lost, pb.DRAW_REASON_SKILL)
        turn_over(game, t)


@PACKAGE.effect
class Xiaoguo(Skill):
    """骁果: at the start of another character's finish phase you may discard a basic card (cards [it]); it then
    discards an equipment card (ChooseCards; hand or equipped) or, declining, takes 1 damage from you."""

    name, zh = "xiaoguo", "骁果"
    timings = frozenset({"others_phase"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        victim = ctx.seat
        if victim == owner or not any(game.cards[c].type == "basic" for c in game.players[owner].hand):
            return
        while True:
            inv = yield from offer(game, owner, self.name, target=victim)
            if inv is None:
                return
            cards = list(inv.cards)
            problems = check_hand_cost(game, owner, cards, self.name, (1, 1))
            if not problems and game.cards[cards[0]].type != "basic":
                problems = bad("SKILL_COST", f"骁果 discards a basic card, not {game.label(cards[0])}", owner)
            if game.report(problems):
                continue
            break
        yield from game.to_discard(cards)
        v = game.players[victim]
        equips = [c for c in [*v.hand, *v.equipped()] if game.cards[c].type == "equip"]
        chosen = (yield from game.choose(victim, equips, 1, self.name, optional=True)) if equips else None
        if chosen:
            yield from game.to_discard(chosen)
        elif v.alive:
            yield from game.damage(owner, victim, 1)
