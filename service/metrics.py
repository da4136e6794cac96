"""Prometheus metrics (docs/security.md, "Observability"), served on their own port (``serve --metrics
HOST:PORT``). Each server has its own registry, so several servers in one process (the tests) do not mix.

Labels are bounded: RPC method names, gRPC status codes, violation codes of the catalogue, limit names;
never a tenant, a token or a replay id.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

PREFIX = "sgs_verify"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                   300.0)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(f"{PREFIX}_requests", "RPCs (and viewer API requests) finished, by method and "
                                "status code", ["method", "code"], registry=r)
        self.latency = Histogram(f"{PREFIX}_request_seconds", "How long RPCs (and viewer API requests) took, by "
                                 "method and status code", ["method", "code"], buckets=LATENCY_BUCKETS, registry=r)
        self.verifications = Counter(f"{PREFIX}_verifications", "Logs verified, by how they came (whole, "
                                     "upload, live, foreign, viewer) and verdict (clean, violations)",
                                     ["source", "verdict"], registry=r)
        self.violations = Counter(f"{PREFIX}_violations", "Violations found in verified logs, by code", ["code"],
                                  registry=r)
        self.events = Counter(f"{PREFIX}_events_verified", "Events of verified logs", registry=r)
        self.refused = Counter(f"{PREFIX}_refused", "Requests refused before their handler ran, by reason "
                               "(unauthenticated, permission, concurrency, rate, streams, memory)", ["reason"],
                               registry=r)
        self.streams = Gauge(f"{PREFIX}_streams_open", "Client streams open, by method", ["method"], registry=r)
        self.in_flight = Gauge(f"{PREFIX}_requests_in_flight", "RPCs in progress", registry=r)
        self.buffered = Gauge(f"{PREFIX}_buffered_request_bytes", "Request bytes held (the --max-buffered-bytes "
                              "budget in use)", registry=r)
        self.tls_days_left = Gauge(f"{PREFIX}_tls_certificate_days_left", "Days until the server's TLS certificate "
                                   "expires (absent without TLS)", registry=r)
        self.store_up = Gauge(f"{PREFIX}_store_up", "1 while the replay store answers, else 0", registry=r)
        self.queue_depth = Gauge(f"{PREFIX}_worker_queue_depth", "Verification tasks waiting for a worker "
                                 "process", registry=r)
        self.worker_tasks = Gauge(f"{PREFIX}_worker_tasks", "Verification tasks given to worker processes and "
                                  "not finished", registry=r)
        self.live_games = Gauge(f"{PREFIX}_live_games", "Live games open in worker processes", registry=r)
        self.audit = Counter(f"{PREFIX}_audit_events", "Audited actions, by action", ["action"], registry=r)
        self.server_judged = Counter(f"{PREFIX}_server_judged_records", "Records verified that this engine did not "
                                     "replay, kept with their recording server's own verdicts", registry=r)
        self.disagreements = Counter(f"{PREFIX}_engine_disagreements", "Replies this engine and the recording "
                                     "server's own rules judged differently (docs/freekill-bridge.md#two-engines)",
                                     registry=r)
        self._rpc_children: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def watch_workers(self, queue_depth: Callable[[], float], tasks: Callable[[], float],
                      live_games: Callable[[], float]) -> None:
        self.queue_depth.set_function(queue_depth)
        self.worker_tasks.set_function(tasks)
        self.live_games.set_function(live_games)

    def rpc_done(self, method: str, code: str, seconds: float) -> None:
        # (each RPC ends here: the labelled children are looked up once per method and code, not per call)
        key = (method, code)
        children = self._rpc_children.get(key)
        if children is None:
            children = self._rpc_children[key] = (self.requests.labels(method, code), self.latency.labels(method, code))
        children[0].inc()
        children[1].observe(seconds)

    def verified(self, source: str, violation_codes: list[str], events: int, *, disagreements: int = 0,
                 server_judged: bool = False) -> None:
        """One verified log: its violations' codes (one entry per violation); the replies on which the recording
        server's verdict differs from ours; whether only the server judged it (this engine did not replay it)."""
        self.verifications.labels(source, "violations" if violation_codes else "clean").inc()
        for code in violation_codes:
            self.violations.labels(code).inc()
        if server_judged:
            self.server_judged.inc()
        else:
            self.events.inc(events)
        self.disagreements.inc(disagreements)

    def serve(self, host: str, port: int, certfile: str | None = None, keyfile: str | None = None,
              client_cafile: str | None = None) -> int:
        """Serve /metrics over HTTP (HTTPS with a certificate) in a thread; returns the port."""
        server, thread = start_http_server(port, addr=host, registry=self.registry, certfile=certfile,
                                           keyfile=keyfile, client_cafile=client_cafile,
                                           client_auth_required=client_cafile is not None)
        self._server, self._thread = server, thread
        self.port = int(server.server_address[1])
        return self.port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
