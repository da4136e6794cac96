"""A call cancelled while its streamed game is being stored leaves nothing stored (SQLite and PostgreSQL).

gRPC ends a cancelled call's request stream as if the client had closed it, and tells the handler of the
cancel only at its next await — so the server can be storing the game when the cancel lands (the fuzzer's
rpc-stream case 608, docs/fuzzing.md). Here the store is held inside `save` until the client has cancelled,
which is that race made certain: before the fix the replay stayed stored while the client was answered
CANCELLED."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc._cython.cygrpc import ExecuteBatchError

from clients.selfplay import play_game
from service.config import Limits
from service.guard import OPEN
from service.live import LiveGame
from service.server import BackgroundServer
from service.servicer import VerifierServicer, _LiveEnd
from service.work import Verified, VerifyJob, verify_job
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from storage.store import DEFAULT_TENANT, NewReplay, ReplaySummary, Store, SubmissionMetadata
from tests.service.conftest import BACKENDS, Held, server_holding


@pytest.fixture(params=BACKENDS)
def held(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[BackgroundServer, Store, Held]]:
    """A server whose store holds each `save` until released (Held)."""
    with server_holding(request.param, tmp_path, "save") as served:
        yield served


def settled_count(store: Store, hold: Held) -> int:
    """The store's count once the held save has written and the cancelled call is done with the store (what it
    deletes again, it deletes right after the save)."""
    assert hold.done.wait(20), "the held save never finished"
    deadline = time.monotonic() + 15
    while store.count() and time.monotonic() < deadline:
        time.sleep(0.05)
    return store.count()


def stream_of(request: Any, log: pb.GameLog, tournament: str) -> list[Any]:
    """The messages of a stream carrying ``log``: the header (and metadata), then batches of 100 events."""
    events = list(log.events)
    first = request(header=log.header, metadata=spb.SubmissionMetadata(tournament=tournament))
    return [first] + [request(events=events[i:i + 100]) for i in range(0, len(events), 100)]


def test_a_live_game_cancelled_while_being_stored_is_not_stored(
        held: tuple[BackgroundServer, Store, Held]) -> None:
    server, store, hold = held
    requests = stream_of(spb.VerifyLiveRequest, play_game(41, 5), "cancel-live")
    with grpc.insecure_channel(server.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        call = stub.VerifyLive(iter(requests), timeout=30)
        answers = [next(call) for _ in requests]  # one per message: the whole game was judged
        assert answers[-1].game_over
        assert hold.entered.wait(20), "the server did not begin to store the finished game"
        call.cancel()
        hold.release.set()
        with pytest.raises(grpc.RpcError) as caught:
            next(call)
        assert caught.value.code() == grpc.StatusCode.CANCELLED
    assert settled_count(store, hold) == 0


def test_an_upload_cancelled_while_being_stored_is_not_stored(
        held: tuple[BackgroundServer, Store, Held]) -> None:
    server, store, hold = held
    requests = stream_of(spb.UploadLogRequest, play_game(42, 5), "cancel-up")
    with grpc.insecure_channel(server.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        future = stub.UploadLog.future(iter(requests), timeout=30)
        assert hold.entered.wait(20), "the server did not begin to store the upload"
        future.cancel()
        hold.release.set()
        assert future.cancelled()
    assert settled_count(store, hold) == 0


def test_an_uncancelled_live_game_is_stored_once_released(held: tuple[BackgroundServer, Store, Held]) -> None:
    """The hold itself changes nothing else: a call that is not cancelled stores its game and says so."""
    server, store, hold = held
    log = play_game(43, 5)
    requests = [spb.VerifyLiveRequest(header=log.header), spb.VerifyLiveRequest(events=list(log.events))]
    hold.release.set()
    with grpc.insecure_channel(server.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        answers = list(stub.VerifyLive(iter(requests), timeout=30))
    assert answers[-1].finished.stored and answers[-1].finished.created
    assert store.count() == 1


class CallGone(Exception):
    """As gRPC's ExecuteBatchError: the write of an answer to a call the client has cancelled."""


class FailingWrite:
    """A call whose last answer cannot be written: gRPC's write fails once the client has cancelled."""

    async def write(self, message: object) -> None:
        raise CallGone()


def test_a_live_game_whose_last_answer_cannot_be_written_is_deleted_again(
        held: tuple[BackgroundServer, Store, Held]) -> None:
    """The other moment a cancel can land: after the store, at the write of the answer that says so."""
    server, store, hold = held
    hold.release.set()
    log = play_game(44, 5)
    with grpc.insecure_channel(server.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        done = stub.VerifyLog(spb.VerifyLogRequest(log=log, summary_only=True), timeout=30)
    assert done.created and store.count() == 1
    servicer = server.server.servicer
    assert servicer is not None
    last = _LiveEnd(spb.VerifyLiveResponse(), done.info.id, DEFAULT_TENANT)
    answering = asyncio.run_coroutine_threadsafe(servicer._answer_last(last, FailingWrite()), server.loop)
    with pytest.raises(CallGone):
        answering.result(20)
    assert store.count() == 0
    # a replay the call did not create (the tenant had it already) is left alone
    again = stub_verify(server, log)
    answering = asyncio.run_coroutine_threadsafe(
        servicer._answer_last(_LiveEnd(spb.VerifyLiveResponse(), "", DEFAULT_TENANT), FailingWrite()),
        server.loop)
    with pytest.raises(CallGone):
        answering.result(20)
    assert store.count() == 1 and again.created


def stub_verify(server: BackgroundServer, log: pb.GameLog) -> spb.VerifyLogResponse:
    with grpc.insecure_channel(server.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        return stub.VerifyLog(spb.VerifyLogRequest(log=log, summary_only=True), timeout=30)  # type: ignore[no-any-return]


# ---------------------------------------------------------------- a cancel the handler is told of too late

def _identity(data: bytes) -> bytes:
    return data


async def _ended_how(requests: Any, context: grpc.aio.ServicerContext) -> bytes:
    """A handler that reads its request stream to the end and then asks VerifierServicer's check how it ended,
    deaf to the cancel gRPC sends its task: as a handler is when that cancel comes only after it has stored
    the game (the CI run in which the fuzzer's cut-off upload stayed stored)."""
    async def read_and_check() -> str:
        async for _ in requests:
            pass
        try:
            await VerifierServicer._confirm_closed_by_client(context)
        except asyncio.CancelledError:
            return "cancelled"
        return "closed"

    inner = asyncio.ensure_future(read_and_check())
    while not inner.done():
        try:
            await asyncio.wait([inner])
        except asyncio.CancelledError:  # gRPC's word of the cancel, to the outer task only: not heard
            task = asyncio.current_task()
            assert task is not None
            task.uncancel()
    ENDINGS.append(inner.result())
    return b"stored"


ENDINGS: list[str] = []


def _send_two(port: int, cancel: bool, calls: int) -> None:
    """``calls`` streams of two messages each, then a cancel with the stream held open, or a half-close."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        upload = channel.stream_unary("/t.Upload/Up", request_serializer=_identity, response_deserializer=_identity)
        for _ in range(calls):
            sent, cancelled = threading.Event(), threading.Event()

            def messages(sent: threading.Event = sent, cancelled: threading.Event = cancelled) -> Iterator[bytes]:
                yield b"header"
                yield b"events"
                sent.set()
                if cancel:
                    cancelled.wait(10)

            future = upload.future(messages(), timeout=10)
            assert sent.wait(10)
            if cancel:
                time.sleep(0.01)  # the messages are on their way
                future.cancel()
                cancelled.set()
            else:
                assert future.result() == b"stored"
    time.sleep(0.2)  # the server's handlers of the last calls finish


@pytest.mark.parametrize("cancel", [True, False], ids=["cancelled", "half-closed"])
def test_the_upload_check_tells_a_cancel_from_a_half_close_without_the_handler_being_told(cancel: bool) -> None:
    async def main() -> list[str]:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "t.Upload", {"Up": grpc.stream_unary_rpc_method_handler(_ended_how, _identity, _identity)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            await asyncio.get_running_loop().run_in_executor(None, _send_two, port, cancel, 12)
        finally:
            await server.stop(None)
        return list(ENDINGS)

    ENDINGS.clear()
    assert asyncio.run(main()) == ["cancelled" if cancel else "closed"] * 12


# ---------------------------------------------------------------- the question asked beside verifying, answered first

class _SlowAnswer:
    """A call's context whose stream ended ``how`` ("cancelled": the initial metadata is refused), told only
    after ``delay`` seconds: later than the game takes to verify."""

    def __init__(self, how: str, delay: float) -> None:
        self.how, self.delay = how, delay

    def time_remaining(self) -> float | None:
        return None

    async def send_initial_metadata(self, metadata: Any) -> None:
        await asyncio.sleep(self.delay)
        if self.how == "cancelled":
            raise ExecuteBatchError("the call was reset")


class _VerifiedNow:
    """A worker pool that verifies at once, in this process."""

    async def run(self, job: VerifyJob, timeout: float, kill_after: float | None = None) -> Verified:
        return verify_job(job)


class _Saves:
    def __init__(self) -> None:
        self.saved: list[NewReplay] = []

    def save(self, record: NewReplay, tenant: str) -> tuple[ReplaySummary, bool]:
        self.saved.append(record)
        return LiveGame.unstored_summary(record), True


@pytest.mark.parametrize("how", ["cancelled", "half-closed"])
def test_a_streamed_game_is_stored_only_once_its_stream_is_known_to_have_closed(how: str) -> None:
    """_submit asks the call how its stream ended while the game is verified, and stores nothing before the
    answer: a cancel told after the verification is done still stores nothing; a half-close stores the game."""
    log = play_game(6, 5)
    store = _Saves()
    servicer = VerifierServicer(store, Limits(), _VerifiedNow(), ThreadPoolExecutor(1))  # type: ignore[arg-type]
    job = VerifyJob(log.SerializeToString(deterministic=True), SubmissionMetadata(), 100_000, canonical=True)

    async def submit() -> spb.VerifyLogResponse:
        return await servicer._submit(job, None, True, "UploadLog", _SlowAnswer(how, 0.2),
                                      OPEN, "upload", streamed=True)

    if how == "cancelled":
        with pytest.raises(asyncio.CancelledError):
            asyncio.run(submit())
        assert store.saved == []
    else:
        assert asyncio.run(submit()).created and len(store.saved) == 1
