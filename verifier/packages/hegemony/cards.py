"""The hegemony deck's new tricks: 以逸待劳, 知己知彼, 远交近攻 (docs/rules.md#hegemony-deck)."""

from __future__ import annotations

from collections.abc import Iterator

from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.effects import CardSpec, Use
from verifier.engine.game import Game, Settle, Violation
from verifier.engine.requests import option_request
from verifier.packages.hegemony.package import PACKAGE


def hidden_generals(game: Game, seat: int) -> tuple[str, ...]:
    """Which of the seat's generals are face down ("main", "deputy"), as the mode tells."""
    hidden = getattr(game.mode, "hidden", None)
    return tuple(("main", "deputy")[s] for s in hidden(seat)) if hidden is not None else ()


@PACKAGE.card
class AwaitExhausted(CardSpec):
    """以逸待劳 (docs/rules.md#await-exhausted): you and every other character of your kingdom, in seat order from
    you, each draw 2 (each may be nullified); then each that drew discards 2 cards."""

    name = "await_exhausted"

    def default_targets(self, game: Game, user: int) -> tuple[int, ...]:
        out = [user]
        for t in game.alive_seats(user)[1:]:
            if game.mode.same_side(game, user, t) and game.players[user].kingdom and \
                    game.prohibited(user, t, self.name) is None:
                out.append(t)
        return tuple(out)

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        expected = self.default_targets(game, use.user)
        if use.targets != expected:
            yield Violation("INVALID_TARGET", f"以逸待劳 targets exactly seats {list(expected)} in this order, not "
                            f"{list(use.targets)}", use.user, hard=True)

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        drew = []
        for t in use.targets:
            if not game.players[t].alive or (yield from game.nullified(self.name, t)):
                continue
            yield from game.draw(t, 2, pb.DRAW_REASON_CARD_EFFECT)
            drew.append(t)
        for t in drew:
            p = game.players[t]
            options = [*p.hand, *p.equipped()]
            if not p.alive or not options:
                continue
            chosen = yield from game.choose(t, options, min(2, len(options)), self.name)
            if chosen:
                yield from game.to_discard(chosen)


@PACKAGE.card
class KnownBoth(CardSpec):
    """知己知彼 (docs/rules.md#known-both): look at another character's hand or one of its face-down generals
    (ChooseOption "hand", "main" or "deputy"); or recast it."""

    name = "known_both"
    recastable = True

    @staticmethod
    def options(game: Game, target: int) -> tuple[str, ...]:
        return (("hand",) if game.players[target].hand else ()) + hidden_generals(game, target)

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if len(use.targets) != 1 or use.targets[0] == use.user:
            yield Violation("INVALID_TARGET", "知己知彼 takes exactly one other character as its target", use.user,
                            hard=True)
        elif not self.options(game, use.targets[0]):
            yield Violation("INVALID_TARGET", f"seat {use.targets[0]} has no hand card and no face-down general for "
                            "知己知彼", use.user, hard=True)

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        target = use.targets[0]
        if (yield from game.nullified(self.name, target)):
            return
        options = self.options(game, target)
        while options:
            answer = yield option_request(use.user, options, self.name, optional=False)
            if not isinstance(answer, pb.Event):
                return
            if answer.choose_option.option in options:
                return  # only the user sees it: nothing changes
            game.report([Violation("INVALID_CHOICE", f"知己知彼: {answer.choose_option.option!r} is not one of "
                                   f"{', '.join(options)}", use.user, hard=True)])

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(t,) for t in game.alive_seats() if t != user and self.options(game, t)]


@PACKAGE.card
class BefriendAttacking(CardSpec):
    """远交近攻 (docs/rules.md#befriend-attacking): with a face-up general, on a character with one that is not of
    your kingdom: it draws 1, then you draw 3."""

    name = "befriend_attacking"

    def verify_use(self, game: Game, use: Use) -> Iterator[Violation]:
        if not game.players[use.user].kingdom:
            yield Violation("INVALID_TARGET", f"远交近攻 needs a face-up general; seat {use.user} has none", use.user,
                            hard=True)
            return
        if len(use.targets) != 1 or use.targets[0] == use.user:
            yield Violation("INVALID_TARGET", "远交近攻 takes exactly one other character as its target", use.user,
                            hard=True)
            return
        t = use.targets[0]
        if not game.players[t].kingdom:
            yield Violation("INVALID_TARGET", f"seat {t} has no face-up general for 远交近攻", use.user, hard=True)
        elif game.mode.same_side(game, use.user, t):
            yield Violation("INVALID_TARGET", f"seat {t} is of seat {use.user}'s own kingdom", use.user, hard=True)

    def resolve(self, game: Game, use: Use) -> Settle[None]:
        target = use.targets[0]
        if (yield from game.nullified(self.name, target)):
            return
        yield from game.draw(target, 1, pb.DRAW_REASON_CARD_EFFECT)
        yield from game.draw(use.user, 3, pb.DRAW_REASON_CARD_EFFECT)

    def candidate_targets(self, game: Game, user: int) -> list[tuple[int, ...]]:
        return [(t,) for t in game.alive_seats() if t != user and game.players[t].kingdom]
