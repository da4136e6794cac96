"""The verification worker processes.

There are ``workers`` processes, each reached through its own socket pair (``WorkerProcess``), so
that a live game can be pinned to one process: its incremental Verifier lives there (in
``_LIVE_GAMES``) from the header to the end of the stream, and each batch of events is sent to it.
Whole logs go to the least busy process. Nothing CPU-bound runs in the server's process, so its
event loop stays responsive; verification uses every core.

The hand-off is one message each way per call, read on the server's event loop as it arrives (no
executor threads in between: concurrent.futures' process pool took about 0.7 ms per round trip here,
this about 0.07 ms, which a live game pays once per batch). What crosses is bytes: the log's bytes
or a batch's events (as GameLog.events), and back a storage record, or a VerifyLiveResponse already encoded,
which the server sends on unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import queue
import socket
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, ParamSpec, TypeVar

from service.live import LiveGame
from service.work import Verified, VerifyJob, verify_job, warm_up
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from storage.store import NewReplay, SubmissionMetadata
from verifier import LogFormatError

P = ParamSpec("P")
T = TypeVar("T")
log = logging.getLogger("sgs-verify.service")

# ---------------------------------------------------------------------------------------- in the worker

# How often a worker looks whether its parent is still there (besides waiting on the pipe to it).
PARENT_POLL_SECONDS = 1.0


def exit_with_parent() -> None:
    """Run in each new worker process: a daemon thread ends the process as soon as its parent — the
    server — is gone, even when that was killed (SIGKILL) and could not shut its pool down: then the
    pipe the parent held open reaches end-of-file (multiprocessing's parent sentinel), or the process
    is re-parented. Without it, workers outlive a killed server."""
    parent = multiprocessing.parent_process()
    sentinel = parent.sentinel if parent is not None else None
    ppid = os.getppid()

    def watch() -> None:
        while True:
            if sentinel is not None:
                if multiprocessing.connection.wait([sentinel], timeout=PARENT_POLL_SECONDS):
                    os._exit(1)
            else:
                threading.Event().wait(PARENT_POLL_SECONDS)
            if os.getppid() != ppid:
                os._exit(1)

    threading.Thread(target=watch, name="sgs-verify-parent-watch", daemon=True).start()


def worker_main(conn: Connection) -> None:
    """A worker process: run each call that comes in, in order, and send back its answer.

    A thread reads the calls as they come, so that the server's writes never wait for the call in
    progress; the main thread runs them. The process ends when the server closes its end."""
    exit_with_parent()
    inbox: queue.SimpleQueue[tuple[bytes, list[bytes]] | None] = queue.SimpleQueue()

    def read() -> None:
        try:
            while True:
                header = conn.recv_bytes()
                buffers = [conn.recv_bytes() for _ in range(header[0])]
                inbox.put((header, buffers))
        except (EOFError, OSError):
            inbox.put(None)

    threading.Thread(target=read, name="sgs-verify-worker-inbox", daemon=True).start()
    while (message := inbox.get()) is not None:
        call_id, fn, args, kwargs = pickle.loads(memoryview(message[0])[1:], buffers=message[1])
        del message
        try:
            answer: tuple[int, bool, Any] = (call_id, True, fn(*args, **kwargs))
        except BaseException as err:  # the server re-raises it in the caller
            answer = (call_id, False, err)
        del args, kwargs
        try:
            payload = pickle.dumps(answer, pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # an answer (or an exception) that cannot be pickled
            payload = pickle.dumps((call_id, False, RuntimeError(
                f"the worker's answer to {getattr(fn, '__name__', fn)!r} cannot be sent: {type(err).__name__}: {err}")))
        del answer
        try:
            conn.send_bytes(payload)
        except OSError:
            break
    os._exit(0)


def verify_job_data(job: VerifyJob, data: bytes | pickle.PickleBuffer) -> Verified:
    """verify_job, the log's bytes sent beside the job (out of band: WorkerProcess.submit; the worker receives
    them as bytes, which bytes() returns as they are)."""
    return verify_job(dataclasses.replace(job, data=bytes(data)))


_LIVE_GAMES: dict[int, LiveGame] = {}


def live_start(game_id: int, header: bytes, metadata: SubmissionMetadata) -> None:
    _LIVE_GAMES[game_id] = LiveGame(pb.GameHeader.FromString(header), metadata)


def live_feed(game_id: int, events: bytes) -> bytes:
    """Feed a batch: its events' canonical encoding as GameLog.events (service.work.events_encoding, made by the
    server, which the game keeps as its log); returns a serialized VerifyLiveResponse."""
    game = _LIVE_GAMES[game_id]
    return game.feed_encoded(pb.GameLog.FromString(events).events, events)


def live_finish(game_id: int, server: bytes = b"") -> tuple[bytes, NewReplay]:
    """Close the game: the last VerifyLiveResponse (without `finished`) and the record to store (``server``: the
    recording server's verdicts the client sent, ServerVerdicts, kept beside this engine's)."""
    game = _LIVE_GAMES.pop(game_id)
    last, record = game.finish_encoded(spb.ServerVerdicts.FromString(server) if server else None)
    problems = record.problems()
    if problems:
        raise LogFormatError("; ".join(problems))
    return last, record


def live_drop(game_id: int) -> None:
    _LIVE_GAMES.pop(game_id, None)


def live_game_count() -> int:
    return len(_LIVE_GAMES)


# ---------------------------------------------------------------------------------------- in the server

class WorkerLost(RuntimeError):
    """A worker process died; its live games are lost and it was restarted."""


# A call's message up to this size is written on the event loop itself: it fits in the socket's buffer, which
# the worker's reading thread keeps empty. A larger one is written by a thread, so the loop never waits on it.
INLINE_SEND_BYTES = 64 * 1024
SOCKET_BUFFER_BYTES = 4 * 1024 * 1024


class WorkerProcess:
    """One worker process and the socket pair to it; calls are answered in the order sent. Used from one
    event loop (the server's); ``shutdown`` may be called from any thread."""

    def __init__(self, cpu: int | None = None) -> None:
        """``cpu``: the one CPU the process may run on (None: any, as the OS decides)."""
        # spawn: forking a process that runs gRPC's threads is unsafe.
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe(duplex=True)
        for end in (self.conn, child):
            with contextlib.suppress(OSError):
                sock = socket.socket(fileno=os.dup(end.fileno()))
                with sock:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER_BYTES)
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER_BYTES)
        self.process: BaseProcess = ctx.Process(target=worker_main, args=(child,), name="sgs-verify-worker",
                                                daemon=True)
        self.process.start()
        child.close()
        self.cpu = pin_to_cpu(self.process.pid, cpu)
        self.broken = False
        self._ids = itertools.count()
        self._pending: dict[int, tuple[asyncio.Future[Any], Callable[[], None]]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sender: ThreadPoolExecutor | None = None
        self._queued = 0  # messages handed to the sending thread, not yet written

    def submit(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               ended: Callable[[], None]) -> asyncio.Future[Any]:
        """Send a call; the future has its answer. ``ended`` is called once the worker is done with it (also when
        the caller stopped waiting) or died. BrokenProcessPool if the process is gone."""
        if self.broken:
            raise BrokenProcessPool("the worker process is gone")
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
            loop.add_reader(self.conn.fileno(), self._readable)
        call_id = next(self._ids)
        # A call is a message of its pickle (its first byte: how many buffers follow), then one message per
        # pickle.PickleBuffer among its arguments, sent from the caller's memory as it is (out of band: a large
        # upload is not copied into the pickle first).
        buffers: list[pickle.PickleBuffer] = []
        payload = pickle.dumps((call_id, fn, args, kwargs), 5, buffer_callback=buffers.append)
        if len(buffers) > 255:
            raise ValueError("a worker call carries at most 255 out-of-band buffers")
        message = bytes((len(buffers),)) + payload
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[call_id] = (future, ended)
        if len(message) <= INLINE_SEND_BYTES and not buffers and not self._queued:
            try:
                self.conn.send_bytes(message)
            except OSError:
                self._break()
        else:
            if self._sender is None:
                self._sender = ThreadPoolExecutor(1, thread_name_prefix="sgs-verify-worker-send")
            self._queued += 1
            sent = loop.run_in_executor(self._sender, self._send_all, message, buffers)
            sent.add_done_callback(self._sent)
        return future

    def _send_all(self, message: bytes, buffers: list[pickle.PickleBuffer]) -> None:
        self.conn.send_bytes(message)
        for buffer in buffers:
            with buffer.raw() as view:
                self.conn.send_bytes(view)

    def _sent(self, sent: asyncio.Future[None]) -> None:
        self._queued -= 1
        if not sent.cancelled() and sent.exception() is not None:
            self._break()

    def _readable(self) -> None:
        """Every answer the worker has sent so far, each handed to its caller: a live game's worker answers
        batch after batch while the loop is busy, and each answer read on a turn of its own cost the loop a
        turn (a poll of every socket) more."""
        while self._read_one():
            try:
                if self.broken or not self.conn.poll():
                    return
            except (OSError, ValueError):  # (closed meanwhile: shutdown)
                return

    def _read_one(self) -> bool:
        """One answer read and handed to its caller; False when the pipe broke."""
        try:
            data = self.conn.recv_bytes()
        except (EOFError, OSError):
            self._break()
            return False
        try:
            call_id, ok, value = pickle.loads(data)
        except Exception as err:
            self._break(RuntimeError(f"a worker's answer could not be read: {type(err).__name__}: {err}"))
            return False
        del data
        pending = self._pending.pop(call_id, None)
        if pending is None:
            return True
        future, ended = pending
        ended()
        if not future.done():
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        return True

    def _detach(self) -> None:
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._loop.remove_reader(self.conn.fileno())

    def _break(self, error: BaseException | None = None) -> None:
        """The process is gone (or its pipe unusable): every call waiting on it fails."""
        if self.broken:
            return
        self.broken = True
        self._detach()
        pending, self._pending = self._pending, {}
        for future, ended in pending.values():
            ended()
            if not future.done():
                future.set_exception(error or BrokenProcessPool("a verification worker process died"))
        with contextlib.suppress(OSError):
            self.conn.close()
        self._reap()

    def kill(self, why: str) -> None:
        """End the process at once, whatever it is doing; every call waiting on it fails (WorkerLost)."""
        with contextlib.suppress(OSError, ValueError):
            self.process.kill()
        self._break(BrokenProcessPool(f"the verification worker was killed: {why}"))

    def _reap(self) -> None:
        threading.Thread(target=self.process.join, name="sgs-verify-worker-reap", daemon=True).start()

    def shutdown(self, timeout: float = 30.0) -> None:
        """End the process once the calls it has are done (its end of the pipe closes, and it exits)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                self._detach()
            else:
                done = threading.Event()

                def detach() -> None:
                    self._detach()
                    done.set()

                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    loop.call_soon_threadsafe(detach)
                    done.wait(5.0)
        self.broken = True
        with contextlib.suppress(OSError):
            self.conn.close()
        if self._sender is not None:
            self._sender.shutdown(wait=False)
        self.process.join(timeout)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5.0)
        for future, _ in self._pending.values():
            if not future.done() and loop is not None and not loop.is_closed():
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_fail, future)
        self._pending = {}


def _fail(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(BrokenProcessPool("the worker pool was shut down"))


def worker_cpus(workers: int) -> list[int | None]:
    """The CPU each of ``workers`` processes is pinned to: the CPUs this process may use, in turn — when there
    are at least as many workers as CPUs (the default, one per core), so that every CPU has its share; None
    for each when there are fewer (pinned, they would all crowd the first CPUs, and several servers with one
    worker each on the first), or where the OS has no affinity calls.

    Pinned, a worker keeps its core's caches between calls: unpinned, the scheduler moves it to whichever
    core is free when a call comes — often the one the server or a client just ran on — and a worker that
    verifies every few milliseconds spends the start of each call refilling them. Measured side by side on
    one server (2 cores, one client, the affinity switched round by round): whole logs 7–9 % and uploads
    6–12 % less time per event; live games unchanged. The server process itself is left free."""
    if not hasattr(os, "sched_getaffinity"):
        return [None] * workers
    allowed = sorted(os.sched_getaffinity(0))
    if workers < len(allowed):
        return [None] * workers
    return [allowed[i % len(allowed)] for i in range(workers)]


def pin_to_cpu(pid: int | None, cpu: int | None) -> int | None:
    """Pin the process to ``cpu``; the CPU it is pinned to, or None when it is not (no CPU given, no
    affinity calls, or the OS refused — a container may forbid it — which costs only the caches)."""
    if cpu is None or pid is None or not hasattr(os, "sched_setaffinity"):
        return None
    try:
        os.sched_setaffinity(pid, {cpu})
    except OSError:
        return None
    return cpu


@dataclass(slots=True)
class Worker:
    executor: WorkerProcess
    cpu: int | None = None  # the CPU its processes are to run on (a restarted one too); executor.cpu: where it is
    busy: int = 0  # tasks in flight
    games: int = 0  # live games pinned here


class WorkerPool:
    def __init__(self, workers: int, pin: bool = False) -> None:
        """``pin``: each worker process runs on one CPU of its own, in turn (worker_cpus)."""
        cpus = worker_cpus(workers) if pin else [None] * workers
        self.workers = [Worker(WorkerProcess(cpu), cpu) for cpu in cpus]
        self._ids = itertools.count(1)
        self.recycled = 0  # workers killed and replaced (a call past its deadline)

    def __len__(self) -> int:
        return len(self.workers)

    async def warm_up(self) -> None:
        await asyncio.gather(*(self._call(w, warm_up) for w in self.workers))

    async def _call(self, worker: Worker, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        executor = worker.executor
        return await self._answer(worker, executor, self._send(worker, fn, *args, **kwargs))

    def _send(self, worker: Worker, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[T]:
        """Send a call to the worker now (calls to one worker are answered in the order sent); the future has its
        answer (await it with ``_answer``). WorkerLost if the worker is gone (it is restarted)."""
        executor = worker.executor

        def ended() -> None:
            worker.busy -= 1

        try:
            # The worker counts as busy until the call really ends: a call abandoned at its
            # deadline still occupies the process, and new work should go elsewhere meanwhile.
            task: asyncio.Future[T] = executor.submit(fn, args, kwargs, ended)
        except BrokenProcessPool:
            self._restart(worker, executor)
            raise WorkerLost("a verification worker process died (it was restarted): retry") from None
        worker.busy += 1
        return task

    async def _answer(self, worker: Worker, executor: WorkerProcess, task: asyncio.Future[T]) -> T:
        try:
            return await task
        except BrokenProcessPool:
            self._restart(worker, executor)
            raise WorkerLost("a verification worker process died (it was restarted): retry") from None

    @staticmethod
    def _restart(worker: Worker, executor: WorkerProcess) -> None:
        if worker.executor is executor:
            executor.shutdown(timeout=0.0)
            worker.executor = WorkerProcess(worker.cpu)
            worker.games = 0

    async def run(self, job: VerifyJob, timeout: float, kill_after: float | None = None) -> Verified:
        """Verify a whole log on the least busy worker: TimeoutError after ``timeout`` s, and if the worker is still
        at it ``kill_after`` s after the start (the server's --deadline; default ``timeout``), it is killed and
        replaced (``call_within``). The work is pure, so if the worker turns out to be dead it is tried once more
        on a fresh one. The log's bytes go to the worker out of band, from where they are."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        for attempt in (1, 2):
            try:
                now = loop.time()
                return await self.call_within(start + timeout - now, start + (kill_after or timeout) - now,
                                              verify_job_data, dataclasses.replace(job, data=b""),
                                              pickle.PickleBuffer(job.data))
            except WorkerLost:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def call_within(self, timeout: float, kill_after: float, fn: Callable[P, T], *args: P.args,
                          **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the least busy worker; TimeoutError after ``timeout`` s. A call still running ``kill_after``
        s from now — waited for to the end, or given up on earlier (the caller's own deadline, a cancel) — has its
        worker process killed and replaced then: abandoned, it would go on spending a CPU and its memory (a record
        that inflates to gigabytes, a game that takes minutes), and every call queued behind it would wait for it.
        Those calls fail with WorkerLost, as when a worker dies. (Only ``kill_after``, the server's own limit,
        kills: a client's short deadline must not end other clients' calls.)"""
        if timeout <= 0:
            raise TimeoutError
        loop = asyncio.get_running_loop()
        started = loop.time()
        kill_at = started + kill_after
        worker = min(self.workers, key=lambda w: (w.busy, w.games))
        executor = worker.executor
        task = self._send(worker, fn, *args, **kwargs)
        try:
            answer = await asyncio.wait_for(self._answer(worker, executor, task), timeout)
            if loop.time() - started > timeout:
                # The answer came in the loop's same turn as the deadline, and was seen first (asyncio runs what
                # a socket brought before the timers due): it still came too late. (Its worker is free.)
                raise TimeoutError
            return answer
        except (TimeoutError, asyncio.CancelledError):
            def check() -> None:
                if worker.executor is executor and any(f is task for f, _ in executor._pending.values()):
                    self.recycle(worker, executor, f"it was still running {getattr(fn, '__name__', 'a call')} "
                                 f"{kill_after:g} s after it was sent, past the server's --deadline")

            loop.call_at(kill_at, check)
            raise

    def recycle(self, worker: Worker, executor: WorkerProcess, why: str) -> None:
        """Kill the worker's process now (SIGKILL: a busy one would not read a request to stop) and start another
        in its place; the calls it had fail with WorkerLost."""
        if worker.executor is not executor:
            return  # replaced already
        log.warning("verification worker %s killed and replaced: %s", executor.process.pid, why)
        self.recycled += 1
        executor.kill(why)
        worker.executor = WorkerProcess(worker.cpu)
        worker.games = 0

    async def call_pinned(self, key: int, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``fn`` on the worker ``key`` picks (always the same one for the same key while the pool
        lasts), so what it keeps in that process between calls (the viewer's timelines) is found again.
        WorkerLost if that worker died (it is restarted, with nothing kept)."""
        return await self._call(self.workers[key % len(self.workers)], fn, *args, **kwargs)

    def open_live(self) -> LiveSession:
        worker = min(self.workers, key=lambda w: (w.games, w.busy))
        worker.games += 1
        return LiveSession(self, worker, next(self._ids))

    def shutdown(self) -> None:
        for w in self.workers:
            w.executor.shutdown()


def retrieved(future: asyncio.Future[Any]) -> None:
    """A done callback for a future whose outcome may go unread (a batch's answer after the stream failed, a
    verification dropped for a stored copy): its error is read, so asyncio never reports it as never retrieved."""
    if not future.cancelled():
        future.exception()


class LiveSession:
    """One live game, pinned to one worker process. Its calls are sent as soon as they are known and answered in
    the order sent (the worker's order): the game is started while its first batch is read, and finished while
    the answers before it are written out."""

    def __init__(self, pool: WorkerPool, worker: Worker, game_id: int) -> None:
        self.pool = pool
        self.worker = worker
        self.executor = worker.executor
        self.game_id = game_id
        self.started = False  # live_start sent: the worker has the game (or will, before any later call)
        self.closed = False
        self.event_count = 0
        self._starting: asyncio.Future[None] | None = None  # live_start's answer, until it is awaited
        self._finishing: asyncio.Future[tuple[bytes, NewReplay]] | None = None

    def start(self, header: pb.GameHeader, metadata: SubmissionMetadata) -> None:
        """Send the game's start; it is not waited for: a failure to start is raised where the game is next
        waited on (its first batch's answer, or its end)."""
        self._starting = self._unreported(self.pool._send(self.worker, live_start, self.game_id,
                                                          header.SerializeToString(), metadata))
        self.started = True

    def send(self, events: bytes, count: int) -> asyncio.Future[bytes]:
        """Send a batch (its ``count`` events' encoding as GameLog.events) now, so that batches sent one after
        another are judged in that order and the next can be read from the client while this one is judged;
        ``answer`` awaits its VerifyLiveResponse's encoding."""
        self.event_count += count
        self._check_worker()
        return self._unreported(self.pool._send(self.worker, live_feed, self.game_id, events))

    def end(self, server: bytes = b"") -> asyncio.Future[tuple[bytes, NewReplay]]:
        """Send the game's finish (the client's stream has ended), so the worker closes the game right after
        its last batch; ``finish`` awaits it. ``server``: the recording server's verdicts (ServerVerdicts)."""
        if self._finishing is None:
            self._check_worker()
            self._finishing = self._unreported(self.pool._send(self.worker, live_finish, self.game_id, server))
        return self._finishing

    async def answer(self, sent: asyncio.Future[bytes]) -> bytes:
        await self._started()
        return await self.pool._answer(self.worker, self.executor, sent)

    async def finish(self) -> tuple[spb.VerifyLiveResponse, NewReplay]:
        finishing = self.end()
        await self._started()
        last, record = await self.pool._answer(self.worker, self.executor, finishing)
        self._release()
        return spb.VerifyLiveResponse.FromString(last), record

    async def close(self) -> None:
        """Drop the game if it did not finish (the client went away, or an error)."""
        if self.closed:
            return
        self._release()
        if self.started and self.worker.executor is self.executor:
            with contextlib.suppress(WorkerLost, RuntimeError):  # the worker died, or the pool is closing
                await self.pool._call(self.worker, live_drop, self.game_id)

    async def _started(self) -> None:
        starting, self._starting = self._starting, None
        if starting is not None:
            await self.pool._answer(self.worker, self.executor, starting)

    def _check_worker(self) -> None:
        if self.worker.executor is not self.executor:
            raise WorkerLost("the live game's worker process died (it was restarted): the game is lost")

    @staticmethod
    def _unreported(future: asyncio.Future[T]) -> asyncio.Future[T]:
        # An answer may never be awaited (the call ended first): its error is not one asyncio should report.
        future.add_done_callback(retrieved)
        return future

    def _release(self) -> None:
        if not self.closed:
            self.closed = True
            if self.worker.executor is self.executor:
                self.worker.games -= 1
