"""The directly written wire form of plain annotations parses to the messages the protobuf API builds."""

from __future__ import annotations

from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
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
                out.append((index, status, applied, digest, (), None))
    # Annotations that are not plain, among the plain ones.
    out.append((5, apb.STATUS_ILLEGAL, True, bytes(DIGEST_SIZE),
                (Violation("SLASH_LIMIT", "a second 杀", seat=2, card=14),), None))
    out.append((6, apb.STATUS_DERIVED, True, b"\x01" * DIGEST_SIZE, (), derived))
    out.append((7, apb.STATUS_OK, True, b"", (), None))  # no digest (not the usual size)
    out.append((8, apb.STATUS_OK, True, b"\x02" * DIGEST_SIZE, (), None))
    return out


def test_plain_and_other_annotations_parse_to_the_built_messages() -> None:
    recs = records()
    replay = apb.AnnotatedReplay()
    replay.MergeFromString(bytes(encode_annotations(recs)))
    assert len(replay.annotations) == len(recs)
    for got, rec in zip(replay.annotations, recs, strict=True):
        assert got == annotation_message(rec), rec


def test_no_records_encode_to_nothing() -> None:
    assert encode_annotations([]) == b""
