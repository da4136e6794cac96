"""The viewer's HTTP server: uvicorn serving the Starlette app on the running event loop, the one
grpc.aio uses, so one process serves both (service/server.py starts and stops it with gRPC).

The socket is bound here (port 0 picks a free one), and uvicorn's own signal handling is off: the
service's ``serve`` handles SIGTERM and SIGINT and stops both servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Generator
from typing import Any

import uvicorn
from starlette.applications import Starlette

from service.config import split_address


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield  # the service's own handlers stop this server


class HttpFrontend:
    def __init__(self, app: Starlette, address: str, grace_seconds: float,
                 tls: dict[str, Any] | None = None) -> None:
        """``tls``: uvicorn's ssl_* settings (service/tls.py); the viewer is then served over HTTPS."""
        self.app = app
        self.tls = tls or {}
        self.address = address
        self.grace_seconds = grace_seconds
        self.port = 0
        self.host = ""
        self._server: _Uvicorn | None = None
        self._task: asyncio.Task[None] | None = None
        self._socket: socket.socket | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}/"

    async def start(self) -> int:
        """Bind and serve; OSError when the address cannot be listened on."""
        host, port = split_address(self.address, "the viewer's address (--http)")
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host, port), family=family)
        sock.setblocking(False)
        self._socket = sock
        self.host, self.port = host, sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off",
                                timeout_graceful_shutdown=max(1, int(self.grace_seconds)), server_header=False,
                                **self.tls)
        server = _Uvicorn(config)
        self._server = server
        self._task = asyncio.create_task(server.serve(sockets=[sock]), name="sgs-verify-http")
        while not server.started:
            if self._task.done():
                self._task.result()  # raises what stopped it
                raise OSError(f"the viewer's HTTP server on {self.address} stopped at start")
            await asyncio.sleep(0.01)
        return self.port

    async def stop(self, grace: float | None = None) -> None:
        """Stop accepting, let open requests finish (up to ``grace`` seconds, default the configured), close."""
        if self._server is not None and self._task is not None:
            if grace is not None:
                self._server.config.timeout_graceful_shutdown = max(1, int(grace))
            self._server.should_exit = True
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._server = None
        self._task = None
        if self._socket is not None:
            self._socket.close()
            self._socket = None
