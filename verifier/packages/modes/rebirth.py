"""The rebirth variant of identity mode (转世, docs/rules.md#rebirth) as a package: a dead character stays at
the table, the living give it hand cards as sacrifices (献祭), and once it holds enough it is reborn as the
first unused general of its kingdom in a seeded order, at 1 HP. A reborn character plays on but counts as dead
for victory, and its death gives no reward or penalty. identity.new_game takes this mode when the header sets
``options.rebirth``; everything else is identity mode's.
"""

from __future__ import annotations

from typing import ClassVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import Game, Settle, Violation
from verifier.engine.requests import Answer, PlayRequest, Request
from verifier.generals import standard_generals
from verifier.packages.modes.identity import IdentityMode, assign_general
from verifier.rng import shuffled

REBIRTH_HP = 1


def sacrifices_needed(players: int) -> int:
    """docs/rules.md#rebirth-general: 4 sacrifices, 3 in games of 4 or 5 players."""
    return 3 if players <= 5 else 4


def stream_label(k: int) -> str:
    """The seeded stream of the game's k-th rebirth (k = 1, 2, ...: docs/rng.md#rebirth)."""
    return f"rebirth/{k}"


def unused_generals(game: Game) -> list[str]:
    """docs/rules.md#rebirth-general (R-8): the standard generals nobody plays now, in table order. A dead
    character's general is back among them."""
    playing = {p.general for p in game.players if p.alive}
    return [g for g in standard_generals() if g not in playing]


def turned_general(game: Game, k: int, kingdom: str) -> str | None:
    """The general the k-th rebirth turns: the unused generals shuffled by its stream and turned from the top
    until the first of ``kingdom`` (R-2: only that kingdom's); None when none of them is of it."""
    generals = standard_generals()
    order = shuffled(game.seed, stream_label(k), unused_generals(game))
    return next((g for g in order if generals[g].kingdom == kingdom), None)


class RebirthMode(IdentityMode):
    """Identity mode with rebirth: the sacrifice decision, the rebirth, and victory, rewards and penalties that
    treat a reborn character as dead."""

    intercepts = True
    decisions: ClassVar[frozenset[str]] = frozenset({"sacrifice"})

    def __init__(self) -> None:
        # Seats reborn at least once (they may never sacrifice, R-1), each with the generals it was reborn as.
        self.reborn: dict[int, list[str]] = {}
        self.closed: set[int] = set()  # dead seats for which no general of their kingdom was left
        self.rebirths = 0  # rebirths due so far (each draws from its own stream)

    # ------------------------------------------------------------------ what a reborn character counts as

    def is_reborn(self, seat: int) -> bool:
        return seat in self.reborn

    def seat_rebirths(self, game: Game, seat: int) -> tuple[str, ...]:
        return tuple(self.reborn.get(seat, ()))

    def alive_for_victory(self, game: Game, seat: int) -> bool:
        """docs/rules.md#rebirth-victory: a reborn character still counts as dead for victory (R-7)."""
        return game.players[seat].alive and seat not in self.reborn

    def reward_or_penalty(self, game: Game, victim: int, killer: int | None) -> Settle[None]:
        """docs/rules.md#rebirth-victory (R-6): a reborn victim gives no reward and no penalty; a reborn killer is
        rewarded and penalised as usual."""
        if victim in self.reborn:
            return
        yield from super().reward_or_penalty(game, victim, killer)

    # ------------------------------------------------------------------ the sacrifice

    def intercept(self, game: Game, request: Request, answer: Answer) -> Settle[bool]:
        """A Sacrifice is the mode's own decision: judged and carried out here, then the same request (the
        giver's play phase) is asked again."""
        if not isinstance(answer, pb.Event) or not answer.HasField("sacrifice"):
            return False
        s = answer.sacrifice
        if game.report(self.verify_sacrifice(game, request, s)):
            return True
        yield from self.sacrifice(game, s.seat, s.target, s.card)
        return True

    def can_sacrifice(self, game: Game, request: Request, seat: int) -> bool:
        """May ``seat`` make a sacrifice now (to some dead character that takes one)?"""
        return not self.why_not_giver(game, request, seat)

    def why_not_giver(self, game: Game, request: Request, seat: int) -> list[Violation]:
        """What keeps ``seat`` from sacrificing now, whatever the target and the card."""
        p = game.players[seat]
        if not isinstance(request, PlayRequest) or request.seat != seat:
            return [Violation("SACRIFICE_TIMING", f"seat {seat} can sacrifice only in their own play phase (the game "
                              f"is waiting for {request.describe()})", seat, hard=True)]
        if seat in self.reborn:
            return [Violation("SACRIFICE_BY_REBORN", f"seat {seat} was reborn and may not sacrifice", seat,
                              hard=True)]
        if p.turn_flags.get("sacrificed"):
            return [Violation("SACRIFICE_LIMIT", f"seat {seat} already made a sacrifice this turn (at most one a "
                              "turn)", seat, hard=True)]
        return []

    def takes_sacrifice(self, game: Game, target: int) -> bool:
        """Is ``target`` a dead character that still takes sacrifices?"""
        return not game.players[target].alive and target not in self.closed

    def verify_sacrifice(self, game: Game, request: Request, s: pb.Sacrifice) -> list[Violation]:
        """docs/rules.md#rebirth-sacrifice: the giver's own play phase, once a turn, never by a reborn character,
        to a dead character that takes sacrifices, with a card of the giver's hand. The first problem found."""
        seat, target = s.seat, s.target
        problems = self.why_not_giver(game, request, seat)
        if problems:
            return problems
        if target == seat or game.players[target].alive:
            who = "themself" if target == seat else f"seat {target}, who is alive"
            return [Violation("SACRIFICE_TARGET", f"seat {seat} sacrifices to {who}: only a dead character takes "
                              "sacrifices", seat, hard=True)]
        if target in self.closed:
            return [Violation("SACRIFICE_TARGET", f"dead seat {target} takes no more sacrifices: no unused general "
                              f"of its kingdom ({game.players[target].kingdom}) was left", seat, hard=True)]
        return game.verify_own_cards(seat, [s.card], zones=("hand",))

    def sacrifice(self, game: Game, seat: int, target: int, card: int) -> Settle[None]:
        """The card goes to the dead character's hand; with enough there, the rebirth follows at once."""
        game.players[seat].turn_flags["sacrificed"] = 1
        game.journal.append(f"('sacrifice', {seat}, {target})")
        yield from game.to_hand(target, [card])
        if len(game.players[target].hand) >= sacrifices_needed(game.n):
            self.rebirth(game, target)

    # ------------------------------------------------------------------ the rebirth

    def rebirth(self, game: Game, seat: int) -> None:
        """docs/rules.md#rebirth-general: the first unused general of the dead general's kingdom (R-3) in this
        rebirth's seeded order, its max HP (no lord bonus, no lord skill: R-4), HP 1; the sacrifices are its hand.
        With none of that kingdom left there is no rebirth: the character keeps the cards and takes no more."""
        p = game.players[seat]
        self.rebirths += 1
        general = turned_general(game, self.rebirths, p.kingdom)
        if general is None:
            self.closed.add(seat)
            game.journal.append(f"('no_rebirth', {seat})")
            return
        game.revive(seat)
        self.reborn.setdefault(seat, []).append(general)
        for mark in sorted(p.marks):
            game.set_mark(seat, mark, 0)  # a new character: nothing of the dead one's state stays
        p.slash_count = 0
        p.skill_uses.clear()
        p.turn_flags.clear()
        assign_general(game, seat, general)
        p.hp = REBIRTH_HP
        game.journal.append(f"('rebirth', {seat}, {general!r}, {p.max_hp})")
        ev = pb.Event()
        r = ev.rebirth
        r.seat = seat
        r.general = general
        r.max_hp = p.max_hp
        r.hp_after = p.hp
        game.emit(ev, "REBIRTH_MISMATCH")
