"""One live game: an incremental Verifier fed batch by batch, and the log kept for storing.

Not thread-safe: the service feeds each game from one task at a time (in a worker thread).
"""

from __future__ import annotations

from datetime import UTC, datetime

from service.work import canonical_bytes, dealt_roles, log_sha256, record_for
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from storage.store import NewReplay, ReplaySummary, SubmissionMetadata
from verifier import Verifier


class LiveGame:
    def __init__(self, header: pb.GameHeader, metadata: SubmissionMetadata) -> None:
        self.log = pb.GameLog(header=header)
        self.metadata = metadata
        self.verifier = Verifier(header)
        self.sent = 0  # annotations handed out so far

    @property
    def event_count(self) -> int:
        return len(self.log.events)

    @property
    def over(self) -> bool:
        return self.verifier.over

    def feed(self, events: list[pb.Event]) -> list[apb.Annotation]:
        """Judge a batch; returns the annotations it produced (each event as soon as it can be judged)."""
        self.log.events.extend(events)
        annotations = self.verifier.feed(events)
        self.sent += len(annotations)
        return annotations

    def finish(self) -> tuple[list[apb.Annotation], NewReplay]:
        """Close the game: the annotations not yet handed out, and the record to store."""
        data = canonical_bytes(self.log)
        replay = self.verifier.finish(log_sha256(data))
        rest = list(replay.annotations[self.sent:])
        self.sent = len(replay.annotations)
        return rest, record_for(self.log, data, "binary", self.metadata, replay, dealt_roles(self.verifier))

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
