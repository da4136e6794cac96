"""Cheat kinds of the standard rules (the 108-card deck, identity mode's roles and rewards), in the declarative
style of clients/cheats/mutator.py: each registers itself with ``cheat``. They apply in both modes unless they say
otherwise; clients/cheats/__init__.py imports this module first, so that these kinds come first in KINDS."""

from __future__ import annotations

from collections.abc import Iterator

from clients.cheats.mutator import (
    IDENTITY,
    Edit,
    Moment,
    cheat,
    choose_cards,
    copy_event,
    draw_cards,
    end_play_phase,
    first_usable,
    top_first,
    use_card,
)
from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import Suit
from verifier.engine.requests import DiscardRequest
from verifier.packages.modes.identity import LORD, LOYALIST, REBEL
from verifier.packages.standard.tricks import reaches
from verifier.replay import verify
from verifier.text import skill_zh

# ---------------------------------------------------------------------------- decisions: the play phase

@cheat("second_slash", "SLASH_LIMIT", "a second 杀 in one play phase without 诸葛连弩")
def second_slash(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    if s is None or m.slashes_used < 1:
        return
    g = m.game
    weapon = g.weapon(s)
    if (weapon is not None and weapon.name == "crossbow") or any(e.unlimited_slash(g, s) for e in g.effects_of(s)):
        return  # (诸葛连弩, 咆哮)
    slash = m.spare(c for c in g.players[s].hand if m.name(c) == "slash")
    targets = [t for t in g.alive_seats(s) if g.in_attack_range(s, t) and not g.prohibited(s, t, "slash")]
    if slash is not None and targets:
        yield m.insert([use_card(s, slash, targets[:1])], f"seat {s} uses a second 杀 on seat {targets[0]}")


@cheat("duplicate_delayed_trick", "DUPLICATE_DELAYED_TRICK",
       "a delayed trick into a judgment area already holding one of that name")
def duplicate_delayed_trick(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    if s is None:
        return
    g = m.game
    for c in g.players[s].hand:
        name = m.name(c)
        if name == "indulgence":
            for t in g.alive_seats(s)[1:]:
                if any(m.name(x) == name for x in g.players[t].judgment):
                    yield m.insert([use_card(s, c, [t])], f"seat {s} puts a second 乐不思蜀 on seat {t}")
                    return
        elif name == "lightning" and any(m.name(x) == name for x in g.players[s].judgment):
            yield m.insert([use_card(s, c)], f"seat {s} places a second 闪电 in their own judgment area")
            return


@cheat("card_not_in_hand", "CARD_NOT_OWNED", "a card used that is not in the user's hand")
def card_not_in_hand(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    if s is None:
        return
    g = m.game
    elsewhere = top_first(g)[:30] + [c for t in g.alive_seats(s)[1:] for c in g.players[t].hand]
    found = first_usable(g, s, elsewhere)
    if found is not None:
        card, targets = found
        yield m.insert([use_card(s, card, targets)], f"seat {s} uses {g.label(card)}, which is not theirs")


@cheat("out_of_turn", "OUT_OF_TURN", "a card used in another player's play phase")
def out_of_turn(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    if s is None:
        return
    g = m.game
    for o in g.alive_seats(s)[1:]:
        found = first_usable(g, o, g.players[o].hand)
        if found is not None:
            card, targets = found
            yield m.insert([use_card(o, card, targets)], f"seat {o} uses {g.label(card)} in seat {s}'s play phase")
            return


@cheat("wrong_phase", "WRONG_TIMING", "a card used in the user's own discard phase")
def wrong_phase(m: Moment) -> Iterator[Edit]:
    req = m.request
    if not isinstance(req, DiscardRequest) or req.seat is None:
        return
    s = req.seat
    found = first_usable(m.game, s, m.game.players[s].hand)
    if found is not None:
        card, targets = found
        yield m.insert([use_card(s, card, targets)], f"seat {s} uses {m.game.label(card)} in their discard phase")


@cheat("slash_out_of_range", "OUT_OF_RANGE", "a 杀 on a target beyond the attack range")
def slash_out_of_range(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    # Just before the play phase ends, with no 杀 used yet: the cheat is the only one.
    if s is None or m.kind != "end_play_phase" or m.slashes_used:
        return
    g = m.game
    slash = m.spare(c for c in g.players[s].hand if m.name(c) == "slash")
    reach = g.attack_range(s)
    far = [t for t in g.alive_seats(s)[1:] if g.distance(s, t) > reach and not g.prohibited(s, t, "slash")]
    if slash is not None and far:
        yield m.insert([use_card(s, slash, far[:1])], f"seat {s} uses 杀 on seat {far[0]} at distance "
                       f"{g.distance(s, far[0])}, range {reach}")


@cheat("snatch_too_far", "DISTANCE_LIMIT", "a 顺手牵羊 on a target at distance more than 1")
def snatch_too_far(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    if s is None:
        return
    g = m.game
    snatch = m.spare(c for c in g.players[s].hand if m.name(c) == "snatch")
    if snatch is None:
        return
    for t in g.alive_seats(s)[1:]:
        p = g.players[t]
        if p.has_cards() and not reaches(g, s, t, "snatch") and not g.prohibited(s, t, "snatch"):
            taken = m.spare([*p.hand, *p.equipped()] or p.judgment)
            assert taken is not None
            yield m.insert([use_card(s, snatch, [t]), choose_cards(s, [taken])],
                           f"seat {s} uses 顺手牵羊 on seat {t} at distance {g.distance(s, t)}")
            return


@cheat("peach_at_full_hp", "PEACH_FULL_HP", "a 桃 used in the play phase at full HP")
def peach_at_full_hp(m: Moment) -> Iterator[Edit]:
    s = m.play_seat
    if s is None:
        return
    p = m.game.players[s]
    peach = m.spare(c for c in p.hand if m.name(c) == "peach")
    if peach is not None and p.hp >= p.max_hp:
        yield m.insert([use_card(s, peach)], f"seat {s} uses 桃 at {p.hp}/{p.max_hp} HP")


@cheat("short_discard", "HAND_LIMIT", "too few cards discarded in the discard phase")
def short_discard(m: Moment) -> Iterator[Edit]:
    if isinstance(m.request, DiscardRequest) and m.kind == "choose_cards" and m.event.choose_cards.cards:
        ev = copy_event(m.event)
        kept = ev.choose_cards.cards.pop()
        yield m.replace(ev, f"seat {ev.choose_cards.seat} keeps {m.game.label(kept)} instead of discarding it")


@cheat("dead_player_acts", "DEAD_PLAYER", "a dead character makes a decision")
def dead_player_acts(m: Moment) -> Iterator[Edit]:
    if m.request is None:
        return
    # The first decision after a death: the dead player's client goes on playing.
    for _, ev in m.since_last_decision():
        if ev.HasField("death"):
            d = ev.death.seat
            held = [c for _, e in m.since_last_decision() if e.HasField("cards_moved")
                    and e.cards_moved.from_seat == d and e.cards_moved.from_zone == pb.ZONE_HAND
                    for c in e.cards_moved.cards]
            act = use_card(d, held[0]) if held else end_play_phase(d)
            yield m.insert([act], f"dead seat {d} acts: {act.WhichOneof('kind')}")
            return


# ---------------------------------------------------------------------------- recorded outcomes

@cheat("second_equipment", "EQUIP_SLOT", "a second card in an equipment slot without the old one discarded")
def second_equipment(m: Moment) -> Iterator[Edit]:
    if m.kind == "cards_moved" and m.event.cards_moved.reason == pb.MOVE_REASON_EQUIP_REPLACED:
        yield m.remove(1, f"the replaced {m.game.label(m.event.cards_moved.cards[0])} is never discarded")


@cheat("stacked_draw", "DRAW_NOT_TOP", "a draw that is not the top of the pile (a stacked deck)")
def stacked_draw(m: Moment) -> Iterator[Edit]:
    if m.kind != "draw_cards" or m.event.draw_cards.reason == pb.DRAW_REASON_KILL_REWARD:
        return
    # Bottom first: what is still there lies below everything drawn so far (the engine may have run on
    # past a reshuffle that put the drawn cards back, so leave those out).
    drawn = set(m.event.draw_cards.cards)
    pile = [c for c in m.game.draw_pile if c not in drawn]
    if pile:
        ev = copy_event(m.event)
        old = ev.draw_cards.cards[-1]
        ev.draw_cards.cards[-1] = pile[0]
        yield m.replace(ev, f"seat {ev.draw_cards.seat} draws {m.game.label(pile[0])} from the bottom instead of "
                        f"{m.game.label(old)}")


def next_card_taken(log: pb.GameLog, index: int) -> int | None:
    """The card the log next takes from the top of the pile after ``index`` (None if the pile
    runs out first or nothing more is taken)."""
    for ev in log.events[index + 1:]:
        kind = ev.WhichOneof("kind")
        if kind == "reshuffle":
            return None
        if kind == "draw_cards" or kind == "reveal":
            return int(getattr(ev, kind).cards[0])
        if kind == "judgment":
            return int(ev.judgment.card)
    return None


@cheat("extra_draw", "DRAW_COUNT", "an extra card drawn in the draw phase")
def extra_draw(m: Moment) -> Iterator[Edit]:
    if m.kind != "draw_cards" or m.event.draw_cards.reason != pb.DRAW_REASON_DRAW_PHASE:
        return
    nxt = next_card_taken(m.log, m.index)
    if nxt is not None:
        ev = copy_event(m.event)
        ev.draw_cards.cards.append(nxt)
        yield m.replace(ev, f"seat {ev.draw_cards.seat} also draws the next card {m.game.label(nxt)}")


@cheat("missing_kill_reward", "KILL_REWARD", "a kill reward (identity: 3 cards for a rebel; hegemony: by kingdom) "
       "is never drawn")
def missing_kill_reward(m: Moment) -> Iterator[Edit]:
    if m.kind == "draw_cards" and m.event.draw_cards.reason == pb.DRAW_REASON_KILL_REWARD:
        yield m.remove(1, f"seat {m.event.draw_cards.seat} does not draw the kill reward")


def recent_deaths(m: Moment) -> list[pb.Death]:
    """Deaths with a living killer since the previous decision, when an outcome may be inserted here."""
    if not m.awaits_play_action:
        return []
    return [ev.death for _, ev in m.since_last_decision() if ev.HasField("death") and ev.death.HasField("killer")
            and m.game.players[ev.death.killer].alive]


@cheat("reward_for_non_rebel", "KILL_REWARD", "a kill reward drawn for killing a character who is not a rebel",
       (IDENTITY,))
def reward_for_non_rebel(m: Moment) -> Iterator[Edit]:
    top = top_first(m.game)[:3]
    for death in recent_deaths(m):
        if death.role != REBEL and len(top) == 3:
            yield m.insert([draw_cards(death.killer, top, pb.DRAW_REASON_KILL_REWARD)],
                           f"seat {death.killer} draws a reward for killing a {pb.Role.Name(death.role)}")
            return


@cheat("missing_lord_penalty", "KILL_PENALTY", "the lord keeps their cards after killing a loyalist", (IDENTITY,))
def missing_lord_penalty(m: Moment) -> Iterator[Edit]:
    if m.kind != "cards_moved" or m.event.cards_moved.reason != pb.MOVE_REASON_KILL_PENALTY:
        return
    events = m.log.events
    if m.index and events[m.index - 1].cards_moved.reason == pb.MOVE_REASON_KILL_PENALTY:
        return  # not the first move of the penalty
    stop = m.index
    while stop < len(events) and events[stop].HasField("cards_moved") \
            and events[stop].cards_moved.reason == pb.MOVE_REASON_KILL_PENALTY:
        stop += 1
    yield m.remove(stop - m.index, f"lord seat {m.event.cards_moved.from_seat} does not discard the penalty")


@cheat("unowed_penalty", "KILL_PENALTY", "a kill penalty paid when none was due", (IDENTITY,))
def unowed_penalty(m: Moment) -> Iterator[Edit]:
    g = m.game
    for death in recent_deaths(m):
        k = g.players[death.killer]
        if (death.role == LOYALIST and k.role == LORD) or not k.hand:
            continue
        ev = pb.Event()
        mv = ev.cards_moved
        mv.cards.extend(k.hand)
        mv.from_seat = k.seat
        mv.from_zone = pb.ZONE_HAND
        mv.to_zone = pb.ZONE_DISCARD_PILE
        mv.reason = pb.MOVE_REASON_KILL_PENALTY
        yield m.insert([ev], f"seat {k.seat} discards a penalty for killing a {pb.Role.Name(death.role)}")
        return


def judged_true(reason: str, suit: int, number: int) -> bool:
    """Does the judgment card succeed for its reason (the outcome a cheater would want to flip)?"""
    if reason == "indulgence":
        return suit == Suit.HEART
    if reason == "lightning":
        return suit == Suit.SPADE and 2 <= number <= 9
    return suit in (Suit.HEART, Suit.DIAMOND)  # eight_diagram: red


@cheat("wrong_judgment", "JUDGMENT_MISMATCH", "a judgment card that is not the top of the pile")
def wrong_judgment(m: Moment) -> Iterator[Edit]:
    if m.kind != "judgment":
        return
    j = m.event.judgment
    g = m.game
    real = g.cards[j.card]
    was = judged_true(j.reason, real.suit, real.number)
    pile = [c for c in g.draw_pile if c != j.card]  # (a reshuffle after it may have put it back)
    flip = [c for c in pile if judged_true(j.reason, g.cards[c].suit, g.cards[c].number) != was]
    if flip or pile:
        other = (flip or pile)[0]
        ev = copy_event(m.event)
        ev.judgment.card = other
        yield m.replace(ev, f"seat {j.seat}'s {skill_zh(j.reason)} judgment shows {g.label(other)} "
                        f"instead of {g.label(j.card)}")


@cheat("wrong_damage", "DAMAGE_MISMATCH", "more damage recorded than the rules deal")
def wrong_damage(m: Moment) -> Iterator[Edit]:
    if m.kind == "damage":
        ev = copy_event(m.event)
        ev.damage.amount += 1
        ev.damage.hp_after -= 1
        yield m.replace(ev, f"seat {ev.damage.target} takes {ev.damage.amount} damage")


@cheat("wrong_hp", "HP_MISMATCH", "an HP value after damage, loss or recovery that differs from the rules")
def wrong_hp(m: Moment) -> Iterator[Edit]:
    if m.kind in ("damage", "lose_hp", "recover"):
        ev = copy_event(m.event)
        getattr(ev, m.kind).hp_after += 1
        yield m.replace(ev, f"{m.kind} with HP one higher than the rules give")


@cheat("inflated_recovery", "RECOVER_MISMATCH", "a recovery larger than the rules give")
def inflated_recovery(m: Moment) -> Iterator[Edit]:
    if m.kind == "recover":
        ev = copy_event(m.event)
        ev.recover.amount += 1
        ev.recover.hp_after += 1
        yield m.replace(ev, f"seat {ev.recover.seat} recovers {ev.recover.amount}")


@cheat("wrong_winner", "GAME_RESULT", "a winner declared who did not win", (IDENTITY,))
def wrong_winner(m: Moment) -> Iterator[Edit]:
    if m.kind != "game_over":
        return
    players = m.game.players
    over = m.event.game_over
    # The other side claims the win...
    ev = pb.Event()
    if over.side == pb.SIDE_REBELS:
        ev.game_over.side = pb.SIDE_LORD
        ev.game_over.winners.extend(p.seat for p in players if p.role in (LORD, LOYALIST))
    else:
        ev.game_over.side = pb.SIDE_REBELS
        ev.game_over.winners.extend(p.seat for p in players if p.role == REBEL)
    yield m.replace(ev, f"{pb.Side.Name(ev.game_over.side)} claim the win")
    # ... or one more seat joins the winners.
    losers = [p.seat for p in players if p.seat not in over.winners]
    if losers:
        ev = copy_event(m.event)
        ev.game_over.winners[:] = sorted([*over.winners, losers[0]])
        yield m.replace(ev, f"seat {losers[0]} is listed among the winners")


@cheat("inflated_score", "SCORE_MISMATCH", "a seat's score raised in the game-over event", (IDENTITY,))
def inflated_score(m: Moment) -> Iterator[Edit]:
    """The log records the scores (docs/log-format.md#scores), the lowest-scoring seat's raised by 5."""
    if m.kind != "game_over":
        return
    # The probe has not reached the end yet when it shows the game-over event: the scores are the whole log's.
    scores = [s.score for s in verify(m.log).result.scores]
    if not scores:
        return
    seat = min(range(len(scores)), key=lambda i: (scores[i], i))
    ev = copy_event(m.event)
    ev.game_over.scores.extend(scores)
    ev.game_over.scores[seat] += 5
    yield m.replace(ev, f"seat {seat} records a score of {scores[seat] + 5} instead of {scores[seat]}")


@cheat("after_game_over", "AFTER_GAME_OVER", "events after the game is over")
def after_game_over(m: Moment) -> Iterator[Edit]:
    if m.kind != "game_over" or m.index != len(m.log.events) - 1:
        return
    g = m.game
    alive = [p for p in g.players if p.alive]
    holder = next((p for p in alive if p.hand), None)
    act = use_card(holder.seat, holder.hand[0]) if holder else end_play_phase(alive[0].seat)
    yield Edit(m.index + 1, m.index + 1, (act,), m.index + 1, f"seat {getattr(act, act.WhichOneof('kind') or '').seat} "
               "acts after the game is over")
    if g.draw_pile:
        draw = draw_cards(alive[0].seat, top_first(g)[:1], pb.DRAW_REASON_DRAW_PHASE)
        yield Edit(m.index + 1, m.index + 1, (draw,), m.index + 1, f"seat {alive[0].seat} draws after the end")
