"""Limits over every replica (service/shared_limits.py, issue 30): three replicas in this process sharing one
database, a client spreading its calls over them with gRPC's round_robin. A tenant's rate and its streams at
once hold for the deployment as they do with one replica, and a revoked token stops working on every replica
within the token cache's time. Both backends."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from clients.client import LimitExceeded, Unauthenticated, VerifierClient
from clients.selfplay import play_game
from service.config import Limits
from service.guard import TOKEN_CACHE_SECONDS
from service.server import BackgroundServer
from service.shared_limits import SharedLimits, measure
from sgsverify.v1 import game_log_pb2 as pb
from storage.access import revoke_token
from storage.store import Audit, Store
from tests.service.conftest import BACKENDS, fresh_database, make_token, server_config
from tests.service.test_limits import Held

RATE, BURST, STREAMS = 5.0, 10, 3


@pytest.fixture(scope="module", params=BACKENDS)
def deployment(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[tuple[str, list[BackgroundServer]]]:
    """Three replicas over one fresh database; (its URL, the replicas)."""
    backend = request.param
    folder = tmp_path_factory.mktemp(f"replicas-{backend}")
    url, db = fresh_database(backend, folder)
    make_token(url, "ops", "admin")  # a token exists: the replicas require tokens
    limits = replace(Limits(), rate_limit=RATE, rate_burst=BURST, max_streams_per_tenant=STREAMS)
    replicas = [BackgroundServer(server_config(url, folder / str(i), workers=1, limits=limits)).start()
                for i in range(3)]
    try:
        yield url, replicas
    finally:
        for replica in replicas:
            replica.stop()
        if db is not None:
            db.drop()


def spread(replicas: list[BackgroundServer]) -> str:
    """The target a load balancer would be: every replica's address."""
    return "ipv4:" + ",".join(r.address for r in replicas)


def admitted_in_a_burst(client: VerifierClient, calls: int) -> tuple[int, float]:
    """(calls admitted, seconds taken) of ``calls`` list calls made as fast as they go."""
    admitted = 0
    started = time.monotonic()
    for _ in range(calls):
        try:
            client.list_page(page_size=1)
            admitted += 1
        except LimitExceeded as refused:
            assert "rate limit" in refused.details
    return admitted, time.monotonic() - started


def test_a_tenants_rate_holds_over_three_replicas_as_over_one(deployment: tuple[str, list[BackgroundServer]]) -> None:
    url, replicas = deployment
    solo_token, spread_token = make_token(url, "solo", "read"), make_token(url, "spread", "read")
    with VerifierClient(replicas[0].address, token=solo_token, timeout=30) as solo, \
            VerifierClient(spread(replicas), token=spread_token, timeout=30, lb_policy="round_robin") as many:
        one, one_seconds = admitted_in_a_burst(solo, 40)
        three, three_seconds = admitted_in_a_burst(many, 40)
    print(f"\nrate {RATE:g}/s burst {BURST}: one replica admitted {one} of 40 in {one_seconds:.2f} s, "
          f"three replicas {three} of 40 in {three_seconds:.2f} s ({three / one:.2f}x)")
    # The bucket's own bound: the burst plus what refilled meanwhile (each replica's own bucket would admit three
    # times the burst: 30 or more).
    for admitted, seconds in ((one, one_seconds), (three, three_seconds)):
        assert BURST <= admitted <= BURST + RATE * seconds + 1


def opened_once_a_lease_is_back(client: VerifierClient, log: pb.GameLog) -> Held:
    """A stream opened as soon as the tenant has a stream to spare again: a lease is deleted as its stream ends,
    off the event loop, so a moment after."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return Held(client, log)
        except LimitExceeded:
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_a_tenants_streams_at_once_hold_over_three_replicas(deployment: tuple[str, list[BackgroundServer]]) -> None:
    url, replicas = deployment
    token = make_token(url, "streamer", "submit,read")
    log = play_game(1, 5)
    held: list[Held] = []
    refused = 0
    with VerifierClient(spread(replicas), token=token, timeout=30, lb_policy="round_robin") as client:
        try:
            for _ in range(2 * STREAMS):
                try:
                    held.append(Held(client, log))
                except LimitExceeded as err:
                    assert "streams open over every replica" in err.details
                    refused += 1
            print(f"\n{STREAMS} streams allowed: {len(held)} opened and {refused} refused over three replicas")
            assert len(held) == STREAMS and refused == STREAMS
            held.pop().close()
            held.append(opened_once_a_lease_is_back(client, log))
        finally:
            for h in held:
                h.close()


def test_a_revoked_token_stops_on_every_replica(deployment: tuple[str, list[BackgroundServer]]) -> None:
    url, replicas = deployment
    token = make_token(url, "revoked", "read", name="to revoke")
    clients = [VerifierClient(r.address, token=token, timeout=30) for r in replicas]
    try:
        for client in clients:
            client.list_page(page_size=1)  # each replica has the token in its cache now
        store = Store.open(url)
        try:
            revoke_token(store, token.split("_")[1], Audit("tests"))
        finally:
            store.close()
        time.sleep(TOKEN_CACHE_SECONDS + 0.5)  # the documented bound (docs/security.md)
        for client in clients:
            with pytest.raises(Unauthenticated):
                client.list_page(page_size=1)
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_cost_of_an_admission(backend: str, tmp_path: Path) -> None:
    """Not a timing assertion: the figures docs/security.md quotes, printed (a unary call's UPSERT; a stream's
    UPSERT, lease and delete)."""
    url, db = fresh_database(backend, tmp_path)
    store = Store.open(url)
    try:
        unary = measure(store, 200)
        stream = measure(store, 100, stream_every=1)
        print(f"\n{backend}: {unary * 1000:.2f} ms per unary admission, {stream * 1000:.2f} ms per stream "
              "(admission and release)")
        assert unary > 0 and stream > 0
    finally:
        store.close()
        if db is not None:
            db.drop()


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_viewers_requests_and_uploads_count_over_every_replica(backend: str, tmp_path: Path) -> None:
    """The viewer's API takes the tenant's rate over every replica as gRPC does, and an upload holds one of the
    tenant's streams over every replica while it is read (two replicas, each with its viewer)."""
    url, db = fresh_database(backend, tmp_path)
    make_token(url, "ops", "admin")
    limits = replace(Limits(), rate_limit=RATE, rate_burst=BURST, max_streams_per_tenant=2)
    replicas = [BackgroundServer(server_config(url, tmp_path / str(i), workers=1, limits=limits,
                                               http_address="127.0.0.1:0")).start() for i in range(2)]
    try:
        reader, uploader = make_token(url, "reader", "read"), make_token(url, "uploader", "submit,read")
        admitted, started = 0, time.monotonic()
        for i in range(40):
            answer = httpx.get(f"{replicas[i % 2].http_url}api/replays", timeout=30,
                               headers={"Authorization": f"Bearer {reader}"})
            if answer.status_code == 200:
                admitted += 1
            else:
                assert answer.status_code == 429 and "over every replica" in answer.json()["error"], answer.text
        seconds = time.monotonic() - started
        print(f"\nthe viewer's API, rate {RATE:g}/s burst {BURST}: {admitted} of 40 admitted over two replicas "
              f"in {seconds:.2f} s")
        assert BURST <= admitted <= BURST + RATE * seconds + 1  # (each replica's own bucket: twice the burst)

        # an upload half sent to the first replica's viewer holds one of the tenant's two streams
        guard = replicas[0].server.guard
        assert guard is not None
        host, port = replicas[0].http_url.removeprefix("http://").rstrip("/").rsplit(":", 1)
        held = socket.create_connection((host, int(port)), timeout=30)
        try:
            held.sendall(f"POST /api/replays?engine=freekill HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer "
                         f"{uploader}\r\nContent-Type: application/octet-stream\r\nContent-Length: {1 << 20}"
                         "\r\n\r\n".encode() + b"\0" * 1000)
            deadline = time.monotonic() + 30
            while guard.in_flight < 1:
                assert time.monotonic() < deadline
                time.sleep(0.02)
            log = play_game(1, 5)
            streams: list[Held] = []
            with VerifierClient(replicas[1].address, token=uploader, timeout=30) as client:
                try:
                    streams.append(Held(client, log))  # the second of two
                    with pytest.raises(LimitExceeded, match="streams open over every replica"):
                        Held(client, log)
                    held.close()  # the upload's client gone: its lease is given back
                    streams.append(opened_once_a_lease_is_back(client, log))
                finally:
                    for stream in streams:
                        stream.close()
        finally:
            held.close()
    finally:
        for replica in replicas:
            replica.stop()
        if db is not None:
            db.drop()


@pytest.mark.parametrize("backend", BACKENDS)
def test_with_no_rate_limit_a_unary_call_costs_no_transaction_and_streams_stay_limited(
        backend: str, tmp_path: Path) -> None:
    """--rate-limit 0: a unary call can be refused by nothing, so it does not touch the shared tables at all
    (no bucket row for its tenant); a stream still takes its lease, over the limit refused, given back at its end."""
    url, db = fresh_database(backend, tmp_path)
    store = Store.open(url)

    async def io(fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)

    async def scenario() -> None:
        limits = SharedLimits(store, io, rate=0.0, burst=1, max_streams=1, streams=frozenset({"Stream"}))
        for _ in range(5):
            assert await limits.admit("Unary", "quiet") is None
        with store.transaction() as session:
            assert session.execute(text("SELECT count(*) FROM tenant_rates")).scalar_one() == 0
        first, lease = await limits.hold_stream("Stream", "busy")
        assert first is None and lease is not None
        second, none = await limits.hold_stream("Stream", "busy")
        assert second is not None and second.reason == "streams" and none is None
        limits.release(lease)
        await limits.stop()  # waits for the release
        third, again = await limits.hold_stream("Stream", "busy")
        assert third is None and again is not None
        limits.release(again)
        await limits.stop()
        with store.transaction() as session:
            tenants = session.execute(text("SELECT tenant FROM tenant_rates")).scalars().all()
        assert tenants == ["busy"]

    try:
        asyncio.run(scenario())
    finally:
        store.close()
        if db is not None:
            db.drop()
