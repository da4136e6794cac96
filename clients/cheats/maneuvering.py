"""Cheat kinds for the 军争 (maneuvering) cards, in the declarative style of clients/cheats/mutator.py
(clients/cheats/__init__.py imports this module, whose kinds register themselves). They find places only in 160-card
games (self-play with ``packages=("maneuvering",)``)."""

from __future__ import annotations

from collections.abc import Iterator

from clients.cheats.mutator import Edit, Moment, cheat, copy_event, use_card
from verifier.engine.requests import DECISION_KINDS, DiscardRequest
from verifier.packages.maneuvering.basic import ANALEPTIC_USED
from verifier.packages.maneuvering.tricks import is_chained
from verifier.packages.standard.tricks import reaches


@cheat("second_analeptic", "ANALEPTIC_LIMIT", "a second 酒 drunk in one turn")
def second_analeptic(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    if s is None:
        return
    g = m.game
    if g.players[s].marks.get(ANALEPTIC_USED) != g.turn_number:
        return
    wine = m.spare(c for c in g.players[s].hand if m.name(c) == "analeptic")
    if wine is not None:
        yield m.insert([use_card(s, wine)], f"seat {s} drinks a second 酒 this turn: {g.label(wine)}")


@cheat("recast_out_of_phase", "WRONG_TIMING", "铁锁连环 recast outside one's play phase (in the discard phase)")
def recast_out_of_phase(m: Moment) -> Iterator[Edit]:
    req = m.request
    if not isinstance(req, DiscardRequest) or req.seat is None:
        return
    s = req.seat
    chain = m.spare(c for c in m.game.players[s].hand if m.name(c) == "iron_chain")
    if chain is not None:
        ev = use_card(s, chain)
        ev.use_card.recast = True
        yield m.insert([ev], f"seat {s} recasts {m.game.label(chain)} in their discard phase")


@cheat("supply_shortage_too_far", "DISTANCE_LIMIT", "a 兵粮寸断 on a character at distance more than 1")
def supply_shortage_too_far(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    if s is None:
        return
    g = m.game
    card = m.spare(c for c in g.players[s].hand if m.name(c) == "supply_shortage")
    if card is None:
        return
    for t in g.alive_seats(s)[1:]:
        placed = any(m.name(c) == "supply_shortage" for c in g.players[t].judgment)
        if not reaches(g, s, t, "supply_shortage") and not placed:
            yield m.insert([use_card(s, card, [t])], f"seat {s} puts 兵粮寸断 on seat {t} at distance "
                           f"{g.distance(s, t)}")
            return


def damaged_before_next_decision(m: Moment) -> set[int]:
    """The targets of the damage the log records from this event up to the next decision."""
    out: set[int] = set()
    for ev in m.log.events[m.index:]:
        kind = ev.WhichOneof("kind")
        if kind in DECISION_KINDS:
            break
        if kind == "damage":
            out.add(ev.damage.target)
    return out


@cheat("chain_damage_to_unchained", "DAMAGE_MISMATCH", "damage passed on by 铁锁连环 paid to a character who is "
       "not chained")
def chain_damage_to_unchained(m: Moment) -> Iterator[Edit]:
    if m.kind != "damage" or not m.event.damage.chained:
        return
    g = m.game
    busy = damaged_before_next_decision(m)
    free = [s for s in g.alive_seats(g.current) if s not in busy and not is_chained(g, s)]
    if free:
        ev = copy_event(m.event)
        ev.damage.target = free[0]
        yield m.replace(ev, f"the damage 铁锁连环 passes on to seat {m.event.damage.target} is paid to unchained "
                        f"seat {free[0]}")


@cheat("chain_damage_unpaid", "MISSING_OUTCOME", "damage 铁锁连环 passes on to a chained character left out")
def chain_damage_unpaid(m: Moment) -> Iterator[Edit]:
    if m.kind == "damage" and m.event.damage.chained:
        yield m.remove(1, f"chained seat {m.event.damage.target} does not take the damage passed on to them")


@cheat("fan_converts_elemental", "INVALID_CONVERSION", "朱雀羽扇 used on a 火杀 or 雷杀 (only an ordinary 杀 "
       "converts)")
def fan_converts_elemental(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    if s is None or not m.game.has_effect(s, "fan"):
        return
    g = m.game
    card = m.spare(c for c in g.players[s].hand if m.name(c) in ("fire_slash", "thunder_slash"))
    targets = [t for t in g.alive_seats(s) if g.in_attack_range(s, t)]
    if card is not None and targets:
        ev = use_card(s, card, targets[:1])
        ref = ev.use_card.card
        ref.ClearField("id")
        ref.virtual.name = "fire_slash"
        ref.virtual.skill = "fan"
        ref.virtual.subcards.append(card)
        yield m.insert([ev], f"seat {s} makes a 火杀 with 朱雀羽扇 from {g.label(card)}")
