"""The transport's floor: the service's three paths against a server that does nothing but answer.

A stub gRPC server (grpc.aio, as `sgs-verify serve`; a process of its own) answers VerifyLog, UploadLog and
VerifyLive with responses recorded from the real server for the same games — the same messages, the same sizes —
without parsing a request, verifying, storing or handing anything to a worker. The client is the same client
library making the same calls. What a phase costs against it is what gRPC and the client library cost on this
machine: no server, however fast its own part, can answer in less. bench/service_bench.py runs each phase against
both in the same rounds and prints the difference, the part of the service's time that is the server's own.

Answers are given in the order the games are sent (a counter per method), so with one client each game gets its
own recorded answers; with several, each gets some game's, of the same kind and size.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import multiprocessing
import multiprocessing.connection
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import grpc

from clients.client import Metadata, Submission, VerifierClient
from sgsverify.v1 import game_log_pb2 as pb
from sgsverify.v1 import service_pb2 as spb

SERVICE = "sgsverify.v1.VerifierService"


@dataclass(frozen=True)
class Answers:
    """The encoded responses the real server gave, per game: VerifyLog's, UploadLog's, and VerifyLive's (one per
    request message, the last one with `finished`)."""
    whole: tuple[bytes, ...]
    upload: tuple[bytes, ...]
    live: tuple[tuple[bytes, ...], ...]


def record_answers(client: VerifierClient, logs: Sequence[pb.GameLog], live_batch: int, upload_batch: int,
                   label: str = "floor") -> Answers:
    """Submit each game once on every path (as the bench's phases do: summary only) and keep the answers."""
    whole, upload, live = [], [], []
    for i, log in enumerate(logs):
        copy = pb.GameLog()
        copy.CopyFrom(log)
        copy.header.recorder = f"{label} {i}"
        meta = Metadata(tournament="bench")
        whole.append(_encoded(client.verify(copy.SerializeToString(), meta, summary_only=True)))
        copy.header.recorder = f"{label} upload {i}"
        upload.append(_encoded(client.upload(copy, meta, batch_size=upload_batch, summary_only=True)))
        copy.header.recorder = f"{label} live {i}"
        updates = []
        for update in client.live(copy.header, copy.events, meta, batch_size=live_batch):
            res = spb.VerifyLiveResponse(annotations=update.annotations, events_received=update.events_received,
                                         game_over=update.game_over)
            if update.finished is not None:
                res.finished.CopyFrom(update.finished)
            updates.append(res.SerializeToString())
        live.append(tuple(updates))
    return Answers(tuple(whole), tuple(upload), tuple(live))


def _encoded(got: Submission) -> bytes:
    """The VerifyLogResponse the server sent for this submission."""
    return spb.VerifyLogResponse(info=got.info, created=got.created, replay=got.replay).SerializeToString()


def _identity(data: bytes) -> bytes:
    return data


def _handlers(answers: Answers) -> grpc.GenericRpcHandler:
    whole, upload, live = itertools.cycle(answers.whole), itertools.cycle(answers.upload), itertools.cycle(answers.live)

    async def verify_log(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return next(whole)

    async def upload_log(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> bytes:
        async for _ in requests:
            pass
        return next(upload)

    async def verify_live(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        replies = next(live)
        last = len(replies) - 1
        count = 0
        async for _ in requests:
            yield replies[min(count, last - 1)]
            count += 1
        yield replies[last]

    return grpc.method_handlers_generic_handler(SERVICE, {
        "VerifyLog": grpc.unary_unary_rpc_method_handler(verify_log, _identity, _identity),
        "UploadLog": grpc.stream_unary_rpc_method_handler(upload_log, _identity, _identity),
        "VerifyLive": grpc.stream_stream_rpc_method_handler(verify_live, _identity, _identity)})


def _serve(answers: Answers, conn: multiprocessing.connection.Connection) -> None:
    async def main() -> None:
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((_handlers(answers),))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        conn.send(port)
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until told to stop (or EOF)
        await server.stop(None)

    with contextlib.suppress(EOFError):
        asyncio.run(main())


class FloorServer:
    """The stub server in a process of its own (as the real server is), on a free loopback port."""

    def __init__(self, answers: Answers) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(answers, child), name="sgs-verify-grpc-floor", daemon=True)
        self.process.start()
        child.close()
        self.address = f"127.0.0.1:{self._conn.recv()}"
        self.pid = self.process.pid

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self._conn.send(None)
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()

    def __enter__(self) -> FloorServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
