"""Outcome pairing: which derived outcome a recorded one is about, and what is reported when none is.

A log may record outcomes (docs/log-format.md#outcomes); the engine derives its own, queued in order
(Verifier.expected). Each recorded outcome is paired with the derived one it is about, by its identity, and then
compared with it. The rules, each with its test in tests/test_pairing.py:

1. Identity (``outcome_key``). A recorded outcome pairs only with a derived one of the same kind about the same
   thing, never with one about something else just because it is of the same kind:
   a draw is about its seat and reason (a half-fish draw is never the draw phase's draw, seat 1's draw never
   seat 4's); damage about its target; a recovery, an HP loss, dying, a death, a turn, a rebirth and a judgment
   about its seat; a phase marker about its seat and phase; a card move about its reason and where the cards come
   from (``from_seat``, ``from_zone``); a reveal, a general turned up, a kingdom fixed, a reshuffle and the end
   are each the rules' one at that point.
2. Content. What the outcome then says (its cards, amount, HP after, source, nature, destination, ...) is its
   content: a difference there is a mismatch of the outcome it is about (``mismatch``: DRAW_COUNT, DRAW_NOT_TOP,
   DAMAGE_MISMATCH, HP_MISMATCH, ...), not a second outcome. Damage a mode had its say in (Mode.hp_change:
   first-out protection keeps the last HP) is that mode's code where the log disagrees on whether the character
   keeps its last HP, and the usual one for any other difference.
3. Which one (``paired``). Among the derived outcomes of its kind, the first equal one, else the first with its
   identity. A recorded kill reward or penalty pairs only with a derived one (none: it was not owed).
4. Equal (``same_outcome``). Damage whose source is already dead, and the death it causes, may be recorded with
   that source or with none (docs/rules.md#dead-source). Cards (docs/log-format.md#move-order): a move from or to
   the draw pile keeps the pile's order (top first) and is compared as a list; every other move is a set of
   cards, the same in any order, while a missing, extra or repeated card is still a mismatch
   (``same_moved_cards``).
5. None is about it (``rules_outcome_of_kind``, ``unexpected``). It takes no derived outcome away. A phase or
   turn marker about another seat or phase is reported against the rules' marker here (TURN_MISMATCH), damage to
   another target against the rules' damage (DAMAGE_MISMATCH), a recorded reward or penalty against a derived
   one of those; only these: a draw about another seat or reason is UNEXPECTED_OUTCOME, never DRAW_COUNT. A
   reward, penalty or ending the rules do not give is KILL_REWARD, KILL_PENALTY or GAME_RESULT, a rebirth not
   due REBIRTH_COUNT, anything once the game is over and nothing derived is left AFTER_GAME_OVER. A mode with a
   rule of its own about it has the first say (``unpaired``; Mode.unexpected_outcome: a drain where none is due
   is DRAIN_MISMATCH, damage a protection prevents in full PROTECTION_MISMATCH).
6. Skipped. The derived outcomes a paired one skips over are added to the replay as derived (the Verifier does
   that, Verifier._flush_expected, as it drives the engine and annotates); in a complete log each is itself a
   violation (``left_out_code``): MISSING_OUTCOME, but a reward, penalty or equipment slot left out is its own
   rule broken (KILL_REWARD, KILL_PENALTY, EQUIP_SLOT), a rebirth REBIRTH_COUNT, and a mode's own outcome its
   mode's code where the mode says so (Mode.keeps_code_when_missing: a drain left out is DRAIN_MISMATCH). This
   module only answers which and what.

Compiled with the replay driver (setup.py), which calls it for every recorded outcome.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sgsverify.v1 import game_log_pb2 as pb
from verifier import text
from verifier.engine.game import Game, Outcome, Violation
from verifier.generals import standard_generals


def is_kill_consequence(ev: pb.Event, kind: str) -> bool:
    """A kill reward (draw 3) or the lord's kill penalty (docs/rules.md#kill-reward, docs/rules.md#kill-penalty)."""
    if kind == "draw_cards":
        return ev.draw_cards.reason == pb.DRAW_REASON_KILL_REWARD
    if kind == "cards_moved":
        return ev.cards_moved.reason == pb.MOVE_REASON_KILL_PENALTY
    return False


def outcome_key(ev: pb.Event, kind: str) -> tuple[int, ...]:
    """What an outcome is about — its identity (docs/log-format.md#outcomes): a recorded outcome pairs only with
    a derived one of the same kind and identity. A draw is about its seat and reason; damage about its target;
    a recovery, an HP loss, dying, a death, a turn, a rebirth or a judgment about its seat; a phase marker about
    its seat and phase; a card move about its reason and where the cards come from (seat and zone). What the
    outcome then says (cards, amount, HP after, source, nature, destination, ...) is its content: a difference
    there is a mismatch of that outcome. A reveal, a general turned up, a kingdom fixed, a reshuffle and the end
    are each the rules' one at that point (their codes name a seat, a general or a kingdom that differs)."""
    m = getattr(ev, kind)
    if kind == "draw_cards":
        return (m.seat, m.reason)
    if kind == "damage":
        return (m.target,)
    if kind in ("recover", "lose_hp", "dying", "death", "turn_start", "rebirth", "judgment"):
        return (m.seat,)
    if kind == "phase_start":
        return (m.seat, m.phase)
    if kind == "cards_moved":
        return (m.reason, m.from_seat if m.HasField("from_seat") else -1, m.from_zone)
    return ()


# Outcomes whose recorded form, about another seat, phase or target than any derived one, is reported against
# the rules' outcome of that kind here (docs/log-format.md#outcomes: a phase or turn marker about another seat
# or phase is TURN_MISMATCH, damage to another target DAMAGE_MISMATCH); any other unpaired outcome is
# UNEXPECTED_OUTCOME (or the code of a reward, penalty or ending: Verifier._unexpected).
NAMES_THE_RULES_OUTCOME = frozenset({"turn_start", "phase_start", "damage"})

# Zones whose cards are in an order the rules fix: a move from or to the draw pile keeps the pile's order
# (top first: 不屈 takes the top cards one by one). Every other recorded move is a set of cards.
ORDERED_ZONES = frozenset({pb.ZONE_DRAW_PILE})


def same_moved_cards(derived: pb.CardsMoved, recorded: pb.CardsMoved) -> bool:
    """One move, the rules putting no order on its cards (docs/log-format.md#move-order): the same cards, from
    and to the same places, for the same reason, in any order — a kill penalty's equipment in use order or in
    slot order. A move from or to the draw pile is ordered (ORDERED_ZONES): compared as a list."""
    if derived.from_zone in ORDERED_ZONES or derived.to_zone in ORDERED_ZONES:
        return False
    if sorted(derived.cards) != sorted(recorded.cards):
        return False
    as_derived = pb.CardsMoved()
    as_derived.CopyFrom(recorded)
    del as_derived.cards[:]
    as_derived.cards.extend(derived.cards)
    return bool(as_derived == derived)


def paired(expected: Iterable[Outcome], ev: pb.Event, kind: str, game: Game | None) -> int | None:
    """Which derived outcome a recorded one stands for: the first equal one, else the first of the
    same kind about the same thing (its identity: seat, phase, reason, target, ...). Never one about
    something else: a recorded outcome that stands for none is unexpected, not a mismatch."""
    first_key = None
    key = outcome_key(ev, kind)
    claim = is_kill_consequence(ev, kind)
    for i, o in enumerate(expected):
        if o.event.WhichOneof("kind") != kind:
            continue
        if claim and not is_kill_consequence(o.event, kind):
            # A recorded reward or penalty stands only for a derived one (none: it was not owed).
            continue
        if same_outcome(o.event, ev, game):
            return i
        if first_key is None and outcome_key(o.event, kind) == key:
            first_key = i
    return first_key


def same_outcome(derived: pb.Event, recorded: pb.Event, game: Game | None) -> bool:
    """Equal outcomes, counting a dead damage source as no source (docs/rules.md): damage whose
    source is already dead, and the death it causes, may be recorded with or without that source."""
    if derived == recorded:
        return True
    kind = derived.WhichOneof("kind")
    if kind == "cards_moved" and recorded.WhichOneof("kind") == kind:
        return same_moved_cards(derived.cards_moved, recorded.cards_moved)
    if kind not in ("damage", "death") or recorded.WhichOneof("kind") != kind:
        return False
    field = "source" if kind == "damage" else "killer"
    d = getattr(derived, kind)
    if not d.HasField(field) or game is None or game.players[getattr(d, field)].alive:
        return False
    without = pb.Event()
    without.CopyFrom(derived)
    getattr(without, kind).ClearField(field)
    return bool(without == recorded)


def mismatch(out: Outcome, ev: pb.Event, kind: str) -> Violation:
    """The violation for a recorded outcome that differs from the derived one."""
    want, got = out.event, ev
    detail = f"recorded «{text.describe(got)}», the rules give «{text.describe(want)}»"
    code = out.code
    if kind == "draw_cards":
        w, g = want.draw_cards, got.draw_cards
        if code != "KILL_REWARD":
            code = "DRAW_NOT_TOP" if (w.seat == g.seat and len(w.cards) == len(g.cards)
                                      and w.reason == g.reason) else "DRAW_COUNT"
        return Violation(code, detail, g.seat)
    if kind == "damage":
        w2, g2 = want.damage, got.damage
        same = (w2.target == g2.target and w2.amount == g2.amount and w2.nature == g2.nature
                and w2.HasField("source") == g2.HasField("source") and w2.source == g2.source
                and w2.chained == g2.chained)
        if code != "DAMAGE_MISMATCH" and w2.target == g2.target and (w2.hp_after < 1) != (g2.hp_after < 1):
            # A mode's own say in this damage (Mode.hp_change: first-out protection) is about whether it leaves the
            # character its last HP: a log that disagrees on that breaks the mode's rule; any other difference is
            # the usual one.
            return Violation(code, detail, g2.target)
        return Violation("HP_MISMATCH" if same else "DAMAGE_MISMATCH", detail, g2.target)
    if kind == "recover":
        same = want.recover.seat == got.recover.seat and want.recover.amount == got.recover.amount
        return Violation("HP_MISMATCH" if same else "RECOVER_MISMATCH", detail, got.recover.seat)
    if kind == "rebirth":
        # (The derived general is of the dead general's kingdom: another kingdom is that rule broken.)
        generals = standard_generals()
        w3, g3 = generals.get(want.rebirth.general), generals.get(got.rebirth.general)
        wrong_kingdom = w3 is not None and (g3 is None or g3.kingdom != w3.kingdom)
        return Violation("REBIRTH_KINGDOM" if wrong_kingdom else "REBIRTH_MISMATCH", detail, got.rebirth.seat)
    return Violation(code, detail)


def rules_outcome_of_kind(expected: Iterable[Outcome], ev: pb.Event, kind: str) -> int | None:
    """For a recorded outcome no derived one is about: the rules' outcome of its kind here, to report it
    against — only for a turn or phase marker, damage, and a recorded reward or penalty (the first derived
    one of those); None for every other kind (UNEXPECTED_OUTCOME: a draw of another seat or reason is not
    a wrong count of this one)."""
    claim = is_kill_consequence(ev, kind)
    if not claim and kind not in NAMES_THE_RULES_OUTCOME:
        return None
    for i, o in enumerate(expected):
        if o.event.WhichOneof("kind") == kind and (not claim or is_kill_consequence(o.event, kind)):
            return i
    return None


def unexpected(ev: pb.Event, kind: str, after_the_end: bool) -> Violation:
    """The violation for a recorded outcome no derived one is about and that names no rules' outcome of its kind
    (``rules_outcome_of_kind``): a reward, penalty, ending or rebirth the rules do not give, anything after the
    end (``after_the_end``: the game is over and nothing derived is left), else UNEXPECTED_OUTCOME."""
    what = text.describe(ev)
    if after_the_end:
        return Violation("AFTER_GAME_OVER", f"the game is already over: {what}")
    if kind == "draw_cards" and ev.draw_cards.reason == pb.DRAW_REASON_KILL_REWARD:
        return Violation("KILL_REWARD", f"a kill reward was recorded that the rules do not give here: {what}",
                         ev.draw_cards.seat)
    if kind == "cards_moved" and ev.cards_moved.reason == pb.MOVE_REASON_KILL_PENALTY:
        return Violation("KILL_PENALTY", f"a kill penalty was recorded that the rules do not give here: {what}")
    if kind == "game_over":
        return Violation("GAME_RESULT", f"the log ends the game but by the rules it goes on: {what}")
    if kind == "rebirth":
        return Violation("REBIRTH_COUNT", f"no rebirth is due here: seat {ev.rebirth.seat} does not hold the "
                         "sacrifices a rebirth needs, or is not dead: " + what, ev.rebirth.seat)
    return Violation("UNEXPECTED_OUTCOME", f"the rules produce no such outcome here: {what}")


def unpaired(expected: Sequence[Outcome], ev: pb.Event, kind: str, game: Game | None, after_the_end: bool
             ) -> Violation:
    """The violation for a recorded outcome no derived one is about (rule 5): the mode's own, where it has a rule
    about it (Mode.unexpected_outcome; none once the game is over), else a mismatch of the rules' outcome of its
    kind here (``rules_outcome_of_kind``), else what it claims (``unexpected``)."""
    own = None if game is None or after_the_end else game.mode.unexpected_outcome(game, ev, kind)
    if own is not None:
        return own
    other = rules_outcome_of_kind(expected, ev, kind)
    return mismatch(expected[other], ev, kind) if other is not None else unexpected(ev, kind, after_the_end)


# Derived outcomes whose own rule a complete log breaks by leaving them out (rule 6), not MISSING_OUTCOME.
OWN_CODE_WHEN_LEFT_OUT = frozenset({"KILL_REWARD", "KILL_PENALTY", "EQUIP_SLOT"})


def left_out_code(out: Outcome, game: Game | None) -> str:
    """The code of a derived outcome that a log claiming complete outcomes leaves out (rule 6)."""
    if out.code in OWN_CODE_WHEN_LEFT_OUT or (game is not None and game.mode.keeps_code_when_missing(out.code)):
        return out.code
    return "REBIRTH_COUNT" if out.event.HasField("rebirth") else "MISSING_OUTCOME"
