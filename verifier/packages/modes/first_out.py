"""Seed 003's first-out protection (docs/rules.md#first-out-protection) as a house rule on identity mode's hooks:
the player who went out first in the tournament's previous game (``options.protected_seat``) has its last HP
protected until the game's first death, except against a character it attacked (house_rules.py composes it with
the other house rules of the header).
"""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import Game, Settle, Violation
from verifier.packages.modes import house_rules
from verifier.packages.modes.identity import IdentityMode

# P-3: the cards whose use attacks their targets: every 杀 (also 火杀, 雷杀), 决斗 and the tricks that deal damage.
ATTACKING_TRICKS = frozenset({"duel", "savage_assault", "archery_attack", "fire_attack"})


def attacks(card_name: str) -> bool:
    """Does using this card attack its targets (P-3)?"""
    return card_name.endswith("slash") or card_name in ATTACKING_TRICKS


class FirstOutProtection(IdentityMode):
    """The protection: every HP change of the protected character goes through ``hp_change``, which keeps it at
    1 HP at least (P-1) until the first death (P-2), unless the damage comes from a character it attacked (P-3);
    ``card_used`` and ``hp_change`` note whom it attacked."""

    hp_hook = True
    use_hook = True

    def __init__(self) -> None:
        super().__init__()
        self.protected: int | None = None  # the protected seat (options.protected_seat), set by ``configure``
        self.ended = False  # P-2: a character died
        self.attacked: set[int] = set()  # P-3: the characters the protected one attacked so far
        # The protected character's HP changes dealt so far, and of them those the protection reduced (their
        # number, from 1, and the amount prevented): for self-play's checks and the cheat finders, not the rules.
        self.changes = 0
        self.reduced: dict[int, int] = {}
        self.prevented: list[int | None] = []  # the source of each change the protection prevented in full

    def configure(self, options: pb.GameOptions) -> None:
        super().configure(options)
        self.protected = options.protected_seat if options.HasField("protected_seat") else None

    def protects(self, seat: int, source: int | None) -> bool:
        """Is ``seat``'s last HP protected now against a change from ``source`` (None: no source)?"""
        return (seat == self.protected and not self.ended
                and (source is None or source not in self.attacked))

    def note_attack(self, game: Game, target: int) -> None:
        if target != self.protected and target not in self.attacked:
            self.attacked.add(target)
            game.journal.append(f"('attacked', {target})")

    # ------------------------------------------------------------------ P-3: whom the protected one attacked

    def card_used(self, game: Game, user: int, card_name: str, targets: tuple[int, ...]) -> None:
        super().card_used(game, user, card_name, targets)
        if user == self.protected and attacks(card_name):
            for t in targets:
                self.note_attack(game, t)

    # ------------------------------------------------------------------ P-1: the last HP

    def hp_change(self, game: Game, seat: int, amount: int, source: int | None, is_damage: bool
                  ) -> Settle[tuple[int, str]]:
        """P-1: damage or an HP loss that would take the protected character below 1 HP takes it to 1 (the rest
        is prevented; nothing at all at 1 HP). Every change that would take it below 1 HP carries
        PROTECTION_MISMATCH, protected or not (P-2, P-3): a log that records it otherwise has the protection
        wrong. Damage the protected character deals marks its target as attacked (P-3)."""
        amount, code = yield from super().hp_change(game, seat, amount, source, is_damage)
        if is_damage and source is not None and source == self.protected and amount > 0:
            self.note_attack(game, seat)
        if seat == self.protected and amount > 0 and game.players[seat].hp - amount < 1:
            code = "PROTECTION_MISMATCH"
            if self.protects(seat, source):
                full, amount = amount, max(game.players[seat].hp - 1, 0)
                game.journal.append(f"('protected', {seat}, {amount})")
                if amount > 0:
                    self.reduced[self.changes + 1] = full - amount
                else:
                    self.prevented.append(source)
        if seat == self.protected and amount > 0:
            self.changes += 1
        return amount, code

    def keeps_code_when_missing(self, code: str) -> bool:
        """A complete log that leaves out a change of the protected character's HP that the protection has a say
        in has the protection wrong: PROTECTION_MISMATCH."""
        return code == "PROTECTION_MISMATCH" or super().keeps_code_when_missing(code)

    # ------------------------------------------------------------------ P-2: the first death ends it

    def death_revealed(self, game: Game, seat: int) -> Settle[None]:
        yield from super().death_revealed(game, seat)
        if not self.ended:
            self.ended = True
            game.journal.append("('protection_ends',)")

    def unexpected_outcome(self, game: Game, ev: pb.Event, kind: str) -> Violation | None:
        """Damage or an HP loss of the protected character the rules do not give: it was at 1 HP and protected,
        so the whole of it was prevented (P-1)."""
        if kind in ("damage", "lose_hp") and self.protected is not None:
            seat = ev.damage.target if kind == "damage" else ev.lose_hp.seat
            source = ev.damage.source if kind == "damage" and ev.damage.HasField("source") else None
            if seat == self.protected and self.protects(seat, source) and game.players[seat].hp == 1:
                return Violation("PROTECTION_MISMATCH", f"seat {seat} is protected at 1 HP: this "
                                 f"{'damage' if kind == 'damage' else 'HP loss'} is prevented in full "
                                 "(docs/rules.md#first-out-protection, P-1)", seat)
        return super().unexpected_outcome(game, ev, kind)


house_rules.register(house_rules.HouseRule(option="protected_seat", enabled=lambda o: o.HasField("protected_seat"),
                                           mode=FirstOutProtection, order=1))
