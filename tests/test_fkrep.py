"""importers/freekill/fkrep.py: FreeKill client replays (.fk.rep) built from a real transcript
per seat and read back; every malformed container and payload refused with
FreeKillFormatError; zip bombs refused quickly; reconnect recordings flagged.

The transcript is the shortest of the real games (tests/data/freekill/fk_rand_p4_35.jsonl:
4 players, 2 rounds, the rebels win)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import sys
import time
import zlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from importers.freekill import cbor
from importers.freekill.fkrep import (
    CBOR,
    CONTAINER_VERSIONS,
    DEFAULT_AVATAR,
    DEFAULT_VERSION,
    FIRST_ENTRY,
    JSON,
    FreeKillFormatError,
    Recording,
    RecordingPlayer,
    ReplayName,
    Room,
    fkrep_from_transcript,
    qcompress,
    quncompress,
    read_fkrep,
    recording_from_transcript,
    write_fkrep,
)
from importers.freekill.messages import NOTIFY, REPLY, REQUEST, Message


def _load_tool() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "tools" / "fkrep_build.py"
    spec = importlib.util.spec_from_file_location("fkrep_build", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


fkrep_build = _load_tool()

TRANSCRIPT = Path(__file__).parent / "data" / "freekill" / "fk_rand_p4_35.jsonl"
LINES: list[dict[str, Any]] = [json.loads(t) for t in TRANSCRIPT.read_text(encoding="utf-8").splitlines()]
SEATS = next(ln["data"] for ln in LINES if ln.get("cmd") == "ArrangeSeats")  # [1, 2, 4, 3]
META = LINES[0]
MB = 1 << 20


def addressed_to(pid: int) -> list[tuple[int, str, str, Any]]:
    """The transcript's notify and request lines to ``pid``, as (seq, kind, cmd, data): a
    notify once per time its ``to`` lists them; StartGame left out (the client starts
    recording on it)."""
    out = []
    for ln in LINES:
        if ln["kind"] == "notify" and ln["cmd"] != "StartGame":
            out += [(ln["seq"], NOTIFY, ln["cmd"], ln["data"])] * ln["to"].count(pid)
        elif ln["kind"] == "request" and ln["to"] == pid:
            out.append((ln["seq"], REQUEST, ln["cmd"], ln["data"]))
    return out


def items_of(data: bytes) -> list[Any]:
    """A .fk.rep's top-level CBOR array, undecoded payloads and all (for tampering)."""
    items = cbor.decode(quncompress(data))
    assert isinstance(items, list)
    return items


def file_of(items: list[Any]) -> bytes:
    return qcompress(cbor.encode(items))


def small_recording(messages: list[Message], *, reconnect: bool = False) -> Recording:
    return Recording(
        "0.5.0", ReplayName(datetime(2025, 1, 2, 3, 4, 5)), Room(2, 15, {"gameMode": "aaa_role_mode"}),
        RecordingPlayer(7, "me", "caocao"), reconnect, messages, [i * 100 for i in range(len(messages))],
    )


# --- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("pid", SEATS)
def test_each_seat_reads_back_what_was_addressed_to_it(pid: int) -> None:
    rec = read_fkrep(fkrep_from_transcript(LINES, pid))
    others = sorted(set(SEATS) - {pid})
    head, rest = rec.messages[: len(others)], rec.messages[len(others) :]
    assert [(m.kind, m.cmd, m.data) for m in head] == [
        (NOTIFY, "AddPlayer", [o, f"p{o}", DEFAULT_AVATAR, True, 0]) for o in others
    ]
    got = [(ms // 10, m.kind, m.cmd, m.data) for ms, m in zip(rec.ms[len(others) :], rest, strict=True)]
    assert got == addressed_to(pid)
    assert [m.seq for m in rec.messages] == list(range(FIRST_ENTRY, FIRST_ENTRY + len(rec.messages)))
    assert {m.to for m in rec.messages} == {(pid,)}
    assert rec.ms[: len(others)] == [20] * len(others)  # StartGame's seq 2 x 10: recording starts there
    assert rest[-1].cmd == "GameOver"


@pytest.mark.parametrize("pid", SEATS)
def test_read_gives_back_the_recording_written(pid: int) -> None:
    rec = recording_from_transcript(LINES, pid)
    assert read_fkrep(write_fkrep(rec)) == rec


def test_header_as_built() -> None:
    rec = read_fkrep(fkrep_from_transcript(LINES, 4))
    assert rec.version == DEFAULT_VERSION
    assert rec.name == ReplayName(
        datetime(2025, 11, 15), "p4", "aaa_role_mode", "guanyu", "loyalist", "rebel+rebel_chief+civilian"
    )
    assert rec.file_name == "20251115000000.p4.aaa_role_mode.guanyu.loyalist.rebel+rebel_chief+civilian.fk.rep"
    assert rec.room == Room(4, 15, META["settings"])
    assert rec.player == RecordingPlayer(4, "p4", DEFAULT_AVATAR)
    assert not rec.reconnect
    items = items_of(fkrep_from_transcript(LINES, 4))
    assert items[4] == "" and items[5] == "normal" and items[6:10] == ["", "", "", ""]
    assert isinstance(items[2], bytes) and isinstance(items[3], bytes)
    assert cbor.decode(items[3]) == [4, "p4", DEFAULT_AVATAR]


def test_header_parameters_and_determinism() -> None:
    options: dict[str, Any] = {"version": "0.5.14", "date": datetime(2024, 2, 29, 23, 59, 58), "avatar": "sunquan"}
    one = fkrep_from_transcript(LINES, 1, **options)
    assert one == fkrep_from_transcript(LINES, 1, **options)
    rec = read_fkrep(one)
    assert rec.version == "0.5.14" and str(rec.name).startswith("20240229235958.p1.aaa_role_mode.caocao.lord.")
    assert rec.player.avatar == "sunquan" and rec.messages[0].data[2] == "sunquan"


def test_a_recipient_listed_twice_gets_the_message_twice() -> None:
    # seq 15: PropertyUpdate [1, "kingdom", "wei"] to [1, 2, 4, 3, 1, 2, 4, 3].
    for pid in SEATS:
        rec = read_fkrep(fkrep_from_transcript(LINES, pid))
        kingdom = [m for ms, m in zip(rec.ms, rec.messages, strict=True) if ms == 150]
        assert [m.data for m in kingdom] == [[1, "kingdom", "wei"]] * 2


def test_only_what_the_player_received() -> None:
    rec = read_fkrep(fkrep_from_transcript(LINES, 2))
    seqs = {ms // 10 for ms in rec.ms}
    for ln in LINES:
        if ln["kind"] in ("ai_reply", "meta", "log", "gameover"):
            assert ln["seq"] not in seqs
        if ln["kind"] == "request" and ln["to"] != 2:
            assert ln["seq"] not in seqs
    assert "StartGame" not in {m.cmd for m in rec.messages}
    # Another player's hidden general: seq 25 goes to player 2 only.
    assert 25 in seqs and 25 not in {ms // 10 for ms in read_fkrep(fkrep_from_transcript(LINES, 1)).ms}
    assert [m.cmd for m in rec.messages if m.kind == REQUEST][:1] == ["AskForGeneral"]


def _keys(value: Any) -> list[Any]:
    """Every map key anywhere in ``value``."""
    if isinstance(value, dict):
        return [*value, *(k for v in value.values() for k in _keys(v))]
    if isinstance(value, list):
        return [k for v in value for k in _keys(v)]
    return []


def test_virtual_card_maps_go_out_with_integer_keys() -> None:
    items = items_of(fkrep_from_transcript(LINES, 1))
    written = [k for entry in items[FIRST_ENTRY:] for k in _keys(cbor.decode(entry[3]))]
    assert {2, 3, 4} <= {k for k in written if isinstance(k, int)}
    assert not [k for k in written if isinstance(k, str) and k.isdigit()]
    # ... and read back with the transcript's string keys (the round-trip tests compare all data).
    read = [k for m in read_fkrep(file_of(items)).messages for k in _keys(m.data)]
    assert {"2", "3", "4"} <= set(read) and all(isinstance(k, str) for k in read)


def test_integer_or_string_keys_read_the_same() -> None:
    card_str = {"2": "slash", "3": 4, "4": 6, "6": [12], "7": ["wusheng"]}
    card_int = {2: "slash", 3: 4, 4: 6, 6: [12], 7: ["wusheng"]}
    items = items_of(write_fkrep(small_recording([Message(0, NOTIFY, "GameLog", {"card": card_str})])))
    items.append([1, False, "GameLog", cbor.encode({"card": card_int})])
    mixed = {b"2": b"slash", 3: 4, "4": 6, 6: [12], 7: [b"wusheng"]}  # byte strings are Lua strings too
    items.append([2, False, "GameLog", cbor.encode({b"card": mixed})])
    rec = read_fkrep(file_of(items))
    assert [m.data for m in rec.messages] == [{"card": card_str}] * 3


def test_lua_strings_may_be_byte_or_text_strings() -> None:
    # Lua strings have no type: header strings as bytes, a payload as text (valid UTF-8 CBOR),
    # strings inside a payload as bytes all read as the same str.
    payload = cbor.encode("rebel+civilian")  # 0x6e "rebel+civilian": valid UTF-8 itself
    items = [
        b"0.5.0", b"20250102030405", cbor.encode([2, 15, {b"gameMode": b"m"}]),
        cbor.encode([7, b"me", b"caocao"]), b"", b"normal", b"", "", "", "",
        [5, False, b"GameOver", payload.decode("utf-8")],
        [6, False, "Heartbeat", b""],
    ]
    rec = read_fkrep(file_of(items))
    assert rec.version == "0.5.0" and rec.room.settings == {"gameMode": "m"} and rec.player.screen_name == "me"
    assert [(m.cmd, m.data) for m in rec.messages] == [("GameOver", "rebel+civilian"), ("Heartbeat", "")]


def test_text_commands_round_trip_as_plain_text() -> None:
    msgs = [
        Message(0, NOTIFY, "ServerMessage", "服务器 · maintenance at 5"),
        Message(0, NOTIFY, "ErrorMsg", '{"not": "decoded"}'),
        Message(0, REQUEST, "AskForSkillInvoke", ["jianxiong", "#prompt"]),
        Message(0, NOTIFY, "SetBanner", ["x", None, 1.5, -3, True, {}]),
    ]
    data = write_fkrep(small_recording(msgs))
    assert items_of(data)[FIRST_ENTRY][3] == "服务器 · maintenance at 5".encode()
    rec = read_fkrep(data)
    assert [(m.seq, m.kind, m.cmd, m.data, m.to) for m in rec.messages] == [
        (FIRST_ENTRY + i, m.kind, m.cmd, m.data, (7,)) for i, m in enumerate(msgs)
    ]
    assert rec.ms == [0, 100, 200, 300]


def test_unfinished_game_keeps_the_bare_date() -> None:
    cut = [ln for ln in LINES if ln.get("cmd") != "GameOver" and ln["kind"] not in ("log", "gameover")][:-1]
    rec = read_fkrep(fkrep_from_transcript(cut, 3))
    assert rec.name == ReplayName(datetime(2025, 11, 15)) and not rec.name.finished
    assert rec.file_name == "20251115000000.fk.rep"
    assert rec.messages[-1].cmd != "GameOver"


def test_draw_game_has_empty_winners() -> None:
    drawn = [{**ln, "data": ""} if ln.get("cmd") == "GameOver" else ln for ln in LINES]
    rec = read_fkrep(fkrep_from_transcript(drawn, 1))
    assert rec.name.finished and rec.name.winners == ""
    assert str(rec.name) == "20251115000000.p1.aaa_role_mode.caocao.lord."


def test_reconnect_recording_is_read_and_flagged() -> None:
    snapshot = {"circle": [7, 8], "you": 7, "players": {7: {"setup_data": [7, "me", "caocao", True, 60]}}}
    rec = small_recording(
        [Message(0, NOTIFY, "Reconnect", snapshot), Message(0, NOTIFY, "MoveCards", [])], reconnect=True
    )
    data = write_fkrep(rec)
    assert items_of(data)[5] == "reconnect"
    back = read_fkrep(data)
    assert back.reconnect
    assert back.messages[0].cmd == "Reconnect"
    assert back.messages[0].data["players"] == {"7": {"setup_data": [7, "me", "caocao", True, 60]}}


def test_replay_name_text() -> None:
    name = ReplayName(datetime(2025, 3, 4, 5, 6, 7), "a.b.c", "aaa_role_mode", "", "unknown", "")
    assert str(name) == "20250304050607.a%2eb%2ec.aaa_role_mode..unknown."
    assert ReplayName.parse(str(name)) == name
    assert ReplayName.parse("20250304050607") == ReplayName(datetime(2025, 3, 4, 5, 6, 7))
    for bad in ("", "2025030405060", "20250304050607.x", "20251304050607", "2025-03-04", "20250304050607.a.b.c.d.e.f"):
        with pytest.raises(FreeKillFormatError, match=r"item \[1\]"):
            ReplayName.parse(bad)


def test_writer_refuses_what_no_recording_holds() -> None:
    with pytest.raises(ValueError, match="player id 9 is not in this game"):
        fkrep_from_transcript(LINES, 9)
    with pytest.raises(ValueError, match="never received StartGame"):
        fkrep_from_transcript([ln for ln in LINES if ln.get("cmd") != "StartGame"], 1)
    with pytest.raises(ValueError, match="no meta line"):
        fkrep_from_transcript(LINES[1:], 1)
    with pytest.raises(ValueError, match="no replies"):
        write_fkrep(small_recording([Message(0, REPLY, "PlayCard", "__cancel")]))
    with pytest.raises(ValueError, match="carries text"):
        write_fkrep(small_recording([Message(0, NOTIFY, "ServerMessage", ["not", "text"])]))


# --- malformed input ----------------------------------------------------------------------------

GOOD = fkrep_from_transcript(LINES, 1)
GOOD_ITEMS = items_of(GOOD)
GOOD_RAW = quncompress(GOOD)


def _zlib_of(data: bytes) -> bytes:
    return zlib.compress(data)


CONTAINERS: list[tuple[str, bytes, str]] = [
    ("empty", b"", "fewer than the 4-byte length"),
    ("three bytes", b"\x00\x00\x01", "fewer than the 4-byte length"),
    ("header only", b"\x00\x00\x00\x10", "truncated zlib stream"),
    ("not zlib", b"\x00\x00\x00\x10" + b"PK\x03\x04 a zip file", "not a zlib stream"),
    ("gzip, not zlib", b"\x00\x00\x00\x04\x1f\x8b\x08\x00\x00\x00\x00\x00", "not a zlib stream"),
    ("length too small", len(GOOD_RAW).__sub__(1).to_bytes(4, "big") + _zlib_of(GOOD_RAW), "holds more than"),
    ("length too large", (len(GOOD_RAW) + 1).to_bytes(4, "big") + _zlib_of(GOOD_RAW), "the zlib stream holds"),
    ("length zero", b"\x00\x00\x00\x00" + _zlib_of(GOOD_RAW), "holds more than the 0 bytes"),
    ("truncated stream", GOOD[: len(GOOD) // 2], "truncated zlib stream"),
    ("last byte cut", GOOD[:-1], "truncated zlib stream"),
    ("trailing bytes", GOOD + b"\x00", "1 byte(s) after the zlib stream"),
    ("two streams", GOOD + GOOD[4:], "after the zlib stream"),
    ("corrupt stream", GOOD[:40] + bytes(b ^ 0x55 for b in GOOD[40:80]) + GOOD[80:], "zlib"),
    ("declared beyond the cap", b"\xff\xff\xff\xff" + _zlib_of(b"\x80"), "more than the cap"),
    ("empty recording", qcompress(b""), "not one CBOR item: truncated"),
    ("not CBOR", qcompress(b"\x1c"), "not one CBOR item: reserved"),
    ("trailing CBOR", qcompress(GOOD_RAW + b"\x00"), "not one CBOR item: 1 trailing byte"),
    # JSON text is the container up to v0.5.11 (read by content): it must be a whole recording too.
    ("short JSON array", qcompress(json.dumps(["0.5", "2025"]).encode()), "2 item(s), fewer than the 10"),
    ("broken JSON", qcompress(b' [1, "x",'), "starts as JSON but is not JSON text"),
    ("JSON object", qcompress(b'{"version": 1}'), "not one CBOR item"),
    ("a map", qcompress(cbor.encode({"version": 1})), "a CBOR map, not an array"),
    ("short array", qcompress(cbor.encode(GOOD_ITEMS[:9])), "9 item(s), fewer than the 10"),
    ("deep", qcompress(b"\x81" * 10_000 + b"\x00"), "nesting deeper than"),
]


@pytest.mark.parametrize(("what", "data", "words"), CONTAINERS, ids=[c[0] for c in CONTAINERS])
def test_malformed_containers_are_refused(what: str, data: bytes, words: str) -> None:
    with pytest.raises(FreeKillFormatError) as e:
        read_fkrep(data)
    assert words in str(e.value)


def _set(i: int, value: Any) -> Callable[[list[Any]], None]:
    def change(items: list[Any]) -> None:
        items[i] = value

    return change


def _entry(j: int, value: Any) -> Callable[[list[Any]], None]:
    def change(items: list[Any]) -> None:
        items[FIRST_ENTRY][j] = value

    return change


def _append(entry: Any) -> Callable[[list[Any]], None]:
    def change(items: list[Any]) -> None:
        items.append(entry)

    return change


ITEMS: list[tuple[str, Callable[[list[Any]], None], str]] = [
    ("version a number", _set(0, 5), r"item \[0\] \(version\) is a CBOR integer, not a string"),
    ("version bad UTF-8", _set(0, b"\xff"), r"item \[0\] \(version\) is not UTF-8"),
    ("date a number", _set(1, 20250101), r"item \[1\] \(date and name\) is a CBOR integer"),
    ("date not a date", _set(1, "yesterday"), r"item \[1\] 'yesterday' is neither a date"),
    ("room as array", _set(2, [4, 15, {}]), r"item \[2\] \(room\) is a CBOR array, not a byte string"),
    ("room not CBOR", _set(2, b"\x1c"),
     r"item \[2\] \(room\) is not CBOR: reserved additional information 28 in initial byte 0x1c at byte 0 of its 1"),
    ("room short", _set(2, cbor.encode([4, 15])), r"item \[2\] \(room\) holds an array of 2"),
    ("room capacity text", _set(2, cbor.encode(["4", 15, {}])), r"room\) capacity is a CBOR text string"),
    ("room timeout bool", _set(2, cbor.encode([4, True, {}])), r"room\) timeout is a CBOR boolean"),
    ("room settings list", _set(2, cbor.encode([4, 15, [1]])), r"room\) settings is a CBOR array, not a map"),
    ("room float key", _set(2, cbor.encode([4, 15, {1.5: 1}])), r"room\) is not CBOR: map key of type float"),
    ("player a map", _set(3, cbor.encode({"id": 1})), r"item \[3\] \(recording player\) holds a CBOR map"),
    ("player id null", _set(3, cbor.encode([None, "p1", "a"])), r"player\) id is a CBOR null"),
    ("player name int", _set(3, cbor.encode([1, 1, "a"])), r"player\) screenName is a CBOR integer"),
    ("reserved [4] null", _set(4, None), r"item \[4\] \(reserved\) is a CBOR null"),
    ("reserved [9] array", _set(9, []), r"item \[9\] \(reserved\) is a CBOR array"),
    ("kind unknown", _set(5, "observe"), r"item \[5\] is 'observe', neither 'normal' nor 'reconnect'"),
    ("kind missing", _set(5, 0), r"item \[5\] \(normal or reconnect\) is a CBOR integer"),
    ("entry a map", _set(FIRST_ENTRY, {"ms": 1}), r"entry \[10\] is a CBOR map, not \[ms, isRequest"),
    ("entry short", _set(FIRST_ENTRY, [1, False, "AddPlayer"]), r"entry \[10\] is an array of 3"),
    ("ms text", _entry(0, "1"), r"entry \[10\] ms is a CBOR text string, not an integer"),
    ("ms fraction", _entry(0, 1.5), r"entry \[10\] ms is a CBOR float"),
    ("isRequest int", _entry(1, 1), r"entry \[10\] isRequest is a CBOR integer, not a boolean"),
    ("command null", _entry(2, None), r"entry \[10\] command is a CBOR null"),
    ("payload int", _entry(3, 3), r"entry \[10\] \(AddPlayer\) payload is a CBOR integer, not a byte string"),
    ("payload empty", _entry(3, b""),
     r"entry \[10\] \(AddPlayer\) payload is not CBOR: truncated: an item expected at byte 0 of its 0"),
    ("payload trailing", _entry(3, cbor.encode([2]) + b"\x00"),
     r"payload is not CBOR: 1 trailing byte\(s\) after the CBOR item at byte 2 of its 3"),
    ("payload JSON", _entry(3, b'[2, "p2"]'), r"\(AddPlayer\) payload is not CBOR"),
    ("payload bad UTF-8 text", _entry(3, b"\x62\xc3\x28"), r"payload is not CBOR: invalid UTF-8"),
    ("payload bytes not UTF-8", _entry(3, cbor.encode([b"\xff"])), r"payload \(a string in it\) is not UTF-8"),
    ("payload simple value", _entry(3, cbor.encode([cbor.Simple(99)])), r"simple value 99"),
    ("payload duplicate key", _entry(3, bytes.fromhex("a2020102") + b"\x61\x32\x03"), r"duplicate map key '2'"),
    ("text payload not UTF-8", _append([1, False, "ServerMessage", b"\xff\xfe"]),
     r"entry \[\d+\] \(ServerMessage\) payload is not UTF-8 text \(invalid start byte at byte 0\)"),
    ("text payload a list", _append([1, False, "ErrorMsg", ["x"]]), r"\(ErrorMsg\) payload is a CBOR array"),
]


@pytest.mark.parametrize(("what", "change", "pattern"), ITEMS, ids=[c[0] for c in ITEMS])
def test_malformed_items_are_refused(what: str, change: Callable[[list[Any]], None], pattern: str) -> None:
    items = items_of(GOOD)
    items[FIRST_ENTRY] = list(items[FIRST_ENTRY])
    change(items)
    with pytest.raises(FreeKillFormatError, match=pattern):
        read_fkrep(file_of(items))


def test_tolerated_variants() -> None:
    # What FreeKill may plausibly write besides our own output, and is read the same.
    items = items_of(GOOD)
    items[FIRST_ENTRY] = [float(items[FIRST_ENTRY][0]), *items[FIRST_ENTRY][1:], "an extra field"]
    items[2] = cbor.encode([4, 15, [], "extra"])  # Lua writes an empty table as an empty array
    items[1] = cbor.Tag(0, items[1])  # tags are skipped
    rec = read_fkrep(file_of(items))
    assert rec.room.settings == {} and rec.ms[0] == 20 and rec.messages[0].cmd == "AddPlayer"
    assert rec.messages[1:] == read_fkrep(GOOD).messages[1:]


# --- the JSON container (up to FreeKill v0.5.11) --------------------------------------------------


@pytest.mark.parametrize("pid", SEATS)
def test_the_json_container_reads_back_the_recording_written(pid: int) -> None:
    rec = recording_from_transcript(LINES, pid, version=CONTAINER_VERSIONS[JSON])
    data = write_fkrep(rec, container=JSON)
    assert zlib.decompress(data[4:])[:1] == b"["  # JSON text, told from CBOR by content
    assert read_fkrep(data) == rec
    assert read_fkrep(fkrep_from_transcript(LINES, pid, container=JSON)) == rec
    assert read_fkrep(write_fkrep(rec, container=CBOR)) == rec


def json_items_of(data: bytes) -> list[Any]:
    items = json.loads(quncompress(data))
    assert isinstance(items, list)
    return items


def test_the_json_container_is_shaped_as_the_old_client_wrote_it() -> None:
    items = json_items_of(fkrep_from_transcript(LINES, 1, container=JSON))
    assert items[0] == "0.5.11" and items[4:10] == ["", "", "", "", "", ""]  # [5]: no normal / reconnect yet
    assert json.loads(items[2]) == [4, 15, META["settings"]] and json.loads(items[3]) == [1, "p1", DEFAULT_AVATAR]
    assert all(isinstance(e[3], str) for e in items[FIRST_ENTRY:])  # payloads: JSON text
    assert items[-1][2:] == ["GameOver", '"rebel+rebel_chief+civilian"']
    # A payload an old server sent as a bare string (not JSON text) is that string.
    items[-1][3] = "rebel+rebel_chief+civilian"
    rec = read_fkrep(qcompress(json.dumps(items).encode()))
    assert rec.messages[-1].data == "rebel+rebel_chief+civilian"
    assert rec.messages[:-1] == read_fkrep(fkrep_from_transcript(LINES, 1, container=JSON)).messages[:-1]
    with pytest.raises(ValueError, match="no reconnect recordings"):
        write_fkrep(dataclasses.replace(recording_from_transcript(LINES, 1), reconnect=True), container=JSON)
    with pytest.raises(ValueError, match="neither 'cbor' nor 'json'"):
        fkrep_from_transcript(LINES, 1, container="xml")


JSON_ITEMS: list[tuple[str, Callable[[list[Any]], None], str]] = [
    ("room not JSON text", _set(2, "[4, 15"), r"item \[2\] \(room\) is not JSON text"),
    ("room an array", _set(2, [4, 15, {}]), r"item \[2\] \(room\) is a JSON array, not a string holding JSON"),
    ("player an object", _set(3, '{"id": 1}'), r"item \[3\] \(recording player\) holds a JSON object"),
    ("kind unknown", _set(5, "observe"), r"item \[5\] is 'observe', neither '' nor 'normal' nor 'reconnect' \(JSON"),
    ("isRequest a number", _entry(1, 1), r"entry \[10\] isRequest is a JSON number, not a boolean"),
    ("ms text", _entry(0, "1"), r"entry \[10\] ms is a JSON string, not an integer"),
    ("payload a number", _entry(3, 3), r"entry \[10\] \(AddPlayer\) payload is a JSON number, not a string"),
]


@pytest.mark.parametrize(("what", "change", "pattern"), JSON_ITEMS, ids=[c[0] for c in JSON_ITEMS])
def test_malformed_json_items_are_refused(what: str, change: Callable[[list[Any]], None], pattern: str) -> None:
    items = json_items_of(fkrep_from_transcript(LINES, 1, container=JSON))
    change(items)
    with pytest.raises(FreeKillFormatError, match=pattern):
        read_fkrep(qcompress(json.dumps(items).encode()))


# --- zip bombs ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def zeros_stream() -> bytes:
    """A zlib stream of 64 MiB of zeros (65 KB)."""
    z = zlib.compressobj(9)
    block = bytes(MB)
    return b"".join(z.compress(block) for _ in range(64)) + z.flush()


def test_zip_bomb_with_a_small_declared_length_is_refused_at_once(zeros_stream: bytes) -> None:
    start = time.perf_counter()
    with pytest.raises(FreeKillFormatError, match="holds more than the 1000 bytes"):
        read_fkrep((1000).to_bytes(4, "big") + zeros_stream)
    assert time.perf_counter() - start < 0.5


def test_zip_bomb_beyond_the_cap_is_refused_at_once(zeros_stream: bytes) -> None:
    start = time.perf_counter()
    with pytest.raises(FreeKillFormatError, match="more than the cap of 268435456"):
        read_fkrep((300 * MB).to_bytes(4, "big") + zeros_stream)
    with pytest.raises(FreeKillFormatError, match=f"more than the cap of {MB}"):
        read_fkrep((64 * MB).to_bytes(4, "big") + zeros_stream, max_size=MB)
    with pytest.raises(FreeKillFormatError, match="holds more than"):  # a lying length under the cap
        read_fkrep((MB).to_bytes(4, "big") + zeros_stream, max_size=MB)
    assert time.perf_counter() - start < 0.5


def test_a_recording_over_the_cap_is_refused() -> None:
    with pytest.raises(FreeKillFormatError, match="more than the cap of 1000"):
        read_fkrep(GOOD, max_size=1000)
    assert read_fkrep(GOOD, max_size=len(GOOD_RAW)).player.id == 1


# --- garbage (Hypothesis) -----------------------------------------------------------------------

json_like = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8) | st.binary(max_size=8),
    lambda inner: st.lists(inner, max_size=5)
    | st.dictionaries(st.text(max_size=3) | st.integers(0, 9), inner, max_size=4),
    max_leaves=20,
)


def _read_or_format_error(data: bytes) -> None:
    with contextlib.suppress(FreeKillFormatError):
        read_fkrep(data)


@given(st.binary(max_size=300))
@settings(max_examples=500, deadline=None)
def test_garbage_files_raise_only_the_format_error(data: bytes) -> None:
    _read_or_format_error(data)
    _read_or_format_error(qcompress(data))


@given(st.lists(json_like | st.binary(max_size=30).map(lambda b: b"\x82" + b), min_size=0, max_size=14))
@settings(max_examples=300, deadline=None)
def test_garbage_recordings_raise_only_the_format_error(items: list[Any]) -> None:
    _read_or_format_error(qcompress(cbor.encode(items)))
    _read_or_format_error(qcompress(cbor.encode([*GOOD_ITEMS[:FIRST_ENTRY], items])))
    _read_or_format_error(qcompress(cbor.encode([*GOOD_ITEMS[:FIRST_ENTRY], [1, False, "X", cbor.encode(items)]])))


@given(st.data())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_damaged_real_recordings_raise_only_the_format_error(data: st.DataObject) -> None:
    raw = bytearray(GOOD_RAW)
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    _read_or_format_error(qcompress(bytes(raw)))
    cut = data.draw(st.integers(0, len(GOOD)))
    _read_or_format_error(GOOD[:cut])


# --- tools/fkrep_build.py -----------------------------------------------------------------------


def test_tool_builds_one_file_per_seat(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert fkrep_build.main([str(TRANSCRIPT), "--out", str(tmp_path / "seat")]) == 0
    assert fkrep_build.main([str(TRANSCRIPT), "--out", str(tmp_path / "fk"), "--naming", "freekill"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"seat 1\tplayer 1\t{tmp_path / 'seat' / 'fk_rand_p4_35.seat1.fk.rep'}"
    for seat, pid in enumerate(SEATS, 1):
        data = (tmp_path / "seat" / f"fk_rand_p4_35.seat{seat}.fk.rep").read_bytes()
        assert data == fkrep_from_transcript(LINES, pid)
        rec = read_fkrep(data)
        assert (tmp_path / "fk" / rec.file_name).read_bytes() == data
    assert sorted(p.name for p in (tmp_path / "fk").iterdir())[0] == (
        "20251115000000.p1.aaa_role_mode.caocao.lord.rebel+rebel_chief+civilian.fk.rep"
    )
    assert fkrep_build.main([str(TRANSCRIPT), "--out", str(tmp_path / "old"), "--container", "json"]) == 0
    old = (tmp_path / "old" / "fk_rand_p4_35.seat1.fk.rep").read_bytes()
    assert old == fkrep_from_transcript(LINES, 1, container=JSON) and read_fkrep(old).version == "0.5.11"


def test_tool_refuses_colliding_names_and_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unfinished = tmp_path / "cut.jsonl"
    unfinished.write_text("\n".join(json.dumps(ln) for ln in LINES if ln.get("cmd") != "GameOver"), encoding="utf-8")
    assert fkrep_build.main([str(unfinished), "--out", str(tmp_path / "o"), "--naming", "freekill"]) == 2
    assert "unfinished" in capsys.readouterr().err
    assert fkrep_build.main([str(unfinished), "--out", str(tmp_path / "o")]) == 0  # seat names are distinct
    junk = tmp_path / "junk.jsonl"
    junk.write_text("{not json\n", encoding="utf-8")
    assert fkrep_build.main([str(junk), "--out", str(tmp_path / "o")]) == 2
    assert fkrep_build.main([str(tmp_path / "missing.jsonl")]) == 2
    xz = tmp_path / "bad.jsonl.xz"
    xz.write_bytes(b"not xz")
    assert fkrep_build.main([str(xz)]) == 2
