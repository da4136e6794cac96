"""A FreeKill room's settings: whether our engine judges a room played with them, and if not, why.

Our engine judges FreeKill's identity mode (``aaa_role_mode``) as the rules document has it. From v0.5.21 an
identity room has 9 options of its own (FreeKill's ``packages/standard/pkg/init.lua``; the facts are in the project's
notes on FreeKill's newer cores). FreeKill's game logic applies each whatever the player count (its settings dialog only
greys some out), so a room is judged by the options it has on, not by its size:

- ``LordIsWhat`` gives the earliest human player a chosen role: which role is whose, which the record states. No rule
  of play changes: judged.
- Every other option changes the rules (a role, a skill, an end-of-turn penalty, a victory condition) in a way the
  rules document has no ruling for: not judged by our engine, the option named as the reason
  (docs/freekill-bridge.md, "Rooms it cannot check").
"""

from __future__ import annotations

from typing import Any

IDENTITY_MODE = "aaa_role_mode"

# Options that change no rule of play (the record states their effect).
JUDGED_OPTIONS: dict[str, str] = {
    "LordIsWhat": "真人特定身份: the earliest human player's role is chosen (the record states every role)",
}
# Options whose rules our engine does not have.
UNJUDGED_OPTIONS: dict[str, str] = {
    "WangzhanBattleRoyal": "鏖战: from the 4th round (8 players: the 3rd) each turn ends with two cards put into the "
                           "discard pile or 1 HP lost",
    "WangzhanFourEmblems": "四象标记: the lord starts with a random one-time emblem skill",
    "DesignateHeir": "主公立储: the lord may designate an heir, who becomes lord when the lord dies",
    "RenegadeLoyalty": "内奸侍奉明主: a renegade may become a loyalist once a lord or loyalist has died",
    "RenegadeWild": "内奸自立: a renegade may become a careerist with 飞扬 and 跋扈",
    "MakeCivilian": "置入平民: the last rebel is a civilian, who wins by staying alive",
    "DoubleRenegade": "双内奸: the last rebel is a second renegade",
    "RenegadeTogether": "内奸同阵营: two renegades win together",
}


def setting(settings: dict[str, Any], key: str) -> Any:
    """A setting as FreeKill's rooms read it (RoomBase:getSettings): the mode's own, then the game's, then the
    room's top level."""
    for section in ("_mode", "_game"):
        table = settings.get(section)
        if isinstance(table, dict) and table.get(key) is not None:
            return table[key]
    return settings.get(key)


def is_on(value: Any) -> bool:
    """Is an option's value set (FreeKill writes a switch as a boolean, a choice as a string, "False" for none)?"""
    return value not in (None, False, 0, "", "False", "false")


def not_judged(settings: dict[str, Any]) -> str:
    """Why our engine does not judge a room with these settings ("": it does)."""
    mode = settings.get("gameMode")
    if mode not in (None, IDENTITY_MODE):
        return f"its game mode is {str(mode)[:60]!r}: only identity rooms ({IDENTITY_MODE}) are judged by our engine"
    on = [key for key in UNJUDGED_OPTIONS if is_on(setting(settings, key))]
    if on:
        return ("its room option " + "; ".join(f"{key} ({UNJUDGED_OPTIONS[key]})" for key in on)
                + (" is" if len(on) == 1 else " are") + " on: a rule our engine does not judge")
    return ""
