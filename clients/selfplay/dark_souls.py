"""Self-play with seed 003's dark souls (暗魂, options.dark_souls): the generals bot (random legal play, with or without
generals), which also decides for the dead: each dead loyalist, rebel or spy possesses a random living character, a
罗汉 sometimes takes its offer to prevent 1 damage, and a 玄武 or 游助 sometimes acts while a play phase waits for an
action (a 游助 only in its host's own) — each soul at most once, as the rules allow."""

from __future__ import annotations

from collections.abc import Sequence

from clients.selfplay.base import make_bot, play, register_bot
from clients.selfplay.generals import GeneralsBot
from clients.selfplay.identity import make_header as identity_header
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Ruleset
from verifier.engine.game import Game
from verifier.engine.requests import ModeRequest, PlayRequest, Request
from verifier.packages.modes.dark_souls import XUANWU, DarkSouls

# How often a soul that may act does so, when it may (percent): at a play-phase request, and at a 罗汉's offer.
ACT_CHANCE = 15
PREVENT_CHANCE = 60


def make_header(seed: int, players: int, role_variant: int = pb.ROLE_VARIANT_STANDARD,
                packages: Sequence[str] = (), generals: bool = False) -> pb.GameHeader:
    """An identity self-play header with options.dark_souls (white or standard generals)."""
    header = identity_header(seed, players, role_variant, packages, generals)
    header.options.dark_souls = True
    return header


def play_game(seed: int, players: int, role_variant: int = pb.ROLE_VARIANT_STANDARD, packages: Sequence[str] = (),
              generals: bool = False, ruleset: Ruleset | None = None) -> pb.GameLog:
    """One complete self-play game with dark souls (clients.selfplay.base.play_game for the other options)."""
    header = make_header(seed, players, role_variant, packages, generals)
    return play(header, make_bot(header), ruleset)


@register_bot("dark_souls", plays=lambda header: header.options.dark_souls, rank=20)
class DarkSoulsBot(GeneralsBot):
    def decide(self, game: Game, req: Request) -> pb.Event | None:
        mode = game.mode
        if isinstance(req, ModeRequest) and isinstance(mode, DarkSouls):
            assert req.seat is not None
            ev = pb.Event()
            if "possess" in req.kinds:
                living = game.alive_seats()
                ev.possess.seat = req.seat
                ev.possess.host = living[self.rng.below(len(living))]
                return ev
            if self.chance(PREVENT_CHANCE):
                ev.soul_act.seat = req.seat
                return ev
            return None
        return super().decide(game, req)

    def play(self, game: Game, req: PlayRequest) -> pb.Event:
        mode = game.mode
        if isinstance(mode, DarkSouls):
            for seat in mode.live_souls(game):
                soul = mode.souls[seat]
                host = game.players[soul.host].hand
                if not mode.can_act(game, req, seat) or (soul.kind == XUANWU and not host) \
                        or not self.chance(ACT_CHANCE):
                    continue
                ev = pb.Event()
                ev.soul_act.seat = seat
                if soul.kind == XUANWU:
                    ev.soul_act.card = host[self.rng.below(len(host))]
                return ev
        return super().play(game, req)


__all__ = ["DarkSoulsBot", "make_header", "play_game"]
