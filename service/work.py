"""Verification work, run in the worker processes (and, for live games, in threads).

Everything here is plain functions over bytes and picklable records, so it can cross a
process boundary: a job goes in as the log's bytes, a storage record (``NewReplay``) comes out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from storage.store import NewReplay, SeatFacts, SubmissionMetadata, VerdictFacts, ViolationFacts
from verifier import LogFormatError, Verifier, load_log


class TooManyEvents(Exception):
    """The game has more events than the server's limit."""

    def __init__(self, count: int, limit: int) -> None:
        super().__init__(f"the game has {count} events; this server takes at most {limit} per game "
                         "(--max-events)")
        self.count = count
        self.limit = limit

    def __reduce__(self) -> tuple[type[TooManyEvents], tuple[int, int]]:
        return TooManyEvents, (self.count, self.limit)


@dataclass(frozen=True, slots=True)
class VerifyJob:
    data: bytes
    metadata: SubmissionMetadata
    max_events: int
    # True when ``data`` is the canonical encoding the service made itself (not submitted bytes).
    canonical: bool = False
    # Another engine's record (ForeignLog): ``data`` is imported first, and the converted log is stored.
    foreign: str = ""
    name: str = ""


def log_sha256(canonical: bytes) -> str:
    return hashlib.sha256(canonical).hexdigest()


def canonical_bytes(log: pb.GameLog) -> bytes:
    return log.SerializeToString(deterministic=True)


def detect_format(data: bytes) -> str:
    return "json" if data.lstrip()[:1] == b"{" else "binary"


def run_job(job: VerifyJob) -> NewReplay:
    """Parse (or import), verify and turn into a storage record. Raises LogFormatError or TooManyEvents."""
    if job.foreign:
        from importers import RecordError, importer

        try:
            log = importer(job.foreign)(job.data, job.name)
        except RecordError as err:
            raise LogFormatError(f"cannot import the {job.foreign} record: {err}") from None
        job = VerifyJob(canonical_bytes(log), job.metadata, job.max_events, canonical=True)
    else:
        log = load_log(job.data)
    if len(log.events) > job.max_events:
        raise TooManyEvents(len(log.events), job.max_events)
    canonical = job.data if job.canonical else canonical_bytes(log)
    verifier = Verifier(log.header)
    verifier.follow(log.events)
    replay = verifier.finish(log_sha256(canonical))
    return record_for(log, job.data, "binary" if job.canonical else detect_format(job.data), job.metadata,
                      replay, dealt_roles(verifier))


def dealt_roles(verifier: Verifier) -> list[int]:
    """The seats' roles as the engine dealt them (empty when the header was unusable)."""
    game = verifier.game
    return [] if game is None else [p.role for p in game.players]


def record_for(log: pb.GameLog, log_bytes: bytes, log_format: str, metadata: SubmissionMetadata,
               replay: apb.AnnotatedReplay, roles: list[int]) -> NewReplay:
    header = log.header
    seats = tuple(SeatFacts(seat=i, player=s.player, role=roles[i] if i < len(roles) else int(s.role),
                            general=s.general) for i, s in enumerate(header.seats))
    return NewReplay(
        log_sha256=replay.log_sha256, log_bytes=log_bytes, log_format=log_format, event_count=len(log.events),
        ruleset=header.ruleset, mode=int(header.mode), seed=header.seed, recorder=header.recorder, seats=seats,
        metadata=metadata, verdict=verdict_facts(replay))


def verdict_facts(replay: apb.AnnotatedReplay) -> VerdictFacts:
    violations: list[ViolationFacts] = [
        ViolationFacts(event_index=None, derived=False, code=v.code, message=v.message, rule=v.rule,
                       seat=v.seat if v.HasField("seat") else None, card=v.card if v.HasField("card") else None)
        for v in replay.header_violations]
    for ann in replay.annotations:
        for v in ann.violations:
            violations.append(ViolationFacts(
                event_index=ann.index, derived=ann.derived, code=v.code, message=v.message, rule=v.rule,
                seat=v.seat if v.HasField("seat") else None, card=v.card if v.HasField("card") else None))
    res = replay.result
    return VerdictFacts(
        engine_version=replay.engine_version, violation_count=replay.violation_count,
        violation_codes=tuple(replay.violation_codes), followed=replay.followed,
        stopped_at=None if replay.followed else replay.stopped_at, stopped_reason=replay.stopped_reason,
        finished=res.finished, side=int(res.side), winners=tuple(res.winners), result_reason=res.reason,
        annotation_count=len(replay.annotations), replay_blob=replay.SerializeToString(deterministic=True),
        violations=tuple(violations))


def warm_up() -> int:
    """Run in each new worker: import and fingerprint the engine before the first real job."""
    from verifier import engine_version

    engine_version()
    return 0
