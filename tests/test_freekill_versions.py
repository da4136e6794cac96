"""What FreeKill's newer cores send differently, read from what the record holds (no version switch).

v0.5.22's GameOver names the winners' player ids (``4+2``; one winner ``2``, or the number 2 where a reader decoded
the string) instead of their roles (``lord+loyalist+civilian``): both give the same game over."""

from __future__ import annotations

import json
import lzma
from pathlib import Path
from typing import Any

import pytest

from importers.freekill import ImportFailure, import_freekill
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify

DATA = Path(__file__).resolve().parent / "data" / "freekill" / "transcripts"
GAMES = ["fk_p4_r3.jsonl", "fk_p4_r5.jsonl"]


def lines(game: str) -> list[dict[str, Any]]:
    text = lzma.decompress((DATA / f"{game}.xz").read_bytes()).decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def with_game_over(records: list[dict[str, Any]], payload: Any) -> bytes:
    out = [dict(r, data=payload) if r.get("cmd") == "GameOver" else r for r in records]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out).encode()


def winners_by_id(records: list[dict[str, Any]]) -> str:
    """The player ids of the roles the record's GameOver names."""
    won = set(next(r["data"] for r in records if r.get("cmd") == "GameOver").split("+"))
    roles = {r["data"][0]: r["data"][2] for r in records
             if r.get("cmd") == "PropertyUpdate" and r["data"][1] == "role"}
    return "+".join(str(p) for p, role in sorted(roles.items()) if role in won)


def game_over(log: pb.GameLog) -> pb.GameOver:
    return next(ev.game_over for ev in log.events if ev.HasField("game_over"))


@pytest.mark.parametrize("game", GAMES)
def test_winners_named_by_player_id_are_the_same_game_over(game: str) -> None:
    records = lines(game)
    by_role = import_freekill(with_game_over(records, next(r["data"] for r in records if r.get("cmd") == "GameOver")),
                              game).log
    ids = winners_by_id(records)
    assert ids and not any(c.isalpha() for c in ids)
    by_id = import_freekill(with_game_over(records, ids), game).log
    assert game_over(by_id) == game_over(by_role) and game_over(by_role).side != pb.SIDE_UNSPECIFIED
    if "+" not in ids:  # one winner: the string "2", or the number a reader decoded it into
        assert game_over(import_freekill(with_game_over(records, int(ids)), game).log) == game_over(by_role)


def test_a_single_winner_by_player_id() -> None:
    records = lines("fk_p4_r3.jsonl")
    roles = {r["data"][0]: r["data"][2] for r in records
             if r.get("cmd") == "PropertyUpdate" and r["data"][1] == "role"}
    renegade = next(p for p, role in roles.items() if role == "renegade")
    for payload in (str(renegade), renegade):
        over = game_over(import_freekill(with_game_over(records, payload), "r.jsonl").log)
        assert over.side == pb.SIDE_SPY


def with_settings(records: list[dict[str, Any]], **mode: Any) -> bytes:
    out = [dict(r, settings={**r["settings"], "_mode": mode}) if r.get("kind") == "meta" else r for r in records]
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out).encode()


@pytest.mark.parametrize("option", ["WangzhanBattleRoyal", "WangzhanFourEmblems", "DesignateHeir", "RenegadeLoyalty",
                                    "RenegadeWild", "MakeCivilian", "DoubleRenegade", "RenegadeTogether"])
def test_a_room_option_our_engine_does_not_judge_is_named(option: str) -> None:
    """v0.5.21's identity room options that change a rule: the room is not imported, and the reason names it."""
    with pytest.raises(ImportFailure, match=option):
        import_freekill(with_settings(lines("fk_p4_r3.jsonl"), **{option: True}), "o.jsonl")


def test_options_that_change_no_rule_are_judged() -> None:
    """LordIsWhat only fixes a human's role, which the record states; options that are off change nothing."""
    records = lines("fk_p4_r3.jsonl")
    plain = import_freekill(with_game_over(records, next(r["data"] for r in records if r.get("cmd") == "GameOver")),
                            "p.jsonl").log
    for mode in ({"LordIsWhat": "lord"}, {"LordIsWhat": "False", "MakeCivilian": False, "DoubleRenegade": False}):
        log = import_freekill(with_settings(records, **mode), "o.jsonl").log
        assert list(log.events) == list(plain.events)


def test_guanxing_as_v0522_shows_it() -> None:
    """v0.5.22's 观星 sends no '#GuanxingResult' and syncs no pile: the cards looked at move to the processing area
    and back onto the pile (the top ones in reverse, the bottom ones at position -1). A real v0.5.22 game (FreeKill's
    AI, 5 players; 诸葛亮 invokes 观星 and keeps the order) imports each 观星 as the order it left, and is judged clean
    (before, the pile parted from FreeKill's at the first 观星 and the game could not be followed)."""
    data = lzma.decompress((DATA.parent / "v0.5.22" / "guanxing_p5.jsonl.xz").read_bytes())
    log = import_freekill(data, "guanxing_p5.jsonl").log
    events = list(log.events)
    invoked = [i for i, ev in enumerate(events) if ev.HasField("invoke_skill") and ev.invoke_skill.skill == "guanxing"]
    assert invoked
    for i in invoked:
        nxt = events[i + 1].choose_cards
        assert events[i + 1].HasField("choose_cards") and nxt.seat == events[i].invoke_skill.seat
        assert 1 <= len(nxt.cards) + len(nxt.bottom) <= 5  # (as many as characters alive, at most 5)
    replay = verify(log)
    assert replay.followed and replay.result.finished and replay.violation_count == 0


def test_fanjian_suit_is_read_from_v0522s_ask_for_choices() -> None:
    """From v0.5.22 反间's suit is asked as AskForChoices and answered with a list (docs/freekill.md): the suit
    named is read from it as from 88a912f1's AskForChoice, not inferred from what followed."""
    import json
    import lzma

    from importers.freekill import import_freekill

    path = Path(__file__).resolve().parent / "data" / "freekill" / "transcripts" / "fk_rand_p4_1.jsonl.xz"
    lines = lzma.decompress(path.read_bytes()).decode().splitlines()
    newer = []
    for line in lines:
        rec = json.loads(line)
        if rec.get("cmd") == "AskForChoice" and rec["kind"] in ("request", "ai_reply") and "log_spade" in line:
            rec["cmd"] = "AskForChoices"
            if rec["kind"] == "ai_reply":
                rec["data"] = [rec["data"]]
        newer.append(json.dumps(rec, ensure_ascii=False))
    old = import_freekill("\n".join(lines).encode(), "old.jsonl")
    new = import_freekill("\n".join(newer).encode(), "new.jsonl")
    suits = [ev.choose_suit.suit for ev in old.log.events if ev.HasField("choose_suit")]
    assert suits and suits == [ev.choose_suit.suit for ev in new.log.events if ev.HasField("choose_suit")]
    assert not any("inferred" in n for n in new.notes if "反间" in n or "suit" in n)


def test_v0522s_ai_declining_liuli_by_selecting_nothing_is_no_decision_of_the_clients_next_answer() -> None:
    """A v0.5.22 room with a modified client (the live tests' cheat room 100): 大乔's 流离 is offered to
    seat 3, whose AI declines it by selecting nothing (record 493: no card, no target, not "__cancel"); asked for 闪,
    the client answers with a 杀 (497). The 杀 is the client's decision, flagged WRONG_CARD on it; the AI's "no" made
    none. (Taken for the 杀's source, it put a client's cheat on the AI: a CI run of the live tests.)"""
    from importers.freekill.convert import DECISIONS, convert
    from importers.freekill.tap import read_tap

    text = lzma.decompress((DATA.parent / "v0.5.22" / "cheats_liuli_p5.log.xz").read_bytes()).decode("utf-8")
    room = read_tap(text.splitlines())[100]
    replies = {m.seq: m for m in room.messages if m.kind == "reply"}
    assert replies[493].cmd == "AskForUseActiveSkill" and replies[493].by == "ai" and replies[493].data != "__cancel"
    assert replies[497].cmd == "AskForUseCard" and replies[497].by == "client"
    conv = convert(room.messages)
    made = conv.reply_events[497]
    event = conv.log.events[made]
    assert event.WhichOneof("kind") in DECISIONS and event.source == pb.DECISION_SOURCE_CLIENT
    assert 493 not in conv.reply_events
    replay = verify(conv.log)
    found = [v for a in replay.annotations if a.index == made for v in a.violations]
    assert [v.code for v in found] == ["WRONG_CARD"]
    assert "it needs 闪 (jink)" in found[0].message  # (the card named as the viewer names cards, and as the log does)
    # every client reply that made a decision made one said to be the client's
    clients = [seq for seq, m in replies.items() if m.by == "client" and seq in conv.reply_events]
    assert len(clients) >= 5
    assert all(conv.log.events[conv.reply_events[seq]].source == pb.DECISION_SOURCE_CLIENT for seq in clients)
