"""Regression tests for the audit's offline findings: logs read by parsing, not by their first byte (D1);
every input gets a clear error, never a traceback (D2); a file over the size limit refused before it is
read (D16); `cheats` shows its progress (D18); every command and option has a help text (D20)."""

from __future__ import annotations

import argparse
import json
import tracemalloc
from pathlib import Path

import pytest

from clients import cli
from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb
from verifier import LogFormatError, load_log, logio, verify


def json_looking_binary_log() -> bytes:
    """A complete self-play game whose binary encoding begins "\\n{" (its header is 0x7b = 123 bytes long):
    after white space, it looks like JSON."""
    log = play_game(5, 4)
    log.header.recorder = ""
    pad = 123 - len(log.header.SerializeToString()) - 2  # field 7 tag + length byte
    assert 0 <= pad < 128
    log.header.recorder = "r" * pad
    data = log.SerializeToString(deterministic=True)
    assert data[:2] == b"\n{"
    return data


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------------------------- D1

def test_a_binary_log_that_begins_like_json_is_read_as_binary() -> None:
    data = json_looking_binary_log()
    log, fmt = logio.parse_log(data)
    assert fmt == "binary"
    assert log == pb.GameLog.FromString(data)
    assert verify(load_log(data)).violation_count == 0


def test_the_audits_self_play_game_is_readable() -> None:
    """`selfplay --games 1 --players 8 --seed 4398046511104` writes one of them."""
    data = play_game(4398046511104, 8).SerializeToString(deterministic=True)
    assert data.lstrip()[:1] == b"{"
    assert logio.parse_log(data)[1] == "binary"


def test_json_is_still_json_and_junk_still_says_json() -> None:
    log = play_game(5, 4)
    from google.protobuf import json_format

    text = json_format.MessageToJson(log).encode()
    assert logio.parse_log(text) == (log, "json")
    with pytest.raises(LogFormatError, match="not a GameLog in JSON"):
        load_log(b'{"header": {"seed": "x"}}')


def test_check_reads_the_json_looking_binary_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "game.pb"
    path.write_bytes(json_looking_binary_log())
    code, out, err = run_cli(["check", str(path)], capsys)
    assert code == 0, err
    assert "1 readable, 0 unreadable" in out


# ---------------------------------------------------------------------------------------- D2

LONE_SURROGATE = b'{"header": {}, "events": "\\ud800"}'


def test_a_lone_surrogate_is_a_printable_error() -> None:
    with pytest.raises(LogFormatError) as caught:
        load_log(LONE_SURROGATE)
    message = str(caught.value)
    message.encode("utf-8")  # no lone surrogate left in it
    assert "\\ud800" in message


@pytest.mark.parametrize("data", [
    LONE_SURROGATE,
    b'{"header": {"seats": [{"player": "\\udfff"}]}}',
    b'{"header": {"ruleset": "\\ud83d"}, "events": []}',
    b'{"header": {}, "events": [{"useCard": {"seat": "\\ud800\\ud800"}}]}',
])
def test_check_json_reports_every_file_despite_surrogates(data: bytes, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(data)
    good = tmp_path / "good.pb"
    good.write_bytes(play_game(5, 4).SerializeToString())
    code, out, err = run_cli(["check", "--json", str(bad), str(good)], capsys)
    assert code == 2
    assert "Traceback" not in out + err
    reports = json.loads(out)
    assert [r["readable"] for r in reports] == [False, True]
    assert "not a GameLog in JSON" in reports[0]["error"]


def test_an_error_message_is_never_longer_than_the_limit() -> None:
    with pytest.raises(LogFormatError) as caught:
        load_log(b'{"header": {"ruleset": 5, "recorder": "' + b"x" * 100_000 + b'"}, "events": "' + b"y" * 100_000
                 + b'"}')
    assert len(str(caught.value)) <= 1000


# ---------------------------------------------------------------------------------------- D16

def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)  # no disk used: a hole of zeros
    return path


@pytest.mark.parametrize("source", ["sgs-verify", "freekill"])
def test_check_refuses_a_huge_file_without_reading_it(source: str, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    huge = _sparse(tmp_path / "huge.pb", 300 * 1024 * 1024)
    good = tmp_path / "good.pb"
    good.write_bytes(play_game(5, 4).SerializeToString())
    files = [str(huge)] if source == "freekill" else [str(huge), str(good)]
    tracemalloc.start()
    try:
        code, out, _ = run_cli(["check", "--json", "--from", source, *files], capsys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 2
    assert peak < 32 * 1024 * 1024, f"{peak} bytes allocated: the file was read"
    reports = json.loads(out)
    assert reports[0] == {"file": str(huge), "readable": False,
                          "error": "the file is 314572800 bytes; the limit is 67108864; not read"}
    assert [r["readable"] for r in reports[1:]] == [True] * (len(files) - 1)


def test_a_pipe_is_read_only_up_to_the_limit(tmp_path: Path) -> None:
    import os
    import threading

    read_end, write_end = os.pipe()
    chunk = b"\0" * (1 << 20)

    def feed() -> None:
        with open(write_end, "wb") as w:
            try:
                for _ in range(200):  # 200 MB offered, far more than the 64 MiB limit
                    w.write(chunk)
            except BrokenPipeError:
                pass

    threading.Thread(target=feed, daemon=True).start()
    with pytest.raises(LogFormatError, match="more than 67108864 bytes"):
        logio.read_file(f"/dev/fd/{read_end}")
    os.close(read_end)


# ---------------------------------------------------------------------------------------- D18

def test_cheats_shows_its_progress(capsys: pytest.CaptureFixture[str]) -> None:
    """Not a terminal (captured): a line at the first game and each tenth."""
    code, out, err = run_cli(["cheats", "--games", "3", "--players", "4", "--seed", "3", "--kinds", "second_slash"],
                             capsys)
    assert code == 0 and "OK: 0 missed" in out
    lines = err.splitlines()
    assert [line.split(",")[0] for line in lines] == ["cheats: 1/3 games", "cheats: 2/3 games", "cheats: 3/3 games"]
    code, out, err = run_cli(["cheats", "--consistent", "--games", "2", "--players", "4", "--seed", "3", "--kinds",
                              "second_slash", "--json"], capsys)
    assert code == 0 and json.loads(out)["ok"] is True
    assert "cheats: 2/2 games" in err


def test_progress_lines_every_tenth() -> None:
    import io

    from clients.progress import GameProgress

    stream = io.StringIO()
    progress = GameProgress(100, "cheats", stream=stream)
    for _ in range(100):
        progress.advance()
    progress.close()
    done = [int(line.split()[1].split("/")[0]) for line in stream.getvalue().splitlines()]
    assert done == [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]


# ---------------------------------------------------------------------------------------- D20

def _commands(parser: argparse.ArgumentParser, name: str = "sgs-verify") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _commands(sub, f"{name} {sub_name}")
    return found


def test_every_command_and_option_has_a_help_text() -> None:
    missing = []
    for name, parser in _commands(cli.build_parser()):
        if not parser.description:
            missing.append(f"{name}: no description")
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
                continue
            if not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}: no help")
    assert not missing, "\n".join(missing)
