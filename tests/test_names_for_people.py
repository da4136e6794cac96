"""What people read names skills and cards in Chinese, never by the engine's internal names (issue 29): the
viewer's event lines (结姻 beside 杀 ♠8, not `invokes jieyin`) and the cheat report's notes (度势 making a 以逸待劳,
not `makes a await_exhausted with duoshi`). A verdict's own messages keep the log's names: they are the
contract's, and the golden corpus holds them."""

from __future__ import annotations

import re

from clients.cheats.mutator import find_mutations
from clients.selfplay import play_game
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import text
from verifier.state import annotation_json


def internal_names_in(line: str) -> list[str]:
    """The words of ``line`` that are an internal skill or card name with a Chinese one."""
    return [w for w in re.findall(r"[a-z][a-z_]+", line) if text.skill_zh(w) != w]


def test_skill_names_in_chinese() -> None:
    assert text.skill_zh("jieyin") == "结姻"
    assert text.skill_zh("duoshi") == "度势"
    assert text.skill_zh("await_exhausted") == "以逸待劳"  # a card's name, for a view-as skill's card
    assert text.skill_zh("no_such_skill") == "no_such_skill"
    ev = pb.Event()
    ev.invoke_skill.seat, ev.invoke_skill.skill = 1, "jieyin"
    assert text.describe(ev) == "seat 1 invokes jieyin"  # as the verdicts' messages have it
    assert text.describe(ev, text.skill_zh) == "seat 1 invokes 结姻"
    use = pb.Event()
    use.use_card.seat = 2
    use.use_card.card.virtual.name, use.use_card.card.virtual.skill = "slash", "wusheng"
    assert text.describe(use, text.skill_zh).startswith("seat 2 uses 杀 via 武圣 from")


def test_the_viewers_event_lines_name_skills_in_chinese() -> None:
    log = play_game(3, 6, generals=True)
    lines = [annotation_json(apb.Annotation(index=i), log.events)["text"] for i in range(len(log.events))]
    invoked = [line for line, ev in zip(lines, log.events, strict=True) if ev.HasField("invoke_skill")]
    assert invoked, "the game should use some skill"
    leaked = [line for line in lines if internal_names_in(line)]
    assert leaked == []


def test_cheat_notes_name_skills_and_cards_in_chinese() -> None:
    leaked = []
    for log in (play_game(4, 7, mode=pb.MODE_HEGEMONY), play_game(5, 8, generals=True)):
        for mutations in find_mutations(log, per_kind=1).values():
            leaked += [m.edit.note for m in mutations if internal_names_in(m.edit.note)]
    assert leaked == []
