"""The verification worker processes.

There are ``workers`` processes, each behind its own single-process executor, so that a live
game can be pinned to one process: its incremental Verifier lives there (in ``_LIVE_GAMES``)
from the header to the end of the stream, and each batch of events is sent to it. Whole logs
go to the least busy process. Nothing CPU-bound runs in the server's process, so its event loop
stays responsive; verification uses every core.

Messages cross the process boundary as protobuf bytes; the worker returns live answers as
serialized VerifyLiveResponse messages, which the server sends on unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import multiprocessing
import multiprocessing.connection
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from service.live import LiveGame
from service.work import VerifyJob, annotation_problems, run_job, warm_up
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from storage.store import NewReplay, SubmissionMetadata
from verifier import LogFormatError

P = ParamSpec("P")
T = TypeVar("T")

# ---------------------------------------------------------------------------------------- in the worker

# How often a worker looks whether its parent is still there (besides waiting on the pipe to it).
PARENT_POLL_SECONDS = 1.0


def exit_with_parent() -> None:
    """Run in each new worker process (the executor's initializer): a daemon thread ends the process as
    soon as its parent — the server — is gone, even when that was killed (SIGKILL) and could not shut
    its pool down: then the pipe the parent held open reaches end-of-file (multiprocessing's parent
    sentinel), or the process is re-parented. Without it, workers outlive a killed server."""
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


_LIVE_GAMES: dict[int, LiveGame] = {}


def live_start(game_id: int, header: bytes, metadata: SubmissionMetadata) -> None:
    _LIVE_GAMES[game_id] = LiveGame(pb.GameHeader.FromString(header), metadata)


def live_feed(game_id: int, events: bytes) -> bytes:
    """Feed a batch (a GameLog holding only events); returns a serialized VerifyLiveResponse."""
    game = _LIVE_GAMES[game_id]
    annotations = game.feed(list(pb.GameLog.FromString(events).events))
    problems = annotation_problems(annotations)
    if problems:
        raise LogFormatError("; ".join(problems))
    return spb.VerifyLiveResponse(annotations=annotations, events_received=game.event_count,
                                  game_over=game.over).SerializeToString()


def live_finish(game_id: int) -> tuple[bytes, NewReplay]:
    """Close the game: the last VerifyLiveResponse (without `finished`) and the record to store."""
    game = _LIVE_GAMES.pop(game_id)
    rest, record = game.finish()
    problems = record.problems()
    if problems:
        raise LogFormatError("; ".join(problems))
    last = spb.VerifyLiveResponse(annotations=rest, events_received=game.event_count, game_over=game.over)
    return last.SerializeToString(), record


def live_drop(game_id: int) -> None:
    _LIVE_GAMES.pop(game_id, None)


def live_game_count() -> int:
    return len(_LIVE_GAMES)


# ---------------------------------------------------------------------------------------- in the server

class WorkerLost(RuntimeError):
    """A worker process died; its live games are lost and it was restarted."""


@dataclass(slots=True)
class Worker:
    executor: ProcessPoolExecutor
    busy: int = 0  # tasks in flight
    games: int = 0  # live games pinned here


def _new_executor() -> ProcessPoolExecutor:
    # spawn: forking a process that runs gRPC's threads is unsafe.
    return ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=exit_with_parent)


class WorkerPool:
    def __init__(self, workers: int) -> None:
        self.workers = [Worker(_new_executor()) for _ in range(workers)]
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self.workers)

    async def warm_up(self) -> None:
        await asyncio.gather(*(self._call(w, warm_up) for w in self.workers))

    async def _call(self, worker: Worker, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        executor = worker.executor

        def done(_: object) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is already closed: nobody is counting
                loop.call_soon_threadsafe(self._done, worker)

        try:
            task = executor.submit(functools.partial(fn, *args, **kwargs))
            # The worker counts as busy until the task really ends: a call abandoned at its
            # deadline still occupies the process, and new work should go elsewhere meanwhile.
            worker.busy += 1
            task.add_done_callback(done)
            return await asyncio.wrap_future(task)
        except BrokenProcessPool:
            if worker.executor is executor:
                worker.executor = _new_executor()
                worker.games = 0
            raise WorkerLost("a verification worker process died (it was restarted): retry") from None

    @staticmethod
    def _done(worker: Worker) -> None:
        worker.busy -= 1

    async def run(self, job: VerifyJob, timeout: float) -> NewReplay:
        """Verify a whole log on the least busy worker (TimeoutError after ``timeout`` s). The
        work is pure, so if the worker turns out to be dead it is tried once more on a fresh one."""
        return await asyncio.wait_for(self._run(job), timeout)

    async def _run(self, job: VerifyJob) -> NewReplay:
        try:
            return await self._call(min(self.workers, key=lambda w: (w.busy, w.games)), run_job, job)
        except WorkerLost:
            return await self._call(min(self.workers, key=lambda w: (w.busy, w.games)), run_job, job)

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
            w.executor.shutdown(wait=True, cancel_futures=True)


class LiveSession:
    """One live game, pinned to one worker process."""

    def __init__(self, pool: WorkerPool, worker: Worker, game_id: int) -> None:
        self.pool = pool
        self.worker = worker
        self.executor = worker.executor
        self.game_id = game_id
        self.started = False
        self.closed = False
        self.event_count = 0

    async def start(self, header: pb.GameHeader, metadata: SubmissionMetadata) -> None:
        await self.pool._call(self.worker, live_start, self.game_id, header.SerializeToString(), metadata)
        self.started = True

    async def feed(self, events: pb.GameLog) -> bytes:
        self.event_count += len(events.events)
        return await self.pool._call(self.worker, live_feed, self.game_id, events.SerializeToString())

    async def finish(self) -> tuple[spb.VerifyLiveResponse, NewReplay]:
        last, record = await self.pool._call(self.worker, live_finish, self.game_id)
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

    def _release(self) -> None:
        if not self.closed:
            self.closed = True
            if self.worker.executor is self.executor:
                self.worker.games -= 1
