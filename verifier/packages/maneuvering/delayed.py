"""The delayed trick of 军争: 兵粮寸断 (RULES.md §6, delayed tricks)."""

from __future__ import annotations

from collections.abc import Iterator

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import Suit
from verifier.engine.effects import DelayedSpec, Use
from verifier.engine.game import Game, Settle, Violation
from verifier.packages.maneuvering.package import PACKAGE
from verifier.packages.standard.delayed import verify_no_duplicate


@PACKAGE.card
class SupplyShortage(DelayedSpec):
    """兵粮寸断: on another character at distance 1; unless the judgment is ♣, they skip their draw phase."""

    name = "supply_shortage"

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if len(use.targets) != 1 or use.targets[0] == use.user:
            yield Violation("INVALID_TARGET", "兵粮寸断 takes exactly one other character", use.user, hard=True)
            return
        t = use.targets[0]
        d = game.distance(use.user, t)
        if d > 1 and not any(e.unlimited_distance(game, use.user, self.name) for e in game.effects_of(use.user)):
            yield Violation("DISTANCE_LIMIT", f"兵粮寸断 needs distance 1; seat {t} is at distance {d} from seat "
                            f"{use.user}", use.user, use.card.ids[0] if use.card.ids else None)
        yield from verify_no_duplicate(game, use, self.name, t)

    def use(self, game: Game, use: Use) -> Settle[None]:
        game.to_judgment(use.targets[0], use.card.ids[0], as_name=self.name if use.card.is_virtual else "")
        return
        yield  # pragma: no cover

    def judge_phase(self, game: Game, seat: int, card_id: int) -> Settle[set[int]]:
        game.to_processing([card_id])
        skip: set[int] = set()
        if not (yield from game.nullified(self.name, seat)):
            judged = yield from game.judge(seat, self.name)
            if judged.suit != Suit.CLUB:
                skip.add(pb.PHASE_DRAW)
            yield from game.finish_judgment(seat, judged, self.name)
        game.processing_to_discard([card_id])
        return skip

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(t,) for t in game.alive_seats() if t != user and game.distance(user, t) <= 1
                and not any(game.judgment_name(c) == self.name for c in game.players[t].judgment)]
