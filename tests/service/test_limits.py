"""The limits of docs/security.md, each reached: the tenant's rate limit and the global concurrency cap
(RESOURCE_EXHAUSTED with a retry hint), the tenant's open streams, an idle stream, the byte budget (a
request admitted only when its first message fits, so 8 concurrent 15 MB uploads do not grow the server
by their sum), oversize messages on every RPC shape."""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

from clients.client import DeadlineExceeded, LimitExceeded, VerifierClient
from clients.selfplay import play_game
from service.config import Limits
from service.server import BackgroundServer
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from tests.service.conftest import fresh_database, make_token, server_config

ROOT = Path(__file__).resolve().parents[2]


def limited(tmp_path: Path, **limits: object) -> tuple[BackgroundServer, dict[str, str]]:
    url, _ = fresh_database("sqlite", tmp_path)
    tokens = {tenant: make_token(url, tenant, "submit,read") for tenant in ("acme", "bravo")}
    server = BackgroundServer(server_config(url, tmp_path, limits=replace(Limits(), **limits))).start()  # type: ignore[arg-type]
    return server, tokens


class Held:
    """A live stream kept open: the header sent, the first answer read, more events only when asked."""

    def __init__(self, client: VerifierClient, log: pb.GameLog) -> None:
        self.outbox: queue.Queue[list[pb.Event] | None] = queue.Queue()

        def batches() -> Iterator[list[pb.Event]]:
            while (batch := self.outbox.get()) is not None:
                yield batch

        self.updates = client.live(log.header, batches(), discard=True)
        next(self.updates)

    def close(self) -> None:
        self.outbox.put(None)
        list(self.updates)


def test_a_tenants_rate_limit(tmp_path: Path) -> None:
    server, tokens = limited(tmp_path, rate_limit=2.0, rate_burst=3)
    try:
        with VerifierClient(server.address, token=tokens["acme"], timeout=30) as acme, \
                VerifierClient(server.address, token=tokens["bravo"], timeout=30) as bravo:
            for _ in range(3):
                acme.list_page()
            with pytest.raises(LimitExceeded, match=r"rate limit of 2 requests per second") as raised:
                acme.list_page()
            assert raised.value.retry_after is not None and 0 < raised.value.retry_after <= 0.5
            assert raised.value.request_id
            bravo.list_page()  # another tenant has its own bucket
            time.sleep(raised.value.retry_after + 0.05)
            acme.list_page()
    finally:
        server.stop()


def test_the_concurrency_cap_and_streams_per_tenant(tmp_path: Path) -> None:
    server, tokens = limited(tmp_path, max_concurrent_rpcs=3, max_streams_per_tenant=2)
    log = play_game(1, 5)
    try:
        with VerifierClient(server.address, token=tokens["acme"], timeout=30) as acme, \
                VerifierClient(server.address, token=tokens["bravo"], timeout=30) as bravo:
            held = [Held(acme, log), Held(acme, log)]
            with pytest.raises(LimitExceeded, match="2 streams open") as raised:
                Held(acme, log)
            assert raised.value.retry_after == 1.0
            acme.list_page()  # a unary call still goes
            held.append(Held(bravo, log))  # bravo's streams are its own
            with pytest.raises(LimitExceeded, match="3 requests in progress") as raised:
                bravo.list_page()
            assert raised.value.retry_after == 1.0
            for h in held:
                h.close()
            acme.list_page()
            Held(acme, log).close()
    finally:
        server.stop()


def test_an_idle_stream_is_ended(tmp_path: Path) -> None:
    server, tokens = limited(tmp_path, stream_idle_seconds=0.5)
    log = play_game(2, 5)
    try:
        with VerifierClient(server.address, token=tokens["acme"], timeout=30) as acme:
            held = Held(acme, log)
            time.sleep(1.0)
            held.outbox.put(list(log.events[:5]))
            held.outbox.put(None)
            with pytest.raises(DeadlineExceeded, match=r"sent nothing for 0\.5 s"):
                list(held.updates)
            # One that keeps sending is not idle.
            def slowly() -> Iterator[list[pb.Event]]:
                for start in range(0, len(log.events), 100):
                    time.sleep(0.2)
                    yield list(log.events[start:start + 100])
            last = list(acme.live(log.header, slowly()))[-1]
            assert last.finished is not None and last.finished.stored
    finally:
        server.stop()


def test_oversize_messages_are_resource_exhausted_on_every_rpc(tmp_path: Path) -> None:
    server, tokens = limited(tmp_path, max_message_bytes=64 * 1024, max_buffered_bytes=256 * 1024)
    log = play_game(3, 5)
    big = b"\0" * (200 * 1024)
    fat = pb.Event()
    fat.use_card.seat = 0
    fat.use_card.targets.extend([1] * 100_000)
    md = (("authorization", f"Bearer {tokens['acme']}"),)
    try:
        with grpc.insecure_channel(server.address, options=[("grpc.max_send_message_length", 1 << 30)]) as channel:
            stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
            calls = [lambda: stub.VerifyLog(spb.VerifyLogRequest(encoded_log=big), metadata=md, timeout=30),
                     lambda: stub.UploadLog(iter([spb.UploadLogRequest(header=log.header),
                                                  spb.UploadLogRequest(events=[fat])]), metadata=md, timeout=30),
                     lambda: list(stub.VerifyLive(iter([spb.VerifyLiveRequest(header=log.header),
                                                        spb.VerifyLiveRequest(events=[fat])]), metadata=md,
                                                  timeout=30))]
            for call in calls:
                with pytest.raises(grpc.RpcError) as raised:
                    call()  # type: ignore[no-untyped-call]
                assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, raised.value.details()
                assert "larger than max" in (raised.value.details() or "")
            # Messages each under the limit, but more together than the server holds at once: the stream takes the
            # budget's turn and is read to its end (bound by the game's own limits), not refused (issue 27, item 11).
            small = pb.Event()
            small.use_card.seat = 0
            small.use_card.targets.extend([1] * 20_000)  # ~20 KB
            many = [spb.UploadLogRequest(header=log.header)] + [spb.UploadLogRequest(events=[small])] * 20
            answer = stub.UploadLog(iter(many), metadata=md, timeout=30)
            assert answer.info.event_count == 20
        with VerifierClient(server.address, token=tokens["acme"], timeout=30) as acme:
            assert acme.verify(log).created  # and the budget is all back
            assert server.server.guard is not None and server.server.guard.budget.used == 0
    finally:
        server.stop()


def _peak_rss_mib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"VmHWM:\s+(\d+) kB", status)
    assert found is not None
    return int(found.group(1)) // 1024


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to read the server's peak memory")
def test_concurrent_large_uploads_are_held_to_the_byte_budget(tmp_path: Path) -> None:
    """8 concurrent 15 MB requests against a server whose budget holds one at a time: every one is answered
    (the others waited, unread), and the server's peak memory grows by about one request's worth, not 8."""
    proc = subprocess.Popen([sys.executable, "-m", "clients.cli", "serve", "--address", "127.0.0.1:0",
                             "--data-dir", str(tmp_path), "--workers", "1", "--max-buffered-bytes", str(16 << 20)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        address = first.split("listening on ")[1].split()[0]
        with VerifierClient(address, timeout=60) as c:
            c.wait_ready()
            c.list_page()
        time.sleep(0.5)
        before = _peak_rss_mib(proc.pid)
        payload = os.urandom(15_000_000)
        answers: list[grpc.StatusCode] = []
        with grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 1 << 30)]) as channel:
            stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]

            def send() -> None:
                try:
                    stub.VerifyLog(spb.VerifyLogRequest(encoded_log=payload), timeout=120)
                    answers.append(grpc.StatusCode.OK)
                except grpc.RpcError as err:
                    answers.append(err.code())

            threads = [threading.Thread(target=send) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        grown = _peak_rss_mib(proc.pid) - before
        assert answers == [grpc.StatusCode.INVALID_ARGUMENT] * 8  # each read and answered, none lost to the budget
        assert grown < 200, f"the server grew by {grown} MiB for 8 x 15 MB requests held one at a time"
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_streamed_games_events_are_bound_like_a_whole_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upload or a live game may carry as many bytes of events as the largest log the server takes, counted as
    the log will hold them (GameLog.events): exactly that many is taken, one byte more ends the call
    RESOURCE_EXHAUSTED, on both streams."""
    from service import servicer

    server, tokens = limited(tmp_path)
    log = play_game(4, 5)
    events_bytes = len(pb.GameLog(events=log.events).SerializeToString(deterministic=True))
    try:
        with VerifierClient(server.address, token=tokens["acme"], timeout=30) as acme:
            monkeypatch.setattr(servicer, "MAX_LOG_BYTES", events_bytes - 1)
            over = f"the game's events are over {events_bytes - 1} bytes together"
            with pytest.raises(LimitExceeded, match=over):
                acme.upload(log, batch_size=50)
            with pytest.raises(LimitExceeded, match=over):
                list(acme.live(log.header, log.events, batch_size=50, discard=True))
            monkeypatch.setattr(servicer, "MAX_LOG_BYTES", events_bytes)
            assert acme.upload(log, batch_size=50).created
            last = list(acme.live(log.header, log.events, batch_size=50, discard=True))[-1]
            assert last.finished is not None and last.events_received == len(log.events)
    finally:
        server.stop()
