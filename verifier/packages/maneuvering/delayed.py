"""The delayed trick of 军争: 兵粮寸断 (docs/rules.md#supply-shortage)."""

from __future__ import annotations

from collections.abc import Iterator

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import Suit
from verifier.engine.effects import Use
from verifier.engine.game import Game, Violation
from verifier.packages.maneuvering.package import PACKAGE
from verifier.packages.standard.delayed import PhaseSkipTrick
from verifier.packages.standard.tricks import reaches, verify_reaches


@PACKAGE.card
class SupplyShortage(PhaseSkipTrick):
    """兵粮寸断: on another character at distance 1; unless the judgment is ♣, they skip their draw phase."""

    name = "supply_shortage"
    label = "兵粮寸断"
    escape_suit = Suit.CLUB
    skipped_phase = pb.PHASE_DRAW

    def can_reach(self, game: Game, user: int, target: int) -> bool:
        return reaches(game, user, target, self.name)

    def verify_reach(self, game: Game, use: Use, target: int) -> Iterator[Violation]:
        return verify_reaches(game, use, target, self.name, "兵粮寸断")
