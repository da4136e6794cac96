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


def offer_with_targets(game: Game, seat: int, skill: str, count: tuple[int, int], test: Callable[[int], str],
                       before: Callable[[pb.InvokeSkill], list[Violation]] | None = None,
                       after: Callable[[pb.InvokeSkill], list[Violation]] | None = None,
                       ) -> Settle[pb.InvokeSkill | None]:
    """Offer ``skill`` until an invocation passes: its targets ``check_targets`` (``count``, ``test``), and the
    checks of the whole invocation ``before`` and ``after`` them (each run only when what comes before found
    nothing, so one invocation reports one problem). A failing invocation is reported and the skill offered
    again; the passing InvokeSkill is returned, None if declined."""
    while True:
        inv = yield from offer(game, seat, skill)
        if inv is None:
            return None
        problems = before(inv) if before is not None else []
        problems = problems or check_targets(game, seat, list(inv.targets), skill, count, test)
        if not problems and after is not None:
            problems = after(inv)
        if not game.report(problems):
            return inv


def bad(code: str, message: str, seat: int) -> list[Violation]:
    return [Violation(code, message, seat, hard=True)]


def check_targets(game: Game, seat: int, targets: list[int], skill: str, count: tuple[int, int],
                  test: Callable[[int], str], soft_test: Callable[[int], str] | None = None) -> list[Violation]:
    """``count`` (min, max) distinct living targets, each passing ``test`` (which returns why not, or "").
    ``soft_test``: what a target should be but the skill can still be carried out without (a 结姻 target who
    is not a wounded male, a 流离 target out of range: FreeKill let them through); reported as INVALID_TARGET
    without rejecting the decision."""
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
    if soft_test is None:
        return []
    return [Violation("INVALID_TARGET", f"{skill}: seat {t} {why} (carried out all the same)", seat)
            for t in targets if (why := soft_test(t))]


def check_cards(game: Game, seat: int, cards: list[int], skill: str, count: tuple[int, int],
                zones: tuple[str, ...]) -> list[Violation]:
    lo, hi = count
    if not lo <= len(cards) <= hi:
        want = f"{lo}" if lo == hi else f"{lo} or more"
        return bad("INVALID_CHOICE", f"{skill} takes {want} card(s), not {len(cards)}", seat)
    return game.verify_own_cards(seat, cards, zones)


def check_hand_cost(game: Game, seat: int, cards: list[int], skill: str, count: tuple[int, int]) -> list[Violation]:
    """A cost of hand cards that must be exactly ``count`` (骁果, 天香, 好施, 放权): the wrong number is INVALID_CHOICE
    (asked again); a card the seat does not hold, CARD_NOT_OWNED; an equipped card of its own, SKILL_COST, paid with
    it all the same (Game.verify_cost_cards; docs/codes.md#one-code)."""
    lo, hi = count
    if not lo <= len(cards) <= hi:
        want = f"{lo}" if lo == hi else f"{lo} or more"
        return bad("INVALID_CHOICE", f"{skill} takes {want} card(s), not {len(cards)}", seat)
    return game.verify_cost_cards(seat, cards, ("hand",), skill)


def check_cost(game: Game, seat: int, cards: list[int], skill: str, count: tuple[int, int],
               zones: tuple[str, ...], verb: str = "discards") -> list[Violation]:
    """The cards a skill costs (制衡, 结姻, 青囊, 离间, 流离 discard them, 仁德 gives them). A card the seat does not
    hold, or one named twice, makes the skill impossible (hard). The wrong number of cards, or a held card
    of the wrong kind (an equipped card where hand cards are due), is SKILL_COST: the skill is still carried
    out, with the cards named (FreeKill's server let 制衡 and 结姻 with no card through)."""
    held = game.verify_own_cards(seat, cards, ("hand", "equip"))
    if held:
        return held
    out = []
    lo, hi = count
    if not lo <= len(cards) <= hi:
        want = f"{lo}" if lo == hi else f"{lo} or more"
        out.append(Violation("SKILL_COST", f"{skill} {verb} {want} card(s); seat {seat} {verb} {len(cards)} "
                             "(carried out all the same)", seat))
    if "equip" not in zones:
        for cid in cards:
            if cid not in game.players[seat].hand:
                out.append(Violation("SKILL_COST", f"{skill} {verb} hand cards only; {game.label(cid)} is an "
                                     f"equipped card of seat {seat} (carried out all the same)", seat, cid))
    return out


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
        card = game.card_as(seat, cards[0])  # (红颜: 小乔's ♠ cards are ♥)
        if not self.fits(card, virtual.name):
            return [Violation("INVALID_CONVERSION", f"{self.name} makes a {virtual.name} only from {self.what}, not "
                              f"{card.label()}", seat, card.id, hard=True)]
        return []
