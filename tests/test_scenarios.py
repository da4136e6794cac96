"""Hand-written rule scenarios (tests/scenarios/**/*.json), each asserting exact verdicts.

A scenario file is JSON:

    {
      "description": "what it shows",
      "rule": "docs/rules.md#slash-limit",   # where the rule is written: docs/FILE.md#anchor, "; "-separated
      "log": { …a GameLog in the protobuf JSON mapping… },
      "expect": {
        "violations": [{"index": 7, "code": "SLASH_LIMIT"}],   # exactly these, in order
        "derived_violations": [...],                          # optional: on derived outcomes
        "header_violations": ["BAD_ROLES"],                   # optional, default none
        "header_notices": ["HOUSE_ROLE_TABLE"],               # optional, default none
        "finished": true, "side": "SIDE_REBELS",              # optional
        "scores": [0, 3, 0, 1],                               # optional: result.scores, seat by seat
        "followed": true                                      # optional, default true
      }
    }

"violations" lists every violation on log events as (index, code), in order; violations
on derived outcomes (complete logs) are listed under "derived_violations" with the index
of the log event they were derived before. An empty list asserts the log is clean.
"header_violations" and "header_notices" list the codes of AnnotatedReplay.header_violations
and .header_notices, exactly and in order; notices are never counted as violations (every
scenario checks that violation_count and violation_codes hold the violations alone).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify

SCENARIOS = Path(__file__).parent / "scenarios"
FILES = sorted(SCENARIOS.rglob("*.json"))


def load(path: Path) -> tuple[dict[str, Any], pb.GameLog]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    log = json_format.ParseDict(doc["log"], pb.GameLog())
    return doc, log


def explain(replay: apb.AnnotatedReplay) -> str:
    lines = [f"result: {replay.result}", f"followed={replay.followed} {replay.stopped_reason}"]
    for v in replay.header_violations:
        lines.append(f"header {v.code}: {v.message}")
    for n in replay.header_notices:
        lines.append(f"notice {n.code}: {n.message}")
    for a in replay.annotations:
        for v in a.violations:
            lines.append(f"{'D' if a.derived else ' '} {a.index} {v.code}: {v.message}")
    return "\n".join(lines)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(SCENARIOS)) for p in FILES])
def test_scenario(path: Path) -> None:
    doc, log = load(path)
    expect = doc["expect"]
    replay = verify(log)
    got = [{"index": a.index, "code": v.code} for a in replay.annotations if not a.derived for v in a.violations]
    got_derived = [{"index": a.index, "code": v.code} for a in replay.annotations if a.derived
                   for v in a.violations]
    got_header = [v.code for v in replay.header_violations]
    why = explain(replay)
    assert got_header == expect.get("header_violations", []), why
    assert [n.code for n in replay.header_notices] == expect.get("header_notices", []), why
    # Notices are not violations: the count and the codes are the violations' alone.
    assert replay.violation_count == len(got) + len(got_derived) + len(got_header), why
    codes = {str(v["code"]) for v in got + got_derived} | set(got_header)
    assert list(replay.violation_codes) == sorted(codes), why
    assert got == expect["violations"], why
    assert got_derived == expect.get("derived_violations", []), why
    assert replay.followed == expect.get("followed", True), why
    if "finished" in expect:
        assert replay.result.finished == expect["finished"], why
    if "side" in expect:
        assert pb.Side.Name(replay.result.side) == expect["side"], why
    if "winners" in expect:
        assert list(replay.result.winners) == expect["winners"], why
    if "scores" in expect:
        assert [s.score for s in replay.result.scores] == expect["scores"], why
        assert [s.seat for s in replay.result.scores] == list(range(len(expect["scores"]))), why


def test_there_are_scenarios() -> None:
    assert len(FILES) >= 1
