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


def deck_names() -> dict[str, int]:
    """One card id of each name of the 160-card deck (standard and 军争)."""
    names: dict[str, int] = {}
    for table in ("cards_standard.tsv", "cards_maneuvering.tsv"):
        rows = (Path(__file__).parents[1] / "verifier" / "data" / table).read_text(encoding="utf-8").splitlines()[1:]
        for row in rows:
            cid, _, name = row.split("\t")[:3]
            names.setdefault(name, int(cid))
    return names


TARGETS = [(), (0,), (1,), (2,), (1, 2), (0, 1), (1, 1), (1, 2, 3)]


@pytest.mark.parametrize("name", sorted(deck_names()))
def test_every_card_at_any_targets_is_judged_in_a_server_record(name: str) -> None:
    """Whatever targets a client names, each card's use is judged and the game goes on: carried out, or rejected
    where its settlement cannot take them — never an engine fault (which would stop the following)."""
    card = deck_names()[name]
    hand = [*[c for c in (14, 16, 17, 57) if c != card][:3], card]
    for targets in TARGETS:
        log = json_format.ParseDict({"header": {
            "ruleset": "identity/1", "mode": "MODE_IDENTITY", "seed": "7",
            "options": {"generals": "GENERALS_MODE_WHITE", "packages": ["maneuvering"], "serverRecord": True},
            "seats": [{"role": "ROLE_LORD"}, {"role": "ROLE_REBEL"}, {"role": "ROLE_LOYALIST"}, {"role": "ROLE_SPY"}],
            "setup": {"stackedTop": True, "startingHands": [
                {"seat": 0, "cards": hand}, {"seat": 1, "cards": [18, 19, 84, 85] if card not in (18, 19, 84, 85)
                                             else [20, 21, 86, 88]},
                {"seat": 2, "cards": [59, 61, 65, 67] if card not in (59, 61, 65, 67) else [69, 71, 77, 104]},
                {"seat": 3, "cards": [30, 33, 35, 37] if card not in (30, 33, 35, 37) else [39, 41, 43, 44]}]}},
            "events": [{"useCard": {"seat": 0, "card": {"id": card}, "targets": list(targets)}},
                       {"endPlayPhase": {"seat": 0}}]}, pb.GameLog())
        replay = verify(log)
        assert replay.followed, f"{name} at {targets}: {replay.stopped_reason}"
