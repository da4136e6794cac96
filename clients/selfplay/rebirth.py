"""Self-play for the rebirth variant (转世, options.rebirth): the generals bot, which in its own play phase
sometimes gives a hand card to a dead character as a sacrifice (once a turn, never once reborn), so that the
dead are reborn and play on."""

from __future__ import annotations

from clients.selfplay.base import register_bot
from clients.selfplay.generals import GeneralsBot
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.game import Game
from verifier.engine.requests import PlayRequest
from verifier.packages.modes.rebirth import RebirthMode

# How often a bot that may sacrifice does so, when its play phase asks it to act (percent).
SACRIFICE_CHANCE = 40


@register_bot("rebirth", plays=lambda header: header.options.rebirth, rank=30)
class RebirthBot(GeneralsBot):
    def play(self, game: Game, req: PlayRequest) -> pb.Event:
        seat = req.seat
        assert seat is not None
        mode = game.mode
        if isinstance(mode, RebirthMode) and game.players[seat].hand and mode.can_sacrifice(game, req, seat):
            targets = [t for t in range(game.n) if mode.takes_sacrifice(game, t)]
            if targets and self.chance(SACRIFICE_CHANCE):
                hand = game.players[seat].hand
                ev = pb.Event()
                ev.sacrifice.seat = seat
                ev.sacrifice.target = targets[self.rng.below(len(targets))]
                ev.sacrifice.card = hand[self.rng.below(len(hand))]
                return ev
        return super().play(game, req)


__all__ = ["RebirthBot"]
