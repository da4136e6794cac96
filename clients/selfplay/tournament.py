"""Self-play with seed 003's tournament house rules that need no decision of their own: the last-three clock
(options.last_three_clock) and first-out protection (options.protected_seat). Their games are identity games
played by identity mode's bots (white generals: RandomBot; standard generals: GeneralsBot): the drain and the
protection are the engine's, so the bots' legal decisions stay legal, and every outcome they bring is recorded.
With protection the bots hunt the protected character (``Hunting``: an attack of theirs is often turned on it, where
the rules let it be), so that games reach its last HP and the protection has something to do. A header with
neither rule is the plain identity header of the same seed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from clients.selfplay.base import RandomBot, make_bot, play
from clients.selfplay.generals import GeneralsBot
from clients.selfplay.identity import make_header
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Use, UsedCard
from verifier.engine.game import Game
from verifier.engine.requests import PlayRequest
from verifier.packages.modes.first_out import FirstOutProtection, attacks
from verifier.rng import Stream

# The stream that names the protected seat of a self-play game (``SEEDED``): the previous game of a tournament is
# not played here, so who went out first in it is drawn from the seed.
PROTECTED_STREAM = "selfplay/protected"
SEEDED = -1


@dataclass(frozen=True, slots=True)
class HouseRules:
    """The house rules a self-play game is played with: the clock, and the protected seat (None: nobody; SEEDED:
    a seat drawn from the game's seed by PROTECTED_STREAM)."""

    last_three_clock: bool = False
    protected_seat: int | None = None

    def __bool__(self) -> bool:
        return self.last_three_clock or self.protected_seat is not None

    def describe(self) -> str:
        on = (["the last-three clock"] if self.last_three_clock else []) + (
            [] if self.protected_seat is None
            else ["a seeded protected seat" if self.protected_seat == SEEDED
                  else f"seat {self.protected_seat} protected"])
        return " and ".join(on)


def protected_seat(seed: int, players: int, rules: HouseRules) -> int | None:
    """The protected seat of the game ``seed`` with ``players`` under ``rules`` (raises ValueError for a seat that
    is not at the table)."""
    seat = rules.protected_seat
    if seat == SEEDED:
        return Stream(seed, PROTECTED_STREAM).below(players)
    if seat is not None and not 0 <= seat < players:
        raise ValueError(f"protected seat {seat} is not at a {players}-seat table")
    return seat


def tournament_header(seed: int, players: int, rules: HouseRules, role_variant: int = pb.ROLE_VARIANT_STANDARD,
                      packages: Sequence[str] = (), generals: bool = False) -> pb.GameHeader:
    """The identity self-play header of the seed, with ``rules`` set in its options."""
    header = make_header(seed, players, role_variant, packages, generals)
    header.options.last_three_clock = rules.last_three_clock
    seat = protected_seat(seed, players, rules)
    if seat is not None:
        header.options.protected_seat = seat
    return header


# How often (percent) a bot turns an attack of its own on the protected character instead, where it can.
HUNT_PERCENT = 60


class Hunting(RandomBot):
    """A mixin over a mode's bot: an attack with a real card on one target (杀, 决斗, 火攻) is often turned on the
    protected character instead, when the rules let that card take it as its target (checked as the bot checks its
    own choices, and no skill of the target's forbids it: 空城)."""

    def play(self, game: Game, req: PlayRequest) -> pb.Event:
        ev = super().play(game, req)
        mode = game.mode
        if not isinstance(mode, FirstOutProtection) or mode.protected is None or not ev.HasField("use_card"):
            return ev
        use = ev.use_card
        target = mode.protected
        if use.card.WhichOneof("kind") != "id" or len(use.targets) != 1 or use.targets[0] == target \
                or use.seat == target or not game.players[target].alive:
            return ev
        card = game.cards[use.card.id]
        spec = game.ruleset.cards.get(card.name)
        if spec is None or not attacks(card.name):
            return ev
        used = UsedCard(card.name, (card.id,), card.suit, card.color, card.number, real=card)
        if game.prohibited(use.seat, target, card.name) is None and spec.can_use(game, Use(use.seat, used, (target,))) \
                and self.chance(HUNT_PERCENT):
            del use.targets[:]
            use.targets.append(target)
        return ev


class HuntingBot(Hunting, RandomBot):
    """The white-general games' bot, hunting the protected character."""


class HuntingGeneralsBot(Hunting, GeneralsBot):
    """The standard-generals games' bot, hunting the protected character."""


def tournament_bot(header: pb.GameHeader) -> RandomBot:
    """The bot of a game with these house rules: identity mode's, hunting the protected character when there is
    one."""
    if not header.options.HasField("protected_seat"):
        return make_bot(header)
    rng = Stream(header.seed, "bots")
    return HuntingGeneralsBot(rng) if header.options.generals == pb.GENERALS_MODE_STANDARD else HuntingBot(rng)


def play_tournament_game(seed: int, players: int, rules: HouseRules, role_variant: int = pb.ROLE_VARIANT_STANDARD,
                         packages: Sequence[str] = (), generals: bool = False) -> pb.GameLog:
    """One complete self-play identity game under ``rules`` (its bot: ``tournament_bot``, from the "bots" stream)."""
    header = tournament_header(seed, players, rules, role_variant, packages, generals)
    return play(header, tournament_bot(header))


def drains(log: pb.GameLog) -> list[int]:
    """Where each drain of a game with the clock begins in its complete log: the first of a run of two or more
    HP losses (a drain takes 1 HP from every living character, and at least two are alive; 苦肉's loss comes
    alone)."""
    events = log.events
    starts = []
    for i, ev in enumerate(events):
        if ev.HasField("lose_hp") and not (i and events[i - 1].HasField("lose_hp")) \
                and i + 1 < len(events) and events[i + 1].HasField("lose_hp"):
            starts.append(i)
    return starts


__all__ = ["SEEDED", "HouseRules", "drains", "play_tournament_game", "protected_seat", "tournament_bot",
           "tournament_header"]
