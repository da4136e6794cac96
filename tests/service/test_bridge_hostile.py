"""`sgs-verify bridge` against hostile or broken input (docs/freekill-bridge.md, Hardening): each bad tap line is
skipped with one reason and counted, never a crash (nor a crash loop: the position moves past it); lines of any
length; rooms beyond --max-rooms reported and not followed, and no thread per room; the marker only where the
tap writes it; a missing log or state directory said at once; a game the verifier stops following said at once,
the room still stored."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from clients.bridge.bridge import MAX_LINE_BYTES, Bridge, Output, Room, Settings
from clients.bridge.follower import Follower, Overlong
from clients.bridge.live import Connection, stopped_of
from clients.bridge.replaylog import RotatingLog, room_records
from clients.client import ListFilter, VerifierClient
from importers.freekill import import_freekill
from importers.freekill.tap import parse_log_line, stamp, tap_line
from service.live import LiveGame
from service.server import BackgroundServer
from service.work import canonical_bytes
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from storage.store import SubmissionMetadata
from tests.service.conftest import fresh_database, server_config
from tests.service.test_bridge import DATA, GAMES, ROOT, Lines, wait_for

NOWHERE = Connection("127.0.0.1:9")  # (no service: these rooms never get as far as a stream)


@cache
def _first_record() -> dict[str, Any]:
    return room_records(DATA / GAMES[1], 0)[0]


def meta(room: int) -> dict[str, Any]:
    """A room's first record, as the tap writes it (from a shared game)."""
    return {**_first_record(), "room": room}


def raw_line(text: str, thread: str = "1") -> str:
    """A freekill.log line as FreeKill's server writes a qInfo message (``text``: the message)."""
    return f"{stamp(time.time())} {thread}[I] {text}\n"


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[tuple[Bridge, Lines]]:
    """A started bridge that is fed lines by hand (``Bridge.line``), no service behind it."""
    lines = Lines()
    b = Bridge(Settings(log=tmp_path / "freekill.log", state=tmp_path / "state", as_json=True, max_rooms=3),
               NOWHERE, Output(True, lines), notice=lambda _: None)
    b.start()
    try:
        yield b, lines
    finally:
        b.shutdown()


def sample(b: Bridge, name: str, **labels: str) -> float:
    return b.metrics.registry.get_sample_value(name, labels) or 0.0


# ------------------------------------------------------------------------------ 1. records validated


HOSTILE = [
    # (what, the log line's message, the reason it is skipped for)
    ("a room id of 300 digits", '{"v":1,"room":' + "9" * 300 + ',"seq":1,"kind":"meta"}', "big_integer"),
    ("an integer of 5,000 digits", '{"v":1,"room":5,"seq":2,"kind":"request","timeout":' + "1" * 5000 + "}",
     "big_integer"),
    ("a room id over a C++ int", '{"v":1,"room":2147483648,"seq":1,"kind":"meta"}', "out_of_range"),
    ("a negative room id", '{"v":1,"room":-1,"seq":1,"kind":"meta"}', "out_of_range"),
    ("a seq over a C++ int", '{"v":1,"room":5,"seq":2147483648,"kind":"notify"}', "out_of_range"),
    ("a player id over a C++ int", '{"v":1,"room":5,"seq":1,"kind":"meta","ids":[1,4294967296]}', "out_of_range"),
    ("not JSON", '{"v":1,"room":5', "not_json"),
    ("JSON nested past the recursion limit", "[" * 100_000, "not_json"),
    ("a JSON list", "[1,2]", "not_a_record"),
    ("a long unknown kind", '{"v":1,"room":5,"seq":1,"kind":"' + "x" * 100_000 + '"}', "not_a_record"),
]


@pytest.mark.parametrize(("message", "reason"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_a_bad_tap_line_is_skipped_with_one_reason_and_counted(bridge: tuple[Bridge, Lines], message: str,
                                                               reason: str) -> None:
    b, lines = bridge
    b.line(raw_line("SGSV1 " + message).rstrip("\n"), time.time())
    said = lines.of("unreadable")
    assert [u["reason"] for u in said] == [reason]
    assert len(said[0]["error"]) < 300  # (what is wrong, not the line again)
    assert sample(b, "sgs_verify_bridge_unreadable_lines_total", reason=reason) == 1
    assert lines.of("room") == [] and lines.of("uncheckable") == []
    # the good line after it is taken
    b.line(tap_line(meta(5), time.time()).rstrip("\n"), time.time())
    assert [r["room"] for r in lines.of("room")] == [5]


def test_a_player_id_out_of_range_in_a_rooms_record_gives_the_room_up(bridge: tuple[Bridge, Lines]) -> None:
    b, lines = bridge
    b.line(tap_line(meta(5), time.time()).rstrip("\n"), time.time())
    b.line(tap_line({"v": 1, "room": 5, "seq": 2, "kind": "notify", "to": [1 << 40], "cmd": "X", "cbor": "9g=="},
                    time.time()).rstrip("\n"), time.time())
    assert [(u["room"], "C++ ints" in u["reason"]) for u in lines.of("uncheckable")] == [(5, True)]


def bridge_process(tmp: Path, log: Path, *extra: str, server: str = "127.0.0.1:9") -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "clients.cli", "bridge", "--log", str(log), "--state",
                             str(tmp / "state"), "--server", server, "--json", "--poll", "0.05", "--token", "",
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)


def read_until(stream: Any, want: str, limit: int = 200) -> list[str]:
    """Lines of a process's output up to the first holding ``want`` (all of them, if it never comes)."""
    got = [stream.readline()]
    while got[-1] and want not in got[-1] and len(got) < limit:
        got.append(stream.readline())
    return got


def test_a_bridge_meeting_bad_lines_goes_on_and_its_restart_does_not_meet_them_again(tmp_path: Path) -> None:
    log = tmp_path / "freekill.log"
    with log.open("w", encoding="utf-8") as f:
        for _, message, _ in HOSTILE:
            f.write(raw_line("SGSV1 " + message))
        f.write(raw_line("SGSV1 " + '{"v":1,"room":5,"seq":1,"kind":"meta","x":"' + "y" * (5 << 20) + '"}'))
        f.write(tap_line(meta(5), time.time()))
    proc = bridge_process(tmp_path, log)
    assert proc.stdout is not None and proc.stderr is not None
    first = read_until(proc.stdout, '"kind": "room"')
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    printed = [json.loads(line) for line in first if line.strip()]
    assert [p["reason"] for p in printed if p["kind"] == "unreadable"] == [h[2] for h in HOSTILE] + ["too_long"]
    assert [p["room"] for p in printed if p["kind"] == "room"] == [5]
    # Restarted: the lines it read are behind it; a new room's line is read, and nothing was said of the old ones.
    with log.open("a", encoding="utf-8") as f:
        f.write(tap_line(meta(6), time.time()))
    proc = bridge_process(tmp_path, log)
    assert proc.stdout is not None
    again = read_until(proc.stdout, '"room": 6')
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert [json.loads(line)["kind"] for line in again if line.strip()] == ["room"]


# ------------------------------------------------------------------------------ 2. lines of any length


def test_a_line_over_the_limit_is_read_past_not_held(tmp_path: Path) -> None:
    path = tmp_path / "freekill.log"
    with path.open("w") as w:
        w.write("a\n" + "x" * 150)
    f = Follower(path, max_line=100)
    assert [t for t, _ in f.poll(0.0)] == ["a"]
    assert f.files[0].pending == bytearray() and f.files[0].skipped == 150  # not held: counted
    with path.open("a") as w:
        w.write("x" * 100 + "\nb\n")
    got = f.poll(0.0)
    assert [t.size if isinstance(t, Overlong) else t for t, _ in got] == [250, "b"]
    assert [pos.offset for _, pos in got] == [2 + 251, 2 + 251 + 2]
    assert got[0][0] == Overlong("x" * 150, 250)  # (its head: its first bytes when it went over, up to 256)


def test_a_line_longer_than_a_read_and_under_the_limit_is_handed_out_whole(tmp_path: Path) -> None:
    path = tmp_path / "freekill.log"
    long = "z" * (3 << 20)  # (the follower used to read 1 MiB at a time and wait for ever for this one's newline)
    path.write_text(long + "\nnext\n")
    f = Follower(path, max_line=4 << 20)
    lines: list[Any] = []
    for _ in range(5):
        lines += [t for t, _ in f.poll(0.0)]
    assert lines == [long, "next"]


def test_a_follower_resumed_after_an_overlong_line_starts_past_it(tmp_path: Path) -> None:
    path = tmp_path / "freekill.log"
    path.write_text("y" * 500 + "\nafter\n")
    f = Follower(path, max_line=100)
    got = f.poll(0.0)
    f.close()
    assert isinstance(got[0][0], Overlong) and got[1][0] == "after"
    again = Follower(path, [got[0][1]], max_line=100)
    assert [t for t, _ in again.poll(0.0)] == ["after"]


def test_a_tap_line_over_the_record_limit_is_unreadable_and_the_bridge_reads_on(bridge: tuple[Bridge, Lines],
                                                                               tmp_path: Path) -> None:
    b, lines = bridge
    with (tmp_path / "freekill.log").open("w") as w:
        w.write(raw_line("SGSV1 " + '{"v":1,"room":5,"seq":1,"kind":"meta","pad":"' + "p" * MAX_LINE_BYTES + '"}'))
        w.write(raw_line("a line of the server's own, as long, not the tap's: " + "q" * MAX_LINE_BYTES))
        w.write(tap_line(meta(5), time.time()))
    for _ in range(30):
        if lines.of("room"):
            break
        b.step()
    assert [u["reason"] for u in lines.of("unreadable")] == ["too_long"]
    assert [r["room"] for r in lines.of("room")] == [5]


# ------------------------------------------------------------------------------ 3. a bounded number of rooms


def test_rooms_over_the_limit_are_reported_once_and_not_followed(bridge: tuple[Bridge, Lines],
                                                                 tmp_path: Path) -> None:
    b, lines = bridge  # (max_rooms=3)
    now = time.time()
    for room in range(10, 20):
        b.line(tap_line(meta(room), now).rstrip("\n"), now)
    assert [r["room"] for r in lines.of("room")] == [10, 11, 12]
    refused = lines.of("uncheckable")
    assert [u["room"] for u in refused] == list(range(13, 20))
    assert all("3 rooms are followed already (--max-rooms)" in u["reason"] for u in refused)
    assert sample(b, "sgs_verify_bridge_rooms_over_limit_total") == 7
    assert sample(b, "sgs_verify_bridge_rooms_total", outcome="uncheckable") == 7
    assert sample(b, "sgs_verify_bridge_rooms_open") == 3
    # their next records are not taken, nor reported again
    b.line(tap_line({"v": 1, "room": 15, "seq": 2, "kind": "end", "result": ""}, now).rstrip("\n"), now)
    assert len(lines.of("uncheckable")) == 7 and sample(b, "sgs_verify_bridge_tap_lines_total") == 11
    # a room followed that ends frees its place for the next room opened
    b.skip(b.rooms[10], "given up by the test")
    b.line(tap_line(meta(20), now).rstrip("\n"), now)
    assert [r["room"] for r in lines.of("room")] == [10, 11, 12, 20]
    # restarted with the same state: the refused rooms are remembered (their lines say nothing)
    b.shutdown()
    again_lines = Lines()
    again = Bridge(Settings(log=tmp_path / "freekill.log", state=tmp_path / "state", as_json=True, max_rooms=3),
                   NOWHERE, Output(True, again_lines), notice=lambda _: None)
    again.start()
    try:
        again.line(tap_line({"v": 1, "room": 16, "seq": 3, "kind": "end", "result": ""}, now).rstrip("\n"), now)
        assert again_lines.items == []
        assert sorted(again.rooms) == [11, 12, 20]
    finally:
        again.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    folder = tmp_path_factory.mktemp("bridge-hostile-server")
    url, _ = fresh_database("sqlite", folder)
    srv = BackgroundServer(server_config(url, folder)).start()
    try:
        yield srv
    finally:
        srv.stop()


def test_rooms_streaming_at_once_take_no_thread_each_and_a_stop_stores_none(server: BackgroundServer,
                                                                             tmp_path: Path) -> None:
    rooms = 30
    judged: set[int] = set()
    lines = Lines()
    b = Bridge(Settings(log=tmp_path / "freekill.log", state=tmp_path / "state", as_json=True, poll=0.05,
                        tournament="t-threads"), Connection(server.address), Output(True, lines),
               on_verdict=lambda room, _index, _lag: judged.add(room.room), notice=lambda _: None)
    before = threading.active_count()
    b.start()
    runner = threading.Thread(target=b.run)
    runner.start()
    log = RotatingLog(tmp_path / "freekill.log")
    try:
        for k in range(rooms):
            records = room_records(DATA / GAMES[1 + k % 3], 100 + k)
            for rec in records[:len(records) // 3]:
                log.write_record(rec, time.time())
        wait_for(lambda: len(judged) == rooms)  # every room's stream is open and answered
        # one thread follows, one runs every stream (and gRPC's own few): not one or two per room
        assert threading.active_count() - before <= 6, [t.name for t in threading.enumerate()]
        assert b.live.busy() == rooms
    finally:
        b.stop()
        runner.join(60)
        log.close()
    assert not runner.is_alive() and not b.live.thread.is_alive() and b.live.busy() == 0
    with VerifierClient(server.address, timeout=60) as c:
        assert list(c.list(ListFilter(tournament="t-threads"))) == []  # cancelled streams store nothing
    assert lines.of("stored") == [] and lines.of("uncheckable") == []


# ------------------------------------------------------------------------------ 4. the marker only after the prefix


def test_the_marker_counts_only_right_after_the_lines_prefix() -> None:
    record = json.dumps(meta(5), separators=(",", ":"))
    at = stamp(time.time())
    taken = [
        tap_line(meta(5), time.time()),  # as the tests and the benchmark write it
        f"{at} 4242[I] SGSV1 {record}",  # as the headless host does
        f"{at} MainThread\0\0\0\0\0\0[I] SGSV1 {record}",  # as asio does: its thread's name as 16 bytes
    ]
    for line in taken:
        rec = parse_log_line(line)
        assert rec is not None and rec.room == 5, line
    forged = [
        f"{at} MainThread\0\0\0\0\0\0[I] [Chat] mallory: SGSV1 {record}",  # a chat line quoting the marker
        f"{at} 1[I] player SGSV1 {record} joined",  # a player's name
        f"{at} 1[I] [I] SGSV1 {record}",  # a message that starts with a level of its own
        f"{at} 1[W] SGSV1 {record}",  # not an info line (fk.qInfo is)
        f"{at} 1[E] Lua error: SGSV1 {record}",
        f"SGSV1 {record}",  # no prefix
        f"hello {at} 1[I] SGSV1 {record}",  # the prefix inside a message
    ]
    for line in forged:
        assert parse_log_line(line) is None, line


def test_a_forged_record_in_a_chat_line_opens_no_room(bridge: tuple[Bridge, Lines]) -> None:
    b, lines = bridge
    record = json.dumps(meta(5), separators=(",", ":"))
    b.line(raw_line(f"[Chat] mallory: SGSV1 {record}", "MainThread\0\0\0\0\0\0").rstrip("\n"), time.time())
    assert lines.items == [] and sample(b, "sgs_verify_bridge_tap_lines_total") == 0


# ------------------------------------------------------------------------------ 5. what is missing, said at once


def test_a_missing_log_and_a_new_state_directory_are_said_at_once(tmp_path: Path) -> None:
    log = tmp_path / "freekill" / "freekill.log"  # (its folder does not exist either)
    proc = bridge_process(tmp_path, log)
    assert proc.stdout is not None and proc.stderr is not None
    said = read_until(proc.stderr, "sgs-verify: following")
    assert f"sgs-verify: created the state directory {tmp_path / 'state'}\n" in said
    assert f"sgs-verify: {log} does not exist yet: waiting for it (FreeKill's server creates it when it starts)\n" \
        in said
    # it keeps waiting, and follows the log once it is there
    log.parent.mkdir()
    log.write_text(tap_line(meta(5), time.time()))
    assert '"room": 5' in read_until(proc.stdout, '"room": 5')[-1]
    assert read_until(proc.stderr, "exists now")[-1] == f"sgs-verify: {log} exists now: following it\n"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and "Traceback" not in err, err


def test_a_state_directory_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    state = tmp_path / "a-file" / "state"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "clients.cli", "bridge", "--log", str(tmp_path / "freekill.log"),
                           "--state", str(state), "--server", "127.0.0.1:9", "--token", ""],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 2
    assert f"sgs-verify: cannot start: the state directory {state} cannot be created: Not a directory" in done.stderr
    assert "Traceback" not in done.stderr


# ------------------------------------------------------------------------------ 6. a game the verifier stops following


def game_that_stops(game: str, at: int) -> tuple[pb.GameHeader, list[pb.Event]]:
    """A shared game's header and events with 40 empty events from ``at`` on: decisions that fit nothing, so
    that the verifier stops following it (32 in a row)."""
    log = import_freekill((DATA / game).read_bytes()).log
    return log.header, [*log.events[:at], *[pb.Event() for _ in range(40)], *log.events[at:at + 20]]


def test_the_live_answer_says_once_where_and_why_the_verifier_stopped() -> None:
    header, events = game_that_stops(GAMES[1], 50)
    game = LiveGame(header, SubmissionMetadata())
    said = []
    first_not_checked = None
    for k in range(0, len(events), 10):
        batch = events[k:k + 10]
        raw = game.feed_encoded(batch, canonical_bytes(pb.GameLog(events=batch)))
        res = spb.VerifyLiveResponse.FromString(raw)  # (a client that does not know the field reads the rest)
        if first_not_checked is None:
            first_not_checked = next((a.index for a in res.annotations if a.status == apb.STATUS_NOT_CHECKED), None)
        if (stopped := stopped_of(raw)) is not None:
            said.append(stopped)
    last, _ = game.finish_encoded()
    assert stopped_of(last) is None
    assert len(said) == 1
    assert said[0].at == first_not_checked == 50 + 32
    assert "32 decisions in a row fit nothing the game was waiting for (from event 50)" in said[0].reason


def test_a_game_the_verifier_stops_following_is_said_at_once_and_still_stored(server: BackgroundServer,
                                                                             tmp_path: Path) -> None:
    lines = Lines()
    b = Bridge(Settings(log=tmp_path / "freekill.log", state=tmp_path / "state", as_json=True, poll=0.05,
                        tournament="t-stopped"), Connection(server.address), Output(True, lines),
               notice=lambda _: None)
    b.start()
    runner = threading.Thread(target=b.run)
    runner.start()
    try:
        # (a room as the conversion would have made it: FreeKill's replies do not make such a game)
        header, events = game_that_stops(GAMES[1], 60)
        room = Room(41, 1, first_line="(the test's)", header=header, events=events, written=[time.time()] * len(events))
        b.open[room.key] = b.rooms[41] = room
        b.metrics.rooms_open.inc()
        b._start_sender(room)
        wait_for(lambda: len(lines.of("stopped")) == 1)
        assert lines.of("stored") == []  # said while the room was still open
        with room.lock:
            room.closed = True
        b._touch(room)
        wait_for(lambda: len(lines.of("stored")) == 1)
    finally:
        b.stop()
        runner.join(60)
    stopped = lines.of("stopped")
    assert stopped == [{"kind": "stopped", "room": 41, "game": 1, "event": 92, "reason": stopped[0]["reason"]}]
    assert "from event 60" in stopped[0]["reason"]
    assert b.metrics.registry.get_sample_value("sgs_verify_bridge_rooms_stopped_total") == 1
    assert lines.of("stored")[0]["followed"] is False
    with VerifierClient(server.address, timeout=60) as c:
        (info,) = c.list(ListFilter(tournament="t-stopped"))
        replay = c.get(info.id).replay
        assert not replay.followed and replay.stopped_at == 92
