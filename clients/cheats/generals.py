"""Cheat kinds for the standard generals' skills, in the declarative style of clients/cheats/mutator.py
(clients/cheats/__init__.py imports this module, whose kinds register themselves). They find places only in games
with generals (self-play with ``generals=True``): a skill the general lacks, a once-per-phase skill used twice, a
conversion from the wrong kind of card, a lord skill used by a general who is not the lord."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from clients.cheats.mutator import HEGEMONY, IDENTITY, Edit, Moment, cheat, use_card
from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import CardDef, Color, Suit
from verifier.engine.requests import CardRequest
from verifier.text import skill_zh

# Skills anyone lacking them may pretend to have in their play phase, with no cards or targets needed
# (苦肉) or one hand card (制衡); the first one the seat does not have is used.
PRETENDED = ("kurou", "zhiheng")
ONCE_PER_PHASE = ("zhiheng", "fanjian", "jieyin", "qingnang", "lijian")
# Hegemony: the same, by the hegemony names (制衡 is heg_zhiheng there), and the Wu once-per-phase skills with
# no target restriction (天义 needs a rival with a hand card, 奋迅 any other character).
PRETENDED_HEGEMONY = ("kurou", "heg_zhiheng")
ONCE_PER_PHASE_HEGEMONY = ("heg_zhiheng", "fanjian", "jieyin", "tianyi", "fenxun")


def invoke(seat: int, skill: str, cards: Iterable[int] = (), targets: Iterable[int] = ()) -> pb.Event:
    ev = pb.Event()
    inv = ev.invoke_skill
    inv.seat, inv.skill = seat, skill
    inv.cards.extend(cards)
    inv.targets.extend(targets)
    return ev


def virtual(name: str, skill: str, card: int) -> pb.CardRef:
    ref = pb.CardRef()
    ref.virtual.name = name
    ref.virtual.skill = skill
    ref.virtual.subcards.append(card)
    return ref


def generals_play_seat(m: Moment) -> int | None:
    """The seat whose play-phase action this decision is, in a game with generals."""
    return m.play_seat if m.game.has_skills else None


# ---------------------------------------------------------------------------- skills not had

@cheat("skill_not_owned", "SKILL_NOT_OWNED", "a skill the character's generals do not have (苦肉 or 制衡; in "
       "hegemony neither face up nor face down)")
def skill_not_owned(m: Moment) -> Iterator[Edit]:
    s = generals_play_seat(m)
    if s is None:
        return
    g = m.game
    p = g.players[s]
    pretended = PRETENDED if g.mode.name == IDENTITY else PRETENDED_HEGEMONY
    name = next((n for n in pretended if not g.has_effect(s, n) and n not in p.idle_skills), None)
    if name is None:
        return
    cards: list[int] = []
    if name in ("zhiheng", "heg_zhiheng"):
        card = m.spare(p.hand)
        if card is None:
            return
        cards.append(card)
    yield m.insert([invoke(s, name, cards)], f"seat {s} ({p.general}) invokes {skill_zh(name)}, which they do not have")


@cheat("lord_skill_not_lord", "LORD_SKILL", "a lord skill (激将 in the play phase, 护驾 for a 闪) used by a "
       "general who is not the lord", (IDENTITY,))
def lord_skill_not_lord(m: Moment) -> Iterator[Edit]:
    g = m.game
    if not g.has_skills:
        return
    s = m.play_seat
    if s is not None and "jijiang" in g.players[s].idle_skills:
        targets = [t for t in g.alive_seats(s)[1:] if g.in_attack_range(s, t)]
        if targets:
            yield m.insert([invoke(s, "jijiang", targets=targets[:1])],
                           f"seat {s} ({g.players[s].general}, not the lord) invokes 激将 on seat {targets[0]}")
        return
    req = m.request
    if m.kind == "respond" and isinstance(req, CardRequest) and req.seat is not None and "jink" in req.names \
            and "hujia" in g.players[req.seat].idle_skills and m.event.respond.seat == req.seat:
        yield m.insert([invoke(req.seat, "hujia")], f"seat {req.seat} ({g.players[req.seat].general}, not the lord) "
                       "invokes 护驾 for a 闪")


# ---------------------------------------------------------------------------- once per play phase

def second_use_args(m: Moment, s: int, name: str) -> tuple[list[int], list[int]] | None:
    """Cards and targets for a plausible second use of ``name`` (None: the seat has nothing to use it with)."""
    g = m.game
    p = g.players[s]
    others = list(g.alive_seats(s)[1:])
    males = [t for t in others if g.players[t].gender == pb.GENDER_MALE]
    hand = list(p.hand)
    card = m.spare(hand)
    if name == "fanjian":
        return ([], others[:1]) if hand and others else None
    if card is None:
        if name == "lijian" and p.equipped() and len(males) >= 2:
            return [p.equipped()[0]], males[:2]
        return None
    if name in ("zhiheng", "heg_zhiheng"):
        return [card], []
    if name == "fenxun":
        return [card], others[:1]
    if name == "tianyi":
        rivals = [t for t in others if g.players[t].hand]
        return ([], rivals[:1]) if rivals else None
    if name == "qingnang":
        return [card], [s]
    if name == "jieyin":
        rest = [c for c in hand if c != card]
        return ([card, rest[0]], males[:1]) if rest and males else None
    if name == "lijian":
        return ([card], males[:2]) if len(males) >= 2 else None
    return None


@cheat("skill_twice", "SKILL_LIMIT", "a once-per-play-phase skill (制衡, 反间, 结姻, 青囊, 离间; in hegemony 制衡, "
       "反间, 结姻, 天义, 奋迅) used a second time in the phase")
def skill_twice(m: Moment) -> Iterator[Edit]:
    s = generals_play_seat(m)
    if s is None:
        return
    p = m.game.players[s]
    for name in (ONCE_PER_PHASE if m.game.mode.name == IDENTITY else ONCE_PER_PHASE_HEGEMONY):
        if m.game.skill_of(s, name) is None or not p.skill_uses.get(name, 0):
            continue
        args = second_use_args(m, s, name)
        if args is not None:
            cards, targets = args
            yield m.insert([invoke(s, name, cards, targets)],
                           f"seat {s} ({p.general}) uses {skill_zh(name)} a second time in this play phase")
            return


# ---------------------------------------------------------------------------- conversions

def wrong_conversion(skill: str, name: str, wrong: Callable[[CardDef], bool], what: str) -> Callable[[Moment],
                                                                                                     Iterator[Edit]]:
    """A finder: the seat with ``skill`` uses a ``name`` made with it from a hand card that does not fit, in
    their play phase (倾国's 闪: in place of a 闪 they really play)."""

    def find(m: Moment) -> Iterator[Edit]:
        g = m.game
        if not g.has_skills:
            return
        if name == "jink":
            req = m.request
            if m.kind != "respond" or not isinstance(req, CardRequest) or req.seat is None \
                    or "jink" not in req.names or m.event.respond.seat != req.seat:
                return
            s = req.seat
        else:
            play = m.play_seat
            if play is None:
                return
            s = play
        # (In hegemony a face-down general's skill is used by revealing it with the use: the reveal comes first.)
        first = [] if g.skill_of(s, skill) is not None else hidden_reveal(m, s, skill)
        if first is None:
            return
        card = m.spare(c for c in g.players[s].hand if wrong(g.card_as(s, c)))
        if card is None:
            return
        note = f"seat {s} makes a {skill_zh(name)} with {skill_zh(skill)} from {g.label(card)} ({what})"
        if name == "jink":
            ev = pb.Event()
            ev.respond.seat = s
            ev.respond.card.CopyFrom(virtual(name, skill, card))
            yield m.insert([*first, ev], note, offset=len(first))
            return
        others = g.alive_seats(s)[1:]
        if name == "slash":
            targets = [t for t in others if g.in_attack_range(s, t)]
        elif name == "await_exhausted":
            targets = list(g.ruleset.cards[name].default_targets(g, s))
        elif name == "dismantlement":
            targets = [t for t in others if g.players[t].has_cards()]
        else:  # indulgence
            targets = [t for t in others if not any(g.cards[c].name == name for c in g.players[t].judgment)]
        if targets:
            ev = use_card(s, 0, targets[:1])
            ev.use_card.card.CopyFrom(virtual(name, skill, card))
            yield m.insert([*first, ev], note, offset=len(first))

    return find


def hidden_reveal(m: Moment, seat: int, skill: str) -> list[pb.Event] | None:
    """The RevealGeneral that turns up ``seat``'s face-down general with ``skill`` for its use (hegemony), or None
    when no face-down general of theirs has it."""
    g = m.game
    slot_of = getattr(g.mode, "hidden_slot_of", None)
    if slot_of is None or not any(e.name == skill for e in g.players[seat].latent_skills):
        return None
    slot = slot_of(g, seat, skill)
    if slot is None:
        return None
    ev = pb.Event()
    r = ev.reveal_general
    r.seat, r.skill, r.timing = seat, skill, pb.REVEAL_TIMING_SKILL
    r.which = pb.GENERAL_SLOT_MAIN if slot == 0 else pb.GENERAL_SLOT_DEPUTY
    return [ev]


@cheat("limited_twice", "SKILL_LIMIT", "a limited skill (限定技: 涅槃) invoked again after its one use in the game",
       (HEGEMONY,))
def limited_twice(m: Moment) -> Iterator[Edit]:
    s = generals_play_seat(m)
    if s is None:
        return
    g = m.game
    for eff in g.players[s].skills:
        if getattr(eff, "limited", False) and g.players[s].marks.get(eff.name):
            yield m.insert([invoke(s, eff.name)],
                           f"seat {s} invokes the limited skill {skill_zh(eff.name)} a second time")
            return


cheat("wusheng_black", "INVALID_CONVERSION", "武圣 making a 杀 from a black card")(
    wrong_conversion("wusheng", "slash", lambda c: c.color == Color.BLACK, "black"))
cheat("qingguo_red", "INVALID_CONVERSION", "倾国 making a 闪 from a red card")(
    wrong_conversion("qingguo", "jink", lambda c: c.color == Color.RED, "red"))
cheat("guose_not_diamond", "INVALID_CONVERSION", "国色 making a 乐不思蜀 from a card that is not a ♦")(
    wrong_conversion("guose", "indulgence", lambda c: c.suit != Suit.DIAMOND, "not a ♦"))
cheat("qixi_red", "INVALID_CONVERSION", "奇袭 making a 过河拆桥 from a red card")(
    wrong_conversion("qixi", "dismantlement", lambda c: c.color == Color.RED, "red"))
cheat("duoshi_black", "INVALID_CONVERSION", "度势 making a 以逸待劳 from a black card", (HEGEMONY,))(
    wrong_conversion("duoshi", "await_exhausted", lambda c: c.color == Color.BLACK, "black"))
