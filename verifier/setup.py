"""From a header to a game ready to run. What every mode shares lives here — the header's ruleset, the
cards' deal (starting hands and draw pile, seeded or fixed by the set-up), the starting hands'
outcomes; the rest is the mode's own set-up (verifier/packages/modes/), chosen by the header's
``mode``."""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef
from verifier.engine.effects import Package, Ruleset
from verifier.engine.game import Game, Notice, Violation
from verifier.rng import MASK64, shuffled

STARTING_HAND = 4

# The modes this engine implements: the header's mode -> the module that sets its games up. Each module
# has check_header, header_notices and new_game (verifier/packages/modes/identity.py).
MODES = {pb.MODE_IDENTITY: "verifier.packages.modes.identity", pb.MODE_HEGEMONY: "verifier.packages.modes.hegemony"}

# Card packages an identity header may name in options.packages (clients' --packages).
KNOWN_PACKAGES = {"standard", "maneuvering"}


class HeaderError(Exception):
    def __init__(self, violations: list[Violation]) -> None:
        super().__init__("; ".join(v.message for v in violations))
        self.violations = violations


def mode_module(header: pb.GameHeader) -> ModuleType:
    """The set-up module of the header's mode; a mode this engine does not know is judged by identity
    mode's header checks, which report it."""
    return import_module(MODES.get(header.mode, MODES[pb.MODE_IDENTITY]))


def check_ruleset(header: pb.GameHeader, ruleset: str) -> list[Violation]:
    """The header's ruleset and mode: ``ruleset`` (or none) of a mode this engine implements."""
    problems: list[Violation] = []
    if header.ruleset not in ("", ruleset):
        problems.append(Violation("UNSUPPORTED_OPTION", f"ruleset {header.ruleset!r} is not known; this engine "
                                  f"implements {ruleset!r}"))
    if header.mode not in MODES:
        problems.append(Violation("UNSUPPORTED_OPTION", "only identity mode (MODE_IDENTITY) and hegemony mode "
                                  "(MODE_HEGEMONY) are implemented"))
    return problems


def ruleset_for(header: pb.GameHeader) -> Ruleset:
    """The packages the header's mode plays with (its ``packages(header)``). A Ruleset holds no game's state,
    so one per combination of packages serves every game."""
    found: list[Package] = mode_module(header).packages(header)
    key = tuple(p.name for p in found)
    ruleset = _RULESETS.get(key)
    if ruleset is None:
        ruleset = _RULESETS[key] = Ruleset(found)
    return ruleset


_RULESETS: dict[tuple[str, ...], Ruleset] = {}


def header_notices(header: pb.GameHeader) -> list[Notice]:
    """The notices on a header the game starts from (``new_game`` did not raise)."""
    notices: list[Notice] = mode_module(header).header_notices(header)
    return notices


def new_game(header: pb.GameHeader, ruleset: Ruleset) -> Game:
    """A game in its starting position, set up by the header's mode. Raises HeaderError for an unusable
    header."""
    game: Game = mode_module(header).new_game(header, ruleset)
    return game


def deal_cards(header: pb.GameHeader, deck: list[CardDef]) -> tuple[list[list[int]], list[int]]:
    """The starting hands (4 cards a seat) and the draw pile (top first): fixed by the header's set-up, or
    dealt from the seed's "deck" stream (docs/rng.md). Raises HeaderError (BAD_SETUP)."""
    n = len(header.seats)
    seed = header.seed & MASK64
    ids = [c.id for c in deck]
    known = set(ids)
    setup = header.setup
    hands_given = {h.seat: list(h.cards) for h in setup.starting_hands}
    named = list(setup.draw_pile) + [c for h in setup.starting_hands for c in h.cards]
    unknown = [c for c in named if c not in known]
    if unknown:
        raise HeaderError([Violation("BAD_SETUP", f"the set-up names card #{unknown[0]}, which is not in the "
                                     "deck", card=unknown[0])])
    if len(set(named)) != len(named):
        raise HeaderError([Violation("BAD_SETUP", "the set-up names a card twice")])
    if hands_given:
        if sorted(hands_given) != list(range(n)) or len(setup.starting_hands) != n:
            raise HeaderError([Violation("BAD_SETUP", "starting hands must be given for every seat, once each")])
        if any(len(h) != STARTING_HAND for h in hands_given.values()):
            raise HeaderError([Violation("BAD_SETUP", f"every starting hand has exactly {STARTING_HAND} cards")])

    if setup.draw_pile and not setup.stacked_top:
        pile = list(setup.draw_pile)
        if len(pile) + sum(len(h) for h in hands_given.values()) != len(ids):
            raise HeaderError([Violation("BAD_SETUP", f"the set-up must place all {len(ids)} cards (or set "
                                         "stacked_top)")])
    else:
        rest = [c for c in shuffled(seed, "deck", ids) if c not in set(named)]
        pile = list(setup.draw_pile) + rest
    if hands_given:
        hands = [hands_given[s] for s in range(n)]
    else:
        if len(pile) < STARTING_HAND * n:
            raise HeaderError([Violation("BAD_SETUP", "not enough cards to deal the starting hands")])
        hands = [pile[STARTING_HAND * s:STARTING_HAND * (s + 1)] for s in range(n)]
        pile = pile[STARTING_HAND * n:]
    return hands, pile


def starting_hand_outcomes(game: Game) -> list[pb.Event]:
    out = []
    for p in game.players:
        ev = pb.Event()
        ev.draw_cards.seat = p.seat
        ev.draw_cards.cards.extend(p.hand)
        ev.draw_cards.reason = pb.DRAW_REASON_INITIAL
        out.append(ev)
    return out
