"""A log whose hash the server knows before verifying it (VerifyLog with a GameLog, UploadLog) is looked up in
the store while a worker verifies it, not before: a new log does not wait for the look-up; a stored one is
answered from the store; a look-up that fails fails the call, and the dropped verification stores nothing
(SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from clients.client import ServiceError, VerifierClient
from clients.selfplay import play_game
from service.server import BackgroundServer
from sgsverify.v1 import game_log_pb2 as pb
from storage.store import StorageUnavailable, Store
from tests.service.conftest import BACKENDS, Held, server_holding


class Served:
    def __init__(self, server: BackgroundServer, store: Store, hold: Held) -> None:
        self.server, self.store, self.hold = server, store, hold
        self.verifying = threading.Event()  # a worker was given the log

        pool = server.server.pool
        assert pool is not None
        run = pool.run

        async def watched_run(*args: Any, **kwargs: Any) -> Any:
            self.verifying.set()
            return await run(*args, **kwargs)

        pool.run = watched_run  # type: ignore[method-assign]


@pytest.fixture(params=BACKENDS)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    """A server whose store holds each `find` until released (Held)."""
    with server_holding(request.param, tmp_path, "find") as (server, store, hold):
        yield Served(server, store, hold)


def submit_in_background(served: Served, log: pb.GameLog, how: str) -> tuple[threading.Thread, list[Any]]:
    out: list[Any] = []

    def call() -> None:
        with VerifierClient(served.server.address, timeout=60) as client:
            try:
                out.append(client.verify(log) if how == "whole" else client.upload(log, batch_size=100))
            except ServiceError as err:
                out.append(err)

    thread = threading.Thread(target=call)
    thread.start()
    return thread, out


@pytest.mark.parametrize("how", ["whole", "upload"])
def test_a_new_log_is_verified_while_it_is_looked_up(served: Served, how: str) -> None:
    log = play_game(11, 5)
    thread, out = submit_in_background(served, log, how)
    assert served.hold.entered.wait(20), "the log was never looked up"
    # The look-up is held: the log went to a worker all the same.
    assert served.verifying.wait(20), "the verification waited for the look-up"
    served.hold.release.set()
    thread.join(60)
    (submission,) = out
    assert submission.created and submission.info.violation_count == 0
    assert served.store.count() == 1


def test_a_stored_log_is_answered_from_the_store(served: Served) -> None:
    log = play_game(12, 5)
    served.hold.release.set()
    with VerifierClient(served.server.address, timeout=60) as client:
        first = client.verify(log)
        again = client.upload(log, batch_size=100)
    assert first.created and not again.created
    assert again.info.id == first.info.id and again.replay.engine_version == first.replay.engine_version
    assert served.store.count() == 1


def test_a_failed_look_up_fails_the_call_and_the_dropped_verification_stores_nothing(served: Served) -> None:
    log = play_game(13, 5)
    served.hold.fail = StorageUnavailable("the replay store is unavailable: held find told to fail")
    thread, out = submit_in_background(served, log, "whole")
    assert served.verifying.wait(20)
    served.hold.release.set()
    thread.join(60)
    (err,) = out
    assert isinstance(err, ServiceError) and err.code == grpc.StatusCode.UNAVAILABLE
    # The worker's answer comes back to nobody: the next call is served, and nothing of the first was stored.
    served.hold.fail = None
    with VerifierClient(served.server.address, timeout=60) as client:
        assert client.verify(play_game(14, 5)).created
    assert served.store.count() == 1
