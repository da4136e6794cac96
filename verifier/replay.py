"""The replay driver: follows a log through the engine and annotates every event.

``Verifier`` is incremental — ``feed`` events as they arrive, ``finish`` at the end — so
the same code checks a whole log offline and a live game streamed batch by batch. Each
fed event is judged as soon as the engine reaches it; derived outcomes the log left
out are added in their place.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import text
from verifier.codes import CATALOGUE, NOTICES, Kind
from verifier.engine.effects import Ruleset, borrowed_skill, missing_skill
from verifier.engine.game import Game, Notice, Outcome, Violation
from verifier.engine.requests import (
    DECISION_KINDS,
    MODE_ONLY_KINDS,
    PLAY_KINDS,
    UNANSWERED,
    Answer,
    CardRequest,
    ChanceRequest,
    DrawChance,
    JudgeChance,
    NullifyRequest,
    OfferRequest,
    OptionRequest,
    OrderChance,
    PeachRequest,
    PlayRequest,
    Request,
    ShuffleRequest,
)
from verifier.pairing import left_out_code, mismatch, paired, same_outcome, unpaired
from verifier.rng import shuffled
from verifier.setup import HeaderError, header_notices, new_game, ruleset_for, starting_hand_outcomes
from verifier.version import engine_version
from verifier.wire import varint

# The state digest: BLAKE2b-128 (docs/log-format.md).
DIGEST_SIZE = 16

# Probes per game (Verifier._decline_explains): each replays the log so far; honest logs need none.
MAX_PROBES = 16
# An outcome the game has no place for however its open requests are answered.
UNEXPLAINED = frozenset({"UNEXPECTED_OUTCOME", "AFTER_GAME_OVER"})

# After this many decisions in a row that fit nothing, the log is taken to be unfollowable.
MAX_CONSECUTIVE_REJECTS = 32

# Cards that can answer a window that follows a declined request with no decision between
# (桃 or 酒 for a dying character, 无懈可击 against the next target's effect).
LATER_WINDOW_CARDS = frozenset({"peach", "analeptic", "nullification", "heg_nullification"})


def default_ruleset(header: pb.GameHeader) -> Ruleset:
    """The packages the header's mode asks for (verifier.setup.ruleset_for: one Ruleset per combination)."""
    return ruleset_for(header)


def initial_digest(header: pb.GameHeader) -> bytes:
    """The digest chain starts from the header less how the game was recorded (which
    outcomes, by which program, from which engine and format): one game gives one digest chain
    in any recording."""
    game_only = pb.GameHeader()
    game_only.CopyFrom(header)
    game_only.options.ClearField("outcomes")
    game_only.options.ClearField("server_record")
    game_only.ClearField("recorder")
    game_only.ClearField("origin")
    return hashlib.blake2b(game_only.SerializeToString(deterministic=True), digest_size=DIGEST_SIZE).digest()


class Verifier:
    """Verifies one game, event by event."""

    def __init__(self, header: pb.GameHeader, ruleset: Ruleset | None = None) -> None:
        self.header = header
        self.ruleset = ruleset
        # Every annotation so far in the wire form of AnnotatedReplay.annotations, written as it is made:
        # most are plain (an event judged OK: index, status, applied, digest), and building a record or a
        # message for each cost more than judging its event did. Those with violations or a derived event
        # are also kept as records (index, status, applied, digest, violations, derived event), for the
        # violation counts and the probes. Protobuf messages are built only when asked for (feed).
        self.wire = bytearray()
        self.records: list[Record] = []
        self.index = 0  # index of the next log event
        self.expected: deque[Outcome] = deque()
        self.complete = header.options.outcomes == pb.OUTCOME_RECORDING_COMPLETE
        self.recorded_reshuffles = header.options.recorded_reshuffles
        self.hasher = hashlib.blake2b(initial_digest(header), digest_size=DIGEST_SIZE)
        self.digest = self.hasher.digest()
        self.header_violations: list[Violation] = []
        # Remarks on the header that are not violations (``notice``); AnnotatedReplay.header_notices.
        self.header_notices: list[Notice] = []
        self.stopped_at: int | None = None
        self.stopped_reason = ""
        self.rejects_in_row = 0
        self.pending: Request | None = None
        self.game: Game | None = None
        # A recorded outcome waiting for the event after it (follow), and that event while it is judged.
        self.held: pb.Event | None = None
        self.held_kind: str | None = None
        self.lookahead: pb.Event | None = None
        # Every event fed so far (a probe replays them: _decline_explains), and the probes left to run.
        self.fed: list[pb.Event] = []
        self.probes_left = MAX_PROBES
        self._explained: bool | None = None  # the probe's answer for the event being judged
        # The Event.source of the decision being judged (0 while an outcome is): copied into its own annotation
        # (Annotation.source), never into a derived one's. It changes nothing the engine does.
        self.source = 0
        # A tool's look at each decision of the log just before the engine takes it, with the request it answers
        # (clients/cheats/mutator.py; the core is compiled, so a tool hooks in here rather than in a subclass).
        self.on_decision: Callable[[pb.Event, Request], None] | None = None
        try:
            self.game = new_game(header, ruleset or default_ruleset(header))
        except HeaderError as err:
            self.header_violations = err.violations
            self.stopped_at = 0
            self.stopped_reason = "the header is unusable: " + "; ".join(v.message for v in err.violations)
            return
        for n in header_notices(header):
            self.notice(n.code, n.message)
        for ev in starting_hand_outcomes(self.game):
            self.expected.append(Outcome(ev, "DRAW_NOT_TOP"))
        # Draws and judgments wait for the driver, which hands them the recorded ones (adoption).
        self.game.adopting = True
        # A server's record: its illegal decisions were carried out (docs/rules.md#server-records).
        self.game.server_record = header.options.server_record
        self.gen = self.game.run()
        self._step(None, first=True)

    # ------------------------------------------------------------------ engine stepping

    def _step(self, answer: Answer, first: bool = False) -> tuple[list[Violation], bool]:
        """Send an answer to the engine and run it to its next request."""
        game = self.game
        assert game is not None
        try:
            req = next(self.gen) if first else self.gen.send(answer)
        except StopIteration:
            req = None
        self.pending = req
        if game.outcomes:
            self.expected.extend(game.outcomes)
            game.outcomes.clear()
        violations = game.violations
        if not violations:
            return violations, False  # (nothing was reported, so nothing was rejected)
        game.violations = []
        rejected = game.rejected
        game.rejected = False
        return violations, rejected

    def _seeded_order(self, req: ShuffleRequest) -> list[int]:
        assert self.game is not None
        return shuffled(self.game.seed, req.label, list(req.cards))

    def _digest(self) -> bytes:
        """The running hash of every state change so far (independent of how the changes
        are grouped into annotations: each entry is self-delimiting)."""
        game = self.game
        if game is not None and game.journal:
            self.hasher.update("".join(game.journal).encode())
            game.journal.clear()
            self.digest = self.hasher.digest()
        return self.digest

    # ------------------------------------------------------------------ annotations

    def notice(self, code: str, message: str) -> None:
        """Add a header notice: a remark that is not a violation (``code`` from
        verifier.codes.NOTICES). It goes into AnnotatedReplay.header_notices, in the order added,
        and is never counted as a violation."""
        if code not in NOTICES:
            raise ValueError(f"{code!r} is not a notice code (verifier.codes.NOTICES)")
        self.header_notices.append(Notice(code, message))

    def _annotate(self, status: int, violations: Iterable[Violation] = (), applied: bool = True,
                  derived: pb.Event | None = None) -> None:
        source = self.source if derived is None else 0
        if not violations and derived is None:
            write_plain(self.wire, self.index, status, applied, self._digest(), source)
            return
        rec = (self.index, status, applied, self._digest(), tuple(violations), derived, source)
        self.records.append(rec)
        write_annotation(self.wire, rec)

    @property
    def annotations(self) -> list[apb.Annotation]:
        """Every annotation so far, as protobuf messages."""
        return parse_annotations(self.wire)

    def _status_for(self, violations: list[Violation]) -> int:
        if not violations:
            return apb.STATUS_OK
        if any(CATALOGUE[v.code].kind == Kind.MALFORMED for v in violations):
            return apb.STATUS_MALFORMED
        if all(CATALOGUE[v.code].kind == Kind.MISMATCH for v in violations):
            return apb.STATUS_MISMATCH
        return apb.STATUS_ILLEGAL

    def _flush_expected(self, upto: int | None = None) -> None:
        """Outcomes the log left out: add them as derived (missing, for complete logs)."""
        count = len(self.expected) if upto is None else upto
        for _ in range(count):
            out = self.expected.popleft()
            violations = []
            if self.complete:
                violations.append(Violation(left_out_code(out, self.game), f"the log claims complete outcomes but "
                                            f"leaves out: {text.describe(out.event)}"))
            self._annotate(apb.STATUS_MISMATCH if violations else apb.STATUS_DERIVED, violations,
                           derived=out.event)

    # ------------------------------------------------------------------ feeding events

    @property
    def over(self) -> bool:
        return self.game is not None and self.game.over and self.pending is None

    def feed(self, events: Iterable[pb.Event]) -> list[apb.Annotation]:
        """Judge more events; returns the annotations they (and derived outcomes) produced."""
        start = len(self.wire)
        self.follow(events)
        return parse_annotations(self.wire[start:])

    def follow(self, events: Iterable[pb.Event]) -> None:
        """Judge more events without returning their annotations (the whole-log fast path).

        A recorded outcome that is not simply the next derived one is judged once the event after it is
        known: if that event answers the request the game is waiting on, the outcome came early or is
        extra, and the request is not taken as declined (one event of lookahead; at the end of a batch
        the outcome waits for the next batch or ``finish``)."""
        expected = self.expected
        wire = self.wire
        ok_heads = _OK_HEADS
        fed = self.fed
        for ev in events:
            fed.append(ev)
            if self.held is not None:
                self._feed_held(ev)
            if self.stopped_at is None:
                if not expected and self._is_default_chance(ev):
                    self._step(None)  # (the recorded draw or judgment is the rules' own: nothing to adopt)
                if expected and expected[0].event == ev and expected[0].rule is None:
                    # The common case, inlined: the recorded outcome is exactly the next derived one
                    # (derived outcomes are never decisions, and the engine runs no further for it).
                    # Its kind is never asked: most events are these.
                    expected.popleft()
                    game = self.game
                    digest = self._digest() if game is not None and game.journal else self.digest
                    i = self.index
                    wire += ok_heads[i] if i < len(ok_heads) else ok_head(i)
                    wire += digest
                    self.index = i + 1
                    continue
                kind = ev.WhichOneof("kind")
                if kind not in DECISION_KINDS or self._lacks(ev, kind):
                    self.held, self.held_kind = ev, kind
                    continue
            else:
                kind = ev.WhichOneof("kind")
            self._feed_one(ev, kind)
            self.index += 1

    def _is_default_chance(self, ev: pb.Event) -> bool:
        """Is the engine waiting on a draw or a judgment, and ``ev`` records the very cards the rules give?"""
        req = self.pending
        game = self.game
        if game is None:
            return False
        pile = game.draw_pile
        if type(req) is DrawChance:
            if not ev.HasField("draw_cards"):
                return False
            d = ev.draw_cards
            count = req.count
            return (d.seat == req.seat and d.reason == req.reason and count <= len(pile)
                    and list(d.cards) == pile[:-count - 1:-1])
        if type(req) is JudgeChance:
            if not ev.HasField("judgment"):
                return False
            j = ev.judgment
            return j.seat == req.seat and j.reason == req.reason and bool(pile) and j.card == pile[-1]
        return False

    def _lacks(self, ev: pb.Event, kind: str) -> bool:
        """Does the decision name a card its maker does not hold, or a skill they lack? It is then held for the
        event after it: a recorded move taking that card, or the skill's recorded effect, shows the game that
        was played carried it out (Game.evidence; docs/log-format.md#taken-cards). Only such decisions wait."""
        game = self.game
        if game is None:
            return False
        msg = getattr(ev, kind)
        if kind in ("use_card", "respond"):
            if msg.card.WhichOneof("kind") != "id" or msg.seat >= game.n:
                return False
            p = game.players[msg.seat]
            return msg.card.id not in p.hand and msg.card.id not in p.equips.values()
        if kind == "invoke_skill":
            return msg.seat < game.n and not game.has_effect(msg.seat, msg.skill)
        return False

    def _feed_held(self, lookahead: pb.Event | None) -> None:
        held, self.held = self.held, None
        assert held is not None
        self.lookahead = lookahead
        game = self.game
        if game is not None and lookahead is not None and self.held_kind in DECISION_KINDS \
                and (lookahead.WhichOneof("kind") not in DECISION_KINDS or lookahead.HasField("invoke_skill")):
            # (an outcome, or a skill invoked next: the effect may have triggered one before its outcome shows,
            # as 制衡 discarding 陆逊's last card triggers 连营; effects.borrowed_skill decides)
            game.evidence = lookahead
        try:
            self._feed_one(held, self.held_kind)
        finally:
            self.lookahead = None
            self._explained = None
            if game is not None:
                game.evidence = None
        self.index += 1

    def _next_answers(self, req: Request) -> bool:
        """Is ``req`` still open although a recorded outcome came: the event after it answers ``req``, and
        taking ``req`` as declined would not explain the outcome (then it is early or extra, not the sign of
        a decline)?"""
        nxt = self.lookahead
        if nxt is None:
            return False
        kind = nxt.WhichOneof("kind")
        if kind not in DECISION_KINDS or not req.fits(nxt, kind, getattr(nxt, kind).seat, self._card_name(nxt, kind)):
            return False
        if self._explained is None:
            self._explained = self._decline_explains()
        return not self._explained

    def _decline_explains(self) -> bool:
        """Would the outcome being judged fit the game if the open requests were declined? Judged by a probe:
        a second verifier replays the log up to here and judges the outcome with no lookahead (it cannot be
        tried on this one: a declined request cannot be taken back). At most MAX_PROBES per game; past that,
        and when it cannot tell, the outcome is taken as a decline."""
        if self.probes_left <= 0:
            return True
        self.probes_left -= 1
        i = self.index
        probe = Verifier(self.header, self.ruleset)
        probe.probes_left = 0  # (its own lookahead: no nested probes)
        probe.follow(self.fed[:i])
        ev = self.fed[i]
        kind = ev.WhichOneof("kind")
        if probe.held is not None:
            probe._feed_held(ev)  # the event before, judged as it was here
        if probe.index != i or probe.stopped_at is not None:
            return True
        start = len(probe.records)
        probe._feed_one(ev, kind)
        return not any(v.code in UNEXPLAINED for rec in probe.records[start:] if rec[0] == i for v in rec[4])

    def _feed_one(self, ev: pb.Event, kind: str | None) -> None:
        """Judge one event (``kind``: the event's kind, ev.WhichOneof("kind"))."""
        self.source = ev.source if kind in DECISION_KINDS else 0
        if self.stopped_at is not None:
            self._annotate(apb.STATUS_NOT_CHECKED, applied=False)
            return
        try:
            if kind is None:
                # Counts towards the unfollowable limit: a long run of them is junk, not a game.
                self._reject([Violation("MALFORMED_EVENT", "the event is empty (no known kind is set)")])
            elif kind in DECISION_KINDS:
                msg = getattr(ev, kind)
                bad = self._malformed_decision(ev, kind, msg)
                if bad:
                    self._reject(bad)
                else:
                    self._feed_decision(ev, kind, msg.seat)
            elif self._next_derived_is(ev):
                # The common case: the recorded outcome is exactly the next derived one.
                self.expected.popleft()
                self._annotate(apb.STATUS_OK)
            elif (bad := self._malformed(ev, kind)):
                self._reject(bad)
            else:
                self._feed_outcome(ev, kind)
        except Exception as err:  # an engine fault must never lose the report
            self.stopped_at = self.index
            self.stopped_reason = f"internal error while judging event {self.index}: {type(err).__name__}: {err}"
            self._annotate(apb.STATUS_NOT_CHECKED, applied=False)

    def _malformed(self, ev: pb.Event, kind: str) -> list[Violation]:
        """Seats not at the table, cards not in this game's deck, a decision without its card:
        the event cannot be understood, whenever it comes (checked before anything else)."""
        game = self.game
        assert game is not None
        msg = getattr(ev, kind)
        out: list[Violation] = []
        if kind in ("use_card", "respond") and msg.card.WhichOneof("kind") is None:
            out.append(Violation("MALFORMED_EVENT", f"{text.describe(ev)}: the decision names no card"))
        seats, cards = event_seats_and_cards(msg)
        for seat in seats:
            if seat >= game.n:
                out.append(self._seat_out_of_range(ev, seat))
                break
        for cid in cards:
            if cid not in game.cards:
                out.append(Violation("UNKNOWN_CARD", f"{text.describe(ev)}: card #{cid} is not in this game's "
                                     "deck", card=cid))
                break
        return out

    def _next_derived_is(self, ev: pb.Event) -> bool:
        """Is the recorded outcome the next derived one? An outcome recorded while nothing is
        derived yet and the game waits on an optional answer means the answer was declined."""
        expected = self.expected
        while not expected:
            req = self.pending
            if req is None:
                return False
            if isinstance(req, ChanceRequest):
                # The declines led to a draw or judgment: when the outcome is the rules' own card(s), it is
                # what follow's fast path takes (nothing to adopt); anything else is settled by _feed_outcome.
                if not self._is_default_chance(ev):
                    return False
            elif not req.optional or self._next_answers(req):
                return False
            self._step(None)
        head = expected[0]
        return head.rule is None and same_outcome(head.event, ev, self.game)

    def _malformed_decision(self, ev: pb.Event, kind: str, msg: Any) -> list[Violation]:
        """``_malformed`` for decisions, reading only the fields each kind has (``msg``: the decision's
        message, of the type ``kind`` names)."""
        game = self.game
        assert game is not None
        n = game.n
        seat: int = msg.seat
        if seat >= n:
            return [self._seat_out_of_range(ev, seat)]
        cards: Iterable[int] = ()
        if kind == "use_card" or kind == "respond":
            ref = msg.card
            which = ref.WhichOneof("kind")
            if which is None:
                return [Violation("MALFORMED_EVENT", f"{text.describe(ev)}: the decision names no card")]
            cards = (ref.id,) if which == "id" else ref.virtual.subcards
            if kind == "use_card":
                for target in msg.targets:
                    if target >= n:
                        return [self._seat_out_of_range(ev, target)]
            elif msg.HasField("target") and msg.target >= n:
                return [self._seat_out_of_range(ev, msg.target)]
        elif kind == "choose_cards":
            cards = msg.cards
        elif kind == "sacrifice":
            if msg.target >= n:
                return [self._seat_out_of_range(ev, msg.target)]
            cards = (msg.card,)
        elif kind == "possess":
            if msg.host >= n:
                return [self._seat_out_of_range(ev, msg.host)]
        elif kind == "soul_act":
            cards = (msg.card,) if msg.HasField("card") else ()
        elif kind == "invoke_skill":
            cards = msg.cards
            for target in msg.targets:
                if target >= n:
                    return [self._seat_out_of_range(ev, target)]
        known = game.cards
        for cid in cards:
            if cid not in known:
                return [Violation("UNKNOWN_CARD", f"{text.describe(ev)}: card #{cid} is not in this game's deck",
                                  card=cid)]
        return []

    def _seat_out_of_range(self, ev: pb.Event, seat: int) -> Violation:
        assert self.game is not None
        return Violation("SEAT_OUT_OF_RANGE", f"{text.describe(ev)}: seat {seat} is not at this {self.game.n}-seat "
                         "table")

    def _feed_outcome(self, ev: pb.Event, kind: str) -> None:
        scores: list[int] | None = None
        if kind == "game_over" and ev.game_over.scores:
            # Recorded scores (docs/log-format.md#scores): the end itself is judged without them (GAME_RESULT),
            # then the scores against the rules' wherever the rules end the game too (SCORE_MISMATCH).
            scores = list(ev.game_over.scores)
            bare = pb.Event()
            bare.CopyFrom(ev)
            bare.game_over.ClearField("scores")
            ev = bare
        used = False  # has this outcome answered the engine's chance (a draw, a judgment, a reshuffle)?
        while True:
            k = paired(self.expected, ev, kind, self.game)
            req = self.pending
            if k is not None or req is None:
                break
            if isinstance(req, ChanceRequest):
                # The engine waits on chance: this outcome is what happened, or the rules' default goes (the order
                # of simultaneous effects: the one this outcome shows first).
                used = self._settle_chance(req, ev if isinstance(req, OrderChance) or not used else None) or used
                continue
            if self._next_answers(req):
                break
            # The log records what happened next: the pending request went unanswered.
            if req.optional:
                self._step(None)
            elif req.has_default:
                self._unanswered()
            else:
                break
        if k is None:
            # Nothing derived is about what this outcome is about. If the rules give an outcome of its
            # kind here (about another seat, phase, ...), say which; it stays to be recorded or derived.
            violation = unpaired(self.expected, ev, kind, self.game, after_the_end=self.over and not self.expected)
            self._annotate(apb.STATUS_MISMATCH, [with_handling(violation, apb.HANDLING_IGNORED)], applied=False)
            return
        self._flush_expected(k)
        out = self.expected.popleft()
        wrong_scores = [] if scores is None or self.game is None else score_violations(self.game, scores)
        if out.rule is not None and same_outcome(out.event, ev, self.game):
            # A recorded outcome the rules do not give, taken into the game as it was played.
            v = mismatch(Outcome(out.rule, out.code), ev, kind)
            self._annotate(apb.STATUS_MISMATCH, [with_handling(v, apb.HANDLING_ADOPTED, "; adopted: the game goes "
                                                               "on with the recorded outcome")], applied=False)
        elif same_outcome(out.event, ev, self.game):
            if wrong_scores:
                self._annotate(apb.STATUS_MISMATCH, wrong_scores, applied=False)
            else:
                self._annotate(apb.STATUS_OK)
        else:
            v = mismatch(out, ev, kind)
            why = out.not_adopted or self._adopt_hp(out.event, ev, kind)
            if why == ADOPTED:
                v = with_handling(v, apb.HANDLING_ADOPTED, "; adopted: the game goes on with the recorded HP")
            else:
                v = with_handling(v, apb.HANDLING_KEPT_DERIVED, f"; not adopted: {why}" if why else "")
            self._annotate(apb.STATUS_MISMATCH, [v, *wrong_scores], applied=False)

    def _settle_chance(self, req: ChanceRequest, ev: pb.Event | None) -> bool:
        """Answer the engine's chance request: with what the recorded outcome ``ev`` says happened, when it
        stands for this chance (True: ``ev`` was used), else the rules' default."""
        game = self.game
        assert game is not None
        if isinstance(req, OrderChance):
            # One seat's simultaneous effects: the one the recorded event shows first (it is not used up by this).
            self._step(req.pick(ev))
            return False
        kind = ev.WhichOneof("kind") if ev is not None else None
        if isinstance(req, ShuffleRequest):
            seeded = self._seeded_order(req)
            if ev is None or kind != "reshuffle" or any(o.event.HasField("reshuffle") for o in self.expected):
                self._step(seeded)
                return False
            order = list(ev.reshuffle.order)
            if sorted(order) != sorted(req.cards):
                # Not a permutation of the discard pile: it cannot be; the seeded order goes on.
                self._step(seeded)
                self._mark_last("reshuffle", code="RESHUFFLE_MISMATCH",
                                not_adopted="it is not a permutation of the discard pile")
                return True
            self._step(order)
            if order != seeded and not self.recorded_reshuffles:
                rule = pb.Event()
                rule.reshuffle.order.extend(seeded)
                self._mark_last("reshuffle", rule=rule)
            return True
        if isinstance(req, DrawChance) and kind == "draw_cards" and ev is not None \
                and ev.draw_cards.seat == req.seat and ev.draw_cards.reason == req.reason:
            self._step(list(ev.draw_cards.cards))
            return True
        if isinstance(req, JudgeChance) and kind == "judgment" and ev is not None \
                and ev.judgment.seat == req.seat and ev.judgment.reason == req.reason:
            self._step(ev.judgment.card)
            return True
        self._step(None)
        return False

    def _mark_last(self, kind: str, code: str = "", rule: pb.Event | None = None, not_adopted: str = "") -> None:
        """Change the last derived outcome of ``kind`` (a reshuffle just answered)."""
        for o in reversed(self.expected):
            if o.event.HasField(kind):
                if code:
                    o.code = code
                o.rule = rule
                o.not_adopted = not_adopted
                return

    def _adopt_hp(self, derived: pb.Event, recorded: pb.Event, kind: str) -> str:
        """A recorded loss or gain of HP about the same character as the derived one, with another amount or HP
        after: take the recorded HP into the game (ADOPTED), unless it cannot be (why)."""
        game = self.game
        if kind not in ("damage", "lose_hp", "recover") or game is None:
            return ""
        d, r = getattr(derived, kind), getattr(recorded, kind)
        seat = d.target if kind == "damage" else d.seat
        if (r.target if kind == "damage" else r.seat) != seat:
            return ""
        p = game.players[seat]
        if r.hp_after == p.hp:
            return ""
        if r.hp_after > p.max_hp:
            return f"HP {r.hp_after} is above seat {seat}'s max HP {p.max_hp}"
        if (r.hp_after <= 0) != (p.hp <= 0):
            return (f"HP {r.hp_after} would {'end' if p.hp <= 0 else 'start'} dying, which the game already settled "
                    "the other way")
        p.hp = r.hp_after
        game.journal.append(f"('hp', {seat}, {p.hp})")
        return ADOPTED

    def _asks_the_dead(self, seat: int, kind: str) -> bool:
        """Is this decision the one a character makes after its death (断肠's ChooseOption), asked now, or one the
        mode lets the dead make (dark souls: Mode.dead_decisions; the mode judges it)?"""
        assert self.game is not None
        if kind in self.game.mode.dead_decisions:
            return True
        req = self.pending
        return kind == "choose_option" and isinstance(req, OptionRequest) and req.of_the_dead and req.seat == seat

    def _feed_decision(self, ev: pb.Event, kind: str, seat: int) -> None:
        game = self.game
        assert game is not None
        while isinstance(self.pending, ChanceRequest):
            # The log goes on with a decision: the draw, judgment or reshuffle due is the rules' own (of
            # simultaneous effects, the one this decision invokes goes first).
            self._settle_chance(self.pending, ev)
        if self.expected:
            self._flush_expected()
        if game.over and self.pending is None:
            self._annotate(apb.STATUS_ILLEGAL, [Violation("AFTER_GAME_OVER", f"the game is already over: "
                                                          f"{text.describe(ev)}", seat)], applied=False)
            return
        if not game.players[seat].alive and not self._asks_the_dead(seat, kind):
            # (the seat is at the table: _malformed_decision saw to it)
            self._reject([Violation("DEAD_PLAYER", f"seat {seat} is dead and cannot act: {text.describe(ev)}",
                                    seat)])
            return
        if kind in MODE_ONLY_KINDS and kind not in game.mode.decisions:
            self._reject([Violation("UNSUPPORTED_EVENT", f"{text.describe(ev)}: {MODE_ONLY_KINDS[kind]}", seat)])
            return
        if kind == "pick_general" and game.selection is None:
            why = ("there are no generals to pick in white-general mode" if game.prelude is None
                   else "the generals are already picked")
            self._reject([Violation("UNSUPPORTED_EVENT" if game.prelude is None else "WRONG_TIMING", why, seat)])
            return
        if kind == "invoke_skill" and game.players[seat].marks.get(ev.invoke_skill.skill) and \
                getattr(game.ruleset.effects.get(ev.invoke_skill.skill), "limited", False):
            self._reject([Violation("SKILL_LIMIT", f"{text.describe(ev)}: seat {seat} already used the limited skill "
                                    f"{ev.invoke_skill.skill} (once a game)", seat)])
            return
        if kind == "invoke_skill" and not game.has_effect(seat, ev.invoke_skill.skill) \
                and not self._borrows(seat, ev.invoke_skill.skill):
            # Effects are only gained by decisions: no later request could take this one either.
            missing = missing_skill(game, seat, ev.invoke_skill.skill)
            self._reject([missing or Violation("SKILL_NOT_AVAILABLE", f"{text.describe(ev)}: seat {seat} has no "
                                               "such equipment or skill", seat)])
            return
        while True:
            req = self.pending
            if req is None:
                self._annotate(apb.STATUS_ILLEGAL, [Violation("AFTER_GAME_OVER", "the game is already over",
                                                              seat)], applied=False)
                return
            if not game.players[seat].alive and not self._asks_the_dead(seat, kind):
                # The declines this decision implied let its maker die (nobody saved them).
                self._reject([Violation("DEAD_PLAYER", f"seat {seat} died before this decision (nobody saved "
                                        f"them): {text.describe(ev)}", seat)])
                return
            if req.fits(ev, kind, seat, self._card_name(ev, kind)) or self._tries_to_answer(req, ev, kind, seat):
                break
            if req.optional:
                self._step(None)
            elif req.has_default and not (seat == req.seat and (kind in PLAY_KINDS or kind == "sacrifice")) \
                    and not (kind in MODE_ONLY_KINDS and kind in game.mode.dead_decisions):
                self._unanswered()
            else:
                # (A play-phase action by the very seat the mandatory request waits on — a card
                # used in one's own discard phase — is that seat acting at the wrong time, not
                # the log going on without the answer; so is a decision of the dead that a mode
                # takes — a soul's act in a discard phase — whoever's request is open.)
                self._reject([self._wrong_timing(req, ev, kind, seat)])
                return
            while isinstance(self.pending, ChanceRequest):
                self._settle_chance(self.pending, ev)  # (no outcome of the log answers it: the rules' own)
            if self.expected:
                self._flush_expected()
        if self.on_decision is not None and kind != "decline" and self.pending is not None:
            self.on_decision(ev, self.pending)
        # An explicit decline reaches the engine as a decline (None), like an implicit one.
        violations, rejected = self._step(None if kind == "decline" else ev)
        if rejected:
            self.rejects_in_row += 1
            self._annotate(self._status_for(violations), violations, applied=False)
            self._check_followable()
        else:
            self.rejects_in_row = 0
            self._annotate(self._status_for(violations) if violations else apb.STATUS_OK, violations)

    def _borrows(self, seat: int, skill: str) -> bool:
        """Is a skill ``seat`` lacks carried out all the same (SKILL_NOT_OWNED, applied): an active skill in their
        own play phase whose effect the log records next (effects.borrowed_skill)?"""
        req = self.pending
        assert self.game is not None
        return isinstance(req, PlayRequest) and req.seat == seat and borrowed_skill(self.game, seat, skill) is not None

    def _tries_to_answer(self, req: Request, ev: pb.Event, kind: str, seat: int) -> bool:
        """A decision that does not fit ``req`` but can only be meant for it: the seat asked for a
        card offers one that no window that could follow would take (a 闪 in 决斗), or invokes an
        effect that gives cards when asked for them (八卦阵 under 青釭剑, or in 决斗). The engine then
        judges it (WRONG_CARD, SKILL_NOT_AVAILABLE) instead of it counting as a decline."""
        if isinstance(req, PeachRequest) and req.seat == seat and kind == "respond" \
                and ev.respond.HasField("target") and ev.respond.target == req.dying:
            return True  # a card offered to save this very character (酒 for another: WRONG_CARD)
        if req.seat != seat or not isinstance(req, (CardRequest, OfferRequest)):
            return False
        if kind == "respond":
            name = self._card_name(ev, kind)
            return (bool(req.answer_names()) and not ev.respond.HasField("target") and name is not None
                    and name not in LATER_WINDOW_CARDS)
        if kind == "invoke_skill" and isinstance(req, CardRequest):
            assert self.game is not None
            effect = self.game.ruleset.effects.get(ev.invoke_skill.skill)
            return effect is not None and bool(effect.provides)
        return False

    def _card_name(self, ev: pb.Event, kind: str) -> str | None:
        if kind != "respond":
            return None
        ref = ev.respond.card
        if ref.WhichOneof("kind") == "virtual":
            return ref.virtual.name
        assert self.game is not None
        card = self.game.cards.get(ref.id)
        return card.name if card else None

    def _unanswered(self) -> None:
        """A mandatory request with a default went unanswered: flag it where it happened."""
        violations, _ = self._step(UNANSWERED)
        if violations:
            self._annotate(self._status_for(violations), violations, applied=False, derived=pb.Event())

    def _wrong_timing(self, req: Request, ev: pb.Event, kind: str, seat: int) -> Violation:
        """The code for a decision made when nothing it could answer is asked: one kind of violation, one code,
        whoever's turn it is and whatever the game waits for (docs/codes.md#one-code)."""
        what = text.describe(ev)
        game = self.game
        assert game is not None
        if kind == "sacrifice":
            return Violation("SACRIFICE_TIMING", f"{what}: a sacrifice is made in the giver's own play phase; the game "
                             f"is waiting for {req.describe()}", seat)
        if kind in game.mode.decisions:
            own = game.mode.wrong_timing(game, kind, seat, what, req.describe())
            if own is not None:
                return own
        if kind == "reveal_general":
            return Violation("REVEAL_TIMING", f"{what}: a general is revealed at the start of its owner's start phase "
                             f"or for a skill that can be used now; the game is waiting for {req.describe()}", seat)
        if kind == "invoke_skill":
            name = ev.invoke_skill.skill
            eff = game.skill_of(seat, name)
            if eff is not None or any(e.name == name for e in game.players[seat].latent_skills):
                return Violation("SKILL_TIMING", f"{what}: {name} does not apply now; the game is waiting for "
                                 f"{req.describe()}", seat)
            if game.has_effect(seat, name):
                # (an equipment effect, as when it is invoked in one's own play phase: Ruleset.invoke_in_play)
                return Violation("SKILL_NOT_AVAILABLE", f"{what}: nothing asks for {name} now; the game is waiting "
                                 f"for {req.describe()}", seat)
        if kind in ("use_card", "end_play_phase"):
            if isinstance(req, PlayRequest) and seat != req.seat:
                return Violation("OUT_OF_TURN", f"{what}: it is seat {req.seat}'s play phase", seat)
            if seat != game.current:
                return Violation("OUT_OF_TURN", f"{what}: it is seat {game.current}'s turn, not seat {seat}'s play "
                                 f"phase (the game is waiting for {req.describe()})", seat)
        if isinstance(req, NullifyRequest):
            return Violation("WRONG_TIMING", f"{what}: only 无懈可击 can be played now", seat)
        return Violation("WRONG_TIMING", f"{what}: the game is waiting for {req.describe()}", seat)

    def _reject(self, violations: list[Violation]) -> None:
        self.rejects_in_row += 1
        self._annotate(self._status_for(violations), violations, applied=False)
        self._check_followable()

    def _check_followable(self) -> None:
        if self.rejects_in_row >= MAX_CONSECUTIVE_REJECTS:
            self.stopped_at = self.index + 1
            self.stopped_reason = (f"{MAX_CONSECUTIVE_REJECTS} decisions in a row fit nothing the game was "
                                   f"waiting for (from event {self.index + 1 - MAX_CONSECUTIVE_REJECTS}); "
                                   "the log cannot be followed further")

    # ------------------------------------------------------------------ the end

    def finish(self, log_sha256: str = "") -> apb.AnnotatedReplay:
        """Close the log: add outcomes derived after its last event and build the replay."""
        return self.finished(log_sha256).replay()

    def finished(self, log_sha256: str = "") -> Finished:
        """``finish`` in parts: the replay's summary (every field but the annotations), the annotations' wire
        form and the records, so a caller that stores or sends the replay needs no parse of the annotations
        (``Finished.encoded`` is the replay's canonical encoding, joined from the parts)."""
        if self.held is not None:
            self._feed_held(None)
        if self.stopped_at is None and self.game is not None:
            # The log has ended: every optional request left is declined, as it would be
            # by a following decision, so the game runs on to its next real decision or end.
            while self.pending is not None:
                if isinstance(self.pending, ChanceRequest):
                    self._settle_chance(self.pending, None)
                elif self.pending.optional:
                    self._step(None)
                else:
                    break
            self._flush_expected()
        replay = apb.AnnotatedReplay()
        codes: set[str] = set()
        count = 0
        derived = 0
        for rec in self.records:
            for v in rec[4]:
                codes.add(v.code)
                count += 1
            if rec[5] is not None:
                derived += 1
        for hv in self.header_violations:
            replay.header_violations.add(code=hv.code, message=hv.message, rule=CATALOGUE[hv.code].rule)
            codes.add(hv.code)
            count += 1
        replay.violation_count = count
        replay.violation_codes.extend(sorted(codes))
        for notice in self.header_notices:
            replay.header_notices.add(code=notice.code, message=notice.message, rule=NOTICES[notice.code].rule)
        replay.followed = self.stopped_at is None
        if self.stopped_at is not None:
            replay.stopped_at = self.stopped_at
            replay.stopped_reason = self.stopped_reason
        res = replay.result
        game = self.game
        if game is not None and game.result is not None:
            res.finished = True
            res.side = game.result.side  # type: ignore[assignment]
            res.winners.extend(sorted(game.result.winners))
            res.reason = game.result.reason
            for score in game.result.scores:
                res.scores.add(seat=score.seat, score=score.score, basis=score.basis)
        elif self.pending is not None:
            res.reason = f"the log ends while the game waits for {self.pending.describe()}"
        else:
            res.reason = self.stopped_reason or "the game did not start"
        replay.final_digest = self.digest
        # (one annotation per log event judged, and one per derived outcome: those are all records)
        return Finished(engine_version(), log_sha256, replay, bytes(self.wire), self.index + derived, self.records)


# index, status, applied, digest, violations, the derived event (None: the log's own), and the decision's source
# (Event.source, 0 for an outcome or a derived annotation).
Record = tuple[int, int, bool, bytes, tuple[Violation, ...], "pb.Event | None", int]


@dataclass(frozen=True, slots=True)
class Finished:
    """A finished verification in parts (Verifier.finished): the replay is ``summary`` with
    ``engine_version``, ``log_sha256`` and the annotations (``annotations``, their wire form as
    AnnotatedReplay.annotations) added."""

    engine_version: str
    log_sha256: str
    summary: apb.AnnotatedReplay  # every field but engine_version, log_sha256 and the annotations
    annotations: bytes
    annotation_count: int
    records: list[Record]  # the annotations with violations or a derived event, in order

    def _head(self) -> bytes:
        return apb.AnnotatedReplay(engine_version=self.engine_version,
                                   log_sha256=self.log_sha256).SerializeToString(deterministic=True)

    def encoded(self) -> bytes:
        """The replay's canonical encoding (fields in number order: 1–2, the annotations (3), then the rest),
        the same bytes as ``replay().SerializeToString(deterministic=True)``."""
        return self._head() + self.annotations + self.summary.SerializeToString(deterministic=True)

    def summary_encoded(self) -> bytes:
        """The encoding of the replay without its annotations (what a summary-only answer holds)."""
        return self._head() + self.summary.SerializeToString(deterministic=True)

    def replay(self) -> apb.AnnotatedReplay:
        replay = apb.AnnotatedReplay(engine_version=self.engine_version, log_sha256=self.log_sha256)
        replay.MergeFromString(self.annotations)
        replay.MergeFrom(self.summary)
        return replay


ADOPTED = "adopted"  # _adopt_hp's answer when it took the recorded HP


def with_handling(v: Violation, handling: int, note: str = "") -> Violation:
    """The violation, saying what became of the outcome it is about (and why, in its message)."""
    return Violation(v.code, v.message + note, v.seat, v.card, v.hard, handling)


def fill_annotation(ann: apb.Annotation, rec: Record) -> apb.Annotation:
    index, status, applied, digest, violations, derived, source = rec
    ann.index = index
    ann.status = status  # type: ignore[assignment]
    ann.applied = applied
    ann.digest = digest
    if source:
        ann.source = source  # type: ignore[assignment]
    if derived is not None:
        ann.derived = True
        ann.event.CopyFrom(derived)
    for v in violations:
        handling = v.handling or (apb.HANDLING_DERIVED if derived is not None and status == apb.STATUS_MISMATCH
                                  else apb.HANDLING_APPLIED if applied else apb.HANDLING_REJECTED)
        out = ann.violations.add(code=v.code, message=v.message, rule=CATALOGUE[v.code].rule,
                                 handling=handling)
        if v.seat is not None:
            out.seat = v.seat
        if v.card is not None:
            out.card = v.card
    return ann


def annotation_message(rec: Record) -> apb.Annotation:
    return fill_annotation(apb.Annotation(), rec)


# AnnotatedReplay.annotations (field 3), and the fields of an Annotation, as wire-format tags.
_ANNOTATIONS_TAG = 0x1A
_INDEX_TAG, _STATUS_TAG, _APPLIED_TAG, _DIGEST_TAG, _SOURCE_TAG = 0x08, 0x20, 0x30, 0x3A, 0x40


def _plain_tail(status: int, applied: bool) -> bytes:
    """status, applied, and the digest's tag and length: what follows the index."""
    return ((bytes((_STATUS_TAG,)) + varint(status) if status else b"")
            + (bytes((_APPLIED_TAG, 1)) if applied else b"") + bytes((_DIGEST_TAG, DIGEST_SIZE)))


# By status * 2 + applied, for every status there is.
_PLAIN_TAILS = [_plain_tail(status, bool(applied)) for status in range(max(apb.Status.values()) + 1)
                for applied in (0, 1)]


def plain_head(index: int, status: int, applied: bool) -> bytes:
    """The wire form of a plain annotation (no violations, no derived event) up to its digest: the
    annotations tag and length, then index, status, applied and the digest's tag and length."""
    tail = _PLAIN_TAILS[status * 2 + applied]
    index_field = bytes((_INDEX_TAG,)) + varint(index) if index else b""
    # The body is at most 6 + 6 + 18 bytes: its length takes one byte.
    return bytes((_ANNOTATIONS_TAG, len(index_field) + len(tail) + DIGEST_SIZE)) + index_field + tail


# plain_head(index, STATUS_OK, True) by index, made as logs reach each index (most annotations are
# these; up to 2**14 indices, about 1 MB at most).
_OK_HEADS: list[bytes] = []
_OK_HEADS_MAX = 1 << 14


def ok_head(index: int) -> bytes:
    """plain_head(index, STATUS_OK, True), from _OK_HEADS where it can be."""
    if index < len(_OK_HEADS):
        return _OK_HEADS[index]
    if index >= _OK_HEADS_MAX:
        return plain_head(index, apb.STATUS_OK, True)
    _OK_HEADS.extend(plain_head(i, apb.STATUS_OK, True) for i in range(len(_OK_HEADS), index + 1))
    return _OK_HEADS[index]


def write_plain(out: bytearray, index: int, status: int, applied: bool, digest: bytes, source: int = 0) -> None:
    """Append a plain annotation (no violations, no derived event) to ``out`` in wire form, written
    directly: it parses to the message ``annotation_message`` builds (tests/test_replay_encoding.py).
    ``source``: the decision's Event.source, written after the digest (field 8) when set."""
    if len(digest) != DIGEST_SIZE or not 0 <= status < len(_PLAIN_TAILS) // 2 or not 0 <= source < 0x80:
        write_annotation(out, (index, status, applied, digest, (), None, source), plain=False)
        return
    head = ok_head(index) if status == apb.STATUS_OK and applied else plain_head(index, status, applied)
    if source:
        # (the body grows by the source's tag and one-byte value: its length still takes one byte)
        out += bytes((_ANNOTATIONS_TAG, head[1] + 2))
        out += head[2:]
        out += digest
        out += bytes((_SOURCE_TAG, source))
        return
    out += head
    out += digest


def write_annotation(out: bytearray, rec: Record, plain: bool = True) -> None:
    """Append any annotation to ``out`` in wire form (one with violations or a derived event through
    the protobuf API; ``plain``: a plain one through write_plain)."""
    index, status, applied, digest, violations, derived, source = rec
    if plain and not violations and derived is None:
        write_plain(out, index, status, applied, digest, source)
        return
    body = annotation_message(rec).SerializeToString(deterministic=True)
    out += bytes((_ANNOTATIONS_TAG,))
    out += varint(len(body))
    out += body


def encode_annotations(records: Iterable[Record]) -> bytearray:
    """The records as the wire form of ``AnnotatedReplay.annotations`` (to merge into a replay).
    Parsing the result gives exactly the messages ``annotation_message`` builds
    (tests/test_replay_encoding.py)."""
    out = bytearray()  # grown in place: no list of small pieces to hold alongside
    for rec in records:
        write_annotation(out, rec)
    return out


def parse_annotations(wire: bytes | bytearray) -> list[apb.Annotation]:
    """The annotations of a wire form written by write_plain and write_annotation, as messages."""
    return list(apb.AnnotatedReplay.FromString(bytes(wire)).annotations)


SEAT_FIELDS = frozenset({"seat", "target", "targets", "source", "killer", "from_seat", "to_seat", "winners"})
CARD_FIELDS = frozenset({"id", "card", "cards", "subcards", "order"})


def event_seats_and_cards(msg: Message) -> tuple[list[int], list[int]]:
    """Every seat number and card id an event's message names (set fields only)."""
    seats: list[int] = []
    cards: list[int] = []
    for fd, value in msg.ListFields():
        if fd.message_type is not None:
            for sub in (value if fd.is_repeated else [value]):
                s2, c2 = event_seats_and_cards(sub)
                seats += s2
                cards += c2
        elif fd.name in SEAT_FIELDS or fd.name in CARD_FIELDS:
            values = list(value) if fd.is_repeated else [value]
            (seats if fd.name in SEAT_FIELDS else cards).extend(values)
    return seats, cards


def score_violations(game: Game, recorded: list[int]) -> list[Violation]:
    """[SCORE_MISMATCH] when the recorded scores (one per seat) are not the rules' (docs/rules.md#scoring); the
    rules' scores stand."""
    if game.result is None:
        return []
    rules = [s.score for s in game.result.scores]
    if recorded == rules:
        return []
    if not rules:
        return [with_handling(Violation("SCORE_MISMATCH", f"the log records scores {recorded}, but this game is "
                                        "not scored (only identity games are)"), apb.HANDLING_IGNORED)]
    if len(recorded) != len(rules):
        detail = f"the log records {len(recorded)} score(s) {recorded} for the {len(rules)} seats"
    else:
        wrong = [f"seat {i} {r} (the rules give {w}: {game.result.scores[i].basis})"
                 for i, (r, w) in enumerate(zip(recorded, rules, strict=True)) if r != w]
        detail = "recorded scores differ: " + "; ".join(wrong)
    return [with_handling(Violation("SCORE_MISMATCH", f"{detail}; the rules' scores are {rules}"),
                          apb.HANDLING_KEPT_DERIVED)]


def completed(log: pb.GameLog, replay: apb.AnnotatedReplay) -> pb.GameLog:
    """The log with every derived outcome put in its place: the canonical complete form."""
    out = pb.GameLog()
    out.header.CopyFrom(log.header)
    out.header.options.outcomes = pb.OUTCOME_RECORDING_COMPLETE
    for ann in replay.annotations:
        if not ann.derived:
            out.events.append(log.events[ann.index])
        elif ann.event.WhichOneof("kind") is not None:
            out.events.append(ann.event)
    return out


def verify(log: pb.GameLog, ruleset: Ruleset | None = None) -> apb.AnnotatedReplay:
    """Verify a whole log: the annotated replay (violations are results, never exceptions)."""
    v = Verifier(log.header, ruleset)
    v.follow(log.events)
    return v.finish(hashlib.sha256(log.SerializeToString(deterministic=True)).hexdigest())
