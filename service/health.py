"""Health follows the store: a task on the event loop checks the database every ``interval`` seconds (and at
once when an RPC found it unavailable) and sets the health service to NOT_SERVING while it cannot be
reached, SERVING again when it can.

The check is a real round trip: on PostgreSQL a query over a (pre-pinged) pooled connection, on SQLite a
new connection to the file (a pooled one would keep a moved or deleted file open). When the check fails
the connection pool is emptied, so that no request goes on using a connection to a database that is gone.
While the server runs open (no tokens), each check also looks whether a token has been created since, and
then turns authentication on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from grpc_health.v1 import health, health_pb2

from service.metrics import Metrics
from storage.access import any_active_token
from storage.store import StorageError, Store

log = logging.getLogger("sgs-verify.service")
CHECK_TIMEOUT_SECONDS = 10.0


class StoreHealth:
    def __init__(self, store: Store, servicer: health.aio.HealthServicer, services: tuple[str, ...],
                 interval: float, metrics: Metrics, on_token: Callable[[], None] | None = None) -> None:
        self.store = store
        self.servicer = servicer
        self.services = services
        self.interval = interval
        self.metrics = metrics
        self.on_token = on_token  # called once a token exists (the server runs open until then)
        self.serving: bool | None = None
        self._poke = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="sgs-verify-store-health")

    async def stop(self) -> None:
        if self._task is not None:
            # The flag as well as the cancel: Python 3.11's asyncio.wait_for swallows a cancel that comes as the
            # awaited wait ends (it returns the result instead), and the loop then ran on — a stop hung for ever,
            # about one start-stop in six in a test.
            self._stopping = True
            self._poke.set()
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def poke(self) -> None:
        """Check now (an RPC found the store unavailable)."""
        self._poke.set()

    async def _run(self) -> None:
        while not self._stopping:
            await self.check()
            self._poke.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poke.wait(), self.interval)

    async def check(self) -> bool:
        try:
            await asyncio.wait_for(asyncio.to_thread(self.store.ping, True), CHECK_TIMEOUT_SECONDS)
            ok, reason = True, ""
        except (StorageError, TimeoutError) as err:
            ok, reason = False, str(err) or type(err).__name__
        if not ok:
            await asyncio.to_thread(self.store.engine.dispose)
        await self._set(ok, reason)
        if ok and self.on_token is not None:
            try:
                if await asyncio.to_thread(any_active_token, self.store):
                    self.on_token()
                    self.on_token = None
            except StorageError:
                pass
        return ok

    async def _set(self, ok: bool, reason: str) -> None:
        self.metrics.store_up.set(1 if ok else 0)
        if ok == self.serving:
            return
        if self.serving is not None:
            if ok:
                log.warning("the replay store answers again: health is SERVING")
            else:
                log.error("the replay store is unavailable (%s): health is NOT_SERVING", reason)
        self.serving = ok
        status = health_pb2.HealthCheckResponse.SERVING if ok else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in self.services:
            await self.servicer.set(name, status)
