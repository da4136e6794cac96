"""A tenant's request rate and its streams at once, enforced over every replica through the store they share
(docs/security.md#replicas, issue 30). No new moving part: two small tables of the replay database.

- **Rate**: one token bucket row per tenant (``tenant_rates``), refilled and taken from by one UPSERT per
  request — ``rate`` per second, ``burst`` at once — on the database's clock, so replicas' clocks never
  disagree. Its RETURNING says whether the request got a token and, if not, how long until one.
- **Streams at once**: one lease row per open client stream (``stream_leases``), inserted only while the
  tenant has fewer than its limit of unexpired leases — in the same transaction as the rate UPSERT, whose row
  lock (PostgreSQL; SQLite's writes are serial anyway) makes the count and the insert one step per tenant, so
  streams opened together on several replicas cannot all pass. The replica renews its leases every
  ``ttl / 3`` s while they live and deletes each when its stream ends; a replica killed with -9 leaves leases
  that lapse ``ttl`` s later (LEASE_SECONDS).

If the store cannot be reached the admission falls back to the replica's own limits (the guard checks them
too, always): a store that is down refuses the request's real work anyway, and limits must not turn an
outage of the limits' table into an outage of health checks or of the error answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from storage.store import StorageError, Store
from storage.writer import Cursor

# How long a lease outlives its last renewal: a stream of a replica killed with -9 counts this long.
LEASE_SECONDS = 30.0
# Expired leases are deleted once they are this much older than their expiry (any replica does it).
LEASE_GRACE_SECONDS = 60.0

log = logging.getLogger("sgs-verify.service")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why the deployment refuses a request: RESOURCE_EXHAUSTED with this message, reason and retry hint."""

    message: str
    reason: str
    retry_after: float


def _now_sql(sqlite: bool) -> str:
    """The database's clock in seconds since the epoch (julianday('now') has milliseconds)."""
    return "((julianday('now') - 2440587.5) * 86400.0)" if sqlite else "extract(epoch from clock_timestamp())"


def _rate_sql(sqlite: bool, limited: bool) -> str:
    """One statement: refill the tenant's bucket to now, take a token if there is one, say whether it did."""
    least = "min" if sqlite else "LEAST"
    now = _now_sql(sqlite)
    if not limited:  # no rate limit: the row is only touched, for its lock (the stream count below)
        return (f"INSERT INTO tenant_rates (tenant, tokens, at, granted) VALUES (:tenant, 0, {now}, true) "
                "ON CONFLICT (tenant) DO UPDATE SET at = excluded.at, granted = true RETURNING tokens, granted")
    level = f"{least}(:burst, tenant_rates.tokens + (excluded.at - tenant_rates.at) * :rate)"
    return (f"INSERT INTO tenant_rates (tenant, tokens, at, granted) VALUES (:tenant, :burst - 1, {now}, true) "
            "ON CONFLICT (tenant) DO UPDATE SET "
            f"tokens = CASE WHEN {level} >= 1 THEN {level} - 1 ELSE {level} END, "
            f"granted = {level} >= 1, at = excluded.at "
            "RETURNING tokens, granted")


def _driver_sql(sql: str, sqlite: bool) -> str:
    """A statement written with ``:name`` parameters in the driver's own style: sqlite3 takes ``:name`` as it is,
    psycopg ``%(name)s`` (the statements here hold no other colon, and no percent sign)."""
    return sql if sqlite else re.sub(r":(\w+)", r"%(\1)s", sql)


def _lease_sql(sqlite: bool) -> str:
    now = _now_sql(sqlite)
    return ("INSERT INTO stream_leases (id, tenant, replica, expires_at) "
            "SELECT CAST(:id AS VARCHAR(32)), CAST(:tenant AS VARCHAR(64)), CAST(:replica AS VARCHAR(32)), "
            f"{now} + :ttl "
            "WHERE (SELECT count(*) FROM stream_leases "
            f"WHERE tenant = CAST(:tenant AS VARCHAR(64)) AND expires_at > {now}) < :limit")


class SharedLimits:
    """The deployment-wide rate and stream limits of one replica's guard (service.guard.GuardInterceptor)."""

    def __init__(self, store: Store, io: Callable[..., Awaitable[Any]], rate: float, burst: int, max_streams: int,
                 streams: frozenset[str], lease_seconds: float = LEASE_SECONDS) -> None:
        self.store = store
        self.io = io
        self.rate = rate
        self.burst = burst
        self.max_streams = max_streams
        self.streams = streams  # the methods that are client streams
        self.lease_seconds = lease_seconds
        self.replica = uuid.uuid4().hex  # this process: its leases are renewed together
        self.leases: set[str] = set()
        self._sqlite = store.sqlite
        # (on the driver's cursor: through Core's session a unary admission cost 0.18 ms on SQLite, against 0.04)
        self._rate_sql = _driver_sql(_rate_sql(self._sqlite, rate > 0), self._sqlite)
        self._touch_sql = _driver_sql(_rate_sql(self._sqlite, False), self._sqlite)  # the row locked, no token
        self._lease_sql = _driver_sql(_lease_sql(self._sqlite), self._sqlite)
        now = _now_sql(self._sqlite)
        self._release_sql = _driver_sql("DELETE FROM stream_leases WHERE id = :id", self._sqlite)
        self._renew_sql = _driver_sql(f"UPDATE stream_leases SET expires_at = {now} + :ttl WHERE replica = :replica",
                                      self._sqlite)
        self._expired_sql = _driver_sql(f"DELETE FROM stream_leases WHERE expires_at < {now} - :grace", self._sqlite)
        self._renewer: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Future[Any]] = set()
        self._degraded = False  # the store failed at the last admission (logged once per outage)

    # ------------------------------------------------------------------ admission

    def take(self, method: str, tenant: str, lease: str | None, rate: bool = True) -> Refusal | None:
        """In one transaction: a token of the tenant's bucket (unless not ``rate``: a request whose token was taken
        already) and, for a stream (``lease`` its id), a lease if the tenant has fewer than its limit open. Raises
        StorageError when the store cannot be reached."""
        with self.store.driver_transaction() as cursor:
            self._no_flush_wait(cursor)
            cursor.execute(self._rate_sql if rate else self._touch_sql,
                           {"tenant": tenant, "rate": self.rate, "burst": float(self.burst)})
            tokens, granted = cursor.fetchone()
            if not granted:
                wait = (1.0 - float(tokens)) / self.rate
                return Refusal(f"over this tenant's rate limit of {self.rate:g} requests per second over every "
                               f"replica (--rate-limit, burst {self.burst}); retry in {wait:.2f} s", "rate", wait)
            if lease is None:
                return None
            cursor.execute(self._lease_sql, {"id": lease, "tenant": tenant, "replica": self.replica,
                                             "ttl": self.lease_seconds, "limit": self.max_streams})
            if cursor.rowcount != 1:
                return Refusal(f"this tenant has {self.max_streams} streams open over every replica, its limit "
                               "(--max-streams-per-tenant): finish one first; retry in 1 s", "streams", 1.0)
        return None

    def _no_flush_wait(self, cursor: Cursor) -> None:
        """A bucket or a lease lost to a crash of the database costs nothing (the bucket refills, the lease lapses):
        on PostgreSQL its commit need not wait for the log's flush to disk (measured: 4.2 -> 2.3 ms a request)."""
        if not self._sqlite:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")

    async def admit(self, method: str, tenant: str) -> Refusal | None:
        """Whether the deployment admits this call; a stream's lease, if it gets one, is given back when the
        calling task (the RPC's) ends, however it ends."""
        lease = uuid.uuid4().hex if method in self.streams else None
        if lease is None and self.rate <= 0:
            # Nothing to refuse: no rate limit, and a unary call holds no stream. Measured, the transaction it
            # would take costs a whole-log call 0.4-2 us of the server's CPU per event (of 4-7).
            return None
        refusal, held = await self._admit(method, tenant, lease, rate=True)
        if held is not None:
            task = asyncio.current_task()
            if task is not None:
                task.add_done_callback(lambda _: self._release_soon(held))
            else:
                self._release_soon(held)
        return refusal

    async def hold_stream(self, method: str, tenant: str) -> tuple[Refusal | None, str | None]:
        """A lease for a stream that does not come through gRPC (the viewer's upload, whose rate token its request
        took already): (why it is refused, or the lease to give back with ``release``; neither while the store is
        unavailable)."""
        return await self._admit(method, tenant, uuid.uuid4().hex, rate=False)

    def release(self, lease: str) -> None:
        """Give back a lease of ``hold_stream`` (off the event loop, soon)."""
        self._release_soon(lease)

    async def _admit(self, method: str, tenant: str, lease: str | None, rate: bool
                     ) -> tuple[Refusal | None, str | None]:
        try:
            refusal: Refusal | None = await self.io(self.take, method, tenant, lease, rate)
        except StorageError as err:
            if not self._degraded:
                self._degraded = True
                log.warning("shared limits: the store is unavailable (%s); each replica enforces its own limits "
                            "until it is back", type(err).__name__)
            return None, None
        if self._degraded:
            self._degraded = False
            log.warning("shared limits: the store is back; the limits are the deployment's again")
        if refusal is not None or lease is None:
            return refusal, None
        self.leases.add(lease)
        return None, lease

    def _release_soon(self, lease: str) -> None:
        self.leases.discard(lease)
        future = asyncio.ensure_future(self._release_later(lease))
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)

    async def _release_later(self, lease: str) -> None:
        # (a stream ended as the server stopped, its I/O threads gone: the lease lapses on its own)
        with contextlib.suppress(RuntimeError):
            await self.io(self._release, lease)

    def _release(self, lease: str) -> None:
        try:
            with self.store.driver_transaction() as cursor:
                self._no_flush_wait(cursor)
                cursor.execute(self._release_sql, {"id": lease})
        except StorageError:
            pass  # the lease lapses on its own (LEASE_SECONDS), not renewed any more

    # ------------------------------------------------------------------ renewal

    def renew(self) -> None:
        """Every lease of this replica's open streams lives ``lease_seconds`` more; long-expired ones of any
        replica (a replica killed) are deleted."""
        with self.store.driver_transaction() as cursor:
            self._no_flush_wait(cursor)
            if self.leases:
                cursor.execute(self._renew_sql, {"ttl": self.lease_seconds, "replica": self.replica})
            cursor.execute(self._expired_sql, {"grace": LEASE_GRACE_SECONDS})

    def start(self) -> None:
        self._renewer = asyncio.get_running_loop().create_task(self._renew_forever())

    async def _renew_forever(self) -> None:
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self.io(self.renew)
            except StorageError:
                continue  # the store is down: its leases lapse, its streams fall back to the replica's limit

    async def stop(self) -> None:
        if self._renewer is not None:
            self._renewer.cancel()
            self._renewer = None
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


def measure(store: Store, n: int, stream_every: int = 0) -> float:
    """Seconds per admission (a rate UPSERT; every ``stream_every``-th one with a lease, then released) against
    ``store``, from this thread: the cost a request pays for limits shared over replicas."""
    limits = SharedLimits(store, _unused_io, rate=1e9, burst=1_000_000_000, max_streams=1_000_000,
                          streams=frozenset({"S"}))
    started = time.perf_counter()
    for i in range(n):
        streaming = bool(stream_every) and i % stream_every == 0
        lease = uuid.uuid4().hex if streaming else None
        limits.take("S" if streaming else "U", "bench", lease)
        if lease is not None:
            limits._release(lease)
    return (time.perf_counter() - started) / n


async def _unused_io(fn: Callable[..., Any], *args: Any) -> Any:
    return fn(*args)
