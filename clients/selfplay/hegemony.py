"""Self-play in hegemony mode (国战): a bot that picks two generals of one kingdom, reveals them (at the start
of its start phase, or to use a face-down general's skill), uses the hegemony cards and the generals'
skills. Random legal play like GeneralsBot; everything it does is built to be legal. Unlike the identity bots it
declines every optional request explicitly (HegemonyBot.decide), so its logs have no implicit decline.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from clients.selfplay import hegemony_qun as qun
from clients.selfplay.base import register_bot, register_header
from clients.selfplay.generals import GeneralsBot, used, view_as
from clients.selfplay.hegemony_wu import extra_target_slash, wu_active, wu_skill_args
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Effect, Use
from verifier.engine.game import Game
from verifier.engine.requests import (
    CardRequest,
    ChoiceRequest,
    NullifyRequest,
    OfferRequest,
    OptionRequest,
    PeachRequest,
    PickRequest,
    PlayRequest,
    Request,
    RevealRequest,
)
from verifier.generals import hegemony_generals
from verifier.packages.hegemony.nullification import kingdom_wide_possible
from verifier.packages.modes.hegemony import HegemonyMode, usable_now
from verifier.rng import Stream

SLOT = {0: pb.GENERAL_SLOT_MAIN, 1: pb.GENERAL_SLOT_DEPUTY}
NULLIFIERS = ("nullification", "heg_nullification")


def make_header(seed: int, players: int) -> pb.GameHeader:
    header = pb.GameHeader(ruleset="hegemony/1", mode=pb.MODE_HEGEMONY, seed=seed, recorder="sgs-verify selfplay")
    header.options.generals = pb.GENERALS_MODE_HEGEMONY
    header.options.outcomes = pb.OUTCOME_RECORDING_COMPLETE
    header.options.rotating_deal = True  # every general offered equally often over consecutive seeds
    for i in range(players):
        header.seats.add(player=f"bot-{i}")
    return header


@register_header(pb.MODE_HEGEMONY)
def play_game_header(seed: int, players: int, role_variant: int = pb.ROLE_VARIANT_STANDARD,
                     packages: Sequence[str] = (), generals: bool = False, rebirth: bool = False) -> pb.GameHeader:
    """``make_header`` as play_game asks for it: hegemony has its own deck and generals, so the identity options
    (role variant, packages, generals, rebirth) do not apply."""
    return make_header(seed, players)


def reveal_event(seat: int, slot: int, timing: int, skill: str = "") -> pb.Event:
    ev = pb.Event()
    r = ev.reveal_general
    r.seat, r.which, r.timing, r.skill = seat, SLOT[slot], timing, skill  # type: ignore[assignment]
    return ev


@register_bot("hegemony")
class HegemonyBot(GeneralsBot):
    def __init__(self, rng: Stream) -> None:
        super().__init__(rng)
        self.last_targets: tuple[int, ...] = ()  # the targets of the last card the bot used
    def mode(self, game: Game) -> HegemonyMode:
        assert isinstance(game.mode, HegemonyMode)
        return game.mode

    def decide(self, game: Game, req: Request) -> pb.Event | None:
        """As GeneralsBot, but every optional request is declined explicitly: skills offered again with nothing between
        (巧变 before each phase) must not take an invocation meant for the next offer, and an outcome never comes while
        a request is open (nothing for the verifier to probe)."""
        answer = self.decide_or_decline(game, req)
        if isinstance(answer, pb.Event) and answer.HasField("reveal_general") \
                and answer.reveal_general.timing == pb.REVEAL_TIMING_SKILL \
                and self.mode(game).reveal_blocked(game, answer.reveal_general.seat):
            answer = None  # (祸水: no reveal during 邹氏's turn)
        if answer is not None and answer.HasField("use_card"):
            self.last_targets = tuple(answer.use_card.targets)  # (流离 passes a 杀 to none of its targets)
        if answer is None and req.optional:
            # (A 无懈可击 window is anybody's: the current player closes it, or the first living one.)
            closer = game.current if game.players[game.current].alive else game.alive_seats()[0]
            ev = pb.Event()
            ev.decline.seat = req.seat if req.seat is not None else closer
            return ev
        return answer

    def decide_or_decline(self, game: Game, req: Request) -> pb.Event | None:
        if isinstance(req, PickRequest):
            return self.pick_two(req)
        if isinstance(req, RevealRequest):
            return self.start_reveal(game, req)
        if isinstance(req, OptionRequest):
            ev = pb.Event()
            ev.choose_option.seat = req.seat or 0
            ev.choose_option.option = req.options[self.rng.below(len(req.options))]
            return ev if not req.optional or self.chance(80) else None
        if isinstance(req, ChoiceRequest) and req.reason.startswith("pindian/"):
            hand = list(game.players[req.seat or 0].hand)
            ev = pb.Event()
            ev.choose_cards.seat = req.seat or 0
            ev.choose_cards.cards.append(hand[self.rng.below(len(hand))])
            return ev
        if isinstance(req, OfferRequest) and req.seat is not None:
            latent = self.latent(game, req.seat, req.skill)
            if latent is not None:
                # A face-down general's skill: reveal it first (the offer is asked again), or let it pass.
                if self.chance(50):
                    return reveal_event(req.seat, latent, pb.REVEAL_TIMING_SKILL, req.skill)
                return None
        if isinstance(req, (PlayRequest, CardRequest)) and req.seat is not None and self.chance(8):
            shown = self.reveal_for_use(game, req.seat, req)
            if shown is not None:
                return shown
        return super().decide(game, req)

    def latent(self, game: Game, seat: int, skill: str) -> int | None:
        if not any(e.name == skill for e in game.players[seat].latent_skills):
            return None
        return self.mode(game).hidden_slot_of(game, seat, skill)

    def pick_two(self, req: PickRequest) -> pb.Event:
        known = hegemony_generals()
        cands = list(req.candidates)
        if len(cands) >= 2 and known[cands[0]].kingdom == known[cands[1]].kingdom:
            # The first two (the rotating deal's pair): every general is then picked equally often.
            ev = pb.Event()
            ev.pick_general.seat = req.seat or 0
            ev.pick_general.general, ev.pick_general.deputy = cands[0], cands[1]
            return ev
        self.rng.shuffle(cands)
        pairs = [(a, b) for a in cands for b in cands if a != b and known[a].kingdom == known[b].kingdom]
        main, deputy = pairs[self.rng.below(len(pairs))]
        ev = pb.Event()
        ev.pick_general.seat = req.seat or 0
        ev.pick_general.general = main
        ev.pick_general.deputy = deputy
        return ev

    def start_reveal(self, game: Game, req: RevealRequest) -> pb.Event | None:
        seat = req.seat or 0
        hidden = self.mode(game).hidden(seat)
        if not hidden or not self.chance(35):
            return None
        ev = pb.Event()
        r = ev.reveal_general
        r.seat, r.timing = seat, pb.REVEAL_TIMING_START_PHASE
        r.which = pb.GENERAL_SLOT_BOTH if len(hidden) == 2 and self.chance(30) else SLOT[hidden[0]]
        return ev

    def reveal_for_use(self, game: Game, seat: int, req: Request) -> pb.Event | None:
        """Reveal a face-down general for a skill it could use now: an active or conversion skill in the play
        phase, a conversion that answers this request."""
        latent = [e for e in game.players[seat].latent_skills
                  if (e.active or e.converts_to or e.provides) and usable_now(seat, e, req)]
        if not latent:
            return None
        eff = latent[self.rng.below(len(latent))]
        slot = self.mode(game).hidden_slot_of(game, seat, eff.name)
        if slot is None:
            return None
        return reveal_event(seat, slot, pb.REVEAL_TIMING_SKILL, eff.name)

    # ---------------------------------------------------------------- play phase

    def active_skill(self, game: Game, seat: int) -> pb.Event | None:
        p = game.players[seat]
        actives = [e for e in p.skills if e.active and not (e.per_phase and p.skill_uses.get(e.name, 0))]
        if not actives:
            return None
        eff = actives[self.rng.below(len(actives))]
        others = [t for t in game.alive_seats() if t != seat]
        hand = list(p.hand)
        self.rng.shuffle(hand)
        ev = pb.Event()
        inv = ev.invoke_skill
        inv.seat, inv.skill = seat, eff.name
        qun_use = qun.active(self, game, seat, eff.name, inv)
        if qun_use is not None:
            return ev if qun_use else None
        if eff.name == "heg_rende" and hand:
            inv.cards.extend(hand[:1 + self.rng.below(min(2, len(hand)))])
            inv.targets.append(others[self.rng.below(len(others))])
            return ev
        if eff.name == "qiangxi":
            weapons = [c for c in [*p.hand, *p.equipped()] if game.cards[c].subtype == "weapon"]
            cost = weapons[0] if weapons else None
            if cost is None and p.hp <= 1:
                return None
            targets = [t for t in others if game.distance(seat, t, cost) <= game.attack_range(seat, cost)]
            if not targets:
                return None
            if cost is not None:
                inv.cards.append(cost)
            inv.targets.append(targets[self.rng.below(len(targets))])
            return ev
        if eff.name == "quhu":
            tigers = [t for t in others if game.players[t].hp > p.hp and game.players[t].hand]
            if not hand or not tigers:
                return None
            tiger = tigers[self.rng.below(len(tigers))]
            inv.targets.append(tiger)
            wolves = [w for w in game.alive_seats() if w != tiger and game.in_attack_range(tiger, w)]
            if wolves:
                inv.targets.append(wolves[self.rng.below(len(wolves))])
            return ev
        wu = wu_active(self, game, seat, eff.name, inv)  # (Wu)
        if wu is not None:
            return ev if wu else None
        return super().active_skill(game, seat)

    def converted_use(self, game: Game, seat: int) -> pb.Event | None:
        if self.chance(30):
            luanji = qun.converted(self, game, seat)  # (Qun: 乱击's two cards)
            if luanji is not None:
                return luanji
        names = frozenset({"slash", "supply_shortage", "fire_attack", "iron_chain",
                           "dismantlement", "indulgence", "await_exhausted",  # (Wu: 奇袭, 国色, 度势)
                           "duel"})  # (Qun: 双雄)
        options = []
        for ref in view_as(game, seat, names, in_play=True):
            spec = game.ruleset.cards[ref.virtual.name]
            card = used(game, ref)
            for targets in spec.candidate_targets(game, seat):
                # (No targets named: the card's own, 以逸待劳's from 度势.)
                if spec.can_use(game, Use(seat, card, targets or spec.default_targets(game, seat))):
                    options.append((ref, targets))
        if not options:
            return None
        ref, targets = options[self.rng.below(len(options))]
        ev = pb.Event()
        ev.use_card.seat = seat
        ev.use_card.card.CopyFrom(ref)
        ev.use_card.targets.extend(targets)
        return ev

    # ---------------------------------------------------------------- responses

    def respond(self, game: Game, req: CardRequest) -> pb.Event | None:
        """A face-down general's skill offered for this card (八阵): reveal it first, or leave it aside."""
        seat = req.seat
        assert seat is not None
        if req.reason == "luanwu":
            return qun.luanwu_slash(self, game, req)
        hidden = [s for s in req.skills if self.latent(game, seat, s) is not None]
        if hidden:
            slot = self.latent(game, seat, hidden[0])
            if slot is not None and self.chance(50):
                return reveal_event(seat, slot, pb.REVEAL_TIMING_SKILL, hidden[0])
            req = replace(req, skills=tuple(s for s in req.skills if s not in hidden))
        return super().respond(game, req)

    def rescue(self, game: Game, req: PeachRequest) -> pb.Event | None:
        if req.seat is not None and game.ruleset.rescue_forbidden(game, req.seat, req.dying) is not None:
            return None  # (完杀)
        return super().rescue(game, req)

    def nullify(self, game: Game, req: NullifyRequest) -> pb.Event | None:
        for seat in game.alive_seats(game.current):
            p = game.players[seat]
            held = [c for c in p.hand if game.cards[c].name in NULLIFIERS]
            refs = [pb.CardRef(id=c) for c in held] + view_as(game, seat, frozenset({"nullification"}))
            if refs and self.chance(25):
                ev = pb.Event()
                ev.respond.seat = seat
                ev.respond.card.CopyFrom(refs[0])
                if req.target is not None:
                    ev.respond.target = req.target
                if req.card is not None:
                    ev.respond.trick_card = req.card
                ref = refs[0]
                if ref.WhichOneof("kind") == "id" and game.cards[ref.id].name == "heg_nullification" \
                        and req.trick != "nullification" and self.chance(60):
                    use = game.using[-1] if game.using else None
                    if kingdom_wide_possible(game, use, req.trick, req.target, req.card):
                        ev.respond.whole_kingdom = True
                return ev
        return None

    def offer(self, game: Game, req: OfferRequest) -> pb.Event | None:
        seat = req.seat
        assert seat is not None
        if req.skill == "triblade":
            p = game.players[seat]
            assert req.target is not None
            others = [t for t in game.alive_seats() if t not in (seat, req.target)
                      and game.distance(req.target, t) == 1]
            if not p.hand or not others or not self.chance(60):
                return None
            ev = pb.Event()
            ev.invoke_skill.seat, ev.invoke_skill.skill = seat, "triblade"
            ev.invoke_skill.cards.append(p.hand[0])
            ev.invoke_skill.targets.append(others[0])
            return ev
        if req.skill == "haoshi" and game.players[seat].turn_flags.get("haoshi/give"):
            ev = pb.Event()  # (Wu: 好施's giving step is not optional)
            ev.invoke_skill.seat, ev.invoke_skill.skill = seat, "haoshi"
            wu_skill_args(self, game, seat, game.ruleset.effects["haoshi"], req, ev.invoke_skill)
            return ev
        return super().offer(game, req)

    def skill_args(self, game: Game, seat: int, eff: Effect, req: OfferRequest, inv: pb.InvokeSkill) -> bool:
        p = game.players[seat]
        name = eff.name
        others = [t for t in game.alive_seats() if t != seat]
        qun_args = qun.offered(self, game, seat, req, inv)
        if qun_args is not None:
            return qun_args
        if name == "shensu":
            equips = [c for c in [*p.hand, *p.equipped()] if game.cards[c].type == "equip"]
            play = bool(p.turn_flags.get("shensu_play"))
            if not others or (play and not equips):
                return False
            inv.targets.append(others[self.rng.below(len(others))])
            if play:
                inv.cards.append(equips[0])
            return True
        if name == "qiaobian":
            step = p.turn_flags.get("qiaobian_step", 0)
            if step == pb.PHASE_DRAW:
                victims = [t for t in others if game.players[t].hand][:2]
                if not victims:
                    return False
                inv.targets.extend(victims)
                inv.cards.extend(game.players[t].hand[0] for t in victims)
                return True
            if step == pb.PHASE_PLAY:
                for src in game.alive_seats():
                    for cid in game.players[src].equipped():
                        slot = game.cards[cid].subtype
                        dest = [t for t in game.alive_seats() if t != src and slot not in game.players[t].equips]
                        if dest:
                            inv.cards.append(cid)
                            inv.targets.append(dest[0])
                            return True
                return False
            if not p.hand:
                return False
            inv.cards.append(p.hand[self.rng.below(len(p.hand))])
            return True
        if name in ("jieming",):
            inv.targets.append(game.alive_seats()[self.rng.below(len(game.alive_seats()))])
            return True
        if name == "fangzhu":
            if not others:
                return False
            inv.targets.append(others[self.rng.below(len(others))])
            return True
        if name == "xiaoguo":
            basics = [c for c in p.hand if game.cards[c].type == "basic"]
            if not basics:
                return False
            inv.cards.append(basics[0])
            return True
        if name == "fangquan" and p.turn_flags.get("fangquan"):
            if not p.hand or not others:
                return False
            inv.cards.append(p.hand[0])
            inv.targets.append(others[self.rng.below(len(others))])
            return True
        if name == "liuli":
            # As GeneralsBot's, but never to another target of the same 杀 (短兵, a won 天义 give two).
            assert req.target is not None
            for cid in [*p.hand, *p.equipped()]:
                for t in game.alive_seats():
                    if t not in self.last_targets and \
                            not eff.why_not_legal(game, seat, req.target, t, cid, None):  # type: ignore[attr-defined]
                        inv.cards.append(cid)
                        inv.targets.append(t)
                        return True
            return False
        if name == "shushen":
            mates = [t for t in others if game.mode.same_side(game, seat, t)]
            if not mates:
                return False
            inv.targets.append(mates[0])
            return True
        wu = wu_skill_args(self, game, seat, eff, req, inv)  # (Wu)
        if wu is not None:
            return wu
        return super().skill_args(game, seat, eff, req, inv)

    def play(self, game: Game, req: PlayRequest) -> pb.Event:
        seat = req.seat
        assert seat is not None
        if any(e.name in ("duanbing", "tianyi") for e in game.players[seat].skills) and self.chance(30):
            ev = extra_target_slash(self, game, seat)  # (Wu: 短兵, a won 天义)
            if ev is not None:
                return ev
        return super().play(game, req)


__all__ = ["HegemonyBot", "make_header"]
