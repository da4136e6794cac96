"""`sgs-verify check --max-events`: the offline check refuses a log with more events than the limit,
as the service does, reporting it like an unreadable file (exit 2) without verifying it.

The limits here are small (a few events), so no large files are needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clients import cli
from service.config import Limits
from sgsverify.v1 import game_log_pb2 as pb
from tests.test_malformed import make_log, run_cli, valid_binary_log
from verifier.logio import MAX_LOG_EVENTS

EVENTS_IN_VALID_LOG = 4  # valid_binary_log(): a clean game of 4 events


@pytest.fixture
def clean(tmp_path: Path) -> Path:
    path = tmp_path / "clean.pb"
    path.write_bytes(valid_binary_log())
    return path


def empty_events_log(tmp_path: Path, count: int, name: str = "empty.pb") -> Path:
    """A readable log of ``count`` empty events (each MALFORMED_EVENT when verified)."""
    log = make_log([])
    log.events.extend([pb.Event()] * count)
    path = tmp_path / name
    path.write_bytes(log.SerializeToString())
    return path


def test_the_default_is_the_services_default() -> None:
    args = cli.build_parser().parse_args(["check", "game.pb"])
    assert args.max_events == MAX_LOG_EVENTS == Limits().max_events_per_game == 100_000


def test_a_log_just_over_the_limit_is_refused(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    limit = EVENTS_IN_VALID_LOG - 1
    code, out, err = run_cli(["check", "--max-events", str(limit), str(clean)], capsys)
    assert code == 2
    assert (f"{clean}: unreadable: the log has {EVENTS_IN_VALID_LOG} events; the limit is {limit} per log "
            "(--max-events N raises it); not verified") in err
    assert "checked 1 file(s): 0 readable, 1 unreadable, 0 violation(s), 0 events" in out
    assert "Traceback" not in out + err


def test_a_log_at_the_limit_is_verified(clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["check", "--max-events", str(EVENTS_IN_VALID_LOG), str(clean)], capsys)
    assert code == 0, out + err
    assert f"{clean}: {EVENTS_IN_VALID_LOG} events, 0 violation(s)" in out
    assert "1 readable, 0 unreadable" in out
    assert err == ""


def test_nothing_is_verified_in_a_refused_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A log of empty events would give MALFORMED_EVENT verdicts (exit 1) if it were verified."""
    path = empty_events_log(tmp_path, 11)
    code, out, err = run_cli(["check", "--max-events", "10", str(path)], capsys)
    assert code == 2
    assert "MALFORMED_EVENT" not in out + err
    assert "the log has 11 events; the limit is 10 per log" in err
    code, out, _ = run_cli(["check", "--max-events", "11", str(path)], capsys)
    assert code == 1
    assert "MALFORMED_EVENT" in out


def test_other_files_are_still_checked(tmp_path: Path, clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long = empty_events_log(tmp_path, 50)
    code, out, err = run_cli(["check", "--max-events", "10", str(long), str(clean)], capsys)
    assert code == 2
    assert "checked 2 file(s): 1 readable, 1 unreadable, 0 violation(s), 4 events" in out
    assert f"{clean}: 4 events, 0 violation(s)" in out
    assert f"{long}: unreadable: the log has 50 events; the limit is 10 per log" in err


def test_json_reports_it_as_not_readable(tmp_path: Path, clean: Path, capsys: pytest.CaptureFixture[str]) -> None:
    long = empty_events_log(tmp_path, 11)
    code, out, _ = run_cli(["check", "--json", "--max-events", "10", str(long), str(clean)], capsys)
    assert code == 2
    reports = json.loads(out)
    assert reports[0] == {"file": str(long), "readable": False,
                          "error": "the log has 11 events; the limit is 10 per log (--max-events N raises it); "
                                   "not verified"}
    assert reports[1]["file"] == str(clean) and reports[1]["readable"] is True


@pytest.mark.parametrize("value", ["0", "-1", "many", "1.5"])
def test_max_events_must_be_a_positive_whole_number(value: str, clean: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["check", "--max-events", value, str(clean)], capsys)
    assert code == 2
    assert "usage: sgs-verify check" in err
    assert "argument --max-events" in err
    assert out == ""  # nothing was checked
