"""The bridge's live streams: every open room's VerifyLive call on one grpc.aio channel, run by one asyncio loop
in one thread (``LiveLoop``). A room costs a task and its call, not a thread: a thousand open rooms are a
thousand tasks on that loop, and stopping cancels them all at once (closing the channel cancels every call:
the service stores nothing of a cancelled stream).

The calls send and receive bytes: a batch of events is written as VerifyLiveRequest.events from each event's
own encoding (as VerifierClient does), and each answer is read as a VerifyLiveResponse: ``live_update`` its
annotations, ``stopped_of`` the service's word that the verifier stopped following the game (``stopped``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from clients.client import (
    ENV_CLIENT_CERT,
    ENV_CLIENT_KEY,
    ENV_TLS,
    ENV_TLS_CA,
    ENV_TOKEN,
    MAX_MESSAGE_BYTES,
    LiveUpdate,
    VerifierClient,
    default_server,
)
from sgsverify.internal import wire_views_pb2 as wv
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb

METHOD = "/sgsverify.v1.VerifierService/VerifyLive"
UPLOAD = "/sgsverify.v1.VerifierService/UploadLog"
# A record stored whole (a room this engine does not replay) goes up in chunks of this size.
CHUNK_BYTES = 1 << 20


@dataclass(frozen=True, slots=True)
class Connection:
    """Where the service is and how to reach it (VerifierClient's arguments, for a grpc.aio channel)."""

    address: str
    metadata: tuple[tuple[str, str], ...] = ()  # the bearer token, when there is one
    credentials: Any = None  # grpc.ChannelCredentials for TLS; None: plaintext

    @classmethod
    def make(cls, address: str | None = None, *, token: str | None = None, tls: bool | None = None,
             tls_ca: str | Path | None = None, client_cert: str | Path | None = None,
             client_key: str | Path | None = None) -> Connection:
        """As VerifierClient takes them, with the same defaults from the environment (ValueError for a
        certificate without its key; OSError for a file that cannot be read)."""
        token = os.environ.get(ENV_TOKEN, "") if token is None else token
        tls_ca = tls_ca or os.environ.get(ENV_TLS_CA) or None
        client_cert = client_cert or os.environ.get(ENV_CLIENT_CERT) or None
        client_key = client_key or os.environ.get(ENV_CLIENT_KEY) or None
        if tls is None:
            tls = os.environ.get(ENV_TLS, "").strip().lower() in ("1", "true", "yes", "on") \
                or bool(tls_ca or client_cert)
        if bool(client_cert) != bool(client_key):
            raise ValueError("a client certificate needs its key, and a key its certificate")
        credentials = None
        if tls:
            credentials = grpc.ssl_channel_credentials(root_certificates=_read(tls_ca), private_key=_read(client_key),
                                                       certificate_chain=_read(client_cert))
        metadata = (("authorization", f"Bearer {token.strip()}"),) if token.strip() else ()
        return cls(address or default_server(), metadata, credentials)

    @classmethod
    def of(cls, client: VerifierClient) -> Connection:
        """The connection a VerifierClient has: its address and token; with TLS, the files the environment names
        (a client made with other TLS files: make the Connection with them)."""
        if not client.tls:
            return cls(client.address, client.metadata)
        made = cls.make(client.address, token="", tls=True)
        return cls(client.address, client.metadata, made.credentials)


def _read(path: str | Path | None) -> bytes | None:
    return Path(path).read_bytes() if path else None


def header_request(header: pb.GameHeader, metadata: spb.SubmissionMetadata) -> bytes:
    first = spb.VerifyLiveRequest(header=header)
    first.metadata.CopyFrom(metadata)
    return first.SerializeToString()


def events_request(events: Sequence[pb.Event]) -> bytes:
    """VerifyLiveRequest(events=events), from each event's own encoding (no copy into a request message)."""
    return wv.Field3(items=[ev.SerializeToString() for ev in events]).SerializeToString()


@dataclass(frozen=True, slots=True)
class Stopped:
    """The verifier stopped following the game: from event ``at`` on nothing is checked, for ``reason``."""

    at: int
    reason: str


def stopped_of(raw: bytes) -> Stopped | None:
    """The service's word in a VerifyLiveResponse that the verifier stopped following the game (None: it did
    not say so in this answer, or is a service from before VerifyLiveResponse.stopped)."""
    res = spb.VerifyLiveResponse.FromString(raw)
    return Stopped(res.stopped.event, res.stopped.reason) if res.HasField("stopped") else None


def live_update(raw: bytes) -> LiveUpdate:
    res = spb.VerifyLiveResponse.FromString(raw)
    return LiveUpdate(list(res.annotations), res.events_received, res.game_over,
                      res.finished if res.HasField("finished") else None)


class LiveLoop:
    """One asyncio loop in a thread of its own, with the channel every room's call goes on."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="bridge-live", daemon=True)
        self.tasks: set[asyncio.Task[None]] = set()
        self.channel: Any = None
        self._ready = threading.Event()
        self._closed = False

    def start(self) -> None:
        self.thread.start()
        self._ready.wait()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._open())
            self._ready.set()
            self.loop.run_forever()
        finally:
            self._ready.set()
            # The loop is stopped, not closed: gRPC's poller is shared by every loop of the process (a server's, in
            # the tests) and may still hand this one the completions of the calls just cancelled; a closed loop
            # makes each of them an error on the other loop (450 of them after 300 rooms).

    async def _open(self) -> None:
        options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                   ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)]
        c = self.connection
        self.channel = grpc.aio.secure_channel(c.address, c.credentials, options=options) \
            if c.credentials is not None else grpc.aio.insecure_channel(c.address, options=options)

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run a coroutine on the loop (from any thread)."""
        self.loop.call_soon_threadsafe(self._spawn, coro)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        if self._closed:
            coro.close()
            return
        task = self.loop.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def call_soon(self, fn: Any, *args: Any) -> None:
        """Call ``fn(*args)`` on the loop (from any thread); nothing once the loop is closed."""
        with contextlib.suppress(RuntimeError):  # (closed)
            self.loop.call_soon_threadsafe(fn, *args)

    def open_call(self) -> Any:
        """A new VerifyLive call (on the loop): grpc.aio's StreamStreamCall, of bytes."""
        method = self.channel.stream_stream(METHOD, request_serializer=None, response_deserializer=None)
        return method(metadata=self.connection.metadata or None)

    async def upload_record(self, data: bytes, name: str, metadata: spb.SubmissionMetadata) -> spb.VerifyLogResponse:
        """Store a FreeKill record whole (UploadLog, its ForeignLog in chunks); the service's summary-only answer.
        grpc.aio's errors as they come (AioRpcError)."""
        method = self.channel.stream_unary(UPLOAD, request_serializer=None, response_deserializer=None)

        def chunks() -> list[bytes]:
            first = spb.UploadLogRequest(metadata=metadata, summary_only=True,
                                         foreign=spb.ForeignLog(engine="freekill", name=name, data=data[:CHUNK_BYTES]))
            rest = [spb.UploadLogRequest(foreign=spb.ForeignLog(data=data[at:at + CHUNK_BYTES])).SerializeToString()
                    for at in range(CHUNK_BYTES, len(data), CHUNK_BYTES)]
            return [first.SerializeToString(), *rest]

        raw = await method(iter(chunks()), metadata=self.connection.metadata or None)
        return spb.VerifyLogResponse.FromString(raw)

    def busy(self) -> int:
        """Tasks running (rooms being streamed)."""
        return len(self.tasks)

    def close(self, timeout: float = 10.0) -> bool:
        """Cancel every call and task, stop the loop and its thread; whether it all ended within ``timeout``."""
        if not self.thread.is_alive():
            return True
        future = asyncio.run_coroutine_threadsafe(self._close(timeout / 2), self.loop)
        with contextlib.suppress(Exception):
            future.result(timeout)
        self.call_soon(self.loop.stop)
        self.thread.join(timeout)
        return not self.thread.is_alive()

    async def _close(self, wait: float) -> None:
        self._closed = True
        if self.channel is not None:
            await self.channel.close(grace=None)  # every call cancelled: the service stores nothing of them
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=wait)


__all__ = ["Connection", "LiveLoop", "Stopped", "events_request", "header_request", "live_update", "stopped_of"]
