"""The catalogue of violation codes: stable identifiers, what each means, and where
the rule is written; and, apart from it, the catalogue of header notices (remarks on a
header that are not violations). docs/codes.md is generated from both tables (tests keep
them in step); a code, once published, is never renamed or reused.

A code's ``rule`` cites sections of the project's documents as ``docs/FILE.md#anchor``
(several separated by "; "), mostly of docs/rules.md, whose anchors are as stable as the
codes; tests/test_rules_reference.py checks that every cited file and anchor exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Final


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
    Code("BAD_HEADER", Kind.MALFORMED, "docs/log-format.md#header; docs/rules.md#house-rule-combinations",
         "The header is unusable: wrong player count, mode, ruleset or seats, options that cannot be combined "
         "(first-out protection with dark souls, a house rule with rebirth), or a protected seat not at the "
         "table."),
    Code("UNSUPPORTED_OPTION", Kind.MALFORMED, "docs/log-format.md#header; docs/rules.md#not-implemented",
         "The header asks for a mode, package or option this engine version does not implement."),
    Code("BAD_ROLES", Kind.MALFORMED, "docs/rules.md#role-table; docs/rules.md#house-role-table",
         "The roles in the header do not fit the role table for this player count and variant, or the "
         "declared role table (options.role_table); or the declared table is impossible or contradicts "
         "options.role_variant."),
    Code("BAD_SETUP", Kind.MALFORMED, "docs/log-format.md#setup",
         "The explicit set-up is not a valid arrangement of the deck (missing, repeated or unknown cards)."),
    Code("MALFORMED_EVENT", Kind.MALFORMED, "docs/log-format.md#events",
         "The event is empty or lacks a required field."),
    Code("UNKNOWN_CARD", Kind.MALFORMED, "docs/cards.md#card-ids",
         "A card id that is not in this game's deck, or a card name that does not exist."),
    Code("SEAT_OUT_OF_RANGE", Kind.MALFORMED, "docs/log-format.md#events",
         "A seat number that is not at the table."),
    Code("UNSUPPORTED_EVENT", Kind.MALFORMED, "docs/rules.md#unsupported-events",
         "An event this mode does not have (e.g. picking a general in white-general mode)."),
    # --- whose turn, when, and with what
    Code("OUT_OF_TURN", Kind.ILLEGAL, "docs/rules.md#timing; docs/codes.md#one-code",
         "A player acted on their own initiative (a card used, a play phase ended) in another player's turn, "
         "whatever that turn was waiting for (its play phase, a choice, an answer)."),
    Code("WRONG_TIMING", Kind.ILLEGAL, "docs/rules.md#timing; docs/codes.md#one-code",
         "The decision does not answer what the game is waiting for (wrong phase of one's own turn, wrong kind "
         "of card, or nobody asked for it), where no more specific code says so (OUT_OF_TURN, SKILL_TIMING, "
         "SKILL_NOT_AVAILABLE, REVEAL_TIMING, SACRIFICE_TIMING, POSSESS_TIMING, SOUL_TIMING)."),
    Code("DEAD_PLAYER", Kind.ILLEGAL, "docs/rules.md#death",
         "A dead character made a decision."),
    Code("CARD_NOT_OWNED", Kind.ILLEGAL, "docs/rules.md#using-cards; docs/codes.md#one-code",
         "A card was used, played, converted or chosen from a place it is not in (e.g. not in the user's hand), "
         "or a cost paid with a card the payer does not hold at all (one of its own from the wrong area is "
         "SKILL_COST)."),
    Code("WRONG_CARD", Kind.ILLEGAL, "docs/rules.md#responses",
         "The card does not fit the request (e.g. a 杀 offered as a 闪)."),
    Code("INVALID_CHOICE", Kind.ILLEGAL, "docs/rules.md#choosing-cards",
         "The chosen cards are not among the allowed ones, or their number is wrong."),
    Code("INVALID_TARGET", Kind.ILLEGAL, "docs/rules.md#targets",
         "A target the card cannot take: wrong number of targets, yourself, a dead character, "
         "or a character without the required cards or weapon."),
    Code("INVALID_CONVERSION", Kind.ILLEGAL, "docs/rules.md#virtual-cards",
         "A virtual card made wrongly: by an effect the player does not have, or from the wrong cards."),
    Code("SKILL_NOT_AVAILABLE", Kind.ILLEGAL, "docs/rules.md#equipment; docs/rules.md#skills; docs/codes.md#one-code",
         "An equipment effect or skill invoked by someone who does not have it, or an equipment effect invoked "
         "when it does not apply (in any player's turn; a general's skill at the wrong time is SKILL_TIMING)."),
    Code("SKILL_NOT_OWNED", Kind.ILLEGAL, "docs/rules.md#skills",
         "A general's skill (or a virtual card made by one) used by a character whose general does not have it."),
    Code("LORD_SKILL", Kind.ILLEGAL, "docs/rules.md#lord-skills; docs/generals.md#selection",
         "A lord skill (激将, 护驾, 救援) used by a character whose general has it but who is not the lord."),
    Code("SKILL_TIMING", Kind.ILLEGAL, "docs/rules.md#skill-timing; docs/generals.md#skills-in-the-log",
         "A skill the character has, used when its timing does not allow it (e.g. 急救 in one's own turn, "
         "a triggered skill when nothing triggers it)."),
    Code("SKILL_LIMIT", Kind.ILLEGAL, "docs/rules.md#skill-limit; docs/generals.md#skills-in-the-log",
         "A skill used more often than it allows (e.g. 制衡 twice in one play phase; a limited skill, 限定技, a "
         "second time in the game; 度势 a fifth time in a phase)."),
    Code("SKILL_COST", Kind.ILLEGAL, "docs/rules.md#skills; docs/generals.md#skills-in-the-log",
         "A skill invoked without paying its cost: fewer, more or other cards than it must discard or give "
         "(e.g. 制衡 with no card, 结姻 without two hand cards), or a cost of hand cards paid with an equipped card "
         "of one's own (a skill's or 三尖两刃刀's). The skill is still carried out."),
    Code("SKILL_PRECONDITION", Kind.ILLEGAL, "docs/rules.md#skills; docs/generals.md#skills-in-the-log",
         "A skill used when its user lacks what it works with (e.g. 反间 with no hand card for the target to "
         "take). The skill is still carried out as far as it can be; where nothing of it can be (天义 or 驱虎 with no "
         "hand card of one's own for the 拼点) the invocation is refused."),
    Code("TARGET_PROHIBITED", Kind.ILLEGAL,
         "docs/rules.md#prohibited-targets; docs/generals.md#kongcheng; docs/generals.md#qianxun",
         "A target a skill forbids: 空城 (杀/决斗 on a character with no hand cards), 谦逊 (顺手牵羊/乐不思蜀)."),
    Code("GENERAL_NOT_OFFERED", Kind.ILLEGAL, "docs/rules.md#generals; docs/generals.md#selection",
         "A general picked that is not among the seat's candidates (or a pick out of order)."),
    Code("PICK_TWO_KINGDOMS", Kind.ILLEGAL, "docs/rules.md#hegemony-generals",
         "Hegemony: a seat picked a main and a deputy general of two kingdoms (or one general twice); both "
         "must be of one kingdom."),
    Code("HIDDEN_SKILL", Kind.ILLEGAL, "docs/rules.md#hegemony-hidden; docs/rules.md#hegemony-reveal",
         "Hegemony: a skill of a face-down general was used without revealing that general first (a "
         "RevealGeneral with REVEAL_TIMING_SKILL before the decision). The general is turned up then and the "
         "skill carried out."),
    Code("REVEAL_TIMING", Kind.ILLEGAL, "docs/rules.md#hegemony-reveal; docs/codes.md#one-code",
         "Hegemony: a general revealed outside the start of its owner's start phase, or for a skill that is "
         "not that general's or cannot be used now, or a general already face up — in its owner's turn or "
         "another's. The reveal has no effect."),
    Code("SLASH_LIMIT", Kind.ILLEGAL, "docs/rules.md#slash-limit",
         "A second 杀 in one play phase without 诸葛连弩 or a skill that allows it."),
    Code("ANALEPTIC_LIMIT", Kind.ILLEGAL, "docs/rules.md#analeptic",
         "A second 酒 drunk in one turn (outside dying, 酒 is drunk at most once per turn)."),
    Code("OUT_OF_RANGE", Kind.ILLEGAL, "docs/rules.md#attack-range",
         "A 杀 target beyond the user's attack range."),
    Code("DISTANCE_LIMIT", Kind.ILLEGAL, "docs/rules.md#distance-limit",
         "A 顺手牵羊 (or 兵粮寸断) target at a distance greater than 1."),
    # --- hegemony Qun skills (docs/generals-hegemony.md#qun)
    Code("RESCUE_FORBIDDEN", Kind.ILLEGAL, "docs/generals-hegemony.md#qun",
         "A 桃 used to save a dying character when a skill forbids it (完杀: during 贾诩's turn only 贾诩 and the "
         "dying character may). The 桃 is not used."),
    Code("DUPLICATE_DELAYED_TRICK", Kind.ILLEGAL, "docs/rules.md#judgment-area",
         "A delayed trick placed into a judgment area that already holds one of that name."),
    Code("EQUIP_SLOT", Kind.ILLEGAL, "docs/rules.md#equipment-slots",
         "A second card in one equipment slot: the old card must be discarded when a new one enters."),
    Code("PEACH_FULL_HP", Kind.ILLEGAL, "docs/rules.md#peach",
         "A 桃 used in the play phase by a character who is not wounded."),
    Code("HAND_LIMIT", Kind.ILLEGAL, "docs/rules.md#hand-limit",
         "Too few or too many cards discarded in the discard phase."),
    Code("AFTER_GAME_OVER", Kind.ILLEGAL, "docs/rules.md#game-over",
         "An event after the game ended."),
    # --- the rebirth variant (转世, options.rebirth)
    Code("SACRIFICE_TIMING", Kind.ILLEGAL, "docs/rules.md#rebirth-sacrifice",
         "Rebirth: a sacrifice made outside the giver's own play phase (R-1). It has no effect."),
    Code("SACRIFICE_LIMIT", Kind.ILLEGAL, "docs/rules.md#rebirth-sacrifice",
         "Rebirth: a second sacrifice by one character in one turn (R-1: at most one a turn). It has no effect."),
    Code("SACRIFICE_BY_REBORN", Kind.ILLEGAL, "docs/rules.md#rebirth-sacrifice",
         "Rebirth: a sacrifice by a reborn character, who may not sacrifice. It has no effect."),
    Code("SACRIFICE_TARGET", Kind.ILLEGAL, "docs/rules.md#rebirth-sacrifice; docs/rules.md#rebirth-general",
         "Rebirth: a sacrifice to a character who cannot take one: a living character (the giver too), or a dead "
         "one that takes no more (no unused general of its kingdom was left). It has no effect."),
    # --- dark souls (暗魂, options.dark_souls)
    Code("POSSESS_TIMING", Kind.ILLEGAL, "docs/rules.md#dark-souls-possession",
         "Dark souls: a possession nobody asked for: by a living character, by a dead one whose possession is not "
         "due now (a second one, or one out of its place: D-1). It has no effect."),
    Code("POSSESS_TARGET", Kind.ILLEGAL, "docs/rules.md#dark-souls-possession",
         "Dark souls: a possession of a character who is not alive (D-1: any living character, one already "
         "possessed too). It has no effect; the possession is still due."),
    Code("POSSESS_MISSING", Kind.ILLEGAL, "docs/rules.md#dark-souls-possession",
         "Dark souls: the log goes on without the possession due right after a loyalist's, rebel's or spy's death "
         "(D-1). That character has no soul for the rest of the game."),
    Code("NO_SOUL", Kind.ILLEGAL, "docs/rules.md#dark-souls-acts",
         "Dark souls: a soul's act by a seat that has no soul: a living character, the lord, or a dead character "
         "that possessed nobody (D-2). It has no effect."),
    Code("SOUL_SPENT", Kind.ILLEGAL, "docs/rules.md#dark-souls-acts",
         "Dark souls: a soul's act by a soul that is gone: it acted already, or its host died before it acted "
         "(D-1, D-2: each soul acts once). It has no effect."),
    Code("SOUL_TIMING", Kind.ILLEGAL, "docs/rules.md#dark-souls-acts; docs/codes.md#one-code",
         "Dark souls: a soul acts out of its timing: a 罗汉 when its host is not about to take damage (D-3), a 玄武 "
         "when no play phase waits for an action (D-4), a 游助 when its host's own play phase does not (D-5). It "
         "has no effect."),
    Code("SOUL_CARD", Kind.ILLEGAL, "docs/rules.md#dark-souls-acts",
         "Dark souls: a 玄武's act that names no card, or a 罗汉's or 游助's act that names one (D-3 to D-5; a card "
         "named that is not in the host's hand is CARD_NOT_OWNED). It has no effect."),
    # --- recorded outcomes checked against the derived ones
    Code("DRAW_COUNT", Kind.MISMATCH, "docs/rules.md#draw-phase",
         "The recorded draw has a different number of cards than the rules give."),
    Code("DRAW_NOT_TOP", Kind.MISMATCH, "docs/rules.md#drawing",
         "The recorded draw is not the top of the draw pile (a stacked deck)."),
    Code("JUDGMENT_MISMATCH", Kind.MISMATCH, "docs/rules.md#judgment",
         "The recorded judgment card is not the top of the draw pile."),
    Code("DAMAGE_MISMATCH", Kind.MISMATCH, "docs/rules.md#damage",
         "The recorded damage differs in source, target, amount or nature."),
    Code("HP_MISMATCH", Kind.MISMATCH, "docs/rules.md#hp",
         "The recorded HP after damage, loss or recovery differs from the rules."),
    Code("RECOVER_MISMATCH", Kind.MISMATCH, "docs/rules.md#recovery",
         "The recorded recovery differs in who or how much."),
    Code("DEATH_MISMATCH", Kind.MISMATCH, "docs/rules.md#dying; docs/rules.md#death",
         "The recorded dying or death differs (who, killer, revealed role)."),
    Code("KILL_REWARD", Kind.MISMATCH,
         "docs/rules.md#kill-reward; docs/rules.md#dead-or-self-killer; docs/rules.md#hegemony-reward",
         "A kill reward (draw 3 for killing a rebel; in hegemony, one card per character of the victim's "
         "kingdom) that is missing, wrong, or was not owed."),
    Code("KILL_PENALTY", Kind.MISMATCH,
         "docs/rules.md#kill-penalty; docs/rules.md#dead-or-self-killer; docs/rules.md#hegemony-penalty",
         "The lord's penalty for killing a loyalist (in hegemony: for killing one's own kingdom; discard all "
         "hand and equipment) that is missing, wrong, or was not owed."),
    Code("GAME_RESULT", Kind.MISMATCH, "docs/rules.md#victory; docs/rules.md#hegemony-victory",
         "The recorded end of the game (winning side, winners) differs from the rules; in hegemony also a "
         "winner declared while a living character has no kingdom yet."),
    Code("SCORE_MISMATCH", Kind.MISMATCH, "docs/rules.md#scoring; docs/log-format.md#scores",
         "The scores recorded in the game-over event (GameOver.scores, optional) differ from the fourth-edition "
         "scoring table's, or are not one per seat, or are recorded for a game that is not scored; the rules' "
         "scores stand."),
    Code("REVEAL_MISMATCH", Kind.MISMATCH, "docs/rules.md#hegemony-reveal; docs/rules.md#hegemony-death",
         "Hegemony: a recorded GeneralRevealed that differs from the rules (which general, which seat, when)."),
    Code("KINGDOM_MISMATCH", Kind.MISMATCH, "docs/rules.md#hegemony-kingdom; docs/rules.md#hegemony-careerist",
         "Hegemony: a recorded KingdomFixed that differs from the rules: another kingdom, or a careerist "
         "recorded as of its kingdom (or the other way round)."),
    Code("REBIRTH_COUNT", Kind.MISMATCH, "docs/rules.md#rebirth-general",
         "Rebirth: a recorded rebirth of a character that does not hold the sacrifices it needs (4; 3 with 4 or 5 "
         "players) or is not dead, or (complete logs) a rebirth that was due left out."),
    Code("REBIRTH_KINGDOM", Kind.MISMATCH, "docs/rules.md#rebirth-general",
         "Rebirth: the recorded new general is not of the dead general's kingdom (R-2, R-3)."),
    Code("REBIRTH_MISMATCH", Kind.MISMATCH, "docs/rules.md#rebirth-general; docs/rng.md#rebirth",
         "Rebirth: the recorded rebirth differs from the rules otherwise: a general of the right kingdom that is "
         "not the first one turned in the seeded order, or another max HP or HP (R-4)."),
    Code("DRAIN_MISMATCH", Kind.MISMATCH, "docs/rules.md#last-three-clock; docs/log-format.md#last-three-clock",
         "Last-three clock: a drain's HP loss recorded otherwise than the rules give it (another amount or HP "
         "after), left out of a log that claims complete outcomes (a drain skipped at its round), or recorded at "
         "the start of a round where no drain is due (T-1, T-2)."),
    Code("PROTECTION_MISMATCH", Kind.MISMATCH, "docs/rules.md#first-out-protection; "
         "docs/log-format.md#first-out-protection",
         "First-out protection: damage or an HP loss of the protected character recorded taking it below 1 HP "
         "while its last HP is protected (P-1): the amount not reduced to what leaves it at 1 HP, or recorded at "
         "all where the whole of it is prevented; or, where the protection does not hold (after the first death, "
         "P-2; from a character it attacked, P-3), damage that takes it below 1 HP recorded leaving it its last HP, "
         "or left out of a log that claims complete outcomes. The game goes on with the rules' HP."),
    Code("RESHUFFLE_MISMATCH", Kind.MISMATCH, "docs/rules.md#reshuffle",
         "A recorded reshuffle that is not the seeded order, or (with recorded reshuffles) not a "
         "permutation of the discard pile."),
    Code("TURN_MISMATCH", Kind.MISMATCH, "docs/rules.md#turn-order; docs/rules.md#phases",
         "A recorded turn or phase marker that differs from the rules' turn order."),
    Code("MOVE_MISMATCH", Kind.MISMATCH, "docs/log-format.md#canonical-outcomes",
         "A recorded card move that differs from the derived one."),
    Code("MISSING_OUTCOME", Kind.MISMATCH, "docs/log-format.md#complete-outcomes",
         "A log that claims complete outcomes leaves one out."),
    Code("UNEXPECTED_OUTCOME", Kind.MISMATCH, "docs/log-format.md#outcomes",
         "A recorded outcome the rules do not produce at that point."),
]

CATALOGUE: dict[str, Code] = {c.name: c for c in _CODES}


@dataclass(frozen=True, slots=True)
class NoticeCode:
    """A header notice: how the header was read where it departs from the rule book without
    breaking a rule. Never a violation (AnnotatedReplay.header_notices, not counted)."""

    name: str
    rule: str
    meaning: str


_NOTICES = [
    NoticeCode("HOUSE_ROLE_TABLE", "docs/rules.md#house-role-table; docs/log-format.md#header",
               "The header declares a role table (options.role_table) that is not the rule book's for the "
               "player count (neither the standard table nor the 6/8-player two-spy variant); the game was "
               "judged by the declared table."),
]

NOTICES: dict[str, NoticeCode] = {c.name: c for c in _NOTICES}


def code(name: str) -> Code:
    return CATALOGUE[name]


def rule_links(rule: str) -> str:
    """A ``rule`` citation as Markdown links relative to docs/: docs/rules.md#slash-limit becomes a link to
    rules.md#slash-limit."""
    return "; ".join(f"[{part}]({part.removeprefix('docs/')})" if part.startswith("docs/") else part
                     for part in rule.split("; "))


# The codes of FreeKill's reply check (integrations/freekill/tap/README.md): another engine's, stored as it gave them.
SERVER_CHECK_CODES: Final = {
    "FK_NOT_OFFERED": "a card, target, skill button, general or move the request did not offer (a card held by "
                      "another player or lying in the draw pile, a skill the general lacks)",
    "FK_NOT_SELECTABLE": "offered but not selectable at that point (a second 杀 in a phase, 桃 at full HP, a target "
                         "out of range, a once-a-phase skill used again), or an item chosen twice",
    "FK_NOT_FEASIBLE": "each item selectable, but the selection not one the OK button allows (a discard one card "
                       "short; a skill's cost unpaid)",
    "FK_OPTION_NOT_OFFERED": "an option (AskForChoice, an interaction value) not among those offered",
    "FK_BAD_COUNT": "too few or too many chosen, or cards placed that do not add up to those offered",
    "FK_DUPLICATE": "the same option, general or card chosen twice",
    "FK_MALFORMED": "the reply does not have the request's shape",
}


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
        lines.append(f"| `{c.name}` | {c.kind.value} | {rule_links(c.rule)} | {c.meaning} |")
    lines += [
        "",
        '<a id="one-code"></a>',
        "## One kind of violation, one code",
        "",
        "A violation gets its code from what is wrong, never from where or when it happens. Where two codes",
        "could be read to fit, the ruling is:",
        "",
        "- **A reveal out of timing** is `REVEAL_TIMING` in its owner's play phase and in another player's turn",
        "  alike (it was `WRONG_TIMING` when another player's request was open).",
        "- **Acting on one's own initiative in another player's turn** (a card used, a play phase ended) is",
        "  `OUT_OF_TURN` whatever that turn waits for — its play phase, a choice, an answer (it was `WRONG_TIMING`",
        "  while a choice or an answer was awaited). In one's own turn outside the play phase (a card used in",
        "  one's discard phase) it is `WRONG_TIMING`.",
        "- **An effect invoked when nothing asks for it**: a general's skill is `SKILL_TIMING`, an equipment effect",
        "  `SKILL_NOT_AVAILABLE`, in anyone's turn (an equipment effect in another's turn was `OUT_OF_TURN`, in",
        "  one's own discard phase `WRONG_TIMING`).",
        "- **A cost of hand cards paid with an equipped card of one's own** is `SKILL_COST`, and the cost is",
        "  paid with it all the same — for 制衡, 结姻, 骁果, 天香, 好施, 放权 and 三尖两刃刀 alike",
        "  (三尖两刃刀's, 骁果's, 天香's, 好施's and 放权's were `CARD_NOT_OWNED`, refused). A card the payer does",
        "  not hold at all is",
        "  `CARD_NOT_OWNED`. A card used, played or turned into a virtual card must be where it is used from: an",
        "  equipped card there is `CARD_NOT_OWNED` (it is not in the hand the use takes it from).",
        "- **A recorded outcome no derived one is about** is `UNEXPECTED_OUTCOME`, whatever its kind (a draw of",
        "  another seat or reason was `DRAW_COUNT`); only turn and phase markers (`TURN_MISMATCH`), damage",
        "  (`DAMAGE_MISMATCH`) and rewards, penalties and endings keep their own codes",
        "  ([log-format.md](log-format.md#outcomes)).",
        "- **A dark soul's act out of its timing** is `SOUL_TIMING` at any request that it does not answer and that",
        "  cannot be declined (a play phase waiting, a choice, a discard phase with cards due: the act is no sign of",
        "  the log going on without the answer), whoever's turn it is; a soul that is gone is `SOUL_SPENT` and a",
        "  seat without a soul `NO_SOUL` wherever they act. Optional requests open before it are declined first, as",
        "  for any decision ([log-format.md](log-format.md#implicit-declines)).",
        "",
        "Scenarios: `tests/scenarios/hegemony/reveal/*_in_others_turn.json`, `turn/out_of_turn_*.json`,",
        "`equipment/axe_invoked_when_nothing_asks.json`, `hegemony/cards/triblade_*cost*.json`.",
        "",
        "## Header notices",
        "",
        "Not violations: a notice (`AnnotatedReplay.header_notices`) says how the header was read where it",
        "departs from the rule book without breaking a rule. Notices are not counted in `violation_count`,",
        "not listed in `violation_codes` and change no annotation's status; a game with notices and no",
        "violations is clean. Notice codes are stable like violation codes and never share a name with one.",
        "",
        "| code | rule | meaning |",
        "|---|---|---|",
    ]
    for n in _NOTICES:
        lines.append(f"| `{n.name}` | {rule_links(n.rule)} | {n.meaning} |")
    lines += [
        "",
        '<a id="server-checks"></a>',
        "## Server checks",
        "",
        "Not this engine's: the codes of a recording server's own verdict on a client's reply, kept as the server",
        "gave them (`AnnotatedReplay.server_checks`, `Disagreement.server_code`). FreeKill's rules give them, run",
        "inside the server by the sgs-verify tap's reply check",
        "([integrations/freekill/tap/README.md](../integrations/freekill/tap/README.md)). Beside this engine's",
        "verdict they are never counted; for a record this engine did not replay (`ReplayInfo.judged_by`",
        "`server`) each refusal on a client's reply is one of its violations, and `list --code` finds them",
        "([freekill-bridge.md](freekill-bridge.md#two-engines)).",
        "",
        "| code | refused because |",
        "|---|---|",
    ]
    for name, meaning in SERVER_CHECK_CODES.items():
        lines.append(f"| `{name}` | {meaning} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(catalogue_markdown(), end="")
