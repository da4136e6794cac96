"""What a newcomer meets first on the command line (issue 29): Ctrl-C ends every command cleanly, a bare
`sgs-verify` lists the commands, `--version`, folders as arguments, `check --jobs`, FreeKill records told by
their content, the first-run warnings of the project's own files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from clients.cli import main
from importers.freekill import FKREP, TRANSCRIPT, sniff
from verifier import engine_version

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "clients.cli"]
EXAMPLE = ROOT / "docs" / "examples" / "second_slash.json"
FREEKILL = ROOT / "tests" / "data" / "freekill"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def interrupted(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    """SIGINT to the command's whole process group, as a terminal's Ctrl-C sends it; its exit status and output."""
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=timeout)
    return proc.returncode, out, err


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)


def assert_clean_interrupt(code: int, err: str) -> None:
    assert code == 130, err
    assert err.rstrip().endswith("interrupted"), err
    assert "Traceback" not in err, err
    assert "fatal" not in err, err


# ---------------------------------------------------------------------------------------- Ctrl-C

def test_ctrl_c_while_the_commands_are_still_being_imported() -> None:
    """-X importtime makes Python say each import as it happens: the signal is sent as protobuf is imported, the
    first of the half-second of heavy imports (protobuf, gRPC, the engine) of the command modules."""
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "clients.cli", "check", str(EXAMPLE)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, start_new_session=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "google.protobuf" in line:  # the first heavy import (the handler is installed before it)
            break
    os.killpg(proc.pid, signal.SIGINT)
    out, rest = proc.communicate(timeout=60)
    err = "".join(seen) + rest
    assert_clean_interrupt(proc.returncode, err)
    assert "violation" not in out  # it ended there, before checking anything


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_in_cheats_ends_it_cleanly(jobs: str) -> None:
    """In the process (the engine takes Ctrl-C between games) and with worker processes (which ignore SIGINT
    and are ended by the parent): `interrupted`, exit 130, no traceback from any process, no abort."""
    proc = start("cheats", "--games", "40", "--players", "8", "--jobs", jobs)
    assert proc.stderr is not None
    # The progress line after the first game: the engine (or every worker) is busy with the next ones.
    line = proc.stderr.readline()
    while "RuntimeWarning" in line or line.startswith("  "):  # an engine run from its source says so first
        line = proc.stderr.readline()
    assert "cheats: 1/" in line
    code, out, err = interrupted(proc)
    assert_clean_interrupt(code, err)
    assert "missed" not in out  # no report: it was interrupted


def _interrupting_game(item: int) -> int:
    """A stand-in for one game of the engine that gets Ctrl-C in its middle (the first one)."""
    if item == 0:
        os.kill(os.getpid(), signal.SIGINT)
    return item


def test_the_engine_in_process_is_never_interrupted_inside_a_game() -> None:
    """KeyboardInterrupt raised inside the compiled engine can abort the process ("fatal: out of memory"):
    in `cheats` (and `check`, `selfplay`) Ctrl-C is taken between two games instead."""
    from clients.commands.cheats import each_game

    finished: list[int] = []
    with pytest.raises(KeyboardInterrupt):
        for result in each_game(_interrupting_game, [0, 1, 2], jobs=1, chunksize=1):
            finished.append(result)
    assert finished == [0]  # the game that got the signal ended; the next was not started


def _sigint_handler_here(item: int) -> bool:
    return bool(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)


def test_cheats_workers_leave_ctrl_c_to_their_parent() -> None:
    from clients.commands.cheats import each_game

    assert list(each_game(_sigint_handler_here, [0, 1, 2, 3], jobs=2, chunksize=1)) == [True] * 4


def test_ctrl_c_in_check_between_files(tmp_path: Path) -> None:
    for i in range(200):
        shutil.copy(EXAMPLE, tmp_path / f"g{i:03d}.json")
    proc = start("check", str(tmp_path))
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert "g000.json" in first
    code, out, err = interrupted(proc)
    assert_clean_interrupt(code, err)
    assert "checked 200 file(s)" not in out


# ---------------------------------------------------------------------------------------- discovering it

def test_a_bare_sgs_verify_lists_every_command_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    for command in ("check", "selfplay", "import", "cheats", "serve", "submit", "show", "list", "token"):
        assert any(line.split()[:1] == [command] and len(line.split()) > 1 for line in out.splitlines()), out
    assert "--help" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == engine_version()


# ---------------------------------------------------------------------------------------- files

def test_check_takes_folders_and_jobs(tmp_path: Path) -> None:
    games = tmp_path / "games"
    (games / "deeper").mkdir(parents=True)
    shutil.copy(EXAMPLE, games / "a.json")
    shutil.copy(ROOT / "docs" / "examples" / "short_game.json", games / "deeper" / "b.json")
    (games / "notes.txt").write_text("not a log")
    one = run("check", "--json", str(games))
    assert one.returncode == 1, one.stderr
    reports = json.loads(one.stdout)
    assert [r["file"] for r in reports] == [str(games / "a.json"), str(games / "deeper" / "b.json")]
    two = run("check", "--json", "--jobs", "2", str(games), str(EXAMPLE))
    assert two.returncode == 1, two.stderr
    assert [r["file"] for r in json.loads(two.stdout)] == [*(r["file"] for r in reports), str(EXAMPLE)]
    assert json.loads(two.stdout)[:2] == reports
    empty = tmp_path / "empty"
    empty.mkdir()
    none = run("check", str(empty))
    assert none.returncode == 2
    assert "no log in it" in none.stderr and "Traceback" not in none.stderr


def test_freekill_records_are_told_by_their_content(tmp_path: Path) -> None:
    transcript = FREEKILL / "fk_rand_p4_35.jsonl"
    renamed = tmp_path / "room.json"  # the name says nothing
    shutil.copy(transcript, renamed)
    compressed = next((FREEKILL / "transcripts").glob("*.jsonl.xz"))
    out = run("check", str(renamed), str(compressed))
    assert out.returncode in (0, 1), out.stderr
    assert "origin: freekill" in out.stdout and "2 readable" in out.stdout
    # Told to read our logs only, it says what the file looks like.
    ours = run("check", "--from", "sgs-verify", str(renamed))
    assert ours.returncode == 2
    assert "this looks like a FreeKill transcript: use --from freekill" in ours.stderr
    assert sniff(transcript.read_bytes()) == TRANSCRIPT
    assert sniff(compressed.read_bytes()) == TRANSCRIPT
    assert sniff(EXAMPLE.read_bytes()) is None
    assert sniff(b'{"header": {}}\n') is None


def test_a_client_replay_is_told_by_its_content() -> None:
    from importers.freekill.fkrep import qcompress

    assert sniff(qcompress(b"\xa1\x61a\x01" * 10)) == FKREP


# ---------------------------------------------------------------------------------------- first run

def test_the_project_metadata_raises_no_setuptools_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    """setuptools warned at every install that `project.license` as a TOML table is deprecated."""
    import warnings

    pytest.importorskip("setuptools")  # (a venv of Python 3.12+ may have none; the build installs its own)
    from setuptools.config.pyprojecttoml import apply_configuration  # type: ignore[import-untyped]
    from setuptools.dist import Distribution  # type: ignore[import-untyped]

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert isinstance(project["license"], str)
    monkeypatch.chdir(ROOT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        apply_configuration(Distribution(), ROOT / "pyproject.toml")


def test_freekill_report_says_its_deviations_are_an_input(tmp_path: Path) -> None:
    """It ended in a traceback when --deviations named a file that is not there (it reads like an output)."""
    tool = [sys.executable, str(ROOT / "tools" / "freekill_report.py")]
    missing = subprocess.run([*tool, str(FREEKILL / "transcripts"), "--deviations", str(tmp_path / "deviations.jsonl")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "it is an input" in missing.stderr and "tests/data/freekill/deviations.jsonl" in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"game": "x.jsonl", "seq": 1}\nnot json\n')
    garbled = subprocess.run([*tool, str(FREEKILL / "fk_rand_p4_35.jsonl"), "--deviations", str(bad)],
                             capture_output=True, text=True, timeout=120)
    assert garbled.returncode == 2 and "line 2: not a deviation" in garbled.stderr and "Traceback" not in garbled.stderr
