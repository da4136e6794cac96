"""Who made a decision (Event.source: the player's client, an AI, the default on a timeout) is carried into the
annotated replay (Annotation.source) of that decision only, and changes nothing else: every status, violation and
digest is the one the same log gives without sources (docs/log-format.md#decision-source)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from storage.store import DECISION_SOURCES
from verifier import Verifier, load_log, text, verify
from verifier.engine.requests import DECISION_KINDS
from verifier.state import annotation_json, source_counts, violations_by_source

ROOT = Path(__file__).resolve().parent.parent
SECOND_SLASH = ROOT / "docs" / "examples" / "second_slash.json"
GOLDEN_LOGS = sorted((ROOT / "tests" / "golden" / "logs").glob("*.json"))
SOURCES = (pb.DECISION_SOURCE_CLIENT, pb.DECISION_SOURCE_AI, pb.DECISION_SOURCE_DEFAULT)

# docs/examples/second_slash.json's decisions, each said to be made by someone: the second 杀 (event 3,
# SLASH_LIMIT) by seat 0's own client, the third (event 5, SLASH_LIMIT and OUT_OF_RANGE) by an AI standing in.
ATTRIBUTED = {1: pb.DECISION_SOURCE_CLIENT, 2: pb.DECISION_SOURCE_DEFAULT, 3: pb.DECISION_SOURCE_CLIENT,
              5: pb.DECISION_SOURCE_AI, 6: pb.DECISION_SOURCE_AI}


def attributed_log() -> pb.GameLog:
    """The hand-made log: second_slash.json with a source on every decision."""
    log = load_log(SECOND_SLASH.read_bytes())
    for index, source in ATTRIBUTED.items():
        log.events[index].source = source
    return log


def is_decision(ev: pb.Event) -> bool:
    return ev.WhichOneof("kind") in DECISION_KINDS


def without_sources(replay: apb.AnnotatedReplay) -> apb.AnnotatedReplay:
    out = apb.AnnotatedReplay()
    out.CopyFrom(replay)
    out.ClearField("log_sha256")  # (the log's bytes differ by the sources, so its hash does)
    for ann in out.annotations:
        ann.ClearField("source")
    return out


def test_the_annotations_of_decisions_carry_who_made_them() -> None:
    log = attributed_log()
    replay = verify(log)
    own = {a.index: a for a in replay.annotations if not a.derived}
    assert {i: a.source for i, a in own.items() if a.source} == ATTRIBUTED
    # Outcomes (the draw, the damage) and derived annotations say nothing of it.
    assert not own[0].source and not own[4].source
    assert all(not a.source for a in replay.annotations if a.derived)
    # The rule broken on the client's decision, and the two on the AI's.
    assert [v.code for v in own[3].violations] == ["SLASH_LIMIT"]
    assert sorted(v.code for v in own[5].violations) == ["OUT_OF_RANGE", "SLASH_LIMIT"]
    assert source_counts(replay) == {pb.DECISION_SOURCE_CLIENT: 1, pb.DECISION_SOURCE_AI: 2}
    assert violations_by_source(replay) == "3 violations: 1 on client replies, 2 on AI replies"
    events = list(log.events)
    assert annotation_json(own[3], events)["source"] == "client"
    assert annotation_json(own[5], events)["source"] == "ai"
    assert "source" not in annotation_json(own[4], events)


def test_sources_change_no_verdict_and_no_digest() -> None:
    plain = load_log(SECOND_SLASH.read_bytes())
    bare, attributed = verify(plain), verify(attributed_log())
    assert without_sources(attributed) == without_sources(bare)
    assert attributed.final_digest == bare.final_digest
    assert [a.digest for a in attributed.annotations] == [a.digest for a in bare.annotations]
    # A log without sources gives annotations without them, byte for byte as before.
    assert not any(a.source for a in bare.annotations)
    assert violations_by_source(bare) == ""


@pytest.mark.parametrize("path", GOLDEN_LOGS, ids=lambda p: p.stem)
def test_every_golden_log_with_sources_keeps_its_verdict(path: Path) -> None:
    """The golden corpus (violations of every kind, derived outcomes, rejected and unfollowed logs) with a source
    on every decision: the same replay but for Annotation.source, which is exactly the source of each decision's
    own annotation — including decisions rejected, malformed or not checked — and nowhere else."""
    log = load_log(path.read_bytes())
    bare = verify(log)
    decisions = [i for i, ev in enumerate(log.events) if is_decision(ev)]
    for n, i in enumerate(decisions):
        log.events[i].source = SOURCES[n % 3]
    replay = verify(log)
    assert without_sources(replay) == without_sources(bare)
    for ann in replay.annotations:
        if ann.derived or ann.index >= len(log.events) or not is_decision(log.events[ann.index]):
            assert not ann.source, (ann.index, ann.derived)
        else:
            assert ann.source == log.events[ann.index].source, ann.index
    assert sum(source_counts(replay).values()) == sum(len(a.violations) for a in replay.annotations
                                                       if not a.derived and a.index in set(decisions))


def test_a_live_game_fed_in_batches_gives_the_same_sources() -> None:
    log = attributed_log()
    whole = verify(log)
    live = Verifier(log.header)
    fed: list[apb.Annotation] = []
    for start in range(0, len(log.events), 2):
        fed += live.feed(log.events[start:start + 2])
    replay = live.finish(hashlib.sha256(log.SerializeToString(deterministic=True)).hexdigest())
    assert replay == whole
    assert [a.source for a in fed] == [a.source for a in whole.annotations[:len(fed)]]


def test_the_stores_source_numbers_are_the_contracts() -> None:
    """storage knows nothing of protobuf: its filter's numbers are written out, and must be the enum's."""
    assert {v: pb.DecisionSource.Name(v).removeprefix("DECISION_SOURCE_").lower() for v in SOURCES} == DECISION_SOURCES
    assert text.SOURCE_KEY == DECISION_SOURCES


def test_the_count_in_words() -> None:
    assert text.violations_by_source({}, 4) == ""
    assert text.violations_by_source({pb.DECISION_SOURCE_AI: 1}, 1) == "1 violation: 1 on AI replies"
    assert text.violations_by_source({pb.DECISION_SOURCE_CLIENT: 2, pb.DECISION_SOURCE_DEFAULT: 1}, 5) == (
        "5 violations: 2 on client replies, 1 on defaults taken on a timeout, 2 not attributed")
    assert text.source(pb.DECISION_SOURCE_DEFAULT) == "default" and text.source(0) == ""
    assert text.source(9) == "source 9"  # (a value from a newer contract)
