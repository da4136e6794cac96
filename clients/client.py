"""A typed Python client for the verification service (sgsverify.v1.VerifierService).

    >>> from clients.client import VerifierClient
    >>> with VerifierClient("127.0.0.1:50051") as client:     # token: $SGS_VERIFY_TOKEN, or token=...
    ...     sub = client.verify(Path("game.pb"), metadata=Metadata(tournament="spring-cup"))
    ...     print(sub.id, sub.replay.violation_count)
    ...     for update in client.live(log.header, log.events):    # batched for you
    ...         for ann in update.annotations: ...

Events are always sent in batches (``batch_size``, default 1024): one message per event
would cap a Python gRPC stream at a few thousand events per second. RPC errors come back as
the precise ``ServiceError`` subclasses below; rule violations are never errors (they are in
the returned replay). Many logs at once — a tournament's games, a corpus — go through
``verify_many`` / ``upload_many``, which keep several calls going on the one channel (default 8) and
yield each log's outcome in order.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from sgsverify.internal import wire_views_pb2 as wv
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc

ENV_SERVER = "SGS_VERIFY_SERVER"
ENV_TOKEN = "SGS_VERIFY_TOKEN"
ENV_TLS = "SGS_VERIFY_TLS"
ENV_TLS_CA = "SGS_VERIFY_TLS_CA"
ENV_CLIENT_CERT = "SGS_VERIFY_CLIENT_CERT"
ENV_CLIENT_KEY = "SGS_VERIFY_CLIENT_KEY"
DEFAULT_SERVER = "127.0.0.1:50051"
# Events per message: per message, Python gRPC costs about as much on each end as judging tens of events, so
# the default is large; a live game server that wants verdicts sooner sends smaller batches (or its own).
DEFAULT_BATCH_SIZE = 1024
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
# Calls verify_many / upload_many keep going at once. One at a time, the server's workers wait while each answer
# travels back and the next log comes in. Measured on 2 cores (120 games, one client, medians of 4 rounds), whole
# logs / uploads in events/s: 2 in flight 103k / 84k, 4 112k / 96k, 8 149k / 106k, 16 153k / 113k.
DEFAULT_IN_FLIGHT = 8
# Times verify_many / upload_many (and `sgs-verify submit`) send a log again when the server refused it for a while
# and said when to retry (its rate, concurrency or stream limits: RESOURCE_EXHAUSTED with a retry hint); after
# that, the refusal is the log's outcome. A hint longer than MAX_RETRY_WAIT seconds is waited for that long.
DEFAULT_RETRIES = 8
MAX_RETRY_WAIT = 30.0

T = TypeVar("T")

Metadata = spb.SubmissionMetadata


def default_server() -> str:
    return os.environ.get(ENV_SERVER) or DEFAULT_SERVER


# ---------------------------------------------------------------------------------------- errors

class ServiceError(Exception):
    """An RPC failed; ``code`` is the gRPC status, ``details`` the server's message, ``request_id`` the id the
    server's log knows the request by, ``retry_after`` the seconds the server asks to wait (limits)."""

    def __init__(self, code: grpc.StatusCode, details: str, request_id: str = "",
                 retry_after: float | None = None) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details
        self.request_id = request_id
        self.retry_after = retry_after


class InvalidRequest(ServiceError):
    """INVALID_ARGUMENT: the input is malformed (the details say what and where)."""


class LimitExceeded(ServiceError):
    """RESOURCE_EXHAUSTED: over one of the server's limits (events, message size, stream length)."""


class DeadlineExceeded(ServiceError):
    """DEADLINE_EXCEEDED: the call's deadline or the server's verification deadline passed."""


class NotFound(ServiceError):
    """NOT_FOUND: no such replay."""


class ServiceUnavailable(ServiceError):
    """UNAVAILABLE: the server or its store cannot be reached; retrying later may work."""


class Unauthenticated(ServiceError):
    """UNAUTHENTICATED: the server needs a token (--token, $SGS_VERIFY_TOKEN), or the one given is not valid."""


class PermissionDenied(ServiceError):
    """PERMISSION_DENIED: the token lacks the scope the call needs."""


_ERRORS: dict[grpc.StatusCode, type[ServiceError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidRequest,
    grpc.StatusCode.RESOURCE_EXHAUSTED: LimitExceeded,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.UNAVAILABLE: ServiceUnavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
}


def service_error(err: grpc.RpcError) -> ServiceError:
    code: grpc.StatusCode = err.code()
    details: str = err.details() or ""
    request_id = ""
    retry_after: float | None = None
    trailers = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in trailers or ():
        if key == "x-request-id" and isinstance(value, str):
            request_id = value
        elif key == "grpc-status-details-bin" and isinstance(value, bytes):
            retry_after = _retry_delay(value)
    return _ERRORS.get(code, ServiceError)(code, details, request_id, retry_after)


def _retry_delay(status_bytes: bytes) -> float | None:
    """The google.rpc.RetryInfo in a grpc-status-details-bin trailer, in seconds."""
    try:
        from google.rpc import error_details_pb2, status_pb2

        status = status_pb2.Status.FromString(status_bytes)
        for detail in status.details:
            if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                info = error_details_pb2.RetryInfo()
                detail.Unpack(info)
                return float(info.retry_delay.ToTimedelta().total_seconds())
    except Exception:  # not ours to fail on: the hint is optional
        return None
    return None


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _read(path: str | Path | None) -> bytes | None:
    return Path(path).expanduser().read_bytes() if path else None


# ---------------------------------------------------------------------------------------- results

@dataclass(frozen=True, slots=True)
class Submission:
    """A verified, stored log."""

    info: spb.ReplayInfo
    created: bool  # False: the same log was already stored
    replay: apb.AnnotatedReplay

    @property
    def id(self) -> str:
        return self.info.id


@dataclass(frozen=True, slots=True)
class LiveUpdate:
    """One answer of a live stream: annotations as soon as events could be judged."""

    annotations: list[apb.Annotation]
    events_received: int
    game_over: bool
    finished: spb.LiveFinished | None = None  # only on the last update

    @property
    def violations(self) -> list[tuple[apb.Annotation, apb.Violation]]:
        return [(a, v) for a in self.annotations for v in a.violations]


class LiveCall:
    """A live stream in progress (VerifierClient.live_call): iterate it for the updates; ``cancel`` from any
    thread ends it (the iteration then raises ServiceError CANCELLED)."""

    def __init__(self, call: Any) -> None:
        self._call = call

    def __iter__(self) -> Iterator[LiveUpdate]:
        try:
            for res in self._call:
                yield LiveUpdate(list(res.annotations), res.events_received, res.game_over,
                                 res.finished if res.HasField("finished") else None)
        except grpc.RpcError as err:
            raise service_error(err) from None

    def cancel(self) -> None:
        self._call.cancel()


@dataclass(frozen=True, slots=True)
class ListFilter:
    tournament: str = ""
    round: str = ""
    table: str = ""
    submitter: str = ""
    player: str = ""
    has_violations: bool | None = None
    violation_code: str = ""
    # Only replays with a violation on a decision of this source (sgsverify.v1.DecisionSource; 0: any).
    violation_source: int = 0
    submitted_after: datetime | None = None
    submitted_before: datetime | None = None
    # Only this tenant's (an admin token sees every tenant's otherwise; any other sees only its own).
    tenant: str = ""
    # "engine": replays this engine replayed; "server": records it did not, judged by their server's rules only.
    judged_by: str = ""

    def request(self, page_size: int, page_token: str) -> spb.ListReplaysRequest:
        req = spb.ListReplaysRequest(tournament=self.tournament, round=self.round, table=self.table,
                                     submitter=self.submitter, player=self.player,
                                     violation_code=self.violation_code, page_size=page_size,
                                     page_token=page_token, tenant=self.tenant, judged_by=self.judged_by,
                                     violation_source=self.violation_source)  # type: ignore[arg-type]
        if self.has_violations is not None:
            req.has_violations = self.has_violations
        if self.submitted_after is not None:
            req.submitted_after.CopyFrom(_timestamp(self.submitted_after))
        if self.submitted_before is not None:
            req.submitted_before.CopyFrom(_timestamp(self.submitted_before))
        return req


def _timestamp(at: datetime) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(at)
    return ts


def _event_bytes(ev: object) -> bytes:
    if not isinstance(ev, pb.Event):
        raise TypeError(f"a batch holds events (sgsverify.v1.Event), not {type(ev).__name__}")
    return ev.SerializeToString()


def _events_request(events: Iterable[pb.Event]) -> bytes:
    """The encoding of ``VerifyLiveRequest(events=events)``, from each event's own encoding (written as its field
    3 by the wire view, sgsverify/internal/wire_views.proto: no copy of the events into a request message)."""
    return wv.Field3(items=[_event_bytes(ev) for ev in events]).SerializeToString()


# ---------------------------------------------------------------------------------------- submitting, shared

# What one log of verify_many / upload_many came to.
Outcome = Submission | ServiceError | OSError


def _verify_request(log: pb.GameLog | bytes | Path, metadata: Metadata | None,
                    summary_only: bool) -> spb.VerifyLogRequest:
    req = spb.VerifyLogRequest(summary_only=summary_only)
    if isinstance(log, Path):
        log = log.read_bytes()
    if isinstance(log, bytes):
        req.encoded_log = log
    else:
        req.log.CopyFrom(log)
    if metadata is not None:
        req.metadata.CopyFrom(metadata)
    return req


def _upload_requests(log: pb.GameLog, metadata: Metadata | None, batch_size: int,
                     summary_only: bool) -> Iterator[bytes]:
    """UploadLog's messages for ``log``, encoded. They are made from the log's own encoding: its GameLog.events
    fields read as bytes (sgsverify/internal/wire_views.proto), each batch of them written as
    UploadLogRequest.events (the same messages, field 3), in protobuf's C code: no event is copied or parsed."""
    _check_batch_size(batch_size)
    events = wv.Field2.FromString(log.SerializeToString()).items
    first = spb.UploadLogRequest(header=log.header, summary_only=summary_only)
    if metadata is not None:
        first.metadata.CopyFrom(metadata)

    def requests() -> Iterator[bytes]:
        yield first.SerializeToString() + wv.Field3(items=events[:batch_size]).SerializeToString()
        for i in range(batch_size, len(events), batch_size):
            yield wv.Field3(items=events[i:i + batch_size]).SerializeToString()

    return requests()


def _check_batch_size(batch_size: int) -> None:
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")


def _check_bulk(in_flight: int, max_retries: int) -> None:
    if in_flight < 1:
        raise ValueError(f"in_flight must be at least 1, not {in_flight}")
    if max_retries < 0:
        raise ValueError(f"max_retries must not be negative, not {max_retries}")


def retrying(call: Callable[[], T], max_retries: int = DEFAULT_RETRIES, stop: threading.Event | None = None) -> T:
    """``call()``, made again after the wait the server asks for each time it refuses with a retry hint (a limit
    of its, for a while), up to ``max_retries`` times; any other error, and the last refusal, is raised. Once
    ``stop`` is set (Ctrl-C in `submit`), nothing is sent again: the refusal is raised."""
    retries = 0
    while True:
        try:
            return call()
        except ServiceError as err:
            if err.retry_after is None or retries >= max_retries:
                raise
            retries += 1
            wait = min(err.retry_after, MAX_RETRY_WAIT)
            if stop is None:
                time.sleep(wait)
            elif stop.wait(wait):
                raise


def _pipelined(starts: Iterable[Callable[[], grpc.Future]], in_flight: int,
               max_retries: int = DEFAULT_RETRIES) -> Generator[Outcome, None, None]:
    """Start the calls, keeping ``in_flight`` of them going, and yield their outcomes in order; a call the server
    refused with a retry hint is started again after the wait (``retrying``), in its place."""
    window: deque[tuple[Callable[[], grpc.Future], grpc.Future | OSError]] = deque()
    try:
        for start in starts:
            window.append((start, _started(start)))
            if len(window) >= in_flight:
                yield _settled(*window.popleft(), max_retries)
        while window:
            yield _settled(*window.popleft(), max_retries)
    finally:
        for _, call in window:
            if not isinstance(call, OSError):
                call.cancel()


def _started(start: Callable[[], grpc.Future]) -> grpc.Future | OSError:
    try:
        return start()
    except OSError as err:  # (a file that cannot be read: its place in the order keeps its error)
        return err


def _settled(start: Callable[[], grpc.Future], call: grpc.Future | OSError, max_retries: int) -> Outcome:
    """The outcome of ``call``, started again by ``start`` as ``retrying`` says."""
    calls = [call]

    def attempt() -> Submission | OSError:
        outcome = _outcome(calls.pop() if calls else _started(start))
        if isinstance(outcome, ServiceError):
            raise outcome
        return outcome

    try:
        return retrying(attempt, max_retries)
    except ServiceError as err:
        return err


def _outcome(call: grpc.Future | OSError) -> Outcome:
    if isinstance(call, OSError):
        return call
    try:
        res = call.result()
    except grpc.RpcError as err:
        return service_error(err)
    return Submission(res.info, res.created, res.replay)


# ---------------------------------------------------------------------------------------- the client

class VerifierClient:
    """A connection to one server. Thread-safe; close it (or use ``with``) when done."""

    def __init__(self, address: str | None = None, *, timeout: float | None = None,
                 max_message_bytes: int = MAX_MESSAGE_BYTES, token: str | None = None, tls: bool | None = None,
                 tls_ca: str | Path | None = None, client_cert: str | Path | None = None,
                 client_key: str | Path | None = None, lb_policy: str | None = None) -> None:
        """``lb_policy``: gRPC's load balancing over the addresses a target resolves to, e.g. ``round_robin`` with
        ``ipv4:10.0.0.1:50051,10.0.0.2:50051`` (every replica in turn, as a load balancer would).
        ``token``: the bearer token sent with every call (default $SGS_VERIFY_TOKEN; "" sends none).
        TLS (default: $SGS_VERIFY_TLS, or when a CA or a client certificate is given): ``tls_ca`` the CA that
        signed the server's certificate (default $SGS_VERIFY_TLS_CA, else the system's roots),
        ``client_cert`` / ``client_key`` a client certificate (default $SGS_VERIFY_CLIENT_CERT /
        $SGS_VERIFY_CLIENT_KEY) for a server that requires one."""
        self.address = address or default_server()
        self.timeout = timeout
        token = os.environ.get(ENV_TOKEN, "") if token is None else token
        self.metadata: tuple[tuple[str, str], ...] = (("authorization", f"Bearer {token.strip()}"),) \
            if token.strip() else ()
        tls_ca = tls_ca or os.environ.get(ENV_TLS_CA) or None
        client_cert = client_cert or os.environ.get(ENV_CLIENT_CERT) or None
        client_key = client_key or os.environ.get(ENV_CLIENT_KEY) or None
        if tls is None:
            tls = _env_flag(ENV_TLS) or bool(tls_ca or client_cert)
        if bool(client_cert) != bool(client_key):
            raise ValueError("a client certificate needs its key, and a key its certificate")
        options: list[tuple[str, Any]] = [("grpc.max_receive_message_length", max_message_bytes),
                   ("grpc.max_send_message_length", max_message_bytes)]
        if lb_policy:
            options.append(("grpc.lb_policy_name", lb_policy))
        self.tls = tls
        if tls:
            credentials = grpc.ssl_channel_credentials(root_certificates=_read(tls_ca), private_key=_read(client_key),
                                                       certificate_chain=_read(client_cert))
            self.channel = grpc.secure_channel(self.address, credentials, options=options)
        else:
            self.channel = grpc.insecure_channel(self.address, options=options)
        self.stub = spb_grpc.VerifierServiceStub(self.channel)  # type: ignore[no-untyped-call]
        # UploadLog and VerifyLive with requests already encoded (upload makes them from the log's bytes, live from
        # each event's).
        self._live_bytes = self.channel.stream_stream("/sgsverify.v1.VerifierService/VerifyLive",
                                                      request_serializer=None,
                                                      response_deserializer=spb.VerifyLiveResponse.FromString)
        self._upload_bytes = self.channel.stream_unary("/sgsverify.v1.VerifierService/UploadLog",
                                                       request_serializer=None,
                                                       response_deserializer=spb.VerifyLogResponse.FromString)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> VerifierClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _timeout(self, timeout: float | None) -> float | None:
        return self.timeout if timeout is None else timeout

    def wait_ready(self, timeout: float = 10.0) -> None:
        """Block until the channel is connected (ServiceUnavailable after ``timeout``)."""
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise ServiceUnavailable(grpc.StatusCode.UNAVAILABLE,
                                     f"no server answered at {self.address} within {timeout:g} s") from None

    # ------------------------------------------------------------------ submitting

    def verify(self, log: pb.GameLog | bytes | Path, metadata: Metadata | None = None, *,
               summary_only: bool = False, timeout: float | None = None) -> Submission:
        """Verify a whole log in one message: a GameLog, its bytes (binary or JSON), or a file."""
        req = _verify_request(log, metadata, summary_only)
        try:
            res = self.stub.VerifyLog(req, timeout=self._timeout(timeout), metadata=self.metadata)
        except grpc.RpcError as err:
            raise service_error(err) from None
        return Submission(res.info, res.created, res.replay)

    def upload(self, log: pb.GameLog, metadata: Metadata | None = None, *, batch_size: int = DEFAULT_BATCH_SIZE,
               summary_only: bool = False, timeout: float | None = None) -> Submission:
        """Verify a log sent as a stream of event batches (for logs too large for one message)."""
        requests = _upload_requests(log, metadata, batch_size, summary_only)
        try:
            res = self._upload_bytes(requests, timeout=self._timeout(timeout), metadata=self.metadata)
        except grpc.RpcError as err:
            raise service_error(err) from None
        return Submission(res.info, res.created, res.replay)

    def verify_many(self, logs: Iterable[pb.GameLog | bytes | Path], metadata: Metadata | None = None, *,
                    in_flight: int = DEFAULT_IN_FLIGHT, summary_only: bool = True, timeout: float | None = None,
                    max_retries: int = DEFAULT_RETRIES) -> Generator[Outcome, None, None]:
        """``verify`` for many logs, ``in_flight`` calls going at once on this channel: yields each log's outcome
        in the order given — its Submission, or the ServiceError (an OSError: the file) that stopped it; one
        log's failure does not stop the others. A log the server refuses for a while (its rate limit, say) and
        says when to retry is sent again then, up to ``max_retries`` times. Logs are read as the calls go, so
        an iterable may be long. Stopping the iteration early cancels the calls still going (those may be
        stored, as any call the server finished before the cancel). ``timeout`` is each call's."""
        _check_bulk(in_flight, max_retries)

        def start(log: pb.GameLog | bytes | Path) -> grpc.Future:
            req = _verify_request(log, metadata, summary_only)
            return self.stub.VerifyLog.future(req, timeout=self._timeout(timeout), metadata=self.metadata)

        return _pipelined((functools.partial(start, log) for log in logs), in_flight, max_retries)

    def upload_many(self, logs: Iterable[pb.GameLog], metadata: Metadata | None = None, *,
                    batch_size: int = DEFAULT_BATCH_SIZE, in_flight: int = DEFAULT_IN_FLIGHT,
                    summary_only: bool = True, timeout: float | None = None,
                    max_retries: int = DEFAULT_RETRIES) -> Generator[Outcome, None, None]:
        """``upload`` for many logs, ``in_flight`` streams going at once on this channel; outcomes as for
        ``verify_many``."""
        _check_bulk(in_flight, max_retries)
        _check_batch_size(batch_size)  # (now, not at the first log)

        def start(log: pb.GameLog) -> grpc.Future:
            requests = _upload_requests(log, metadata, batch_size, summary_only)
            return self._upload_bytes.future(requests, timeout=self._timeout(timeout), metadata=self.metadata)

        return _pipelined((functools.partial(start, log) for log in logs), in_flight, max_retries)

    def submit_record(self, engine: str, data: bytes, name: str = "", metadata: Metadata | None = None, *,
                      chunk_size: int = 1 << 20, summary_only: bool = False, timeout: float | None = None
                      ) -> Submission:
        """Verify another engine's record (a FreeKill transcript or .fk.rep), imported by the server and
        streamed in chunks of ``chunk_size`` bytes (UploadLog with ForeignLog)."""

        def requests() -> Iterator[spb.UploadLogRequest]:
            first = spb.UploadLogRequest(summary_only=summary_only,
                                         foreign=spb.ForeignLog(engine=engine, name=name, data=data[:chunk_size]))
            if metadata is not None:
                first.metadata.CopyFrom(metadata)
            yield first
            for start in range(chunk_size, len(data), chunk_size):
                yield spb.UploadLogRequest(foreign=spb.ForeignLog(data=data[start:start + chunk_size]))

        try:
            res = self.stub.UploadLog(requests(), timeout=self._timeout(timeout), metadata=self.metadata)
        except grpc.RpcError as err:
            raise service_error(err) from None
        return Submission(res.info, res.created, res.replay)

    def live(self, header: pb.GameHeader, events: Iterable[pb.Event] | Iterable[Sequence[pb.Event]],
             metadata: Metadata | None = None, *, batch_size: int = DEFAULT_BATCH_SIZE, discard: bool = False,
             timeout: float | None = None) -> Iterator[LiveUpdate]:
        """Stream a game as it is played; yields updates as the server judges each batch.

        ``events`` is either events (grouped into batches of ``batch_size``) or an iterable of
        batches (lists of events, sent as they come: a game server sends what it has). The last
        update has ``finished`` set (with the stored replay's id unless ``discard``).
        """

        def requests() -> Iterator[bytes]:
            # Each batch is written as VerifyLiveRequest.events fields from each event's own encoding (the same
            # bytes the message would have), with no copy of the events into a request message.
            first = spb.VerifyLiveRequest(header=header, discard=discard)
            if metadata is not None:
                first.metadata.CopyFrom(metadata)
            yield first.SerializeToString()
            pending: list[pb.Event] = []
            for item in events:
                if isinstance(item, pb.Event):
                    pending.append(item)
                    if len(pending) >= batch_size:
                        yield _events_request(pending)
                        pending = []
                else:
                    if pending:
                        yield _events_request(pending)
                        pending = []
                    yield _events_request(item)
            if pending:
                yield _events_request(pending)

        call = self._live_bytes(requests(), timeout=self._timeout(timeout), metadata=self.metadata)
        finished = False
        try:
            for res in call:
                finished = finished or res.HasField("finished")
                yield LiveUpdate(list(res.annotations), res.events_received, res.game_over,
                                 res.finished if res.HasField("finished") else None)
        except grpc.RpcError as err:
            raise service_error(err) from None
        finally:
            if finished:
                # The last answer came (the game is stored): the call is let end, not cancelled — a cancel that
                # reaches the server before its write of that answer completes makes it delete the game again
                # (a caller that stops at the finished update lost its replay to that race, 1 in ~7 here).
                call.code()
            else:
                call.cancel()

    def live_call(self, header: pb.GameHeader, batches: Iterable[Sequence[pb.Event]],
                  metadata: Metadata | None = None, *, discard: bool = False) -> LiveCall:
        """A live stream another thread can cancel (``LiveCall.cancel``: the server stores nothing): ``batches``
        are sent as they come (an empty one sends nothing); iterate the call for the updates, as ``live``'s."""

        def requests() -> Iterator[bytes]:
            first = spb.VerifyLiveRequest(header=header, discard=discard)
            if metadata is not None:
                first.metadata.CopyFrom(metadata)
            yield first.SerializeToString()
            for batch in batches:
                if batch:
                    yield _events_request(batch)

        return LiveCall(self._live_bytes(requests(), metadata=self.metadata))

    # ------------------------------------------------------------------ reading

    def get(self, replay_id: str, *, include_log: bool = False, include_original: bool = False,
            timeout: float | None = None, run: str = "") -> spb.GetReplayResponse:
        """A stored replay by id (or a unique prefix of at least 8 hex digits)."""
        try:
            res: spb.GetReplayResponse = self.stub.GetReplay(
                spb.GetReplayRequest(id=replay_id, include_log=include_log, include_original=include_original,
                                     run=run),
                timeout=self._timeout(timeout), metadata=self.metadata)
        except grpc.RpcError as err:
            raise service_error(err) from None
        return res

    def regress(self, filters: ListFilter = ListFilter(), *, run: str = "", against: str = "",
                restart: bool = False) -> Iterator[spb.RegressResponse]:
        """Re-verify stored replays on the server and compare (progress, changes, then a summary); needs a token
        with the admin scope."""
        req = spb.RegressRequest(filter=filters.request(0, ""), run=run, against=against, restart=restart)
        try:
            yield from self.stub.Regress(req, metadata=self.metadata)
        except grpc.RpcError as err:
            raise service_error(err) from None

    def list_runs(self, *, timeout: float | None = None) -> list[spb.RunInfo]:
        """The stored named regression runs, by name (over every tenant); needs a token with the admin scope."""
        try:
            res: spb.ListRunsResponse = self.stub.ListRuns(spb.ListRunsRequest(), timeout=self._timeout(timeout),
                                                           metadata=self.metadata)
        except grpc.RpcError as err:
            raise service_error(err) from None
        return list(res.runs)

    def list_page(self, filters: ListFilter = ListFilter(), *, page_size: int = 50, page_token: str = "",
                  timeout: float | None = None) -> spb.ListReplaysResponse:
        try:
            res: spb.ListReplaysResponse = self.stub.ListReplays(filters.request(page_size, page_token),
                                                                 timeout=self._timeout(timeout), metadata=self.metadata)
        except grpc.RpcError as err:
            raise service_error(err) from None
        return res

    def list(self, filters: ListFilter = ListFilter(), *, page_size: int = 200,
             limit: int | None = None) -> Iterator[spb.ReplayInfo]:
        """Every matching replay, newest first, fetching pages as needed."""
        token = ""
        seen = 0
        while True:
            page = self.list_page(filters, page_size=page_size, page_token=token)
            for info in page.replays:
                if limit is not None and seen >= limit:
                    return
                seen += 1
                yield info
            token = page.next_page_token
            if not token:
                return

    def standings(self, tournament: str, *, tenant: str = "", exclude_violations: bool = False,
                  timeout: float | None = None) -> spb.GetStandingsResponse:
        """The tournament's standings (docs/service.md#standings): players ranked by total score, its games with
        their scores, marked when they have violations."""
        try:
            res: spb.GetStandingsResponse = self.stub.GetStandings(
                spb.GetStandingsRequest(tournament=tournament, tenant=tenant, exclude_violations=exclude_violations),
                timeout=self._timeout(timeout), metadata=self.metadata)
        except grpc.RpcError as err:
            raise service_error(err) from None
        return res

    def delete(self, replay_id: str, *, timeout: float | None = None) -> None:
        try:
            self.stub.DeleteReplay(spb.DeleteReplayRequest(id=replay_id), timeout=self._timeout(timeout),
                                   metadata=self.metadata)
        except grpc.RpcError as err:
            raise service_error(err) from None

    def health(self, service: str = "", *, timeout: float | None = 5.0) -> str:
        """The server's health status name, e.g. "SERVING"."""
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        try:
            res = health_pb2_grpc.HealthStub(self.channel).Check(health_pb2.HealthCheckRequest(service=service),
                                                                 timeout=timeout)
        except grpc.RpcError as err:
            raise service_error(err) from None
        name: str = health_pb2.HealthCheckResponse.ServingStatus.Name(res.status)
        return name
