"""Consistent cheats: self-play games in which one bot (or each of a few) makes exactly one illegal
decision that the rules still let the engine carry out, and the game goes on through the engine as usual.

The mutator (clients/cheats/mutator.py) splices a cheat into a finished log, so everything after it is
the game *without* the cheat: a verifier that applies the cheat (docs/log-format.md, `applied`)
then finds the rest of the log at odds with its own game. A real cheating client records the game
its cheat made. Here the cheat is played: the engine applies it and derives its consequences (the
second 杀's damage, the kept card in hand), the bots keep playing, and the log is consistent apart
from the cheat. Verifying it must report the cheat's code at the cheat's event and nothing else.

A cheat may also be an outcome the cheating client made up (a stacked draw, an extra card, another
judgment card): the engine asks for chance (``DrawChance``, ``JudgeChance``, Game.adopting) and the bot
answers with the cards it wants; the engine takes them as the verifier adopts a recorded outcome, and
the game goes on from them. Verifying must report the outcome's mismatch at its event, adopted, and
nothing else.

A kind (``ConsistentKind``) proposes its cheat at a moment of the game (a request and the engine's
state), or nothing if the moment offers no place for it. A proposal is kept only when the engine's
own check of that use gives exactly the kind's code and nothing that would reject it, so the cheat
is the only illegal thing about the decision. The moment is picked from the seed: at each place
the game offers, the cheat stream ``cheat/<kind>`` decides whether to take it; before the first
place taken, the game is the honest self-play game of that seed, decision for decision.

Several cheats in one game (``cheats`` = K): the honest game's turns are cut into K spans (``Spans``)
and each span gets at most one cheat, by a seat that has not cheated yet, taken as above from the same
stream, so the cheats lie far apart and are different bots' decisions. Each must be reported at its
own event with its code, and nothing else: one violation may not hide or shift the next.

    >>> game = play_cheating_game(3, 8, CONSISTENT_KINDS[0])   # second_slash
    >>> game.index, game.note          # verify(game.log) reports SLASH_LIMIT on event 92, and nothing else
    (92, 'seat 1 uses 杀 ♠9 (#19) on seat 2: seat 1 already used a 杀 in this play phase; ...')
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from clients.cheats.mutator import KINDS, choose_cards, use_card
from clients.selfplay.base import BotError, RandomBot, make_bot, play, play_game
from clients.selfplay.identity import make_header
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import Game, Violation
from verifier.engine.requests import (
    UNANSWERED,
    Answer,
    ChanceRequest,
    DiscardRequest,
    DrawChance,
    JudgeChance,
    PlayRequest,
    Request,
)
from verifier.rng import Stream

# The chance (in percent) that a bot takes a place the game offers for its cheat.
TAKE_PERCENT = 30


@dataclass(frozen=True, slots=True)
class Cheat:
    """One proposed cheat: what the bot answers (an event, or UNANSWERED for a skipped discard) and a note."""

    answer: Answer
    note: str


Proposer = Callable[[Game, Request], Cheat | None]


@dataclass(frozen=True, slots=True)
class ConsistentKind:
    name: str
    code: str
    summary: str
    propose: Proposer = field(repr=False)
    packages: tuple[str, ...] = ()  # the card packages a game needs to offer a place for it


# ---------------------------------------------------------------------------- cards used illegally

def only_violation(game: Game, seat: int, card_id: int, targets: tuple[int, ...], code: str) -> Violation | None:
    """The violation the engine's check gives ``seat`` using the real card on ``targets`` (empty: the
    targets the rules fix), when that is exactly one violation with ``code`` that does not reject
    the use; None otherwise."""
    card = game.cards[card_id]
    spec = game.ruleset.cards.get(card.name)
    if spec is None or not spec.play_phase:
        return None
    targets = targets or spec.default_targets(game, seat)
    if any(not game.players[t].alive or game.prohibited(seat, t, card.name) is not None for t in targets):
        return None
    used = UsedCard(card.name, (card_id,), card.suit, card.color, card.number, real=card)
    found = list(spec.verify_use(game, Use(seat, used, targets)))
    if len(found) == 1 and found[0].code == code and not found[0].hard:
        return found[0]
    return None


def illegal_use(names: frozenset[str], code: str) -> Proposer:
    """A proposer: in their play phase, the seat uses a real card named in ``names`` from their hand so
    that it breaks exactly the rule of ``code`` (first card in hand order, then no targets — the
    rules' own — or each other living seat in seat order)."""

    def propose(game: Game, req: Request) -> Cheat | None:
        if not isinstance(req, PlayRequest) or req.seat is None:
            return None
        seat = req.seat
        for cid in game.players[seat].hand:
            if game.cards[cid].name not in names:
                continue
            for targets in [(), *((t,) for t in game.alive_seats(seat)[1:])]:
                v = only_violation(game, seat, cid, targets, code)
                if v is not None:
                    return Cheat(use_card(seat, cid, targets), f"seat {seat} uses {game.label(cid)}"
                                 f"{f' on seat {targets[0]}' if targets else ''}: {v.message}")
        return None

    return propose


# ---------------------------------------------------------------------------- discard-phase cheats

def due(game: Game, req: Request) -> tuple[int, list[int]] | None:
    """In a discard phase with cards due: the seat and their hand."""
    if isinstance(req, DiscardRequest) and req.seat is not None and req.count > 0:
        return req.seat, list(game.players[req.seat].hand)
    return None


def short_discard(game: Game, req: Request) -> Cheat | None:
    if (d := due(game, req)) is None:
        return None
    seat, hand = d
    assert isinstance(req, DiscardRequest)
    return Cheat(choose_cards(seat, hand[:req.count - 1]), f"seat {seat} discards {req.count - 1} of the "
                 f"{req.count} card(s) due")


def long_discard(game: Game, req: Request) -> Cheat | None:
    if (d := due(game, req)) is None:
        return None
    seat, hand = d
    assert isinstance(req, DiscardRequest)
    if len(hand) <= req.count:
        return None
    return Cheat(choose_cards(seat, hand[:req.count + 1]), f"seat {seat} discards {req.count + 1} card(s) where "
                 f"{req.count} are due")


def skipped_discard(game: Game, req: Request) -> Cheat | None:
    if (d := due(game, req)) is None:
        return None
    assert isinstance(req, DiscardRequest)
    return Cheat(UNANSWERED, f"seat {d[0]} keeps every card instead of discarding {req.count}")


def unowed_discard(game: Game, req: Request) -> Cheat | None:
    if not isinstance(req, DiscardRequest) or req.seat is None or req.count or not game.players[req.seat].hand:
        return None
    seat = req.seat
    return Cheat(choose_cards(seat, game.players[seat].hand[:1]), f"seat {seat} discards a card when none is due")


# ---------------------------------------------------------------------------- chance cheats

def stacked_draw(game: Game, req: Request) -> Cheat | None:
    """In the draw phase, the last card drawn is the bottom card of the draw pile, not the next one."""
    pile = game.draw_pile
    if not isinstance(req, DrawChance) or req.reason != pb.DRAW_REASON_DRAW_PHASE or req.count + 1 > len(pile):
        return None
    cards = [*pile[:-req.count:-1], pile[0]]  # (the top is the end of the list)
    return Cheat(cards, f"seat {req.seat} draws {game.label(pile[0])}, the bottom card, instead of "
                 f"{game.label(pile[-req.count])}")


def extra_draw(game: Game, req: Request) -> Cheat | None:
    """In the draw phase, one card more than due is drawn from the top."""
    pile = game.draw_pile
    if not isinstance(req, DrawChance) or req.reason != pb.DRAW_REASON_DRAW_PHASE or req.count + 1 > len(pile):
        return None
    return Cheat(pile[:-req.count - 2:-1], f"seat {req.seat} draws {req.count + 1} card(s) where {req.count} "
                 "are due")


def wrong_judgment(game: Game, req: Request) -> Cheat | None:
    """A judgment card other than the top one: the deepest card of the draw pile of another suit than the
    top's (so the judgment may turn out otherwise)."""
    pile = game.draw_pile
    if not isinstance(req, JudgeChance) or len(pile) < 2:
        return None
    top = game.cards[pile[-1]]
    other = next((c for c in pile if game.cards[c].suit != top.suit), None)
    if other is None:
        return None
    return Cheat(other, f"seat {req.seat}'s judgment for {req.reason} is {game.label(other)} instead of "
                 f"{game.label(pile[-1])}")


# ---------------------------------------------------------------------------- the kinds

SLASHES = frozenset({"slash", "fire_slash", "thunder_slash"})
DELAYED = frozenset({"indulgence", "lightning", "supply_shortage"})


def _kind(name: str, propose: Proposer, code: str = "", summary: str = "", packages: tuple[str, ...] = ()
          ) -> ConsistentKind:
    """A kind; one the mutator also injects keeps its name, code and summary (so both reports line up)."""
    mutated = next((k for k in KINDS if k.name == name), None)
    if mutated is not None:
        assert not code or code == mutated.code, name
        code, summary = mutated.code, summary or mutated.summary
    return ConsistentKind(name, code, summary, propose, packages)


CONSISTENT_KINDS: list[ConsistentKind] = [
    _kind("second_slash", illegal_use(SLASHES, "SLASH_LIMIT")),
    _kind("slash_out_of_range", illegal_use(SLASHES, "OUT_OF_RANGE")),
    _kind("peach_at_full_hp", illegal_use(frozenset({"peach"}), "PEACH_FULL_HP")),
    _kind("snatch_too_far", illegal_use(frozenset({"snatch"}), "DISTANCE_LIMIT")),
    _kind("duplicate_delayed_trick", illegal_use(DELAYED, "DUPLICATE_DELAYED_TRICK")),
    _kind("short_discard", short_discard),
    _kind("skipped_discard", skipped_discard, "HAND_LIMIT", "no card discarded in the discard phase when some "
          "are due (the log goes on without the discard)"),
    _kind("long_discard", long_discard, "HAND_LIMIT", "more cards discarded in the discard phase than are due"),
    _kind("unowed_discard", unowed_discard, "HAND_LIMIT", "a card discarded in the discard phase when none is due"),
    _kind("second_analeptic", illegal_use(frozenset({"analeptic"}), "ANALEPTIC_LIMIT"), packages=("maneuvering",)),
    _kind("supply_shortage_too_far", illegal_use(frozenset({"supply_shortage"}), "DISTANCE_LIMIT"),
          packages=("maneuvering",)),
    # Outcomes the players' client made up, which the game then went on from (the verifier adopts them).
    _kind("stacked_draw", stacked_draw),
    _kind("extra_draw", extra_draw),
    _kind("wrong_judgment", wrong_judgment),
]


# ---------------------------------------------------------------------------- playing

@dataclass(frozen=True, slots=True)
class Spans:
    """A game's turns split into ``count`` spans, with at most one cheat in each, so that several cheats in
    one game lie far apart: with T the turns of the honest game of the seed, span j holds turns
    floor(j·T/count)+1 .. floor((j+1)·T/count), and the last span also whatever the game plays past T (the
    cheats change the game, which may so last longer, or end before its last span)."""

    count: int = 1
    turns: int = 1  # the honest game's turns

    def __post_init__(self) -> None:
        if self.count < 1 or self.turns < 1:
            raise ValueError(f"spans need a count and turns of at least 1, got {self.count} and {self.turns}")

    def of(self, turn: int) -> int:
        """The span of ``turn`` (turn 0, the picks before the first turn, is in the first)."""
        return min(self.count - 1, max(turn - 1, 0) * self.count // self.turns)


@dataclass(frozen=True, slots=True)
class Made:
    """A cheat the bot made: by which seat, in which turn and span."""

    cheat: Cheat
    seat: int
    turn: int
    span: int


class CheatingBot:
    """The honest self-play bot, except at the moments it cheats: in each span of the game's turns (by
    default one span, the whole game), the first place for its kind that the cheat stream says to take,
    offered to a seat that has not cheated yet (each cheat is a different bot's)."""

    def __init__(self, honest: RandomBot, kind: ConsistentKind, rng: Stream, percent: int = TAKE_PERCENT,
                 spans: Spans | None = None) -> None:
        self.honest = honest
        self.kind = kind
        self.rng = rng
        self.percent = percent
        self.spans = spans or Spans()
        self.made: list[Made] = []

    def decide(self, game: Game, req: Request) -> Answer:
        cheat = self.cheat(game, req)
        return cheat.answer if cheat is not None else self.honest.decide(game, req)

    def chance(self, game: Game, req: ChanceRequest) -> Answer:
        """The engine's chance (a draw, a judgment): the rules' own (None), except where the kind cheats."""
        cheat = self.cheat(game, req)
        return cheat.answer if cheat is not None else None

    def cheat(self, game: Game, req: Request) -> Cheat | None:
        """The cheat made now, if the kind has a place here and the cheat stream takes it."""
        span = self.spans.of(game.turn_number)
        if self.may_cheat(span, req.seat):
            # (Proposing reads the game and draws nothing from the honest bot's stream.)
            cheat = self.kind.propose(game, req)
            if cheat is not None and self.rng.below(100) < self.percent:
                assert req.seat is not None  # (every kind proposes only for a seat's own request)
                self.made.append(Made(cheat, req.seat, game.turn_number, span))
                return cheat
        return None

    def may_cheat(self, span: int, seat: int | None) -> bool:
        """May ``seat`` cheat now: no cheat in this span yet, and none by this seat? (Spans come in order.)"""
        if self.made and self.made[-1].span == span:
            return False
        return all(m.seat != seat for m in self.made)


@dataclass(frozen=True, slots=True)
class PlacedCheat:
    """A cheat in a game's log and where verification must report it."""

    index: int  # the annotation that must report the cheat
    derived: bool  # ... an annotation the verifier derives there (a skipped discard: no event)
    note: str
    seat: int
    turn: int


@dataclass(slots=True)
class CheatingGame:
    """A self-play game with (at most) ``wanted`` consistent cheats in it, by different seats."""

    seed: int
    players: int
    kind: ConsistentKind
    log: pb.GameLog
    cheats: list[PlacedCheat] = field(default_factory=list)  # in log order; fewer than wanted if the game
    wanted: int = 1                                           # offered fewer places

    # The first cheat's, for a game with one (index None: the game offered no place).
    @property
    def index(self) -> int | None:
        return self.cheats[0].index if self.cheats else None

    @property
    def derived(self) -> bool:
        return self.cheats[0].derived if self.cheats else False

    @property
    def note(self) -> str:
        return self.cheats[0].note if self.cheats else ""


def honest_turns(seed: int, players: int, packages: Sequence[str] = (), generals: bool = False) -> int:
    """How many turns the honest self-play game of ``seed`` lasts (what a game's spans are cut from)."""
    log = play_game(seed, players, packages=packages, generals=generals)
    return max((ev.turn_start.turn for ev in log.events if ev.HasField("turn_start")), default=1)


def play_cheating_game(seed: int, players: int, kind: ConsistentKind, packages: Sequence[str] = (),
                       generals: bool = False, percent: int = TAKE_PERCENT, cheats: int = 1,
                       turns: int | None = None) -> CheatingGame:
    """The self-play game of ``seed`` in which one bot cheats once with ``kind`` (if the game offers a
    place the cheat stream takes); with ``cheats`` = K > 1, up to K bots cheat once each, one in each of K
    spans of the game's turns (``turns``: the honest game's, played here if not given). The engine must
    flag the cheats, and only them, where they were made: anything else is a BotError."""
    header = make_header(seed, players, packages=packages, generals=generals)
    spans = Spans(cheats, turns or honest_turns(seed, players, packages, generals)) if cheats > 1 else Spans()
    bot = CheatingBot(make_bot(header), kind, Stream(seed, f"cheat/{kind.name}"), percent, spans)
    flags: list[tuple[int, list[Violation]]] = []
    log = play(header, bot, flagged=lambda at, violations: flags.append((at, violations)), chance=bot.chance)
    game = CheatingGame(seed, players, kind, log, wanted=cheats)
    made = bot.made
    if not made:
        if flags:
            raise BotError(f"seed {seed}: the engine flagged an honest decision: {flags}")
        return game
    codes = [[v.code for v in vs] for _, vs in flags]
    if codes != [[kind.code]] * len(made):
        raise BotError(f"seed {seed}, {players} players, {kind.name} ({'; '.join(m.cheat.note for m in made)}): "
                       f"the engine flagged {flags}, not {kind.code} on the cheat{'s' if len(made) > 1 else ''} "
                       "alone")
    for (at, _), m in zip(flags, made, strict=True):
        derived = m.cheat.answer is UNANSWERED
        if isinstance(m.cheat.answer, pb.Event) and log.events[at] != m.cheat.answer:
            raise BotError(f"seed {seed}: {kind.code} was flagged on event {at}, not on the cheat ({m.cheat.note})")
        game.cheats.append(PlacedCheat(at, derived, m.cheat.note, m.seat, m.turn))
    return game


# ---------------------------------------------------------------------------- judging

CAUGHT, OTHER_CODE, MISSED = "caught", "other_code", "missed"


@dataclass(slots=True)
class Judgment:
    verdict: str  # caught (the code on the cheat's annotation), other_code, or missed (nothing reported)
    collateral: list[str]  # "index[d]:CODE" of every other violation, and NOT_FOLLOWED if verification stopped


def judge_each(game: CheatingGame, replay: apb.AnnotatedReplay) -> list[Judgment]:
    """How verification did on each cheat of a game, in log order. A cheat is caught when its annotation
    reports its kind's code. Every other violation is collateral, charged to the latest cheat at or before
    it (before the first: to the first), as what that cheat's part of the game left behind; a cheat not
    caught is other_code when collateral is charged to it (flagged, but not right) and missed otherwise. With
    one cheat, all the collateral is its own."""
    cheats = game.cheats
    # A derived annotation stands before the log event with its index.
    keys = [(c.index, not c.derived) for c in cheats]

    def owner(index: int, derived: bool) -> int:
        return max(bisect_right(keys, (index, not derived)) - 1, 0)

    caught = [False] * len(cheats)
    collateral: list[list[str]] = [[] for _ in cheats]
    code = game.kind.code
    for a in replay.annotations:
        for v in a.violations:
            j = owner(a.index, a.derived)
            if not caught[j] and a.index == cheats[j].index and a.derived == cheats[j].derived and v.code == code:
                caught[j] = True
            else:
                collateral[j].append(f"{a.index}{'d' if a.derived else ''}:{v.code}")
    if cheats:
        collateral[0] += [f"{hv.code}" for hv in replay.header_violations]
        if not replay.followed:
            collateral[owner(replay.stopped_at, False)].append(f"NOT_FOLLOWED@{replay.stopped_at}")
    return [Judgment(CAUGHT if c else OTHER_CODE if more else MISSED, more)
            for c, more in zip(caught, collateral, strict=True)]


def judge(game: CheatingGame, replay: apb.AnnotatedReplay) -> Judgment:
    """How verification did on a game with cheats in it, as a whole: caught if every cheat was, else
    missed if one was, else other_code; the collateral of all of them."""
    each = judge_each(game, replay)
    if not each:
        raise ValueError(f"seed {game.seed}: no cheat in the game to judge")
    verdicts = {j.verdict for j in each}
    verdict = MISSED if MISSED in verdicts else OTHER_CODE if OTHER_CODE in verdicts else CAUGHT
    return Judgment(verdict, [c for j in each for c in j.collateral])
