"""Issue 43: files named to `check`, `import`, `submit` and `live` that stopped the whole batch. A JSON log
nested about 2,000 arrays deep was a RecursionError out of the format detection (the fuzzer's 17 crashes in
1,000 `check-cli` cases); a FIFO was opened, which waits for a writer for ever (N8). Each is now reported
unreadable with its reason, and the other files are checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clients.files import not_regular, read_named_file
from importers.freekill import sniff, unambiguous
from tests.test_malformed import run_cli, valid_binary_log
from verifier.logio import LogFormatError

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "clients.cli"]
# Only a hang waits this long (a FIFO's open, before the fix): the commands here take a second or two.
HUNG = 120


def nested_json_log(depth: int) -> bytes:
    """The fuzzer's find: a 2 KB JSON log whose events nest ``depth`` arrays."""
    return b'{"header": {}, "events": ' + b"[" * depth + b"]" * depth + b"}"


def nested_meta_line(depth: int) -> bytes:
    """A JSON-lines file whose first line nests ``depth`` arrays: what the detection parses to tell a FreeKill
    transcript."""
    return b'{"seq": 1, "kind": "meta", "x": ' + b"[" * depth + b"]" * depth + b"}\n{}\n"


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    path = tmp_path / "clean.pb"
    path.write_bytes(valid_binary_log())
    return path


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "game.pb"
    os.mkfifo(path)
    return path


# ---------------------------------------------------------------------------------------- deep JSON

def test_the_detection_takes_deep_json_for_no_freekill_record() -> None:
    for data in (nested_json_log(2_000), nested_meta_line(2_000), nested_meta_line(100_000)):
        assert sniff(data) is None
        assert not unambiguous(data)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_reports_a_deep_json_log_unreadable_and_goes_on(jobs: str, tmp_path: Path, clean: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    deep, meta = tmp_path / "deep.json", tmp_path / "meta.json"
    deep.write_bytes(nested_json_log(2_000))
    meta.write_bytes(nested_meta_line(2_000))
    code, out, err = run_cli(["check", "--jobs", jobs, str(deep), str(meta), str(clean)], capsys)
    assert code == 2
    assert f"{deep}: unreadable: not a GameLog in JSON: " in err and "recursion" in err
    assert f"{meta}: unreadable: " in err
    assert f"{clean}: 4 events, 0 violation(s)" in out
    assert "checked 3 file(s): 1 readable, 2 unreadable" in out
    assert "Traceback" not in out + err
    code, out, _ = run_cli(["check", "--json", "--jobs", jobs, str(deep), str(clean)], capsys)
    reports = json.loads(out)
    assert [r["readable"] for r in reports] == [False, True]
    assert reports[0]["error"].startswith("not a GameLog in JSON: ")


# ---------------------------------------------------------------------------------------- FIFOs (N8)

def test_what_is_not_a_regular_file_is_named_and_not_read(tmp_path: Path, fifo: Path, clean: Path) -> None:
    assert not_regular(fifo) == "a FIFO (a named pipe)"
    assert not_regular(Path("/dev/null")) == "a character device"
    assert not_regular(tmp_path) == "a folder"
    assert not_regular(clean) is None and not_regular(tmp_path / "missing") is None
    with pytest.raises(LogFormatError, match=r"^it is a FIFO \(a named pipe\), not a regular file: not read$"):
        read_named_file(fifo, 1000)
    with pytest.raises(FileNotFoundError):
        read_named_file(tmp_path / "missing", 1000)
    assert read_named_file(clean, 1 << 20) == clean.read_bytes()


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """The command in a process of its own: a hang (the FIFO opened) fails the test rather than stalling it."""
    try:
        return subprocess.run(CLI + argv, cwd=ROOT, capture_output=True, text=True, timeout=HUNG, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"`sgs-verify {' '.join(argv)}` hung: a FIFO was opened")


@pytest.mark.parametrize("source", ["auto", "sgs-verify", "freekill"])
def test_check_reports_a_fifo_unreadable_and_goes_on(source: str, fifo: Path, clean: Path) -> None:
    done = run(["check", "--from", source, str(fifo), str(clean)])
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{fifo}: unreadable: it is a FIFO (a named pipe), not a regular file: not read\n" in done.stderr
    assert "checked 2 file(s)" in done.stdout and "Traceback" not in done.stderr
    if source != "freekill":
        assert f"{clean}: 4 events, 0 violation(s)" in done.stdout


def test_import_reports_a_fifo_and_goes_on(tmp_path: Path, fifo: Path) -> None:
    record = ROOT / "tests" / "data" / "freekill" / "fk_rand_p4_35.jsonl"
    done = run(["import", "freekill", str(fifo), str(record), "--out", str(tmp_path / "out")])
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{fifo}: cannot import: it is a FIFO (a named pipe), not a regular file: not read" in done.stderr
    assert "imported 1 of 2 record(s) from 2 file(s)" in done.stdout


def test_submit_and_live_report_a_fifo(fifo: Path) -> None:
    """Refused before anything is sent (no server is needed to see it)."""
    done = run(["submit", "--server", "127.0.0.1:1", str(fifo)])
    assert done.returncode == 2
    assert f"{fifo}: not submitted: it is a FIFO (a named pipe), not a regular file: not read" in done.stderr
    done = run(["live", "--server", "127.0.0.1:1", str(fifo)])
    assert done.returncode == 2
    assert "it is a FIFO (a named pipe), not a regular file: not read" in done.stderr


def test_submit_to_a_service_that_is_not_there_says_so_once_with_a_hint(clean: Path) -> None:
    """A newcomer who forgot `make run`: one line, not one raw gRPC error a file."""
    done = run(["submit", "--server", "127.0.0.1:1", str(clean), str(clean), str(clean)])
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "is the service running? `make run` starts one" in lines[0], done.stderr
