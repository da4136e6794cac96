"""Every command of README.md runs as written (issue 29: several failed on a fresh clone).

The ```sh and ```python blocks are read from README.md, in order, and run from a scratch folder that looks like
a fresh checkout (docs/, tests/, tools/, bench/ of this tree; `.venv/bin/sgs-verify` and `.venv/bin/python`
running this tree's code), beside a real `sgs-verify serve` that the client commands reach as `make run`'s
would ($SGS_VERIFY_SERVER, and $SGS_VERIFY_DATA for the commands that open its database directly).

A command may exit 0 or 1 (1: violations found, which some examples are about) but never 2 or more, and
never with a traceback. Which are not run as written, and why:
- a line whose comment says `long run` (minutes of work; marked so in the README for its readers too): with
  `--games N` it is run with `--games 1` (its paths and options are still checked), otherwise skipped;
- `make run` (this test starts the same server itself) and `make test` (the test suite this test is part of);
- a line that says it `needs PostgreSQL`, where none runs (CI starts one);
- a line whose comment says it `runs until stopped` (a server, a bridge: the README's reader stops it).
Any other line, including one added later, is run.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.service.conftest import pg_user
from tests.service.test_service_cli import ServeProcess

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
LINKED = ("docs", "tests", "tools", "bench", "proto")
NOT_RUN = {"make run": "starts the server this test starts itself", "make test": "the test suite this test is in"}
LONG = re.compile(r"#.*\blong run\b")
UNTIL_STOPPED = re.compile(r"#.*\bruns until stopped\b")


@dataclass(frozen=True)
class Command:
    line: str
    block: int
    language: str


def readme_commands() -> list[Command]:
    """The commands of the README's ```sh blocks (one per line; `\\` continues a line, `#` lines are comments) and
    each ```python block whole, in order."""
    commands: list[Command] = []
    for number, (language, body) in enumerate(re.findall(r"^```(sh|python)\n(.*?)^```", README.read_text(),
                                                         flags=re.S | re.M)):
        if language == "python":
            commands.append(Command(body, number, language))
            continue
        pending = ""
        for raw in body.splitlines():
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
            if raw.rstrip().endswith("\\"):
                pending += raw.rstrip()[:-1] + " "
                continue
            commands.append(Command(pending + raw, number, language))
            pending = ""
    return commands


def as_run(command: Command) -> tuple[str | None, str]:
    """The command line to run (None: skipped) and why it differs from the README's, if it does."""
    words = shlex.split(command.line, comments=True)
    head = " ".join(words[:2])
    if head in NOT_RUN:
        return None, NOT_RUN[head]
    if UNTIL_STOPPED.search(command.line):
        return None, "a server: it runs until stopped"
    if "needs PostgreSQL" in command.line and pg_user() is None:
        return None, "needs PostgreSQL, which is not running here"
    if LONG.search(command.line):
        if "--games" not in words:
            return None, "a long run"
        i = words.index("--games")
        return shlex.join([*words[:i + 1], "1", *words[i + 2:]]), "a long run: with --games 1"
    return command.line, ""


def fake_checkout(folder: Path) -> dict[str, str]:
    """A folder where the README's relative paths work; the environment to run its commands in."""
    for name in LINKED:
        (folder / name).symlink_to(ROOT / name)
    bin_ = folder / ".venv" / "bin"
    bin_.mkdir(parents=True)
    for name, target in (("sgs-verify", f'exec "{sys.executable}" -m clients.cli "$@"'),
                         ("python", f'exec "{sys.executable}" "$@"')):
        (bin_ / name).write_text(f"#!/bin/sh\n{target}\n")
        (bin_ / name).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SGS_VERIFY_")}
    env["PYTHONPATH"] = str(ROOT)
    env["XDG_DATA_HOME"] = str(folder / "xdg")
    return env


def test_the_readme_has_commands_and_marks_its_long_runs() -> None:
    commands = readme_commands()
    assert len(commands) > 20
    skipped = [c.line for c in commands if as_run(c)[0] is None]
    # Only what the rules above skip: make, a benchmark with no --games, a server, PostgreSQL where none runs.
    assert all(re.search(r"^make |bench/|runs until stopped|needs PostgreSQL", line) for line in skipped), skipped


@pytest.mark.timeout(1200)  # some 40 commands, a few of them seconds of self-play; CI's machine is shared
def test_every_readme_command_runs_as_written(tmp_path: Path) -> None:
    env = fake_checkout(tmp_path)
    data = tmp_path / "server-data"
    server = ServeProcess(["--data-dir", str(data), "--examples"], env)
    failures: list[str] = []
    ran = 0
    try:
        server.wait_for_line("example games")
        env = {**env, "SGS_VERIFY_SERVER": server.address, "SGS_VERIFY_DATA": str(data)}
        for command in readme_commands():
            line, why = as_run(command)
            if line is None:
                print(f"not run ({why}): {command.line}")
                continue
            argv = [".venv/bin/python", "-c", line] if command.language == "python" else ["/bin/sh", "-c", line]
            done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
            ran += 1
            if done.returncode not in (0, 1) or "Traceback" in done.stderr:
                failures.append(f"{command.line}\n  exit {done.returncode}{f' ({why})' if why else ''}\n"
                                f"  {done.stderr.strip()[-1500:]}")
    finally:
        server.kill()
    assert not failures, "\n".join(failures)
    assert ran > 20


@pytest.mark.parametrize("line, runs", [
    ("make run    # the service", None),
    (".venv/bin/sgs-verify cheats --games 200 --players 8 --seed 1    # --kinds (a long run: minutes)",
     ".venv/bin/sgs-verify cheats --games 1 --players 8 --seed 1"),
    (".venv/bin/python bench/speed.py     # or: make bench (a long run: minutes)", None),
    (".venv/bin/sgs-verify serve --http 127.0.0.1:8080   # runs until stopped", None),
    (".venv/bin/sgs-verify check games/   # 50 clean games", ".venv/bin/sgs-verify check games/   # 50 clean games"),
])
def test_which_lines_are_run_and_how(line: str, runs: str | None) -> None:
    assert as_run(Command(line, 0, "sh"))[0] == runs


# A placeholder a reader would have to replace: a word in capitals standing for a value, an ellipsis, <angle> names.
PLACEHOLDER = re.compile(r"\b(HOST|PORT|REV|URL|NAME|PATH|FILE|ID|TOKEN)\b|…|<[a-z][a-z -]*>")


def test_the_commands_in_the_prose_name_real_values() -> None:
    """The commands quoted in the README's prose (`sgs-verify …`, `.venv/bin/…` in backquotes) are not run here
    (a FreeKill server's log, a PostgreSQL database of the reader's), but they name real values, never a
    placeholder to fill in."""
    prose = re.sub(r"^```.*?^```", "", README.read_text(), flags=re.S | re.M)
    quoted = [" ".join(span.split()) for span in re.findall(r"`([^`]+)`", prose)]
    commands = [q for q in quoted if q.startswith(("sgs-verify ", ".venv/bin/", "make "))]
    assert len(commands) >= 5
    assert [c for c in commands if PLACEHOLDER.search(c)] == []
