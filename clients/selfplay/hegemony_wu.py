"""The hegemony bot's use of the Wu skills (clients/selfplay/hegemony.py asks here first): the arguments of each
active skill and of each offered one, built to be legal; 短兵's and a won 天义's extra 杀 target."""

from __future__ import annotations

from clients.selfplay.base import RandomBot
from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import Suit
from verifier.engine.effects import Effect, Use
from verifier.engine.game import Game
from verifier.engine.requests import OfferRequest
from verifier.packages.generals_hegemony.wu import GUZHENG, Haoshi

WU_ACTIVE = frozenset({"heg_zhiheng", "tianyi", "dimeng", "zhijian", "fenxun"})
WU_OFFERED = frozenset({"yinghun", "tianxiang", "buqu", "haoshi", "guzheng", "heg_xiaoji"})


def wu_active(bot: RandomBot, game: Game, seat: int, name: str, inv: pb.InvokeSkill) -> bool | None:
    """Fill ``inv`` for the Wu active skill ``name``: True when it can be used now, False when not, None when
    ``name`` is no Wu skill of this module."""
    if name not in WU_ACTIVE:
        return None
    p = game.players[seat]
    others = [t for t in game.alive_seats() if t != seat]
    hand = list(p.hand)
    bot.rng.shuffle(hand)
    if name == "heg_zhiheng":
        cards = [*hand, *p.equipped()]
        if not cards:
            return False
        inv.cards.extend(cards[:1 + bot.rng.below(min(len(cards), p.max_hp, 3))])
        return True
    if name == "tianyi":
        rivals = [t for t in others if game.players[t].hand]
        if not hand or not rivals:
            return False
        inv.targets.append(rivals[bot.rng.below(len(rivals))])
        return True
    if name == "dimeng":
        mine = [*hand, *p.equipped()]
        pairs = [(a, b) for a in others for b in others if a < b
                 and abs(len(game.players[a].hand) - len(game.players[b].hand)) <= len(mine)]
        if not pairs:
            return False
        a, b = pairs[bot.rng.below(len(pairs))]
        inv.targets.extend([a, b])
        inv.cards.extend(mine[:abs(len(game.players[a].hand) - len(game.players[b].hand))])
        return True
    if name == "zhijian":
        for cid in hand:
            card = game.cards[cid]
            if card.type != "equip":
                continue
            free = [t for t in others if card.subtype not in game.players[t].equips]
            if free:
                inv.cards.append(cid)
                inv.targets.append(free[bot.rng.below(len(free))])
                return True
        return False
    # fenxun
    cards = [*hand, *p.equipped()]
    far = [t for t in others if game.distance(seat, t) > 1]
    if not cards or not far:
        return False
    inv.cards.append(cards[0])
    inv.targets.append(far[bot.rng.below(len(far))])
    return True


def wu_skill_args(bot: RandomBot, game: Game, seat: int, eff: Effect, req: OfferRequest,
                  inv: pb.InvokeSkill) -> bool | None:
    """Fill ``inv`` for the offered Wu skill ``eff``: True to invoke, False to decline, None when it is no Wu skill
    of this module (or needs no arguments)."""
    name = eff.name
    if name not in WU_OFFERED:
        return None
    p = game.players[seat]
    others = [t for t in game.alive_seats() if t != seat]
    if name == "yinghun":
        inv.targets.append(others[bot.rng.below(len(others))])
        return True
    if name == "tianxiang":
        hearts = [c for c in p.hand if game.card_as(seat, c).suit == Suit.HEART]
        if not hearts:
            return False
        inv.cards.append(hearts[0])
        inv.targets.append(others[bot.rng.below(len(others))])
        return True
    if name == "haoshi" and p.turn_flags.get("haoshi/give"):
        fewest = Haoshi.fewest(game, seat)
        inv.cards.extend(p.hand[:len(p.hand) // 2])
        inv.targets.append(fewest[bot.rng.below(len(fewest))])
        return True
    if name == "guzheng":
        assert req.target is not None
        left = [c for c in game.package_state.get(GUZHENG, ()) if c in game.discard_pile]
        if not left:
            return False
        inv.cards.append(left[0])
        if bot.chance(60):
            inv.cards.extend(left[1:])
        return True
    return True


def extra_target_slash(bot: RandomBot, game: Game, seat: int) -> pb.Event | None:
    """A 杀 on two targets, when 短兵 or a won 天义 allows one more."""
    p = game.players[seat]
    if not any(e.name in ("duanbing", "tianyi") for e in p.skills):
        return None
    spec = game.ruleset.cards["slash"]
    for cid in p.hand:
        card = game.cards[cid]
        if card.name != "slash":
            continue
        used = game.ruleset.real_card(card)
        others = [t for t in game.alive_seats() if t != seat]
        for a in others:
            for b in others:
                if a < b and spec.can_use(game, Use(seat, used, (a, b))):
                    ev = pb.Event()
                    ev.use_card.seat = seat
                    ev.use_card.card.id = cid
                    ev.use_card.targets.extend([a, b])
                    return ev
    return None
