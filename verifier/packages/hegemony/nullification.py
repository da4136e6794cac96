"""无懈可击·国 (heg_nullification, docs/rules.md#heg-nullification): an ordinary 无懈可击, or, against a normal trick
aimed at a character with a kingdom when a later target of the trick shares it, one for that whole
kingdom (Respond.whole_kingdom): the trick has no effect on the rest of that kingdom it reaches, and no
window opens for them. The package settles every 无懈可击 window (Package.nullify_rule)."""

from __future__ import annotations

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import CardSpec, Use
from verifier.engine.game import Game, Settle, Violation
from verifier.engine.requests import UNANSWERED, nullify_request
from verifier.packages.hegemony.package import PACKAGE

NAME = "heg_nullification"
# Game.package_state: (the trick's Use, the protected target) while a kingdom-wide one covers a trick.
COVERED = "heg_nullification/covered"


@PACKAGE.card
class HegNullification(CardSpec):
    """无懈可击·国: only played into a nullification window."""

    name = NAME
    play_phase = False


def kingdom_wide_possible(game: Game, use: Use | None, trick: str, target: int | None, card: int | None) -> bool:
    """Can a 无懈可击·国 be played for the whole kingdom of ``target`` against ``trick`` now?"""
    if use is None or card is not None or target is None or trick == "nullification" or use.card.name != trick:
        return False
    if not game.players[target].kingdom or game.mode.allegiance(game, target) != game.players[target].kingdom:
        return False  # no kingdom, or a careerist
    if target not in use.targets:
        return False
    later = use.targets[use.targets.index(target) + 1:]
    return any(game.players[t].alive and game.mode.same_side(game, t, target) for t in later)


def nullified(game: Game, trick: str, target: int | None, card: int | None) -> Settle[bool]:
    """Game.nullified with the kingdom-wide 无懈可击·国."""
    use: Use | None = game.using[-1] if game.using else None
    covered = game.package_state.get(COVERED)
    if covered is not None and use is not None and target is not None and covered[0] is use \
            and card is None and trick == use.card.name and game.mode.same_side(game, target, covered[1]):
        return True  # covered by the kingdom-wide one: no window
    cancelled = False
    what = trick
    whole = False
    while True:
        answer = yield nullify_request(what, target, card)
        if answer is None or answer is UNANSWERED:
            break
        assert isinstance(answer, pb.Event)
        if not (yield from game.ruleset.play_nullification(game, answer)):
            continue
        if what == trick:  # the first one, against the trick itself
            r = answer.respond
            if r.whole_kingdom:
                played = r.card.virtual.name if r.card.WhichOneof("kind") == "virtual" else \
                    game.cards[r.card.id].name
                if played != NAME:
                    game.report([Violation("WRONG_CARD", f"only 无懈可击·国 can be played for a whole kingdom; seat "
                                           f"{r.seat} played an ordinary 无懈可击 (taken as one)", r.seat)])
                elif not kingdom_wide_possible(game, use, trick, target, card):
                    game.report([Violation("INVALID_CHOICE", f"无懈可击·国 cannot cover a whole kingdom here (no later "
                                           f"target of {trick} shares seat {target}'s kingdom, or it has none); "
                                           "taken as an ordinary one", r.seat)])
                else:
                    whole = True
        cancelled = not cancelled
        what = "nullification"
    if cancelled and whole and use is not None and target is not None:
        game.package_state[COVERED] = (use, target)
    return cancelled


PACKAGE.nullify_rule = nullified
