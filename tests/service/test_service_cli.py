"""`sgs-verify serve` as a real process: starts with no configuration, prints where it listens
and where data lives, stops gracefully on SIGTERM (an open live game still finishes and is
stored), keeps its data across restarts; and the client commands against it."""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clients.client import ListFilter, VerifierClient
from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb
from tests.service.conftest import BACKENDS, PgDatabase, require_pg
from tests.service.test_service_rpc import second_slash_log

CLI = [sys.executable, "-m", "clients.cli"]
ROOT = Path(__file__).resolve().parents[2]


class ServeProcess:
    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([*CLI, "serve", "--address", "127.0.0.1:0", "--workers", "1", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
                                     start_new_session=True)
        self.lines: list[str] = []
        self.address = ""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if m := re.search(r"listening on (\S+)", line):
                self.address = m.group(1)
            if "limits:" in line:
                break
        assert self.address, "\n".join(self.lines)

    def wait_for_line(self, text: str) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if text in line:
                return
        raise AssertionError(f"the server ended without printing {text!r}: {self.lines}")

    def terminate(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=timeout)
        self.lines += out.splitlines()
        return self.proc.returncode

    def kill(self) -> None:
        """After a failed test: end the server and its worker processes (its own process group)."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.communicate(timeout=30)


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = dict(os.environ)
    for name in list(out):
        if name.startswith("SGS_VERIFY_"):
            del out[name]
    out["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    return out


@pytest.fixture
def backend_args(request: pytest.FixtureRequest, env: dict[str, str]) -> Iterator[list[str]]:
    if request.param == "sqlite":
        yield []
        return
    require_pg()
    db = PgDatabase()
    try:
        yield ["--db", db.url()]
    finally:
        db.drop()


def test_serve_with_no_configuration_and_the_client_commands(env: dict[str, str], tmp_path: Path) -> None:
    games = tmp_path / "games"
    games.mkdir()
    for seed in (1, 2, 3):
        (games / f"g{seed}.pb").write_bytes(play_game(seed, 5).SerializeToString())
    cheat = tmp_path / "cheat.pb"
    cheat.write_bytes(second_slash_log().SerializeToString())
    server = ServeProcess([], env)
    try:
        data = tmp_path / "xdg" / "sgs-verify" / "replays.sqlite3"
        assert any(str(data) in line for line in server.lines), server.lines
        assert data.exists()
        addr = ["--server", server.address]
        files = sorted(str(p) for p in games.iterdir())
        out = cli("submit", *files, *addr, "--tournament", "cup", env=env)
        assert out.returncode == 0, out.stderr
        assert "submitted 3 of 3 file(s)" in out.stdout
        out = cli("submit", str(cheat), *addr, "--tournament", "cup", "--stream", env=env)
        assert out.returncode == 1 and "SLASH_LIMIT" in out.stdout
        out = cli("list", *addr, "--violations", env=env)
        assert out.returncode == 0 and "1 of 1 matching" in out.stdout and "SLASH_LIMIT" in out.stdout
        replay_id = out.stdout.splitlines()[1].split()[0]  # (under the header row)
        out = cli("list", *addr, "--tournament", "cup", "--clean", env=env)
        assert "3 of 3 matching" in out.stdout
        out = cli("show", replay_id, *addr, env=env)
        assert out.returncode == 0 and "!! SLASH_LIMIT seat 0" in out.stdout and "seat 0 uses" in out.stdout
        live_log = second_slash_log()
        live_log.header.recorder = "cli-live"
        live_file = tmp_path / "live.pb"
        live_file.write_bytes(live_log.SerializeToString())
        out = cli("live", str(live_file), *addr, "--batch-size", "2", env=env)
        assert out.returncode == 1 and "event 2: SLASH_LIMIT" in out.stdout and "stored as" in out.stdout
        out = cli("delete", replay_id, *addr, env=env)
        assert out.returncode == 0
        out = cli("show", replay_id, *addr, env=env)
        assert out.returncode == 2 and "NOT_FOUND" in out.stderr
        assert server.terminate() == 0
        assert server.lines[-1] == "sgs-verify: stopped"
    finally:
        server.kill()


@pytest.mark.parametrize("backend_args", BACKENDS, indirect=True)
def test_sigterm_lets_a_live_game_finish_and_data_survives_restart(backend_args: list[str],
                                                                   env: dict[str, str]) -> None:
    if backend_args:  # PostgreSQL: migrations are a separate step
        out = cli("db", "upgrade", *backend_args, env=env)
        assert out.returncode == 0 and "migrated from (empty) to" in out.stdout, out.stderr
    log = play_game(4, 5)
    server = ServeProcess(backend_args, env)
    try:
        with VerifierClient(server.address, timeout=60) as c:
            stored = c.verify(play_game(5, 5)).id
            outbox: queue.Queue[list[pb.Event] | None] = queue.Queue()

            def batches() -> Iterator[list[pb.Event]]:
                while (batch := outbox.get()) is not None:
                    yield batch

            updates = c.live(log.header, batches())
            outbox.put(list(log.events[:100]))
            next(updates)
            assert next(updates).events_received == 100
            server.proc.send_signal(signal.SIGTERM)  # while the game is in flight
            server.wait_for_line("stopping")
            outbox.put(list(log.events[100:]))
            outbox.put(None)
            final = list(updates)[-1].finished
        assert final is not None and final.stored and final.created
        assert server.terminate() == 0, server.lines
        assert any("stopping" in line for line in server.lines)
        restarted = ServeProcess(backend_args, env)
        try:
            with VerifierClient(restarted.address, timeout=60) as c:
                assert {i.id for i in c.list(ListFilter())} == {stored, final.info.id}
                assert c.get(final.info.id, include_log=True).log == log
            assert restarted.terminate() == 0
        finally:
            restarted.kill()
    finally:
        server.kill()


@pytest.mark.postgres
def test_postgres_needs_db_upgrade_first(env: dict[str, str]) -> None:
    require_pg()
    db = PgDatabase()
    try:
        out = subprocess.run([*CLI, "serve", "--address", "127.0.0.1:0", "--db", db.url()], capture_output=True,
                             text=True, env=env, cwd=ROOT, timeout=60)
        assert out.returncode == 2 and "sgs-verify db upgrade" in out.stderr
        out = cli("db", "current", "--db", db.url(), env=env)
        assert out.returncode == 1 and "(empty)" in out.stdout
        assert cli("db", "upgrade", "--db", db.url(), env=env).returncode == 0
        out = cli("db", "upgrade", "--db", db.url(), env=env)
        assert out.returncode == 0 and "already at revision" in out.stdout
        assert cli("db", "current", "--db", db.url(), env=env).returncode == 0
    finally:
        db.drop()


def test_submit_waits_out_the_servers_rate_limit(env: dict[str, str], tmp_path: Path) -> None:
    """More files than the server takes at once: those it refuses for a while are sent again when it says, and
    every file is stored (before, they failed with "not submitted")."""
    files = []
    for seed in range(6):
        path = tmp_path / f"g{seed}.pb"
        path.write_bytes(play_game(30 + seed, 4).SerializeToString())
        files.append(str(path))
    server = ServeProcess(["--data-dir", str(tmp_path / "data"), "--rate-limit", "3", "--rate-burst", "1"], env)
    try:
        out = cli("submit", *files, "--server", server.address, "--jobs", "6", env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "submitted 6 of 6 file(s)" in out.stdout and "not submitted" not in out.stderr
    finally:
        server.kill()


def test_a_second_sigterm_while_the_server_ends_is_not_fatal(env: dict[str, str]) -> None:
    """A supervisor's (or terminate()'s) second SIGTERM after the stop: once stopped, the loop's handler is gone
    with the loop; the process must still end with 0, not die of the signal (-15)."""
    server = ServeProcess([], env)
    try:
        server.proc.send_signal(signal.SIGTERM)
        server.wait_for_line("stopped")
        server.proc.send_signal(signal.SIGTERM)  # the process is still ending (its loop, its workers)
        assert server.terminate() == 0, server.lines
    finally:
        server.kill()
