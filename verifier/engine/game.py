"""The engine core: game state, the primitives every rule goes through, and the turn.

Settlement is written as generators: a rule that needs a decision ``yield``s a request
and receives the answer (see requests.py). Nested settlement is ``yield from``. The core
knows no card by name beyond what the turn structure itself needs (the judgment
phase, the discard phase, rescue with 桃): card and equipment behaviour comes from
packages through the Ruleset (effects.py).

No I/O, no clock, no global state; all chance comes from seeded streams.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import EQUIP_SLOTS, CardDef, Suit
from verifier.engine.requests import (
    UNANSWERED,
    Answer,
    Request,
    ShuffleRequest,
    choice_request,
    discard_request,
    draw_chance,
    judge_chance,
    nullify_request,
    order_chance,
    peach_request,
    play_request,
)

if TYPE_CHECKING:
    from verifier.engine.effects import Effect, Ruleset, UsedCard
    from verifier.engine.mode import Mode

T = TypeVar("T")

# The codes of a decision the rules forbid but a settlement can still carry out as a server did (Game.report's
# can_carry_out): whom or what it aims at, when it is made, which card answers. Not among them: a card its maker
# does not hold (carried out only on the recorded move: Game.take_recorded), and what cannot be understood at all.
CARRIED_OUT = frozenset({"INVALID_TARGET", "TARGET_PROHIBITED", "SLASH_LIMIT", "WRONG_TIMING", "WRONG_CARD"})
Settle = Generator[Request, Answer, T]

PHASE_NAMES = {
    pb.PHASE_START: "start", pb.PHASE_JUDGMENT: "judgment", pb.PHASE_DRAW: "draw",
    pb.PHASE_PLAY: "play", pb.PHASE_DISCARD: "discard", pb.PHASE_FINISH: "finish",
}


@dataclass(frozen=True, slots=True)
class Violation:
    code: str
    message: str
    seat: int | None = None
    card: int | None = None
    # A hard violation makes the decision impossible to apply (it is rejected).
    hard: bool = False
    # What became of what it is about (annotation.proto Handling; 0: from the annotation, see replay).
    handling: int = 0


@dataclass(frozen=True, slots=True)
class Notice:
    """A remark on the header that is not a violation (a code of verifier.codes.NOTICES)."""

    code: str
    message: str


class GameEnded(Exception):
    """Raised out of settlement when the game ends; caught by ``Game.run``."""

    def __init__(self, side: int, winners: list[int], reason: str, kingdom: str = "") -> None:
        super().__init__(reason)
        self.side = side
        self.winners = winners
        self.reason = reason
        self.kingdom = kingdom  # the winning kingdom, in modes that have kingdoms (GameOver.kingdom)
        # Each seat's score, in modes that score a game (Mode.final_scores; set by Game.finish).
        self.scores: tuple[Any, ...] = ()


@dataclass(slots=True)
class Player:
    seat: int
    role: int  # the mode's hidden identity, if it has one (identity mode's role; 0 otherwise)
    max_hp: int
    hp: int
    gender: int = pb.GENDER_UNSPECIFIED
    alive: bool = True
    hand: list[int] = field(default_factory=list)
    equips: dict[str, int] = field(default_factory=dict)  # slot -> card id
    judgment: list[int] = field(default_factory=list)  # placement order
    slash_count: int = 0  # 杀 used in the current play phase
    # State that card packages keep on a character (铁锁连环's "chained", 酒's "drunk"); changed only
    # through Game.set_mark, so the state digest sees it. Absent means 0.
    marks: dict[str, int] = field(default_factory=dict)
    # With generals: the general, its kingdom, and its skills' effects (fixed for the game; a
    # lord skill only while the general is the lord). ``idle_skills`` are the general's skills
    # the character does not have (a lord skill of a general who is not the lord).
    general: str = ""
    kingdom: str = ""
    skills: list[Effect] = field(default_factory=list)
    idle_skills: tuple[str, ...] = ()
    # Skills the character may use only through an act of its own first (hegemony: a face-down general's,
    # which revealing it gives): offered by triggers like the others, but no other hook of theirs applies.
    latent_skills: list[Effect] = field(default_factory=list)
    skill_uses: dict[str, int] = field(default_factory=dict)  # skill -> uses in the current play phase
    turn_flags: dict[str, int] = field(default_factory=dict)  # reset at the start of each of their turns
    # Does a skill of theirs react to losing hand cards / equipment (连营, 枭姬)? Set from the skills.
    watch_hand: bool = False
    watch_equip: bool = False
    # Cards put on the character's general (ZONE_GENERAL: 不屈's 创), in the order they were put there.
    pile: list[int] = field(default_factory=list)

    @property
    def wounded(self) -> bool:
        return self.hp < self.max_hp

    def equipped(self) -> list[int]:
        return [self.equips[slot] for slot in EQUIP_SLOTS if slot in self.equips]

    def all_cards(self) -> list[int]:
        """Hand, then equipment, then judgment area (not the pile on the general: only its skill moves it)."""
        return [*self.hand, *self.equipped(), *self.judgment]

    def has_cards(self) -> bool:
        return bool(self.hand or self.equips or self.judgment)


@dataclass(slots=True)
class Trigger:
    """What a trigger timing is about; skills may change the mutable fields (see Game.trigger)."""

    seat: int  # whose event it is (the damaged, the judged, the one whose phase it is, ...)
    source: int | None = None
    amount: int = 0
    card: Any = None  # the UsedCard involved (damage), or the judgment CardDef
    reason: str = ""
    phase: int = 0
    target: int | None = None
    use: Any = None  # the Use (杀 settlement)
    skip: bool = False  # set by a skill: skip the phase / the normal draw
    count: int = 0  # draw-phase count
    extra: int = 0  # responses needed beyond the first (无双)
    no_jink: bool = False  # 铁骑
    skipped: Any = None  # before a phase: the set of this turn's phases to skip (a skill may add more: 神速)
    damage: Any = None  # "damage_incoming": the DamageInfo on its way
    cards: Any = None  # "discard_phase_end": the hand cards discarded in the phase


@dataclass(slots=True)
class DamageInfo:
    """One damage on its way to its target (Game.damage). Effects change ``amount``: first the source's
    (Effect.damage_caused: 古锭刀), then the target's (Effect.damage_inflicted: 藤甲, 白银狮子 — armor not
    when ``ignores_armor``). After it is dealt and settled, the packages' after-damage rules see it, its
    ``amount`` the damage the target took (铁锁连环 passes that on)."""

    source: int | None
    target: int
    amount: int
    nature: int = pb.DAMAGE_NATURE_NORMAL
    card: UsedCard | None = None  # the card that causes it (a 杀, a trick), if any
    chained: bool = False  # passed on by 铁锁连环: never passed on again
    ignores_armor: bool = False  # the target's armor has no effect on it (青釭剑's 杀)


@dataclass(slots=True)
class Outcome:
    """An outcome the engine derived, with the code to report if the log disagrees."""

    event: pb.Event
    code: str
    # When the outcome taken is one a log recorded (adopted: a stacked draw, another judgment card), the one
    # the rules give: the log is reported against it, and the game goes on with the recorded one.
    rule: pb.Event | None = None
    # Why a recorded outcome offered for adoption could not be taken (a card not where it could come from).
    not_adopted: str = ""


@cache
def phase_start_event(seat: int, phase: int) -> tuple[pb.Event, str]:
    """A phase's start and its journal entry: the same in every game (outcome events are never
    changed once emitted), so made once per process."""
    return pb.Event(phase_start=pb.PhaseStart(seat=seat, phase=phase)), f"('phase', {seat}, {phase})"  # type: ignore[arg-type]


# Outcome events are never changed once emitted (only a reshuffle's outcome is, replay._mark_last), so the
# outcomes about a few small numbers are values: one Outcome per distinct value serves every game
# (building a protobuf message costs more than most rules do).

@cache
def turn_start_outcome(seat: int, turn: int) -> Outcome:
    return Outcome(pb.Event(turn_start=pb.TurnStart(seat=seat, turn=turn)), "TURN_MISMATCH")


@cache
def judgment_outcome(seat: int, card: int, reason: str) -> Outcome:
    """A judgment as the rules give it (an adopted one, or one that could not be, is made in ``judge``)."""
    return Outcome(judgment_event(seat, card, reason), "JUDGMENT_MISMATCH")


def judgment_event(seat: int, card: int, reason: str) -> pb.Event:
    return pb.Event(judgment=pb.Judgment(seat=seat, card=card, reason=reason))


@cache
def damage_outcome(source: int | None, target: int, amount: int, nature: int, hp_after: int, chained: bool
                   ) -> Outcome:
    ev = pb.Event()
    d = ev.damage
    if source is not None:
        d.source = source
    d.target = target
    d.amount = amount
    d.nature = nature  # type: ignore[assignment]
    d.hp_after = hp_after
    if chained:
        d.chained = True
    return Outcome(ev, "DAMAGE_MISMATCH")


@cache
def lose_hp_outcome(seat: int, amount: int, hp_after: int) -> Outcome:
    return Outcome(pb.Event(lose_hp=pb.LoseHp(seat=seat, amount=amount, hp_after=hp_after)), "HP_MISMATCH")


@cache
def recover_outcome(seat: int, amount: int, hp_after: int) -> Outcome:
    return Outcome(pb.Event(recover=pb.Recover(seat=seat, amount=amount, hp_after=hp_after)), "RECOVER_MISMATCH")


@cache
def dying_outcome(seat: int) -> Outcome:
    return Outcome(pb.Event(dying=pb.Dying(seat=seat)), "DEATH_MISMATCH")


class Game:
    """One game, driven through ``run()``; what only its mode knows, the core asks ``mode``."""

    def __init__(
        self,
        *,
        mode: Mode,
        ruleset: Ruleset,
        cards: dict[int, CardDef],
        players: list[Player],
        draw_pile_top_first: list[int],
        seed: int,
        max_reshuffles: int = 0,
        prelude: Callable[[Game], Settle[None]] | None = None,
    ) -> None:
        self.mode = mode
        self.ruleset = ruleset
        self.cards = cards
        self.players = players
        self.n = len(players)
        # Internally the top of the draw pile is the END of the list (O(1) draws).
        self.draw_pile: list[int] = list(reversed(draw_pile_top_first))
        self.discard_pile: list[int] = []
        self.processing: list[int] = []
        self.seed = seed
        self.max_reshuffles = max_reshuffles
        self.reshuffles = 0
        self.current = 0  # whose turn it is
        self.phase = pb.PHASE_UNSPECIFIED
        self.turn_number = 0
        self.round_number = 0  # the current round (Mode.round_begins)
        self.over = False
        self.result: GameEnded | None = None
        # Per decision: filled by the engine, drained by the driver.
        self.outcomes: list[Outcome] = []
        self.violations: list[Violation] = []
        self.rejected = False
        # State changes since the driver last took them, for the state digest. Each entry is the text
        # of a tuple — ('proc', 12), ('draw', 0, (3, 7)) — written as an f-string where the change is
        # made: the digest hashes exactly these bytes (golden replays pin them), and formatting
        # them here is cheaper than building tuples to repr later.
        self.journal: list[str] = []
        self._phase_outcomes: dict[int, tuple[Outcome, str]] = {}  # begin_phase's, by seat * 8 + phase
        self._effects: dict[int, list[Effect]] = {}  # effects_of's cache
        self._alive_from: dict[int, tuple[int, ...]] = {}  # alive_seats' cache
        # With generals: does anyone have skills (triggers are skipped cheaply when nobody does)?
        self.has_skills = any(p.skills for p in players)
        # Cards just lost by characters whose skills react to it (连营, 枭姬): filled by the removal from the
        # owner, fired by the move that removed them before it returns (fire_losses).
        self.lost: list[tuple[int, str]] = []
        # Cards placed in a judgment area as a virtual delayed trick (国色): card id -> the trick's name.
        self.judgment_as: dict[int, str] = {}
        # Before the first turn (with generals: the picks); run by ``run``.
        self.prelude = prelude
        # Do draws and judgments ask the driver first (DrawChance, JudgeChance)? The replay driver sets it to
        # take the cards a log recorded when they differ from the rules' (adoption); self-play leaves it off.
        self.adopting = False
        # The recorded outcome right after the decision being judged, when the driver holds that decision for
        # it (replay: a card or skill its maker lacks): a taken card's move (take_recorded) or a skill's
        # recorded effect (Ruleset.invoke_in_play). None otherwise; self-play never sets it.
        self.evidence: pb.Event | None = None
        # Is the log a server's record of the game it played (GameOptions.server_record)? An illegal decision that a
        # settlement can take is then carried out, as that server did (``report``'s ``can_carry_out``), not rejected.
        self.server_record = False
        # While generals are being picked: each seat's candidates (None otherwise).
        self.selection: dict[int, tuple[str, ...]] | None = None
        # Extra turns a skill gave, to be played after the current one (放权).
        self.extra_turns: list[int] = []
        # The cards being used and not yet settled, innermost last (CardSpec.use).
        self.using: list[Any] = []
        # What packages remember of the game beyond the state digest (a trick's settlement in progress).
        self.package_state: dict[str, Any] = {}

    # ------------------------------------------------------------------ reporting

    def emit(self, event: pb.Event, code: str) -> None:
        self.outcomes.append(Outcome(event, code))

    def flag(self, code: str, message: str, seat: int | None = None, card: int | None = None,
             hard: bool = False) -> None:
        self.violations.append(Violation(code, message, seat, card, hard))

    def report(self, violations: Iterable[Violation], can_carry_out: bool = False) -> bool:
        """Record violations; True when one of them is hard (the decision is rejected).

        ``can_carry_out``: the caller's settlement can take the decision as it is (a 杀 at two targets, 无中生有 at
        another character, a 闪 used in the play phase). In a server's record (``server_record``) the server carried
        it out, so a hard violation of the rules (docs/codes.md, kind illegal) is kept but made soft, and the
        decision goes on as the server played it (docs/rules.md#server-records); a card the decision names from where
        its maker does not hold it is not carried out here (``take_recorded`` does it, on the recorded move)."""
        hard = False
        for v in violations:
            if v.hard and can_carry_out and self.server_record and v.code in CARRIED_OUT:
                v = Violation(v.code, f"{v.message}; carried out as the server's record shows", v.seat, v.card)
            self.violations.append(v)
            hard = hard or v.hard
        if hard:
            self.rejected = True
        return hard

    def label(self, card_id: int) -> str:
        card = self.cards.get(card_id)
        return card.label() if card else f"#{card_id}"

    # ------------------------------------------------------------------ queries

    def player(self, seat: int) -> Player:
        return self.players[seat]

    def alive_seats(self, start: int | None = None) -> tuple[int, ...]:
        """Living seats in turn order, starting from ``start`` (default: seat 0). Kept per start until
        someone dies or is revived (``die``, ``revive``: the only places a character's being alive changes)."""
        start = start or 0
        ring = self._alive_from.get(start)
        if ring is None:
            players = self.players
            ring = self._alive_from[start] = tuple(s for s in (*range(start, self.n), *range(start))
                                                   if players[s].alive)
        return ring

    def next_alive(self, seat: int) -> int:
        for i in range(1, self.n + 1):
            s = (seat + i) % self.n
            if self.players[s].alive:
                return s
        return seat

    def effects_of(self, seat: int) -> list[Effect]:
        """The equipment effects (and, with generals, skills) a character has now. Cached: the
        list only changes when equipment enters or leaves (or skills are given); do not mutate it."""
        cached = self._effects.get(seat)
        if cached is not None:
            return cached
        p = self.players[seat]
        out = []
        for slot in EQUIP_SLOTS:
            cid = p.equips.get(slot)
            if cid is not None:
                eff = self.ruleset.effects.get(self.cards[cid].name)
                if eff is not None:
                    out.append(eff)
        if p.skills:
            out.extend(p.skills)
        self._effects[seat] = out
        return out

    def forget_effects(self, seat: int) -> None:
        """The seat's equipment or skills changed: recompute its effects when next asked."""
        self._effects.pop(seat, None)

    def skill_of(self, seat: int, name: str) -> Effect | None:
        return next((e for e in self.players[seat].skills if e.name == name), None)

    def card_as(self, seat: int, card_id: int) -> CardDef:
        """The card as ``seat``'s skills make it count (红颜: their ♠ cards are ♥), for a card of theirs they use,
        play, convert or pay with, or a judgment on them; the printed card where no skill changes suits."""
        card = self.cards[card_id]
        if self.ruleset.suit_filters and self.players[seat].skills:
            for eff in self.players[seat].skills:
                if eff.name in self.ruleset.suit_filters:
                    suit = eff.seen_suit(self, seat, card)
                    if suit != card.suit:
                        return dataclasses.replace(card, suit=suit)
        return card

    # ------------------------------------------------------------------ skills: triggers

    def trigger(self, timing: str, ctx: Trigger) -> Settle[None]:
        """Run the skills that react at ``timing``: living characters from the current player in
        seat order, each character's skills in the order it chooses (``trigger_one``). Each may yield requests
        (an offer to invoke an optional skill) and change ``ctx``."""
        if not self.has_skills:
            return
        for seat in self.alive_seats(self.current):
            yield from self.trigger_one(seat, timing, ctx)

    def trigger_one(self, seat: int, timing: str, ctx: Trigger) -> Settle[None]:
        """Run one character's skills at ``timing``. Several of them at once are ordered by their owner
        (docs/rules.md#simultaneous-triggers): derived in the general's order (the main general's skills, then the
        deputy's); a driver that adopts recorded outcomes is asked for the order the log shows (OrderChance)."""
        p = self.players[seat]
        due = [eff for eff in (p.skills if not p.latent_skills else [*p.skills, *p.latent_skills])
               if timing in eff.timings]
        while due and p.alive:
            i = 0
            if len(due) > 1 and self.adopting:
                pick = yield order_chance(seat, tuple((eff.name,) for eff in due),
                                          tuple(eff.trigger_outcome for eff in due))
                if isinstance(pick, int) and 0 <= pick < len(due):
                    i = pick
            eff = due.pop(i)
            yield from eff.on_trigger(self, seat, timing, ctx)

    def prohibited(self, user: int, target: int, card_name: str) -> Effect | None:
        """The target's skill that forbids choosing them as a target of ``card_name`` (空城, 谦逊)."""
        if not self.has_skills:
            return None
        for eff in self.players[target].skills:
            if eff.prohibits_target(self, target, user, card_name):
                return eff
        return None

    def fire_losses(self) -> Settle[None]:
        """What reacts to lost hand cards or equipment (连营, 枭姬, and 白银狮子's recovery where its wearer has
        such a skill), in the order of the losses. Every move that takes cards from a character ends with this: they
        resolve right after the loss, before the rest of whatever moved the card (docs/rules.md#loss-triggers). One
        character's reactions to one move are simultaneous and their owner orders them
        (docs/rules.md#simultaneous-triggers): derived in the order of the losses, the armour's own effect before
        the skills its loss sets off; a driver that adopts recorded outcomes is asked for the order the log shows
        (OrderChance)."""
        while self.lost:
            seat, what = self.lost.pop(0)
            if not self.players[seat].alive:
                continue
            if self.adopting:
                others = [w for s, w in self.lost if s == seat and w != what]
                if others:
                    options = [what, *dict.fromkeys(others)]
                    effects = [self._loss_effects(seat, w) for w in options]
                    outcomes = tuple(effs[0].trigger_outcome if len(effs) == 1 else "" for effs in effects)
                    pick = yield order_chance(seat, tuple(tuple(e.name for e in effs) for effs in effects), outcomes)
                    if isinstance(pick, int) and 0 < pick < len(options):
                        self.lost.remove((seat, options[pick]))
                        self.lost.insert(0, (seat, what))
                        what = options[pick]
            if what.startswith("hook:"):
                hook = self.ruleset.lost_hooks.get(what[5:])
                if hook is not None:
                    hook.on_lost(self, seat)
            else:
                yield from self.trigger_one(seat, "lost_" + what, Trigger(seat))

    def _loss_effects(self, seat: int, what: str) -> list[Effect]:
        """The effects a queued loss (Game.lost) sets off: an equipment card's own (``hook:NAME``), or the seat's
        skills reacting to losing hand cards or equipment."""
        if what.startswith("hook:"):
            hook = self.ruleset.lost_hooks.get(what[5:])
            return [hook] if hook is not None else []
        p = self.players[seat]
        return [eff for eff in (p.skills if not p.latent_skills else [*p.skills, *p.latent_skills])
                if "lost_" + what in eff.timings]

    def set_mark(self, seat: int, name: str, value: int) -> None:
        """Change a package's state on a character (Player.marks); 0 removes it."""
        marks = self.players[seat].marks
        if marks.get(name, 0) == value:
            return
        if value:
            marks[name] = value
        else:
            del marks[name]
        self.journal.append(f"('mark', {seat}, {name!r}, {value})")

    def has_effect(self, seat: int, name: str) -> bool:
        """Has the seat this effect, or a latent skill of this name (Player.latent_skills)?"""
        return any(e.name == name for e in self.effects_of(seat)) or any(
            e.name == name for e in self.players[seat].latent_skills)

    def weapon(self, seat: int) -> CardDef | None:
        cid = self.players[seat].equips.get("weapon")
        return self.cards[cid] if cid is not None else None

    def effects_without(self, seat: int, card_id: int | None) -> list[Effect]:
        """The seat's effects as they would be without the equipped card ``card_id`` (as they are if it is
        not one of theirs)."""
        effects = self.effects_of(seat)
        p = self.players[seat]
        if card_id is None or card_id not in p.equips.values():
            return effects
        gone = self.ruleset.effects.get(self.cards[card_id].name)
        return [e for e in effects if e is not gone]

    def distance(self, a: int, b: int, without: int | None = None) -> int:
        """Seat distance from a to b among the living, with horse modifiers (docs/rules.md#distance); ``without``: as
        if that equipped card were gone (流离 judges the range once its cost is discarded)."""
        if a == b:
            return 0
        ring = self.alive_seats()
        if a not in ring or b not in ring:
            return 1 << 30
        if self.ruleset.distance_overrides:
            for eff in self.effects_of(a):
                fixed = eff.distance_fixed(self, a, b)
                if fixed is not None:
                    return fixed  # (奋迅: counts as 1 this turn)
        ia, ib = ring.index(a), ring.index(b)
        steps = (ib - ia) % len(ring)
        d = min(steps, len(ring) - steps)
        for eff in self.effects_of(a) if without is None else self.effects_without(a, without):
            d += eff.distance_from(self, a)
        for eff in self.effects_of(b) if without is None else self.effects_without(b, without):
            d += eff.distance_to(self, b)
        return max(1, d)

    def attack_range(self, seat: int, without: int | None = None) -> int:
        rng = 1
        for eff in self.effects_of(seat) if without is None else self.effects_without(seat, without):
            r = eff.attack_range(self, seat)
            if r is not None:
                rng = r
        auras = self.ruleset.range_auras
        if auras:
            for holder in self.alive_seats():
                if holder != seat:
                    for eff in self.effects_of(holder):
                        if eff.name in auras:
                            rng += eff.range_bonus_to(self, holder, seat)
        return rng

    def in_attack_range(self, a: int, b: int) -> bool:
        return a != b and self.distance(a, b) <= self.attack_range(a)

    def slash_limit_lifted(self, seat: int) -> bool:
        return any(eff.unlimited_slash(self, seat) for eff in self.effects_of(seat))

    def owner_zone(self, card_id: int) -> tuple[int, str] | None:
        """Which player area holds the card: (seat, "hand" | "equip" | "judgment")."""
        for p in self.players:
            if card_id in p.hand:
                return p.seat, "hand"
            if card_id in p.equips.values():
                return p.seat, "equip"
            if card_id in p.judgment:
                return p.seat, "judgment"
        return None

    # ------------------------------------------------------------------ card moves

    # Each move that can take a card from a character is a settlement: the skills reacting to the loss
    # (连营, 枭姬) resolve inside it, right after the cards have moved (fire_losses), so whatever the
    # caller does next comes after them. Call them with ``yield from``; the plain ``_``-helpers do the
    # moving only, for moves made of several (equip, move_out), which fire once at their end.

    def _remove_from_owner(self, card_id: int) -> None:
        # A card lies in one place only, so the areas can be searched in any order: hands first
        # (where most cards come from: the current player's first), then equipment, judgment areas,
        # processing.
        p = self.players[self.current]
        if card_id in p.hand:
            p.hand.remove(card_id)
            if p.watch_hand and not p.hand:
                self.lost.append((p.seat, "hand"))
            return
        for p in self.players:
            if card_id in p.hand:
                p.hand.remove(card_id)
                if p.watch_hand and not p.hand:
                    self.lost.append((p.seat, "hand"))
                return
        for p in self.players:
            if p.equips and card_id in p.equips.values():
                slot = next(slot for slot, cid in p.equips.items() if cid == card_id)
                del p.equips[slot]
                self._effects.pop(p.seat, None)
                name = self.cards[card_id].name
                lost = self.ruleset.lost_hooks.get(name)
                if lost is not None:
                    if p.watch_equip:
                        # (a skill of theirs reacts to the same loss: both are queued, their owner orders them)
                        self.lost.append((p.seat, "hook:" + name))
                    else:
                        lost.on_lost(self, p.seat)  # 白银狮子 leaves: its wearer recovers
                if p.watch_equip:
                    self.lost.append((p.seat, "equip"))
                return
            if card_id in p.judgment:
                p.judgment.remove(card_id)
                return
        if card_id in self.processing:
            self.processing.remove(card_id)
            return
        for p in self.players:
            if p.pile and card_id in p.pile:  # (cards on a general: 不屈's 创, a dark soul's set-aside card)
                p.pile.remove(card_id)
                return

    def to_processing(self, card_ids: Iterable[int]) -> Settle[None]:
        for cid in card_ids:
            self._remove_from_owner(cid)
            self.processing.append(cid)
            self.journal.append(f"('proc', {cid})")
        if self.lost:
            yield from self.fire_losses()

    def _to_discard(self, card_ids: Iterable[int]) -> None:
        for cid in card_ids:
            self._remove_from_owner(cid)
            self.discard_pile.append(cid)
            self.journal.append(f"('disc', {cid})")

    def to_discard(self, card_ids: Iterable[int]) -> Settle[None]:
        """Cards discarded by a decision (a cost, the discard phase); where a skill reacts ("discarded": 礼让), each
        owner's skills see their own cards once they lie in the discard pile."""
        watched = "discarded" in self.ruleset.timings
        owners: dict[int, list[int]] = {}
        if watched:
            card_ids = list(card_ids)
            for cid in card_ids:
                where = self.owner_zone(cid)
                if where is not None and where[1] != "judgment":
                    owners.setdefault(where[0], []).append(cid)
        self._to_discard(card_ids)
        if self.lost:
            yield from self.fire_losses()
        for seat in sorted(owners):
            if self.players[seat].alive:
                yield from self.trigger_one(seat, "discarded", Trigger(seat, card=tuple(owners[seat])))

    def processing_to_discard(self, card_ids: Iterable[int]) -> None:
        """Used cards finish: whatever is still in processing goes to the discard pile (nobody loses a card
        by this, so it is no settlement)."""
        for cid in card_ids:
            if cid in self.processing:
                self.processing.remove(cid)
                self.discard_pile.append(cid)
                self.journal.append(f"('disc', {cid})")

    def _to_hand(self, seat: int, card_ids: Iterable[int]) -> None:
        hand = self.players[seat].hand
        for cid in card_ids:
            self._remove_from_owner(cid)
            hand.append(cid)
            self.journal.append(f"('hand', {seat}, {cid})")

    def to_hand(self, seat: int, card_ids: Iterable[int]) -> Settle[None]:
        self._to_hand(seat, card_ids)
        if self.lost:
            yield from self.fire_losses()

    def _to_judgment(self, seat: int, card_id: int, as_name: str = "") -> None:
        self._remove_from_owner(card_id)
        self.players[seat].judgment.append(card_id)
        self.journal.append(f"('judg', {seat}, {card_id})")
        if as_name:
            self.judgment_as[card_id] = as_name
        elif self.judgment_as:
            self.judgment_as.pop(card_id, None)

    def to_judgment(self, seat: int, card_id: int, as_name: str = "") -> Settle[None]:
        """Place a delayed trick; ``as_name`` when the card is a virtual one (国色 makes a ♦ card 乐不思蜀)."""
        self._to_judgment(seat, card_id, as_name)
        if self.lost:
            yield from self.fire_losses()

    def judgment_name(self, card_id: int) -> str:
        """What a card in a judgment area counts as."""
        return self.judgment_as.get(card_id) or self.cards[card_id].name

    def equip(self, seat: int, card_id: int) -> Settle[None]:
        """Put an equipment card into its slot; an occupied slot's card is discarded first. The card leaving
        the hand is a loss of its own, as any card used (连营 resolves before it is put in place: FreeKill
        fk_rand_p9_7 seq 1909-1940); the displaced card's loss resolves once the new card is in place (枭姬)."""
        slot = self.cards[card_id].subtype
        p = self.players[seat]
        self._remove_from_owner(card_id)
        if self.lost:
            # Meanwhile the card is on the table (FreeKill shows it in the processing area).
            self.processing.append(card_id)
            self.journal.append(f"('proc', {card_id})")
            yield from self.fire_losses()
            self.processing.remove(card_id)
        old = p.equips.get(slot)
        if old is not None:
            self._move_out(seat, [old], pb.ZONE_EQUIPMENT, pb.MOVE_REASON_EQUIP_REPLACED, "EQUIP_SLOT")
        p.equips[slot] = card_id
        self._effects.pop(seat, None)
        self.journal.append(f"('equip', {seat}, {card_id})")
        if self.lost:
            yield from self.fire_losses()

    def move_out(self, seat: int | None, card_ids: list[int], zone: int, reason: int, code: str,
                 to_seat: int | None = None, to_zone: int | None = None) -> Settle[None]:
        """A move no decision names: recorded as a CardsMoved outcome. The cards go to the discard
        pile, or to ``to_seat``'s hand (or its ``to_zone``: ZONE_JUDGMENT for 闪电 moving on)."""
        self._move_out(seat, card_ids, zone, reason, code, to_seat, to_zone)
        if self.lost:
            yield from self.fire_losses()

    def _move_out(self, seat: int | None, card_ids: list[int], zone: int, reason: int, code: str,
                  to_seat: int | None = None, to_zone: int | None = None) -> None:
        if not card_ids:
            return
        if to_zone is None:
            to_zone = pb.ZONE_DISCARD_PILE if to_seat is None else pb.ZONE_HAND
        ev = pb.Event()
        m = ev.cards_moved
        m.cards.extend(card_ids)
        if seat is not None:
            m.from_seat = seat
        m.from_zone = zone  # type: ignore[assignment]
        if to_seat is not None:
            m.to_seat = to_seat
        m.to_zone = to_zone  # type: ignore[assignment]
        m.reason = reason  # type: ignore[assignment]
        self.emit(ev, code)
        # Recorded before it happens, so what the move sets off (白银狮子's recovery) comes after it.
        if to_seat is None:
            self._to_discard(card_ids)
        elif to_zone == pb.ZONE_JUDGMENT:
            for cid in card_ids:
                self._to_judgment(to_seat, cid)
        else:
            self._to_hand(to_seat, card_ids)

    def to_pile(self, seat: int, card_ids: list[int]) -> None:
        """Cards from the draw pile's top put on ``seat``'s general (ZONE_GENERAL), recorded as a CardsMoved."""
        ev = pb.Event()
        m = ev.cards_moved
        m.cards.extend(card_ids)
        m.from_zone = pb.ZONE_DRAW_PILE
        m.to_seat = seat
        m.to_zone = pb.ZONE_GENERAL
        self.emit(ev, "MOVE_MISMATCH")
        for cid in card_ids:
            self.players[seat].pile.append(cid)
            self.journal.append(f"('pile', {seat}, {cid})")

    def pile_out(self, seat: int, card_ids: list[int], reason: int = pb.MOVE_REASON_UNSPECIFIED) -> None:
        """Cards on ``seat``'s general to the discard pile, recorded as a CardsMoved."""
        ev = pb.Event()
        m = ev.cards_moved
        m.cards.extend(card_ids)
        m.from_seat = seat
        m.from_zone = pb.ZONE_GENERAL
        m.to_zone = pb.ZONE_DISCARD_PILE
        m.reason = reason  # type: ignore[assignment]
        self.emit(ev, "MOVE_MISMATCH")
        pile = self.players[seat].pile
        for cid in card_ids:
            pile.remove(cid)
            self.discard_pile.append(cid)
            self.journal.append(f"('disc', {cid})")

    # ------------------------------------------------------------------ the draw pile

    def take_top(self) -> Settle[int]:
        """The top card of the draw pile, reshuffling the discard pile when it is empty."""
        if not self.draw_pile:
            yield from self.reshuffle()
        cid = self.draw_pile.pop()
        return cid

    def reshuffle(self) -> Settle[None]:
        if not self.discard_pile or (self.max_reshuffles and self.reshuffles >= self.max_reshuffles):
            why = ("no card left in the draw or discard pile" if not self.discard_pile
                   else f"the header's cap of {self.max_reshuffles} reshuffles was reached")
            raise GameEnded(pb.SIDE_NONE, [], f"draw game: a card was needed and {why}")
        self.reshuffles += 1
        # The seeded order shuffles the discard pile in pile order (bottom first).
        request = ShuffleRequest(None, label=f"reshuffle/{self.reshuffles}", cards=tuple(self.discard_pile))
        order_top_first = yield request
        assert isinstance(order_top_first, list)
        self.discard_pile = []
        self.draw_pile = list(reversed(order_top_first))
        self.journal.append(f"('reshuffle', {tuple(order_top_first)!r})")
        ev = pb.Event()
        ev.reshuffle.order.extend(order_top_first)
        self.emit(ev, "RESHUFFLE_MISMATCH")

    def draw(self, seat: int, count: int, reason: int, code: str = "") -> Settle[list[int]]:
        """Draw ``count`` cards one at a time from the top (docs/rules.md#drawing, docs/rules.md#reshuffle)."""
        not_adopted = ""
        if self.adopting and count > 0:
            recorded = yield draw_chance(seat, count, reason)
            if isinstance(recorded, list):
                taken, not_adopted = self.draw_recorded(seat, count, reason, recorded, code or "DRAW_NOT_TOP")
                if taken is not None:
                    return taken
        drawn: list[int] = []
        pile = self.draw_pile
        try:
            if 0 < count <= len(pile):
                # Enough cards: no reshuffle can come in between (the top is the end of the list).
                drawn = pile[:-count - 1:-1]
                del pile[-count:]
            else:
                for _ in range(count):
                    drawn.append((yield from self.take_top()))
        finally:
            if drawn:
                self.players[seat].hand.extend(drawn)
                self.journal.append(f"('draw', {seat}, {tuple(drawn)!r})")
                ev = pb.Event()
                d = ev.draw_cards
                d.seat = seat
                d.cards.extend(drawn)
                d.reason = reason  # type: ignore[assignment]
                self.outcomes.append(Outcome(ev, code or "DRAW_NOT_TOP", not_adopted=not_adopted))
        return drawn

    def draw_recorded(self, seat: int, count: int, reason: int, recorded: list[int], code: str
                      ) -> tuple[list[int] | None, str]:
        """Adopt the cards a log recorded drawing where they are not the top ones (a stacked draw, another
        count): they go to the hand, from wherever they are in the draw pile. (None, "") when they are the
        rules' draw; (None, why) when they cannot be taken — then the rules' draw is made."""
        pile = self.draw_pile
        top = pile[:-count - 1:-1] if count <= len(pile) else None
        if recorded == top:
            return None, ""
        if top is None:
            return None, "a reshuffle comes first: the draw is made by the rules"
        if len(set(recorded)) != len(recorded):
            return None, "it names a card twice"
        lost = next((c for c in recorded if c not in pile), None)
        if lost is not None:
            return None, f"{self.label(lost)} is not in the draw pile ({self.where(lost)})"
        for cid in recorded:
            pile.remove(cid)
        self.players[seat].hand.extend(recorded)
        self.journal.append(f"('draw', {seat}, {tuple(recorded)!r})")
        ev, rule = pb.Event(), pb.Event()
        for event, cards in ((ev, recorded), (rule, top)):
            event.draw_cards.seat = seat
            event.draw_cards.cards.extend(cards)
            event.draw_cards.reason = reason  # type: ignore[assignment]
        self.outcomes.append(Outcome(ev, code, rule=rule))
        return list(recorded), ""

    def where(self, card_id: int) -> str:
        """Where a card is, in words."""
        owner = self.owner_zone(card_id)
        if owner is not None:
            return f"in seat {owner[0]}'s {owner[1]}"
        if card_id in self.discard_pile:
            return "in the discard pile"
        if card_id in self.processing:
            return "in the processing area"
        return "in the draw pile" if card_id in self.draw_pile else "nowhere"

    def judge(self, seat: int, reason: str) -> Settle[CardDef]:
        """Reveal the top card as a judgment; it is discarded once it has taken effect."""
        rule: pb.Event | None = None
        not_adopted = ""
        recorded = (yield judge_chance(seat, reason)) if self.adopting else None
        pile = self.draw_pile
        if isinstance(recorded, int) and pile and recorded != pile[-1]:
            # A log recorded another judgment card: it takes effect if it is in the draw pile.
            if recorded in pile:
                rule = pb.Event(judgment=pb.Judgment(seat=seat, card=pile[-1], reason=reason))
                pile.remove(recorded)
                pile.append(recorded)
            else:
                not_adopted = f"{self.label(recorded)} is not in the draw pile ({self.where(recorded)})"
        cid = yield from self.take_top()
        self.processing.append(cid)
        self.journal.append(f"('judge', {seat}, {cid})")
        if rule is None and not not_adopted:
            self.outcomes.append(judgment_outcome(seat, cid, reason))
        else:
            self.outcomes.append(Outcome(judgment_event(seat, cid, reason), "JUDGMENT_MISMATCH", rule=rule,
                                         not_adopted=not_adopted))
        if self.has_skills:
            # Before it takes effect, a skill may replace the judgment card (鬼才).
            ctx = Trigger(seat, card=self.cards[cid], reason=reason)
            yield from self.trigger("judging", ctx)
            if self.ruleset.suit_filters:
                return self.card_as(seat, ctx.card.id)  # (红颜: a ♠ judged for 小乔 is a ♥)
            return ctx.card  # type: ignore[no-any-return]
        return self.cards[cid]

    def judgment_done(self, card: CardDef) -> None:
        self.processing_to_discard([card.id])

    def finish_judgment(self, seat: int, card: CardDef, reason: str = "") -> Settle[None]:
        """The judgment has taken effect: a skill may take the card (天妒, 洛神), else it is discarded."""
        if self.has_skills:
            yield from self.trigger_one(seat, "judged", Trigger(seat, card=card, reason=reason))
        self.processing_to_discard([card.id])

    # ------------------------------------------------------------------ HP

    def damage(self, source: int | None, target: int, amount: int, nature: int = pb.DAMAGE_NATURE_NORMAL,
               card: UsedCard | None = None, *, ignores_armor: bool = False, chained: bool = False
               ) -> Settle[None]:
        """``card``: the card that causes the damage, if any (奸雄 takes it, 裸衣 adds to a 杀's or 决斗's).
        ``ignores_armor``: the target's armor does not change it (青釭剑's 杀); ``chained``: it is passed on
        by 铁锁连环. With packages that hook damage, the amount goes through DamageInfo first."""
        p = self.players[target]
        if not p.alive or amount <= 0:
            return
        info: DamageInfo | None = None
        if self.ruleset.damage_pipeline:
            info = DamageInfo(source, target, amount, nature, card, chained, ignores_armor)
            if self.ruleset.source_redirects:
                for holder in self.alive_seats(self.current):
                    for eff in self.effects_of(holder):
                        new = eff.redirect_source(self, holder, info)
                        if new is not None:
                            info.source = source = new
            if self.has_skills and "damage_incoming" in self.ruleset.timings:
                # Before it is dealt, the target's skill may deal it elsewhere instead (天香: ``skip``).
                ctx = Trigger(target, source=source, amount=amount, card=card, damage=info)
                yield from self.trigger_one(target, "damage_incoming", ctx)
                if ctx.skip:
                    return
            self.modify_damage(info)
            amount = info.amount
            if amount <= 0:
                return
        code = ""
        if self.mode.hp_hook:
            # After every modification, the mode's own say (a house rule's protection, a soul's prevention).
            amount, code = yield from self.mode.hp_change(self, target, amount, source, True)
            if amount <= 0 or not p.alive:
                return
        p.hp -= amount
        self.journal.append(f"('dmg', {target}, {amount})")
        outcome = damage_outcome(source, target, amount, nature, p.hp, chained)
        self.outcomes.append(Outcome(outcome.event, code) if code else outcome)
        if p.hp <= 0:
            yield from self.dying(target, killer=source)
        if self.has_skills and p.alive:
            # After-damage point (奸雄, 反馈, 刚烈, 遗计): the damaged character's skills.
            yield from self.trigger_one(target, "damaged", Trigger(target, source=source, amount=amount,
                                                                    card=card))
        if info is not None:
            # The damage is settled (dying included): the packages' after-damage rules (铁锁连环).
            for rule in self.ruleset.after_damage:
                yield from rule(self, info)

    def modify_damage(self, info: DamageInfo) -> None:
        """The source's effects change the amount (古锭刀), then the target's (藤甲, 白银狮子)."""
        if info.source is not None and self.players[info.source].alive:
            for eff in self.effects_of(info.source):
                eff.damage_caused(self, info)
        for eff in self.effects_of(info.target):
            if not (info.ignores_armor and eff.is_armor):
                eff.damage_inflicted(self, info)

    def lose_hp(self, seat: int, amount: int, *, dying_now: bool = True) -> Settle[None]:
        """``dying_now`` False: the caller settles the dying afterwards (a loss that strikes several characters
        at once, each of whom then goes through dying in turn: the last-three clock's drain)."""
        p = self.players[seat]
        code = ""
        if self.mode.hp_hook:
            amount, code = yield from self.mode.hp_change(self, seat, amount, None, False)
            if amount <= 0 or not p.alive:
                return
        p.hp -= amount
        self.journal.append(f"('lose', {seat}, {amount})")
        outcome = lose_hp_outcome(seat, amount, p.hp)
        self.outcomes.append(Outcome(outcome.event, code) if code else outcome)
        if p.hp <= 0 and dying_now:
            yield from self.dying(seat, killer=None)

    def recovered(self, seat: int, amount: int) -> Settle[None]:
        """After ``seat`` recovered ``amount`` (``recover``'s result): their skills that react to it (淑慎), where
        any skill of the game has that timing."""
        if amount > 0 and "recovered" in self.ruleset.timings and self.players[seat].alive:
            yield from self.trigger_one(seat, "recovered", Trigger(seat, amount=amount))

    def recover(self, seat: int, amount: int = 1) -> int:
        """Recover up to max HP; recovering nothing produces no outcome. Returns what was recovered (for
        ``recovered``)."""
        p = self.players[seat]
        gained = min(amount, p.max_hp - p.hp)
        if gained <= 0 or not p.alive:
            return 0
        p.hp += gained
        self.journal.append(f"('rec', {seat}, {gained})")
        self.outcomes.append(recover_outcome(seat, gained, p.hp))
        if p.pile:
            for eff in p.skills:
                eff.after_recover(self, seat)  # (不屈: 创 beyond 1 − HP go)
        return gained

    # ------------------------------------------------------------------ dying and death

    def dying(self, seat: int, killer: int | None) -> Settle[None]:
        """docs/rules.md#rescue: from the current player in seat order, each may save with 桃."""
        p = self.players[seat]
        self.outcomes.append(dying_outcome(seat))
        if "dying" in self.ruleset.timings:
            # The dying character's own skills first (涅槃).
            ctx = Trigger(seat, source=killer)
            yield from self.trigger_one(seat, "dying", ctx)
            if p.hp > 0 or ctx.skip:
                return  # (``skip``: a skill keeps the character out of the dying state: 不屈)
        if "others_dying" in self.ruleset.timings:
            # Everyone's skills on another's dying (随势), in seat order from the current player.
            yield from self.trigger("others_dying", Trigger(seat, source=killer))
        for asked in self.alive_seats(self.current):
            while p.hp <= 0:
                answer = yield peach_request(asked, seat)
                if answer is None or answer is UNANSWERED:
                    break
                assert isinstance(answer, pb.Event)
                yield from self.ruleset.rescue(self, asked, seat, answer)
            if p.hp > 0:
                return
        yield from self.die(seat, killer)

    def die(self, seat: int, killer: int | None) -> Settle[None]:
        p = self.players[seat]
        p.alive = False
        self._alive_from.clear()
        self.journal.append(f"('die', {seat})")
        ev = pb.Event()
        ev.death.seat = seat
        if killer is not None:
            ev.death.killer = killer
        self.mode.fill_death(self, seat, ev.death)
        self.emit(ev, "DEATH_MISMATCH")
        yield from self.mode.death_revealed(self, seat)
        self.check_victory(seat)
        if "died" in self.ruleset.timings:
            # The victim's own skills on its death (断肠), before anyone else's; it is dead, so trigger_one skips it.
            for eff in list(p.skills):
                if "died" in eff.timings:
                    yield from eff.on_trigger(self, seat, "died", Trigger(seat, source=killer))
        if "death" in self.ruleset.timings:
            # Others' skills on a death, before the cards are discarded (行殇 takes them).
            yield from self.trigger("death", Trigger(seat, source=killer))
        # Only now are the victim's cards discarded, then reward or penalty (docs/rules.md#death-order).
        yield from self.move_out(seat, list(p.hand), pb.ZONE_HAND, pb.MOVE_REASON_DEATH, "MOVE_MISMATCH")
        yield from self.move_out(seat, p.equipped(), pb.ZONE_EQUIPMENT, pb.MOVE_REASON_DEATH, "MOVE_MISMATCH")
        yield from self.move_out(seat, list(p.judgment), pb.ZONE_JUDGMENT, pb.MOVE_REASON_DEATH, "MOVE_MISMATCH")
        if p.pile:
            self.pile_out(seat, list(p.pile), pb.MOVE_REASON_DEATH)
        yield from self.reward_or_penalty(seat, killer)

    def revive(self, seat: int) -> None:
        """A dead character is back in play (a mode's rebirth: docs/rules.md#rebirth); with ``die`` the only
        places where a character's being alive changes."""
        self.players[seat].alive = True
        self._alive_from.clear()
        self.journal.append(f"('revive', {seat})")

    def reward_or_penalty(self, victim: int, killer: int | None) -> Settle[None]:
        """The mode's reward or penalty for a kill (an engine variant changes it through the game's mode:
        tests/regress_variant.py)."""
        return self.mode.reward_or_penalty(self, victim, killer)

    def check_victory(self, just_died: int) -> None:
        """The mode's victory conditions (raises GameEnded)."""
        self.mode.check_victory(self, just_died)

    # ------------------------------------------------------------------ nullification

    def nullified(self, trick: str, target: int | None, card: int | None = None) -> Settle[bool]:
        """Offer 无懈可击 against a trick's effect on one target; True if it is cancelled.

        Each 无懈可击 played opens a new window in which it can itself be nullified. ``card`` is
        the delayed trick being judged, if the window is for one.
        """
        rule = self.ruleset.nullify_rule
        if rule is not None:
            return (yield from rule(self, trick, target, card))
        cancelled = False
        what = trick
        while True:
            answer = yield nullify_request(what, target, card)
            if answer is None or answer is UNANSWERED:
                return cancelled
            assert isinstance(answer, pb.Event)
            if not (yield from self.ruleset.play_nullification(self, answer)):
                continue
            cancelled = not cancelled
            what = "nullification"

    # ------------------------------------------------------------------ the turn

    def run(self) -> Settle[None]:
        """The whole game from the first turn (the starting hands are already dealt); every answer passes
        through the mode first when it takes decisions of its own (Mode.intercept)."""
        if self.mode.intercepts:
            return self._intercepted(self._play())
        return self._play()

    def _intercepted(self, inner: Settle[None]) -> Settle[None]:
        try:
            try:
                req = next(inner)
            except StopIteration:
                return
            while True:
                answer = yield req
                if (yield from self.mode.intercept(self, req, answer)):
                    continue  # the mode took it: the same request is asked again
                try:
                    req = inner.send(answer)
                except StopIteration:
                    return
        except GameEnded as end:  # ended by what the mode did (a reveal completing a victory)
            inner.close()
            self.finish(end)

    def _play(self) -> Settle[None]:
        try:
            if self.prelude is not None:
                yield from self.prelude(self)
            first = seat = self.mode.first_seat(self)
            since_first = self.n  # (seats after the first one, in turn order: a round begins when it falls)
            while True:
                now = (seat - first) % self.n
                if now <= since_first:
                    self.round_number += 1
                    if self.mode.round_hook:
                        yield from self.mode.round_begins(self, self.round_number)
                        if not self.players[seat].alive:
                            # (the round's beginning killed whoever was to play first)
                            since_first = now
                            seat = self.next_alive(seat)
                            continue
                since_first = now
                p = self.players[seat]
                if p.marks.get("turned_over"):
                    # A character turned over (叠置, 翻面) skips this turn and is turned back instead.
                    self.set_mark(seat, "turned_over", 0)
                else:
                    yield from self.turn(seat)
                while self.extra_turns:
                    extra = self.extra_turns.pop(0)
                    if self.players[extra].alive:
                        yield from self.turn(extra)  # an extra turn a skill gave (放权)
                seat = self.next_alive(seat)
        except GameEnded as end:
            self.finish(end)

    def finish(self, end: GameEnded) -> None:
        self.over = True
        self.result = end
        end.scores = self.mode.final_scores(self, end)  # not part of the state: the digest never sees it
        ev = pb.Event()
        ev.game_over.side = end.side  # type: ignore[assignment]
        ev.game_over.winners.extend(sorted(end.winners))
        if end.kingdom:
            ev.game_over.kingdom = end.kingdom
        self.journal.append(f"('over', {end.side})")
        self.emit(ev, "GAME_RESULT")

    def begin_phase(self, seat: int, phase: int) -> None:
        self.phase = phase  # type: ignore[assignment]
        # Outcomes are never changed once emitted (only a reshuffle's code is), so one outcome and
        # journal entry per (seat, phase) serve all turns.
        key = seat * 8 + phase
        cached = self._phase_outcomes.get(key)
        if cached is None:
            ev, entry = phase_start_event(seat, phase)
            cached = self._phase_outcomes[key] = (Outcome(ev, "TURN_MISMATCH"), entry)
        self.journal.append(cached[1])
        self.outcomes.append(cached[0])

    def turn(self, seat: int) -> Settle[None]:
        self.current = seat
        self.turn_number += 1
        p = self.players[seat]
        self.journal.append(f"('turn', {seat}, {self.turn_number})")
        self.outcomes.append(turn_start_outcome(seat, self.turn_number))
        skipped: set[int] = set()
        if p.turn_flags:
            p.turn_flags.clear()

        self.begin_phase(seat, pb.PHASE_START)
        if self.mode.phase_hook:
            yield from self.mode.phase_begins(self, seat, pb.PHASE_START)
        if self.has_skills:
            yield from self.trigger_one(seat, "phase_start", Trigger(seat, phase=pb.PHASE_START))
        if self.has_skills and "before_phase" in self.ruleset.timings:
            ctx = Trigger(seat, phase=pb.PHASE_JUDGMENT, skipped=skipped)
            yield from self.trigger_one(seat, "before_phase", ctx)  # 巧变, 神速 may skip the judgment phase
            if ctx.skip:
                skipped.add(pb.PHASE_JUDGMENT)
        if p.judgment and pb.PHASE_JUDGMENT not in skipped:
            self.begin_phase(seat, pb.PHASE_JUDGMENT)
            judged: list[int] = []
            while p.alive:
                # The last placed is resolved first; the list can change meanwhile. Each card is
                # judged once: a 闪电 with nowhere to move stays, to be judged next turn.
                pending = [c for c in reversed(p.judgment) if c not in judged]
                if not pending:
                    break
                cid = pending[0]
                judged.append(cid)
                spec = self.ruleset.delayed(self.judgment_name(cid))
                skipped |= (yield from spec.judge_phase(self, seat, cid))
        if p.alive and pb.PHASE_DRAW not in skipped and "before_phase" in self.ruleset.timings and self.has_skills:
            ctx = Trigger(seat, phase=pb.PHASE_DRAW, skipped=skipped)
            yield from self.trigger_one(seat, "before_phase", ctx)  # 巧变 may skip the draw phase
            if ctx.skip:
                skipped.add(pb.PHASE_DRAW)
        if p.alive and pb.PHASE_DRAW not in skipped:
            self.begin_phase(seat, pb.PHASE_DRAW)
            count = 2
            if self.has_skills:
                # Draw-phase skills may change the count (英姿, 裸衣) or replace the draw (突袭).
                ctx = Trigger(seat, phase=pb.PHASE_DRAW, count=2)
                yield from self.trigger_one(seat, "draw_phase", ctx)
                count = 0 if ctx.skip else ctx.count
            if p.alive and count > 0:
                yield from self.draw(seat, count, pb.DRAW_REASON_DRAW_PHASE, "DRAW_COUNT")
            if self.has_skills and "draw_done" in self.ruleset.timings and p.alive:
                yield from self.trigger_one(seat, "draw_done", Trigger(seat, phase=pb.PHASE_DRAW))  # 好施
        if p.alive and pb.PHASE_PLAY not in skipped and self.has_skills and "before_phase" in self.ruleset.timings:
            ctx = Trigger(seat, phase=pb.PHASE_PLAY, skipped=skipped)
            yield from self.trigger_one(seat, "before_phase", ctx)  # 巧变, 神速, 放权 may skip the play phase
            if ctx.skip:
                skipped.add(pb.PHASE_PLAY)
        if p.alive and pb.PHASE_PLAY not in skipped:
            self.begin_phase(seat, pb.PHASE_PLAY)
            p.slash_count = 0
            if p.skill_uses:
                p.skill_uses.clear()
            while p.alive:
                answer = yield play_request(seat)
                assert isinstance(answer, pb.Event)
                if answer.HasField("end_play_phase"):
                    break
                yield from self.ruleset.play_action(self, seat, answer)
        if p.alive and self.has_skills:
            ctx = Trigger(seat, phase=pb.PHASE_DISCARD)
            yield from self.trigger_one(seat, "before_phase", ctx)  # 克己 may skip the discard phase
            if ctx.skip:
                skipped.add(pb.PHASE_DISCARD)
        if p.alive and pb.PHASE_DISCARD not in skipped:
            self.begin_phase(seat, pb.PHASE_DISCARD)
            discarded = yield from self.discard_phase(seat)
            if self.has_skills and "discard_phase_end" in self.ruleset.timings and p.alive:
                # Others' skills at the end of this discard phase (固政), with the hand cards discarded in it.
                yield from self.trigger("discard_phase_end", Trigger(seat, phase=pb.PHASE_DISCARD, cards=discarded))
        if p.alive:
            self.begin_phase(seat, pb.PHASE_FINISH)
            if self.has_skills:
                yield from self.trigger_one(seat, "phase_start", Trigger(seat, phase=pb.PHASE_FINISH))
                if "others_phase" in self.ruleset.timings and p.alive:
                    # Others' skills at this character's finish phase (骁果).
                    yield from self.trigger("others_phase", Trigger(seat, phase=pb.PHASE_FINISH))
        if self.has_skills and "turn_end" in self.ruleset.timings and p.alive:
            yield from self.trigger_one(seat, "turn_end", Trigger(seat))  # 放权's extra turn
        self.phase = pb.PHASE_UNSPECIFIED

    def discard_phase(self, seat: int) -> Settle[list[int]]:
        """docs/rules.md#hand-limit: discard down to current HP; no voluntary discards. Returns the cards discarded."""
        p = self.players[seat]
        excess = len(p.hand) - max(p.hp, 0)
        if excess <= 0:
            return (yield from self.voluntary_discard(seat))
        while True:
            answer = yield discard_request(seat, excess)
            if answer is UNANSWERED:
                self.flag("HAND_LIMIT", f"seat {seat} holds {len(p.hand)} cards with {p.hp} HP and had to "
                          f"discard {excess} in the discard phase, but discarded none", seat)
                return []
            assert isinstance(answer, pb.Event)
            chosen = list(answer.choose_cards.cards)
            if self.report(self.verify_own_cards(seat, chosen, zones=("hand",))):
                continue
            if len(chosen) != excess:
                self.flag("HAND_LIMIT", f"seat {seat} holds {len(p.hand)} cards with {p.hp} HP and must discard "
                          f"exactly {excess} in the discard phase, not {len(chosen)}", seat)
            yield from self.to_discard(chosen)
            return chosen

    def voluntary_discard(self, seat: int) -> Settle[list[int]]:
        """Nothing is due: a discard offered anyway is HAND_LIMIT (too many: some where 0 are due)."""
        p = self.players[seat]
        while True:
            answer = yield discard_request(seat, 0)
            if answer is None or answer is UNANSWERED:
                return []
            assert isinstance(answer, pb.Event)
            chosen = list(answer.choose_cards.cards)
            if not chosen:
                return []
            if self.report(self.verify_own_cards(seat, chosen, zones=("hand",))):
                continue
            self.flag("HAND_LIMIT", f"seat {seat} holds {len(p.hand)} cards with {p.hp} HP: nothing is due in the "
                      f"discard phase, but {len(chosen)} card(s) were discarded", seat)
            yield from self.to_discard(chosen)
            return chosen

    # ------------------------------------------------------------------ shared checks

    def verify_own_cards(self, seat: int, card_ids: list[int], zones: tuple[str, ...] = ("hand",)
                         ) -> list[Violation]:
        """Each card must exist, be named once, and lie in one of the seat's given zones."""
        out: list[Violation] = []
        if len(card_ids) > 1 and len(set(card_ids)) != len(card_ids):
            out.append(Violation("INVALID_CHOICE", f"seat {seat} names the same card twice", seat, hard=True))
        p = self.players[seat]
        for cid in card_ids:
            if cid not in self.cards:
                out.append(Violation("UNKNOWN_CARD", f"card #{cid} is not in this game's deck", seat, cid,
                                     hard=True))
                continue
            ok = (("hand" in zones and cid in p.hand) or ("equip" in zones and cid in p.equips.values())
                  or ("judgment" in zones and cid in p.judgment))
            if not ok:
                where = " or ".join(zones)
                out.append(Violation("CARD_NOT_OWNED", f"seat {seat} does not have {self.label(cid)} in "
                                     f"their {where}", seat, cid, hard=True))
        return out

    def take_recorded(self, seat: int, card_id: int, problems: list[Violation]) -> bool:
        """A card ``seat`` uses or plays from where it does not hold it, carried out as the game that was played
        did (docs/log-format.md#taken-cards): when ``problems`` is that one CARD_NOT_OWNED and the log's very next
        event records the card taken (a CardsMoved, MOVE_REASON_TAKEN, of this card alone into ``seat``'s hand,
        from where the card really is: another character's hand or equipment, or the draw pile). The violation
        stays, soft (APPLIED); the card moves to the hand, recorded as that outcome, and the decision goes on
        from there. False (nothing done) otherwise: the decision is refused as before."""
        ev = self.evidence
        if ev is None or len(problems) != 1 or problems[0].code != "CARD_NOT_OWNED" or problems[0].card != card_id \
                or not ev.HasField("cards_moved"):
            return False
        m = ev.cards_moved
        if m.reason != pb.MOVE_REASON_TAKEN or list(m.cards) != [card_id] or not m.HasField("to_seat") \
                or m.to_seat != seat or m.to_zone != pb.ZONE_HAND:
            return False
        owner = self.owner_zone(card_id)
        if owner is not None:
            zone = {"hand": pb.ZONE_HAND, "equip": pb.ZONE_EQUIPMENT}.get(owner[1])
            if owner[0] == seat or zone is None or not m.HasField("from_seat") or m.from_seat != owner[0] \
                    or m.from_zone != zone:
                return False
            where = f"seat {owner[0]}'s {owner[1]}"
        elif card_id in self.draw_pile:
            if m.HasField("from_seat") or m.from_zone != pb.ZONE_DRAW_PILE:
                return False
            where = "the draw pile"
        else:
            return False
        v = problems[0]
        self.violations.append(Violation(v.code, f"{v.message}; carried out: taken from {where}, as the log's move "
                                         "records", v.seat, v.card))
        if owner is not None:
            self._move_out(owner[0], [card_id], m.from_zone, pb.MOVE_REASON_TAKEN, "MOVE_MISMATCH", to_seat=seat)
        else:
            taken = pb.Event()
            t = taken.cards_moved
            t.cards.append(card_id)
            t.from_zone = pb.ZONE_DRAW_PILE
            t.to_seat = seat
            t.to_zone = pb.ZONE_HAND
            t.reason = pb.MOVE_REASON_TAKEN
            self.emit(taken, "MOVE_MISMATCH")
            self.draw_pile.remove(card_id)
            self.players[seat].hand.append(card_id)
            self.journal.append(f"('take', {seat}, {card_id})")
        return True

    def verify_cost_cards(self, seat: int, card_ids: list[int], zones: tuple[str, ...], what: str
                          ) -> list[Violation]:
        """The cards ``seat`` pays a cost with (``what``: the skill or equipment; docs/codes.md#one-code): a card it
        does not hold anywhere, or one named twice, is CARD_NOT_OWNED (hard: nothing is paid); a card it holds in
        another area than the cost takes from (an equipped card where a hand card is due) is SKILL_COST, and the
        cost is paid with it all the same (as 制衡 and 结姻 are: check_cost)."""
        held = self.verify_own_cards(seat, card_ids, ("hand", "equip"))
        if held or "equip" in zones:
            return held
        hand = self.players[seat].hand
        return [Violation("SKILL_COST", f"{what} is paid with hand cards; {self.label(cid)} is an equipped card of "
                          f"seat {seat} (paid with it all the same)", seat, cid) for cid in card_ids if cid not in hand]

    def choose(self, seat: int, options: list[int], count: int, reason: str, optional: bool = False
               ) -> Settle[list[int] | None]:
        """Ask ``seat`` to choose ``count`` of ``options``; None if an optional choice is declined."""
        while True:
            answer = yield choice_request(seat, tuple(options), count, reason, optional)
            if answer is None or answer is UNANSWERED:
                return None
            assert isinstance(answer, pb.Event)
            chosen = list(answer.choose_cards.cards)
            bad = [c for c in chosen if c not in options]
            if bad or len(chosen) != count or len(set(chosen)) != len(chosen):
                what = (f"{self.label(bad[0])} is not among the cards that can be chosen" if bad
                        else f"{len(chosen)} card(s) chosen where {count} are required")
                self.report([Violation("INVALID_CHOICE", f"seat {seat} for {reason}: {what}", seat,
                                       bad[0] if bad else None, hard=True)])
                continue
            return chosen

    def suit_of(self, card_id: int) -> Suit:
        return self.cards[card_id].suit

    def used_card_label(self, card: UsedCard) -> str:
        if card.real is not None:
            return card.real.label()
        return f"{card.name} made by {card.skill} from {[self.label(c) for c in card.ids]}"
