"""What the engine waits for: each request names who must decide and what answers fit.

A settlement generator yields a request and receives the answer: the decision event
(a `pb.Event`), ``None`` for a decline (explicit or implicit), or ``UNANSWERED`` when a
mandatory request was not answered and the engine must go on with a default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Final

from sgsverify.v1 import game_log_pb2 as pb


class _Unanswered:
    """The log went on without answering a mandatory request that has a default."""

    def __repr__(self) -> str:
        return "UNANSWERED"


UNANSWERED: Final = _Unanswered()

# A shuffle request is answered with the new draw pile, top first.
Answer = pb.Event | None | _Unanswered | list[int] | int  # (int: a judgment card, answering JudgeChance)


@dataclass(slots=True)
class Request:
    """Base: ``seat`` must answer (None: any living seat may)."""

    seat: int | None
    # Event kinds (the oneof names) that answer this request.
    kinds: frozenset[str] = field(default=frozenset())
    # May the request be declined (explicitly, or implicitly by a log that goes on)?
    optional: bool = True
    # For mandatory requests: may the engine go on with a default when the log does
    # not answer (the default is flagged)? If not, a non-answering event is rejected.
    has_default: bool = False

    def describe(self) -> str:
        return type(self).__name__

    def fits(self, ev: pb.Event, kind: str, seat: int, card_name: str | None) -> bool:
        """Does this decision answer the request? ``card_name`` is the name of the card a
        Respond offers (None when it is unknown: then the engine judges it)."""
        if kind not in self.kinds or (self.seat is not None and self.seat != seat):
            # A mode's own decision that may come while anything is asked of its maker (hegemony's
            # reveal of a general, before the decision that invokes its skill): the mode takes it.
            # A sacrifice comes only while its giver's own play phase waits (docs/rules.md#rebirth, R-1).
            if kind == "sacrifice":
                return isinstance(self, PlayRequest) and self.seat == seat
            # A soul's act (dark souls) comes while a play phase waits, whoever's: the mode judges it
            # (docs/rules.md#dark-souls).
            if kind == "soul_act":
                return isinstance(self, PlayRequest)
            return kind in ANYTIME_KINDS and self.takes_anytime(ev, seat)
        if kind == "respond" and card_name is not None:
            return name_matches(card_name, self.answer_names())
        if kind == "invoke_skill":
            return self.invokable(ev.invoke_skill.skill)
        return True

    def answer_names(self) -> frozenset[str]:
        return frozenset()

    def invokable(self, skill: str) -> bool:
        return False

    def takes_anytime(self, ev: pb.Event, seat: int) -> bool:
        """Does a mode's own decision (ANYTIME_KINDS) by ``seat`` come while this is asked (rather than after it
        was declined)? A reveal for a skill comes while its maker's play phase waits, while an offer is made for
        that skill, or while a card is asked for that the skill can give (SKILL_ANSWERS); not while anything else
        is asked."""
        return False


def name_matches(name: str, names: frozenset[str]) -> bool:
    """Fire and thunder 杀 are 杀 for every purpose (docs/rules.md#elemental-slash), and 无懈可击·国 is a
    无懈可击 (docs/rules.md#heg-nullification)."""
    return name in names or ("slash" in names and name.endswith("_slash")) or (
        "nullification" in names and name.endswith("_nullification"))


@dataclass(slots=True)
class PlayRequest(Request):
    """A play-phase action: use a card, invoke a skill, or end the play phase."""

    def describe(self) -> str:
        return f"seat {self.seat} to act in their play phase"

    def takes_anytime(self, ev: pb.Event, seat: int) -> bool:
        return self.seat == seat

    def invokable(self, skill: str) -> bool:
        return True


@dataclass(slots=True)
class CardRequest(Request):
    """Use or play a card in response (闪 to 杀, 杀 in 决斗, ...)."""

    names: frozenset[str] = field(default=frozenset())
    reason: str = ""
    # Equipment effects or skills that may be invoked instead (e.g. eight_diagram).
    skills: tuple[str, ...] = ()
    # The character the answering card would be aimed at, where it matters (借刀杀人).
    target: int | None = None

    def describe(self) -> str:
        return f"seat {self.seat} to respond with {'/'.join(sorted(self.names))} ({self.reason})"

    def takes_anytime(self, ev: pb.Event, seat: int) -> bool:
        return self.seat == seat and answers(ev.reveal_general.skill, self.names)

    def answer_names(self) -> frozenset[str]:
        return self.names

    def invokable(self, skill: str) -> bool:
        return skill in self.skills


@dataclass(slots=True)
class NullifyRequest(Request):
    """A window in which anyone may play 无懈可击 against an effect."""

    trick: str = ""
    target: int | None = None
    # The delayed trick card being judged, when the window is for one (Respond.trick_card).
    card: int | None = None

    def describe(self) -> str:
        return f"anyone to nullify {self.trick}"

    def takes_anytime(self, ev: pb.Event, seat: int) -> bool:
        return answers(ev.reveal_general.skill, frozenset({"nullification"}))

    def answer_names(self) -> frozenset[str]:
        return frozenset({"nullification"})

    def fits(self, ev: pb.Event, kind: str, seat: int, card_name: str | None) -> bool:
        if kind == "respond":
            r = ev.respond
            if r.HasField("target") and r.target != self.target:
                return False
            if r.HasField("trick_card") and r.trick_card != self.card:
                return False
        return Request.fits(self, ev, kind, seat, card_name)


@dataclass(slots=True)
class PeachRequest(Request):
    """Ask ``seat`` whether to save the dying character."""

    dying: int = -1

    def describe(self) -> str:
        return f"seat {self.seat} to save dying seat {self.dying}"

    def takes_anytime(self, ev: pb.Event, seat: int) -> bool:
        return self.seat == seat and answers(ev.reveal_general.skill, self.answer_names())

    def answer_names(self) -> frozenset[str]:
        return frozenset({"peach", "analeptic"}) if self.seat == self.dying else frozenset({"peach"})

    def fits(self, ev: pb.Event, kind: str, seat: int, card_name: str | None) -> bool:
        if kind == "respond" and ev.respond.HasField("target") and ev.respond.target != self.dying:
            return False
        return Request.fits(self, ev, kind, seat, card_name)


@dataclass(slots=True)
class DiscardRequest(Request):
    """The discard phase: discard exactly ``count`` hand cards."""

    count: int = 0

    def describe(self) -> str:
        return f"seat {self.seat} to discard {self.count} card(s)"


@dataclass(slots=True)
class ChoiceRequest(Request):
    """Choose ``count`` cards among ``options`` (过河拆桥, 五谷丰登, 寒冰剑, ...)."""

    options: tuple[int, ...] = ()
    count: int = 1
    reason: str = ""

    def describe(self) -> str:
        return f"seat {self.seat} to choose {self.count} card(s) for {self.reason}"


@dataclass(slots=True)
class OfferRequest(Request):
    """An optional effect the seat may invoke now (e.g. 寒冰剑, 贯石斧, 青龙偃月刀)."""

    skill: str = ""
    # Card names that may be used to take the offer (青龙偃月刀 takes a 杀).
    names: frozenset[str] = field(default=frozenset())
    # The character the effect concerns (e.g. whose horse 麒麟弓 may discard).
    target: int | None = None

    def describe(self) -> str:
        return f"seat {self.seat} may invoke {self.skill}"

    def takes_anytime(self, ev: pb.Event, seat: int) -> bool:
        return self.seat == seat and ev.reveal_general.skill == self.skill

    def answer_names(self) -> frozenset[str]:
        return self.names

    def invokable(self, skill: str) -> bool:
        return skill == self.skill


@dataclass(slots=True)
class PickRequest(Request):
    """Pick a general from ``candidates`` (modes with generals, before the first turn)."""

    candidates: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"seat {self.seat} to pick a general from {', '.join(self.candidates)}"


@dataclass(slots=True)
class SuitRequest(Request):
    """Name a suit (反间)."""

    reason: str = ""

    def describe(self) -> str:
        return f"seat {self.seat} to name a suit for {self.reason}"


@dataclass(slots=True)
class OptionRequest(Request):
    """Choose one of ``options`` by name (ChooseOption), e.g. a reward's "draw" or "recover"."""

    options: tuple[str, ...] = ()
    reason: str = ""
    # Asked of a character that has just died (断肠's choice on its own death): its one decision after death.
    of_the_dead: bool = False

    def describe(self) -> str:
        return f"seat {self.seat} to choose {' or '.join(self.options)} for {self.reason}"


@dataclass(slots=True)
class RevealRequest(Request):
    """A moment at which ``seat`` may turn face-down generals up (hegemony: the start of their start phase)."""

    def describe(self) -> str:
        return f"seat {self.seat} may reveal a general"

    def fits(self, ev: pb.Event, kind: str, seat: int, card_name: str | None) -> bool:
        """Only the start phase's own reveal answers it; a reveal for a skill comes after it was declined."""
        if kind == "reveal_general" and ev.reveal_general.timing != pb.REVEAL_TIMING_START_PHASE:
            return False
        return Request.fits(self, ev, kind, seat, card_name)


@dataclass(slots=True)
class ModeRequest(Request):
    """A mode's own ask (dark souls: the possession, 罗汉's offer), answered by the mode's own decisions."""

    what: str = ""

    def describe(self) -> str:
        return f"seat {self.seat} to {self.what}"


@dataclass(slots=True)
class ChanceRequest(Request):
    """Chance, not a player's decision: answered by the driver, never declined (a driver with nothing to
    say answers None: the rules' default)."""

    optional: bool = False


@dataclass(slots=True)
class ShuffleRequest(ChanceRequest):
    """The discard pile becomes the new draw pile: answered with the new pile, top first."""

    label: str = ""
    cards: tuple[int, ...] = ()


@dataclass(slots=True)
class DrawChance(ChanceRequest):
    """``seat`` is about to draw ``count`` cards (only when the game adopts recorded outcomes: Game.adopting).
    Answered with the cards a log recorded drawing, which are taken when they can be (all in the draw
    pile), or None: the top cards, as the rules give."""

    count: int = 0
    reason: int = 0


@dataclass(slots=True)
class JudgeChance(ChanceRequest):
    """``seat`` is about to judge (Game.adopting): answered with the card a log recorded, taken when it is in
    the draw pile, or None: the top card."""

    reason: str = ""


@dataclass(slots=True)
class OrderChance(ChanceRequest):
    """Several effects of ``seat`` trigger at one moment, and their owner orders them, every order being legal
    (docs/rules.md#simultaneous-triggers). Asked only when the game adopts recorded outcomes (Game.adopting), for the
    driver to follow the order the log shows. ``options`` are the effects still to resolve, each as the effect
    names it stands for; ``outcomes`` the outcome kind each one starts with when it asks nothing first (白银狮子's
    "recover"), "" for an effect that is offered first. Answered with the index of the option to resolve next, or
    None: the first (the derived order)."""

    options: tuple[tuple[str, ...], ...] = ()
    outcomes: tuple[str, ...] = ()

    def describe(self) -> str:
        return f"the order of seat {self.seat}'s simultaneous effects ({', '.join('/'.join(o) for o in self.options)})"

    def pick(self, ev: pb.Event | None) -> int | None:
        """The option the recorded event ``ev`` shows resolving first: the one whose skill an InvokeSkill (or a
        RevealGeneral for a skill) of this seat names, or the one starting with an outcome of ``ev``'s kind about
        this seat; None when ``ev`` shows none of them (the derived order goes on)."""
        if ev is None:
            return None
        kind = ev.WhichOneof("kind")
        if kind is None:
            return None
        msg = getattr(ev, kind)
        skill = msg.skill if kind in ("invoke_skill", "reveal_general") and msg.seat == self.seat else ""
        if skill:
            return next((i for i, names in enumerate(self.options) if skill in names), None)
        if kind in self.outcomes and getattr(msg, "seat", None) == self.seat:
            return self.outcomes.index(kind)
        return None


@cache
def draw_chance(seat: int, count: int, reason: int) -> DrawChance:
    return DrawChance(seat, count=count, reason=reason)


@cache
def judge_chance(seat: int, reason: str) -> JudgeChance:
    return JudgeChance(seat, reason=reason)


def order_chance(seat: int, options: tuple[tuple[str, ...], ...], outcomes: tuple[str, ...]) -> OrderChance:
    return OrderChance(seat, options=options, outcomes=outcomes)


DECISION_KINDS: Final = frozenset(
    {"use_card", "respond", "decline", "choose_cards", "invoke_skill", "end_play_phase", "pick_general",
     "choose_suit", "reveal_general", "choose_option", "sacrifice", "possess", "soul_act"}
)
# Decisions a mode takes whatever is being asked (Request.fits; Mode.intercept). (A sacrifice, the rebirth
# variant's, is the mode's too but fits only its giver's own play phase: Request.fits.)
ANYTIME_KINDS: Final = frozenset({"reveal_general"})
# Decisions that only a mode of its own takes (Mode.decisions); the others reject them (UNSUPPORTED_EVENT).
MODE_ONLY_KINDS: Final[dict[str, str]] = {
    "sacrifice": "a sacrifice exists only in the rebirth variant (options.rebirth, docs/rules.md#rebirth)",
    "reveal_general": "a general is revealed only in hegemony mode, where generals are dealt face down "
                      "(docs/rules.md#hegemony)",
    "possess": "a soul possesses a character only with dark souls (options.dark_souls, docs/rules.md#dark-souls)",
    "soul_act": "a soul acts only with dark souls (options.dark_souls, docs/rules.md#dark-souls)",
}
# The cards each skill can answer a request with (its conversions and what it provides), filled by every Ruleset:
# a reveal for a skill comes while a request it can answer is open (Request.takes_anytime), else after it.
SKILL_ANSWERS: dict[str, frozenset[str]] = {}


def answers(skill: str, names: frozenset[str]) -> bool:
    return any(name_matches(n, names) for n in SKILL_ANSWERS.get(skill, ()))


# The kinds each request takes, built once (requests are made for every decision).
PLAY_KINDS: Final = frozenset({"use_card", "invoke_skill", "end_play_phase"})
RESPOND_KINDS: Final = frozenset({"respond", "decline"})
RESPOND_OR_SKILL_KINDS: Final = frozenset({"respond", "decline", "invoke_skill"})
CHOOSE_KINDS: Final = frozenset({"choose_cards"})
CHOOSE_OR_DECLINE_KINDS: Final = frozenset({"choose_cards", "decline"})
OFFER_KINDS: Final = frozenset({"invoke_skill", "decline"})
OFFER_OR_RESPOND_KINDS: Final = frozenset({"invoke_skill", "decline", "respond"})
PICK_KINDS: Final = frozenset({"pick_general"})
SUIT_KINDS: Final = frozenset({"choose_suit"})
OPTION_KINDS: Final = frozenset({"choose_option", "decline"})
REVEAL_KINDS: Final = frozenset({"reveal_general", "decline"})


# Requests are never changed once made: the factories of those asked for again and again share one
# request per set of arguments.


@cache
def play_request(seat: int) -> PlayRequest:
    """One per seat (a play phase asks for many)."""
    return PlayRequest(seat, PLAY_KINDS, optional=False)


@cache
def card_request(
    seat: int, names: frozenset[str], reason: str, skills: tuple[str, ...] = (), target: int | None = None
) -> CardRequest:
    kinds = RESPOND_OR_SKILL_KINDS if skills else RESPOND_KINDS
    return CardRequest(seat, kinds, names=names, reason=reason, skills=skills, target=target)


@cache
def nullify_request(trick: str, target: int | None, card: int | None = None) -> NullifyRequest:
    """One window's request per (trick, target, card)."""
    return NullifyRequest(None, RESPOND_KINDS, trick=trick, target=target, card=card)


@cache
def peach_request(seat: int, dying: int) -> PeachRequest:
    return PeachRequest(seat, RESPOND_KINDS, dying=dying)


@cache
def discard_request(seat: int, count: int) -> DiscardRequest:
    """Discard ``count`` cards; with nothing due (count 0) the request is optional and only catches a
    voluntary discard, which the rules forbid (docs/rules.md#hand-limit)."""
    if count <= 0:
        return DiscardRequest(seat, CHOOSE_OR_DECLINE_KINDS, optional=True, count=0)
    return DiscardRequest(seat, CHOOSE_KINDS, optional=False, has_default=True, count=count)


def choice_request(
    seat: int, options: tuple[int, ...], count: int, reason: str, optional: bool = False
) -> ChoiceRequest:
    kinds = CHOOSE_OR_DECLINE_KINDS if optional else CHOOSE_KINDS
    return ChoiceRequest(seat, kinds, optional=optional, options=options, count=count, reason=reason)


def offer_request(seat: int, skill: str, names: frozenset[str] = frozenset(), target: int | None = None
                  ) -> OfferRequest:
    kinds = OFFER_OR_RESPOND_KINDS if names else OFFER_KINDS
    return OfferRequest(seat, kinds, skill=skill, names=names, target=target)


def pick_request(seat: int, candidates: tuple[str, ...]) -> PickRequest:
    return PickRequest(seat, PICK_KINDS, optional=False, candidates=candidates)


def suit_request(seat: int, reason: str) -> SuitRequest:
    return SuitRequest(seat, SUIT_KINDS, optional=False, has_default=True, reason=reason)


def option_request(seat: int, options: tuple[str, ...], reason: str, optional: bool = True,
                   of_the_dead: bool = False) -> OptionRequest:
    return OptionRequest(seat, OPTION_KINDS if optional else frozenset({"choose_option"}), optional=optional,
                         has_default=not optional, options=options, reason=reason, of_the_dead=of_the_dead)


def reveal_request(seat: int) -> RevealRequest:
    return RevealRequest(seat, REVEAL_KINDS)


def mode_request(seat: int, kinds: frozenset[str], what: str, optional: bool = True, has_default: bool = False
                 ) -> ModeRequest:
    return ModeRequest(seat, kinds, optional=optional, has_default=has_default, what=what)
