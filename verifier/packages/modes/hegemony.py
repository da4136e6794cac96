"""Hegemony mode (国战, docs/rules.md#hegemony) as a package: two face-down generals per character,
reveals, kingdoms and careerists, companion and half-fish rewards, the death reveal, rewards and
penalties by kingdom, victory by kingdom, the seeded first seat. verifier/setup.py starts a game here
for MODE_HEGEMONY headers; the deck is verifier/packages/hegemony, the generals
verifier/packages/generals_hegemony.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, load_package
from verifier.engine.effects import Effect, Package, Ruleset
from verifier.engine.game import Game, GameEnded, Notice, Player, Settle, Violation
from verifier.engine.mode import Mode
from verifier.engine.requests import (
    Answer,
    CardRequest,
    NullifyRequest,
    OfferRequest,
    PeachRequest,
    PlayRequest,
    Request,
    RevealRequest,
    name_matches,
    option_request,
    pick_request,
    reveal_request,
)
from verifier.generals import HegemonyGeneralDef, companions, hegemony_generals
from verifier.rng import MASK64, shuffled
from verifier.setup import HeaderError, check_ruleset, deal_cards

RULESET = "hegemony/1"
MIN_PLAYERS, MAX_PLAYERS = 4, 10
CANDIDATES, MIN_CANDIDATES, MAX_CANDIDATES = 4, 4, 7
CAREERIST = "careerist"
MAIN, DEPUTY = 0, 1
SLOT_FIELDS = {MAIN: pb.GENERAL_SLOT_MAIN, DEPUTY: pb.GENERAL_SLOT_DEPUTY}
SLOTS_OF = {pb.GENERAL_SLOT_MAIN: (MAIN,), pb.GENERAL_SLOT_DEPUTY: (DEPUTY,), pb.GENERAL_SLOT_BOTH: (MAIN, DEPUTY)}
SLOT_NAMES = ("main", "deputy")


def packages(header: pb.GameHeader) -> list[Package]:
    """The rules of a hegemony game: the standard and 军争 cards its deck shares, its own cards, and the
    hegemony generals."""
    from verifier.packages import generals_hegemony, hegemony, maneuvering, standard

    return [standard.PACKAGE, maneuvering.PACKAGE, hegemony.PACKAGE, generals_hegemony.PACKAGE]


def implemented(ruleset: Ruleset) -> list[str]:
    """The hegemony generals whose every skill the ruleset has, in table order."""
    return [g.name for g in hegemony_generals().values() if all(s in ruleset.effects for s, _ in g.skills)]


def header_notices(header: pb.GameHeader) -> list[Notice]:
    return []


def check_header(header: pb.GameHeader) -> None:
    """docs/rules.md#hegemony-setup."""
    problems = check_ruleset(header, RULESET)
    n = len(header.seats)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        problems.append(Violation("BAD_HEADER", f"hegemony mode needs 4 to 10 seats, not {n}"))
    opts = header.options
    if opts.generals != pb.GENERALS_MODE_HEGEMONY:
        problems.append(Violation("BAD_HEADER", "hegemony mode needs options.generals GENERALS_MODE_HEGEMONY"))
    if opts.packages:
        problems.append(Violation("UNSUPPORTED_OPTION", "the hegemony deck is fixed: options.packages must be "
                                  f"empty, not {list(opts.packages)}"))
    if opts.role_variant != pb.ROLE_VARIANT_UNSPECIFIED or opts.HasField("role_table"):
        problems.append(Violation("BAD_HEADER", "hegemony mode has no roles: no role_variant or role_table"))
    if opts.rebirth:
        problems.append(Violation("UNSUPPORTED_OPTION", "options.rebirth is a variant of identity mode, not of "
                                  "hegemony (docs/rules.md#rebirth)"))
    from verifier.packages.modes import house_rules  # (it imports identity mode: imported when a header is checked)

    for option in house_rules.enabled_options(opts):
        problems.append(Violation("UNSUPPORTED_OPTION", f"options.{option} is one of seed 003's house rules for "
                                  "identity mode, not hegemony (docs/rules.md#tournament-house-rules)"))
    if opts.candidates and not MIN_CANDIDATES <= opts.candidates <= MAX_CANDIDATES:
        problems.append(Violation("BAD_HEADER", f"options.candidates is 4 to 7 (or 0 for 4), not {opts.candidates}"))
    known = hegemony_generals()
    named = [(s.general, s.deputy_general) for s in header.seats]
    if any(a or b for a, b in named) and not all(a and b for a, b in named):
        problems.append(Violation("BAD_HEADER", "either every seat names its main and deputy generals or none "
                                  "does (then they are picked)"))
    for i, seat in enumerate(header.seats):
        if seat.role:
            problems.append(Violation("BAD_HEADER", f"seat {i} states a role; hegemony mode has none", i))
        if seat.gender:
            problems.append(Violation("BAD_HEADER", f"seat {i} sets a gender; it comes from the generals", i))
        for name in (seat.general, seat.deputy_general):
            if name and name not in known:
                problems.append(Violation("BAD_HEADER", f"seat {i} names {name!r}, which is not a hegemony "
                                          "general", i))
        if seat.general in known and seat.deputy_general in known and \
                known[seat.general].kingdom != known[seat.deputy_general].kingdom:
            problems.append(Violation("BAD_HEADER", f"seat {i}'s generals {seat.general} and "
                                      f"{seat.deputy_general} are of two kingdoms", i))
    given = [g for pair in named for g in pair if g]
    if len(set(given)) != len(given):
        problems.append(Violation("BAD_HEADER", "a general is named twice"))
    if problems:
        raise HeaderError(problems)


def candidates_each(header: pb.GameHeader, pool: int) -> int:
    """docs/rules.md#hegemony-generals: the header's count (4 by default), at most as many as the pool has for
    every seat."""
    return min(header.options.candidates or CANDIDATES, pool // len(header.seats))


def deal_candidates(header: pb.GameHeader, pool: list[str]) -> dict[int, tuple[str, ...]]:
    """docs/rng.md#hegemony-candidates: the pool shuffled by the "hegemony/generals" stream, dealt in turn to seats
    0, 1, ..., k each; a seat whose k hold no two generals of one kingdom is dealt the next ones until they do.
    With options.rotating_deal each seat's first two come from the rotating deal instead."""
    n, k = len(header.seats), candidates_each(header, len(pool))
    kingdom = {name: g.kingdom for name, g in hegemony_generals().items()}
    first = rotating_pairs(header, pool) if header.options.rotating_deal else {}
    taken = {g for pair in first.values() for g in pair}
    order = iter(shuffled(header.seed & MASK64, "hegemony/generals", [g for g in pool if g not in taken]))
    dealt: dict[int, list[str]] = {s: list(first.get(s, ())) for s in range(n)}
    for s in range(n):
        dealt[s].extend(g for _, g in zip(range(k - len(dealt[s])), order, strict=False))
    for s in range(n):
        while len({kingdom[g] for g in dealt[s]}) == len(dealt[s]):
            extra = next(order, None)
            if extra is None:
                break
            dealt[s].append(extra)
    return {s: tuple(dealt[s]) for s in range(n)}


ROTATING_RUN = 5  # consecutive pairs of one kingdom in the rotating deal (so a table can hold a careerist)


def rotating_pairs(header: pb.GameHeader, pool: list[str]) -> dict[int, tuple[str, str]]:
    """docs/rng.md#hegemony-rotating-deal: seat s of the game with seed g gets entry (g * seats + s) of a cycle of
    same-kingdom pairs through the whole pool, in runs of ROTATING_RUN pairs of one kingdom, in which every general
    is in the same number of pairs."""
    kingdoms: dict[str, list[str]] = {}
    for name in pool:
        kingdoms.setdefault(hegemony_generals()[name].kingdom, []).append(name)
    epoch = (header.seed & MASK64) >> 32
    cycles = [shuffled(epoch, f"hegemony/cycle/{k}", names) for k, names in kingdoms.items() if len(names) >= 2]
    if not cycles:
        return {}
    nk = len(cycles)
    # Each kingdom's pairs repeat every m (m odd) or m/2 pairs: a period of 2 * max(m) runs of each kingdom is whole.
    period = nk * ROTATING_RUN * 2 * max(len(c) for c in cycles)
    n = len(header.seats)
    out = {}
    for s in range(n):
        run, r = divmod(((header.seed & 0xFFFFFFFF) * n + s) % period, ROTATING_RUN)
        c = cycles[run % nk]
        j = (run // nk) * ROTATING_RUN + r
        out[s] = (c[(2 * j) % len(c)], c[(2 * j + 1) % len(c)])
    return out


def deck() -> list[CardDef]:
    return list(load_package("hegemony"))


def new_game(header: pb.GameHeader, ruleset: Ruleset) -> Game:
    """A hegemony game in its starting position. Raises HeaderError for an unusable header."""
    check_header(header)
    pool = implemented(ruleset)
    named = [g for s in header.seats for g in (s.general, s.deputy_general) if g]
    missing = [g for g in named if g not in pool]
    if missing:
        raise HeaderError([Violation("UNSUPPORTED_OPTION", f"the general {missing[0]!r} is not implemented yet "
                                     f"(implemented: {len(pool)} of the {len(hegemony_generals())} generals)")])
    if not named and candidates_each(header, len(pool)) < 3:
        raise HeaderError([Violation("UNSUPPORTED_OPTION", f"{len(pool)} implemented generals are too few to deal "
                                     f"candidates to {len(header.seats)} seats")])
    cards = deck()
    hands, pile = deal_cards(header, cards)
    players = []
    for seat in range(len(header.seats)):
        p = Player(seat, 0, 0, 0)
        p.hand = list(hands[seat])
        players.append(p)
    mode = HegemonyMode()
    game = Game(mode=mode, ruleset=ruleset, cards={c.id: c for c in cards}, players=players,
                draw_pile_top_first=pile, seed=header.seed & MASK64, max_reshuffles=header.options.max_reshuffles,
                prelude=None if named else mode.picks(header, pool))
    game.has_skills = True
    if named:
        for seat, s in enumerate(header.seats):
            mode.assign(game, seat, s.general, s.deputy_general)
    return game


@dataclass(slots=True)
class Generals:
    """One character's two generals and what is known of them."""

    names: tuple[str, str]
    shown: list[bool] = field(default_factory=lambda: [False, False])
    both_up_before: bool = False  # both were face up once (the rewards are given at most once)
    general_kingdom: str = ""  # the kingdom of its generals
    skills_lost: list[bool] = field(default_factory=lambda: [False, False])  # a general's skills taken (断肠)


class HegemonyMode(Mode):
    """The hegemony rules as the core asks for them; holds each character's generals."""

    name = "hegemony"
    ruleset = RULESET
    intercepts = True
    phase_hook = True
    decisions: ClassVar[frozenset[str]] = frozenset({"reveal_general"})

    def __init__(self) -> None:
        self.generals: dict[int, Generals] = {}

    # ------------------------------------------------------------------ set-up

    def picks(self, header: pb.GameHeader, pool: list[str]):  # type: ignore[no-untyped-def]
        dealt = deal_candidates(header, pool)

        def prelude(game: Game) -> Settle[None]:
            game.selection = dict(dealt)
            for seat in range(game.n):
                yield from self.pick(game, seat, dealt[seat])
            game.selection = None

        return prelude

    def pick(self, game: Game, seat: int, candidates: tuple[str, ...]) -> Settle[None]:
        known = hegemony_generals()
        while True:
            answer = yield pick_request(seat, candidates)
            assert isinstance(answer, pb.Event)
            main, deputy = answer.pick_general.general, answer.pick_general.deputy
            not_offered = [g for g in (main, deputy) if g not in candidates]
            if not_offered:
                game.report([Violation("GENERAL_NOT_OFFERED", f"seat {seat} picked {not_offered[0]!r}; the "
                                       f"candidates are {', '.join(candidates)}", seat, hard=True)])
                continue
            if main == deputy or known[main].kingdom != known[deputy].kingdom:
                why = "the same general twice" if main == deputy else \
                    f"{main} ({known[main].kingdom}) and {deputy} ({known[deputy].kingdom}), of two kingdoms"
                game.report([Violation("PICK_TWO_KINGDOMS", f"seat {seat} picked {why}; a main and a deputy "
                                       "general of one kingdom are needed", seat, hard=True)])
                continue
            self.assign(game, seat, main, deputy)
            return

    def assign(self, game: Game, seat: int, main: str, deputy: str) -> None:
        """docs/rules.md#hegemony-max-hp: both face down; max HP from the half fish."""
        known = hegemony_generals()
        self.generals[seat] = Generals((main, deputy), general_kingdom=known[main].kingdom)
        p = game.players[seat]
        p.max_hp = p.hp = (known[main].half_fish + known[deputy].half_fish) // 2
        game.journal.append(f"('generals', {seat}, {main!r}, {deputy!r}, {p.max_hp})")
        self.refresh(game, seat)

    def defs(self, seat: int) -> tuple[HegemonyGeneralDef, HegemonyGeneralDef]:
        known = hegemony_generals()
        a, b = self.generals[seat].names
        return known[a], known[b]

    def refresh(self, game: Game, seat: int) -> None:
        """The character's skills (the face-up generals'), latent skills (the face-down generals' that are not
        locked, or that give a card when asked: usable by revealing them), gender and name."""
        p = game.players[seat]
        g = self.generals[seat]
        effects = game.ruleset.effects
        skills: list[Effect] = []
        latent: list[Effect] = []
        for slot, general in enumerate(self.defs(seat)):
            if g.skills_lost[slot]:
                continue
            for name, kind in general.skills:
                eff = effects.get(name)
                if eff is None:
                    continue
                if g.shown[slot]:
                    skills.append(eff)
                elif kind != "locked" or eff.provides:
                    latent.append(eff)  # (a locked one that gives a card when asked, 八阵, is offered there too)
        p.skills, p.latent_skills = skills, latent
        main, deputy = self.defs(seat)
        up = [general for slot, general in enumerate((main, deputy)) if g.shown[slot]]
        p.gender = up[0].gender if up else pb.GENDER_UNSPECIFIED
        p.general = up[0].name if up else ""
        watched = [*skills, *latent]
        p.watch_hand = any("lost_hand" in e.timings for e in watched)
        p.watch_equip = any("lost_equip" in e.timings for e in watched)
        game.forget_effects(seat)

    # ------------------------------------------------------------------ queries

    def hidden_slot_of(self, game: Game, seat: int, skill: str) -> int | None:
        """The face-down general of ``seat`` that has ``skill`` (None if none has it)."""
        g = self.generals.get(seat)
        if g is None:
            return None
        for slot, general in enumerate(self.defs(seat)):
            if not g.shown[slot] and any(name == skill for name, _ in general.skills):
                return slot
        return None

    def is_shown(self, seat: int, slot: int) -> bool:
        g = self.generals.get(seat)
        return g is not None and g.shown[slot]

    def hidden(self, seat: int) -> list[int]:
        g = self.generals.get(seat)
        return [] if g is None else [s for s in (MAIN, DEPUTY) if not g.shown[s]]

    def seat_generals(self, game: Game, seat: int) -> tuple[tuple[str, bool], ...]:
        g = self.generals.get(seat)
        if g is None:
            return ()
        return tuple((name, g.shown[slot]) for slot, name in enumerate(g.names))

    def allegiance(self, game: Game, seat: int) -> str:
        """The kingdom ("" before one is fixed); a careerist is a kingdom of its own."""
        k = game.players[seat].kingdom
        return f"{CAREERIST}-{seat}" if k == CAREERIST else k

    def same_side(self, game: Game, a: int, b: int) -> bool:
        """docs/rules.md#hegemony-kingdom: of one kingdom (both have one, no careerist, the same)."""
        if a == b:
            return True
        ka, kb = game.players[a].kingdom, game.players[b].kingdom
        return bool(ka) and ka == kb and ka != CAREERIST

    def kingdom_on_reveal(self, game: Game, seat: int) -> str:
        """docs/rules.md#hegemony-careerist: the kingdom the seat's first reveal fixes."""
        k = self.generals[seat].general_kingdom
        already = sum(1 for p in game.players if p.kingdom == k)
        return CAREERIST if 2 * (already + 1) > game.n else k

    # ------------------------------------------------------------------ revealing

    def reveal(self, game: Game, seat: int, slots: tuple[int, ...], timing: int) -> Settle[None]:
        """docs/rules.md#hegemony-reveal: turn the generals in ``slots`` face up, fix the kingdom on the first,
        then (not at death) the rewards for both face up and the victory check."""
        g = self.generals[seat]
        newly = [s for s in slots if not g.shown[s]]
        if not newly:
            return
        first = not any(g.shown)
        p = game.players[seat]
        for s in newly:
            g.shown[s] = True
            game.journal.append(f"('reveal', {seat}, {s})")
            ev = pb.Event()
            r = ev.general_revealed
            r.seat = seat
            r.slot = SLOT_FIELDS[s]
            r.general = g.names[s]
            r.timing = timing  # type: ignore[assignment]
            game.emit(ev, "REVEAL_MISMATCH")
        self.refresh(game, seat)
        if first:
            kingdom = self.kingdom_on_reveal(game, seat)
            p.kingdom = kingdom
            game.journal.append(f"('kingdom', {seat}, {kingdom!r})")
            ev = pb.Event()
            ev.kingdom_fixed.seat = seat
            ev.kingdom_fixed.kingdom = kingdom
            if kingdom == CAREERIST:
                ev.kingdom_fixed.general_kingdom = g.general_kingdom
            game.emit(ev, "KINGDOM_MISMATCH")
        if timing == pb.REVEAL_TIMING_DEATH:
            return
        if all(g.shown) and not g.both_up_before:
            g.both_up_before = True
            yield from self.both_up(game, seat)
        self.check_victory(game, None)

    def hide(self, game: Game, seat: int, slot: int) -> None:
        """Turn a face-up general face down again (倾城): its skills become latent; the kingdom stays fixed and the
        rewards for both face up are not given again."""
        g = self.generals[seat]
        if g.shown[slot]:
            g.shown[slot] = False
            game.journal.append(f"('hide', {seat}, {slot})")
            self.refresh(game, seat)

    def lose_skills(self, game: Game, seat: int, slot: int) -> None:
        """The seat loses every skill of one of its generals for the rest of the game (断肠)."""
        g = self.generals[seat]
        if not g.skills_lost[slot]:
            g.skills_lost[slot] = True
            game.journal.append(f"('skills_lost', {seat}, {slot})")
            self.refresh(game, seat)

    def reveal_blocked(self, game: Game, seat: int) -> str:
        """Why ``seat`` may not reveal a general now ("" when it may): a living character's effect that forbids it
        (祸水, during its owner's turn)."""
        for holder in game.alive_seats():
            for eff in game.effects_of(holder):
                if eff.forbids_reveal(game, holder, seat):
                    return f"seat {holder}'s {eff.name} forbids it"
        return ""

    def both_up(self, game: Game, seat: int) -> Settle[None]:
        """docs/rules.md#hegemony-companions: 珠联璧合 (draw 2 or recover 1), then the half fish (draw 1)."""
        p = game.players[seat]
        main, deputy = self.defs(seat)
        if companions(main.name, deputy.name):
            options = ("draw", "recover") if p.wounded else ("draw",)
            choice = yield from self.choose(game, seat, options, "companions")
            if choice == "draw":
                yield from game.draw(seat, 2, pb.DRAW_REASON_COMPANION)
            elif choice == "recover":
                game.recover(seat, 1)
        if (main.half_fish + deputy.half_fish) % 2 and p.alive and \
                (yield from self.choose(game, seat, ("draw",), "half_fish")) == "draw":
            yield from game.draw(seat, 1, pb.DRAW_REASON_HALF_FISH)

    @staticmethod
    def choose(game: Game, seat: int, options: tuple[str, ...], reason: str) -> Settle[str | None]:
        while True:
            answer = yield option_request(seat, options, reason)
            if not isinstance(answer, pb.Event):
                return None
            option = answer.choose_option.option
            if option in options:
                return option
            game.report([Violation("INVALID_CHOICE", f"seat {seat} for {reason}: {option!r} is not one of "
                                   f"{', '.join(options)}", seat, hard=True)])

    def phase_begins(self, game: Game, seat: int, phase: int) -> Settle[None]:
        """docs/rules.md#hegemony-reveal: the start of the start phase, where face-down generals may be revealed (one
        decision: the main, the deputy or both)."""
        while phase == pb.PHASE_START and self.hidden(seat) and game.players[seat].alive:
            answer = yield reveal_request(seat)
            if not isinstance(answer, pb.Event):
                return
            r = answer.reveal_general
            slots = tuple(s for s in SLOTS_OF.get(r.which, ()) if s in self.hidden(seat))
            if not slots or r.timing != pb.REVEAL_TIMING_START_PHASE:
                game.report([Violation("REVEAL_TIMING", f"seat {seat} has no face-down {self.slot_text(r.which)} "
                                       "general to reveal", seat, hard=True)])
                continue
            yield from self.reveal(game, seat, slots, pb.REVEAL_TIMING_START_PHASE)
            return  # one reveal decision per start phase (main, deputy or both)

    @staticmethod
    def slot_text(which: int) -> str:
        names: dict[int, str] = {pb.GENERAL_SLOT_MAIN: "main", pb.GENERAL_SLOT_DEPUTY: "deputy",
                                 pb.GENERAL_SLOT_BOTH: "main and deputy"}
        return names.get(which, "(unnamed)")

    def intercept(self, game: Game, request: Request, answer: Answer) -> Settle[bool]:
        """A reveal for a skill (taken here), or a face-down general's skill used without one (HIDDEN_SKILL:
        the general is turned up first)."""
        if not isinstance(answer, pb.Event):
            return False
        kind = answer.WhichOneof("kind")
        if kind == "reveal_general":
            r = answer.reveal_general
            if isinstance(request, RevealRequest) and r.timing == pb.REVEAL_TIMING_START_PHASE \
                    and request.seat == r.seat:
                return False  # the start phase's own request takes it (phase_begins)
            why = self.reveal_problem(game, request, r)
            if why:
                game.report([Violation("REVEAL_TIMING", f"seat {r.seat} cannot reveal their "
                                       f"{self.slot_text(r.which)} general now: {why}", r.seat, hard=True)])
                return True
            yield from self.reveal(game, r.seat, SLOTS_OF[r.which], pb.REVEAL_TIMING_SKILL)
            return True
        used = skill_used(answer, kind)
        if used is not None:
            seat, skill = used
            slot = self.hidden_slot_of(game, seat, skill)
            if slot is not None and any(e.name == skill for e in game.players[seat].latent_skills):
                game.report([Violation("HIDDEN_SKILL", f"seat {seat} uses {skill} of their face-down "
                                       f"{SLOT_NAMES[slot]} general {self.generals[seat].names[slot]} without "
                                       "revealing it first", seat)])
                yield from self.reveal(game, seat, (slot,), pb.REVEAL_TIMING_SKILL)
        return False

    def reveal_problem(self, game: Game, request: Request, r: pb.RevealGeneral) -> str:
        """Why this reveal cannot be made now ("" when it can)."""
        seat = r.seat
        if seat not in self.generals:
            return "the generals are not picked yet"
        if r.timing == pb.REVEAL_TIMING_START_PHASE:
            return "it is not the start of their start phase"
        if r.timing != pb.REVEAL_TIMING_SKILL:
            return "a reveal is made at the start of one's start phase or to invoke a skill"
        slots = SLOTS_OF.get(r.which, ())
        if len(slots) != 1:
            return "a reveal for a skill turns up the one general that has it (main or deputy)"
        slot = slots[0]
        if self.is_shown(seat, slot):
            return "that general is already face up"
        blocked = self.reveal_blocked(game, seat)
        if blocked:
            return blocked
        general = self.defs(seat)[slot]
        if all(name != r.skill for name, _ in general.skills):
            return f"{general.name} has no skill {r.skill!r}"
        eff = game.ruleset.effects.get(r.skill)
        if eff is None or not usable_now(seat, eff, request):
            return f"nothing lets {r.skill} be used now (the game is waiting for {request.describe()})"
        return ""

    # ------------------------------------------------------------------ the turn order

    def first_seat(self, game: Game) -> int:
        """docs/rules.md#hegemony-first-seat."""
        return shuffled(game.seed, "hegemony/first", list(range(game.n)))[0]

    # ------------------------------------------------------------------ death

    def fill_death(self, game: Game, seat: int, death: pb.Death) -> None:
        death.kingdom = game.players[seat].kingdom or self.kingdom_on_reveal(game, seat)

    def death_revealed(self, game: Game, seat: int) -> Settle[None]:
        """docs/rules.md#hegemony-death: the face-down generals are shown (no reward)."""
        hidden = tuple(self.hidden(seat))
        if hidden:
            yield from self.reveal(game, seat, hidden, pb.REVEAL_TIMING_DEATH)

    def reward_or_penalty(self, game: Game, victim: int, killer: int | None) -> Settle[None]:
        """docs/rules.md#hegemony-reward, docs/rules.md#hegemony-penalty."""
        if killer is None or killer == victim or not game.players[killer].alive:
            return
        k, v = game.players[killer], game.players[victim]
        if not k.kingdom:
            return
        if self.same_side(game, killer, victim):
            yield from game.move_out(killer, list(k.hand), pb.ZONE_HAND, pb.MOVE_REASON_KILL_PENALTY, "KILL_PENALTY")
            yield from game.move_out(killer, k.equipped(), pb.ZONE_EQUIPMENT, pb.MOVE_REASON_KILL_PENALTY,
                                     "KILL_PENALTY")
            return
        count = 1 if v.kingdom == CAREERIST else 1 + sum(1 for p in game.players if p.alive and p.kingdom == v.kingdom)
        yield from game.draw(killer, count, pb.DRAW_REASON_KILL_REWARD, "KILL_REWARD")

    def check_victory(self, game: Game, just_died: int | None) -> None:
        """docs/rules.md#hegemony-victory."""
        players = game.players
        alive = [p for p in players if p.alive]
        if len(alive) == 1:
            last = alive[0]
            k = last.kingdom
            winners = [p.seat for p in players if p is last or (k and k != CAREERIST and p.kingdom == k)]
            raise GameEnded(pb.SIDE_KINGDOM, winners, f"seat {last.seat} is the last one alive", kingdom=k)
        if any(not p.kingdom for p in alive):
            return
        kingdoms = {p.kingdom for p in alive}
        if len(kingdoms) == 1 and CAREERIST not in kingdoms:
            k = kingdoms.pop()
            raise GameEnded(pb.SIDE_KINGDOM, [p.seat for p in players if p.kingdom == k],
                            f"every living character is of {k}", kingdom=k)


def skill_used(answer: pb.Event, kind: str | None) -> tuple[int, str] | None:
    """The seat and skill a decision uses (InvokeSkill, or a virtual card made by a skill), if any."""
    if kind == "invoke_skill":
        return answer.invoke_skill.seat, answer.invoke_skill.skill
    if kind in ("use_card", "respond"):
        msg = answer.use_card if kind == "use_card" else answer.respond
        if msg.card.WhichOneof("kind") == "virtual":
            v = msg.card.virtual
            return msg.seat, v.base_skill or v.skill
    return None


def usable_now(seat: int, eff: Effect, request: Request) -> bool:
    """Could ``seat`` use the skill ``eff`` to answer ``request`` (docs/rules.md#hegemony-reveal)?"""
    if isinstance(request, OfferRequest):
        return request.seat == seat and request.skill == eff.name
    if isinstance(request, PlayRequest):
        # An active or conversion skill, or one that only changes what the character may do (咆哮, 马术, 奇才).
        return request.seat == seat and bool(eff.active or eff.converts_to or not eff.timings)
    names = eff.converts_to | eff.provides
    if isinstance(request, CardRequest):
        return request.seat == seat and any(name_matches(n, request.names) for n in names)
    if isinstance(request, NullifyRequest):
        return "nullification" in names
    if isinstance(request, PeachRequest):
        return request.seat == seat and "peach" in names
    return False
