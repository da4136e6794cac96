"""The table at any event of a log: the engine's own state, read into plain, JSON-ready snapshots.

The annotated replay viewer (docs/viewer.md) shows the table as it stood after each event. That
state is never re-derived here: a ``Verifier`` follows the log, and after each event is judged its
engine's state — seats, hands, equipment, judgment areas, marks, piles, whose turn and phase — is
read off. *Position* N is the state once event N has been judged; position ``len(log.events)`` is
the state after ``Verifier.finish`` (what the engine derived after the last event, the game's end).

Two things about "once event N has been judged":

- the engine runs ahead to its next request after a decision, so a decision's consequences that
  need nobody's answer (the draw of 无中生有, the damage of a 杀 once the target's 闪 window is
  declined by the next decision, ...) are in the state of the event that caused them, or of the
  event that implied the decline;
- the verifier may hold a recorded outcome until the event after it arrives (one event of
  lookahead, ``Verifier.held``): such an event is judged, and its state read, only when its
  successor is fed, and before that successor is judged.

``Timeline(log)`` follows the log once and keeps a snapshot of every position (seats that did not
change share their record with the previous position, so a long game costs little memory);
``state(position, view)`` renders one, from one seat's point of view (other hands as counts, roles
hidden but the lord's, the dead's and one's own) or open. ``state_at(log, n)`` follows only as
much of the log as position n needs (the reference the timeline is tested against).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import text
from verifier.cards import EQUIP_SLOTS, NUMBER_NAMES, all_cards
from verifier.engine.game import Game, Player
from verifier.generals import hegemony_generals, standard_generals
from verifier.replay import Verifier
from verifier.version import engine_version

LORD = pb.ROLE_LORD

STATUS_NAMES = {value: name.removeprefix("STATUS_") for name, value in apb.Status.items()}
ROLE_NAMES: dict[int, str] = {int(k): v for k, v in text.ROLE.items()}
PHASE_NAMES: dict[int, str] = {int(k): v for k, v in text.PHASE.items()}
SIDE_NAMES: dict[int, str] = {int(k): v for k, v in text.SIDE.items()}
KINGDOMS = {"wei": "魏", "shu": "蜀", "wu": "吴", "qun": "群"}

# One seat at one position: alive, hp, max_hp, hand, equipment ((slot, card), ...),
# judgment area ((card, counts as), ...), marks ((name, value), ...), general, kingdom,
# the generals it plays ((name, face up), ...: hegemony's main and deputy; identity's one), the cards on its
# general (ZONE_GENERAL: 不屈's 创, in the order put there), the generals it was reborn as (rebirth, in order).
SeatState = tuple[bool, int, int, tuple[int, ...], tuple[tuple[str, int], ...], tuple[tuple[int, str], ...],
                  tuple[tuple[str, int], ...], str, str, tuple[tuple[str, bool], ...], tuple[int, ...],
                  tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The table at one position (plain values; seats shared between positions when unchanged)."""

    seats: tuple[SeatState, ...]
    draw_pile: int
    discard_pile: int
    processing: tuple[int, ...]
    current: int
    phase: int
    turn: int
    over: bool
    waiting: str  # what the game waits for ("" when nothing: the game is over or not started)


class _Follower(Verifier):
    """A Verifier that says when a held event (Verifier.held) has been judged, before the event after
    it is: ``Verifier._feed_held`` is where that happens."""

    held_judged: Callable[[int], None] | None = None

    def _feed_held(self, lookahead: pb.Event | None) -> None:
        super()._feed_held(lookahead)
        if self.held_judged is not None:
            self.held_judged(self.index - 1)


def _seat_state(game: Game, p: Player) -> SeatState:
    return (p.alive, p.hp, p.max_hp, tuple(p.hand),
            tuple((slot, p.equips[slot]) for slot in EQUIP_SLOTS if slot in p.equips),
            tuple((c, game.judgment_as.get(c, "")) for c in p.judgment),
            tuple(sorted(p.marks.items())), p.general, p.kingdom, game.mode.seat_generals(game, p.seat),
            tuple(p.pile), game.mode.seat_rebirths(game, p.seat))


def read_snapshot(verifier: Verifier, previous: Snapshot | None = None) -> Snapshot | None:
    """The engine's state now (None when the header was unusable and there is no game). Seats equal to
    ``previous``'s are taken from it, so that unchanged seats are stored once."""
    game = verifier.game
    if game is None:
        return None
    seats = tuple(_seat_state(game, p) for p in game.players)
    if previous is not None:
        seats = tuple(old if old == new else new for old, new in zip(previous.seats, seats, strict=True))
    pending = verifier.pending
    return Snapshot(seats, len(game.draw_pile), len(game.discard_pile), tuple(game.processing), game.current,
                    int(game.phase), game.turn_number, game.over,
                    pending.describe() if pending is not None and verifier.stopped_at is None else "")


def _follow(header: pb.GameHeader, events: Sequence[pb.Event], upto: int | None
            ) -> tuple[_Follower, dict[int, Snapshot | None], apb.AnnotatedReplay | None]:
    """Follow ``events`` and snapshot each position as soon as it is judged: every position and the end
    (``upto`` None; the replay is returned too), or only as far as position ``upto`` needs (one event
    more when that event is held)."""
    verifier = _Follower(header)
    snaps: dict[int, Snapshot | None] = {}
    last: list[Snapshot | None] = [None]

    def take(position: int) -> None:
        snap = read_snapshot(verifier, last[0])
        snaps[position] = snap
        last[0] = snap

    def fill_before(position: int) -> None:
        # Positions never read (an engine that judges a held event elsewhere than in _feed_held) get the
        # state read after them: never missing, at worst one event late.
        j = position - 1
        while j >= 0 and j not in snaps:
            snaps[j] = snaps[position]
            j -= 1

    verifier.held_judged = take
    for i, ev in enumerate(events):
        if upto is not None and upto in snaps:
            return verifier, snaps, None
        verifier.follow((ev,))  # judges the held event before it first (held_judged), then this one
        if verifier.held is None:
            take(i)
            fill_before(i)
    if upto is not None and upto in snaps:
        return verifier, snaps, None
    replay = verifier.finish()
    take(len(events))
    fill_before(len(events))
    return verifier, snaps, replay


@cache
def card_json(cid: int) -> dict[str, Any]:
    card = all_cards().get(cid)
    if card is None:
        return {"id": cid, "label": f"#{cid}", "name": f"#{cid}", "suit": "", "number": "", "red": False}
    return {"id": cid, "name": card.name_zh, "en": card.name, "suit": card.suit.symbol,
            "number": NUMBER_NAMES.get(card.number, str(card.number)), "red": card.suit.is_red,
            "type": card.type, "label": card.label().rsplit(" (#", 1)[0]}


def violation_json(v: apb.Violation) -> dict[str, Any]:
    out: dict[str, Any] = {"code": v.code, "message": v.message, "rule": v.rule}
    if v.HasField("seat"):
        out["seat"] = v.seat
    if v.HasField("card"):
        out["card"] = v.card
    return out


def source_counts(replay: apb.AnnotatedReplay) -> dict[int, int]:
    """The violations on decisions whose log says who made them, counted by that source (Annotation.source)."""
    counts: dict[int, int] = {}
    for ann in replay.annotations:
        if ann.source and ann.violations:
            counts[ann.source] = counts.get(ann.source, 0) + len(ann.violations)
    return counts


def violations_by_source(replay: apb.AnnotatedReplay) -> str:
    """e.g. "3 violations: 2 on client replies, 1 on AI replies"; empty when no violation is attributed."""
    return text.violations_by_source(source_counts(replay), replay.violation_count)


def annotation_json(ann: apb.Annotation, events: Sequence[pb.Event]) -> dict[str, Any]:
    """One annotation as plain values, with the event it is about (the log's, or the derived one) in words."""
    ev = ann.event if ann.derived else (events[ann.index] if ann.index < len(events) else pb.Event())
    kind = ev.WhichOneof("kind")
    words = ("(a request left unanswered)" if ann.derived else "(empty event)") if not kind else \
        text.describe(ev, text.skill_zh)  # skills in Chinese on the page, as cards are
    out: dict[str, Any] = {"index": ann.index, "derived": ann.derived, "status": STATUS_NAMES.get(ann.status, "?"),
                           "applied": ann.applied, "kind": kind or "", "text": words,
                           "violations": [violation_json(v) for v in ann.violations], "digest": ann.digest.hex()}
    seat = getattr(getattr(ev, kind), "seat", None) if kind else None
    if seat is not None:
        out["seat"] = seat
    if ann.source:
        # Who made this decision: "client", "ai", "default" (docs/viewer.md).
        out["source"] = text.SOURCE_KEY.get(ann.source, str(ann.source))
    return out


class Timeline:
    """Every position of one log, judged once by the engine; ``state`` renders any of them."""

    def __init__(self, log: pb.GameLog, upto: int | None = None) -> None:
        """``upto``: follow only as far as that position needs (``state_at``); positions past it are None."""
        self.header = log.header
        self.events = list(log.events)
        verifier, snaps, replay = _follow(log.header, self.events, upto)
        self.engine_version = engine_version()
        self.annotations: list[apb.Annotation] = verifier.annotations
        self.snapshots: list[Snapshot | None] = [snaps.get(i) for i in range(len(self.events) + 1)]
        game = verifier.game
        self.roles = [p.role for p in game.players] if game is not None else [int(s.role) for s in log.header.seats]
        self.lord = next((i for i, r in enumerate(self.roles) if r == LORD), None)
        self.stopped_reason = verifier.stopped_reason
        self.by_index: dict[int, list[int]] = {}
        for k, ann in enumerate(self.annotations):
            self.by_index.setdefault(ann.index, []).append(k)
        self.turns = self._turns([o.event for o in verifier.expected])
        self.result: dict[str, Any] | None = None
        if game is not None and game.result is not None:
            end = game.result
            self.result = {"finished": True, "side": SIDE_NAMES.get(end.side, ""), "winners": sorted(end.winners),
                           "reason": end.reason}
        elif replay is not None:
            self.result = {"finished": False, "side": "", "winners": [], "reason": replay.result.reason}
        self._rounds = {t["turn"]: t["round"] for t in self.turns}

    @property
    def positions(self) -> int:
        """Positions 0 … len(events): one per event, and the end."""
        return len(self.snapshots)

    def _turns(self, pending: Sequence[pb.Event]) -> list[dict[str, int]]:
        """Each turn the game reached, from its turn_start outcomes (recorded or derived, each once): its
        number, seat, round (the lord's turns so far; with no lord, the first seat's) and first position: the
        recorded turn_start event, or the event a derived one was annotated before (-1 for one not annotated
        yet: ``pending``, outcomes derived ahead of the log when only part of it was followed)."""
        starts: list[tuple[int, int, int]] = []
        for ann in self.annotations:
            index = ann.index
            if ann.derived:
                ev = ann.event
            elif ann.status == apb.STATUS_OK and index < len(self.events):
                ev = self.events[index]
            else:
                continue
            if ev.HasField("turn_start"):
                starts.append((ev.turn_start.turn, ev.turn_start.seat, min(index, len(self.events))))
        starts += [(ev.turn_start.turn, ev.turn_start.seat, -1) for ev in pending if ev.HasField("turn_start")]
        out = []
        rounds = 0
        # A round is the lord's turn and those after it (identity); with no lord (hegemony), the first seat's.
        anchor = self.lord if self.lord is not None else starts[0][1] if starts else 0
        for turn, seat, position in starts:
            if seat == anchor:
                rounds += 1
            out.append({"turn": turn, "seat": seat, "round": max(rounds, 1), "position": position})
        return out

    def round_of(self, turn: int) -> int:
        return self._rounds.get(turn, 0)

    def summary(self) -> dict[str, Any]:
        """The positions at a glance: the turns, and per position the turn, round, current seat and phase."""
        snaps = self.snapshots
        return {"engine_version": self.engine_version, "events": len(self.events), "positions": self.positions,
                "lord": self.lord, "turns": self.turns,
                "turn": [s.turn if s else 0 for s in snaps],
                "round": [self.round_of(s.turn) if s else 0 for s in snaps],
                "current": [s.current if s else None for s in snaps],
                "phase": [PHASE_NAMES.get(s.phase, "") if s else "" for s in snaps]}

    def annotations_at(self, position: int) -> list[dict[str, Any]]:
        """The annotations with this index: the outcomes derived before the event, then the event's own."""
        return [annotation_json(self.annotations[k], self.events)
                for k in self.by_index.get(position, ())]

    def state(self, position: int, view: int | None = None) -> dict[str, Any]:
        """Position ``position`` (0 … len(events)) as plain values, seen by seat ``view`` (None: open)."""
        if not 0 <= position < self.positions:
            raise IndexError(f"position {position} is not in 0…{self.positions - 1} (the log has "
                             f"{len(self.events)} events; position {len(self.events)} is its end)")
        if view is not None and not 0 <= view < len(self.roles):
            raise IndexError(f"seat {view} is not at this {len(self.roles)}-seat table")
        return _render(self, position, view)


def _render(tl: Timeline, position: int, view: int | None) -> dict[str, Any]:
    snap = tl.snapshots[position]
    header = tl.header
    end = position == len(tl.events)
    out: dict[str, Any] = {
        "position": position, "event": None if end else position, "end": end, "events": len(tl.events),
        "view": "open" if view is None else view, "engine_version": tl.engine_version,
        "annotations": tl.annotations_at(position)}
    if snap is None:
        out.update(error=tl.stopped_reason or "the game did not start", seats=[
            {"seat": i, "player": s.player, "general": s.general, "role": None, "alive": True}
            for i, s in enumerate(header.seats)])
        return out
    zh = general_names_zh(header.mode)
    names = card_names_zh()
    seats = []
    for i, st in enumerate(snap.seats):
        alive, hp, max_hp, hand, equips, judgment, marks, general, kingdom, played, pile, rebirths = st
        role = tl.roles[i]
        shown = view is None or view == i
        seats.append({
            "seat": i, "player": header.seats[i].player if i < len(header.seats) else "",
            "general": general, "general_zh": zh.get(general, general), "kingdom": KINGDOMS.get(kingdom, kingdom),
            # A face-down general is seen by its owner only (and by all once it is up, or its character dead).
            "generals": [{"name": name, "name_zh": zh.get(name, name), "face_up": up} if up or shown or not alive
                         else {"name": None, "name_zh": None, "face_up": False} for name, up in played],
            "role": (ROLE_NAMES.get(role, "?") if shown or role == LORD or not alive else None) if role else None,
            "alive": alive, "hp": hp, "max_hp": max_hp,
            "hand": [card_json(c) for c in hand] if shown else None, "hand_count": len(hand),
            "equipment": {slot: card_json(c) for slot, c in equips},
            "judgment": [dict(card_json(c), **({"as": names.get(a, a)} if a else {})) for c, a in judgment],
            # The cards on a general are face up (不屈's 创: their numbers decide the dying state), seen by all; on a
            # dead character's they are face down (dark souls: 玄武's set-aside card), seen by its owner only.
            "general_cards": [card_json(c) for c in pile] if alive or shown else None,
            "general_cards_count": len(pile),
            # A rebirth is public: the generals reborn as, oldest first (the last is the one played now).
            "reborn_as": [{"name": name, "name_zh": zh.get(name, name)} for name in rebirths],
            "marks": dict(marks), "chained": bool(dict(marks).get("chained")),
            "current": i == snap.current and snap.turn > 0 and not snap.over})
    result = tl.result if end or snap.over else None
    out.update(seats=seats, draw_pile=snap.draw_pile, discard_pile=snap.discard_pile,
               processing=[card_json(c) for c in snap.processing], current=snap.current,
               phase=PHASE_NAMES.get(snap.phase, ""), turn=snap.turn, round=tl.round_of(snap.turn),
               over=snap.over, waiting=snap.waiting, result=result)
    return out


@cache
def general_names_zh(mode: int) -> dict[str, str]:
    """The Chinese names of the generals a mode plays with, by id."""
    if mode == pb.MODE_HEGEMONY:
        return {name: g.name_zh for name, g in hegemony_generals().items()}
    return {name: g.name_zh for name, g in standard_generals().items()}


@cache
def card_names_zh() -> dict[str, str]:
    """Card names (name_en → 中文), for what a virtual card in a judgment area counts as."""
    return {c.name: c.name_zh for c in all_cards().values()}


def state_at(log: pb.GameLog, position: int, view: int | None = None) -> dict[str, Any]:
    """One position, following only as much of the log as it needs (a fresh Verifier each call)."""
    return Timeline(log, upto=position).state(position, view)
