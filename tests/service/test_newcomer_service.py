"""A newcomer against a real `sgs-verify serve` (issue 29): Ctrl-C stops `submit` (nothing more is sent and
the summary says what was stored), `serve` says where its data lives and why `--examples` stored nothing,
`token create` says what it changes, filters that match nothing say why (the CLI, the RPC and the viewer's
API), a garbage page token is a clear INVALID_ARGUMENT, `submit` counts "already stored" apart and its
`--json` says `created: false`, FreeKill records are submitted without `--from`."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

from clients.client import ListFilter, ServiceError, VerifierClient
from tests.service.test_service_cli import CLI, ROOT, ServeProcess, cli
from tests.service.test_service_rpc import second_slash_log

EXAMPLE = ROOT / "docs" / "examples" / "second_slash.json"
TRANSCRIPT = ROOT / "tests" / "data" / "freekill" / "fk_rand_p4_35.jsonl"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The environment of a fresh user: no SGS_VERIFY_ settings, a data home of its own."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("SGS_VERIFY_")}
    out["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    return out


def distinct_logs(folder: Path, count: int) -> list[Path]:
    """``count`` different small logs (the players' names differ, so each is a replay of its own)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        log = second_slash_log()
        log.header.seats[0].player = f"lord-{i}"
        path = folder / f"g{i:03d}.json"
        path.write_text(json_format.MessageToJson(log), encoding="utf-8")
        paths.append(path)
    return paths


def stored_count(address: str) -> int:
    from clients.client import retrying

    with VerifierClient(address) as client:
        return retrying(lambda: client.list_page(ListFilter(), page_size=1).total_count)


def test_ctrl_c_stops_submit_and_says_what_was_stored(env: dict[str, str], tmp_path: Path) -> None:
    """The server takes 5 requests a second, so 60 files take 12 s; Ctrl-C after the first is stored."""
    files = distinct_logs(tmp_path / "games", 60)
    server = ServeProcess(["--data-dir", str(tmp_path / "data"), "--rate-limit", "5", "--rate-burst", "1"], env)
    try:
        proc = subprocess.Popen([*CLI, "submit", *map(str, files), "--server", server.address, "--jobs", "2"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
                                start_new_session=True)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert " stored, " in first, first
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert err.rstrip().endswith("interrupted") and "Traceback" not in err, err
        summary = re.search(r"submitted (\d+) of 60 file\(s\) .*\((\d+) stored, (\d+) already stored(?:, (\d+) failed)?"
                            r", (\d+) not sent \(interrupted\)\)", out)
        assert summary, out
        done, stored, already = int(summary[1]), int(summary[2]), int(summary[3])
        not_sent = int(summary[5])
        assert already == 0 and done == stored and 1 <= stored < 60 and not_sent >= 1
        # Nothing more reaches the server once the command has ended: what it holds is what was said.
        assert stored_count(server.address) == stored
    finally:
        server.kill()


def test_a_newcomers_session(env: dict[str, str], tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = ServeProcess(["--data-dir", str(data), "--examples"], env)
    try:
        first.wait_for_line("stored 6 example games")
        assert any(f"data in {data / 'replays.sqlite3'} (embedded SQLite, 0 replay(s))" in line
                   for line in first.lines), first.lines
    finally:
        first.kill()
    server = ServeProcess(["--data-dir", str(data), "--examples"], env)
    try:
        server.wait_for_line("--examples stored nothing")
        assert any("holds 6 replay(s)" in line for line in server.lines), server.lines
        addr = ["--server", server.address]

        # submit: FreeKill told by content; "already stored" counted apart; --json says created: false
        out = cli("submit", str(EXAMPLE), str(TRANSCRIPT), *addr, env=env)
        assert out.returncode == 1, out.stderr  # second_slash has violations
        assert "(1 stored, 1 already stored)" in out.stdout, out.stdout
        again = cli("submit", "--json", str(EXAMPLE), *addr, env=env)
        report = json.loads(again.stdout)
        assert report["created"] is False and report["info"]["metadata"]["round"] == ""
        assert "(0 stored, 1 already stored)" in again.stderr

        # list: --code in any case, an unknown one refused, a label matching nothing said
        lower = cli("list", "--code", "slash_limit", *addr, env=env)
        assert lower.returncode == 0 and "2 of 2 matching" in lower.stdout, lower.stdout + lower.stderr
        unknown = cli("list", "--code", "SLASH_LIMT", *addr, env=env)
        assert unknown.returncode == 2
        assert "'SLASH_LIMT' is not a violation code" in unknown.stderr and "SLASH_LIMIT" in unknown.stderr
        nothing = cli("list", "--tournament", "spring-cup", "--player", "alice", *addr, env=env)
        assert "0 of 0 matching" in nothing.stdout
        assert "no stored replay has --tournament 'spring-cup'" in nothing.stderr
        assert "--player" not in nothing.stderr  # alice has games: only the label that matches nothing is named

        # the RPC: INVALID_ARGUMENT naming the code, and a clear word on a page token it did not issue
        with VerifierClient(server.address) as client:
            with pytest.raises(ServiceError) as bad_code:
                client.list_page(ListFilter(violation_code="slash_limit"))
            assert bad_code.value.code == grpc.StatusCode.INVALID_ARGUMENT
            assert "'slash_limit' is not a violation code; the codes are upper case: SLASH_LIMIT" in str(bad_code.value)
            with pytest.raises(ServiceError) as bad_token:
                client.list_page(ListFilter(), page_token="\u00ff\u00fe garbage")
            assert bad_token.value.code == grpc.StatusCode.INVALID_ARGUMENT
            message = str(bad_token.value)
            assert "is not one this service issued" in message and "next_page_token" in message
            assert "codec" not in message and "padding" not in message
    finally:
        server.kill()


def test_the_viewer_api_refuses_an_unknown_code(env: dict[str, str], tmp_path: Path) -> None:
    import httpx

    server = ServeProcess(["--data-dir", str(tmp_path / "data"), "--http", "127.0.0.1:0"], env)
    try:
        server.wait_for_line("viewer on")
        url = next(m.group(1) for line in server.lines if (m := re.search(r"viewer on (\S+)", line)))
        answer = httpx.get(url + "api/replays", params={"code": "NO_SUCH_CODE"}, timeout=30)
        assert answer.status_code == 400
        assert "'NO_SUCH_CODE' is not a violation code" in answer.json()["error"]
        assert httpx.get(url + "api/replays", params={"code": "slash_limit"}, timeout=30).status_code == 200
    finally:
        server.kill()


def test_the_first_token_says_what_it_changes(env: dict[str, str], tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    first = cli("token", "create", "--tenant", "alice", *data, env=env)
    assert first.returncode == 0, first.stderr
    assert "this is the first token" in first.stderr and "turns authentication on" in first.stderr
    token_id = first.stdout.strip().split("_")[1]
    assert f"To go back to an open server: sgs-verify token revoke {token_id}, then restart" in first.stderr
    second = cli("token", "create", "--tenant", "bob", *data, env=env)
    assert "first token" not in second.stderr
    second_id = second.stdout.strip().split("_")[1]
    revoked = cli("token", "revoke", token_id, *data, env=env)
    assert "no active token is left" not in revoked.stderr
    last = cli("token", "revoke", second_id, *data, env=env)
    assert "no active token is left" in last.stderr and "until it is restarted" in last.stderr


def test_the_codes_column_never_cuts_a_code() -> None:
    from clients.commands.service import codes_column

    assert codes_column(["OUT_OF_RANGE", "SLASH_LIMIT"]).rstrip() == "OUT_OF_RANGE,SLASH_LIMIT"
    three = codes_column(["DEAD_PLAYER", "OUT_OF_RANGE", "SLASH_LIMIT"])
    assert three.rstrip() == "DEAD_PLAYER +2" and len(three) == 24
    assert codes_column(["A_VERY_LONG_CODE_NAME_INDEED"]) == "A_VERY_LONG_CODE_NAME_INDEED"
    assert codes_column([]).rstrip() == "-"
