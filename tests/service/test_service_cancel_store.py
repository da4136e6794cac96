"""A streamed game whose call ends as its answer arrives is stored exactly once, and the client and the server agree
(SQLite and PostgreSQL; docs/service.md, "A cancelled stream").

The rule: once the server has a call's whole submission (its client half-closed the stream) and has begun to store
it, the replay is stored whatever becomes of the call. A cancel, or an answer that cannot be written, never deletes
it: the server cannot know whether the client read that answer (the FreeKill bridge read `stored`, closed the call at
once, and the server, seeing a cancel, deleted the room again). A call cancelled before its submission was whole stores
nothing. A client that got no answer sends the same log again and is answered created=false with the same id.

gRPC ends a cancelled call's request stream as if the client had closed it, and tells the handler of the cancel only
at its next await: here the server stops at each step of the store and of its answer until the client has cancelled,
which makes each of those races certain."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import pytest
from grpc._cython.cygrpc import ExecuteBatchError

import storage.store
from clients.selfplay import play_game
from service.config import Limits
from service.guard import OPEN, idle_limited
from service.live import LiveGame
from service.server import BackgroundServer, open_store
from service.servicer import VerifierServicer
from service.work import Verified, VerifyJob, canonical_bytes, log_sha256, verify_job
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from storage.store import DEFAULT_TENANT, NewReplay, ReplaySummary, Store, SubmissionMetadata, replay_id_for
from tests.service.conftest import BACKENDS, fresh_database, server_config

METHODS = ["UploadLog", "VerifyLive"]
T = TypeVar("T")


# ---------------------------------------------------------------- the server, stopped at a step of its store

class Step:
    """The step of the store or of the answer at which the server stops, once (a re-send passes), until released."""

    def __init__(self) -> None:
        self.name = ""
        self.entered = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()
        # Deaf to the cancel gRPC tells the handler (until the store: as a server is when that word comes late, on
        # a busy machine): only the server's own question of the call tells the cancel then.
        self.deaf = False
        self.on_loop = False  # (where it was reached)
        self.uploaded = 0  # an upload's messages read by the server (while deaf)

    def arm(self, name: str) -> None:
        with self.lock:
            self.name = name
            self.entered.clear()
            self.release.clear()

    def reached(self, name: str, on_loop: bool = False) -> bool:
        """Whether the server is at the armed step now (and says so to the test)."""
        with self.lock:
            if self.name != name:
                return False
            self.name = ""
            self.on_loop = on_loop
        self.entered.set()
        return True

    def cancelled(self, served: Served) -> None:
        """The client has cancelled: the server goes on. Held in the store's thread, it is released at once (the
        store goes on, whatever the call); held on the event loop, only once the server has ended the call, so that
        gRPC's word of the cancel surely lands there."""
        if self.on_loop:
            served.done_with_calls()
        self.release.set()

    def hold(self, name: str) -> None:
        """In the store's thread."""
        if self.reached(name):
            self.release.wait(60)

    async def held(self, name: str) -> None:
        """On the server's event loop (the call's cancel, when gRPC tells of it, lands here)."""
        if self.reached(name, on_loop=True):
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait, 60)


@dataclass
class Served:
    server: BackgroundServer
    store: Store
    step: Step

    def done_with_calls(self) -> None:
        """Wait until the server has ended every call (a cancelled one waits for its store: docs/service.md)."""
        guard = self.server.server.guard
        assert guard is not None
        wait_until(lambda: guard.in_flight == 0, "the server never ended the cancelled call")


def wait_until(what: Callable[[], bool], why: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < end, why
        time.sleep(0.02)


def _stopping_at_steps(store: Store, servicer: VerifierServicer, step: Step,
                       patch: pytest.MonkeyPatch) -> None:
    """Every step the server can be stopped at: before the store begins (after the stream's end is known to be a
    half-close), before the store's transaction, inside it (the rows written, not committed), after its commit,
    before the answer that says it is stored is written, as it is written (the client cancels at once), and (a live
    game's) once it is written, before the call ends."""
    save = store.save

    def save_stopping(record: NewReplay, tenant: str = DEFAULT_TENANT) -> tuple[ReplaySummary, bool]:
        step.hold("before the transaction")
        saved = save(record, tenant)
        step.hold("after the commit")
        return saved

    insert = storage.store._insert_replay

    def insert_stopping(*args: Any) -> bool:
        inserted = insert(*args)
        step.hold("inside the transaction")
        return inserted

    server_save = servicer._save

    async def server_save_stopping(record: NewReplay, tenant: str) -> tuple[ReplaySummary, bool]:
        await step.held("before the store")
        return await server_save(record, tenant)

    def limited_deaf(requests: AsyncIterator[Any], seconds: float, what: str) -> AsyncIterator[Any]:
        messages = idle_limited(requests, seconds, what)
        if not step.deaf or what != "the upload":  # (a live game's reader is a task of its own: not told)
            return messages

        async def deaf() -> AsyncIterator[Any]:
            while True:
                try:
                    message = await _deaf(anext(messages))
                except StopAsyncIteration:
                    return
                step.uploaded += 1
                yield message

        return deaf()

    submit = servicer._submit

    async def submit_stopping(*args: Any, **kwargs: Any) -> spb.VerifyLogResponse:
        response = await (_deaf(submit(*args, **kwargs)) if step.deaf else submit(*args, **kwargs))
        await step.held("before the answer")
        step.reached("during the answer")  # (not held: gRPC writes the answer as the client cancels)
        return response

    live_game: Any = servicer._live_game  # (an async generator: closed with the call)

    async def live_game_stopping(requests: Any) -> AsyncIterator[Any]:
        async with contextlib.aclosing(live_game(requests)) as answers:
            while True:
                try:
                    answer = await (_deaf(anext(answers)) if step.deaf else anext(answers))
                except StopAsyncIteration:
                    return
                last = isinstance(answer, spb.VerifyLiveResponse) and answer.HasField("finished")
                if last:
                    await step.held("before the answer")
                    step.reached("during the answer")
                yield answer
                if last:
                    await step.held("after the answer")  # (written: resumed only then)

    patch.setattr("service.servicer.idle_limited", limited_deaf)
    patch.setattr(store, "save", save_stopping)
    patch.setattr(storage.store, "_insert_replay", insert_stopping)
    patch.setattr(servicer, "_save", server_save_stopping)
    patch.setattr(servicer, "_submit", submit_stopping)
    patch.setattr(servicer, "_live_game", live_game_stopping)


@pytest.fixture(scope="module", params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp(f"cancel-{request.param}")
    url, db = fresh_database(request.param, folder)
    config = server_config(url, folder, workers=1)
    store = open_store(config)
    step = Step()
    with pytest.MonkeyPatch.context() as patch:
        server = BackgroundServer(config, store).start()
        try:
            assert server.server.servicer is not None
            _stopping_at_steps(store, server.server.servicer, step, patch)
            yield Served(server, store, step)
        finally:
            step.release.set()
            server.stop()
            if db is not None:
                db.drop()


# ---------------------------------------------------------------- clients

def stream_of(method: str, log: pb.GameLog) -> list[Any]:
    """The messages of a stream carrying ``log``: the header (and metadata), then batches of 100 events."""
    request = spb.UploadLogRequest if method == "UploadLog" else spb.VerifyLiveRequest
    events = list(log.events)
    first = request(header=log.header, metadata=spb.SubmissionMetadata(tournament="cancel"))
    return [first] + [request(events=events[i:i + 100]) for i in range(0, len(events), 100)]


def replay_id(log: pb.GameLog) -> str:
    return replay_id_for(DEFAULT_TENANT, log_sha256(canonical_bytes(log)))


def stored_answer(method: str, answer: Any) -> tuple[bool, str]:
    """(created, id) of an answer that says the game is stored."""
    if method == "UploadLog":
        return answer.created, answer.info.id
    assert answer.finished.stored
    return answer.finished.created, answer.finished.info.id


def send(address: str, method: str, log: pb.GameLog) -> tuple[bool, str]:
    """The log sent whole (the stream half-closed), as a client that got no answer sends it again."""
    with grpc.insecure_channel(address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        if method == "UploadLog":
            return stored_answer(method, stub.UploadLog(iter(stream_of(method, log)), timeout=60))
        answers = list(stub.VerifyLive(iter(stream_of(method, log)), timeout=60))
        assert answers[-1].HasField("finished")
        return stored_answer(method, answers[-1])


def cancelled_at_step(served: Served, method: str, log: pb.GameLog) -> str | None:
    """A whole stream (half-closed), cancelled once the server is at the armed step; the replay id a stored answer
    gave the client before its cancel took (None: none came)."""
    with grpc.insecure_channel(served.server.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        if method == "UploadLog":
            future = stub.UploadLog.future(iter(stream_of(method, log)), timeout=60)
            assert served.step.entered.wait(60), "the server never reached the step"
            future.cancel()
            served.step.cancelled(served)
            if future.cancelled():
                return None
            created, rid = stored_answer(method, future.result(60))  # (it came before the cancel)
            assert created
            return rid
        call = stub.VerifyLive(iter(stream_of(method, log)), timeout=60)
        answers: list[spb.VerifyLiveResponse] = []
        ended: list[grpc.StatusCode] = []

        def read() -> None:
            try:
                for answer in call:
                    answers.append(answer)
            except grpc.RpcError as err:
                ended.append(err.code())

        reader = threading.Thread(target=read)
        reader.start()
        assert served.step.entered.wait(60), "the server never reached the step"
        call.cancel()
        served.step.cancelled(served)
        reader.join(60)
        assert not reader.is_alive()
    finished = [a for a in answers if a.HasField("finished")]
    if not finished:
        assert ended == [grpc.StatusCode.CANCELLED]
        return None
    created, rid = stored_answer(method, finished[0])
    assert created
    return rid


def live_read_then_cancelled(served: Served, log: pb.GameLog) -> str:
    """As the bridge ends a room's call: the answer that says the game is stored is read, and the call closed at
    once, while the server (held once that answer is written) has not ended the call yet: it sees a cancel."""
    served.step.arm("after the answer")
    with grpc.insecure_channel(served.server.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        call = stub.VerifyLive(iter(stream_of("VerifyLive", log)), timeout=60)
        for answer in call:
            if answer.HasField("finished"):
                assert served.step.entered.wait(60), "the server never wrote the answer"
                call.cancel()
                served.step.cancelled(served)
                created, rid = stored_answer("VerifyLive", answer)
                assert created
                return rid
    raise AssertionError("no answer said the game was stored")


class HalfCloseHeld:
    """A request stream whose every message is sent but whose half-close is held until the test ends: the call can
    only be cancelled, its submission never whole."""

    def __init__(self, messages: list[Any]) -> None:
        self.messages = messages
        self.sent = threading.Event()
        self.end = threading.Event()

    def __iter__(self) -> Iterator[Any]:
        yield from self.messages
        self.sent.set()
        self.end.wait(120)


def cancelled_before_half_close(served: Served, method: str, log: pb.GameLog, answers_read: bool) -> None:
    """Every message sent, the call cancelled before its half-close: at once, or (live) once every answer is read
    (the stream's end then has no answer left to write)."""
    messages = stream_of(method, log)
    requests = HalfCloseHeld(messages)
    served.step.uploaded = 0
    try:
        with grpc.insecure_channel(served.server.address) as channel:
            stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
            if method == "UploadLog":
                future = stub.UploadLog.future(iter(requests), timeout=60)
                # (once the server has read them all: a cut before it is an upload that is not whole either, but
                # may be refused for what it lacks before the question is asked)
                wait_until(lambda: served.step.uploaded == len(messages), "the server never read the upload")
                future.cancel()
                assert future.cancelled()
            else:
                call = stub.VerifyLive(iter(requests), timeout=60)
                if answers_read:
                    got = [next(call) for _ in messages]  # one per message
                    assert got[-1].events_received == len(log.events) and not got[-1].HasField("finished")
                else:
                    assert requests.sent.wait(60)
                call.cancel()
                with pytest.raises(grpc.RpcError) as caught:
                    next(call)
                assert caught.value.code() == grpc.StatusCode.CANCELLED
            served.done_with_calls()
    finally:
        requests.end.set()


# ---------------------------------------------------------------- the rule, step by step

STORED_STEPS = ["before the transaction", "inside the transaction", "after the commit", "before the answer",
                "during the answer"]


def check_agreement(served: Served, method: str, log: pb.GameLog, answered: str | None, before: int,
                    stored: set[int]) -> None:
    """After a cancelled call: the replay is stored as many times as ``stored`` allows (0 or 1), an answer the client
    got names it, and sending the log again — by either method — agrees: created only if it was not stored, the same
    id, and then stored once."""
    served.done_with_calls()
    count = served.store.count() - before
    assert count in stored
    expected = replay_id(log)
    assert (served.store.find(log_sha256(canonical_bytes(log))) is not None) == (count == 1)
    if answered is not None:
        assert answered == expected and count == 1, "the client was told it is stored"
    assert send(served.server.address, method, log) == (count == 0, expected)
    other = METHODS[1 - METHODS.index(method)]
    assert send(served.server.address, other, log) == (False, expected)
    assert served.store.count() - before == 1


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("step", STORED_STEPS)
def test_a_whole_stream_cancelled_at_any_step_of_its_store_or_answer_is_stored_once(
        served: Served, method: str, step: str) -> None:
    log = play_game(100 + 10 * STORED_STEPS.index(step) + METHODS.index(method), 5)
    before = served.store.count()
    served.step.arm(step)
    answered = cancelled_at_step(served, method, log)
    check_agreement(served, method, log, answered, before, {1})


@pytest.mark.parametrize("method", METHODS)
def test_a_whole_stream_cancelled_before_its_store_began_is_not_stored(served: Served, method: str) -> None:
    """Between the half-close (known as one) and the store: gRPC's word of the cancel stops the call there, and the
    client, which got no answer, sends the game again."""
    log = play_game(170 + METHODS.index(method), 5)
    before = served.store.count()
    served.step.arm("before the store")
    answered = cancelled_at_step(served, method, log)
    check_agreement(served, method, log, answered, before, {0})


def test_a_live_game_whose_stored_answer_was_read_before_the_call_was_closed_stays_stored(served: Served) -> None:
    """The FreeKill bridge's lost room: it read `stored … created: true` and closed the call; the server saw a cancel
    as it ended the call and deleted the replay again."""
    log = play_game(180, 5)
    before = served.store.count()
    answered = live_read_then_cancelled(served, log)
    check_agreement(served, "VerifyLive", log, answered, before, {1})


@pytest.mark.parametrize(("method", "answers_read"),
                         [("UploadLog", False), ("VerifyLive", False), ("VerifyLive", True)],
                         ids=["upload", "live-at-once", "live-answers-read"])
def test_a_stream_cancelled_before_its_half_close_stores_nothing(served: Served, method: str,
                                                                  answers_read: bool) -> None:
    log = play_game(190 + 2 * METHODS.index(method) + answers_read, 5)
    before = served.store.count()
    served.step.deaf = True
    try:
        cancelled_before_half_close(served, method, log, answers_read)
    finally:
        served.step.deaf = False
    check_agreement(served, method, log, None, before, {0})


def test_a_live_stream_half_closed_after_every_answer_is_asked_once_more_then_stored(served: Served) -> None:
    """A client that half-closes only once it has read every answer: no answer is left to write after the stream's
    end, so the server writes one more, with nothing new in it (which a cancelled call refuses), before it stores the
    game; then the answer that says it is stored."""
    log = play_game(200, 5)
    messages = stream_of("VerifyLive", log)
    read_all = threading.Event()

    def requests() -> Iterator[Any]:
        yield from messages
        read_all.wait(60)

    with grpc.insecure_channel(served.server.address) as channel:
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        call = stub.VerifyLive(requests(), timeout=60)
        answered = [next(call) for _ in messages]
        read_all.set()
        rest = list(call)
    assert not any(a.HasField("finished") for a in answered)
    assert len(rest) == 2
    asked, last = rest
    assert not asked.annotations and not asked.HasField("finished")
    assert asked.events_received == len(log.events) and asked.game_over == last.game_over
    assert stored_answer("VerifyLive", last) == (True, replay_id(log))


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

    ENDINGS.append(await _deaf(read_and_check()))
    return b"stored"


async def _deaf(work: Awaitable[T]) -> T:
    """``work``, run to its end whatever cancel gRPC sends the handler's task meanwhile (it is not heard)."""
    inner = asyncio.ensure_future(work)
    while not inner.done():
        try:
            await asyncio.wait([inner])
        except asyncio.CancelledError:
            task = asyncio.current_task()
            assert task is not None
            task.uncancel()
    return inner.result()


async def _answered_after_end(requests: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
    """As VerifierServicer._live_game: each message answered as it comes, every answer written before the stream's
    end is read (the reading deaf to the cancel), then one answer more. gRPC resumes the handler after a yield only
    once the answer is written: resumed, the stream ended in a half-close; not, in a cancel ("cut": the cancel was
    heard at the write of an answer before, which is not what is asked here)."""
    async def next_or_end() -> str:
        try:
            await anext(requests)
        except StopAsyncIteration:
            return "end"
        return "message"

    call = len(ENDINGS)
    ENDINGS.append("cut")
    while await _deaf(next_or_end()) == "message":
        yield b"answer"
    ENDINGS[call] = "cancelled"  # (unless resumed)
    yield b"asked"
    ENDINGS[call] = "closed"


ENDINGS: list[str] = []


def _send_two(port: int, cancel: bool, calls: int, live: bool) -> None:
    """``calls`` streams of two messages each, then a cancel with the stream held open, or a half-close; a live one
    reads the answers to both messages first."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        upload = channel.stream_unary("/t.Upload/Up", request_serializer=_identity, response_deserializer=_identity)
        answering = channel.stream_stream("/t.Upload/Live", request_serializer=_identity,
                                          response_deserializer=_identity)
        for _ in range(calls):
            sent, cancelled = threading.Event(), threading.Event()

            def messages(sent: threading.Event = sent, cancelled: threading.Event = cancelled) -> Iterator[bytes]:
                yield b"header"
                yield b"events"
                sent.set()
                if cancel:
                    cancelled.wait(10)

            if live:
                call = answering(messages(), timeout=10)
                assert [next(call), next(call)] == [b"answer", b"answer"]
                if cancel:
                    call.cancel()
                    cancelled.set()
                else:
                    assert list(call) == [b"asked"]
                continue
            future = upload.future(messages(), timeout=10)
            assert sent.wait(10)
            if cancel:
                time.sleep(0.01)  # the messages are on their way
                future.cancel()
                cancelled.set()
            else:
                assert future.result() == b"stored"
    time.sleep(0.2)  # the server's handlers of the last calls finish


@pytest.mark.parametrize("live", [False, True], ids=["upload", "live"])
@pytest.mark.parametrize("cancel", [True, False], ids=["cancelled", "half-closed"])
def test_the_stream_end_checks_tell_a_cancel_from_a_half_close_without_the_handler_being_told(
        cancel: bool, live: bool) -> None:
    """An upload's (the answer's initial metadata sent) and a live game's (an answer written after the end)."""
    async def main() -> list[str]:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.Upload", {
            "Up": grpc.stream_unary_rpc_method_handler(_ended_how, _identity, _identity),
            "Live": grpc.stream_stream_rpc_method_handler(_answered_after_end, _identity, _identity)}),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            await asyncio.get_running_loop().run_in_executor(None, _send_two, port, cancel, 12, live)
        finally:
            await server.stop(None)
        return list(ENDINGS)

    ENDINGS.clear()
    endings = asyncio.run(main())
    if live and cancel:
        assert "cancelled" in endings and set(endings) <= {"cancelled", "cut"}
    else:
        assert endings == ["cancelled" if cancel else "closed"] * 12


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


class _SlowSaves(_Saves):
    """A store whose save takes a while, and says when it is done."""

    def __init__(self) -> None:
        super().__init__()
        self.begun = threading.Event()
        self.go_on = threading.Event()

    def save(self, record: NewReplay, tenant: str) -> tuple[ReplaySummary, bool]:
        self.begun.set()
        self.go_on.wait(20)
        return super().save(record, tenant)


def test_a_cancel_during_the_store_waits_for_it_and_is_not_undone() -> None:
    """_save: the cancel (twice: gRPC's, then the token watch's) is raised only once the store is done, and nothing is
    deleted — the store has no delete to call here."""
    log = play_game(7, 5)
    store = _SlowSaves()
    servicer = VerifierServicer(store, Limits(), _VerifiedNow(), ThreadPoolExecutor(1))  # type: ignore[arg-type]
    record = verify_job(VerifyJob(canonical_bytes(log), SubmissionMetadata(), 100_000, canonical=True)).record

    async def main() -> None:
        saving = asyncio.ensure_future(servicer._save(record, DEFAULT_TENANT))
        await asyncio.get_running_loop().run_in_executor(None, store.begun.wait, 20)
        saving.cancel()
        await asyncio.sleep(0.05)
        saving.cancel()
        await asyncio.sleep(0.05)
        assert not saving.done()  # still waiting for the store
        store.go_on.set()
        with pytest.raises(asyncio.CancelledError):
            await saving

    asyncio.run(main())
    assert len(store.saved) == 1
