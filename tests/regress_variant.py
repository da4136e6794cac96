"""A test-only engine variant for regression runs: a rebel's killer draws 2 cards, not 3.

Used as ``--engine tests.regress_variant:REBEL_REWARD_TWO`` (a hidden option of `sgs-verify
regress`); nothing in production imports it. It changes one game's mode (the mode's reward hook), so no
other game (in this process or any other) is affected. The mode is changed, not the Game: the core is
compiled (setup.py), and a compiled class's methods cannot be replaced on an instance.
"""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Ruleset
from verifier.engine.game import Game, Settle
from verifier.engine.mode import Mode

REBEL = pb.ROLE_REBEL


class RebelRewardTwo:
    reward = 2

    def ruleset(self, header: pb.GameHeader) -> Ruleset | None:
        return None

    def prepare(self, game: Game) -> None:
        mode_class = type(game.mode)
        reward = self.reward

        def reward_or_penalty(self: Mode, game: Game, victim: int, killer: int | None) -> Settle[None]:
            if (killer is not None and killer != victim and game.players[killer].alive
                    and game.players[victim].role == REBEL):
                yield from game.draw(killer, reward, pb.DRAW_REASON_KILL_REWARD, "KILL_REWARD")
                return
            yield from mode_class.reward_or_penalty(self, game, victim, killer)

        # This game's mode only: an instance of a subclass made for it, with the same state.
        game.mode.__class__ = type(f"RebelRewardTwo{mode_class.__name__}", (mode_class,),
                                   {"reward_or_penalty": reward_or_penalty})


REBEL_REWARD_TWO = RebelRewardTwo()
