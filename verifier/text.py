"""One-line, human-readable renderings of events (for messages, reports and `show`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sgsverify.v1 import game_log_pb2 as pb
from verifier.cards import all_cards, card_name_zh

ROLE = {pb.ROLE_LORD: "lord", pb.ROLE_LOYALIST: "loyalist", pb.ROLE_REBEL: "rebel", pb.ROLE_SPY: "spy"}
PHASE = {pb.PHASE_START: "start", pb.PHASE_JUDGMENT: "judgment", pb.PHASE_DRAW: "draw", pb.PHASE_PLAY: "play",
         pb.PHASE_DISCARD: "discard", pb.PHASE_FINISH: "finish"}
SIDE = {pb.SIDE_LORD: "lord's side", pb.SIDE_REBELS: "rebels", pb.SIDE_SPY: "spy", pb.SIDE_NONE: "nobody (draw)",
        pb.SIDE_KINGDOM: "a kingdom"}
SLOT = {pb.GENERAL_SLOT_MAIN: "main", pb.GENERAL_SLOT_DEPUTY: "deputy", pb.GENERAL_SLOT_BOTH: "main and deputy"}
TIMING = {pb.REVEAL_TIMING_START_PHASE: "at the start phase", pb.REVEAL_TIMING_SKILL: "for a skill",
          pb.REVEAL_TIMING_DEATH: "at death"}
NATURE = {pb.DAMAGE_NATURE_NORMAL: "", pb.DAMAGE_NATURE_FIRE: " fire", pb.DAMAGE_NATURE_THUNDER: " thunder"}
# Who made a decision (Event.source, copied to Annotation.source), in words, and as the list filters and the
# viewer's JSON name it.
SOURCE: dict[int, str] = {pb.DECISION_SOURCE_CLIENT: "client", pb.DECISION_SOURCE_AI: "AI",
                          pb.DECISION_SOURCE_DEFAULT: "default"}
SOURCE_KEY: dict[int, str] = {pb.DECISION_SOURCE_CLIENT: "client", pb.DECISION_SOURCE_AI: "ai",
                              pb.DECISION_SOURCE_DEFAULT: "default"}
_SOURCE_COUNTED: dict[int, str] = {pb.DECISION_SOURCE_CLIENT: "on client replies",
                                   pb.DECISION_SOURCE_AI: "on AI replies",
                                   pb.DECISION_SOURCE_DEFAULT: "on defaults taken on a timeout"}


def source(value: int) -> str:
    """Who made a decision, for a reader: "client", "AI", "default" ("" when the log does not say)."""
    if not value:
        return ""
    return SOURCE.get(value, f"source {value}")


def violations_by_source(by_source: dict[int, int], total: int) -> str:
    """The violations counted by who made the decision each is about, e.g. "3 violations: 2 on client replies,
    1 on AI replies" (``by_source``: Annotation.source -> violations on such decisions; ``total``: every
    violation). Empty when none is on a decision the log attributes: most logs say nothing of it."""
    known = [(k, by_source.get(k, 0)) for k in _SOURCE_COUNTED]
    attributed = sum(n for _, n in known)
    if not attributed:
        return ""
    parts = [f"{n} {_SOURCE_COUNTED[k]}" for k, n in known if n]
    if total > attributed:
        parts.append(f"{total - attributed} not attributed")
    return f"{total} violation{'' if total == 1 else 's'}: " + ", ".join(parts)


def origin(o: pb.LogOrigin) -> str:
    """Where a log came from (GameHeader.origin), in one line: e.g. "freekill 88a912f1, format
    freekill-fkrep, source game-0412.fkrep; notes: roles inferred from the deaths". Empty when unset."""
    parts = [" ".join(x for x in (o.engine, o.engine_version) if x), f"format {o.format}" if o.format else "",
             f"source {o.source}" if o.source else ""]
    line = ", ".join(p for p in parts if p)
    if o.notes:
        line += ("; " if line else "") + "notes: " + "; ".join(o.notes)
    return " ".join(line.split())  # one line, whatever the notes hold


def card(cid: int) -> str:
    c = all_cards().get(cid)
    return c.label() if c else f"#{cid}"


def cards(ids: object) -> str:
    return "[" + ", ".join(card(c) for c in ids) + "]"  # type: ignore[attr-defined]


def card_ref(ref: pb.CardRef, skill_name: Callable[[str], str] | None = None) -> str:
    if ref.WhichOneof("kind") == "virtual":
        v = ref.virtual
        sk = skill_name or _as_named
        base = f"a 杀 via {sk(v.base_skill)} from " if v.base_skill else ""
        return f"{sk(v.name)} via {sk(v.skill)} from {base}{cards(v.subcards)}"
    return card(ref.id)


def _as_named(name: str) -> str:
    return name


# The generals' modules whose skill classes carry a Chinese name (``name, zh = "jieyin", "结姻"``).
_SKILL_PACKAGES = ("generals_standard", "generals_hegemony")
_SKILL_MODULES = tuple(f"verifier.packages.{package}.{kingdom}" for package in _SKILL_PACKAGES
                       for kingdom in ("wei", "shu", "wu", "qun"))
_SKILL_ZH: dict[str, str] = {}


def skill_zh(name: str) -> str:
    """A skill's Chinese name (结姻 for jieyin; an equipment's skill, 丈八蛇矛 for spear, its card's), as cards
    are named on the page; the name itself when it has none. For people (the viewer): a verdict's messages
    keep the log's names, which are the contract's."""
    if not _SKILL_ZH:
        import importlib

        found: dict[str, str] = {}
        for module in _SKILL_MODULES:
            for value in vars(importlib.import_module(module)).values():
                key, zh = getattr(value, "name", None), getattr(value, "zh", None)
                if isinstance(value, type) and isinstance(key, str) and isinstance(zh, str) and zh:
                    found.setdefault(key, zh)
        _SKILL_ZH.update(found)
    return _SKILL_ZH.get(name) or card_name_zh(name)


def describe(ev: pb.Event, skill_name: Callable[[str], str] | None = None) -> str:
    """The event in one line; ``skill_name`` renders skill names (default: as the log names them; ``skill_zh``
    in Chinese)."""
    sk = skill_name or _as_named
    kind = ev.WhichOneof("kind")
    if kind is None:
        return "(empty event)"
    m: Any = getattr(ev, kind)
    if kind == "use_card":
        if m.recast:
            return f"seat {m.seat} recasts {card_ref(m.card, sk)}"
        tail = f" → {', '.join(f'seat {t}' for t in m.targets)}" if m.targets else ""
        return f"seat {m.seat} uses {card_ref(m.card, sk)}{tail}"
    if kind == "respond":
        kingdom = " for the whole kingdom" if m.whole_kingdom else ""
        return f"seat {m.seat} responds with {card_ref(m.card, sk)}{kingdom}"
    if kind == "decline":
        return f"seat {m.seat} declines"
    if kind == "choose_cards":
        return f"seat {m.seat} chooses {cards(m.cards)}"
    if kind == "invoke_skill":
        extra = f" with {cards(m.cards)}" if m.cards else ""
        return f"seat {m.seat} invokes {sk(m.skill)}{extra}"
    if kind == "end_play_phase":
        return f"seat {m.seat} ends the play phase"
    if kind == "pick_general":
        return f"seat {m.seat} picks {m.general}" + (f" (main) and {m.deputy} (deputy)" if m.deputy else "")
    if kind == "reveal_general":
        why = f" to invoke {sk(m.skill)}" if m.skill else f" {TIMING.get(m.timing, '(no timing)')}"
        return f"seat {m.seat} reveals their {SLOT.get(m.which, '?')} general{why}"
    if kind == "choose_option":
        return f"seat {m.seat} chooses {m.option!r}"
    if kind == "sacrifice":
        return f"seat {m.seat} sacrifices {card(m.card)} to dead seat {m.target}"
    if kind == "possess":
        return f"dead seat {m.seat}'s soul possesses seat {m.host}"
    if kind == "soul_act":
        return f"dead seat {m.seat}'s soul acts" + (f", naming {card(m.card)}" if m.HasField("card") else "")
    if kind == "rebirth":
        return f"seat {m.seat} is reborn as {m.general} (max HP {m.max_hp}, HP {m.hp_after})"
    if kind == "general_revealed":
        return f"seat {m.seat}'s {SLOT.get(m.slot, '?')} general {m.general} is revealed {TIMING.get(m.timing, '')}"
    if kind == "kingdom_fixed":
        extra = f" ({m.general_kingdom} generals)" if m.general_kingdom else ""
        return f"seat {m.seat}'s kingdom is {m.kingdom}{extra}"
    if kind == "turn_start":
        return f"turn {m.turn}: seat {m.seat}"
    if kind == "phase_start":
        return f"seat {m.seat} {PHASE.get(m.phase, '?')} phase"
    if kind == "draw_cards":
        why = pb.DrawReason.Name(m.reason).removeprefix("DRAW_REASON_").lower()
        return f"seat {m.seat} draws {cards(m.cards)} ({why})"
    if kind == "judgment":
        return f"seat {m.seat} judgment for {sk(m.reason)}: {card(m.card)}"
    if kind == "reveal":
        return f"revealed {cards(m.cards)} for {sk(m.reason)}"
    if kind == "damage":
        src = f"seat {m.source}" if m.HasField("source") else "no source"
        chain = ", passed on by 铁锁连环" if m.chained else ""
        return f"seat {m.target} takes {m.amount}{NATURE.get(m.nature, '')} damage from {src}{chain} (HP {m.hp_after})"
    if kind == "lose_hp":
        return f"seat {m.seat} loses {m.amount} HP (HP {m.hp_after})"
    if kind == "recover":
        return f"seat {m.seat} recovers {m.amount} (HP {m.hp_after})"
    if kind == "dying":
        return f"seat {m.seat} is dying"
    if kind == "death":
        killer = f"killed by seat {m.killer}" if m.HasField("killer") else "no killer"
        return f"seat {m.seat} dies ({m.kingdom or ROLE.get(m.role, '?')}, {killer})"
    if kind == "cards_moved":
        # (a move with no reason of its own — 不屈's 创 put on a general — says none)
        why = f" ({pb.MoveReason.Name(m.reason).removeprefix('MOVE_REASON_').lower()})" if m.reason else ""
        dest = f"seat {m.to_seat}'s {pb.Zone.Name(m.to_zone).removeprefix('ZONE_').lower()}" \
            if m.HasField("to_seat") else pb.Zone.Name(m.to_zone).removeprefix("ZONE_").lower()
        src = f"seat {m.from_seat}'s " if m.HasField("from_seat") else ""
        return f"{cards(m.cards)} from {src}{pb.Zone.Name(m.from_zone).removeprefix('ZONE_').lower()} to {dest}{why}"
    if kind == "reshuffle":
        return f"discard pile reshuffled into a new draw pile of {len(m.order)} cards"
    if kind == "game_over":
        if m.side == pb.SIDE_KINGDOM:
            return f"game over: {m.kingdom or 'the last one alive'} wins {list(m.winners)}"
        scores = f", scores {list(m.scores)}" if m.scores else ""
        return f"game over: {SIDE.get(m.side, '?')} win {list(m.winners)}{scores}"
    return str(kind)
