"""A test-only engine variant for regression runs: a rebel's killer draws 2 cards, not 3.

Used as ``--engine tests.regress_variant:REBEL_REWARD_TWO`` (a hidden option of `sgs-verify
regress`); nothing in production imports it. It changes one game's method on the instance, so no
other game (in this process or any other) is affected.
"""

from __future__ import annotations

from types import MethodType

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import Ruleset
from verifier.engine.game import Game, Settle

REBEL = pb.ROLE_REBEL


class RebelRewardTwo:
    reward = 2

    def ruleset(self, header: pb.GameHeader) -> Ruleset | None:
        return None

    def prepare(self, game: Game) -> None:
        original = game.reward_or_penalty
        reward = self.reward

        def reward_or_penalty(self: Game, victim: int, killer: int | None) -> Settle[None]:
            if (killer is not None and killer != victim and self.players[killer].alive
                    and self.players[victim].role == REBEL):
                yield from self.draw(killer, reward, pb.DRAW_REASON_KILL_REWARD, "KILL_REWARD")
                return
            yield from original(victim, killer)

        game.reward_or_penalty = MethodType(reward_or_penalty, game)  # type: ignore[method-assign]


REBEL_REWARD_TWO = RebelRewardTwo()
