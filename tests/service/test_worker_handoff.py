"""The hand-off to a worker process (service/workers.py): calls and answers larger than the socket's buffer, a
busy worker, a worker killed with a call half sent, and the order of answers."""

from __future__ import annotations

import asyncio
import os
import pickle
import signal
import time
from dataclasses import fields
from typing import Any

from service.workers import SOCKET_BUFFER_BYTES, WorkerPool, retrieved
from storage.store import NewReplay, SeatFacts, SubmissionMetadata, VerdictFacts, ViolationFacts

# More than the socket pair holds, both ends together (Linux doubles the buffer sizes set).
LARGE = 5 * SOCKET_BUFFER_BYTES


def test_calls_and_answers_larger_than_the_socket_reach_a_busy_worker_and_come_back() -> None:
    big = os.urandom(LARGE)

    async def main() -> tuple[Any, ...]:
        pool = WorkerPool(1)
        try:
            await pool.warm_up()
            worker = pool.workers[0]
            busy = pool._send(worker, time.sleep, 0.5)  # the worker reads nothing for half a second
            sized = pool._send(worker, len, big)
            echoed = pool._send(worker, bytes, big)  # (an answer as large, read as it arrives)
            answers = await asyncio.gather(busy, sized, echoed)
            return (*answers, worker.busy)
        finally:
            pool.shutdown()

    slept, size, echo, busy = asyncio.run(main())
    assert slept is None and size == len(big) and echo == big
    assert busy == 0


def test_answers_come_in_the_order_the_calls_went() -> None:
    async def main() -> list[Any]:
        pool = WorkerPool(1)
        try:
            worker = pool.workers[0]
            sent = [pool._send(worker, bytes, n) for n in (0, 1, 70_000, 5, 2 * SOCKET_BUFFER_BYTES, 3)]
            return list(await asyncio.gather(*sent))
        finally:
            pool.shutdown()

    assert [len(a) for a in asyncio.run(main())] == [0, 1, 70_000, 5, 2 * SOCKET_BUFFER_BYTES, 3]


def test_answers_that_piled_up_while_the_loop_was_busy_are_read_in_one_turn() -> None:
    """A worker answers call after call while the event loop is busy elsewhere: once free, the loop reads them
    all when it first finds the socket readable, each handed to its caller, rather than one a turn."""
    turns = 0

    async def main() -> list[Any]:
        nonlocal turns
        pool = WorkerPool(1)
        try:
            worker = pool.workers[0]
            executor = worker.executor
            read = executor._readable

            def counted() -> None:
                nonlocal turns
                turns += 1
                read()

            executor._readable = counted  # type: ignore[method-assign]  # (before the first call adds the reader)
            sent = [pool._send(worker, abs, -n) for n in range(20)]
            time.sleep(1.0)  # the loop busy (the worker, another process, answers every call meanwhile)
            return list(await asyncio.gather(*sent))
        finally:
            pool.shutdown()

    assert asyncio.run(main()) == list(range(20))
    assert turns < 20


def test_a_worker_killed_with_a_large_call_unsent_fails_that_call() -> None:
    async def main() -> BaseException | None:
        pool = WorkerPool(1)
        try:
            await pool.warm_up()
            worker = pool.workers[0]
            pool._send(worker, time.sleep, 5).add_done_callback(retrieved)
            stuck = pool._send(worker, len, os.urandom(LARGE))
            process = worker.executor.process
            assert process.pid is not None
            os.kill(process.pid, signal.SIGKILL)
            try:
                await asyncio.wait_for(stuck, 30)
            except BaseException as err:  # (the error is what is checked)
                return err
            return None
        finally:
            pool.shutdown()

    err = asyncio.run(main())
    assert err is not None and type(err).__name__ == "BrokenProcessPool"


def test_a_record_crosses_as_its_fields_and_comes_back_equal() -> None:
    """A worker's record (storage.store.pickled_by_fields) is pickled as its constructor's arguments, every field
    of it, the nested records too."""
    violation = ViolationFacts(event_index=3, derived=True, code="SLASH_LIMIT", message="m", rule="r", seat=0,
                               card=None)
    verdict = VerdictFacts(engine_version="v", violation_count=1, violation_codes=("SLASH_LIMIT",), followed=True,
                           stopped_at=None, stopped_reason="", finished=True, side=1, winners=(0, 2),
                           result_reason="lord", annotation_count=9, scores=(3, -1), replay_blob=b"\x00blob",
                           violations=(violation,))
    record = NewReplay(log_sha256="ab" * 32, log_bytes=b"\x01log", log_format="binary", event_count=9, ruleset="r",
                       mode=1, seed=2**63, recorder="me", seats=(SeatFacts(0, "p", 1, "g"),),
                       metadata=SubmissionMetadata(tournament="cup", table="A"), verdict=verdict)
    again = pickle.loads(pickle.dumps(record, pickle.HIGHEST_PROTOCOL))
    assert again == record and again.verdict.violations[0] == violation
    reduced = record.__reduce__()
    assert isinstance(reduced, tuple)
    constructor, args = reduced[:2]
    assert constructor is NewReplay and args == tuple(getattr(record, f.name) for f in fields(NewReplay))
