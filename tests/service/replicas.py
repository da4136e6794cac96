"""A deployment for tests (issue 30): N `sgs-verify serve` processes on loopback ports over one PostgreSQL
database, as replicas behind a load balancer; a client target spreading calls over them (gRPC's
round_robin). A replica can be killed with -9 and started again on its port."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from clients.client import ServiceError, VerifierClient

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Replica:
    """One `sgs-verify serve` process on a fixed loopback port (so that it comes back on the same address)."""

    def __init__(self, url: str, folder: Path, port: int, *args: str) -> None:
        self.url = url
        self.folder = folder
        self.port = port
        self.args = args
        self.proc: subprocess.Popen[str] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> Replica:
        self.folder.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        # stdout is read for the "listening on" line only; the rest goes to a file (a full pipe would block it).
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "clients.cli", "serve", "--address", self.address, "--db", self.url,
             "--data-dir", str(self.folder), "--workers", "1", "--no-migrate", *self.args],
            stdout=subprocess.PIPE, stderr=(self.folder / "stderr.log").open("a"), text=True, cwd=ROOT, env=env)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert "listening on" in line, f"the replica did not start: {line!r} (see {self.folder}/stderr.log)"
        return self

    def kill(self) -> None:
        """kill -9: no graceful stop, no lease released, no transaction finished."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(30)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)
            self.proc = None

    def health(self) -> int:
        """The replica's overall health status (health_pb2.HealthCheckResponse.SERVING, NOT_SERVING, ...)."""
        with grpc.insecure_channel(self.address) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            status: int = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status
            return status

    def wait_health(self, status: int, timeout: float = 30.0) -> float:
        """Seconds until the replica's health is ``status`` (AssertionError after ``timeout``)."""
        started = time.monotonic()
        while True:
            with contextlib.suppress(grpc.RpcError):
                if self.health() == status:
                    return time.monotonic() - started
            assert time.monotonic() - started < timeout, f"{self.address} not {status} after {timeout} s"
            time.sleep(0.1)


class Deployment:
    def __init__(self, url: str, folder: Path, n: int, *args: str) -> None:
        self.replicas = [Replica(url, folder / f"replica-{i}", free_port(), *args) for i in range(n)]

    def start(self) -> Deployment:
        for replica in self.replicas:
            replica.start()
        for replica in self.replicas:
            replica.wait_health(health_pb2.HealthCheckResponse.SERVING)
        return self

    def stop(self) -> None:
        for replica in self.replicas:
            replica.stop()

    @property
    def target(self) -> str:
        """The load balancer: every replica's address, one target."""
        return "ipv4:" + ",".join(r.address for r in self.replicas)

    def client(self, token: str) -> VerifierClient:
        return VerifierClient(self.target, token=token, timeout=60, lb_policy="round_robin")


RETRIED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)


def until_done(call: Callable[[], T], attempts: int = 60, on_retry: Callable[[ServiceError], None] | None = None
               ) -> T:
    """``call()`` again while it fails with a status a client retries (a replica gone, a store down, a limit):
    as a client in front of N replicas does. Any other error is raised."""
    for attempt in range(attempts):
        try:
            return call()
        except ServiceError as err:
            if err.code not in RETRIED or attempt == attempts - 1:
                raise
            if on_retry is not None:
                on_retry(err)
            time.sleep(min(err.retry_after or 0.2, 1.0))
    raise AssertionError("unreachable")
