"""Cheat kinds of hegemony mode (国战), in the declarative style of clients/cheats/mutator.py, each registering itself
(clients/cheats/__init__.py imports this module). They find places only in hegemony games: a face-down general's
skill used without its reveal, a reveal out of timing, a same-kingdom kill without its penalty, a kill reward
miscounted, a careerist recorded as of its kingdom, a winner declared while a living character has no kingdom."""

from __future__ import annotations

from collections.abc import Iterator

from clients.cheats.mutator import HEGEMONY, Edit, Moment, cheat, copy_event, top_first
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.requests import PlayRequest
from verifier.packages.modes.hegemony import CAREERIST, HegemonyMode
from verifier.text import skill_zh

ONLY = (HEGEMONY,)
REVEAL_OUTCOMES = ("general_revealed", "kingdom_fixed")


def hegemony(m: Moment) -> HegemonyMode | None:
    mode = m.game.mode
    return mode if isinstance(mode, HegemonyMode) else None


def invokes(ev: pb.Event, seat: int, skill: str) -> bool:
    """Does the decision use ``skill`` (InvokeSkill, or a virtual card the skill makes) for ``seat``?"""
    kind = ev.WhichOneof("kind")
    if kind == "invoke_skill":
        return ev.invoke_skill.seat == seat and ev.invoke_skill.skill == skill
    if kind in ("use_card", "respond"):
        msg = ev.use_card if kind == "use_card" else ev.respond
        v = msg.card.virtual
        return msg.seat == seat and msg.card.WhichOneof("kind") == "virtual" and skill in (v.skill, v.base_skill)
    return False


@cheat("hidden_skill", "HIDDEN_SKILL", "a face-down general's skill used without revealing it first", ONLY)
def hidden_skill(m: Moment) -> Iterator[Edit]:
    if m.kind != "reveal_general" or m.event.reveal_general.timing != pb.REVEAL_TIMING_SKILL:
        return
    r = m.event.reveal_general
    events = m.log.events
    stop = m.index + 1
    while stop < len(events) and events[stop].WhichOneof("kind") in REVEAL_OUTCOMES:
        stop += 1
    # Only where the invoking decision comes right after the reveal's outcomes (no reward asked in between).
    if stop < len(events) and invokes(events[stop], r.seat, r.skill):
        # The invoking decision takes the reveal's place: the cheat is reported there.
        yield Edit(m.index, stop, (), m.index, f"seat {r.seat} uses {skill_zh(r.skill)} without revealing its general")


@cheat("reveal_out_of_timing", "REVEAL_TIMING", "a general revealed in the play phase as if it were the start phase",
       ONLY)
def reveal_out_of_timing(m: Moment) -> Iterator[Edit]:
    mode = hegemony(m)
    req = m.request
    if mode is None or not isinstance(req, PlayRequest) or req.seat is None or not m.awaits_play_action:
        return
    hidden = mode.hidden(req.seat)
    if hidden:
        ev = pb.Event()
        r = ev.reveal_general
        r.seat, r.timing = req.seat, pb.REVEAL_TIMING_START_PHASE
        r.which = pb.GENERAL_SLOT_MAIN if hidden[0] == 0 else pb.GENERAL_SLOT_DEPUTY
        yield m.insert([ev], f"seat {req.seat} reveals a general in their play phase")


@cheat("same_kingdom_kill_unpunished", "KILL_PENALTY", "a killer keeps their cards after killing their own kingdom",
       ONLY)
def same_kingdom_kill_unpunished(m: Moment) -> Iterator[Edit]:
    if m.kind != "cards_moved" or m.event.cards_moved.reason != pb.MOVE_REASON_KILL_PENALTY:
        return
    events = m.log.events
    if m.index and events[m.index - 1].cards_moved.reason == pb.MOVE_REASON_KILL_PENALTY:
        return  # not the first move of the penalty
    stop = m.index
    while stop < len(events) and events[stop].HasField("cards_moved") \
            and events[stop].cards_moved.reason == pb.MOVE_REASON_KILL_PENALTY:
        stop += 1
    yield m.remove(stop - m.index, f"seat {m.event.cards_moved.from_seat} keeps their cards after a same-kingdom kill")


@cheat("reward_miscounted", "KILL_REWARD", "a kill reward of one card more or fewer than the victim's kingdom gives",
       ONLY)
def reward_miscounted(m: Moment) -> Iterator[Edit]:
    if m.kind != "draw_cards" or m.event.draw_cards.reason != pb.DRAW_REASON_KILL_REWARD:
        return
    d = m.event.draw_cards
    if len(d.cards) > 1:
        ev = copy_event(m.event)
        del ev.draw_cards.cards[-1]
        yield m.replace(ev, f"seat {d.seat} draws {len(d.cards) - 1} for the kill, not {len(d.cards)}")
    rest = [c for c in top_first(m.game) if c not in d.cards]
    if rest and m.index + 1 < len(m.log.events):
        ev = copy_event(m.event)
        ev.draw_cards.cards.append(rest[0])
        yield m.replace(ev, f"seat {d.seat} draws {len(d.cards) + 1} for the kill, not {len(d.cards)}")


@cheat("careerist_not_made", "KINGDOM_MISMATCH", "a character who becomes a careerist recorded as of its kingdom",
       ONLY)
def careerist_not_made(m: Moment) -> Iterator[Edit]:
    if m.kind == "kingdom_fixed" and m.event.kingdom_fixed.kingdom == CAREERIST:
        ev = copy_event(m.event)
        ev.kingdom_fixed.kingdom = ev.kingdom_fixed.general_kingdom
        ev.kingdom_fixed.general_kingdom = ""
        yield m.replace(ev, f"seat {ev.kingdom_fixed.seat} is recorded as {ev.kingdom_fixed.kingdom}, not a careerist")


@cheat("winner_declared_early", "GAME_RESULT", "a kingdom declared the winner while a living character has no kingdom",
       ONLY)
def winner_declared_early(m: Moment) -> Iterator[Edit]:
    g = m.game
    if hegemony(m) is None or not m.awaits_play_action:
        return
    alive = [p for p in g.players if p.alive]
    known = {p.kingdom for p in alive if p.kingdom}
    if len(known) != 1 or CAREERIST in known or all(p.kingdom for p in alive):
        return
    kingdom = known.pop()
    ev = pb.Event()
    ev.game_over.side = pb.SIDE_KINGDOM
    ev.game_over.kingdom = kingdom
    ev.game_over.winners.extend(p.seat for p in g.players if p.kingdom == kingdom)
    yield m.insert([ev], f"{kingdom} is declared the winner while seat "
                   f"{next(p.seat for p in alive if not p.kingdom)} has no kingdom yet")
