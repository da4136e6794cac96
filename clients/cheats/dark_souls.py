"""Cheat kinds of seed 003's dark souls (暗魂, options.dark_souls), in the declarative style of
clients/cheats/mutator.py, each registering itself (clients/cheats/__init__.py imports this module). They find places
only in dark-souls games (self-play: clients/selfplay/dark_souls.py; ``sgs-verify cheats --dark-souls``): a soul that
acts again, a 游助 acting outside its host's play phase, a 罗汉 acting when its host takes no damage, a possession
left out, a possession of a dead character."""

from __future__ import annotations

from collections.abc import Iterator

from clients.cheats.mutator import IDENTITY, Edit, Moment, cheat, copy_event
from sgsverify.v1 import game_log_pb2 as pb
from verifier.engine.requests import PlayRequest
from verifier.packages.modes.dark_souls import ACTED, LUOHAN, XUANWU, YOUZHU, DarkSouls

ONLY = (IDENTITY,)


def dark_souls(m: Moment) -> DarkSouls | None:
    mode = m.game.mode
    return mode if isinstance(mode, DarkSouls) else None


def soul_act(seat: int, card: int | None = None) -> pb.Event:
    ev = pb.Event()
    ev.soul_act.seat = seat
    if card is not None:
        ev.soul_act.card = card
    return ev


def at_play_action(m: Moment) -> tuple[DarkSouls, int] | None:
    """A dark-souls game's mode and the seat whose play phase waits here, with nothing optional open before."""
    mode = dark_souls(m)
    req = m.request
    if mode is None or not isinstance(req, PlayRequest) or req.seat is None or not m.awaits_play_action:
        return None
    return mode, req.seat


@cheat("soul_acts_twice", "SOUL_SPENT", "a soul that already acted acts again (D-2: each soul acts once)", ONLY)
def soul_acts_twice(m: Moment) -> Iterator[Edit]:
    found = at_play_action(m)
    if found is None:
        return
    mode, _ = found
    for seat, soul in sorted(mode.souls.items()):
        if soul.gone == ACTED:
            host = m.game.players[soul.host]
            card = host.hand[0] if soul.kind == XUANWU and host.alive and host.hand else None
            yield m.insert([soul_act(seat, card)], f"the {soul.kind} of seat {seat} acts a second time")
            return


@cheat("youzhu_out_of_timing", "SOUL_TIMING", "a 游助 acts in another character's play phase than its host's (D-5)",
       ONLY)
def youzhu_out_of_timing(m: Moment) -> Iterator[Edit]:
    found = at_play_action(m)
    if found is None:
        return
    mode, current = found
    for seat in mode.live_souls(m.game, YOUZHU):
        if mode.souls[seat].host != current:
            yield m.insert([soul_act(seat)], f"the 游助 of seat {seat} (host seat {mode.souls[seat].host}) acts in "
                           f"seat {current}'s play phase")
            return


@cheat("luohan_out_of_damage", "SOUL_TIMING", "a 罗汉 acts while its host is not about to take damage (D-3)", ONLY)
def luohan_out_of_damage(m: Moment) -> Iterator[Edit]:
    found = at_play_action(m)
    if found is None:
        return
    mode, current = found
    for seat in mode.live_souls(m.game, LUOHAN):
        yield m.insert([soul_act(seat)], f"the 罗汉 of seat {seat} acts in seat {current}'s play phase")
        return


@cheat("possession_left_out", "POSSESS_MISSING", "a dead loyalist's, rebel's or spy's possession left out of the "
       "log (D-1)", ONLY)
def possession_left_out(m: Moment) -> Iterator[Edit]:
    if dark_souls(m) is None or m.kind != "possess":
        return
    events = m.log.events
    stop = m.index + 1
    if stop < len(events) and events[stop].HasField("reshuffle"):
        stop += 1
    if stop < len(events) and events[stop].HasField("cards_moved") \
            and events[stop].cards_moved.to_zone == pb.ZONE_GENERAL:
        stop += 1  # (玄武's set-aside card goes with it: no possession, no card set aside)
    else:
        stop = m.index + 1
    # The log must go on for the possession to be missing, and not with a soul's own decision: that one is judged
    # itself (a soul's act while a possession is due is out of timing) and the possession is missed after it.
    if stop < len(events) and events[stop].WhichOneof("kind") not in ("possess", "soul_act", "decline"):
        yield m.remove(stop - m.index, f"dead seat {m.event.possess.seat} possesses nobody")


@cheat("possess_the_dead", "POSSESS_TARGET", "a soul possesses a dead character (D-1: a living one)", ONLY)
def possess_the_dead(m: Moment) -> Iterator[Edit]:
    if dark_souls(m) is None or m.kind != "possess":
        return
    p = m.event.possess
    ev = copy_event(m.event)
    ev.possess.host = p.seat  # (itself: dead)
    yield m.insert([ev], f"dead seat {p.seat} possesses itself before possessing seat {p.host}")
