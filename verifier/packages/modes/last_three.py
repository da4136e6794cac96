"""Seed 003's last-three clock (docs/rules.md#last-three-clock) as a house rule on identity mode's hooks: once only
three characters are left, the game has three more rounds; from the fourth on, every round begins with the drain,
in which every living character loses 1 HP. ``options.last_three_clock`` turns it on (house_rules.py composes it
with the other house rules of the header).
"""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import Game, Settle, Violation
from verifier.packages.modes import house_rules
from verifier.packages.modes.identity import IdentityMode

# T-1: the rounds played normally after the round in which three were left; the drain begins with the next one.
GRACE_ROUNDS = 3
# T-2: what each living character loses in a drain.
DRAIN_HP = 1


class LastThreeClock(IdentityMode):
    """The clock: notes the round in which the living count first fell to three (T-1) and drains every living
    character at the start of each round from the fourth after it (T-2), settling each one's dying in turn, with
    victory judged after each death as usual (T-3)."""

    round_hook = True
    hp_hook = True

    def __init__(self) -> None:
        super().__init__()
        self.three_left_round: int | None = None  # R (T-1): None until only three are alive
        self.draining = False  # a drain's HP losses are being dealt (their outcomes carry DRAIN_MISMATCH)
        self.round_turn = 0  # the number the turn that began the current round has (or will have)
        self.drains = 0  # drains so far

    def drain_round(self) -> int | None:
        """The first round that begins with a drain (R + 4), None while three have not been left yet."""
        return None if self.three_left_round is None else self.three_left_round + GRACE_ROUNDS + 1

    # ------------------------------------------------------------------ T-1: when three are left

    def death_revealed(self, game: Game, seat: int) -> Settle[None]:
        """After each Death outcome (the death's settlement changes nobody else's being alive): the round in which
        only three were alive for the first time (T-1)."""
        yield from super().death_revealed(game, seat)
        if self.three_left_round is None and len(game.alive_seats()) <= 3:
            self.three_left_round = game.round_number
            game.journal.append(f"('three_left', {game.round_number})")

    # ------------------------------------------------------------------ T-2, T-3: the drain

    def round_begins(self, game: Game, round_number: int) -> Settle[None]:
        yield from super().round_begins(game, round_number)
        self.round_turn = game.turn_number + 1
        first = self.drain_round()
        if first is not None and round_number >= first:
            yield from self.drain(game)

    def drain(self, game: Game) -> Settle[None]:
        """T-2: every living character loses 1 HP at once (no source: an HP loss), in seat order from the lord;
        then each at 0 HP or less goes through dying, one at a time in the same order (T-3: victory is judged after
        each death, in Game.die). The drain is nobody's turn: the lord stands as the current player, so rescue (and
        any skill answering a dying) goes round from the lord, as the drain itself does."""
        lord = self.first_seat(game)
        game.current = lord
        seats = game.alive_seats(lord)
        game.journal.append(f"('drain', {game.round_number})")
        self.drains += 1
        self.draining = True
        try:
            for seat in seats:
                yield from game.lose_hp(seat, DRAIN_HP, dying_now=False)
        finally:
            self.draining = False
        for seat in seats:
            p = game.players[seat]
            if p.alive and p.hp <= 0:
                yield from game.dying(seat, killer=None)

    def hp_change(self, game: Game, seat: int, amount: int, source: int | None, is_damage: bool
                  ) -> Settle[tuple[int, str]]:
        """A drain's HP loss is the drain's outcome (DRAIN_MISMATCH when recorded otherwise), unless another house
        rule changed it and says why (first-out protection)."""
        amount, code = yield from super().hp_change(game, seat, amount, source, is_damage)
        if self.draining and not code:
            code = "DRAIN_MISMATCH"
        return amount, code

    def keeps_code_when_missing(self, code: str) -> bool:
        """A drain's HP loss left out of a complete log is a skipped drain (docs/log-format.md#last-three-clock)."""
        return code == "DRAIN_MISMATCH" or super().keeps_code_when_missing(code)

    def unexpected_outcome(self, game: Game, ev: pb.Event, kind: str) -> Violation | None:
        """A recorded HP loss the rules do not give, at the beginning of a round (its first turn, or just before
        it): a drain where none is due (T-1)."""
        if kind == "lose_hp" and game.turn_number in (self.round_turn - 1, self.round_turn):
            first = self.drain_round()
            if first is None:
                why = "none is due: more than three characters have been alive all game"
            elif game.round_number < first:
                why = (f"none is due: only three were left in round {self.three_left_round}, so the drain begins with "
                       f"round {first}")
            else:
                why = "the round's drain takes 1 HP from each living character once"
            return Violation("DRAIN_MISMATCH", f"a drain's HP loss recorded at the start of round {game.round_number}, "
                             f"where the rules give none: {why} (docs/rules.md#last-three-clock, T-1, T-2)",
                             ev.lose_hp.seat)
        return super().unexpected_outcome(game, ev, kind)


house_rules.register(house_rules.HouseRule(option="last_three_clock", enabled=lambda o: o.last_three_clock,
                                           mode=LastThreeClock, order=0))
