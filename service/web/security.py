"""The viewer's front door (docs/security.md#viewer): an ASGI middleware around the whole app that

- answers only to the host names the server is known by (DNS rebinding: a page on ``evil.example`` whose
  name resolves to 127.0.0.1 would otherwise read an open loopback viewer as if it were its own origin);
- refuses cross-origin writes: a POST whose ``Origin`` is not the viewer's own, or whose ``Sec-Fetch-Site``
  says another site sent it, and any write a page on another origin may send without asking the server
  first (a CORS "simple" request: no Authorization header, and no content type, text/plain or a form) —
  the viewer's own upload sends ``application/octet-stream``;
- puts security headers on every answer (a Content-Security-Policy the viewer's pages satisfy, no framing,
  no sniffing, no referrer; HSTS over TLS);
- counts every API request in ``sgs_verify_requests_total`` (method ``Viewer/<Handler>``, the status as
  gRPC names it), and logs every refusal (401, 403, 413, 415, 429, 503, ...) — at most a few lines a
  second, with a count of those left out, so a flood of refusals does not flood the log.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.metrics import Metrics

log = logging.getLogger("sgs-verify.viewer")

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "localhost.localdomain"})
# Every source the pages use is their own origin: module scripts and the stylesheet under /static/, the API
# with fetch, the documents' images; the favicon is an empty data: URL. Nothing inline, nothing framed.
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; "
                           "frame-ancestors 'none'")
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
HSTS = (b"strict-transport-security", b"max-age=31536000")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Content types a cross-origin page may POST without a CORS preflight (the Fetch standard's "CORS-safelisted"
# ones); the server answers no preflight, so any other type can only come from the viewer's own origin.
SIMPLE_CONTENT_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})

# An API request's handler, as its method label (bounded: one per route).
_API_ROUTES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("GET", re.compile(r"/api/replays/?"), "Viewer/ListReplays"),
    ("POST", re.compile(r"/api/replays/?"), "Viewer/Upload"),
    ("GET", re.compile(r"/api/replays/[^/]+/timeline"), "Viewer/Timeline"),
    ("GET", re.compile(r"/api/replays/[^/]+/state"), "Viewer/State"),
    ("GET", re.compile(r"/api/replays/[^/]+/?"), "Viewer/GetReplay"),
)
# An HTTP status as the gRPC status name sgs_verify_requests_total uses for RPCs.
_CODE_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
               405: "UNIMPLEMENTED", 409: "ALREADY_EXISTS", 413: "RESOURCE_EXHAUSTED", 415: "INVALID_ARGUMENT",
               421: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 503: "UNAVAILABLE",
               504: "DEADLINE_EXCEEDED"}
# The refusals worth a log line (a client turned away), as against a request that was simply wrong.
_REFUSALS = frozenset({401, 403, 413, 415, 421, 429, 503})


def api_method(method: str, path: str) -> str:
    if not path.startswith("/api/"):
        return ""
    for verb, pattern, name in _API_ROUTES:
        if method == verb and pattern.fullmatch(path):
            return name
    return "Viewer/Other"


def code_name(status: int) -> str:
    if 200 <= status < 400:
        return "OK"
    return _CODE_NAMES.get(status, "INTERNAL" if status >= 500 else "INVALID_ARGUMENT")


class RateLimitedLog:
    """Logs at most ``burst`` lines per ``window`` seconds; the next line after a quiet spell says how many were
    left out. (A hostile client can make a refusal per request; the log must not grow with them.)"""

    def __init__(self, logger: logging.Logger, burst: int = 10, window: float = 10.0) -> None:
        self.logger = logger
        self.burst = burst
        self.window = window
        self._window_start = -float("inf")
        self._lines = 0
        self._dropped = 0

    def warning(self, message: str, *args: object) -> bool:
        """Log it, unless the window's lines are spent (then count it); True if it was logged."""
        now = time.monotonic()
        if now - self._window_start >= self.window:
            self._window_start, self._lines = now, 0
        if self._lines >= self.burst:
            self._dropped += 1
            return False
        self._lines += 1
        if self._dropped:
            dropped, self._dropped = self._dropped, 0
            self.logger.warning(message + " (and %d more like it not logged)", *args, dropped)
        else:
            self.logger.warning(message, *args)
        return True


def host_name(host_header: str) -> str:
    """The name in a Host header, without its port (``[::1]:8080`` -> ``::1``), lower-cased."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def allowed_hosts(http_host: str, configured: Iterable[str]) -> frozenset[str] | None:
    """The names the viewer answers to: loopback names, the --http host and the configured ones (--http-host).
    None (any name) when it listens on every address (0.0.0.0, ::) and no name is configured: then no name is
    known, and such a server has tokens (docs/security.md#deploy), which a rebinding page does not have."""
    names = {h.strip().lower().strip("[]") for h in configured if h.strip()}
    host = http_host.strip().lower().strip("[]")
    if host in ("0.0.0.0", "::", "") and not names:
        return None
    if host not in ("0.0.0.0", "::", ""):
        names.add(host)
    return frozenset(names | LOOPBACK_HOSTS)


class ViewerShield:
    """The middleware (see the module's text). ``hosts``: the names answered to (None: any)."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None, tls: bool = False,
                 metrics: Metrics | None = None) -> None:
        self.app = app
        self.hosts = hosts
        self.metrics = metrics
        self.headers = SECURITY_HEADERS + ((HSTS,) if tls else ())
        self.refusals = RateLimitedLog(log)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        method: str = scope["method"]
        path: str = scope["path"]
        label = api_method(method, path)
        status = 0

        async def send_with_headers(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message["headers"] = [*message.get("headers", ()), *self.headers]
            await send(message)

        refusal = self._refusal(scope, method)
        try:
            if refusal is not None:
                await refusal(scope, receive, send_with_headers)
            else:
                await self.app(scope, receive, send_with_headers)
        finally:
            if status == 0:
                status = 499  # the client went before an answer
            if status in _REFUSALS:
                client = scope.get("client")
                peer = f"{client[0]}:{client[1]}" if client else "?"
                self.refusals.warning("viewer %s %s from %s refused: %d", method, path[:200], peer, status)
            if label and self.metrics is not None:
                self.metrics.rpc_done(label, code_name(status), time.monotonic() - started)

    def _refusal(self, scope: Scope, method: str) -> JSONResponse | None:
        headers = Headers(scope=scope)
        if self.hosts is not None and host_name(headers.get("host", "")) not in self.hosts:
            return _refuse(421, "this server does not answer to that host name (its Host header); see "
                                "docs/security.md#viewer (--http-host)")
        if method in SAFE_METHODS:
            return None
        origin = headers.get("origin")
        if origin is not None:
            own = f"{scope.get('scheme', 'http')}://{headers.get('host', '')}".lower()
            parts = urlsplit(origin.strip().lower())
            if f"{parts.scheme}://{parts.netloc}" != own:
                return _refuse(403, "a write from another origin is refused (Origin)")
        if headers.get("sec-fetch-site", "").strip().lower() in ("cross-site", "same-site"):
            return _refuse(403, "a write from another site is refused (Sec-Fetch-Site)")
        # (A request with an Authorization header is never a simple one: another origin's page must ask first.)
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if "authorization" not in headers and (not content_type or content_type in SIMPLE_CONTENT_TYPES):
            return _refuse(415, "send the upload with Content-Type: application/octet-stream (a log, binary or "
                                "JSON, or another engine's record) or application/json; a form or plain text "
                                "is refused, as another site's page could send one")
        return None


def _refuse(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status)
