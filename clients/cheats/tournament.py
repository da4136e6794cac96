"""Cheat kinds for seed 003's tournament house rules without decisions of their own — the last-three clock and
first-out protection (docs/rules.md#last-three-clock, docs/rules.md#first-out-protection) — in the declarative
style of clients/cheats/mutator.py (clients/cheats/__init__.py imports this module, whose kinds register
themselves). They find places only in games played with those options (`sgs-verify cheats --last-three-clock`,
`--protected-seat`; clients/selfplay/tournament.py)."""

from __future__ import annotations

from collections.abc import Iterator

from clients.cheats.mutator import IDENTITY, Edit, Moment, cheat, copy_event
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.requests import DECISION_KINDS, PlayRequest
from verifier.packages.modes.first_out import FirstOutProtection
from verifier.packages.modes.last_three import LastThreeClock

# ---------------------------------------------------------------------------- the last-three clock


def drain_losses(m: Moment) -> int:
    """At the first HP loss of a drain recorded in the log: how many losses the drain records (a run of two or more
    losses: every living character loses 1, and at least two are alive); 0 anywhere else."""
    events = m.log.events
    if m.kind != "lose_hp" or not isinstance(m.game.mode, LastThreeClock) or m.game.mode.drains == 0 \
            or (m.index and events[m.index - 1].HasField("lose_hp")):
        return 0
    count = 0
    while m.index + count < len(events) and events[m.index + count].HasField("lose_hp"):
        count += 1
    return count if count >= 2 else 0


@cheat("drain_skipped", "DRAIN_MISMATCH", "a drain of the last-three clock left out of a complete log",
       modes=(IDENTITY,))
def drain_skipped(m: Moment) -> Iterator[Edit]:
    count = drain_losses(m)
    if count:
        yield m.remove(count, f"the drain at the start of round {m.game.round_number} ({count} HP losses) is not "
                       "recorded")


def lose_hp(seat: int, hp_after: int) -> pb.Event:
    ev = pb.Event()
    ev.lose_hp.seat = seat
    ev.lose_hp.amount = 1
    ev.lose_hp.hp_after = hp_after
    return ev


def lord_plays_next(m: Moment) -> bool:
    """Is the log's next decision after this turn marker the lord's play-phase action (so that the verifier, judging
    HP losses recorded before the marker, is at the beginning of that turn: nothing of it is skipped)?"""
    lord = m.event.turn_start.seat
    for ev in m.log.events[m.index + 1:]:
        kind = ev.WhichOneof("kind")
        if kind in DECISION_KINDS:
            return kind in ("use_card", "end_play_phase") and getattr(ev, kind).seat == lord
    return False


@cheat("drain_too_early", "DRAIN_MISMATCH", "a drain recorded at the start of a round before the clock's fourth "
       "round after three were left", modes=(IDENTITY,))
def drain_too_early(m: Moment) -> Iterator[Edit]:
    g = m.game
    mode = g.mode
    if m.kind != "turn_start" or not isinstance(mode, LastThreeClock) or m.event.turn_start.seat != mode.first_seat(g) \
            or not lord_plays_next(m):
        return
    first = mode.drain_round()
    if first is not None and g.round_number >= first:
        return
    alive = g.alive_seats(m.event.turn_start.seat)
    if any(g.players[s].hp < 2 for s in alive):
        return  # (a made-up loss to 0 HP would be a made-up dying too)
    yield m.insert([lose_hp(s, g.players[s].hp - 1) for s in alive],
                   f"a drain recorded at the start of round {g.round_number}, where none is due")


# ---------------------------------------------------------------------------- first-out protection


def protected_changes_so_far(log: pb.GameLog, index: int, seat: int) -> int:
    """The damage and HP losses of ``seat`` the log records up to event ``index``, that one included."""
    n = 0
    for ev in log.events[:index + 1]:
        if (ev.HasField("damage") and ev.damage.target == seat) or (ev.HasField("lose_hp") and ev.lose_hp.seat == seat):
            n += 1
    return n


@cheat("protection_ignored", "PROTECTION_MISMATCH", "damage the first-out protection reduces recorded in full (the "
       "protected character below 1 HP)", modes=(IDENTITY,))
def protection_ignored(m: Moment) -> Iterator[Edit]:
    """At a decision (where everything recorded before it is derived), the damage or HP loss of the protected
    character the protection reduced since the previous decision, recorded in full instead."""
    mode = m.game.mode
    if m.request is None or not isinstance(mode, FirstOutProtection) or not mode.reduced:
        return
    seat = mode.protected
    for j, ev in m.since_last_decision():
        kind = ev.WhichOneof("kind")
        if kind not in ("damage", "lose_hp") or (ev.damage.target if kind == "damage" else ev.lose_hp.seat) != seat:
            continue
        prevented = mode.reduced.get(protected_changes_so_far(m.log, j, seat))
        if prevented:
            full = copy_event(ev)
            change = full.damage if kind == "damage" else full.lose_hp
            change.amount += prevented
            change.hp_after -= prevented
            yield Edit(j, j + 1, (full,), j, f"protected seat {seat} recorded losing {change.amount} HP, to "
                       f"{change.hp_after}, where the protection keeps it at 1")


@cheat("protected_hit_at_one_hp", "PROTECTION_MISMATCH", "damage the first-out protection prevents in full (at 1 "
       "HP) recorded", modes=(IDENTITY,))
def protected_hit_at_one_hp(m: Moment) -> Iterator[Edit]:
    """Right after the protection prevented a change in full (at the log's next decision, a play-phase action), the
    damage recorded as if dealt."""
    mode = m.game.mode
    if m.request is None or not isinstance(mode, FirstOutProtection) or not just_prevented(m) \
            or not isinstance(m.request, PlayRequest):
        # (Before a play-phase action, where no response window is open: one open would be declined to fit the
        # made-up damage, as for any recorded outcome the game has no place for, and its declines could end the
        # protection first.)
        return
    seat = mode.protected
    assert seat is not None
    source = mode.prevented[-1]
    if m.game.players[seat].hp != 1 or not mode.protects(seat, source):
        return
    ev = pb.Event()
    if source is not None:
        ev.damage.source = source
    ev.damage.target = seat
    ev.damage.amount = 1
    ev.damage.hp_after = 0
    yield m.insert([ev], f"damage to protected seat {seat} at 1 HP recorded as dealt")


# What the finder last saw of a log's preventions, at its decisions: (log, its length) -> (the decision's index,
# preventions so far).
_PREVENTED_SEEN: dict[tuple[int, int], tuple[int, int]] = {}


def just_prevented(m: Moment) -> bool:
    """Did the protection prevent a change in full since the log's previous decision (finders see a log's moments
    in order, each with the engine's state there)?"""
    mode = m.game.mode
    assert isinstance(mode, FirstOutProtection)
    key = (id(m.log), len(m.log.events))
    if not _PREVENTED_SEEN or next(iter(_PREVENTED_SEEN))[0] != key[0] or m.index == 0:
        _PREVENTED_SEEN.clear()  # (a new log: what was seen of the others is of no more use)
    last = _PREVENTED_SEEN.get(key)
    _PREVENTED_SEEN[key] = (m.index, len(mode.prevented))
    return last is not None and last[0] < m.index and len(mode.prevented) > last[1]
