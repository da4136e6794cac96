"""The catalogue of violation codes: stable identifiers, what each means, and where
the rule is written. docs/codes.md is generated from this table (tests keep the two
in step); a code, once published, is never renamed or reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    MALFORMED = "malformed"  # the event or header cannot be understood
    ILLEGAL = "illegal"  # a decision the rules forbid
    MISMATCH = "mismatch"  # a recorded outcome differs from the derived one


@dataclass(frozen=True, slots=True)
class Code:
    name: str
    kind: Kind
    rule: str
    meaning: str


_CODES = [
    # --- header and malformed events
    Code("BAD_HEADER", Kind.MALFORMED, "docs/log-format.md §Header",
         "The header is unusable: wrong player count, mode, ruleset or seats."),
    Code("UNSUPPORTED_OPTION", Kind.MALFORMED, "docs/log-format.md §Header",
         "The header asks for a mode, package or option this engine version does not implement."),
    Code("BAD_ROLES", Kind.MALFORMED, "RULES.md §1.1",
         "The roles in the header do not fit the role table for this player count and variant."),
    Code("BAD_SETUP", Kind.MALFORMED, "docs/log-format.md §Setup",
         "The explicit set-up is not a valid arrangement of the deck (missing, repeated or unknown cards)."),
    Code("MALFORMED_EVENT", Kind.MALFORMED, "docs/log-format.md §Events",
         "The event is empty or lacks a required field."),
    Code("UNKNOWN_CARD", Kind.MALFORMED, "docs/cards.md",
         "A card id that is not in this game's deck, or a card name that does not exist."),
    Code("SEAT_OUT_OF_RANGE", Kind.MALFORMED, "docs/log-format.md §Events",
         "A seat number that is not at the table."),
    Code("UNSUPPORTED_EVENT", Kind.MALFORMED, "RULES.md §5",
         "An event this mode does not have (e.g. picking a general in white-general mode)."),
    # --- whose turn, when, and with what
    Code("OUT_OF_TURN", Kind.ILLEGAL, "RULES.md §2",
         "A player acted on their own initiative when it was not their play phase."),
    Code("WRONG_TIMING", Kind.ILLEGAL, "RULES.md §2",
         "The decision does not answer what the game is waiting for (wrong phase, wrong kind of card, "
         "or nobody asked for it)."),
    Code("DEAD_PLAYER", Kind.ILLEGAL, "RULES.md §4",
         "A dead character made a decision."),
    Code("CARD_NOT_OWNED", Kind.ILLEGAL, "RULES.md §2",
         "A card was used, played or chosen from a place it is not in (e.g. not in the user's hand)."),
    Code("WRONG_CARD", Kind.ILLEGAL, "RULES.md §6",
         "The card does not fit the request (e.g. a 杀 offered as a 闪)."),
    Code("INVALID_CHOICE", Kind.ILLEGAL, "RULES.md §6",
         "The chosen cards are not among the allowed ones, or their number is wrong."),
    Code("INVALID_TARGET", Kind.ILLEGAL, "RULES.md §6",
         "A target the card cannot take: wrong number of targets, yourself, a dead character, "
         "or a character without the required cards or weapon."),
    Code("INVALID_CONVERSION", Kind.ILLEGAL, "RULES.md §6 (equipment)",
         "A virtual card made wrongly: by an effect the player does not have, or from the wrong cards."),
    Code("SKILL_NOT_AVAILABLE", Kind.ILLEGAL, "docs/cards.md",
         "An equipment effect or skill invoked by someone who does not have it, or when it does not apply."),
    Code("SKILL_NOT_OWNED", Kind.ILLEGAL, "RULES.md §7",
         "A general's skill (or a virtual card made by one) used by a character whose general does not have it."),
    Code("LORD_SKILL", Kind.ILLEGAL, "RULES.md §7; docs/generals.md (lord skills)",
         "A lord skill (激将, 护驾, 救援) used by a character whose general has it but who is not the lord."),
    Code("SKILL_TIMING", Kind.ILLEGAL, "RULES.md §7; docs/generals.md",
         "A skill the character has, used when its timing does not allow it (e.g. 急救 in one's own turn, "
         "a triggered skill when nothing triggers it)."),
    Code("SKILL_LIMIT", Kind.ILLEGAL, "RULES.md §7; docs/generals.md",
         "A skill used more often than it allows (e.g. 制衡 twice in one play phase)."),
    Code("SKILL_COST", Kind.ILLEGAL, "RULES.md §7; docs/generals.md",
         "A skill invoked without paying its cost: fewer, more or other cards than it must discard or give "
         "(e.g. 制衡 with no card, 结姻 without two hand cards). The skill is still carried out."),
    Code("SKILL_PRECONDITION", Kind.ILLEGAL, "RULES.md §7; docs/generals.md",
         "A skill used when its user lacks what it works with (e.g. 反间 with no hand card for the target to "
         "take). The skill is still carried out as far as it can be."),
    Code("TARGET_PROHIBITED", Kind.ILLEGAL, "RULES.md §7; docs/generals.md",
         "A target a skill forbids: 空城 (杀/决斗 on a character with no hand cards), 谦逊 (顺手牵羊/乐不思蜀)."),
    Code("GENERAL_NOT_OFFERED", Kind.ILLEGAL, "RULES.md §1.2",
         "A general picked that is not among the seat's candidates (or a pick out of order)."),
    Code("SLASH_LIMIT", Kind.ILLEGAL, "RULES.md §2 play phase rule 1",
         "A second 杀 in one play phase without 诸葛连弩 or a skill that allows it."),
    Code("ANALEPTIC_LIMIT", Kind.ILLEGAL, "RULES.md §6 (酒)",
         "A second 酒 drunk in one turn (outside dying, 酒 is drunk at most once per turn)."),
    Code("OUT_OF_RANGE", Kind.ILLEGAL, "RULES.md §3",
         "A 杀 target beyond the user's attack range."),
    Code("DISTANCE_LIMIT", Kind.ILLEGAL, "RULES.md §3",
         "A 顺手牵羊 (or 兵粮寸断) target at a distance greater than 1."),
    Code("DUPLICATE_DELAYED_TRICK", Kind.ILLEGAL, "RULES.md §2 play phase rule 2",
         "A delayed trick placed into a judgment area that already holds one of that name."),
    Code("EQUIP_SLOT", Kind.ILLEGAL, "RULES.md §6 (equipment)",
         "A second card in one equipment slot: the old card must be discarded when a new one enters."),
    Code("PEACH_FULL_HP", Kind.ILLEGAL, "RULES.md §6 (桃)",
         "A 桃 used in the play phase by a character who is not wounded."),
    Code("HAND_LIMIT", Kind.ILLEGAL, "RULES.md §2 discard phase",
         "Too few or too many cards discarded in the discard phase."),
    Code("AFTER_GAME_OVER", Kind.ILLEGAL, "RULES.md §5",
         "An event after the game ended."),
    # --- recorded outcomes checked against the derived ones
    Code("DRAW_COUNT", Kind.MISMATCH, "RULES.md §2 draw phase",
         "The recorded draw has a different number of cards than the rules give."),
    Code("DRAW_NOT_TOP", Kind.MISMATCH, "RULES.md §1.4",
         "The recorded draw is not the top of the draw pile (a stacked deck)."),
    Code("JUDGMENT_MISMATCH", Kind.MISMATCH, "RULES.md §6 (judgment)",
         "The recorded judgment card is not the top of the draw pile."),
    Code("DAMAGE_MISMATCH", Kind.MISMATCH, "RULES.md §6",
         "The recorded damage differs in source, target, amount or nature."),
    Code("HP_MISMATCH", Kind.MISMATCH, "RULES.md §1.3",
         "The recorded HP after damage, loss or recovery differs from the rules."),
    Code("RECOVER_MISMATCH", Kind.MISMATCH, "RULES.md §6 (桃)",
         "The recorded recovery differs in who or how much."),
    Code("DEATH_MISMATCH", Kind.MISMATCH, "RULES.md §4",
         "The recorded dying or death differs (who, killer, revealed role)."),
    Code("KILL_REWARD", Kind.MISMATCH, "RULES.md §4",
         "A kill reward (draw 3 for killing a rebel) that is missing, wrong, or was not owed."),
    Code("KILL_PENALTY", Kind.MISMATCH, "RULES.md §4",
         "The lord's penalty for killing a loyalist (discard all hand and equipment) that is missing, "
         "wrong, or was not owed."),
    Code("GAME_RESULT", Kind.MISMATCH, "RULES.md §5",
         "The recorded end of the game (winning side, winners) differs from the rules."),
    Code("RESHUFFLE_MISMATCH", Kind.MISMATCH, "RULES.md §1.4",
         "A recorded reshuffle that is not the seeded order, or (with recorded reshuffles) not a "
         "permutation of the discard pile."),
    Code("TURN_MISMATCH", Kind.MISMATCH, "RULES.md §2",
         "A recorded turn or phase marker that differs from the rules' turn order."),
    Code("MOVE_MISMATCH", Kind.MISMATCH, "docs/log-format.md §Outcomes",
         "A recorded card move that differs from the derived one."),
    Code("MISSING_OUTCOME", Kind.MISMATCH, "docs/log-format.md §Outcomes",
         "A log that claims complete outcomes leaves one out."),
    Code("UNEXPECTED_OUTCOME", Kind.MISMATCH, "docs/log-format.md §Outcomes",
         "A recorded outcome the rules do not produce at that point."),
]

CATALOGUE: dict[str, Code] = {c.name: c for c in _CODES}


def code(name: str) -> Code:
    return CATALOGUE[name]


def catalogue_markdown() -> str:
    """docs/codes.md, generated from the catalogue."""
    lines = [
        "# Violation codes",
        "",
        "Generated from `verifier/codes.py` (`python -m verifier.codes > docs/codes.md`).",
        "Codes are stable: once published a code keeps its meaning and is never reused.",
        "Kinds: *malformed* — the input cannot be understood; *illegal* — a decision the rules",
        "forbid; *mismatch* — a recorded outcome that differs from the one the rules derive.",
        "",
        "| code | kind | rule | meaning |",
        "|---|---|---|---|",
    ]
    for c in _CODES:
        lines.append(f"| `{c.name}` | {c.kind.value} | {c.rule} | {c.meaning} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(catalogue_markdown(), end="")
