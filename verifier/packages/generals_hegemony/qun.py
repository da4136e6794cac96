"""Qun 群 in hegemony: 华佗's 急救 and 青囊, 吕布's 无双 and 貂蝉's 闭月 are identity units (QUN_REUSED); the rest is
here: 离间 (heg_lijian), 乱击, 双雄, 完杀, 乱武, 帷幕, 马术 (mashu_pangde, mashu_mateng), 猛进, 雷击, 鬼道, 悲歌, 断肠,
雄异, 名士, 礼让, 双刃, 死谏, 随势, 狂斧, 祸水, 倾城 (docs/generals-hegemony.md#qun)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import DamageInfo, Game, Settle, Trigger, Violation
from verifier.engine.requests import UNANSWERED, card_request, option_request
from verifier.packages import generals_standard
from verifier.packages.generals_hegemony.package import PACKAGE, point_fight, same_kingdom
from verifier.packages.generals_hegemony.wei import turn_over
from verifier.packages.generals_standard.package import (
    SLASHES,
    Skill,
    ViewAs,
    bad,
    check_cards,
    check_targets,
    offer,
    offer_with_targets,
)
from verifier.packages.generals_standard.qun import Lijian
from verifier.packages.generals_standard.shu import Mashu
from verifier.packages.standard.basic import verify_slash_targets

if TYPE_CHECKING:
    from verifier.packages.modes.hegemony import HegemonyMode

# Qun skills whose 2014 hegemony text is the identity one: the identity units themselves.
QUN_REUSED = ("jijiu", "qingnang", "wushuang", "biyue")
for _name in QUN_REUSED:
    PACKAGE.effects[_name] = generals_standard.PACKAGE.effects[_name]

SLOTS = ("main", "deputy")
LIRANG = "lirang/offered"  # Game.package_state: the cards 礼让 may give while it is offered
_CARD_TYPES: dict[str, str] = {}


def card_type(game: Game, name: str) -> str:
    """basic | trick | delayed_trick | equip of a card name (a virtual card's too), from the game's deck."""
    if name not in _CARD_TYPES:
        _CARD_TYPES[name] = next((c.type for c in game.cards.values() if c.name == name), "")
    return _CARD_TYPES[name]


def hegemony(game: Game) -> HegemonyMode:
    from verifier.packages.modes.hegemony import HegemonyMode

    assert isinstance(game.mode, HegemonyMode)
    return game.mode


def has_skill(game: Game, seat: int, name: str) -> bool:
    """Has the seat this skill, face up or on a face-down general (its offer then needs a reveal)?"""
    p = game.players[seat]
    return any(e.name == name for e in p.skills) or any(e.name == name for e in p.latent_skills)


def one_card_of(game: Game, owner: int, victim: int, cards: list[int], skill: str,
                zones: tuple[str, ...] = ("hand", "equip")) -> list[Violation]:
    """One card (``cards``) of another character's ``zones``."""
    if len(cards) != 1:
        return bad("INVALID_CHOICE", f"{skill} names exactly one card of seat {victim}, not {len(cards)}", owner)
    return [Violation(v.code, v.message, owner, v.card, hard=True)
            for v in game.verify_own_cards(victim, cards, zones)]


def choose_slot(game: Game, seat: int, options: tuple[str, ...], reason: str, dead: bool = False) -> Settle[int]:
    """A required ChooseOption between "main" and "deputy" (those in ``options``); the first one if none is made.
    ``dead``: asked of a character that has just died (断肠)."""
    while True:
        answer = yield option_request(seat, options, reason, optional=False, of_the_dead=dead)
        if not isinstance(answer, pb.Event):
            return SLOTS.index(options[0])
        option = answer.choose_option.option
        if option in options:
            return SLOTS.index(option)
        game.report([Violation("INVALID_CHOICE", f"seat {seat} for {reason}: {option!r} is not one of "
                               f"{', '.join(options)}", seat, hard=True)])


# ---------------------------------------------------------------------- 貂蝉


@PACKAGE.effect
class HegLijian(Lijian):
    """离间 (hegemony): as identity's, but the 决斗 is a use like any other: it can be nullified, and its target's
    skills see it (空城 cancels)."""

    name, zh = "heg_lijian", "离间"

    def duel(self, game: Game, user: int, target: int) -> Settle[None]:
        duel = UsedCard("duel", (), Suit.NONE, Color.NONE, 0, skill=self.name)
        yield from game.ruleset.use_as(game, Use(user, duel, (target,)))


# ---------------------------------------------------------------------- 袁绍, 颜良&文丑


@PACKAGE.effect
class Luanji(ViewAs):
    """乱击: two hand cards of one suit as 万箭齐发."""

    name, zh = "luanji", "乱击"
    converts_to = frozenset({"archery_attack"})
    what = "two hand cards of one suit"

    def verify_conversion(self, game: Game, seat: int, virtual: pb.VirtualCard) -> list[Violation]:
        cards = list(virtual.subcards)
        if len(cards) != 2:
            return bad("INVALID_CONVERSION", f"乱击 makes a 万箭齐发 from exactly two hand cards, not {len(cards)}",
                       seat)
        owned = game.verify_own_cards(seat, cards, ("hand",))
        if owned:
            return owned
        if game.cards[cards[0]].suit != game.cards[cards[1]].suit:
            return [Violation("INVALID_CONVERSION", f"乱击 makes a 万箭齐发 only from {self.what}, not "
                              f"{game.label(cards[0])} and {game.label(cards[1])}", seat, hard=True)]
        return []


@PACKAGE.effect
class Shuangxiong(ViewAs):
    """双雄: at the start of your draw phase you may judge instead of drawing and gain the judgment card; for the
    rest of the turn a hand card of the other colour may be used as 决斗."""

    name, zh = "shuangxiong", "双雄"
    converts_to = frozenset({"duel"})
    timings = frozenset({"draw_phase"})
    what = "a hand card of the other colour than 双雄's judgment"

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.skip or (yield from offer(game, owner, self.name)) is None:
            return
        ctx.skip = True
        judged = yield from game.judge(owner, self.name)
        game.players[owner].turn_flags[self.name] = int(judged.color)
        if judged.id in game.processing:
            yield from game.to_hand(owner, [judged.id])

    def timing(self, game: Game, seat: int) -> str:
        return "" if game.players[seat].turn_flags.get(self.name) else "works only after its judgment this turn"

    def fits(self, card: CardDef, name: str) -> bool:
        return True

    def verify_conversion(self, game: Game, seat: int, virtual: pb.VirtualCard) -> list[Violation]:
        problems = super().verify_conversion(game, seat, virtual)
        if problems:
            return problems
        card = game.cards[virtual.subcards[0]]
        if int(card.color) == game.players[seat].turn_flags.get(self.name):
            return [Violation("INVALID_CONVERSION", f"双雄 makes a 决斗 only from {self.what}, not {card.label()}",
                              seat, card.id, hard=True)]
        return []


# ---------------------------------------------------------------------- 贾诩


@PACKAGE.effect
class Wansha(Skill):
    """完杀 (locked): during your turn, only you and the dying character may use 桃 to save them."""

    name, zh = "wansha", "完杀"

    def forbids_rescue(self, game: Game, owner: int, rescuer: int, dying: int) -> bool:
        return game.current == owner and rescuer not in (owner, dying)


@PACKAGE.effect
class Luanwu(Skill):
    """乱武 (limited: once a game, in your play phase): every other character, in seat order, uses a 杀 on a character
    at the smallest distance from it (Respond{card, target}), or loses 1 HP."""

    name, zh = "luanwu", "乱武"
    active = True
    limited = True

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        # A second use is SKILL_LIMIT before it comes here (Effect.limited, in the replay).
        if invoke.cards or invoke.targets:
            game.report([Violation("INVALID_CHOICE", "乱武 takes no cards and no targets", seat)])
        game.set_mark(seat, self.name, 1)
        for other in game.alive_seats(seat):
            if other != seat and game.players[other].alive:
                yield from self.one(game, other)

    @staticmethod
    def targets_for(game: Game, seat: int) -> list[int]:
        """The characters ``seat`` may use 乱武's 杀 on: the nearest others that it can attack."""
        others = [t for t in game.alive_seats() if t != seat]
        if not others:
            return []
        nearest = min(game.distance(seat, t) for t in others)
        probe = UsedCard("slash", (), Suit.NONE, Color.NONE, 0)
        return [t for t in others if game.distance(seat, t) == nearest
                and not any(True for _ in verify_slash_targets(game, Use(seat, probe, (t,))))]

    def one(self, game: Game, seat: int) -> Settle[None]:
        allowed = self.targets_for(game, seat)
        while allowed:
            answer = yield card_request(seat, frozenset({"slash"}), self.name)
            if answer is None or answer is UNANSWERED:
                break
            assert isinstance(answer, pb.Event)
            if not answer.HasField("respond"):
                game.report(bad("WRONG_TIMING", f"乱武: seat {seat} uses a 杀 or loses 1 HP", seat))
                continue
            r = answer.respond
            target = r.target if r.HasField("target") else (allowed[0] if len(allowed) == 1 else -1)
            if target not in allowed:
                game.report(bad("INVALID_TARGET", f"乱武: seat {seat}'s 杀 goes to one of the nearest characters "
                                f"it can attack ({allowed}), not {target}", seat))
                continue
            card = game.ruleset.resolve_card(game, seat, r.card, ("hand",))
            if card is None:
                continue
            if not card.name.endswith("slash"):
                game.report([Violation("WRONG_CARD", f"乱武: seat {seat} answered with {game.used_card_label(card)}; "
                                       "a 杀 is needed", seat, card.ids[0] if card.ids else None, hard=True)])
                continue
            yield from game.ruleset.use_as(game, Use(seat, card, (target,)))
            return
        yield from game.lose_hp(seat, 1)


@PACKAGE.effect
class Weimu(Skill):
    """帷幕 (locked): when you become the target of a black trick (delayed or not), you cancel yourself."""

    name, zh = "weimu", "帷幕"
    timings = frozenset({"target_confirming"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        card: UsedCard = ctx.card
        if card.color == Color.BLACK and card_type(game, card.name) in ("trick", "delayed_trick"):
            ctx.skip = True
        return
        yield  # pragma: no cover


# ---------------------------------------------------------------------- 庞德, 马腾


@PACKAGE.effect
class MashuPangde(Mashu):
    """马术 (庞德's, locked): a separate instance of 马术 — with 马腾's it counts twice (H-20)."""

    name = "mashu_pangde"


@PACKAGE.effect
class MashuMateng(Mashu):
    """马术 (马腾's, locked): a separate instance of 马术 (H-20)."""

    name = "mashu_mateng"


@PACKAGE.effect
class Mengjin(Skill):
    """猛进: after your 杀 is dodged by its target's 闪, you may discard one of its cards (cards [it]; hand or
    equipped)."""

    name, zh = "mengjin", "猛进"
    timings = frozenset({"slash_jinked"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        victim = ctx.target
        if ctx.source != owner or victim is None or victim == owner:
            return
        v = game.players[victim]
        if not v.alive or not (v.hand or v.equips):
            return
        while True:
            inv = yield from offer(game, owner, self.name, target=victim)
            if inv is None:
                return
            cards = list(inv.cards)
            if game.report(one_card_of(game, owner, victim, cards, self.name)):
                continue
            break
        yield from game.to_discard(cards)


@PACKAGE.effect
class Xiongyi(Skill):
    """雄异 (limited: once a game, in your play phase): you and every other character of your kingdom draw 3; then,
    if no kingdom on the table has fewer characters than yours, you recover 1."""

    name, zh = "xiongyi", "雄异"
    active = True
    limited = True

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        # A second use is SKILL_LIMIT before it comes here (Effect.limited, in the replay).
        if invoke.cards or invoke.targets:
            game.report([Violation("INVALID_CHOICE", "雄异 takes no cards and no targets", seat)])
        game.set_mark(seat, self.name, 1)
        for t in game.alive_seats(seat):
            if same_kingdom(game, seat, t) and game.players[t].alive:
                yield from game.draw(t, 3, pb.DRAW_REASON_SKILL)
        if game.players[seat].alive and self.fewest(game, seat):
            yield from game.recovered(seat, game.recover(seat, 1))

    @staticmethod
    def fewest(game: Game, seat: int) -> bool:
        """docs/generals-hegemony.md#qun: the living characters with a kingdom, counted by kingdom (a careerist is
        a kingdom of one); face-down characters count for none."""
        counts: dict[str, int] = {}
        for t in game.alive_seats():
            side = game.mode.allegiance(game, t)
            if side:
                counts[side] = counts.get(side, 0) + 1
        mine = counts.get(game.mode.allegiance(game, seat), 0)
        return all(n >= mine for n in counts.values())


# ---------------------------------------------------------------------- 张角


@PACKAGE.effect
class Leiji(Skill):
    """雷击: after you use or play a 闪 you may choose a character (targets [t]): it judges; ♠: you deal it 2 thunder
    damage."""

    name, zh = "leiji", "雷击"
    timings = frozenset({"card_answered"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        card: UsedCard = ctx.card
        if card.name != "jink":
            return
        inv = yield from offer_with_targets(game, owner, self.name, (1, 1), lambda t: "")
        if inv is None:
            return
        t = inv.targets[0]
        judged = yield from game.judge(t, self.name)
        struck = judged.suit == Suit.SPADE
        yield from game.finish_judgment(t, judged, self.name)
        if struck and game.players[t].alive:
            yield from game.damage(owner, t, 2, pb.DAMAGE_NATURE_THUNDER)


@PACKAGE.effect
class Guidao(Skill):
    """鬼道: before any judgment card takes effect, you may play a black card (hand or equipped; cards [it]) to
    replace it, and gain the replaced card."""

    name, zh = "guidao", "鬼道"
    timings = frozenset({"judging"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        p = game.players[owner]
        while any(game.cards[c].color == Color.BLACK for c in [*p.hand, *p.equipped()]):
            inv = yield from offer(game, owner, self.name, target=ctx.seat)
            if inv is None:
                return
            cards = list(inv.cards)
            problems = check_cards(game, owner, cards, self.name, (1, 1), ("hand", "equip"))
            if not problems and game.cards[cards[0]].color != Color.BLACK:
                problems = bad("SKILL_COST", f"鬼道 plays a black card, not {game.label(cards[0])}", owner)
            if game.report(problems):
                continue
            old: CardDef = ctx.card
            yield from game.to_processing(cards)
            ctx.card = game.cards[cards[0]]
            if old.id in game.processing:
                yield from game.to_hand(owner, [old.id])
            return


# ---------------------------------------------------------------------- 蔡文姬


@PACKAGE.effect
class Beige(Skill):
    """悲歌: after a character takes damage from a 杀 and is still alive, you may discard a card (cards [it]) to make
    it judge: ♥ it recovers 1, ♦ it draws 2, ♣ the source discards 2 cards (ChooseCards), ♠ the source turns over."""

    name, zh = "beige", "悲歌"


def beige_rule(game: Game, info: DamageInfo) -> Settle[None]:
    card, victim, src = info.card, info.target, info.source
    if card is None or card.name not in SLASHES or not game.players[victim].alive:
        return
    for owner in game.alive_seats(game.current):
        p = game.players[owner]
        if not has_skill(game, owner, "beige") or not (p.hand or p.equips) or not game.players[victim].alive:
            continue
        while True:
            inv = yield from offer(game, owner, "beige", target=victim)
            if inv is None:
                break
            cards = list(inv.cards)
            if game.report(check_cards(game, owner, cards, "beige", (1, 1), ("hand", "equip"))):
                continue
            yield from game.to_discard(cards)
            yield from beige_judgment(game, victim, src)
            break


def beige_judgment(game: Game, victim: int, src: int | None) -> Settle[None]:
    judged = yield from game.judge(victim, "beige")
    suit = judged.suit
    yield from game.finish_judgment(victim, judged, "beige")
    if suit == Suit.HEART:
        yield from game.recovered(victim, game.recover(victim, 1))
    elif suit == Suit.DIAMOND:
        yield from game.draw(victim, 2, pb.DRAW_REASON_SKILL)
    elif src is not None and game.players[src].alive:
        s = game.players[src]
        if suit == Suit.CLUB and (s.hand or s.equips):
            held = [*s.hand, *s.equipped()]
            chosen = yield from game.choose(src, held, min(2, len(held)), "beige")
            if chosen:
                yield from game.to_discard(chosen)
        elif suit == Suit.SPADE:
            turn_over(game, src)


PACKAGE.after_damage.append(beige_rule)


@PACKAGE.effect
class Duanchang(Skill):
    """断肠 (locked): when you die, your killer loses every skill of one of its generals, which you choose
    (ChooseOption main | deputy)."""

    name, zh = "duanchang", "断肠"
    timings = frozenset({"died"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        killer = ctx.source
        if killer is None or killer == owner or not game.players[killer].alive:
            return
        mode = hegemony(game)
        options = tuple(SLOTS[s] for s in (0, 1) if not mode.generals[killer].skills_lost[s])
        if not options:
            return
        slot = yield from choose_slot(game, owner, options, self.name, dead=True)
        mode.lose_skills(game, killer, slot)


# ---------------------------------------------------------------------- 孔融


@PACKAGE.effect
class Mingshi(Skill):
    """名士 (locked): damage to you from a source with a face-down general is reduced by 1."""

    name, zh = "mingshi", "名士"

    def damage_inflicted(self, game: Game, info: DamageInfo) -> None:
        src = info.source
        if src is not None and src != info.target and any(not up for _, up in game.mode.seat_generals(game, src)):
            info.amount -= 1


@PACKAGE.effect
class Lirang(Skill):
    """礼让: each time cards you discarded are put into the discard pile, you may give them to others (cards [some of
    them], targets [one other character per card])."""

    name, zh = "lirang", "礼让"
    timings = frozenset({"discarded"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        thrown = [c for c in ctx.card if c in game.discard_pile]
        if not thrown or len(game.alive_seats()) < 2:
            return
        while True:
            game.package_state[LIRANG] = tuple(thrown)  # (what is offered, for bots)
            inv = yield from offer(game, owner, self.name)
            game.package_state.pop(LIRANG, None)
            if inv is None:
                return
            cards, targets = list(inv.cards), list(inv.targets)
            problems: list[Violation] = []
            if not cards or len(cards) != len(targets) or len(set(cards)) != len(cards):
                problems = bad("INVALID_CHOICE", "礼让 names each card given once, with one target per card", owner)
            elif any(c not in thrown for c in cards):
                problems = bad("INVALID_CHOICE", f"礼让 gives only the cards just discarded ({thrown})", owner)
            else:
                for t in targets:
                    if t == owner or t >= game.n or not game.players[t].alive:
                        problems = bad("INVALID_TARGET", f"礼让: seat {t} is not another living character", owner)
                        break
            if game.report(problems):
                continue
            break
        for c, t in zip(cards, targets, strict=True):
            game.discard_pile.remove(c)
            yield from game.to_hand(t, [c])


# ---------------------------------------------------------------------- 纪灵


@PACKAGE.effect
class Shuangren(Skill):
    """双刃: at the start of your play phase you may 拼点 a character (targets [it, and the 杀's target if another of
    its kingdom]); win: you are treated as using a 杀 with no distance limit on it (or that other); else your play
    phase ends."""

    name, zh = "shuangren", "双刃"
    timings = frozenset({"before_phase"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.phase != pb.PHASE_PLAY or ctx.skip or not game.players[owner].hand:
            return
        if not any(t != owner and game.players[t].hand for t in game.alive_seats()):
            return
        while True:
            inv = yield from offer(game, owner, self.name)
            if inv is None:
                return
            targets = list(inv.targets)
            problems = self.check(game, owner, targets)
            if game.report(problems):
                continue
            break
        won = yield from point_fight(game, owner, targets[0], self.name)
        if not won:
            ctx.skip = True  # the play phase ends before anything is done in it
            return
        target = targets[-1]
        if game.players[owner].alive and game.players[target].alive:
            slash = UsedCard("slash", (), Suit.NONE, Color.NONE, 0, skill=self.name)
            yield from game.ruleset.use_as(game, Use(owner, slash, (target,)))

    def check(self, game: Game, owner: int, targets: list[int]) -> list[Violation]:
        problems = check_targets(game, owner, targets[:1], self.name, (1, 1),
                                 lambda t: "is yourself" if t == owner else
                                 ("" if game.players[t].hand else "has no hand card to 拼点 with"))
        if problems:
            return problems
        if len(targets) > 2:
            return bad("INVALID_TARGET", "双刃 names the 拼点's character and at most one other", owner)
        fight, target = targets[0], targets[-1]
        if target != fight and (target >= game.n or target == owner or not game.players[target].alive
                                or not same_kingdom(game, fight, target) or not game.players[fight].kingdom):
            return bad("INVALID_TARGET", f"双刃's 杀 goes to seat {fight} or another of its kingdom, not {target}",
                       owner)
        probe = UsedCard("slash", (), Suit.NONE, Color.NONE, 0, skill=self.name)
        return [v for v in verify_slash_targets(game, Use(owner, probe, (target,)), check_range=False) if v.hard]


# ---------------------------------------------------------------------- 田丰


@PACKAGE.effect
class Sijian(Skill):
    """死谏: after you lose your last hand card you may discard a card of another character (targets [t], cards
    [one of its hand or equipped cards])."""

    name, zh = "sijian", "死谏"
    timings = frozenset({"lost_hand"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if game.players[owner].hand:
            return
        if not any(t != owner and (game.players[t].hand or game.players[t].equips) for t in game.alive_seats()):
            return
        inv = yield from offer_with_targets(
            game, owner, self.name, (1, 1), lambda t: "is yourself" if t == owner else "",
            after=lambda inv: one_card_of(game, owner, inv.targets[0], list(inv.cards), self.name))
        if inv is None:
            return
        yield from game.to_discard(list(inv.cards))


@PACKAGE.effect
class Suishi(Skill):
    """随势 (locked): when another character is dying from damage whose source is of your kingdom, you draw 1; when
    another character of your kingdom dies, you lose 1 HP."""

    name, zh = "suishi", "随势"
    timings = frozenset({"others_dying", "death"})

    def on_trigger(self, game: Game, owner: int, timing: str, ctx: Trigger) -> Settle[None]:
        if ctx.seat == owner:
            return
        if timing == "others_dying":
            src = ctx.source
            if src is not None and same_kingdom(game, owner, src) and game.players[owner].kingdom:
                yield from game.draw(owner, 1, pb.DRAW_REASON_SKILL)
        elif same_kingdom(game, owner, ctx.seat) and game.players[owner].kingdom:
            yield from game.lose_hp(owner, 1)


# ---------------------------------------------------------------------- 潘凤


@PACKAGE.effect
class Kuangfu(Skill):
    """狂斧: after your 杀 damages a character you may take one of its equipped cards (cards [it]) and choose
    (ChooseOption): "move" it into your equipment area (its slot there empty), or "discard" it."""

    name, zh = "kuangfu", "狂斧"


def kuangfu_rule(game: Game, info: DamageInfo) -> Settle[None]:
    src, victim, card = info.source, info.target, info.card
    if src is None or card is None or info.chained or card.name not in SLASHES or src == victim:
        return
    if not has_skill(game, src, "kuangfu") or not game.players[src].alive or not game.players[victim].equips:
        return
    while True:
        inv = yield from offer(game, src, "kuangfu", target=victim)
        if inv is None:
            return
        cards = list(inv.cards)
        if game.report(one_card_of(game, src, victim, cards, "kuangfu", ("equip",))):
            continue
        break
    cid = cards[0]
    free = game.cards[cid].subtype not in game.players[src].equips
    options = ("move", "discard") if free else ("discard",)
    while True:
        answer = yield option_request(src, options, "kuangfu", optional=False)
        option = answer.choose_option.option if isinstance(answer, pb.Event) else "discard"
        if option in options:
            break
        game.report([Violation("INVALID_CHOICE", f"狂斧: {option!r} is not one of {', '.join(options)}"
                               + ("" if free else f" (seat {src} already has a {game.cards[cid].subtype})"),
                               src, hard=True)])
    if option == "move":
        yield from game.equip(src, cid)
    else:
        yield from game.to_discard([cid])


PACKAGE.after_damage.append(kuangfu_rule)


# ---------------------------------------------------------------------- 邹氏


@PACKAGE.effect
class Huoshui(Skill):
    """祸水: in your play phase you may reveal this general (RevealGeneral for huoshui, then InvokeSkill huoshui:
    nothing else happens); while it is face up, others cannot reveal generals during your turn."""

    name, zh = "huoshui", "祸水"
    active = True
    per_phase = 1

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        if invoke.cards or invoke.targets:
            game.report([Violation("INVALID_CHOICE", "祸水 takes no cards and no targets", seat)])
        game.players[seat].skill_uses[self.name] = 1
        return
        yield  # pragma: no cover

    def forbids_reveal(self, game: Game, owner: int, seat: int) -> bool:
        return game.current == owner and seat != owner


@PACKAGE.effect
class Qingcheng(Skill):
    """倾城: in your play phase, any number of times, discard an equipment card (cards [it]; hand or equipped) and
    choose another character whose two generals are face up (targets [t]); one of them, which you choose
    (ChooseOption main | deputy), is turned face down."""

    name, zh = "qingcheng", "倾城"
    active = True

    def activate(self, game: Game, seat: int, invoke: pb.InvokeSkill) -> Settle[None]:
        cards, targets = list(invoke.cards), list(invoke.targets)
        problems = check_cards(game, seat, cards, self.name, (1, 1), ("hand", "equip"))
        if not problems and game.cards[cards[0]].type != "equip":
            problems = bad("SKILL_COST", f"倾城 discards an equipment card, not {game.label(cards[0])}", seat)
        problems = problems or check_targets(
            game, seat, targets, self.name, (1, 1),
            lambda t: "is yourself" if t == seat else (
                "" if all(up for _, up in game.mode.seat_generals(game, t)) else "has a face-down general"))
        if game.report(problems):
            return
        yield from game.to_discard(cards)
        slot = yield from choose_slot(game, seat, SLOTS, self.name)
        if game.players[targets[0]].alive:
            hegemony(game).hide(game, targets[0], slot)
