"""`sgs-verify bridge` (clients/bridge/): the follower on its own (rotation by rename with writes going on to
the old inode, truncation, a partial last line, resuming by inode), then the bridge against a real server fed
from tap logs made of the shared FreeKill transcripts, written into a rotating log: every room's live verdict
is its offline verdict (import_freekill + verify), stored once; a bridge killed mid-room and restarted streams
that room once; the service going away and coming back; a silent room ended; an uncheckable room reported
once and not stored."""

from __future__ import annotations

import base64
import json
import lzma
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from clients.bridge.bridge import Bridge, Output, Settings
from clients.bridge.follower import Follower, Position
from clients.bridge.replaylog import RotatingLog, interleave, room_records
from clients.client import ListFilter, VerifierClient
from importers.freekill import cbor, import_freekill
from service.server import BackgroundServer
from sgsverify.v1 import annotation_pb2 as apb
from tests.service.conftest import TcpProxy, fresh_database, server_config
from verifier import verify

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "freekill" / "transcripts"
# Small games: a clean one, one with violations (SKILL_COST, no replies recorded), one of AI replies.
GAMES = {1: "fk_rand_p4_35.jsonl.xz", 2: "fk_p5_r5.jsonl.xz", 3: "fk_rand_p4_29.jsonl.xz"}


# ------------------------------------------------------------------------------------ the follower


def test_the_follower_reads_across_a_rename_while_the_old_file_is_still_written(tmp_path: Path) -> None:
    path = tmp_path / "freekill.log"
    old = path.open("w")
    old.write("a1\na2\n")
    old.flush()
    f = Follower(path, grace=5.0)
    assert [t for t, _ in f.poll(0.0)] == ["a1", "a2"]
    os.replace(path, tmp_path / "freekill.log.1")
    new = path.open("w")
    new.write("b1\n")
    new.flush()
    old.write("a3\n")  # the writer has not reopened yet
    old.flush()
    assert [t for t, _ in f.poll(1.0)] == ["a3", "b1"]
    assert f.poll(1.5) == []  # quiet for a moment, not for the grace time
    old.write("a4\n")
    old.flush()
    assert [t for t, _ in f.poll(2.0)] == ["a4"]
    assert len(f.files) == 2
    assert f.poll(8.0) == [] and len(f.files) == 1  # quiet for the grace time: let go
    new.write("b2\n")
    new.flush()
    assert [t for t, _ in f.poll(9.0)] == ["b2"]


def test_a_partial_last_line_waits_for_its_newline_and_truncation_starts_again(tmp_path: Path) -> None:
    path = tmp_path / "freekill.log"
    with path.open("w") as w:
        w.write("one\ntw")
    f = Follower(path)
    got = f.poll(0.0)
    assert [t for t, _ in got] == ["one"] and got[0][1].offset == 4
    with path.open("a") as w:
        w.write("o\n")
    assert [t for t, _ in f.poll(0.0)] == ["two"]
    path.write_text("x\n")  # truncated in place, then written
    assert [t for t, _ in f.poll(0.0)] == ["x"]


def test_a_rotated_file_is_read_to_its_end_before_the_new_one(tmp_path: Path) -> None:
    """A room's lines written before a rotation come before those written after it, however much of the old
    file is left to read (a bridge restarted after a rotation, a burst of rooms): the newer file waits."""
    path = tmp_path / "freekill.log"
    old = [f"old {k:07d} " + "x" * 100 for k in range(100_000)]  # (11 MB: several polls' worth)
    path.write_text("".join(line + "\n" for line in old))
    f = Follower(path)
    got = [t for t, _ in f.poll(0.0)]
    assert 0 < len(got) < len(old)  # (a poll hands out about 1 MiB)
    os.replace(path, tmp_path / "freekill.log.1")
    path.write_text("new 1\n")
    for _ in range(20):
        got += [t for t, _ in f.poll(1.0)]
    assert got == [*old, "new 1"]


def test_a_follower_resumes_by_inode_in_the_file_it_was_rotated_to(tmp_path: Path) -> None:
    path = tmp_path / "freekill.log"
    path.write_text("a1\na2\n")
    f = Follower(path)
    first = f.poll(0.0)[0]
    f.close()
    with path.open("a") as w:
        w.write("a3\n")
    os.replace(path, tmp_path / "freekill.log.1")
    path.write_text("b1\n")
    again = Follower(path, [first[1]])
    assert [t for t, _ in again.poll(0.0)] == ["a2", "a3", "b1"]
    assert again.positions()[-1] == Position(path.stat().st_ino, 3)


# ------------------------------------------------------------------------------------ against a server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    folder = tmp_path_factory.mktemp("bridge-server")
    url, _ = fresh_database("sqlite", folder)
    srv = BackgroundServer(server_config(url, folder)).start()
    try:
        yield srv
    finally:
        srv.stop()


def verdict(replay: apb.AnnotatedReplay) -> tuple[Any, ...]:
    return (replay.result.finished, replay.result.side, list(replay.result.winners),
            [(a.index, a.derived, [v.code for v in a.violations]) for a in replay.annotations if a.violations])


def offline(game: str) -> tuple[Any, ...]:
    return verdict(verify(import_freekill((DATA / game).read_bytes(), name=game).log))


class Lines:
    """What the bridge printed (JSON lines)."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            self.items += [json.loads(t) for t in text.splitlines() if t.strip()]
        return len(text)

    def flush(self) -> None:
        pass

    def of(self, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [i for i in self.items if i["kind"] == kind]


def wait_for(what: Callable[[], bool], timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not what():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.05)


class Running:
    def __init__(self, tmp: Path, address: str, tournament: str, **settings: Any) -> None:
        self.lines = Lines()
        self.client = VerifierClient(address, timeout=60)
        s = Settings(log=tmp / "freekill.log", state=tmp / "state", rotate_grace=0.5, poll=0.05,
                     tournament=tournament, as_json=True, retry_max=0.5, **settings)
        self.bridge = Bridge(s, self.client, Output(True, self.lines))
        self.bridge.start()  # following from here: the lines written next are read
        self.thread = threading.Thread(target=self.bridge.run)
        self.thread.start()

    def settled(self, rooms: Iterable[int]) -> bool:
        """Whether each of these rooms was stored or reported uncheckable (by room id: a room given up and played
        again under another id may be stored too, once it has been silent long enough, and is no game of these)."""
        done = {line["room"] for kind in ("stored", "uncheckable") for line in self.lines.of(kind)}
        return set(rooms) <= done

    def stop(self) -> None:
        self.bridge.stop()
        self.thread.join(30)
        self.client.close()


def stored(client: VerifierClient, tournament: str) -> dict[str, list[Any]]:
    by_table: dict[str, list[Any]] = {}
    for info in client.list(ListFilter(tournament=tournament)):
        by_table.setdefault(info.metadata.table, []).append(info)
    return by_table


def write_rooms(log: RotatingLog, rooms: dict[int, list[dict[str, Any]]], step: int = 7) -> None:
    """The rooms' records in turns, a turn every 10 ms (a file lives for several of the bridge's polls: as with
    tail -F, a file rotated in and out between two polls would not be seen)."""
    for k, rec in enumerate(interleave(list(rooms.values()), step)):
        log.write_record(rec, time.time())
        if k % (step * len(rooms)) == 0:
            time.sleep(0.01)


def test_rooms_in_a_rotating_log_are_verified_live_as_offline_and_stored_once(server: BackgroundServer,
                                                                              tmp_path: Path) -> None:
    rooms = {room: room_records(DATA / game, room) for room, game in GAMES.items()}
    log = RotatingLog(tmp_path / "freekill.log", max_bytes=150_000, late_lines=4)
    run = Running(tmp_path, server.address, "t-rotating")
    try:
        write_rooms(log, rooms)
        assert log.rotations >= 3
        wait_for(lambda: len(run.lines.of("stored")) == len(rooms))
    finally:
        run.stop()
        log.close()
    with VerifierClient(server.address, timeout=60) as c:
        by_table = stored(c, "t-rotating")
        for room, game in GAMES.items():
            infos = by_table[f"room {room}"]
            assert len(infos) == 1
            live = c.get(infos[0].id).replay
            assert verdict(live) == offline(game), game
    printed = run.lines.of("violation")
    assert sorted((p["room"], p["event"], p["code"]) for p in printed) == \
        sorted((room, index, code) for room, game in GAMES.items() for index, _, codes in offline(game)[3]
               for code in codes)
    # each names the FreeKill player at the seat and who made the decision, as the offline log has them (fk_p5_r5
    # holds no replies: not known; fk_rand_p4_29 is an AI game)
    names = {"unspecified": 0, "client": 1, "ai": 2, "default": 3}
    for p in printed:
        game_log = import_freekill((DATA / GAMES[p["room"]]).read_bytes()).log
        assert game_log.header.seats[p["seat"]].player == f"freekill:{p['player']}"
        assert names[p["source"]] == game_log.events[p["event"]].source
    assert {p["source"] for p in printed} == {"unspecified", "ai"}
    assert run.lines.of("uncheckable") == [] and run.lines.of("changed") == []
    # the metrics count what was printed
    sample = run.bridge.metrics.registry.get_sample_value
    assert sample("sgs_verify_bridge_violations_total", {"code": "SKILL_COST", "source": "unspecified"}) == \
        sum(p["code"] == "SKILL_COST" for p in printed)
    assert sample("sgs_verify_bridge_rooms_total", {"outcome": "finished"}) == 3
    assert sample("sgs_verify_bridge_rooms_open") == 0
    assert sample("sgs_verify_bridge_events_total") == sum(len(import_freekill(
        (DATA / game).read_bytes()).log.events) for game in GAMES.values())


def bridge_process(tmp: Path, address: str, tournament: str) -> subprocess.Popen[str]:
    """The bridge as a process, once it follows the log (it says so on stderr)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "clients.cli", "bridge", "--log", str(tmp / "freekill.log"),
                             "--state", str(tmp / "state"), "--server", address, "--json", "--poll", "0.05",
                             "--rotate-grace", "0.5", "--tournament", tournament, "--token", ""],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert proc.stderr is not None
    # (an engine run from its source says so first; then what the bridge tells the operator: a state directory
    # it made, a log that does not exist yet)
    said = [proc.stderr.readline()]
    while said[-1] and not said[-1].startswith("sgs-verify: following"):
        said.append(proc.stderr.readline())
    assert said[-1].startswith("sgs-verify: following"), said
    return proc


def test_a_bridge_killed_mid_room_and_restarted_stores_each_room_once(server: BackgroundServer,
                                                                      tmp_path: Path) -> None:
    # (rooms of their own: a log identical to one stored by another test would be that replay)
    games = {10 + slot: game for slot, game in GAMES.items()}
    rooms = {room: room_records(DATA / game, room) for room, game in games.items()}
    first = {room: recs[:len(recs) // 2] for room, recs in rooms.items()}
    first[11] = rooms[11]  # room 11 finishes before the kill
    log = RotatingLog(tmp_path / "freekill.log", max_bytes=120_000)
    proc = bridge_process(tmp_path, server.address, "t-restart")
    try:
        write_rooms(log, first)
        with VerifierClient(server.address, timeout=60) as c:
            try:
                wait_for(lambda: "room 11" in stored(c, "t-restart"), 40)
            except AssertionError:
                proc.kill()
                print(proc.communicate())
                raise
        spools = tmp_path / "state" / "rooms"
        wait_for(lambda: (spools / "12.1.tap").exists() and (spools / "13.1.tap").exists())
        time.sleep(0.5)  # (rooms 2 and 3 are streaming)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        write_rooms(log, {room: recs[len(first[room]):] for room, recs in rooms.items()})
        proc = bridge_process(tmp_path, server.address, "t-restart")
        with VerifierClient(server.address, timeout=60) as c:
            wait_for(lambda: len(stored(c, "t-restart")) == 3)
            time.sleep(1.0)  # (nothing more comes)
            by_table = stored(c, "t-restart")
            assert sorted(by_table) == ["room 11", "room 12", "room 13"]
            for room, game in games.items():
                assert len(by_table[f"room {room}"]) == 1
                assert verdict(c.get(by_table[f"room {room}"][0].id).replay) == offline(game)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        log.close()
    printed = [json.loads(line) for line in out.splitlines()]
    # The restarted bridge did not stream room 11 again; rooms 12 and 13 were stored by it, once each.
    assert sorted(p["room"] for p in printed if p["kind"] == "stored") == [12, 13]
    assert "Traceback" not in err


def test_the_service_going_away_and_coming_back(server: BackgroundServer, tmp_path: Path) -> None:
    port = int(server.address.rsplit(":", 1)[1])
    proxy = TcpProxy(port).start()
    rooms = {22: room_records(DATA / GAMES[2], 22)}
    half = len(rooms[22]) // 2
    log = RotatingLog(tmp_path / "freekill.log")
    run = Running(tmp_path, f"127.0.0.1:{proxy.port}", "t-away")
    try:
        write_rooms(log, {22: rooms[22][:half]})
        wait_for(lambda: len(run.lines.of("violation")) >= 1)
        proxy.stop()
        write_rooms(log, {22: rooms[22][half:]})
        wait_for(lambda: len(run.lines.of("service")) >= 1)
        time.sleep(1.0)
        proxy.start()
        wait_for(lambda: len(run.lines.of("stored")) == 1)
    finally:
        run.stop()
        proxy.stop()
        log.close()
    with VerifierClient(server.address, timeout=60) as c:
        infos = stored(c, "t-away")["room 22"]
        assert len(infos) == 1
        assert verdict(c.get(infos[0].id).replay) == offline(GAMES[2])
    # each violation printed once, though the room was streamed twice
    events = [p["event"] for p in run.lines.of("violation")]
    assert len(events) == len(set(events)) == len(offline(GAMES[2])[3])
    # and each event counted once as judged, though its verdict came twice
    sample = run.bridge.metrics.registry.get_sample_value
    assert (sample("sgs_verify_bridge_stream_retries_total") or 0) >= 1
    assert sample("sgs_verify_bridge_events_total") == len(import_freekill((DATA / GAMES[2]).read_bytes()).log.events)


def test_a_silent_room_is_ended_and_stored_unfinished(server: BackgroundServer, tmp_path: Path) -> None:
    recs = room_records(DATA / GAMES[1], 5)
    log = RotatingLog(tmp_path / "freekill.log")
    run = Running(tmp_path, server.address, "t-silent", room_timeout=1.0)
    try:
        write_rooms(log, {5: recs[:len(recs) // 2]})
        wait_for(lambda: len(run.lines.of("stored")) == 1)
    finally:
        run.stop()
        log.close()
    assert [e["room"] for e in run.lines.of("ended")] == [5]
    with VerifierClient(server.address, timeout=60) as c:
        infos = stored(c, "t-silent")["room 5"]
        assert len(infos) == 1 and not c.get(infos[0].id).replay.result.finished


def renamed(value: Any) -> Any:
    if value == "zhouyu":
        return "nobody_xyz"
    if isinstance(value, list):
        return [renamed(v) for v in value]
    if isinstance(value, dict):
        return {k: renamed(v) for k, v in value.items()}
    return value


def test_rooms_this_engine_does_not_replay_are_stored_whole_and_lost_lines_reported(server: BackgroundServer,
                                                                                  tmp_path: Path) -> None:
    other_mode = room_records(DATA / GAMES[1], 6)
    other_mode[0]["mode"] = "m_1v1_mode"
    unknown_general = room_records(DATA / GAMES[3], 9)
    for rec in unknown_general:  # the lord's general (周瑜) is one the verifier does not know
        if rec["kind"] == "notify" and b"zhouyu" in base64.b64decode(rec["cbor"]):
            rec["cbor"] = base64.b64encode(cbor.encode(renamed(cbor.decode(base64.b64decode(rec["cbor"]))))).decode()
    gap = room_records(DATA / GAMES[3], 7)
    del gap[40]
    good = room_records(DATA / GAMES[1], 8)
    log = RotatingLog(tmp_path / "freekill.log")
    run = Running(tmp_path, server.address, "t-uncheckable", gap_wait=0.5)
    try:
        write_rooms(log, {6: other_mode, 7: gap, 8: good, 9: unknown_general})
        wait_for(lambda: len(run.lines.of("stored")) == 3 and len(run.lines.of("uncheckable")) == 1)
        time.sleep(1.0)
    finally:
        run.stop()
        log.close()
    # Lost lines: the room cannot be read at all (reported once, nothing stored).
    assert [(u["room"], "record 41 is missing" in u["reason"]) for u in run.lines.of("uncheckable")] == [(7, True)]
    # A mode or a general this engine does not have: said once, and the room's record stored whole at its end.
    said = {u["room"]: u["reason"] for u in run.lines.of("not_replayed")}
    assert sorted(said) == [6, 9] and "m_1v1_mode" in said[6]
    assert "'nobody_xyz', which is not a standard general" in said[9]
    by_room = {s["room"]: s for s in run.lines.of("stored")}
    assert by_room[6]["judged_by"] == by_room[9]["judged_by"] == "freekill" and by_room[8]["judged_by"] == "both"
    assert by_room[9]["coverage"]["client_replies"] == 0  # (FreeKill's AI made every reply of these games)
    with VerifierClient(server.address, timeout=60) as c:
        assert sorted(stored(c, "t-uncheckable")) == ["room 6", "room 8", "room 9"]
        kept = {i.metadata.table: i for i in c.list(ListFilter(tournament="t-uncheckable", judged_by="server"))}
        assert sorted(kept) == ["room 6", "room 9"] and kept["room 9"].result.finished
        assert "m_1v1_mode" in c.get(kept["room 6"].id).replay.not_replayed


CHECKED = ROOT / "tests" / "data" / "freekill"


def test_freekills_own_verdicts_are_printed_live_beside_ours(server: BackgroundServer, tmp_path: Path) -> None:
    """Two real rooms of FreeKill's core with the tap's reply check (tests/service/test_two_engines.py): in the
    standard room both engines flag each of the four cheating client replies; the standard_ex room, which this
    engine does not replay, is followed for FreeKill's verdicts and stored whole."""
    lines = [line for name in ("tap_checked_std.log.xz", "tap_checked_ext.log.xz")
             for line in lzma.decompress((CHECKED / name).read_bytes()).decode().splitlines(keepends=True)]
    run = Running(tmp_path, server.address, "t-checked")
    try:
        with (tmp_path / "freekill.log").open("a", encoding="utf-8") as f:
            for k in range(0, len(lines), 500):
                f.writelines(lines[k:k + 500])
                f.flush()
                time.sleep(0.01)
        wait_for(lambda: len(run.lines.of("stored")) == 2, 300)  # (two real rooms, 14,000 records: a loaded machine)
    finally:
        run.stop()
    theirs = [(v["room"], v["record"], v["code"]) for v in run.lines.of("violation") if v.get("judge") == "freekill"]
    assert theirs == [(40, 220, "FK_NOT_SELECTABLE"), (40, 560, "FK_NOT_OFFERED"), (40, 1157, "FK_NOT_SELECTABLE"),
                      (40, 1906, "FK_NOT_SELECTABLE"), (50, 218, "FK_NOT_OFFERED"), (50, 297, "FK_NOT_FEASIBLE"),
                      (50, 426, "FK_NOT_OFFERED")]
    assert all(v["source"] == "client" and v["player"] is not None for v in run.lines.of("violation"))
    ours = sorted(v["code"] for v in run.lines.of("violation") if "judge" not in v)
    assert ours == ["CARD_NOT_OWNED", "INVALID_TARGET", "PEACH_FULL_HP", "SLASH_LIMIT"]  # room 40's, the same replies
    assert [u["room"] for u in run.lines.of("not_replayed")] == [50]
    by_room = {s["room"]: s for s in run.lines.of("stored")}
    assert by_room[40]["coverage"] == {"client_replies": 5, "both": 5, "engine": 0, "freekill": 0, "neither": 0}
    assert by_room[50]["coverage"]["freekill"] == 3 and by_room[50]["violations"] == 3
    sample = run.bridge.metrics.registry.get_sample_value
    assert sample("sgs_verify_bridge_server_refusals_total", {"code": "FK_NOT_OFFERED", "source": "client"}) == 3
    assert sample("sgs_verify_bridge_client_replies_total", {"judged_by": "both"}) == 5
    assert sample("sgs_verify_bridge_client_replies_total", {"judged_by": "freekill"}) == 3
    assert sample("sgs_verify_bridge_rooms_not_replayed_total") == 1
    with VerifierClient(server.address, timeout=60) as c:
        ext = next(iter(c.list(ListFilter(tournament="t-checked", judged_by="server"))))
        assert ext.metadata.table == "room 50" and ext.violation_codes == ["FK_NOT_FEASIBLE", "FK_NOT_OFFERED"]
        # The room streamed live keeps FreeKill's verdicts beside ours, as the same record uploaded whole does.
        std = c.get(by_room[40]["replay"]).replay
        assert [(k.reply, k.event, k.code) for k in std.server_checks if k.code] == \
            [(220, 8, "FK_NOT_SELECTABLE"), (560, 30, "FK_NOT_OFFERED"), (1157, 70, "FK_NOT_SELECTABLE"),
             (1906, 119, "FK_NOT_SELECTABLE")]
        assert std.coverage.judged_by_both == 5 and list(std.disagreements) == []
        assert std.violation_count == 4


def test_a_follower_resumed_after_several_rotations_reads_the_files_it_missed(tmp_path: Path) -> None:
    path = tmp_path / "freekill.log"
    path.write_text("a1\n")
    f = Follower(path)
    saved = f.poll(0.0)[-1][1]
    f.close()
    with path.open("a") as w:
        w.write("a2\n")
    log = RotatingLog(path)
    log.f.close()
    for lines in (["b1\n"], ["c1\n", "c2\n"]):
        log.rotate()
        for line in lines:
            log.write(line)
    again = Follower(path, [saved])
    assert [t for t, _ in again.poll(0.0)] == ["a2", "b1", "c1", "c2"]


def test_a_bridge_stopped_mid_room_stores_nothing_of_it_and_its_restart_stores_it_once(server: BackgroundServer,
                                                                                      tmp_path: Path) -> None:
    recs = room_records(DATA / GAMES[2], 31)
    half = len(recs) // 2
    log = RotatingLog(tmp_path / "freekill.log", max_bytes=100_000)
    run = Running(tmp_path, server.address, "t-stop")
    try:
        write_rooms(log, {31: recs[:half]})
        wait_for(lambda: len(run.lines.of("violation")) >= 2)
    finally:
        run.stop()  # (SIGTERM): the room's stream is cancelled, not closed
    with VerifierClient(server.address, timeout=60) as c:
        time.sleep(0.5)
        assert stored(c, "t-stop") == {}
    write_rooms(log, {31: recs[half:]})
    again = Running(tmp_path, server.address, "t-stop")
    try:
        wait_for(lambda: len(again.lines.of("stored")) == 1)
    finally:
        again.stop()
        log.close()
    with VerifierClient(server.address, timeout=60) as c:
        infos = stored(c, "t-stop")["room 31"]
        assert len(infos) == 1
        assert verdict(c.get(infos[0].id).replay) == offline(GAMES[2])
