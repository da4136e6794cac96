"""The VerifierService implementation on grpc.aio: wires the verifier (in worker processes,
service/workers.py) to the store (in I/O threads).

Nothing CPU-heavy runs on the event loop: whole logs and live games are verified in the worker
processes, and every store call runs in an I/O thread pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, ParamSpec, TypeVar

import grpc
from google.protobuf.message import Message
from grpc._cython.cygrpc import ExecuteBatchError

from service import guard, wirecount
from service.config import Limits
from service.convert import metadata_from, replay_change, replay_info, request_filter, run_info, summary_only
from service.guard import Principal, StreamIdle, idle_limited
from service.live import LiveGame
from service.metrics import Metrics
from service.standings import standings_response
from service.work import (
    TooManyEvents,
    Verified,
    VerifyJob,
    canonical_bytes,
    events_encoding,
    header_problems,
    log_sha256,
)
from service.workers import LiveSession, WorkerLost, WorkerPool, retrieved
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from storage.standings import standings
from storage.store import (
    HASH_LENGTH,
    SERVER_FORMATS,
    Audit,
    InvalidQuery,
    InvalidRecord,
    NewReplay,
    ReplayFilter,
    ReplayNotFound,
    ReplaySummary,
    StorageUnavailable,
    Store,
    SubmissionMetadata,
    run_name_problems,
    tenant_problem,
)
from verifier import LogFormatError, load_log
from verifier.logio import MAX_LOG_BYTES, printable

SERVICE_NAME = guard.SERVICE_NAME
log = logging.getLogger("sgs-verify.service")
audit_log = logging.getLogger("sgs-verify.audit")

P = ParamSpec("P")
T = TypeVar("T")


class RpcFailure(Exception):
    """Ends an RPC with a status code and a message saying what and where."""

    def __init__(self, code: grpc.StatusCode, message: str, retry_after: float | None = None) -> None:
        # The message goes out as the status's details: it must encode as UTF-8 (input may put a lone
        # surrogate into it) and stay small (details travel in a trailer, which gRPC limits).
        message = printable(message)
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after = retry_after

    def failure(self, where: str) -> RpcFailure:
        return self

    def status(self) -> tuple[grpc.StatusCode, str, float | None]:
        """What ``guard.abort`` takes, without the exception (and the frames its traceback holds)."""
        return self.code, self.message, self.retry_after


class MalformedRequest:
    """Stands in for a request message that could not be parsed, or was not taken (see ``lenient``)."""

    def __init__(self, type_name: str, error: Exception | str, code: grpc.StatusCode = grpc.StatusCode.INVALID_ARGUMENT,
                 retry: bool = True) -> None:
        self.code = code
        self.reason = error if isinstance(error, str) else f"not a valid {type_name}: {error}"
        self.retry = retry  # (a refusal for room may go through later; one for a limit never does)

    def failure(self, where: str) -> RpcFailure:
        """The RPC's status: ``where`` ("the request", "UploadLogRequest message 3") is / was refused."""
        if self.code == grpc.StatusCode.INVALID_ARGUMENT:
            return RpcFailure(self.code, f"{where} is {self.reason}")
        return RpcFailure(self.code, f"{where} was not taken: {self.reason}", retry_after=1.0 if self.retry else None)


def lenient(message_type: Any) -> Callable[[bytes], Any]:
    """A request deserializer that never raises, so that bytes that are no valid message end
    the RPC with INVALID_ARGUMENT (saying which message) instead of gRPC's bare INTERNAL. Each message's
    bytes are counted against the server's byte budget (service/guard.py) before they are parsed: one that
    does not fit is not parsed, and the RPC ends RESOURCE_EXHAUSTED."""

    name = message_type.DESCRIPTOR.name

    def parse(data: bytes) -> Any:
        scope = guard.current()
        if scope is not None:
            problem = scope.charge(len(data))
            if problem is not None:
                return MalformedRequest(name, problem, grpc.StatusCode.RESOURCE_EXHAUSTED)
            if scope.max_events:
                # Counted on the wire first: many small events cost the parser ~20x their bytes (issue 27, item 4).
                left = scope.max_events - scope.events
                if wirecount.could_exceed(len(data), left):
                    try:
                        count = wirecount.events_in(data, name, left)
                    except wirecount.WireError:
                        count = 0  # not well formed: the parser says so below
                    if count > left:
                        return MalformedRequest(name, f"the game has more than {scope.max_events} events (counted "
                                                f"before parsing); this server takes at most {scope.max_events} "
                                                "per game (--max-events)", grpc.StatusCode.RESOURCE_EXHAUSTED,
                                                retry=False)
                    scope.events += count
        try:
            return message_type.FromString(data)
        except Exception as err:  # DecodeError, or anything the parser raises
            return MalformedRequest(message_type.DESCRIPTOR.name, err)

    return parse


def serialized(message: Message | bytes) -> bytes:
    """A response serializer that sends bytes made by a worker process as they are."""
    return message if isinstance(message, bytes) else message.SerializeToString()


def failure_for(err: BaseException) -> RpcFailure | None:
    """The RPC status for an exception from verification or storage; None if unexpected."""
    if isinstance(err, RpcFailure):
        return err
    if isinstance(err, StorageUnavailable):
        # The detail (the database's URL, host, driver message) is for the server's log, not for clients.
        log.warning("%s", err)
        why = "locked by another writer" if "locked" in str(err) else "it cannot be reached"
        return RpcFailure(grpc.StatusCode.UNAVAILABLE, f"the replay store is unavailable ({why}); retry later",
                          retry_after=1.0)
    if isinstance(err, StreamIdle):
        return RpcFailure(grpc.StatusCode.DEADLINE_EXCEEDED, str(err))
    if isinstance(err, ReplayNotFound):
        return RpcFailure(grpc.StatusCode.NOT_FOUND, str(err))
    if isinstance(err, InvalidQuery | InvalidRecord | LogFormatError):
        return RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, str(err))
    if isinstance(err, TooManyEvents):
        return RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED, str(err))
    if isinstance(err, WorkerLost):
        return RpcFailure(grpc.StatusCode.UNAVAILABLE, str(err))
    return None


def failure_or_internal(err: BaseException, rpc: str) -> RpcFailure:
    """The RPC status for any exception: an unexpected one (a bug) is logged with its traceback and
    answered INTERNAL, naming only its type — never UNKNOWN, never a message that might carry an SQL
    statement or the server's internals."""
    failure = failure_for(err)
    if failure is not None:
        return failure
    rid = guard.request_id()
    log.error("%s failed unexpectedly", rpc, exc_info=err)
    return RpcFailure(grpc.StatusCode.INTERNAL, f"{rpc} failed on the server ({type(err).__name__}); the server's "
                      "log has the details" + (f" (request id {rid})" if rid else ""))


def unary_errors(handler: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
    """Turn the domain's exceptions into RPC statuses (violations are never exceptions)."""

    @functools.wraps(handler)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> T:
        try:
            return await handler(self, request, context)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            if isinstance(err, grpc.aio.AbortError):
                raise
            self._noticed(err)
            status = failure_or_internal(err, handler.__name__).status()
        # Aborted outside the except block, with no exception left in this frame: the AbortError that gRPC keeps
        # with the call must not reach the exception (as its __context__, or through this frame), whose
        # traceback holds every frame of the request — and its bytes.
        await guard.abort(context, *status)
        raise AssertionError("unreachable: abort raises")

    return wrapper


def _invalid(problems: list[str], where: str) -> None:
    if problems:
        raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, "; ".join(f"{where}{p}" for p in problems))


LIVE_IN_FLIGHT = 8  # batches of a live game sent to its worker ahead of their answers


@dataclasses.dataclass(slots=True)
class _LiveStream:
    """What _read_live learns of the stream, for _live_game."""

    game: LiveSession | None = None
    discard: bool = False
    ended: bool = False  # the request stream has ended: a half-close, or a cancel (they look alike)
    half_closed: bool = False  # an answer was written after it ended: the end was the client's half-close
    server: spb.ServerVerdicts | None = None  # the recording server's verdicts, merged from every message


_LiveItem = tuple[asyncio.Future[bytes], str] | BaseException | None  # a batch sent (and where), an error, the end


async def _live_answer(game: LiveSession, sent: asyncio.Future[bytes], where: str) -> bytes:
    try:
        return await game.answer(sent)
    except LogFormatError as err:
        raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: {err}") from None


def _drop_unanswered(answers: asyncio.Queue[_LiveItem]) -> None:
    """The batches sent but no longer waited for (the call ended early): their answers are not wanted."""
    while not answers.empty():
        item = answers.get_nowait()
        if isinstance(item, tuple):
            item[0].cancel()


class VerifierServicer:
    """sgsverify.v1.VerifierService."""

    def __init__(self, store: Store, limits: Limits, pool: WorkerPool, io: Executor,
                 metrics: Metrics | None = None, on_store_unavailable: Callable[[], None] | None = None) -> None:
        self.store = store
        self.limits = limits
        self.pool = pool
        self.io_executor = io
        self.metrics = metrics or Metrics()
        self.on_store_unavailable = on_store_unavailable

    # ------------------------------------------------------------------ helpers

    def _noticed(self, err: BaseException) -> None:
        """An RPC failed on ``err``: a store found unavailable is checked by the health monitor at once."""
        if isinstance(err, StorageUnavailable) and self.on_store_unavailable is not None:
            self.on_store_unavailable()

    @staticmethod
    def _principal() -> Principal:
        """The caller of the RPC in progress (set by service.guard.GuardInterceptor, always installed)."""
        scope = guard.current()
        if scope is None:  # no interceptor: refuse rather than serve everyone
            raise RpcFailure(grpc.StatusCode.INTERNAL, "the request has no caller (the server's guard is missing)")
        return scope.principal

    def _counted(self, source: str, record: NewReplay) -> None:
        v = record.verdict
        self.metrics.verified(source, [x.code for x in v.violations], record.event_count,
                              disagreements=v.disagreements, server_judged=record.log_format in SERVER_FORMATS)

    async def _io(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.io_executor, functools.partial(fn, *args, **kwargs))

    async def _save(self, record: NewReplay, tenant: str) -> tuple[ReplaySummary, bool]:
        """Store a game whose whole submission has come (a whole log, or a stream its client half-closed): from
        here it is stored whatever becomes of the call. The server cannot know whether the client read an
        answer that was written (it may read it and close the call at once, which the server sees as a cancel),
        so undoing a store on a cancel could lose a replay the client was told is stored; a client that got no
        answer sends the log again and is answered created=false with the same id (the store is keyed by the
        log's hash). A cancel that comes meanwhile does not stop the store's thread: the call waits for it, so
        that a call is done with the store once it has ended, then goes on cancelled."""
        loop = asyncio.get_running_loop()
        saving = loop.run_in_executor(self.io_executor, self.store.save, record, tenant)
        cancelled: asyncio.CancelledError | None = None
        while not saving.done():
            try:
                await asyncio.shield(saving)
            except asyncio.CancelledError as err:
                cancelled = err  # (and waited for again: a second cancel, the token watch's, may come meanwhile)
            except Exception:
                break  # (the store failed: said below)
        if cancelled is not None:
            if not saving.cancelled() and saving.exception() is None:
                log.info("a call was cancelled while its game was stored: replay %s stays stored (a client that got "
                         "no answer sends the game again and is answered created=false)", saving.result()[0].id[:12])
            raise cancelled
        return saving.result()

    @staticmethod
    async def _confirm_closed_by_client(context: grpc.aio.ServicerContext) -> None:
        """Once an upload's request stream has ended (and before it is stored): raise CancelledError if it
        ended in a cancel, not a half-close. The two look alike to the handler, and the task that tells it of a
        cancel can run after the store is done and the handler has returned (on a busy machine), leaving a
        cut-off game stored for a call the client saw cancelled. Sending the response's initial metadata asks
        the call itself: gRPC refuses it on a call the client reset, and accepts it on one the client only
        half-closed."""
        try:
            await context.send_initial_metadata(())
        except ExecuteBatchError:
            raise asyncio.CancelledError("the upload's call was cancelled: its stream did not end in a half-close"
                                         ) from None

    def _timeout(self, context: grpc.aio.ServicerContext | None) -> float:
        timeout = self.limits.deadline_seconds
        remaining = None if context is None else context.time_remaining()
        return timeout if remaining is None else max(0.0, min(timeout, remaining))

    def _metadata(self, msg: spb.SubmissionMetadata, where: str = "") -> SubmissionMetadata:
        meta = metadata_from(msg)
        problems = meta.problems()
        if problems:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, where + "; ".join(problems))
        return meta

    def _check_event_count(self, count: int) -> None:
        if count > self.limits.max_events_per_game:
            raise TooManyEvents(count, self.limits.max_events_per_game)

    @staticmethod
    def _check_log_size(size: int) -> None:
        """A game sent in pieces (upload, live) is bound like a whole log: its events together."""
        if size > MAX_LOG_BYTES:
            raise RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"the game's events are over {MAX_LOG_BYTES} bytes together, the largest log this "
                             "server takes")

    def _check_record_size(self, size: int) -> None:
        if size > self.limits.max_record_bytes:
            raise RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"the foreign record is over {self.limits.max_record_bytes} bytes, this server's limit "
                             "(--max-record-bytes); compress it (xz, gzip) or import it offline (sgs-verify import)")

    def _foreign_job(self, foreign: spb.ForeignLog, data: bytes | bytearray, meta: SubmissionMetadata,
                     where: str) -> VerifyJob:
        from importers import ENGINES

        if foreign.engine not in ENGINES:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: engine {foreign.engine!r} has no importer "
                             f"here (known: {', '.join(ENGINES)})")
        if not data:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: the record is empty")
        self._check_record_size(len(data))
        return VerifyJob(data, meta, self.limits.max_events_per_game, foreign=foreign.engine, name=foreign.name,
                         max_record_bytes=self.limits.max_record_bytes)

    def _check_stream_length(self, count: int) -> None:
        if count > self.limits.max_stream_messages:
            raise RpcFailure(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"the stream has more than {self.limits.max_stream_messages} messages "
                             "(--max-stream-messages): send the events in fewer, larger batches")

    async def _verify(self, job: VerifyJob, where: str, context: grpc.aio.ServicerContext | None) -> Verified:
        timeout = self._timeout(context)
        try:
            record, summary = await self.pool.run(dataclasses.replace(job, return_log=False), timeout,
                                                  self.limits.deadline_seconds)
            return Verified(record if record.log_bytes else dataclasses.replace(record, log_bytes=bytes(job.data)),
                            summary)
        except LogFormatError as err:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: {err}") from None
        except TimeoutError:
            raise RpcFailure(grpc.StatusCode.DEADLINE_EXCEEDED,
                             f"verification took longer than {timeout:g} s (the server's --deadline is "
                             f"{self.limits.deadline_seconds:g} s, or the call's own deadline is shorter)") from None

    async def _stored_response(self, summary: ReplaySummary, want_summary_only: bool) -> spb.VerifyLogResponse:
        stored = await self._io(self.store.get, summary.id, tenant=summary.tenant)
        replay = apb.AnnotatedReplay.FromString(stored.replay_blob)
        if want_summary_only:
            replay = summary_only(replay)
        return spb.VerifyLogResponse(info=replay_info(summary), created=False, replay=replay)

    async def _submit(self, job: VerifyJob, known_sha: str | None, want_summary_only: bool, where: str,
                      context: grpc.aio.ServicerContext | None, principal: Principal,
                      source: str, streamed: bool = False) -> spb.VerifyLogResponse:
        """Verify and store as the principal's tenant's (only that tenant's copy of the log is looked for).
        ``streamed``: the log came as a request stream, whose end may have been a cancel: nothing is stored unless
        it was a half-close (_confirm_closed_by_client)."""
        tenant = principal.tenant
        # How a stream ended is asked of the call while the log is verified (it is known once the stream has
        # ended, as it has here), and the answer awaited before anything is stored.
        confirming = None
        if streamed and context is not None:  # (always, for a stream: it is a gRPC call)
            confirming = asyncio.ensure_future(self._confirm_closed_by_client(context))
            confirming.add_done_callback(retrieved)
        try:
            if known_sha is None:
                record, summary_blob = await self._verify(job, where, context)
            else:
                # Whether the tenant has the log already is looked up while a worker verifies it, not before: a
                # new log (the usual case) does not wait for the look-up, and one already stored is answered
                # from the store as soon as the look-up says so (its verification is dropped).
                verifying = asyncio.ensure_future(self._verify(job, where, context))
                verifying.add_done_callback(retrieved)
                try:
                    found = await self._io(self.store.find, known_sha, tenant)
                except BaseException:
                    verifying.cancel()
                    raise
                if found is not None:
                    verifying.cancel()
                    return await self._stored_response(found, want_summary_only)
                record, summary_blob = await verifying
            if confirming is not None:
                await confirming
        finally:
            if confirming is not None and not confirming.done():
                # Waited for, not cancelled: the initial metadata it sends may be on their way, and gRPC, not told
                # that they went, would send them again with the answer, which the call refuses (GRPC_CALL_ERROR_
                # TOO_MANY_OPERATIONS: the client waits for an answer that never comes). This happened to an upload
                # of a log already stored, answered from the store before the question had its answer.
                await asyncio.wait([confirming])
        self._counted(source, record)
        summary, created = await self._save(record, tenant)
        if not created:
            return await self._stored_response(summary, want_summary_only)
        # (A summary-only answer is parsed from the worker's summary, not from the whole replay less its annotations.)
        replay = apb.AnnotatedReplay.FromString(summary_blob if want_summary_only else record.verdict.replay_blob)
        return spb.VerifyLogResponse(info=replay_info(summary), created=True, replay=replay)

    async def submit_encoded(self, data: bytes | bytearray, meta: SubmissionMetadata, engine: str = "", name: str = "",
                             where: str = "the upload", principal: Principal = guard.OPEN) -> spb.VerifyLogResponse:
        """VerifyLog for callers in this process other than gRPC (the viewer's upload, service/web): a log's
        bytes (binary or JSON), or with ``engine`` another engine's record, verified and stored like
        ``encoded_log`` / ``foreign_log`` under the server's deadline, as the principal's tenant's; the
        response is summary only. Raises RpcFailure, or an error ``failure_for`` maps to one."""
        problems = meta.problems()
        if problems:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: " + "; ".join(problems))
        if engine:
            job = self._foreign_job(spb.ForeignLog(engine=engine, name=name), data, meta, where)
        elif not data:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{where} is empty")
        else:
            job = VerifyJob(data, meta, self.limits.max_events_per_game)
        return await self._submit(job, None, True, where, None, principal, "viewer")

    # ------------------------------------------------------------------ RPCs

    @unary_errors
    async def VerifyLog(self, request: spb.VerifyLogRequest | MalformedRequest,
                        context: grpc.aio.ServicerContext) -> spb.VerifyLogResponse:
        if isinstance(request, MalformedRequest):
            raise request.failure("the request")
        principal = self._principal()
        meta = self._metadata(request.metadata, "VerifyLogRequest.")
        source = request.WhichOneof("source")
        if source is None:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                             "VerifyLogRequest carries no log: set `log` (a GameLog) or `encoded_log` (its bytes)")
        if source == "log":
            log = request.log
            if not log.HasField("header"):
                raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                                 "VerifyLogRequest.log has no header: a GameLog starts with its GameHeader")
            _invalid(header_problems(log.header), "VerifyLogRequest.log.")
            self._check_event_count(len(log.events))
            data = canonical_bytes(log)
            job = VerifyJob(data, meta, self.limits.max_events_per_game, canonical=True)
            return await self._submit(job, log_sha256(data), request.summary_only, "VerifyLogRequest.log", context,
                                      principal, "whole")
        if source == "foreign_log":
            job = self._foreign_job(request.foreign_log, request.foreign_log.data, meta, "VerifyLogRequest.foreign_log")
            return await self._submit(job, None, request.summary_only, "VerifyLogRequest.foreign_log", context,
                                      principal, "foreign")
        encoded = request.encoded_log  # (each read of a bytes field is a copy)
        if not encoded:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, "VerifyLogRequest.encoded_log is empty")
        job = VerifyJob(encoded, meta, self.limits.max_events_per_game)
        return await self._submit(job, None, request.summary_only, "VerifyLogRequest.encoded_log", context,
                                  principal, "whole")

    @unary_errors
    async def UploadLog(self, request_iterator: AsyncIterator[spb.UploadLogRequest | MalformedRequest],
                        context: grpc.aio.ServicerContext) -> spb.VerifyLogResponse:
        principal = self._principal()
        header = pb.GameHeader()
        # The events arrive as batches; each is kept as its GameLog encoding (the canonical encoding of the
        # whole log is the header's followed by the batches', in order), not as parsed messages.
        batches: list[bytes] = []
        event_count = 0
        meta = SubmissionMetadata()
        want_summary_only = False
        count = 0
        foreign: spb.ForeignLog | None = None
        chunks: list[bytes] = []
        size = 0
        async for msg in idle_limited(request_iterator, self.limits.stream_idle_seconds, "the upload"):
            where = f"UploadLogRequest message {count}"
            count += 1
            self._check_stream_length(count)
            if isinstance(msg, MalformedRequest):
                raise msg.failure(where)
            if count == 1:
                if msg.HasField("foreign"):
                    if msg.HasField("header") or msg.events:
                        raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{where} carries both a foreign "
                                         "record and a header or events: an upload is one or the other")
                    foreign = msg.foreign
                    chunks = [msg.foreign.data]
                    size = len(msg.foreign.data)
                    self._check_record_size(size)
                elif not msg.HasField("header"):
                    raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                                     f"{where} has no header: the first message must carry the GameHeader (or a "
                                     "foreign record)")
                meta = self._metadata(msg.metadata, f"{where}: ")
                _invalid(header_problems(msg.header), f"{where}: ")
                header.CopyFrom(msg.header)
                want_summary_only = msg.summary_only
            elif msg.HasField("header") or msg.HasField("metadata"):
                raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                                 f"{where} carries a header or metadata: only the first message may")
            elif foreign is not None:
                if msg.events or msg.foreign.engine or msg.foreign.name:
                    raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{where}: after a foreign record's first "
                                     "message, each message carries only the next chunk (foreign.data)")
                size += len(msg.foreign.data)
                self._check_record_size(size)
                chunks.append(msg.foreign.data)
                continue
            elif msg.HasField("foreign"):
                raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                                 f"{where} carries a foreign record chunk, but the upload began with a header")
            if foreign is not None:
                continue
            event_count += len(msg.events)
            self._check_event_count(event_count)
            if msg.events:
                batch = events_encoding(msg)
                size += len(batch)  # (the events' own bytes, as the log will hold them)
                self._check_log_size(size)
                batches.append(batch)
        # (a cancelled call's stream ends here too, as if closed: _submit checks which before it stores)
        if count == 0:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                             "the upload stream is empty: its first message must carry the GameHeader")
        if foreign is not None:
            data = b"".join(chunks)
            del chunks[:]
            job = self._foreign_job(foreign, data, meta, "UploadLog (foreign record)")
            return await self._submit(job, None, want_summary_only, "UploadLog (foreign record)", context,
                                      principal, "foreign", streamed=True)
        data = canonical_bytes(pb.GameLog(header=header)) + b"".join(batches)
        del batches[:]
        job = VerifyJob(data, meta, self.limits.max_events_per_game, canonical=True)
        return await self._submit(job, log_sha256(data), want_summary_only, "UploadLog", context, principal, "upload",
                                  streamed=True)

    async def VerifyLive(self, request_iterator: AsyncIterator[spb.VerifyLiveRequest | MalformedRequest],
                         context: grpc.aio.ServicerContext) -> AsyncIterator[spb.VerifyLiveResponse | bytes]:
        try:
            async for response in self._live_game(request_iterator):
                yield response
        except asyncio.CancelledError:
            raise
        except Exception as err:
            if isinstance(err, grpc.aio.AbortError):
                raise
            self._noticed(err)
            status = failure_or_internal(err, "VerifyLive").status()
        else:
            return
        await guard.abort(context, *status)  # (outside the except block: see unary_errors)

    async def _live_game(self, request_iterator: AsyncIterator[spb.VerifyLiveRequest | MalformedRequest]
                         ) -> AsyncIterator[spb.VerifyLiveResponse | bytes]:
        """The live game's answers, in order. A reader task takes the client's batches and sends each to the
        game's worker as it comes, up to LIVE_IN_FLIGHT ahead of the answers: the next batch is received while
        one is judged. Anything wrong with a batch is raised after the answers to the batches before it.

        Each answer is written by gRPC (VerifyLive yields it on) before this generator is resumed: a write that
        fails ends the call there. gRPC ends a cancelled call's request stream as if the client had closed it,
        and a write the call refuses is how a cancel is told from a half-close (as _confirm_closed_by_client
        asks an upload's call): once the stream has ended, an answer that is written says the end was the
        client's half-close, the game's whole submission, which is then stored whatever becomes of the call
        (_save)."""
        principal = self._principal()
        stream = _LiveStream()
        answers: asyncio.Queue[_LiveItem] = asyncio.Queue(LIVE_IN_FLIGHT)
        reader = asyncio.create_task(self._read_live(request_iterator, stream, answers))
        try:
            while (item := await answers.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                assert stream.game is not None
                answer = await _live_answer(stream.game, *item)
                after_end = stream.ended
                yield answer
                stream.half_closed = stream.half_closed or after_end
            game = stream.game
            if game is None:
                raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                                 "the live stream is empty: its first message must carry the GameHeader")
            try:
                last, record = await game.finish()
            except LogFormatError as err:
                raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"the live game cannot be stored: {err}") from None
            finished = last.finished
            finished.annotation_count = record.verdict.annotation_count
            self._counted("live", record)
            if stream.discard:
                finished.info.CopyFrom(replay_info(LiveGame.unstored_summary(record)))
                finished.info.id = ""
                finished.info.tenant = principal.tenant
            else:
                if not stream.half_closed:
                    # Every answer went out before the stream's end was read, so none has said how it ended: one
                    # more, with nothing new in it, asks the call (a cancelled one refuses it, and this generator is
                    # not resumed). Rare: a client that half-closes right after its last batch is usually read
                    # ending before that batch's answer is written.
                    yield spb.VerifyLiveResponse(events_received=last.events_received, game_over=last.game_over)
                summary, created = await self._save(record, principal.tenant)
                finished.info.CopyFrom(replay_info(summary))
                finished.stored = True
                finished.created = created
            yield last
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader
            _drop_unanswered(answers)
            if stream.game is not None:
                await stream.game.close()

    async def _read_live(self, request_iterator: AsyncIterator[spb.VerifyLiveRequest | MalformedRequest],
                         stream: _LiveStream, answers: asyncio.Queue[_LiveItem]) -> None:
        """The reader of _live_game: each batch sent to the worker, its answer queued; then None (the stream
        ended) or the error that ended it."""
        scope = guard.current()
        try:
            count = 0
            size = 0
            game: LiveSession | None = None
            async for msg in idle_limited(request_iterator, self.limits.stream_idle_seconds, "the live game"):
                where = f"VerifyLiveRequest message {count}"
                count += 1
                self._check_stream_length(count)
                if isinstance(msg, MalformedRequest):
                    raise msg.failure(where)
                if game is None:
                    if not msg.HasField("header"):
                        raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                                         f"{where} has no header: the first message must carry the GameHeader")
                    meta = self._metadata(msg.metadata, f"{where}: ")
                    _invalid(header_problems(msg.header), f"{where}: ")
                    stream.discard = msg.discard
                    game = stream.game = self.pool.open_live()
                    game.start(msg.header, meta)  # (not waited for: the game starts while the next batch is read)
                elif msg.HasField("header") or msg.HasField("metadata"):
                    raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                                     f"{where} carries a header or metadata: only the first message may")
                if msg.HasField("server"):
                    if stream.server is None:
                        stream.server = spb.ServerVerdicts()
                    stream.server.MergeFrom(msg.server)
                self._check_event_count(game.event_count + len(msg.events))
                batch = events_encoding(msg)
                size += len(batch)  # (the events' own bytes, as the log will hold them)
                self._check_log_size(size)
                sent = game.send(batch, len(msg.events))
                del batch
                del msg
                if scope is not None:
                    # The batch is in the worker now (or on its way, in the sending thread: at most
                    # LIVE_IN_FLIGHT batches a stream): the byte budget counts what is still to be read.
                    scope.release_received()
                await answers.put((sent, where))
            stream.ended = True  # (before the end is queued: an answer written after this was written after it)
            if game is not None:
                # (the game is closed in its worker while the answers before are written)
                game.end(b"" if stream.server is None else stream.server.SerializeToString())
            item: BaseException | None = None
        except asyncio.CancelledError:
            raise
        except BaseException as err:  # raised in _live_game, after the answers before it
            item = err
        await answers.put(item)

    @unary_errors
    async def GetReplay(self, request: spb.GetReplayRequest | MalformedRequest,
                        context: grpc.aio.ServicerContext) -> spb.GetReplayResponse:
        if isinstance(request, MalformedRequest):
            raise request.failure("the request")
        principal = self._principal()
        _invalid(run_name_problems(request.run, "run"), "GetReplayRequest.")
        return await self._io(self._get_replay, request, principal.sees)

    def _get_replay(self, request: spb.GetReplayRequest, tenant: str | None) -> spb.GetReplayResponse:
        stored = self.store.get(request.id, include_log=request.include_log or request.include_original,
                                run=request.run, tenant=tenant)
        response = spb.GetReplayResponse(info=replay_info(stored.summary))
        response.replay.ParseFromString(stored.replay_blob)
        if stored.log_bytes is not None:
            if request.include_log and response.info.judged_by == "engine":
                # (a record this engine did not replay has no log of ours: include_original gives it as it came)
                response.log.CopyFrom(load_log(stored.log_bytes))
            if request.include_original:
                response.original = stored.log_bytes
        return response

    @unary_errors
    async def ListReplays(self, request: spb.ListReplaysRequest | MalformedRequest,
                          context: grpc.aio.ServicerContext) -> spb.ListReplaysResponse:
        if isinstance(request, MalformedRequest):
            raise request.failure("the request")
        filters = self._scoped(request_filter(request, "ListReplaysRequest."), request.tenant, "ListReplaysRequest")
        page = await self._io(self.store.list, filters, request.page_size, request.page_token)
        return spb.ListReplaysResponse(replays=[replay_info(s) for s in page.replays],
                                       next_page_token=page.next_page_token, total_count=page.total_count)

    @unary_errors
    async def DeleteReplay(self, request: spb.DeleteReplayRequest | MalformedRequest,
                           context: grpc.aio.ServicerContext) -> spb.DeleteReplayResponse:
        if isinstance(request, MalformedRequest):
            raise request.failure("the request")
        principal = self._principal()
        replay_id = request.id.strip().lower()
        if len(replay_id) != HASH_LENGTH or any(c not in "0123456789abcdef" for c in replay_id):
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"DeleteReplayRequest.id "
                             f"{request.id[:HASH_LENGTH + 8]!r} is not a full replay id (64 hex digits)")
        await self._io(self.store.delete, replay_id, principal.sees, Audit(principal.actor, guard.request_id()))
        audit_log.info("replay.delete %s by %s", replay_id, principal.actor)
        self.metrics.audit.labels("replay.delete").inc()
        return spb.DeleteReplayResponse(id=replay_id)

    @unary_errors
    async def GetStandings(self, request: spb.GetStandingsRequest | MalformedRequest,
                           context: grpc.aio.ServicerContext) -> spb.GetStandingsResponse:
        """docs/service.md#standings: over the caller's tenant's games (an admin: every tenant's, or the one named)."""
        if isinstance(request, MalformedRequest):
            raise request.failure("the request")
        tenant = self._scoped(ReplayFilter(), request.tenant, "GetStandingsRequest").tenant
        try:
            found = await self._io(standings, self.store, request.tournament, tenant, request.exclude_violations)
        except InvalidQuery as err:
            raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"GetStandingsRequest.{err}") from None
        return standings_response(found)

    def _scoped(self, filters: ReplayFilter, tenant: str, where: str) -> ReplayFilter:
        """The filter narrowed to what the caller may see: its own tenant's replays (an admin: every tenant's,
        or the one it names)."""
        principal = self._principal()
        if tenant:
            problem = tenant_problem(tenant)
            if problem is not None:
                raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, f"{where}.{problem}")
            if not principal.admin and tenant != principal.tenant:
                raise RpcFailure(grpc.StatusCode.PERMISSION_DENIED, f"{where}.tenant: only a token with the admin "
                                 "scope sees another tenant's replays")
            return dataclasses.replace(filters, tenant=tenant)
        return dataclasses.replace(filters, tenant=principal.sees)

    async def Regress(self, request: spb.RegressRequest | MalformedRequest,
                      context: grpc.aio.ServicerContext) -> AsyncIterator[spb.RegressResponse]:
        """Runs service.regress in a thread (its own worker processes, one per core); progress
        and changes are passed to the stream as they come."""
        if isinstance(request, MalformedRequest):
            failure = request.failure("the request")
            await guard.abort(context, failure.code, failure.message, failure.retry_after)
            return
        from service.regress import LocalBackend, RegressError, RegressOptions, ReplayReport, regress

        try:
            filters = self._scoped(request_filter(request.filter, "RegressRequest.filter."), request.filter.tenant,
                                   "RegressRequest.filter")
            _invalid(run_name_problems(request.run, "run") + run_name_problems(request.against, "against"),
                     "RegressRequest.")
        except Exception as err:
            failure = failure_or_internal(err, "Regress")
            await guard.abort(context, failure.code, failure.message, failure.retry_after)
            return

        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[spb.RegressResponse | BaseException | None] = asyncio.Queue()

        def put(item: spb.RegressResponse | BaseException | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def on_report(report: ReplayReport) -> None:
            if report.changed:
                put(spb.RegressResponse(change=replay_change(report)))

        def work() -> None:
            try:
                options = RegressOptions(filters=filters, run=request.run,
                                         against=request.against, restart=request.restart)
                result = regress(self.store, options, LocalBackend(),
                                 on_progress=lambda d, t: put(spb.RegressResponse(
                                     progress=spb.RegressProgress(done=d, total=t))),
                                 on_report=on_report)
                s = result.summary()
                put(spb.RegressResponse(summary=spb.RegressSummary(
                    engine_version=result.engine_version, replays=s["replays"], resumed=s["resumed"],
                    verified=s["verified"], unchanged=s["unchanged"], changed=s["changed"], failed=s["failed"],
                    seconds=result.seconds)))
                put(None)
            except BaseException as err:
                put(err)

        thread = threading.Thread(target=work, name="sgs-verify-regress", daemon=True)
        thread.start()
        while True:
            item = await queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                error = RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, str(item)) if isinstance(item, RegressError) \
                    else item
                failure = failure_or_internal(error, "Regress")
                await guard.abort(context, failure.code, failure.message, failure.retry_after)
                return
            yield item

    @unary_errors
    async def ListRuns(self, request: spb.ListRunsRequest | MalformedRequest,
                       context: grpc.aio.ServicerContext) -> spb.ListRunsResponse:
        """The stored named runs. The guard lets only admin tokens in (as Regress), and runs are not per tenant:
        their counts are over every tenant's replays."""
        if isinstance(request, MalformedRequest):
            raise request.failure("the request")
        runs = await self._io(self.store.runs)
        return spb.ListRunsResponse(runs=[run_info(r) for r in runs])

    # ------------------------------------------------------------------ registration

    def generic_handler(self) -> grpc.GenericRpcHandler:
        handlers = {
            "VerifyLog": grpc.unary_unary_rpc_method_handler(
                self.VerifyLog, request_deserializer=lenient(spb.VerifyLogRequest),
                response_serializer=spb.VerifyLogResponse.SerializeToString),
            "UploadLog": grpc.stream_unary_rpc_method_handler(
                self.UploadLog, request_deserializer=lenient(spb.UploadLogRequest),
                response_serializer=spb.VerifyLogResponse.SerializeToString),
            "VerifyLive": grpc.stream_stream_rpc_method_handler(
                self.VerifyLive, request_deserializer=lenient(spb.VerifyLiveRequest),
                response_serializer=serialized),
            "GetReplay": grpc.unary_unary_rpc_method_handler(
                self.GetReplay, request_deserializer=lenient(spb.GetReplayRequest),
                response_serializer=spb.GetReplayResponse.SerializeToString),
            "ListReplays": grpc.unary_unary_rpc_method_handler(
                self.ListReplays, request_deserializer=lenient(spb.ListReplaysRequest),
                response_serializer=spb.ListReplaysResponse.SerializeToString),
            "DeleteReplay": grpc.unary_unary_rpc_method_handler(
                self.DeleteReplay, request_deserializer=lenient(spb.DeleteReplayRequest),
                response_serializer=spb.DeleteReplayResponse.SerializeToString),
            "GetStandings": grpc.unary_unary_rpc_method_handler(
                self.GetStandings, request_deserializer=lenient(spb.GetStandingsRequest),
                response_serializer=spb.GetStandingsResponse.SerializeToString),
            "Regress": grpc.unary_stream_rpc_method_handler(
                self.Regress, request_deserializer=lenient(spb.RegressRequest),
                response_serializer=spb.RegressResponse.SerializeToString),
            "ListRuns": grpc.unary_unary_rpc_method_handler(
                self.ListRuns, request_deserializer=lenient(spb.ListRunsRequest),
                response_serializer=spb.ListRunsResponse.SerializeToString),
        }
        return grpc.method_handlers_generic_handler(SERVICE_NAME, handlers)


def new_io_executor(threads: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sgs-verify-io")


