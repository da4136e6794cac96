"""A server's record (GameOptions.server_record, docs/rules.md#server-records): an illegal decision the server carried
out is flagged and carried out, so the rest of the record is judged against the game that was played.

The scenarios in tests/scenarios/server_record/ each hold one such decision followed by what the server did next, and
expect exactly its violation (tests/test_scenarios.py). Here the same logs are judged both ways: as a server's record,
the decision's violation is applied (HANDLING_APPLIED); as an ordinary log, the same decision is rejected, and the
events the server's game went on with no longer fit — the flood that a server's record must never show."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf import json_format

from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify

SCENARIOS = Path(__file__).parent / "scenarios" / "server_record"
FILES = sorted(SCENARIOS.glob("*.json"))


def load(path: Path) -> tuple[pb.GameLog, list[tuple[int, str]]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    log = json_format.ParseDict(doc["log"], pb.GameLog())
    return log, [(v["index"], v["code"]) for v in doc["expect"]["violations"]]


def violations(replay: apb.AnnotatedReplay) -> list[tuple[int, str, int]]:
    return [(a.index, v.code, v.handling) for a in replay.annotations for v in a.violations]


def test_there_are_server_record_scenarios() -> None:
    assert len(FILES) >= 10


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_the_illegal_decision_is_carried_out_in_a_server_record_and_rejected_elsewhere(path: Path) -> None:
    log, expected = load(path)
    assert log.header.options.server_record
    [(index, code)] = expected
    carried = verify(log)
    assert violations(carried) == [(index, code, apb.HANDLING_APPLIED)]
    assert next(a for a in carried.annotations if a.index == index and not a.derived).applied

    log.header.options.server_record = False
    rejected = verify(log)
    found = violations(rejected)
    assert found[0] == (index, code, apb.HANDLING_REJECTED)
    assert not next(a for a in rejected.annotations if a.index == index and not a.derived).applied
    # What the server's game went on with does not fit a game without the decision.
    assert len(found) > 1, found


def test_the_flag_is_not_part_of_the_game() -> None:
    """Like `outcomes`, the flag says how the game was recorded: a legal game gives the same digests with it or
    without it."""
    log, _ = load(SCENARIOS / "slash_two_targets.json")
    legal = pb.GameLog()
    legal.CopyFrom(log)
    del legal.events[:]
    legal.events.add().end_play_phase.seat = 0
    flagged = verify(legal)
    legal.header.options.server_record = False
    plain = verify(legal)
    assert flagged.final_digest == plain.final_digest
    assert [a.digest for a in flagged.annotations] == [a.digest for a in plain.annotations]
