"""The one interface between the core and a game mode (identity, hegemony, ...).

A mode is a package (verifier/packages/modes/): it sets the game up from a header, and the
core asks it, through one ``Mode`` object per game, what only the mode knows — whose turn is
first, what a death reveals and sets off, when the game is won, and who sides with whom. The
core never names a mode; every hook here has a default that does nothing, so a mode overrides
only what it changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from mypy_extensions import mypyc_attr

from sgsverify.v1 import game_log_pb2 as pb

if TYPE_CHECKING:
    from verifier.engine.game import Game, GameEnded, Settle, Violation
    from verifier.engine.requests import Answer, Request


@mypyc_attr(allow_interpreted_subclasses=True)  # (compiled: setup.py; subclassed by the interpreted packages)
class Mode:
    """A game mode's rules, as the core sees them. Subclasses override the hooks they need."""

    name: ClassVar[str] = ""
    # The header's ``ruleset`` for this mode, e.g. "identity/1".
    ruleset: ClassVar[str] = ""
    # Does the mode take decisions of its own between any two requests (``intercept``)? Only then
    # does Game.run pass every answer through it (a generator level less for modes that do not).
    intercepts: ClassVar[bool] = False
    # Does the mode act when a phase begins (``phase_begins``)?
    phase_hook: ClassVar[bool] = False
    # The decisions of its own the mode takes (requests.MODE_ONLY_KINDS: the rebirth variant's "sacrifice"):
    # in any other mode they are UNSUPPORTED_EVENT.
    decisions: ClassVar[frozenset[str]] = frozenset()
    # Of those, the ones a dead seat makes (dark souls: "possess", "soul_act"): the replay lets a dead seat make
    # them and the mode judges them.
    dead_decisions: ClassVar[frozenset[str]] = frozenset()
    # Does the mode act as a round begins (``round_begins``)?
    round_hook: ClassVar[bool] = False
    # Does the mode have a say in every HP change (``hp_change``)?
    hp_hook: ClassVar[bool] = False
    # Does the mode watch every card use (``card_used``)?
    use_hook: ClassVar[bool] = False

    # ------------------------------------------------------------------ the turn order

    def first_seat(self, game: Game) -> int:
        """Whose turn is the game's first."""
        return 0

    # ------------------------------------------------------------------ death

    def fill_death(self, game: Game, seat: int, death: pb.Death) -> None:
        """Complete the Death outcome with what the mode reveals of the victim (identity: the role)."""

    def death_revealed(self, game: Game, seat: int) -> Settle[None]:
        """Right after the Death outcome, before victory is judged: what the death reveals (hegemony:
        the face-down generals)."""
        return None
        yield  # pragma: no cover

    def check_victory(self, game: Game, just_died: int | None) -> None:
        """Raise GameEnded when the death of ``just_died`` (None: something else) ends the game."""

    def reward_or_penalty(self, game: Game, victim: int, killer: int | None) -> Settle[None]:
        """The killer's reward or penalty, once the victim's cards are discarded."""
        return None
        yield  # pragma: no cover

    def final_scores(self, game: Game, end: GameEnded) -> tuple[Any, ...]:
        """Each seat's score when the game ends (identity: the fourth-edition table); () when the mode has
        no scoring."""
        return ()

    # ------------------------------------------------------------------ sides

    def allegiance(self, game: Game, seat: int) -> str:
        """Whom the seat plays for, as far as the rules know it now ("" when nobody knows yet)."""
        return ""

    def same_side(self, game: Game, a: int, b: int) -> bool:
        """Are ``a`` and ``b`` known to play for the same side?"""
        side = self.allegiance(game, a)
        return a == b or (bool(side) and side == self.allegiance(game, b))

    # ------------------------------------------------------------------ what the table shows

    def seat_generals(self, game: Game, seat: int) -> tuple[tuple[str, bool], ...]:
        """The generals a character plays, each with whether it is face up (a viewer shows a face-down one
        only to its owner). Identity: the one general, face up."""
        general = game.players[seat].general
        return ((general, True),) if general else ()

    def seat_rebirths(self, game: Game, seat: int) -> tuple[str, ...]:
        """The generals the seat's character was reborn as, oldest first (a viewer marks a reborn seat). Only
        the rebirth variant has any."""
        return ()

    # ------------------------------------------------------------------ the mode's own decisions

    def intercept(self, game: Game, request: Request, answer: Answer) -> Settle[bool]:
        """Called (when ``intercepts``) with every answer before the settlement waiting on ``request``
        gets it. True when the mode took the answer itself: ``request`` is then asked again."""
        return False
        yield  # pragma: no cover

    def configure(self, options: pb.GameOptions) -> None:
        """Read the header's options the mode's rules depend on beyond choosing it (first-out protection: the
        protected seat). Called once by the set-up that chose the mode, before the game starts."""

    def keeps_code_when_missing(self, code: str) -> bool:
        """Is a derived outcome whose mismatch code is ``code``, left out of a log that claims complete outcomes,
        reported with that code (the mode's own outcome: the last-three clock's drain) rather than MISSING_OUTCOME?"""
        return False

    def unexpected_outcome(self, game: Game, ev: pb.Event, kind: str) -> Violation | None:
        """The violation for a recorded outcome no derived one is about, when the mode can say what rule of its own
        it breaks (a drain where none is due, damage a protection prevents in full); None: the usual one."""
        return None

    def wrong_timing(self, game: Game, kind: str, seat: int, what: str, waiting_for: str) -> Violation | None:
        """The violation for the mode's own decision ``kind`` made when nothing it answers is asked (``what``: the
        decision described; ``waiting_for``: what the game waits for); None: the usual WRONG_TIMING."""
        return None

    def phase_begins(self, game: Game, seat: int, phase: int) -> Settle[None]:
        """Called (when ``phase_hook``) as ``seat``'s ``phase`` begins, before the skills of that moment."""
        return None
        yield  # pragma: no cover

    # ------------------------------------------------------------------ rounds, HP and card uses

    def round_begins(self, game: Game, round_number: int) -> Settle[None]:
        """Called (when ``round_hook``) before the turn that begins round ``round_number`` (1: the game's first
        turn; a new round whenever the turn order comes back to, or past, the first seat)."""
        return None
        yield  # pragma: no cover

    def hp_change(self, game: Game, seat: int, amount: int, source: int | None, is_damage: bool
                  ) -> Settle[tuple[int, str]]:
        """Called (when ``hp_hook``) just before ``seat`` loses ``amount`` HP: damage from ``source`` (None: no
        source) after every modification, or an HP loss (``is_damage`` False). Returns the amount that is dealt
        (0 or less: nothing happens) and the code for a log that records the change otherwise ("": the usual)."""
        return amount, ""
        yield  # pragma: no cover

    def card_used(self, game: Game, user: int, card_name: str, targets: tuple[int, ...]) -> None:
        """Called (when ``use_hook``) when a card's use is accepted, before it is settled, with its targets."""
