"""The hostile harness's verdicts (tools/hostile/__main__.py; issue 43): an attack that failed on a deadline
while the machine was busy is said to be so, with the load, and run once more; its second run is its verdict;
failing twice so is "undecided, at load" (exit 3), never a bare NOT HELD. A new user's run at load 8 had said
`NOT HELD: inflating-record` (one DEADLINE_EXCEEDED in 120 s), and passed at load 3.6. No server here: the rows
are made up, the attack's runs counted."""

from __future__ import annotations

from typing import Any

import pytest

from tools.hostile import __main__ as harness
from tools.hostile.base import Attack, Context, Outcome

BOUND = (500.0, 1300.0)
ATTACK = Attack("inflating-record", 3, lambda ctx: Outcome("", "", True))
HELD = Outcome("4 uploads", "4 INVALID_ARGUMENT in 3.0 s", True)
DEADLINE = Outcome("4 uploads", "3 INVALID_ARGUMENT, 1 DEADLINE_EXCEEDED in 120.0 s", False)
REFUSED_WRONG = Outcome("4 uploads", "4 OK in 3.0 s", False)


def row(outcome: Outcome, load: float, *, slowest: float = 0.1, failures: list[str] | None = None,
        worker_mib: float = 200.0) -> harness.Row:
    return harness.Row(ATTACK, outcome, 10.0, 20, failures or [], slowest, 100.0, worker_mib, load)


@pytest.fixture(autouse=True)
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(harness, "cpus", lambda: 2)


def test_a_deadline_at_load_is_told_from_a_hole() -> None:
    assert row(DEADLINE, 8.0).at_load(BOUND)
    assert not row(DEADLINE, 1.5).at_load(BOUND)  # a quiet machine: the deadline is the server's
    assert not row(REFUSED_WRONG, 8.0).at_load(BOUND)  # not a deadline: a hole, whatever the load
    assert not row(DEADLINE, 8.0, worker_mib=2000.0).at_load(BOUND)  # over the memory bound: a hole
    assert row(HELD, 8.0, slowest=7.0).at_load(BOUND)  # the probe slower than PROBE_SLOW_SECONDS
    assert row(HELD, 8.0, failures=["DEADLINE_EXCEEDED: "]).at_load(BOUND)
    assert not row(HELD, 8.0, failures=["PERMISSION_DENIED: no"]).at_load(BOUND)
    assert not row(HELD, 8.0).failed(BOUND)


def runs(monkeypatch: pytest.MonkeyPatch, *rows: harness.Row) -> list[int]:
    """The attack's runs give ``rows`` in turn; the list counts them."""
    given = list(rows)
    count: list[int] = []

    def run_attack(attack: Attack, ctx: Context, replay_id: str, game: bytes) -> harness.Row:
        count.append(1)
        return given.pop(0)

    monkeypatch.setattr(harness, "run_attack", run_attack)
    return count


CTX: Any = None


def test_a_deadline_at_load_is_run_once_more_and_that_run_is_the_verdict(monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    count = runs(monkeypatch, row(DEADLINE, 8.0), row(HELD, 7.5))
    got = harness.judged(ATTACK, CTX, "", b"", BOUND)
    assert len(count) == 2 and got.outcome.held
    assert got.first_try.startswith("first run: not held on a deadline at load 8.0 on 2 CPUs (3 INVALID_ARGUMENT, "
                                    "1 DEADLINE_EXCEEDED")
    assert "inflating-record: first run: not held on a deadline at load 8.0 on 2 CPUs" in capsys.readouterr().out
    assert harness.verdict(got, BOUND) == "yes (second run)"
    text, status = harness.summary([got], BOUND)
    assert status == 0 and "(inflating-record: held when run again, after a deadline at load)" in text
    assert "| yes (second run) |" in harness.table([got], BOUND)


def test_failing_twice_at_load_is_undecided_not_a_bare_not_held(monkeypatch: pytest.MonkeyPatch) -> None:
    runs(monkeypatch, row(DEADLINE, 8.0), row(DEADLINE, 7.9))
    got = harness.judged(ATTACK, CTX, "", b"", BOUND)
    assert harness.verdict(got, BOUND) == "NO at load 7.9 on 2 CPUs, twice (a deadline: may be the load)"
    text, status = harness.summary([got], BOUND)
    assert status == harness.EXIT_AT_LOAD == 3
    assert "NOT HELD" not in text
    assert text.startswith("\nUNDECIDED, AT LOAD: inflating-record (load 7.9): each failed twice on a deadline while "
                           "the machine ran more than its 2 CPUs could")


def test_a_hole_is_not_held_at_any_load_and_a_quiet_deadline_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    count = runs(monkeypatch, row(REFUSED_WRONG, 8.0))
    hole = harness.judged(ATTACK, CTX, "", b"", BOUND)
    assert len(count) == 1
    count = runs(monkeypatch, row(DEADLINE, 1.0))
    quiet = harness.judged(ATTACK, CTX, "", b"", BOUND)
    assert len(count) == 1 and harness.verdict(quiet, BOUND) == "NO"
    runs(monkeypatch, row(DEADLINE, 8.0), row(DEADLINE, 1.0))  # the second run on a quieter machine: the server's
    again = harness.judged(ATTACK, CTX, "", b"", BOUND)
    text, status = harness.summary([hole, quiet, again], BOUND)
    assert status == harness.EXIT_NOT_HELD == 1
    assert text == "\nNOT HELD: inflating-record, inflating-record, inflating-record"
