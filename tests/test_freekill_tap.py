"""The tap's log lines (importers/freekill/tap.py): every shared transcript, written as the tap would have
written it and read back, is the same messages as the transcript (replies carrying who made them); rooms
interleaved in one log are kept apart; a lost line, a malformed record and a reply's attribution."""

from __future__ import annotations

import base64
import json
import lzma
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from importers.freekill import cbor
from importers.freekill.messages import BY_AI, BY_CLIENT, BY_NONE, REPLY
from importers.freekill.tap import (
    RoomTap,
    TapError,
    TapGap,
    line_time,
    parse_line,
    read_tap,
    stamp,
    tap_line,
    tap_lines,
    tap_records,
)
from importers.freekill.transcript import read_transcript

DATA = Path(__file__).resolve().parent / "data" / "freekill" / "transcripts"
GAMES = sorted(p.name.removesuffix(".xz") for p in DATA.glob("*.jsonl.xz"))


@cache
def transcript_lines(game: str) -> list[dict[str, Any]]:
    text = lzma.decompress((DATA / f"{game}.xz").read_bytes()).decode("utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize("game", GAMES)
def test_a_transcript_through_the_tap_is_the_same_messages(game: str) -> None:
    lines = transcript_lines(game)
    expected = read_transcript(json.dumps(line) for line in lines)
    rooms = read_tap(tap_lines(lines, room=7, at=1_700_000_000.25))
    assert list(rooms) == [7]
    room = rooms[7]
    assert room.meta is not None and room.meta["players"] == expected.meta["players"]
    assert room.meta["settings"] == expected.meta["settings"]
    got = [(m.kind, m.cmd, m.data, m.to, m.by) for m in room.messages]
    want = [(m.kind, m.cmd, m.data, m.to, m.by) for m in expected.messages]
    assert got == want
    assert room.ended == any(line.get("cmd") == "GameOver" for line in lines)


def test_rooms_interleaved_in_one_log_are_kept_apart() -> None:
    a, b = transcript_lines("fk_rand_p4_35.jsonl"), transcript_lines("fk_p4_r3.jsonl")
    la, lb = tap_lines(a, room=1), tap_lines(b, room=2)
    mixed: list[str] = []
    for i in range(max(len(la), len(lb))):
        mixed += [*la[i:i + 1], "26-12-03 10:00:00.000 3[I] [GameOver] something else\n", *lb[i:i + 1]]
    rooms = read_tap(mixed)
    assert sorted(rooms) == [1, 2]
    assert rooms[1].messages == read_tap(la)[1].messages
    assert rooms[2].messages == read_tap(lb)[2].messages


def test_a_lost_line_is_a_gap() -> None:
    lines = tap_lines(transcript_lines("fk_rand_p4_35.jsonl"), room=3)
    with pytest.raises(TapGap, match="record 41 is missing"):
        read_tap(lines[:40] + lines[41:])


def test_a_line_read_twice_is_taken_once() -> None:
    lines = tap_lines(transcript_lines("fk_rand_p4_35.jsonl"), room=3)
    once = read_tap(lines)[3].messages
    assert read_tap(lines[:50] + lines[45:])[3].messages == once


def record(**fields: Any) -> str:
    return tap_line({"v": 1, "room": 5, **fields}, 0.0)


def meta() -> str:
    settings = base64.b64encode(cbor.encode({"gameMode": "aaa_role_mode"})).decode()
    return record(seq=1, kind="meta", players=4, mode="aaa_role_mode", settings_cbor=settings, ids=[1, 2, 3, 4])


def payload(value: Any) -> str:
    return base64.b64encode(cbor.encode(value)).decode()


def test_a_replys_maker_is_kept_and_a_timeout_is_the_default() -> None:
    room = RoomTap(5)
    for line in [meta(),
                 record(seq=2, kind="request", to=1, cmd="PlayCard", cbor=payload([]), timeout=15),
                 record(seq=3, kind="reply", to=1, cmd="PlayCard", cbor=payload({"card": 3}), by="client",
                        status="reply"),
                 record(seq=4, kind="reply", to=2, cmd="AskForUseCard", cancel=True, by="ai", status="cancel"),
                 record(seq=5, kind="reply", to=3, cmd="AskForUseCard", cancel=True, by="client", status="timeout"),
                 record(seq=6, kind="reply", to=4, cmd="AskForUseCard", cancel=True, by="none", status="race"),
                 record(seq=7, kind="end", result="")]:
        rec = parse_line(line)
        assert rec is not None
        room.add(rec)
    replies = [(m.to, m.data, m.by) for m in room.messages if m.kind == REPLY]
    assert replies == [((1,), {"card": 3}, BY_CLIENT), ((2,), "__cancel", BY_AI), ((3,), "__cancel", BY_NONE),
                       ((4,), "__cancel", BY_NONE)]
    assert room.ended and room.result == ""


def test_tags_in_a_payload_are_unwrapped() -> None:
    room = RoomTap(5)
    tagged = base64.b64encode(cbor.encode(cbor.Tag(33001, {1: "x"}))).decode()
    for line in [meta(), record(seq=2, kind="notify", to=[1, 2], cmd="Foo", cbor=tagged)]:
        rec = parse_line(line)
        assert rec is not None
        room.add(rec)
    assert room.messages[0].data == {"1": "x"}


@pytest.mark.parametrize(("line", "why"), [
    ('x SGSV1 {"v":1,"room":1', "not JSON"),
    ('x SGSV1 [1]', "JSON object"),
    ('x SGSV1 {"v":2,"room":1,"seq":1,"kind":"meta"}', "format 2"),
    ('x SGSV1 {"v":1,"room":"a","seq":1,"kind":"meta"}', "integer 'room'"),
    ('x SGSV1 {"v":1,"room":1,"seq":0,"kind":"meta"}', "'seq' from 1"),
    ('x SGSV1 {"v":1,"room":1,"seq":1,"kind":"chat"}', "unknown record kind"),
])
def test_malformed_records_are_refused_clearly(line: str, why: str) -> None:
    with pytest.raises(TapError, match=why):
        parse_line(line)


@pytest.mark.parametrize(("lines", "why"), [
    ([record(seq=1, kind="notify", to=[1], cmd="X", cbor=payload(1))], "not its meta"),
    ([meta(), record(seq=2, kind="notify", to=[1], cmd="X", cbor="!!")], "not base64"),
    ([meta(), record(seq=2, kind="notify", to=[1], cmd="X", cbor=base64.b64encode(b"\xff").decode())],
     "not CBOR"),
    ([meta(), record(seq=2, kind="request", to=[1, 2], cmd="X", cbor=payload(1))], "goes to one player"),
    ([meta(), record(seq=2, kind="reply", to=1, cmd="X", cancel=True, by="human")], "client, ai or none"),
    ([meta(), record(seq=2, kind="end", result=""), record(seq=3, kind="notify", to=[1], cmd="X", cbor=payload(1))],
     "after the room's end"),
])
def test_records_out_of_shape_are_refused_clearly(lines: list[str], why: str) -> None:
    with pytest.raises(TapError, match=why):
        read_tap(lines)


def test_lines_without_the_marker_are_not_the_taps() -> None:
    assert parse_line("26-12-03 10:00:00.000 3[I] [GameOver] 1, aaa_role_mode, lord, in 3s") is None


def test_the_log_lines_time_stamp_is_read() -> None:
    at = 1_790_000_000.5
    assert line_time(f"{stamp(at)} 12[I] hello") == pytest.approx(at)
    assert line_time("[26-12-03 10:00:00.123] x") is not None
    assert line_time("no stamp") is None


def test_the_records_of_a_transcript_are_contiguous_and_end_with_the_result() -> None:
    recs = list(tap_records(transcript_lines("fk_rand_p4_35.jsonl"), room=9))
    assert [r["seq"] for r in recs] == list(range(1, len(recs) + 1))
    assert recs[0]["kind"] == "meta" and recs[-1] == {"v": 1, "room": 9, "seq": len(recs), "kind": "end",
                                                      "result": "rebel+rebel_chief+civilian"}
