"""Basic cards of 军争: 火杀, 雷杀 and 酒 (docs/rules.md#basic-cards).

火杀 and 雷杀 are 杀 for every purpose (limit, range, responses, 杀-only effects); only the
nature of their damage differs (standard basic.NATURES). 酒 in the play phase is drunk once
per turn and goes with the next 杀 its user uses this turn (+1 damage to each target); when
its user is dying it recovers 1 (Ruleset.rescue), which is not limited and does not count.
"""

from __future__ import annotations

from collections.abc import Iterator

from verifier.engine.effects import CardSpec, Use
from verifier.engine.game import Game, Settle, Violation
from verifier.packages.maneuvering.package import PACKAGE
from verifier.packages.standard import basic as standard

# Player.marks: the turn number in which the character last drank 酒 in their play phase, and the
# turn number of a 酒 still waiting for its 杀 (both lapse with that turn).
ANALEPTIC_USED = "analeptic_used"
DRUNK = "drunk"


def take_drink(game: Game, seat: int) -> int:
    """The 酒 bonus for the 杀 ``seat`` is using now: 1 if they drank this turn and no 杀 took it yet."""
    drunk = game.players[seat].marks.get(DRUNK, 0)
    if not drunk:
        return 0
    game.set_mark(seat, DRUNK, 0)
    return 1 if drunk == game.turn_number else 0


@PACKAGE.card
class Slash(standard.Slash):
    """杀 with 军争: the 酒 its user drank this turn goes with it."""

    name = "slash"

    def use(self, game: Game, use: Use) -> Settle[None]:
        bonus = take_drink(game, use.user)
        if bonus:
            use = Use(use.user, use.card, use.targets, use.damage_bonus + bonus)
        yield from super().use(game, use)


@PACKAGE.card
class FireSlash(Slash):
    """火杀: a 杀 that deals fire damage."""

    name = "fire_slash"


@PACKAGE.card
class ThunderSlash(Slash):
    """雷杀: a 杀 that deals thunder damage."""

    name = "thunder_slash"


@PACKAGE.card
class Analeptic(CardSpec):
    """酒: in your play phase, once per turn, the next 杀 you use this turn deals +1 damage."""

    name = "analeptic"

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        return (user,)

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if use.targets != (use.user,):
            yield Violation("INVALID_TARGET", f"seat {use.user} can drink 酒 only themself", use.user, hard=True)
            return
        if game.players[use.user].marks.get(ANALEPTIC_USED) == game.turn_number:
            yield Violation("ANALEPTIC_LIMIT", f"seat {use.user} already drank 酒 this turn; "
                            f"{game.used_card_label(use.card)} is a second one", use.user,
                            use.card.ids[0] if use.card.ids else None)

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        game.set_mark(use.user, ANALEPTIC_USED, game.turn_number)
        # Its target drinks: its user, unless a server's record carried out one given to another character.
        for t in use.targets:
            game.set_mark(t, DRUNK, game.turn_number)
        return
        yield  # pragma: no cover
