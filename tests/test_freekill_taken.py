"""A modified client's reply FreeKill's server carries out although the rules forbid it — a 杀 taken from another
player's hand, a 无中生有 taken from the draw pile, 制衡 by a general without it — is flagged at its decision and then
followed as it was played (docs/log-format.md#taken-cards): one cheat, one violation, nothing after it.

The room is a real one: FreeKill's core (88a912f1) run headless by tests/freekill_live/host.py with the sgs-verify tap,
five SmartAI seats, six cheats substituted as a modified client's replies (tools/freekill_tap_games.py, room 12 of a
14-game run), written as a transcript (tests/freekill_live/judge.py transcript_of) and xz-compressed."""

from __future__ import annotations

import lzma
from collections import Counter
from pathlib import Path

from importers.freekill import import_freekill
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify

ROOM = Path(__file__).resolve().parent / "data" / "freekill" / "tap_cheats_room12.jsonl.xz"
# (event, transcript seq of the reply's GameLog line, code): the host's six cheats, at the decisions they led to.
CHEATS = [(5, 179, "SKILL_NOT_OWNED"), (23, 438, "CARD_NOT_OWNED"), (38, 643, "CARD_NOT_OWNED"),
          (53, 838, "OUT_OF_RANGE"), (89, 1410, "SLASH_LIMIT"), (143, 2285, "PEACH_FULL_HP")]


def _imported() -> tuple[pb.GameLog, list[int]]:
    imported = import_freekill(lzma.decompress(ROOM.read_bytes()), "room-12.jsonl")
    return imported.log, imported.sources


def test_taken_cards_are_recorded_where_they_came_from() -> None:
    log, _ = _imported()
    taken = [(i, ev.cards_moved) for i, ev in enumerate(log.events)
             if ev.HasField("cards_moved") and ev.cards_moved.reason == pb.MOVE_REASON_TAKEN]
    assert [i for i, _ in taken] == [24, 39]
    for i, move in taken:
        use = log.events[i - 1].use_card  # right after the use it belongs to
        assert list(move.cards) == [use.card.id] and move.to_seat == use.seat and move.to_zone == pb.ZONE_HAND
    (_, from_hand), (_, from_pile) = taken
    assert from_hand.from_zone == pb.ZONE_HAND and from_hand.HasField("from_seat") and from_hand.from_seat != 1
    assert from_pile.from_zone == pb.ZONE_DRAW_PILE and not from_pile.HasField("from_seat")
    # The 无中生有 off the draw pile is not 五谷丰登's reveal (no 五谷丰登 is used in this room).
    assert not any(ev.HasField("reveal") for ev in log.events)


def test_each_cheat_is_one_violation_and_the_game_is_followed_as_played() -> None:
    log, sources = _imported()
    replay = verify(log)
    assert replay.followed and replay.result.finished
    got = [(a.index, sources[a.index], v.code) for a in replay.annotations for v in a.violations]
    assert got == CHEATS
    handled = {v.handling for a in replay.annotations for v in a.violations}
    assert handled == {apb.HANDLING_APPLIED}


ZHIHENG_ROOM = Path(__file__).resolve().parent / "data" / "freekill" / "tap_zhiheng_lianying_v0520.log.xz"


def test_a_borrowed_zhiheng_that_triggers_the_owners_lianying_is_carried_out() -> None:
    """A live-test cheat room on core v0.5.20: the modified client of 陆逊 sends 制衡 (a skill he lacks) discarding
    his one hand card; FreeKill carries it out, 陆逊's own 连营 triggers on the empty hand and draws before 制衡's
    draw. The log's next event after the 制衡 is that 连营 invocation, not an outcome, so 制衡 was once refused:
    连营 was out of place (SKILL_TIMING), both draws UNEXPECTED_OUTCOME, the pile out of step, and nine more false
    violations followed (a later 过河拆桥 at oneself read as CARD_NOT_OWNED). Now it is carried out: each of the
    room's cheats is one violation at its own reply, and nothing else is flagged but FreeKill's AI's 结姻 gap."""
    from importers.freekill.convert import convert
    from importers.freekill.tap import read_tap

    room = read_tap(lzma.decompress(ZHIHENG_ROOM.read_bytes()).decode("utf-8").splitlines())[100]
    conv = convert(room.messages)
    replay = verify(conv.log)
    assert replay.followed and replay.result.finished
    client = {conv.reply_events[m.seq] for m in room.messages if m.kind == "reply" and m.by == "client"
              and m.seq in conv.reply_events}
    found = [(a.index, v.code) for a in replay.annotations for v in a.violations]
    zhiheng = conv.reply_events[1553]
    assert conv.log.events[zhiheng + 1].invoke_skill.skill == "lianying"
    by_zhiheng = [v for a in replay.annotations if a.index == zhiheng for v in a.violations]
    assert [(v.code, v.handling) for v in by_zhiheng] == [("SKILL_NOT_OWNED", apb.HANDLING_APPLIED)]
    assert {code for index, code in found if index not in client} <= {"SKILL_COST"}
    # fifteen cheats, one violation each (the sixteenth client reply is the legal 杀 the host sent before a second)
    flagged = Counter(index for index, _ in found if index in client)
    assert len(client) == 16 and len(flagged) == 15 and set(flagged.values()) == {1}
