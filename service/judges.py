"""Two judges of one game: this engine, replaying the log, and the recording server's own rules, which judged
each client reply inside the server (FreeKill's, by the sgs-verify tap's reply check). Both verdicts are kept
side by side in the annotated replay (``beside``): the server's checks, which replies each judged (coverage),
and the replies where they differ (disagreements, each a finding about one engine or the other). A record this
engine does not replay is stored with the server's verdicts alone (``server_only``).

docs/freekill-bridge.md, "Two engines", says what each kind of room gets.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from importers import ServerRecord
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from storage.store import SERVER_FORMATS, NewReplay, SeatFacts, SubmissionMetadata, VerdictFacts, ViolationFacts

# Where a server check's violation points (its rule, for the stored rows and `show`).
SERVER_RULE = "docs/freekill-bridge.md#two-engines"
# The ruleset a record this engine does not replay is stored under (the recording engine's own).
SERVER_RULESET = "freekill"
_JUDGED = (apb.SERVER_VERDICT_OK, apb.SERVER_VERDICT_REFUSED)
CLIENT = pb.DECISION_SOURCE_CLIENT


def _client_checks(server: ServerRecord) -> dict[int, apb.ServerCheck]:
    """The check of each client reply, by the reply's record position."""
    return {c.reply: c for c in server.checks if c.source == CLIENT}


def coverage(server: ServerRecord, engine_judged: Iterable[int], engine_why: str) -> apb.Coverage:
    """Which client replies each judge judged: ``engine_judged`` the replies (record positions) that became an
    event this engine checked; ``engine_why`` why the others were not (one reason for all)."""
    checks = _client_checks(server)
    ours = set(engine_judged)
    cov = apb.Coverage(client_replies=len(server.client_replies))
    why: Counter[str] = Counter()
    for reply in server.client_replies:
        check = checks.get(reply)
        by_server = check is not None and check.verdict in _JUDGED
        by_engine = reply in ours
        if by_server and by_engine:
            cov.judged_by_both += 1
        elif by_engine:
            cov.judged_by_engine_only += 1
        elif by_server:
            cov.judged_by_server_only += 1
        else:
            cov.judged_by_neither += 1
        if not by_engine:
            why[f"this engine: {engine_why}"] += 1
        if not by_server:
            why["FreeKill's check: " + ("no check record (the tap's check is off, or a tap from before it)"
                                        if check is None else f"unjudged: {check.why}")] += 1
    cov.why_unjudged.extend(f"{n} repl{'y' if n == 1 else 'ies'}: {reason}" for reason, n in sorted(why.items()))
    return cov


def beside(summary: apb.AnnotatedReplay, server: ServerRecord, reply_events: Mapping[int, int],
           violations: Sequence[tuple[int, str]], event_count: int) -> None:
    """Add the server's verdicts to this engine's replay (``summary``: its fields but the annotations):
    ``violations`` this engine's (event index, code) on events it made of decisions, ``reply_events`` each
    reply's first event."""
    summary.server_judge = server.judge
    summary.server_checks.extend(server.checks)
    checked = event_count if summary.followed else summary.stopped_at
    codes: dict[int, list[str]] = {}
    for index, code in violations:
        codes.setdefault(index, []).append(code)
    judged = [reply for reply, event in reply_events.items() if event < checked]
    why = ("the reply became no event of the log (a decline, or an answer it shows no decision for)"
           if summary.followed else f"the verifier stopped following at event {summary.stopped_at}: "
           f"{summary.stopped_reason}")
    summary.coverage.CopyFrom(coverage(server, judged, why))
    for check in server.checks:
        if check.source != CLIENT or check.verdict not in _JUDGED or not check.HasField("event") \
                or check.event >= checked:
            continue
        ours = sorted(set(codes.get(check.event, ())))
        if (check.verdict == apb.SERVER_VERDICT_REFUSED) == bool(ours):
            continue
        d = summary.disagreements.add(reply=check.reply, event=check.event, player=check.player,
                                      engine_codes=ours, server_verdict=check.verdict, server_code=check.code,
                                      server_why=check.why)
        if check.HasField("seat"):
            d.seat = check.seat


def server_only(server: ServerRecord, metadata: SubmissionMetadata) -> tuple[NewReplay, bytes]:
    """A record this engine does not replay, stored as it came with the server's verdicts: each client reply the
    server's rules refused is a violation (at the reply's record position, from the client). Returns the record
    and its replay's encoding (no annotations: the summary is the whole)."""
    assert server.format in SERVER_FORMATS, server.format  # (how the store tells such a replay from ours)
    sha = hashlib.sha256(server.data).hexdigest()
    refused = [c for c in server.checks if c.source == CLIENT and c.verdict == apb.SERVER_VERDICT_REFUSED]
    replay = apb.AnnotatedReplay(
        engine_version=server.judge[:100], log_sha256=sha, violation_count=len(refused),
        violation_codes=sorted({c.code for c in refused}), followed=False, stopped_at=0,
        stopped_reason=f"not replayed by this engine: {server.not_replayed}", server_judge=server.judge,
        not_replayed=server.not_replayed)
    replay.server_checks.extend(server.checks)
    replay.coverage.CopyFrom(coverage(server, (), f"not replayed: {server.not_replayed}"))
    res = replay.result
    res.finished, res.side, res.reason = server.finished, server.side, server.result_reason  # type: ignore[assignment]
    res.winners.extend(server.winners)
    blob = replay.SerializeToString(deterministic=True)
    violations = tuple(ViolationFacts(
        event_index=c.reply, derived=False, code=c.code, message=f"{c.request}: {c.why}" if c.why else c.request,
        rule=SERVER_RULE, seat=c.seat if c.HasField("seat") else None, source=CLIENT) for c in refused)
    verdict = VerdictFacts(
        engine_version=replay.engine_version, violation_count=replay.violation_count,
        violation_codes=tuple(replay.violation_codes), followed=False, stopped_at=0,
        stopped_reason=replay.stopped_reason, finished=res.finished, side=int(res.side), winners=tuple(res.winners),
        result_reason=res.reason, annotation_count=0, replay_blob=blob, violations=violations)
    seats = tuple(SeatFacts(seat=i, player=s.player, role=s.role, general=s.general)
                  for i, s in enumerate(server.seats))
    record = NewReplay(log_sha256=sha, log_bytes=server.data, log_format=server.format,
                       event_count=server.records, ruleset=SERVER_RULESET, mode=0, seed=0,
                       recorder=server.judge, seats=seats, metadata=metadata, verdict=verdict)
    return record, blob


__all__ = ["SERVER_RULE", "SERVER_RULESET", "beside", "coverage", "server_only"]
