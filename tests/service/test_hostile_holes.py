"""The gRPC holes of the hostile-client audit (issue 27: items 1, 4, 5, 8, 9, 10, 11, 12, 13), each tried as the
audit tried it, at a small scale: silent calls holding the byte budget, events that cost the parser ~20x their
bytes, open mode as admin, Health/Watch, a stream outliving its token's revocation, unlimited reflection
streams, concurrent large uploads starving each other, an expired certificate, a world-readable database."""

from __future__ import annotations

import datetime
import os
import queue
import re
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2 as rpb

from clients.cli import main
from clients.client import ListFilter, NotFound, PermissionDenied, Unauthenticated, VerifierClient
from clients.selfplay import play_game
from service import checked, guard
from service.config import Limits, ServiceConfig
from service.server import BackgroundServer, ServerStartError, describe_start
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb
from sgsverify.v1 import service_pb2_grpc as spb_grpc
from tests.service.conftest import fresh_database, make_token, server_config

ROOT = Path(__file__).resolve().parents[2]
SERVICE = "/sgsverify.v1.VerifierService"


def limited(tmp_path: Path, **limits: object) -> tuple[BackgroundServer, dict[str, str], str]:
    url, _ = fresh_database("sqlite", tmp_path)
    tokens = {tenant: make_token(url, tenant, "submit,read") for tenant in ("acme", "bravo")}
    server = BackgroundServer(server_config(url, tmp_path, limits=replace(Limits(), **limits))).start()  # type: ignore[arg-type]
    return server, tokens, url


def md(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


class Silent:
    """A call that never sends its request message (a unary method called as a client stream, or a stream) until
    released."""

    def __init__(self, channel: grpc.Channel, method: str, token: str) -> None:
        self.release = threading.Event()

        def nothing() -> Iterator[bytes]:
            self.release.wait(60)
            return
            yield b""  # (a generator)

        call = channel.stream_unary(f"{SERVICE}/{method}", request_serializer=lambda b: b,
                                    response_deserializer=lambda b: b)
        self.future = call.future(nothing(), metadata=md(token), timeout=60)

    def code(self) -> grpc.StatusCode:
        try:
            self.future.result(timeout=60)
        except grpc.RpcError as err:
            return err.code()
        return grpc.StatusCode.OK


# ---------------------------------------------------------------------------------------- item 1

def test_silent_calls_of_one_tenant_do_not_shut_out_another(tmp_path: Path) -> None:
    """Six silent calls of acme (4 unary, 2 client streams): bravo's calls still go, at once; the silent calls end
    DEADLINE_EXCEEDED after --first-message-timeout, and the budget is all back."""
    server, tokens, _ = limited(tmp_path, max_message_bytes=64 * 1024, max_buffered_bytes=256 * 1024,
                                first_message_seconds=3.0)
    try:
        with grpc.insecure_channel(server.address) as channel:
            silent = [Silent(channel, "GetReplay", tokens["acme"]) for _ in range(4)]
            silent += [Silent(channel, "UploadLog", tokens["acme"]) for _ in range(2)]
            time.sleep(0.5)  # (they are admitted, or waiting for room)
            guard_ = server.server.guard
            assert guard_ is not None
            assert guard_.budget.by_tenant["acme"] <= guard_.budget.tenant_share
            with VerifierClient(server.address, token=tokens["bravo"], timeout=2.5) as bravo:
                for _ in range(3):
                    bravo.list_page()  # before the fix: waited 10 s for room, then RESOURCE_EXHAUSTED
                assert bravo.verify(play_game(11, 5)).created
            codes = [s.code() for s in silent]
            for s in silent:
                s.release.set()
            assert set(codes) <= {grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED}, codes
            assert grpc.StatusCode.DEADLINE_EXCEEDED in codes
        deadline = time.monotonic() + 10
        while guard_.budget.used and time.monotonic() < deadline:
            time.sleep(0.05)
        assert guard_.budget.used == 0 and not guard_.budget.by_tenant
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------- item 4

def _peak_rss_mib(pid: int) -> int:
    found = re.search(r"VmHWM:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    assert found is not None
    return int(found.group(1)) // 1024


def _empty_events_log(count: int) -> bytes:
    """A VerifyLogRequest whose log (field 1) is a header and ``count`` empty events (GameLog field 2)."""
    header = pb.GameLog(header=play_game(12, 5).header).SerializeToString()
    body = header + b"\x12\x00" * count
    return b"\x0a" + _varint(len(body)) + body


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc to read the server's peak memory")
def test_a_message_of_many_empty_events_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """15 MB of empty events — 7.5 M of them — in a VerifyLog, an UploadLog batch and a VerifyLive batch: each is
    refused RESOURCE_EXHAUSTED for the event limit, and the server's peak memory grows by far less than the
    ~20x the parser costs (before the fix: about 300 MiB for the first alone)."""
    proc = subprocess.Popen([sys.executable, "-m", "clients.cli", "serve", "--address", "127.0.0.1:0",
                             "--data-dir", str(tmp_path), "--workers", "1"], stdout=subprocess.PIPE, text=True,
                            cwd=ROOT)
    try:
        assert proc.stdout is not None
        address = proc.stdout.readline().split("listening on ")[1].split()[0]
        with VerifierClient(address, timeout=60) as c:
            c.wait_ready()
            c.list_page()
        time.sleep(0.5)
        before = _peak_rss_mib(proc.pid)
        count = 7_500_000
        whole = _empty_events_log(count)
        batch = b"\x1a\x00" * count  # UploadLogRequest / VerifyLiveRequest.events (field 3), empty
        header = spb.UploadLogRequest(header=play_game(12, 5).header).SerializeToString()
        live_header = spb.VerifyLiveRequest(header=play_game(12, 5).header).SerializeToString()
        answers: list[tuple[grpc.StatusCode, str]] = []
        with grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 1 << 30)]) as channel:
            raw = {"unary": channel.unary_unary(f"{SERVICE}/VerifyLog", request_serializer=lambda b: b,
                                                response_deserializer=lambda b: b),
                   "upload": channel.stream_unary(f"{SERVICE}/UploadLog", request_serializer=lambda b: b,
                                                  response_deserializer=lambda b: b),
                   "live": channel.stream_stream(f"{SERVICE}/VerifyLive", request_serializer=lambda b: b,
                                                 response_deserializer=lambda b: b)}
            calls = [lambda: raw["unary"](whole, timeout=60),
                     lambda: raw["upload"](iter([header, batch]), timeout=60),
                     lambda: list(raw["live"](iter([live_header, batch]), timeout=60))]
            for call in calls:
                try:
                    call()  # type: ignore[no-untyped-call]
                    answers.append((grpc.StatusCode.OK, ""))
                except grpc.RpcError as err:
                    answers.append((err.code(), err.details() or ""))
        grown = _peak_rss_mib(proc.pid) - before
        assert grown < 100, f"the server grew by {grown} MiB for 15 MB of empty events"
        for code, details in answers:
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "more than 100000 events" in details, answers
    finally:
        proc.terminate()
        proc.wait(30)


# ---------------------------------------------------------------------------------------- item 5

def test_open_mode_is_the_default_tenant_only_and_says_so(tmp_path: Path) -> None:
    """A store used with tokens, all revoked, served on loopback: the server runs open, warns loudly at start, and
    an anonymous caller sees and reaches the default tenant's replays only (before: every tenant's, as admin)."""
    url, _ = fresh_database("sqlite", tmp_path)
    token = make_token(url, "bravo", "submit,read")
    with BackgroundServer(server_config(url, tmp_path)) as server, \
            VerifierClient(server.address, token=token, timeout=30) as bravo:
        theirs = bravo.verify(play_game(13, 5))
    assert main(["token", "revoke", token.split("_")[1], "--db", url]) == 0
    with BackgroundServer(server_config(url, tmp_path, http_address="127.0.0.1:0")) as server:
        # (the open-mode warnings are logged at start, once: the start lines do not repeat them)
        said = describe_start(server.server) + "\n".join(server.server.logged_warnings)
        # The viewer's API goes through the same guard: the default tenant's replays only.
        import httpx

        listed = httpx.get(f"{server.http_url}api/replays", timeout=30).json()["replays"]
        assert theirs.id not in {r["id"] for r in listed} and {r["tenant"] for r in listed} <= {"default"}
        assert httpx.get(f"{server.http_url}api/replays/{theirs.id}", timeout=30).status_code == 404
        assert "authentication: OFF" in said
        assert "holds replays of other tenants (bravo)" in said and "1 token(s), none active" in said
        with VerifierClient(server.address, token="", timeout=30) as anyone:
            mine = anyone.verify(play_game(14, 5))
            assert {i.tenant for i in anyone.list()} == {"default"} and mine.id in {i.id for i in anyone.list()}
            with pytest.raises(NotFound):
                anyone.get(theirs.id)
            with pytest.raises(NotFound):
                anyone.delete(theirs.id)
            with pytest.raises(PermissionDenied, match="admin"):
                anyone.list_page(ListFilter(tenant="bravo"))


# ---------------------------------------------------------------------------------------- item 8

def test_health_watch_sees_serving(tmp_path: Path) -> None:
    server, _, _ = limited(tmp_path)
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            watch = stub.Watch(health_pb2.HealthCheckRequest(service=""), timeout=30)
            first = next(watch)
            assert first.status == health_pb2.HealthCheckResponse.SERVING
            watch.cancel()
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------- item 9

def test_a_stream_is_cut_once_its_token_is_revoked_and_stores_nothing(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard, "TOKEN_CACHE_SECONDS", 0.3)
    server, tokens, url = limited(tmp_path)
    log = play_game(15, 5)
    try:
        with VerifierClient(server.address, token=tokens["acme"], timeout=30) as acme:
            outbox: queue.Queue[list[pb.Event] | None] = queue.Queue()

            def batches() -> Iterator[list[pb.Event]]:
                while (batch := outbox.get()) is not None:
                    yield batch

            updates = acme.live(log.header, batches())  # stored at its end (not discard)
            outbox.put(list(log.events[:10]))
            next(updates)
            assert main(["token", "revoke", tokens["acme"].split("_")[1], "--db", url]) == 0
            time.sleep(1.5)  # several checks' worth
            outbox.put(list(log.events[10:]))
            outbox.put(None)
            with pytest.raises(Unauthenticated, match="revoked while the call ran"):
                list(updates)
        with VerifierClient(server.address, token=make_token(url, "acme", "read"), timeout=30) as reader:
            assert reader.list_page().total_count == 0  # nothing stored for it
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------- item 10

def test_reflection_streams_are_limited_and_idle_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checked, "OPEN_STREAMS_PER_PEER", 3)
    monkeypatch.setattr(checked, "OPEN_STREAM_IDLE_SECONDS", 0.5)
    server, _, _ = limited(tmp_path)
    try:
        with grpc.insecure_channel(server.address) as channel:
            info = channel.stream_stream("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                         request_serializer=rpb.ServerReflectionRequest.SerializeToString,
                                         response_deserializer=rpb.ServerReflectionResponse.FromString)
            held = [threading.Event() for _ in range(4)]

            def asks(release: threading.Event) -> Iterator[rpb.ServerReflectionRequest]:
                yield rpb.ServerReflectionRequest(list_services="")
                release.wait(30)

            streams = [info(asks(h), timeout=30) for h in held[:3]]
            for s in streams:
                assert next(s).list_services_response.service  # each answered
            fourth = info(asks(held[3]), timeout=30)
            with pytest.raises(grpc.RpcError) as raised:
                next(fourth)
            assert raised.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            for s in streams:  # each idles out (they ask nothing more)
                with pytest.raises(grpc.RpcError) as raised:
                    next(s)
                assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            for h in held:
                h.set()
            again = info(iter([rpb.ServerReflectionRequest(list_services="")]), timeout=30)
            assert next(again).list_services_response.service  # room again
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------- item 11

def test_concurrent_large_uploads_are_admitted_in_turn(tmp_path: Path) -> None:
    """8 concurrent uploads, each 3x the budget in 8 messages: all stored (before: all refused, each holding part
    of the budget and needing more), and the budget is all back."""
    server, tokens, _ = limited(tmp_path, max_message_bytes=64 * 1024, max_buffered_bytes=128 * 1024)
    logs = [play_game(20 + i, 5) for i in range(8)]
    filler = pb.Event()
    filler.use_card.seat = 0
    filler.use_card.targets.extend([1] * 45_000)  # ~45 KB: 8 of them are about 3x the budget
    answers: list[Any] = []

    def upload(i: int) -> None:
        token = tokens["acme" if i % 2 else "bravo"]
        messages = [spb.UploadLogRequest(header=logs[i].header)] + [spb.UploadLogRequest(events=[filler])] * 8
        with grpc.insecure_channel(server.address) as channel:
            stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
            try:
                answers.append(stub.UploadLog(iter(messages), metadata=md(token), timeout=120).info.event_count)
            except grpc.RpcError as err:
                answers.append(f"{err.code().name}: {err.details()}")

    try:
        threads = [threading.Thread(target=upload, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [8] * 8
        assert server.server.guard is not None and server.server.guard.budget.used == 0
    finally:
        server.stop()


def test_uploads_queued_behind_their_tenants_shares_are_finished_in_turn(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 43, N7: 8 concurrent uploads of two tenants, each taking longer to send than a request may wait for
    room with the budget standing still (here 2 s): the 2 of each tenant admitted are read while the others wait,
    and the others are admitted as they finish, all answered (before: the 4 queued were RESOURCE_EXHAUSTED after
    the wait, with the budget still moving); the budget is all back."""
    monkeypatch.setattr(guard, "BUDGET_WAIT_SECONDS", 2.0)
    server, tokens, _ = limited(tmp_path, max_message_bytes=64 * 1024, max_buffered_bytes=256 * 1024)
    logs = [play_game(40 + i, 5) for i in range(8)]
    filler = pb.Event()
    filler.use_card.seat = 0
    filler.use_card.targets.extend([1] * 20_000)  # ~20 KB
    answers: list[Any] = []

    def messages(i: int) -> Iterator[spb.UploadLogRequest]:
        yield spb.UploadLogRequest(header=logs[i].header)
        for _ in range(8):
            time.sleep(0.5)  # (a slow client: 4 s an upload, the budget moving all along)
            yield spb.UploadLogRequest(events=[filler])

    def upload(i: int) -> None:
        token = tokens["acme" if i % 2 else "bravo"]
        with grpc.insecure_channel(server.address) as channel:
            stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
            try:
                answers.append(stub.UploadLog(messages(i), metadata=md(token), timeout=120).info.event_count)
            except grpc.RpcError as err:
                answers.append(f"{err.code().name}: {err.details()}")

    try:
        threads = [threading.Thread(target=upload, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert answers == [8] * 8
        budget = server.server.guard.budget if server.server.guard is not None else None
        assert budget is not None and budget.used == budget.past == 0
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------- issue 43, N1

MIB = 1 << 20
N1_LIMITS: dict[str, Any] = {"max_message_bytes": MIB, "max_buffered_bytes": 4 * MIB, "max_record_bytes": 4 * MIB}


def _waited_for(check: Any, seconds: float = 30.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.02)
    return bool(check())


def _bravo_is_served(server: BackgroundServer, token: str, seed: int) -> None:
    """The other tenant's calls go (before the fix: each waited 30 s for room and was RESOURCE_EXHAUSTED)."""
    with VerifierClient(server.address, token=token, timeout=60) as bravo:
        bravo.list_page()
        assert bravo.verify(play_game(seed, 5)).created


def test_one_tenants_dribbled_upload_does_not_hold_the_whole_budget(tmp_path: Path) -> None:
    """N1 over HTTP: an upload declaring the largest record (the whole budget here), sending a little of it and
    then nothing (or a byte now and then): its tenant holds its share of the budget, the rest is read past the
    budget with the turn, and another tenant's calls and uploads are served meanwhile."""
    import httpx

    url, _ = fresh_database("sqlite", tmp_path)
    tokens = {tenant: make_token(url, tenant, "submit,read") for tenant in ("acme", "bravo")}
    config = server_config(url, tmp_path, http_address="127.0.0.1:0", limits=replace(Limits(), **N1_LIMITS))
    with BackgroundServer(config) as server:
        budget = server.server.guard.budget if server.server.guard is not None else None
        assert budget is not None
        port = int(server.http_url.rstrip("/").rsplit(":", 1)[1])
        import socket

        held = socket.create_connection(("127.0.0.1", port), timeout=30)
        try:
            held.sendall(f"POST /api/replays?engine=freekill HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                         f"{tokens['acme']}\r\nContent-Type: application/octet-stream\r\nContent-Length: {4 * MIB}"
                         "\r\n\r\n".encode() + b"\0" * 1000)
            assert _waited_for(lambda: budget.used + budget.past == 4 * MIB)
            assert budget.by_tenant["acme"] == 2 * MIB == budget.tenant_share and budget.past == 2 * MIB
            _bravo_is_served(server, tokens["bravo"], 31)
            answer = httpx.post(f"{server.http_url}api/replays", params={"engine": "freekill"}, content=b"\0" * 100,
                                headers={"Content-Type": "application/octet-stream",
                                         "Authorization": f"Bearer {tokens['bravo']}"}, timeout=60)
            assert answer.status_code == 400, answer.text  # read and judged (not a record), not 429
            held.sendall(b"\0")  # (a byte now and then: it goes on holding, and the others on being served)
            _bravo_is_served(server, tokens["bravo"], 32)
        finally:
            held.close()
        assert _waited_for(lambda: budget.used == budget.past == 0 and budget.turn is None)


def test_one_tenants_stream_gone_quiet_does_not_hold_the_whole_budget(tmp_path: Path) -> None:
    """N1 over gRPC: an upload that sends most of the largest record and goes quiet (up to --stream-idle-timeout):
    its tenant holds at most its share of the budget, and another tenant's calls are served meanwhile."""
    server, tokens, _ = limited(tmp_path, stream_idle_seconds=120.0, **N1_LIMITS)
    budget = server.server.guard.budget if server.server.guard is not None else None
    assert budget is not None
    quiet, answers = threading.Event(), queue.Queue[str]()
    chunk = b"\0" * (1000 * 1024)

    def messages() -> Iterator[spb.UploadLogRequest]:
        yield spb.UploadLogRequest(foreign=spb.ForeignLog(engine="freekill", name="big.fk.rep", data=chunk))
        for _ in range(3):
            yield spb.UploadLogRequest(foreign=spb.ForeignLog(data=chunk))
        quiet.wait(120)  # (3.9 MiB sent: then nothing)

    def upload() -> None:
        with grpc.insecure_channel(server.address) as channel:
            stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
            try:
                stub.UploadLog(messages(), metadata=md(tokens["acme"]), timeout=120)
                answers.put("OK")
            except grpc.RpcError as err:
                answers.put(err.code().name)

    thread = threading.Thread(target=upload)
    try:
        thread.start()
        assert _waited_for(lambda: budget.used + budget.past >= 4000 * 1024)
        assert budget.by_tenant["acme"] <= budget.tenant_share and budget.past > 0
        _bravo_is_served(server, tokens["bravo"], 33)
    finally:
        quiet.set()
        thread.join(120)
        server.stop()
    assert answers.get_nowait() == "INVALID_ARGUMENT"  # (zeros: read whole, and not a record)
    assert budget.used == budget.past == 0


# ---------------------------------------------------------------------------------------- item 12

def _cert(folder: Path, days: float, starts: float = -400) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now + datetime.timedelta(days=starts))
            .not_valid_after(now + datetime.timedelta(days=days)).sign(key, hashes.SHA256()))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    return folder / "cert.pem", folder / "key.pem"


def test_an_expired_certificate_is_refused_and_one_expiring_soon_warned_of(tmp_path: Path) -> None:
    url, _ = fresh_database("sqlite", tmp_path)
    cert, key = _cert(tmp_path / "expired", -1)
    with pytest.raises(ServerStartError, match="has expired"):
        BackgroundServer(server_config(url, tmp_path, tls_cert=cert, tls_key=key)).start()
    cert, key = _cert(tmp_path / "soon", 5)
    with BackgroundServer(server_config(url, tmp_path, tls_cert=cert, tls_key=key)) as server:
        # (the open-mode warnings are logged at start, once: the start lines do not repeat them)
        said = describe_start(server.server) + "\n".join(server.server.logged_warnings)
        assert re.search(r"WARNING: the TLS certificate \S+ expires in 4\.9|5\.0 days", said), said
        days = server.server.metrics.registry.get_sample_value("sgs_verify_tls_certificate_days_left")
        assert days is not None and 4.9 < days <= 5.0
    cert, key = _cert(tmp_path / "fine", 90)
    with BackgroundServer(server_config(url, tmp_path, tls_cert=cert, tls_key=key)) as server:
        assert "TLS certificate" not in describe_start(server.server)


def test_a_certificate_not_yet_valid_is_refused(tmp_path: Path) -> None:
    """Issue 43, N9: it started silently, and every client failed its handshake until the date came."""
    url, _ = fresh_database("sqlite", tmp_path)
    cert, key = _cert(tmp_path / "early", 90, starts=3)
    with pytest.raises(ServerStartError, match=r"the TLS certificate --tls-cert \S+ is not valid yet: from "
                       r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, in 3\.0 days; every client would refuse it until then"):
        BackgroundServer(server_config(url, tmp_path, tls_cert=cert, tls_key=key)).start()
    cert, key = _cert(tmp_path / "begun", 90, starts=-0.01)  # valid since a quarter of an hour: it starts
    with BackgroundServer(server_config(url, tmp_path, tls_cert=cert, tls_key=key)) as server:
        assert "TLS certificate" not in describe_start(server.server)


# ---------------------------------------------------------------------------------------- item 13

def test_the_sqlite_data_is_this_users_only_whatever_the_umask(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = os.umask(0)
    try:
        config = ServiceConfig(address="127.0.0.1:0", data_dir=data, workers=1)
        with BackgroundServer(config) as server, VerifierClient(server.address, timeout=30) as c:
            c.verify(play_game(16, 5))  # (the WAL and its index exist now)
            files = [p for p in data.iterdir()]
            modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in files}
    finally:
        os.umask(old)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert {"replays.sqlite3", "replays.sqlite3-wal", "replays.sqlite3-shm"} <= set(modes), modes
    assert all(mode == 0o600 for mode in modes.values()), modes


# ---------------------------------------------------------------------------------------- streams opened at once

def test_streams_opened_at_once_are_held_to_the_tenants_cap(tmp_path: Path) -> None:
    """12 live streams of one tenant opened together against a cap of 4: 8 refused (the harness's stream-cap
    attack on PostgreSQL had all 40 of 40 taken over a cap of 32: each was checked against the cap, then waited
    for room in the byte budget, and was counted only once its handler ran). The budget here holds one
    reservation of the tenant's at a time, so that the others wait."""
    server, tokens, _ = limited(tmp_path, max_streams_per_tenant=4, max_message_bytes=64 * 1024,
                                max_buffered_bytes=128 * 1024)
    release = threading.Event()
    first = spb.VerifyLiveRequest(header=play_game(17, 5).header, discard=True).SerializeToString()

    def held_open() -> Iterator[bytes]:
        yield first
        release.wait(60)

    try:
        with grpc.insecure_channel(server.address) as channel:
            live = channel.stream_stream(f"{SERVICE}/VerifyLive", request_serializer=lambda b: b,
                                         response_deserializer=lambda b: b)
            calls = [live(held_open(), metadata=md(tokens["acme"]), timeout=60) for _ in range(12)]
            time.sleep(1.0)
            release.set()
            codes = []
            for call in calls:
                try:
                    list(call)
                    codes.append(grpc.StatusCode.OK)
                except grpc.RpcError as err:
                    codes.append(err.code())
        assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 8 and codes.count(grpc.StatusCode.OK) == 4, codes
        assert server.server.guard is not None and not server.server.guard.streams
        assert server.server.guard.in_flight == 0
    finally:
        server.stop()
