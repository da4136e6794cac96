"""The generals package and what its skills share: the Skill base, offers, view-as checks."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef
from verifier.engine.effects import Effect, Package
from verifier.engine.game import Game, Settle, Violation
from verifier.engine.requests import UNANSWERED, offer_request

PACKAGE = Package("generals_standard")
SLASHES = frozenset({"slash", "fire_slash", "thunder_slash"})


class Skill(Effect):
    """A general's skill."""

    is_skill = True
    zh: ClassVar[str] = ""


def offer(game: Game, seat: int, skill: str, target: int | None = None) -> Settle[pb.InvokeSkill | None]:
    """Offer an optional skill; the InvokeSkill if it is invoked, None if declined."""
    while True:
        answer = yield offer_request(seat, skill, target=target)
        if answer is None or answer is UNANSWERED:
            return None
        assert isinstance(answer, pb.Event)
        if answer.HasField("invoke_skill") and answer.invoke_skill.skill == skill:
            return answer.invoke_skill
        game.report([Violation("SKILL_NOT_AVAILABLE", f"seat {seat} may invoke only {skill} here", seat,
                               hard=True)])


def bad(code: str, message: str, seat: int) -> list[Violation]:
    return [Violation(code, message, seat, hard=True)]


def check_targets(game: Game, seat: int, targets: list[int], skill: str, count: tuple[int, int],
                  test: Callable[[int], str]) -> list[Violation]:
    """``count`` (min, max) distinct living targets, each passing ``test`` (which returns why not, or "")."""
    lo, hi = count
    if not lo <= len(targets) <= hi or len(set(targets)) != len(targets):
        want = f"{lo}" if lo == hi else f"{lo} to {hi}"
        return bad("INVALID_TARGET", f"{skill} takes {want} distinct target(s), not {targets}", seat)
    for t in targets:
        if t >= game.n or not game.players[t].alive:
            return bad("INVALID_TARGET", f"{skill}: seat {t} is not a living character", seat)
        why = test(t)
        if why:
            return bad("INVALID_TARGET", f"{skill}: seat {t} {why}", seat)
    return []


def check_cards(game: Game, seat: int, cards: list[int], skill: str, count: tuple[int, int],
                zones: tuple[str, ...]) -> list[Violation]:
    lo, hi = count
    if not lo <= len(cards) <= hi:
        want = f"{lo}" if lo == hi else f"{lo} or more"
        return bad("INVALID_CHOICE", f"{skill} takes {want} card(s), not {len(cards)}", seat)
    return game.verify_own_cards(seat, cards, zones)


class ViewAs(Skill):
    """A conversion skill: one card of the right kind counts as ``converts_to``."""

    zones: ClassVar[tuple[str, ...]] = ("hand",)
    what: ClassVar[str] = ""  # e.g. "a red card"

    def fits(self, card: CardDef, name: str) -> bool:
        return False

    def timing(self, game: Game, seat: int) -> str:
        """Why the skill cannot be used now ("" when it can)."""
        return ""

    def verify_conversion(self, game: Game, seat: int, virtual: pb.VirtualCard) -> list[Violation]:
        cards = list(virtual.subcards)
        why = self.timing(game, seat)
        if why:
            return bad("SKILL_TIMING", f"seat {seat}: {self.name} {why}", seat)
        if len(cards) != 1:
            return bad("INVALID_CONVERSION", f"{self.name} makes a {virtual.name} from exactly one card, not "
                       f"{len(cards)}", seat)
        owned = game.verify_own_cards(seat, cards, self.zones)
        if owned:
            return owned
        card = game.cards[cards[0]]
        if not self.fits(card, virtual.name):
            return [Violation("INVALID_CONVERSION", f"{self.name} makes a {virtual.name} only from {self.what}, not "
                              f"{card.label()}", seat, card.id, hard=True)]
        return []
