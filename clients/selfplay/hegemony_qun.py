"""The hegemony bot's use of the Qun skills (verifier/packages/generals_hegemony/qun.py): what each one's
InvokeSkill names, built to be legal. HegemonyBot calls these first in its Qun hooks; None means "not a Qun
skill" (the bot goes on with its own cases)."""

from __future__ import annotations

from clients.selfplay.base import RandomBot
from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import Color, Suit
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import Game
from verifier.engine.requests import CardRequest, OfferRequest
from verifier.packages.generals_hegemony.package import same_kingdom
from verifier.packages.generals_hegemony.qun import LIRANG, Luanwu, Shuangren

QUN_ACTIVE = frozenset({"heg_lijian", "luanwu", "xiongyi", "huoshui", "qingcheng"})
QUN_OFFERED = frozenset({"shuangxiong", "mengjin", "leiji", "guidao", "beige", "lirang", "shuangren", "sijian",
                         "kuangfu"})


def active(bot: RandomBot, game: Game, seat: int, name: str, inv: pb.InvokeSkill) -> bool | None:
    """Fill ``inv`` for a Qun active skill: True to use it, False to leave it, None if not a Qun skill."""
    if name not in QUN_ACTIVE:
        return None
    p = game.players[seat]
    others = [t for t in game.alive_seats() if t != seat]
    if name == "heg_lijian":
        males = [t for t in others if game.players[t].gender == pb.GENDER_MALE]
        held = [*p.hand, *p.equipped()]
        if len(males) < 2 or not held:
            return False
        first, second = males[0], males[1]
        if bot.chance(50):
            first, second = second, first
        inv.cards.append(held[bot.rng.below(len(held))])
        inv.targets.extend([first, second])
        return True
    if name in ("luanwu", "xiongyi"):
        return not p.marks.get(name) and bot.chance(30)
    if name == "huoshui":
        return True
    if name == "qingcheng":
        equips = [c for c in [*p.hand, *p.equipped()] if game.cards[c].type == "equip"]
        both_up = [t for t in others if all(up for _, up in game.mode.seat_generals(game, t))]
        if not equips or not both_up:
            return False
        inv.cards.append(equips[0])
        inv.targets.append(both_up[bot.rng.below(len(both_up))])
        return True
    return False


def offered(bot: RandomBot, game: Game, seat: int, req: OfferRequest, inv: pb.InvokeSkill) -> bool | None:
    """Fill ``inv`` for an offered Qun skill: True to invoke it, False to decline, None if not a Qun skill."""
    name = req.skill
    if name not in QUN_OFFERED:
        return None
    p = game.players[seat]
    others = [t for t in game.alive_seats() if t != seat]
    if name == "shuangxiong":
        return True
    if name == "mengjin":
        victim = req.target
        assert victim is not None
        cards = [*game.players[victim].hand, *game.players[victim].equipped()]
        if not cards:
            return False
        inv.cards.append(cards[bot.rng.below(len(cards))])
        return True
    if name == "leiji":
        inv.targets.append(others[bot.rng.below(len(others))] if others else seat)
        return True
    if name == "guidao":
        black = [c for c in [*p.hand, *p.equipped()] if game.cards[c].color == Color.BLACK]
        if not black:
            return False
        inv.cards.append(black[bot.rng.below(len(black))])
        return True
    if name == "beige":
        held = [*p.hand, *p.equipped()]
        if not held:
            return False
        inv.cards.append(held[bot.rng.below(len(held))])
        return True
    if name == "lirang":
        thrown = list(game.package_state.get(LIRANG, ()))
        if not thrown or not others:
            return False
        inv.cards.append(thrown[-1])
        inv.targets.append(others[bot.rng.below(len(others))])
        return True
    if name == "shuangren":
        rivals = [t for t in others if game.players[t].hand]
        if not rivals:
            return False
        rival = rivals[bot.rng.below(len(rivals))]
        mates = [t for t in others if t != rival and game.players[rival].kingdom and same_kingdom(game, rival, t)]
        targets = [rival, mates[0]] if mates and bot.chance(50) else [rival]
        if Shuangren().check(game, seat, targets):
            return False
        inv.targets.extend(targets)
        return True
    if name == "sijian":
        victims = [t for t in others if game.players[t].hand or game.players[t].equips]
        if not victims:
            return False
        victim = victims[bot.rng.below(len(victims))]
        cards = [*game.players[victim].hand, *game.players[victim].equipped()]
        inv.targets.append(victim)
        inv.cards.append(cards[0])
        return True
    if name == "kuangfu":
        victim = req.target
        assert victim is not None
        equips = game.players[victim].equipped()
        if not equips:
            return False
        inv.cards.append(equips[bot.rng.below(len(equips))])
        return True
    return False


def luanwu_slash(bot: RandomBot, game: Game, req: CardRequest) -> pb.Event | None:
    """乱武: a 杀 on one of the nearest characters it can attack, or nothing (lose 1 HP)."""
    seat = req.seat
    assert seat is not None
    allowed = Luanwu.targets_for(game, seat)
    slashes = [c for c in game.players[seat].hand if game.cards[c].name.endswith("slash")]
    if not allowed or not slashes or not bot.chance(80):
        return None
    ev = pb.Event()
    ev.respond.seat = seat
    ev.respond.card.id = slashes[0]
    ev.respond.target = allowed[bot.rng.below(len(allowed))]
    return ev


def converted(bot: RandomBot, game: Game, seat: int) -> pb.Event | None:
    """乱击: two hand cards of one suit as 万箭齐发."""
    p = game.players[seat]
    if not any(e.name == "luanji" for e in p.skills):
        return None
    by_suit: dict[Suit, list[int]] = {}
    for c in p.hand:
        by_suit.setdefault(game.cards[c].suit, []).append(c)
    pairs = [cards[:2] for _, cards in sorted(by_suit.items()) if len(cards) >= 2]
    if not pairs:
        return None
    ev = pb.Event()
    ev.use_card.seat = seat
    v = ev.use_card.card.virtual
    v.name, v.skill = "archery_attack", "luanji"
    v.subcards.extend(pairs[bot.rng.below(len(pairs))])
    spec = game.ruleset.cards["archery_attack"]
    probe = UsedCard("archery_attack", tuple(v.subcards), Suit.NONE, Color.NONE, 0, skill="luanji")
    if not spec.can_use(game, Use(seat, probe, spec.default_targets(game, seat))):
        return None
    return ev
