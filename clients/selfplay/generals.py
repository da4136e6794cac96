"""Self-play with the standard generals: a bot that picks generals and uses their skills.

Random legal play like RandomBot; every skill it uses is built to be legal (the engine flags
anything else, which self-play treats as a bot or engine bug).
"""

from __future__ import annotations

from clients.selfplay.base import RandomBot, register_bot
from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import Color, Suit
from verifier.engine.effects import Effect, Use, UsedCard
from verifier.engine.game import Game
from verifier.engine.requests import (
    CardRequest,
    ChoiceRequest,
    OfferRequest,
    PeachRequest,
    PickRequest,
    PlayRequest,
    Request,
    SuitRequest,
    name_matches,
)


def view_as(game: Game, seat: int, names: frozenset[str], in_play: bool = False) -> list[pb.CardRef]:
    """Virtual cards the seat's conversion skills can make now, named in ``names``."""
    out: list[pb.CardRef] = []
    p = game.players[seat]
    for eff in p.skills:
        made = eff.converts_to & names
        if not made or not eff.is_skill:
            continue
        zones: tuple[str, ...] = getattr(eff, "zones", ("hand",))
        cards = [*p.hand, *(p.equipped() if "equip" in zones else [])]
        for name in sorted(made):
            for cid in cards:
                v = pb.VirtualCard(name=name, subcards=[cid], skill=eff.name)
                if not eff.verify_conversion(game, seat, v):
                    out.append(pb.CardRef(virtual=v))
    return out


def used(game: Game, ref: pb.CardRef) -> UsedCard:
    v = ref.virtual
    c = game.cards[v.subcards[0]]
    return UsedCard(v.name, tuple(v.subcards), c.suit, c.color, c.number, skill=v.skill)


@register_bot("generals", plays=lambda header: header.options.generals == pb.GENERALS_MODE_STANDARD,
              rank=10)
class GeneralsBot(RandomBot):
    def decide(self, game: Game, req: Request) -> pb.Event | None:
        if isinstance(req, PickRequest):
            ev = pb.Event()
            ev.pick_general.seat = req.seat or 0
            ev.pick_general.general = req.candidates[self.rng.below(len(req.candidates))]
            return ev
        if isinstance(req, SuitRequest):
            ev = pb.Event()
            ev.choose_suit.seat = req.seat or 0
            ev.choose_suit.suit = 1 + self.rng.below(4)  # type: ignore[assignment]
            return ev
        if isinstance(req, ChoiceRequest) and req.reason == "guanxing":
            opts = list(req.options)
            self.rng.shuffle(opts)
            k = self.rng.below(len(opts) + 1)
            ev = pb.Event()
            ev.choose_cards.seat = req.seat or 0
            ev.choose_cards.cards.extend(opts[:k])
            ev.choose_cards.bottom.extend(opts[k:])
            return ev
        return super().decide(game, req)

    # ---------------------------------------------------------------- play phase

    def play(self, game: Game, req: PlayRequest) -> pb.Event:
        seat = req.seat
        assert seat is not None
        if self.chance(25):
            ev = self.active_skill(game, seat)
            if ev is not None:
                return ev
        if self.chance(20):
            ev = self.converted_use(game, seat)
            if ev is not None:
                return ev
        ev = super().play(game, req)
        if ev.HasField("use_card"):
            name = game.cards[ev.use_card.card.id].name if ev.use_card.card.HasField("id") else \
                ev.use_card.card.virtual.name
            if any(game.prohibited(seat, t, name) for t in ev.use_card.targets):
                ev = pb.Event()
                ev.end_play_phase.seat = seat
        return ev

    def converted_use(self, game: Game, seat: int) -> pb.Event | None:
        options = []
        for ref in view_as(game, seat, frozenset({"slash", "dismantlement", "indulgence"}), in_play=True):
            spec = game.ruleset.cards[ref.virtual.name]
            card = used(game, ref)
            for targets in spec.candidate_targets(game, seat):
                if spec.can_use(game, Use(seat, card, targets)) and \
                        not any(game.prohibited(seat, t, card.name) for t in targets):
                    options.append((ref, targets))
        if not options:
            return None
        ref, targets = options[self.rng.below(len(options))]
        ev = pb.Event()
        ev.use_card.seat = seat
        ev.use_card.card.CopyFrom(ref)
        ev.use_card.targets.extend(targets)
        return ev

    def active_skill(self, game: Game, seat: int) -> pb.Event | None:
        p = game.players[seat]
        actives = [e for e in p.skills if e.active and not (e.per_phase and p.skill_uses.get(e.name, 0))]
        if not actives:
            return None
        eff = actives[self.rng.below(len(actives))]
        others = [t for t in game.alive_seats() if t != seat]
        ev = pb.Event()
        inv = ev.invoke_skill
        inv.seat, inv.skill = seat, eff.name
        hand = list(p.hand)
        self.rng.shuffle(hand)
        males = [t for t in others if game.players[t].gender == pb.GENDER_MALE]
        name = eff.name
        if name == "zhiheng" and hand:
            inv.cards.extend(hand[:1 + self.rng.below(min(2, len(hand)))])
        elif name == "rende" and hand:
            inv.cards.append(hand[0])
            inv.targets.append(others[self.rng.below(len(others))])
        elif name == "kurou" and p.hp > 1:
            pass
        elif name == "fanjian" and hand:
            inv.targets.append(others[self.rng.below(len(others))])
        elif name == "jieyin" and len(hand) >= 2:
            wounded = [t for t in males if game.players[t].wounded]
            if not wounded:
                return None
            inv.cards.extend(hand[:2])
            inv.targets.append(wounded[0])
        elif name == "qingnang" and hand:
            wounded = [t for t in game.alive_seats() if game.players[t].wounded]
            if not wounded:
                return None
            inv.cards.append(hand[0])
            inv.targets.append(wounded[self.rng.below(len(wounded))])
        elif name == "lijian" and (hand or p.equips) and len(males) >= 2:
            first, second = males[0], males[1]
            if self.chance(50):
                first, second = second, first
            if game.prohibited(second, first, "duel"):
                return None
            inv.cards.append((hand or p.equipped())[0])
            inv.targets.extend([first, second])
        elif name == "jijiang":
            spec = game.ruleset.cards["slash"]
            probe = UsedCard("slash", (), Suit.NONE, Color.NONE, 0, skill=name)
            targets = [t for (t,) in spec.candidate_targets(game, seat)
                       if spec.can_use(game, Use(seat, probe, (t,))) and not game.prohibited(seat, t, "slash")]
            if not targets:
                return None
            inv.targets.append(targets[0])
        else:
            return None
        return ev

    # ---------------------------------------------------------------- responses

    def respond(self, game: Game, req: CardRequest) -> pb.Event | None:
        seat = req.seat
        assert seat is not None
        has_real = any(name_matches(game.cards[c].name, req.names) for c in game.players[seat].hand)
        if not has_real and not req.skills and self.chance(70):
            refs = view_as(game, seat, req.names)
            if refs:
                ev = pb.Event()
                ev.respond.seat = seat
                ev.respond.card.CopyFrom(refs[self.rng.below(len(refs))])
                return ev
        return super().respond(game, req)

    def rescue(self, game: Game, req: PeachRequest) -> pb.Event | None:
        seat = req.seat
        assert seat is not None
        ev = super().rescue(game, req)
        if ev is None and self.chance(50):
            refs = view_as(game, seat, frozenset({"peach"}))
            if refs:
                ev = pb.Event()
                ev.respond.seat = seat
                ev.respond.card.CopyFrom(refs[0])
                ev.respond.target = req.dying
        return ev

    def offer(self, game: Game, req: OfferRequest) -> pb.Event | None:
        seat = req.seat
        assert seat is not None
        eff = game.skill_of(seat, req.skill)
        if eff is None:
            return super().offer(game, req)
        if not self.chance(65):
            return self.declined(req)
        ev = pb.Event()
        inv = ev.invoke_skill
        inv.seat, inv.skill = seat, req.skill
        if not self.skill_args(game, seat, eff, req, inv):
            return self.declined(req)
        return ev

    @staticmethod
    def declined(req: OfferRequest) -> pb.Event | None:
        """Declines are left implicit, except for 遗计's giving step: there the next decision may be the
        next point's 遗计 invocation, which would otherwise be read as this step's answer."""
        if req.skill != "yiji" or req.target != req.seat or req.seat is None:
            return None
        ev = pb.Event()
        ev.decline.seat = req.seat
        return ev

    def skill_args(self, game: Game, seat: int, eff: Effect, req: OfferRequest, inv: pb.InvokeSkill) -> bool:
        p = game.players[seat]
        name = eff.name
        if name == "guicai":
            if not p.hand:
                return False
            inv.cards.append(p.hand[self.rng.below(len(p.hand))])
        elif name == "fankui":
            assert req.target is not None
            src = game.players[req.target]
            cards = src.equipped() if req.target == seat else [*src.hand, *src.equipped()]
            if not cards:
                return False
            inv.cards.append(cards[self.rng.below(len(cards))])
        elif name == "tuxi":
            victims = [t for t in game.alive_seats() if t != seat and game.players[t].hand][:2]
            if not victims:
                return False
            victims = victims[:1 + self.rng.below(len(victims))]
            inv.targets.extend(victims)
            inv.cards.extend(game.players[t].hand[0] for t in victims)
        elif name == "yiji" and req.target == seat:
            if not p.hand:
                return False
            others = [t for t in game.alive_seats() if t != seat]
            inv.cards.append(p.hand[-1])
            inv.targets.append(others[self.rng.below(len(others))])
        elif name == "liuli":
            user = req.target
            assert user is not None
            liuli = eff
            cards = [*p.hand, *p.equipped()]
            for cid in cards:
                for t in game.alive_seats():
                    why = liuli.why_not_legal(game, seat, user, t, cid, None)  # type: ignore[attr-defined]
                    if not why:
                        inv.cards.append(cid)
                        inv.targets.append(t)
                        return True
            return False
        return True


__all__ = ["GeneralsBot"]
