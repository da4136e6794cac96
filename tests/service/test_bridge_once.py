"""What the bridge says once, against a real server on SQLite (clients/bridge/; docs/freekill-bridge.md, "Restart and
resume"): each violation of a room, though a restart streams the room again from its first event; a room stored,
though the stream that stored it failed after the game's end and the room was streamed again (its answer: created
false)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.bridge.replaylog import RotatingLog, room_records
from clients.bridge.state import Printed, StateDir
from clients.client import VerifierClient
from service.server import BackgroundServer
from tests.service.conftest import TcpProxy, fresh_database, server_config, server_holding
from tests.service.test_bridge import DATA, GAMES, Running, offline, stored, verdict, wait_for, write_rooms


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    folder = tmp_path_factory.mktemp("bridge-once")
    url, _ = fresh_database("sqlite", folder)
    srv = BackgroundServer(server_config(url, folder)).start()
    try:
        yield srv
    finally:
        srv.stop()


def violations_counted(run: Running) -> float:
    return sum(sample.value for metric in run.bridge.metrics.registry.collect()
               if metric.name == "sgs_verify_bridge_violations" for sample in metric.samples
               if sample.name.endswith("_total"))


def test_a_bridge_restarted_mid_room_prints_and_counts_each_violation_once(server: BackgroundServer,
                                                                           tmp_path: Path) -> None:
    recs = room_records(DATA / GAMES[2], 41)
    expected = sorted((index, code) for index, _, codes in offline(GAMES[2])[3] for code in codes)
    log = RotatingLog(tmp_path / "freekill.log", max_bytes=100_000)
    first = Running(tmp_path, server.address, "t-printed")
    try:
        write_rooms(log, {41: recs[:len(recs) // 2]})
        wait_for(lambda: len(first.lines.of("violation")) >= 2)
    finally:
        first.stop()  # mid-room: its stream is cancelled, and streamed again from its first event after the restart
    before = [(p["event"], p["code"]) for p in first.lines.of("violation")]
    assert 2 <= len(before) < len(expected)
    assert violations_counted(first) == len(before)
    write_rooms(log, {41: recs[len(recs) // 2:]})
    again = Running(tmp_path, server.address, "t-printed")
    try:
        wait_for(lambda: len(again.lines.of("stored")) == 1)
    finally:
        again.stop()
        log.close()
    after = [(p["event"], p["code"]) for p in again.lines.of("violation")]
    assert not set(before) & set(after), "printed again after the restart"
    assert sorted(before + after) == expected
    assert violations_counted(again) == len(after)
    assert not list((tmp_path / "state" / "rooms").glob("*.printed"))  # (the room is done)
    with VerifierClient(server.address, timeout=60) as c:
        infos = stored(c, "t-printed")["room 41"]
        assert len(infos) == 1 and verdict(c.get(infos[0].id).replay) == offline(GAMES[2])


def test_a_room_whose_stream_failed_after_the_game_ended_is_sent_again_and_taken_as_stored(tmp_path: Path) -> None:
    """The service stores the room, but its answer never reaches the bridge (the connection is cut while the store
    is held): the room is not marked done, is streamed again once the service can be reached, and the answer to
    that, created false with the same replay id, marks it done and is printed once."""
    recs = room_records(DATA / GAMES[1], 42)
    with server_holding("sqlite", tmp_path / "server", "save") as (server, store, hold):
        proxy = TcpProxy(int(server.address.rsplit(":", 1)[1])).start()
        log = RotatingLog(tmp_path / "freekill.log")
        run = Running(tmp_path, f"127.0.0.1:{proxy.port}", "t-resent")
        rooms = tmp_path / "state" / "rooms"
        try:
            write_rooms(log, {42: recs})
            assert hold.entered.wait(60), "the room's game was never stored"
            proxy.stop()  # the answer cannot reach the bridge
            hold.release.set()
            assert hold.done.wait(60)
            wait_for(lambda: store.count() == 1)  # stored: the call's cut changes nothing of that
            wait_for(lambda: len(run.lines.of("service")) >= 1)  # the stream failed: the bridge says so, and retries
            assert not (rooms / "42.1.done").exists() and (rooms / "42.1.tap").exists()
            assert run.lines.of("stored") == []
            proxy.start()
            wait_for(lambda: len(run.lines.of("stored")) == 1)
        finally:
            run.stop()
            proxy.stop()
            log.close()
        assert store.count() == 1
        replay = store.list().replays[0].id
    said = run.lines.of("stored")
    assert len(said) == 1 and said[0]["replay"] == replay and said[0]["created"] is False
    assert json.loads((rooms / "42.1.done").read_text())["replay"] == replay
    assert not (rooms / "42.1.tap").exists()
    sample = run.bridge.metrics.registry.get_sample_value
    assert sample("sgs_verify_bridge_rooms_total", {"outcome": "finished"}) == 1
    assert (sample("sgs_verify_bridge_stream_retries_total") or 0) >= 1


def test_a_room_stored_as_the_bridge_stopped_is_sent_again_after_its_restart_and_taken_as_stored(
        tmp_path: Path) -> None:
    """The bridge stops after it closed a finished room's stream, before the answer came (the service is still
    storing it): the restarted bridge streams the room again from its spool, whose header and events make the same
    log, and the answer (created false, the same replay id) marks it done; its violation was printed once."""
    recs = room_records(DATA / GAMES[3], 43)
    with server_holding("sqlite", tmp_path / "server", "save") as (server, store, hold):
        log = RotatingLog(tmp_path / "freekill.log")
        first = Running(tmp_path, server.address, "t-restored")
        rooms = tmp_path / "state" / "rooms"
        try:
            write_rooms(log, {43: recs})
            assert hold.entered.wait(60), "the room's game was never stored"
        finally:
            first.stop()  # its call cancelled after the close: the game is stored all the same
        hold.release.set()
        wait_for(lambda: store.count() == 1)
        assert not (rooms / "43.1.done").exists() and (rooms / "43.1.tap").exists()
        again = Running(tmp_path, server.address, "t-restored")
        try:
            wait_for(lambda: len(again.lines.of("stored")) == 1)
        finally:
            again.stop()
            log.close()
        assert store.count() == 1
        replay = store.list().replays[0].id
    assert first.lines.of("stored") == []
    said = again.lines.of("stored")
    assert len(said) == 1 and said[0]["replay"] == replay and said[0]["created"] is False
    assert json.loads((rooms / "43.1.done").read_text())["replay"] == replay
    printed = [(p["event"], p["code"]) for p in first.lines.of("violation") + again.lines.of("violation")]
    assert printed == [(index, code) for index, _, codes in offline(GAMES[3])[3] for code in codes]


# ---------------------------------------------------------------- the state directory's printed files

def test_how_far_a_room_was_printed_is_kept_until_the_room_ends(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "state")
    state.spool("7.1").write_text("a line\n")
    state.spool("8.1").write_text("a line\n")
    printed = Printed(26, frozenset({(26, False, "SKILL_COST", "…"), (27, True, "X", "before 27")}))
    state.save_printed("7.1", printed)
    state.save_printed("8.1", Printed(3))
    (state.rooms / "8.1.printed").write_text('{"through": 3, "past": [[')  # cut short: nothing known printed
    state.save_printed("9.1", Printed(5))  # a room with no spool (a crash between its removal and this one's)
    found = {s.key: s for s in state.saved()}
    assert found["7.1"].printed == printed
    assert found["8.1"].printed == Printed()
    assert "9.1" not in found and not (state.rooms / "9.1.printed").exists()
    state.mark("7.1", "done", {"replay": "r"})
    assert not (state.rooms / "7.1.printed").exists()
    assert {s.key: s.printed for s in state.saved()}["7.1"] == Printed()
