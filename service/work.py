"""Verification work, run in the worker processes (and, for live games, in threads).

Everything here is plain functions over bytes and picklable records, so it can cross a
process boundary: a job goes in as the log's bytes, a storage record (``NewReplay``) comes out.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from google.protobuf.message import Message

from importers import ServerRecord
from service.judges import beside, server_only
from sgsverify.internal import wire_views_pb2 as wv
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from storage.store import (
    MAX_GENERAL_LENGTH,
    MAX_PLAYER_LENGTH,
    MAX_RECORDER_LENGTH,
    MAX_RULESET_LENGTH,
    MAX_SEATS,
    NewReplay,
    SeatFacts,
    SubmissionMetadata,
    VerdictFacts,
    ViolationFacts,
    text_problem,
)
from verifier import LogFormatError, Verifier
from verifier.codes import CATALOGUE
from verifier.logio import MAX_RECORD_BYTES, parse_log
from verifier.replay import Finished, Record, annotation_message


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
    # (A bytearray only in the server's process: the viewer's upload buffer, which reaches the worker as bytes.)
    data: bytes | bytearray
    metadata: SubmissionMetadata
    max_events: int
    # True when ``data`` is the canonical encoding the service made itself (not submitted bytes).
    canonical: bool = False
    # Another engine's record (ForeignLog): ``data`` is imported first, and the converted log is stored.
    foreign: str = ""
    name: str = ""
    # The server's limit on a foreign record (--max-record-bytes): it bounds the record unpacked and what the
    # importer may build from it, not only the bytes that came in (a small xz may hold gigabytes).
    max_record_bytes: int = MAX_RECORD_BYTES
    # False: the record comes back without the log's bytes when they are ``data`` itself (the caller has
    # them; a copy back across the process boundary is memory the server would hold twice).
    return_log: bool = True


def log_sha256(canonical: bytes) -> str:
    return hashlib.sha256(canonical).hexdigest()


def canonical_bytes(log: pb.GameLog) -> bytes:
    return log.SerializeToString(deterministic=True)


def header_problems(header: pb.GameHeader) -> list[str]:
    """Why a log with this header cannot be stored (docs/service.md, "Field limits"), naming each field;
    cheap (it looks at the stored fields only), so it is checked before a log is verified."""
    found = [text_problem("header.ruleset", header.ruleset, MAX_RULESET_LENGTH),
             text_problem("header.recorder", header.recorder, MAX_RECORDER_LENGTH)]
    if len(header.seats) > MAX_SEATS:
        found.append(f"header.seats has {len(header.seats)} seats; the limit is {MAX_SEATS}")
    for i, seat in enumerate(header.seats[:MAX_SEATS]):
        found += [text_problem(f"header.seats[{i}].player", seat.player, MAX_PLAYER_LENGTH),
                  text_problem(f"header.seats[{i}].general", seat.general, MAX_GENERAL_LENGTH)]
    return [p for p in found if p is not None]


def annotation_problems(annotations: list[apb.Annotation]) -> list[str]:
    """Why these annotations' violations cannot be stored (a card id or seat over 32 bits, a NUL quoted
    from the log), naming the event; checked on each batch of a live game."""
    found: list[str] = []
    for ann in annotations:
        for v in ann.violations:
            found += _violation_facts(ann.index, ann.derived, v, ann.source).problems()
    return found


def record_problems(records: Iterable[Record]) -> list[str]:
    """annotation_problems for the verifier's records (those with violations or a derived event): the
    annotations of a batch that can have problems, without building a message for the others."""
    return annotation_problems([annotation_message(rec) for rec in records if rec[4]])


# Runs of length-delimited fields read as `repeated bytes`, by field number (sgsverify/internal/wire_views.proto).
_FIELD_VIEWS: dict[int, Any] = {1: wv.Field1, 2: wv.Field2, 3: wv.Field3}


def retagged(wire: bytes | bytearray | memoryview, old: int, new: int) -> bytes:
    """The fields numbered ``old`` in ``wire`` (a message's encoding, or a run of its fields), in order, as
    fields numbered ``new``: the same messages as another message's repeated field (GameLog.events from a
    request's events, VerifyLiveResponse.annotations from AnnotatedReplay's). Fields of other numbers are left
    out. Both steps run in protobuf's C code: nothing is parsed or written per message in Python."""
    return _FIELD_VIEWS[new](items=_FIELD_VIEWS[old].FromString(wire).items).SerializeToString()  # type: ignore[no-any-return]


def events_encoding(message: Message) -> bytes:
    """The canonical encoding of ``GameLog(events=message.events)`` for an UploadLogRequest or VerifyLiveRequest
    (events: their field 3): the message serialized as it is, its events re-tagged as GameLog's field 2 and
    the rest left out — without copying the events into a GameLog first."""
    if not message.events:  # type: ignore[attr-defined]
        return b""
    return retagged(message.SerializeToString(deterministic=True), 3, 2)


def _violation_facts(index: int | None, derived: bool, v: apb.Violation, source: int = 0) -> ViolationFacts:
    return ViolationFacts(event_index=index, derived=derived, code=v.code, message=v.message, rule=v.rule,
                          seat=v.seat if v.HasField("seat") else None, card=v.card if v.HasField("card") else None,
                          source=source)


def _check(problems: list[str]) -> None:
    if problems:
        raise LogFormatError("; ".join(problems))


class Verified(NamedTuple):
    """What a worker sends back for a whole log: the record to store, and the replay without its annotations
    (AnnotatedReplay's encoding), which is what a summary-only answer holds: the server need not parse the
    whole replay to drop them."""

    record: NewReplay
    summary_blob: bytes


def run_job(job: VerifyJob) -> NewReplay:
    """Parse (or import), verify and turn into a storage record. Raises LogFormatError or TooManyEvents."""
    return verify_job(job).record


def verify_job(job: VerifyJob) -> Verified:
    """run_job, with the summary-only replay's encoding too."""
    # (bytes in a worker, which receives them so; a bytearray only where an embedding program runs it itself)
    data = job.data if isinstance(job.data, bytes) else bytes(job.data)
    server: ServerRecord | None = None
    reply_events: dict[int, int] = {}
    if job.foreign:
        from importers import RecordError, judging_importer

        try:
            judged = judging_importer(job.foreign, job.max_record_bytes)(data, job.name)
        except RecordError as err:
            raise LogFormatError(f"cannot import the {job.foreign} record: {err}") from None
        server, reply_events = judged.server, judged.reply_events
        if judged.log is None:
            assert server is not None
            return _server_only(server, job.metadata)
        log = judged.log
        data = canonical_bytes(log)
        job = VerifyJob(data, job.metadata, job.max_events, canonical=True, return_log=True)
        log_format = "binary"
    elif job.canonical:
        log, log_format = parse_log(data, "binary")
    else:
        # The format is the one the bytes parse as (a binary log may begin like JSON).
        log, log_format = parse_log(data)
    if len(log.events) > job.max_events:
        raise TooManyEvents(len(log.events), job.max_events)
    _check(header_problems(log.header))
    canonical = data if job.canonical else canonical_bytes(log)
    verifier = Verifier(log.header)
    if server is not None and verifier.stopped_at is not None:
        # A server's record whose set-up this engine cannot take (a general it does not know): kept with the
        # server's verdicts, as a record it cannot convert is.
        return _server_only(replace(server, not_replayed=f"this engine cannot take its set-up: "
                                                          f"{verifier.stopped_reason}"), job.metadata)
    verifier.follow(log.events)
    finished = verifier.finished(log_sha256(canonical))
    if server is not None:
        beside(finished.summary, server, reply_events,
               [(index, v.code) for index, _, _, _, found, derived, _ in finished.records if derived is None
                for v in found], len(log.events))
    record = record_for(log.header, len(log.events), data, log_format, job.metadata, finished,
                        dealt_roles(verifier))
    _check(record.problems())  # what the engine says quotes the log: a card id over 32 bits, a NUL
    return Verified(record if job.return_log else replace(record, log_bytes=b""), finished.summary_encoded())


def _server_only(server: ServerRecord, metadata: SubmissionMetadata) -> Verified:
    record, blob = server_only(server, metadata)
    _check(record.problems())
    return Verified(record, blob)


def dealt_roles(verifier: Verifier) -> list[int]:
    """The seats' roles as the engine dealt them (empty when the header was unusable)."""
    game = verifier.game
    return [] if game is None else [p.role for p in game.players]


def record_for(header: pb.GameHeader, event_count: int, log_bytes: bytes, log_format: str,
               metadata: SubmissionMetadata, finished: Finished, roles: list[int]) -> NewReplay:
    seats = tuple(SeatFacts(seat=i, player=s.player, role=roles[i] if i < len(roles) else int(s.role),
                            general=s.general) for i, s in enumerate(header.seats))
    return NewReplay(
        log_sha256=finished.log_sha256, log_bytes=log_bytes, log_format=log_format, event_count=event_count,
        ruleset=header.ruleset, mode=int(header.mode), seed=header.seed, recorder=header.recorder, seats=seats,
        metadata=metadata, verdict=finished_facts(finished))


def finished_facts(finished: Finished) -> VerdictFacts:
    """``verdict_facts`` of a finished verification, from its parts: the violations come from the verifier's
    records and the stored replay is joined from the annotations' wire form, with no annotation parsed."""
    violations = [ViolationFacts(event_index=index, derived=derived is not None, code=v.code, message=v.message,
                                 rule=CATALOGUE[v.code].rule, seat=v.seat, card=v.card, source=source)
                  for index, _, _, _, found, derived, source in finished.records for v in found]
    return _verdict(finished.summary, finished.engine_version, finished.annotation_count, finished.encoded(),
                    violations)


def verdict_facts(replay: apb.AnnotatedReplay) -> VerdictFacts:
    violations = [_violation_facts(ann.index, ann.derived, v, ann.source) for ann in replay.annotations
                  for v in ann.violations]
    return _verdict(replay, replay.engine_version, len(replay.annotations),
                    replay.SerializeToString(deterministic=True), violations)


def _verdict(replay: apb.AnnotatedReplay, engine_version: str, annotation_count: int, replay_blob: bytes,
             event_violations: list[ViolationFacts]) -> VerdictFacts:
    """The stored facts of a replay (``replay``: its summary fields; the header's violations come first)."""
    res = replay.result
    return VerdictFacts(
        engine_version=engine_version, violation_count=replay.violation_count,
        violation_codes=tuple(replay.violation_codes), followed=replay.followed,
        stopped_at=None if replay.followed else replay.stopped_at, stopped_reason=replay.stopped_reason,
        finished=res.finished, side=int(res.side), winners=tuple(res.winners), result_reason=res.reason,
        annotation_count=annotation_count, replay_blob=replay_blob,
        violations=tuple([_violation_facts(None, False, v) for v in replay.header_violations] + event_violations),
        scores=tuple(s.score for s in res.scores), disagreements=len(replay.disagreements))


def freeze_long_lived_objects() -> None:
    """Move every object alive now (the modules, gRPC's, SQLAlchemy's and protobuf's tables: a few hundred
    thousand) out of the cyclic collector's reach. Otherwise each full collection walks them all again: measured
    28-44 ms every few hundred games in a serving process, with its event loop stopped and every stream and call
    waiting. Only where a process serves and nothing else (``serve``, the worker processes): an embedding
    program's objects are its own to manage."""
    gc.collect()
    gc.freeze()


def warm_up() -> int:
    """Run in each new worker: import and fingerprint the engine before the first real job, then keep what that
    made out of the collector's way."""
    from verifier import engine_version

    engine_version()
    freeze_long_lived_objects()
    return 0
