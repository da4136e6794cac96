"""One live game: an incremental Verifier fed batch by batch, and the log kept for storing.

Not thread-safe: the service feeds each game from one task at a time (in its worker process).

What a batch costs beyond judging its events is kept small: the answer is the verifier's own wire
form of the batch's annotations (verifier/replay.py writes each as it is made), re-tagged as
VerifyLiveResponse.annotations in one pass, with no annotation message built; the log is kept as the
canonical encoding of each batch's events, not as a copy of the events.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from importers import ServerRecord
from service.judges import beside
from service.work import (
    canonical_bytes,
    dealt_roles,
    log_sha256,
    record_for,
    record_problems,
    retagged,
)
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from storage.store import NewReplay, ReplaySummary, SubmissionMetadata
from verifier import LogFormatError, Verifier
from verifier.wire import varint

# Tags: VerifyLiveResponse's events_received and game_over.
_EVENTS_RECEIVED, _GAME_OVER = 0x10, 0x18
# VerifyLiveResponse.stopped (field 5, LiveStopped: 1 the first event not checked, 2 why), in the answer where the
# verifier stopped following the game; written here as the rest of the answer is.
_STOPPED = 0x2A
_STOPPED_AT, _STOPPED_REASON = 0x08, 0x12


class LiveGame:
    def __init__(self, header: pb.GameHeader, metadata: SubmissionMetadata) -> None:
        self.header = header
        self.metadata = metadata
        self.verifier = Verifier(header)
        self.event_count = 0
        # The canonical encoding of the events so far (GameLog.events), batch by batch.
        self.encoded: list[bytes] = []
        self.sent = 0  # bytes of the verifier's annotations handed out so far
        self.records_checked = 0  # of its records (annotations with violations or derived events)
        self.stop_told = False  # the answer saying the verifier stopped following the game was given

    @property
    def over(self) -> bool:
        return self.verifier.over

    def feed_encoded(self, events: Sequence[pb.Event], encoded: bytes) -> bytes:
        """Judge a batch (``encoded``: the canonical encoding of its events as GameLog.events); returns the
        VerifyLiveResponse's encoding: the annotations it produced (each event as soon as it can be judged),
        the events received so far and whether the game is over. LogFormatError if a violation cannot be
        stored (a card id over 32 bits, a NUL quoted from the log)."""
        self.encoded.append(encoded)
        self.event_count += len(events)
        self.verifier.follow(events)
        self._check_new_records()
        return self._response()

    def _check_new_records(self) -> None:
        records = self.verifier.records
        problems = record_problems(records[self.records_checked:])
        self.records_checked = len(records)
        if problems:
            raise LogFormatError("; ".join(problems))

    def _response(self) -> bytes:
        """The annotations not yet handed out, events_received and game_over, as VerifyLiveResponse's encoding."""
        wire = self.verifier.wire
        # (the verifier's wire form is AnnotatedReplay.annotations, field 3; VerifyLiveResponse's are field 1)
        out = bytearray(retagged(memoryview(wire)[self.sent:], 3, 1))
        self.sent = len(wire)
        if self.event_count:
            out.append(_EVENTS_RECEIVED)
            out += varint(self.event_count)
        if self.verifier.over:
            out += bytes((_GAME_OVER, 1))
        if self.verifier.stopped_at is not None and not self.stop_told:
            self.stop_told = True
            reason = self.verifier.stopped_reason.encode("utf-8")
            stopped = bytes((_STOPPED_AT,)) + varint(self.verifier.stopped_at) + bytes((_STOPPED_REASON,)) \
                + varint(len(reason)) + reason
            out += bytes((_STOPPED,)) + varint(len(stopped)) + stopped
        return bytes(out)

    def finish_encoded(self, server: spb.ServerVerdicts | None = None) -> tuple[bytes, NewReplay]:
        """Close the game: the last VerifyLiveResponse's encoding (without `finished`: the annotations not yet
        handed out) and the record to store (with ``server``'s verdicts beside this engine's: service.judges)."""
        data = canonical_bytes(pb.GameLog(header=self.header)) + b"".join(self.encoded)
        self.encoded = []
        finished = self.verifier.finished(log_sha256(data))
        if server is not None and server.judge:
            record = ServerRecord(judge=server.judge, checks=tuple(server.checks),
                                  client_replies=tuple(server.client_replies))
            beside(finished.summary, record, {r.reply: r.event for r in server.reply_events},
                   [(index, v.code) for index, _, _, _, found, derived, _ in finished.records if derived is None
                    for v in found], self.event_count)
        last = self._response()
        return last, record_for(self.header, self.event_count, data, "binary", self.metadata, finished,
                                dealt_roles(self.verifier))

    @staticmethod
    def unstored_summary(record: NewReplay) -> ReplaySummary:
        """What a stored summary would say, for a discarded live game."""
        v = record.verdict
        return ReplaySummary(
            id=record.log_sha256, submitted_at=datetime.now(UTC), metadata=record.metadata,
            log_format=record.log_format, log_size=len(record.log_bytes), event_count=record.event_count,
            ruleset=record.ruleset, mode=record.mode, seed=record.seed, recorder=record.recorder, seats=record.seats,
            engine_version=v.engine_version, violation_count=v.violation_count, violation_codes=v.violation_codes,
            followed=v.followed, stopped_at=v.stopped_at, stopped_reason=v.stopped_reason, finished=v.finished,
            side=v.side, winners=v.winners, result_reason=v.result_reason, annotation_count=v.annotation_count,
            scores=v.scores)

