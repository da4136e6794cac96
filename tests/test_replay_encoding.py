"""The directly written wire form of plain annotations parses to the messages the protobuf API builds."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.work import finished_facts, verdict_facts
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from verifier import Verifier, load_log
from verifier.engine.game import Violation
from verifier.replay import DIGEST_SIZE, Record, annotation_message, encode_annotations

STATUSES = [apb.STATUS_UNSPECIFIED, apb.STATUS_OK, apb.STATUS_ILLEGAL, apb.STATUS_MISMATCH,
            apb.STATUS_MALFORMED, apb.STATUS_DERIVED, apb.STATUS_NOT_CHECKED]
INDICES = [0, 1, 2, 126, 127, 128, 129, 255, 16383, 16384, 2_097_151, 2_097_152, 2**32 - 1]


def records() -> list[Record]:
    derived = pb.Event()
    derived.draw_cards.seat = 1
    derived.draw_cards.cards.extend([3, 4])
    out: list[Record] = []
    for i, index in enumerate(INDICES):
        for status in STATUSES:
            for applied in (True, False):
                digest = bytes((i * 7 + status + k) % 256 for k in range(DIGEST_SIZE))
                out.append((index, status, applied, digest, (), None, 0))
                # A decision whose log says who made it (Event.source): plain too, with the source after the digest.
                out.append((index, status, applied, digest, (), None, pb.DECISION_SOURCE_CLIENT + i % 3))
    # Annotations that are not plain, among the plain ones.
    out.append((5, apb.STATUS_ILLEGAL, True, bytes(DIGEST_SIZE),
                (Violation("SLASH_LIMIT", "a second 杀", seat=2, card=14),), None, 0))
    out.append((5, apb.STATUS_ILLEGAL, False, bytes(DIGEST_SIZE),
                (Violation("SLASH_LIMIT", "a second 杀", seat=2, card=14),), None, pb.DECISION_SOURCE_AI))
    out.append((6, apb.STATUS_DERIVED, True, b"\x01" * DIGEST_SIZE, (), derived, 0))
    out.append((7, apb.STATUS_OK, True, b"", (), None, 0))  # no digest (not the usual size)
    out.append((7, apb.STATUS_OK, True, b"", (), None, pb.DECISION_SOURCE_DEFAULT))
    out.append((8, apb.STATUS_OK, True, b"\x02" * DIGEST_SIZE, (), None, 0))
    out.append((9, apb.STATUS_OK, True, b"\x02" * DIGEST_SIZE, (), None, 200))  # (a source past one byte's varint)
    return out


def test_plain_and_other_annotations_parse_to_the_built_messages() -> None:
    recs = records()
    replay = apb.AnnotatedReplay()
    replay.MergeFromString(bytes(encode_annotations(recs)))
    assert len(replay.annotations) == len(recs)
    for got, rec in zip(replay.annotations, recs, strict=True):
        assert got == annotation_message(rec), rec
    # ... and byte for byte: what the protobuf API writes, deterministically (the stored replays' bytes).
    assert bytes(encode_annotations(recs)) == b"".join(
        apb.AnnotatedReplay(annotations=[annotation_message(rec)]).SerializeToString(deterministic=True)
        for rec in recs)


def test_no_records_encode_to_nothing() -> None:
    assert encode_annotations([]) == b""


GOLDEN_LOGS = sorted((Path(__file__).parent / "golden" / "logs").glob("*.json"))


@pytest.mark.parametrize("path", GOLDEN_LOGS, ids=lambda p: p.stem)
def test_finished_parts_join_to_the_replay_and_its_stored_facts(path: Path) -> None:
    """The stored replay joined from the verifier's parts is byte for byte the canonical encoding of the
    replay, and its stored facts are those read from the parsed replay (the golden corpus: violations of
    every kind, derived outcomes, header violations and unfollowed logs)."""
    log = load_log(path.read_bytes())
    whole = Verifier(log.header)
    whole.follow(log.events)
    replay = whole.finish("ab" * 32)
    parts = Verifier(log.header)
    parts.follow(log.events)
    finished = parts.finished("ab" * 32)
    assert finished.encoded() == replay.SerializeToString(deterministic=True)
    assert finished.replay() == replay
    summary = apb.AnnotatedReplay()
    summary.CopyFrom(replay)
    del summary.annotations[:]
    assert finished.summary_encoded() == summary.SerializeToString(deterministic=True)
    assert finished.annotation_count == len(replay.annotations)
    assert finished_facts(finished) == verdict_facts(replay)
