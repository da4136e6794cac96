"""The mutation corpus: altered copies of a legal game log, each injecting one known cheat.

A cheat kind is one small declarative unit (``CheatKind``): a name, the violation code it
must be caught with, and a finder. The finder is shown every moment of a legal game — each
event of the log together with the engine's state where that event is judged (for a
decision: just before it is applied; for an outcome: when it is checked) — and proposes the
places where the cheat can be injected there. A ``Mutation`` is one splice of the event
list plus the annotation index where verification must report the code.

Mutations keep the log well-formed (known cards, seats at the table, every field set), so
only the rules can catch them. Cards come from where they really are: a stacked draw takes
a card from further down the pile, an extra draw the real next card, a second 杀 one the
player really holds. Responses that would follow an inserted decision are left implicit.

    >>> from clients.selfplay import play_game
    >>> log = play_game(1, 8)
    >>> found = find_mutations(log)          # {kind name: [Mutation, ...]}
    >>> cheat = found["second_slash"][0]
    >>> bad_log = cheat.apply(log)           # verify(bad_log) must report cheat.code at cheat.index
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import Game
from verifier.engine.requests import DECISION_KINDS, PlayRequest, Request
from verifier.replay import Verifier

# ---------------------------------------------------------------------------- mutations

@dataclass(frozen=True, slots=True)
class Edit:
    """Replace ``events[start:stop]`` of the log with ``events``; the cheat must then be reported
    on the annotation with index ``index`` (a derived one, for a removed outcome)."""

    start: int
    stop: int
    events: tuple[pb.Event, ...]
    index: int
    note: str
    derived: bool = False  # reported on an outcome the engine derived (one the log left out)


@dataclass(frozen=True, slots=True)
class Mutation:
    """One cheat injected into one log: what was changed and what must be reported where."""

    kind: str
    code: str
    edit: Edit

    @property
    def index(self) -> int:
        return self.edit.index

    @property
    def note(self) -> str:
        return self.edit.note

    def apply(self, log: pb.GameLog) -> pb.GameLog:
        """The altered copy of ``log`` (the original is left untouched)."""
        e = self.edit
        out = pb.GameLog()
        out.header.CopyFrom(log.header)
        events = log.events
        out.events.extend(events[:e.start])
        out.events.extend(e.events)
        out.events.extend(events[e.stop:])
        return out

    def caught(self, replay: apb.AnnotatedReplay) -> bool:
        """Did verification report the expected code on the expected annotation (the log event
        at ``index``, or for a removed outcome the one derived in its place)?"""
        return any(a.index == self.index and a.derived == self.edit.derived
                   and any(v.code == self.code for v in a.violations) for a in replay.annotations)


# ---------------------------------------------------------------------------- moments

@dataclass(slots=True)
class Moment:
    """One event of a legal log with the engine state where it is judged.

    For a decision, ``request`` is what it answers and ``game`` is the state just before it
    is applied (after any implicit declines before it); ``pending_before`` is what the
    verifier waited for before the event arrived. For an outcome, ``request`` is None and
    the engine has already derived it (the state may be ahead of the log).
    """

    log: pb.GameLog
    index: int
    event: pb.Event
    kind: str
    game: Game
    request: Request | None
    pending_before: Request | None
    slashes_used: int  # 杀 used (UseCard) by the player in the current play phase, from the log
    last_ref: dict[int, int]  # card id -> index of the last event that names it

    # --- inserting, replacing and removing events at this moment
    def insert(self, events: Sequence[pb.Event], note: str, offset: int = 0) -> Edit:
        """New events before this one; the first of them is the cheat (offset moves the index)."""
        return Edit(self.index, self.index, tuple(events), self.index + offset, note)

    def replace(self, event: pb.Event, note: str) -> Edit:
        return Edit(self.index, self.index + 1, (event,), self.index, note)

    def remove(self, count: int, note: str) -> Edit:
        return Edit(self.index, self.index + count, (), self.index, note, derived=True)

    # --- questions finders ask
    @property
    def play_seat(self) -> int | None:
        """The seat whose play-phase action this decision is, if it is one."""
        return self.request.seat if isinstance(self.request, PlayRequest) else None

    @property
    def awaits_play_action(self) -> bool:
        """The verifier waits for a play-phase action with nothing optional before it, so an
        outcome inserted here cannot be taken for the end of some window."""
        return isinstance(self.pending_before, PlayRequest) and self.request is self.pending_before

    def name(self, card_id: int) -> str:
        return self.game.cards[card_id].name

    def spare(self, cards: Iterable[int]) -> int | None:
        """A card of ``cards``, preferring one the rest of the log never names again."""
        cards = list(cards)
        later = [c for c in cards if self.last_ref.get(c, -1) <= self.index]
        pick = later or cards
        return pick[0] if pick else None

    def since_last_decision(self) -> Iterator[tuple[int, pb.Event]]:
        """The outcomes between the previous decision and this event, latest first."""
        for j in range(self.index - 1, -1, -1):
            ev = self.log.events[j]
            if ev.WhichOneof("kind") in DECISION_KINDS:
                return
            yield j, ev


Finder = Callable[[Moment], Iterable[Edit]]


IDENTITY, HEGEMONY = "identity", "hegemony"
BOTH_MODES = (IDENTITY, HEGEMONY)


@dataclass(frozen=True, slots=True)
class CheatKind:
    name: str
    code: str
    summary: str
    find: Finder = field(repr=False)
    modes: tuple[str, ...] = BOTH_MODES  # the game modes (Mode.name) whose games it applies to


KINDS: list[CheatKind] = []


def cheat(name: str, code: str, summary: str, modes: tuple[str, ...] = BOTH_MODES) -> Callable[[Finder], Finder]:
    """Register a finder as a cheat kind (for the games of ``modes``)."""
    def register(find: Finder) -> Finder:
        KINDS.append(CheatKind(name, code, summary, find, modes))
        return find
    return register


# ---------------------------------------------------------------------------- event builders

def use_card(seat: int, card: int, targets: Iterable[int] = ()) -> pb.Event:
    ev = pb.Event()
    ev.use_card.seat = seat
    ev.use_card.card.id = card
    ev.use_card.targets.extend(targets)
    return ev


def choose_cards(seat: int, cards: Iterable[int]) -> pb.Event:
    ev = pb.Event()
    ev.choose_cards.seat = seat
    ev.choose_cards.cards.extend(cards)
    return ev


def end_play_phase(seat: int) -> pb.Event:
    ev = pb.Event()
    ev.end_play_phase.seat = seat
    return ev


def draw_cards(seat: int, cards: Iterable[int], reason: int) -> pb.Event:
    ev = pb.Event()
    ev.draw_cards.seat = seat
    ev.draw_cards.cards.extend(cards)
    ev.draw_cards.reason = reason  # type: ignore[assignment]
    return ev


def copy_event(ev: pb.Event) -> pb.Event:
    out = pb.Event()
    out.CopyFrom(ev)
    return out


def usable_targets(game: Game, seat: int, card_id: int) -> tuple[int, ...] | None:
    """Targets with which ``seat`` could use the card in their play phase (None: no use), as a
    log would name them (empty where the rules fix them)."""
    card = game.cards[card_id]
    spec = game.ruleset.cards.get(card.name)
    if spec is None or not spec.play_phase:
        return None
    used = UsedCard(card.name, (card_id,), card.suit, card.color, card.number, real=card)
    for targets in spec.candidate_targets(game, seat):
        if spec.can_use(game, Use(seat, used, targets or spec.default_targets(game, seat))):
            return targets
    return None


def first_usable(game: Game, seat: int, cards: Iterable[int]) -> tuple[int, tuple[int, ...]] | None:
    for c in cards:
        targets = usable_targets(game, seat, c)
        if targets is not None:
            return c, targets
    return None


def top_first(game: Game) -> list[int]:
    return game.draw_pile[::-1]


def cards_named(ev: pb.Event) -> list[int]:
    """Every card id an event names."""
    kind = ev.WhichOneof("kind")
    if kind is None:
        return []
    m = getattr(ev, kind)
    if kind in ("use_card", "respond"):
        ref = m.card
        return list(ref.virtual.subcards) if ref.WhichOneof("kind") == "virtual" else [ref.id]
    if kind == "judgment":
        return [m.card]
    if kind == "reshuffle":
        return []  # the whole discard pile: naming it says nothing about one card
    if kind in ("choose_cards", "invoke_skill", "draw_cards", "reveal", "cards_moved"):
        return list(m.cards)
    return []


# ---------------------------------------------------------------------------- finding places

def spread(items: list[Edit], count: int) -> list[Edit]:
    """Up to ``count`` items evenly spread over the list (first and last included)."""
    if len(items) <= count:
        return items
    if count == 1:
        return items[:1]
    step = (len(items) - 1) / (count - 1)
    return [items[round(i * step)] for i in range(count)]


@dataclass(slots=True)
class _Cursor:
    index: int = 0
    before: Request | None = None
    play_seat: int = -1
    slashes: int = 0


def find_mutations(log: pb.GameLog, kinds: Sequence[CheatKind] | None = None, per_kind: int = 3,
                   ) -> dict[str, list[Mutation]]:
    """Every kind's mutations of a legal log: up to ``per_kind`` places per kind, spread over the game."""
    kinds = KINDS if kinds is None else kinds
    found: dict[str, list[Edit]] = {k.name: [] for k in kinds}
    last_ref: dict[int, int] = {}
    for i, ev in enumerate(log.events):
        for c in cards_named(ev):
            last_ref[c] = i
    cur = _Cursor()

    def visit(ev: pb.Event, request: Request | None) -> None:
        game = probe.game
        assert game is not None
        moment = Moment(log, cur.index, ev, ev.WhichOneof("kind") or "", game, request, cur.before, cur.slashes,
                        last_ref)
        for k in kinds:
            found[k.name].extend(k.find(moment))

    probe = Verifier(log.header)
    probe.on_decision = visit
    game = probe.game
    if game is None:
        return {k.name: [] for k in kinds}
    for i, ev in enumerate(log.events):
        kind = ev.WhichOneof("kind")
        cur.index, cur.before = i, probe.pending
        if kind == "phase_start" and ev.phase_start.phase == pb.PHASE_PLAY:
            cur.play_seat, cur.slashes = ev.phase_start.seat, 0
        if kind not in DECISION_KINDS:
            visit(ev, None)
        probe.feed((ev,))
        if kind == "use_card" and ev.use_card.seat == cur.play_seat and used_name(game, ev.use_card.card) == "slash":
            cur.slashes += 1
    return {k.name: [Mutation(k.name, k.code, e) for e in spread(found[k.name], per_kind)] for k in kinds}


def used_name(game: Game, ref: pb.CardRef) -> str:
    if ref.WhichOneof("kind") == "virtual":
        return ref.virtual.name
    card = game.cards.get(ref.id)
    return card.name if card else ""

