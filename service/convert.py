"""Between the contract's messages and the store's records."""

from __future__ import annotations

from datetime import UTC

from google.protobuf.timestamp_pb2 import Timestamp

from service.regress import ReplayReport, ViolationAt
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from storage.store import InvalidQuery, ReplayFilter, ReplaySummary, RunInfo, SubmissionMetadata, judged_by
from verifier.codes import CATALOGUE, SERVER_CHECK_CODES


def metadata_from(msg: spb.SubmissionMetadata) -> SubmissionMetadata:
    return SubmissionMetadata(tournament=msg.tournament, round=msg.round, table=msg.table, submitter=msg.submitter)


def replay_info(s: ReplaySummary) -> spb.ReplayInfo:
    info = spb.ReplayInfo(
        id=s.id, log_sha256=s.log_sha256 or s.id, tenant=s.tenant, ruleset=s.ruleset, mode=s.mode, seed=s.seed,  # type: ignore[arg-type]
        recorder=s.recorder, event_count=s.event_count, log_size=s.log_size, engine_version=s.engine_version,
        violation_count=s.violation_count, followed=s.followed, judged_by=judged_by(s.log_format))
    m = s.metadata
    info.metadata.CopyFrom(spb.SubmissionMetadata(tournament=m.tournament, round=m.round, table=m.table,
                                                  submitter=m.submitter))
    info.submitted_at.FromDatetime(s.submitted_at)
    for seat in s.seats:
        info.seats.append(pb.Seat(player=seat.player, role=seat.role, general=seat.general))  # type: ignore[arg-type]
    info.violation_codes.extend(s.violation_codes)
    info.result.CopyFrom(apb.GameResult(finished=s.finished, side=s.side, winners=s.winners,  # type: ignore[arg-type]
                                        reason=s.result_reason))
    for i, score in enumerate(s.scores or ()):
        info.result.scores.add(seat=i, score=score)
    return info


def run_info(r: RunInfo) -> spb.RunInfo:
    info = spb.RunInfo(name=r.name, replays=r.replays, engine_versions=r.engine_versions)
    info.started.FromDatetime(r.started)
    info.finished.FromDatetime(r.finished)
    return info


# The range of google.protobuf.Timestamp (and of Python's datetime): 0001-01-01 to 9999-12-31.
MIN_TIMESTAMP_SECONDS = -62_135_596_800
MAX_TIMESTAMP_SECONDS = 253_402_300_799


def timestamp_problem(name: str, ts: Timestamp) -> str | None:
    if not MIN_TIMESTAMP_SECONDS <= ts.seconds <= MAX_TIMESTAMP_SECONDS:
        return (f"{name}.seconds is {ts.seconds}: a timestamp is from 0001-01-01 to 9999-12-31 UTC (seconds "
                f"{MIN_TIMESTAMP_SECONDS} to {MAX_TIMESTAMP_SECONDS})")
    if not 0 <= ts.nanos <= 999_999_999:
        return f"{name}.nanos is {ts.nanos}; it is from 0 to 999999999"
    return None


def request_filter(req: spb.ListReplaysRequest, where: str) -> ReplayFilter:
    """The store's filter for a ListReplaysRequest (or a RegressRequest's filter), checked: InvalidQuery
    naming the field (``where`` + its name) when a value can match nothing stored or is no timestamp."""
    problems = [p for p in (timestamp_problem(name, getattr(req, name))
                            for name in ("submitted_after", "submitted_before") if req.HasField(name))
                if p is not None]
    if problems:
        raise InvalidQuery("; ".join(where + p for p in problems))
    filters = filter_from(req)
    problems = filters.problems()
    code = violation_code_problem(req.violation_code)
    if code is not None:
        problems.append(code)
    if problems:
        raise InvalidQuery("; ".join(where + p for p in problems))
    return filters


def violation_code_problem(code: str) -> str | None:
    """Why a violation_code filter can match nothing: it is not in the catalogue (docs/codes.md). A filter
    that silently matches nothing reads as "no such violation" when it was a typo."""
    if not code or code in CATALOGUE or code in SERVER_CHECK_CODES:
        return None
    same = [name for name in CATALOGUE if name.lower() == code.strip().lower()]
    hint = f"; the codes are upper case: {same[0]}" if same else "; docs/codes.md lists them"
    return f"violation_code {code[:80]!r} is not a violation code{hint}"


def filter_from(req: spb.ListReplaysRequest) -> ReplayFilter:
    return ReplayFilter(
        tournament=req.tournament, round=req.round, table=req.table, submitter=req.submitter, player=req.player,
        has_violations=req.has_violations if req.HasField("has_violations") else None,
        violation_code=req.violation_code, violation_source=int(req.violation_source) or None,
        judged_by=req.judged_by,
        submitted_after=req.submitted_after.ToDatetime(tzinfo=UTC) if req.HasField("submitted_after") else None,
        submitted_before=req.submitted_before.ToDatetime(tzinfo=UTC) if req.HasField("submitted_before") else None)


def summary_only(replay: apb.AnnotatedReplay) -> apb.AnnotatedReplay:
    out = apb.AnnotatedReplay()
    out.CopyFrom(replay)
    del out.annotations[:]
    return out


def replay_change(r: ReplayReport) -> spb.ReplayChange:
    """A regression report as the contract's message."""

    def violations(items: tuple[ViolationAt, ...]) -> list[spb.ViolationChange]:
        return [spb.ViolationChange(index=max(v.index, 0), derived=v.derived, code=v.code, header=v.index < 0)
                for v in items]

    msg = spb.ReplayChange(
        replay_id=r.replay_id, new_violations=violations(r.new_violations),
        vanished_violations=violations(r.vanished_violations),
        status_changes=[spb.AnnotationChange(index=c.index, derived=c.derived, stored=c.stored, now=c.new)
                        for c in r.status_changes],
        stored_result=r.stored_result, new_result=r.new_result, winner_changed=r.winner_changed, error=r.error,
        stored_engine_version=r.stored_engine, new_engine_version=r.new_engine)
    d = r.first_divergence
    if d is not None:
        msg.diverged = True
        msg.first_divergent_index = d.index
        msg.first_divergent_derived = d.derived
        msg.stored_digest = bytes.fromhex(d.stored_digest)
        msg.new_digest = bytes.fromhex(d.new_digest)
    return msg
