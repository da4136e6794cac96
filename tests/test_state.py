"""verifier/state.py: the table at every position, read off the engine.

The timeline follows a log once; ``state_at`` follows only as far as one position needs. They must
agree everywhere (a state never depends on events after the one it is read at, beyond the one event of
lookahead a held outcome waits for), and the state must be what the log says happened.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from clients.cheats.selfplay import CONSISTENT_KINDS, play_cheating_game
from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb
from verifier import load_log, verify
from verifier.state import Timeline, state_at

EXAMPLES = Path(__file__).resolve().parent.parent / "docs" / "examples"
SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def example(name: str) -> pb.GameLog:
    return load_log((EXAMPLES / name).read_bytes())


def scenario(name: str) -> pb.GameLog:
    return json_format.ParseDict(json.loads((SCENARIOS / name).read_text(encoding="utf-8"))["log"], pb.GameLog())


def without_annotations(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k != "annotations"}


@pytest.mark.parametrize("name", ["short_game.json", "short_game_decisions.json", "second_slash.json"])
def test_the_timeline_agrees_with_following_only_as_far_as_each_position(name: str) -> None:
    log = example(name)
    timeline = Timeline(log)
    assert timeline.positions == len(log.events) + 1
    for position in range(timeline.positions):
        for view in (None, 1):
            assert timeline.state(position, view) == state_at(log, position, view), (position, view)


def test_a_long_game_agrees_at_sampled_positions() -> None:
    log = play_game(3, 8, packages=("maneuvering",))
    timeline = Timeline(log)
    for position in [*range(0, timeline.positions, 37), timeline.positions - 2, timeline.positions - 1]:
        assert without_annotations(timeline.state(position)) == without_annotations(state_at(log, position))
        assert timeline.state(position)["annotations"] == state_at(log, position)["annotations"]


def test_annotations_are_the_verdicts_of_each_position() -> None:
    log = example("second_slash.json")
    replay = verify(log)
    timeline = Timeline(log)
    by_index: dict[int, list[str]] = {}
    for ann in replay.annotations:
        by_index.setdefault(ann.index, []).extend(v.code for v in ann.violations)
    for position in range(timeline.positions):
        codes = [v["code"] for a in timeline.state(position)["annotations"] for v in a["violations"]]
        assert codes == by_index.get(position, [])
    own = [a for a in timeline.state(3)["annotations"] if not a["derived"]]
    assert [(a["status"], a["text"]) for a in own] == [("ILLEGAL", "seat 0 uses 杀 ♠8 (#16) → seat 1")]
    assert own[0]["violations"][0]["rule"] == "docs/rules.md#slash-limit"


def test_a_held_outcome_is_read_once_judged_and_before_the_next_event() -> None:
    # short_game.json records every outcome: the damage of the rebel's 杀 (event 20) comes after the
    # lord's implicit decline of 闪, so the verifier holds it until event 21 arrives.
    log = example("short_game.json")
    assert log.events[19].HasField("use_card") and log.events[20].HasField("damage")
    timeline = Timeline(log)
    assert timeline.state(19)["seats"][0]["hp"] == 4
    assert timeline.state(20)["seats"][0]["hp"] == 3 == log.events[20].damage.hp_after
    assert state_at(log, 20)["seats"][0]["hp"] == 3


def test_seats_piles_turn_and_the_end() -> None:
    log = example("short_game_decisions.json")
    timeline = Timeline(log)
    first = timeline.state(0)
    assert [s["player"] for s in first["seats"]] == ["alice", "bob", "carol", "dave"]
    lord = first["seats"][0]
    # Event 0: the lord places 闪电 on themself (the engine is then waiting for their next action).
    assert [c["name"] for c in lord["judgment"]] == ["闪电"]
    assert lord["role"] == "lord" and lord["hp"] == lord["max_hp"] == 4 and lord["current"]
    assert first["turn"] == 1 and first["round"] == 1 and first["phase"] == "play"
    assert first["waiting"] == "seat 0 to act in their play phase"
    held = sum(s["hand_count"] + len(s["equipment"]) + len(s["judgment"]) for s in first["seats"])
    assert first["draw_pile"] + first["discard_pile"] + len(first["processing"]) + held == 108
    after_equip = timeline.state(1)
    assert [c["en"] for c in after_equip["seats"][0]["equipment"].values()] == ["crossbow"]
    end = timeline.state(len(log.events))
    assert end["end"] and end["event"] is None and end["over"]
    assert end["result"] == {"finished": True, "side": "rebels", "winners": [1], "reason": "the lord died: the rebels "
                             "win"}
    assert not end["seats"][0]["alive"] and end["seats"][0]["hp"] <= 0
    assert [t["turn"] for t in timeline.turns] == [1, 2, 3, 4, 5]
    assert [t["round"] for t in timeline.turns] == [1, 1, 1, 1, 2]
    assert [t["position"] for t in timeline.turns] == [0, 3, 6, 8, 10]


def test_a_seats_view_hides_the_other_hands_and_roles() -> None:
    log = example("short_game.json")
    timeline = Timeline(log)
    open_view = timeline.state(30)
    seen = timeline.state(30, 2)
    assert open_view["view"] == "open" and seen["view"] == 2
    for s_open, s_seen in zip(open_view["seats"], seen["seats"], strict=True):
        assert s_seen["hand_count"] == s_open["hand_count"] == len(s_open["hand"])
        if s_seen["seat"] == 2:
            assert s_seen["hand"] == s_open["hand"] and s_seen["role"] == "loyalist"
        else:
            assert s_seen["hand"] is None
            assert s_seen["role"] == (s_open["role"] if s_open["role"] == "lord" else None)
        assert s_seen["equipment"] == s_open["equipment"] and s_seen["judgment"] == s_open["judgment"]
    # The dead show their role to everyone.
    end = timeline.state(len(log.events), 3)
    assert end["seats"][0]["role"] == "lord"


def test_marks_show_the_chain() -> None:
    log = play_game(4, 5, packages=("maneuvering",))
    timeline = Timeline(log)
    chained = [p for p in range(timeline.positions) if any(s["chained"] for s in timeline.state(p)["seats"])]
    assert chained, "this game chains someone (铁锁连环)"
    seat = next(s for s in timeline.state(chained[0])["seats"] if s["chained"])
    assert seat["marks"]["chained"] == 1


def test_a_cheat_is_annotated_where_it_was_made() -> None:
    game = play_cheating_game(3, 8, CONSISTENT_KINDS[0])
    assert game.index is not None
    timeline = Timeline(game.log)
    codes = [v["code"] for a in timeline.state(game.index)["annotations"] for v in a["violations"]]
    assert codes == ["SLASH_LIMIT"]
    assert without_annotations(timeline.state(game.index)) == without_annotations(state_at(game.log, game.index))


def test_positions_and_seats_out_of_range() -> None:
    timeline = Timeline(example("second_slash.json"))
    with pytest.raises(IndexError, match="position 8 is not in 0…7"):
        timeline.state(8)
    with pytest.raises(IndexError, match="seat 4 is not at this 4-seat table"):
        timeline.state(0, 4)


def test_an_unusable_header_has_no_table_but_its_seats() -> None:
    log = example("second_slash.json")
    log.header.ClearField("mode")
    state = Timeline(log).state(0)
    assert "header is unusable" in state["error"]
    assert [s["player"] for s in state["seats"]] == ["alice", "bob", "carol", "dave"]


def test_generals_are_named() -> None:
    log = play_game(2, 6, generals=True)
    end = Timeline(log).state(len(log.events))
    assert all(s["general"] and s["general_zh"] != s["general"] and s["kingdom"] for s in end["seats"])


def test_hegemony_generals_face_down_are_seen_by_their_owner_only() -> None:
    """A hegemony character plays a main and a deputy general: a face-down one is shown to its owner and
    in the open view, never to another seat, and once it is face up (or its character dead) to all. Rounds
    start at the first seat's turns (there is no lord)."""
    log = play_game(3, 5, mode=pb.MODE_HEGEMONY)
    timeline = Timeline(log)
    checked_down = checked_up = 0
    for position in range(0, timeline.positions, 7):
        open_view = timeline.state(position)["seats"]
        for viewer in range(5):
            seats = timeline.state(position, viewer)["seats"]
            for seat, (mine, shown) in enumerate(zip(seats, open_view, strict=True)):
                assert mine["role"] is None and len(shown["generals"]) in (0, 2)  # (none before the picks)
                for g, o in zip(mine["generals"], shown["generals"], strict=True):
                    assert o["name"] is not None
                    if o["face_up"] or seat == viewer or not shown["alive"]:
                        assert g == o
                        checked_up += 1
                    else:
                        assert g == {"name": None, "name_zh": None, "face_up": False}
                        checked_down += 1
    assert checked_down and checked_up
    turns = timeline.turns
    first = turns[0]["seat"]
    assert [t["round"] for t in turns[:6]] == [1, 1, 1, 1, 1, 2] and turns[5]["seat"] == first


def test_cards_on_a_general_are_shown_to_every_view_while_they_are_there() -> None:
    """不屈's 创 (ZONE_GENERAL) are on 周泰's general from the InvokeSkill that puts them there until the 桃 that
    brings him to 1 HP discards them; they are face up, so every seat's view lists them."""
    log = scenario("hegemony/wu/buqu_recover.json")
    assert log.events[7].invoke_skill.skill == "buqu" and log.events[9].use_card.card.id == 262  # (a 桃)
    timeline = Timeline(log)
    on_general = [[c["id"] for c in timeline.state(p)["seats"][1]["general_cards"]] for p in range(timeline.positions)]
    assert on_general == [[]] * 7 + [[263]] * 2 + [[]] * (timeline.positions - 9)
    for view in (None, 0, 1, 2):
        zhoutai = timeline.state(8, view)["seats"][1]
        assert zhoutai["general_cards_count"] == 1 and zhoutai["hp"] == 0
        assert [(c["name"], c["suit"], c["number"]) for c in zhoutai["general_cards"]] == [("赤兔", "♥", "5")]
        assert timeline.state(8, view) == state_at(log, 8, view)
    assert all(s["general_cards"] == [] and s["general_cards_count"] == 0 for s in timeline.state(9)["seats"])
    # A second 创 joins the first; at his death they go with his other cards.
    log = scenario("hegemony/wu/buqu.json")
    timeline = Timeline(log)
    assert [c["id"] for c in timeline.state(10)["seats"][1]["general_cards"]] == [263, 211]
    dead = timeline.state(11)["seats"][1]
    assert not dead["alive"] and dead["general_cards"] == [] and dead["general_cards_count"] == 0


def test_a_reborn_seat_is_marked_from_its_rebirth_on() -> None:
    """reborn_again: seat 1 dies, is reborn as 貂蝉 (the recorded Rebirth is event 10; the engine runs ahead and
    reborns it at the sacrifice that makes it due, event 9), dies again and is reborn as 华佗 (events 22/23). The
    marker counts the rebirths and names the generals, in every view, and stays while the seat is dead again."""
    log = scenario("rebirth/reborn_again.json")
    assert log.events[10].rebirth.general == "diaochan" and log.events[23].rebirth.general == "huatuo"
    timeline = Timeline(log)
    reborn = [len(timeline.state(p)["seats"][1]["reborn_as"]) for p in range(timeline.positions)]
    assert reborn == [0] * 9 + [1] * 13 + [2] * (timeline.positions - 22)
    assert all(s["reborn_as"] == [] for s in timeline.state(timeline.positions - 1)["seats"]
               if s["seat"] != 1)
    first = timeline.state(10)["seats"][1]
    assert first["alive"] and first["general"] == "diaochan" and first["hp"] == 1
    assert first["reborn_as"] == [{"name": "diaochan", "name_zh": "貂蝉"}]
    assert len(timeline.state(15)["seats"][1]["reborn_as"]) == 1 and not timeline.state(15)["seats"][1]["alive"]
    for view in (None, 0, 1):
        again = timeline.state(23, view)["seats"][1]
        assert [g["name_zh"] for g in again["reborn_as"]] == ["貂蝉", "华佗"] and again["general"] == "huatuo"
        assert timeline.state(23, view) == state_at(log, 23, view)
    assert all(s["reborn_as"] == [] for s in Timeline(example("short_game.json")).state(30)["seats"])


def test_a_soul_and_its_set_aside_card_are_shown_while_the_soul_may_act() -> None:
    """Dark souls (xuanwu_exchange): from the dead rebel's possession of the spy to its exchange, seat 1 is marked
    with its soul (玄武, host seat 3: the mark is host + 1) in every view, and the card set aside on its general is
    face down: listed in the open view and seat 1's own, counted only in the others'. After the exchange the soul
    is gone and the card is in the spy's hand."""
    log = scenario("dark_souls/xuanwu_exchange.json")
    kinds = [ev.WhichOneof("kind") for ev in log.events]
    possessed, acted = kinds.index("possess"), kinds.index("soul_act")
    timeline = Timeline(log)
    before = timeline.state(possessed - 1)["seats"][1]
    assert not before["alive"] and before["marks"] == {} and before["general_cards_count"] == 0
    for p in range(possessed + 1, acted):  # (the set-aside card's move follows the possession)
        for view in (None, 0, 1, 3):
            dead = timeline.state(p, view)["seats"][1]
            assert dead["marks"] == {"xuanwu": 4} and dead["general_cards_count"] == 1
            shown = dead["general_cards"]
            assert shown is None if view in (0, 3) else [c["id"] for c in shown] == [6], (p, view)
    after = timeline.state(acted + 1)["seats"]
    assert after[1]["marks"] == {} and after[1]["general_cards_count"] == 0
    assert 6 in [c["id"] for c in after[3]["hand"]]
