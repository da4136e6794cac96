"""A live game's calls to its worker (service/workers.py LiveSession): the start and the finish are sent without
waiting, answered in order, and a failure of either is raised where the game is next waited on."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from clients.selfplay import play_game
from service.work import canonical_bytes
from service.workers import LiveSession, WorkerPool, live_game_count
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from storage.store import SubmissionMetadata
from verifier import verify

META = SubmissionMetadata(tournament="live session")


def batches(log: pb.GameLog, size: int) -> list[tuple[bytes, int]]:
    """The log's events in batches, each as its GameLog.events encoding (what the server sends the worker)."""
    events = list(log.events)
    return [(canonical_bytes(pb.GameLog(events=events[i:i + size])), len(events[i:i + size]))
            for i in range(0, len(events), size)]


def run(main: Any) -> Any:
    return asyncio.run(main())


def test_a_game_started_fed_and_ended_without_waiting_is_judged_as_a_whole_log_is() -> None:
    log = play_game(5, 5)

    async def main() -> tuple[int, list[bytes], Any, int]:
        pool = WorkerPool(1)
        try:
            game = pool.open_live()
            game.start(log.header, META)
            sent = [game.send(data, count) for data, count in batches(log, 50)]
            game.end()
            in_flight = pool.workers[0].busy  # every call is on its way before any answer is awaited
            answers = [await game.answer(s) for s in sent]
            last, record = await game.finish()
            left = await pool._call(pool.workers[0], live_game_count)
            return in_flight, [*answers, last.SerializeToString()], record, left
        finally:
            pool.shutdown()

    in_flight, answers, record, left = run(main)
    assert in_flight == len(batches(log, 50)) + 2
    streamed = apb.AnnotatedReplay()
    for answer in answers:
        streamed.annotations.extend(spb.VerifyLiveResponse.FromString(answer).annotations)
    whole = verify(log)
    assert list(streamed.annotations) == list(whole.annotations)
    assert record.event_count == len(log.events)
    assert record.verdict.violation_count == whole.violation_count
    assert left == 0


class _Undecodable:
    """A header whose encoding the worker cannot parse: its live_start fails there."""

    def SerializeToString(self) -> bytes:
        return b"\x0a\xff"  # field 1, length-delimited, with a length far past the end


def _failing_start(pool: WorkerPool) -> LiveSession:
    game = pool.open_live()
    game.start(_Undecodable(), META)  # type: ignore[arg-type]
    return game


def test_a_failure_to_start_is_raised_at_the_first_answer_not_a_missing_game() -> None:
    log = play_game(6, 4)

    async def main() -> BaseException:
        pool = WorkerPool(1)
        try:
            game = _failing_start(pool)
            data, count = batches(log, 20)[0]
            sent = game.send(data, count)
            with pytest.raises(Exception) as caught:
                await game.answer(sent)
            await game.close()
            return caught.value
        finally:
            pool.shutdown()

    err = run(main)
    # The start's own error (the header does not parse), not the KeyError the batch met in the worker.
    assert type(err).__name__ == "DecodeError", repr(err)


def test_a_failure_to_start_is_raised_at_the_end_of_a_game_with_no_batches() -> None:
    async def main() -> BaseException:
        pool = WorkerPool(1)
        try:
            game = _failing_start(pool)
            with pytest.raises(Exception) as caught:
                await game.finish()
            await game.close()
            return caught.value
        finally:
            pool.shutdown()

    err = run(main)
    assert type(err).__name__ == "DecodeError", repr(err)  # (not the KeyError of a finish with no game)


def test_a_game_closed_while_its_start_is_on_its_way_is_dropped_in_the_worker() -> None:
    log = play_game(7, 4)

    async def main() -> tuple[int, int]:
        pool = WorkerPool(1)
        try:
            game = pool.open_live()
            game.start(log.header, META)
            await game.close()  # (before the start was answered)
            left = await pool._call(pool.workers[0], live_game_count)
            return left, pool.workers[0].games
        finally:
            pool.shutdown()

    assert run(main) == (0, 0)
