"""The viewer's HTTP side, attacked (issue 27 items 2, 6, 7, 14, 15; the interface: tools/hostile/base.py).

Each attack talks to ``ctx.http_url`` only (loopback), is bounded in count and time, and closes what it opened.
"""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

from tools.hostile.base import ROOT, Attack, Context, Outcome

OCTETS = {"Content-Type": "application/octet-stream"}
SECURITY_HEADERS = ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy")


def _statuses(codes: list[int]) -> str:
    counts: dict[int, int] = {}
    for code in codes:
        counts[code] = counts.get(code, 0) + 1
    return ", ".join(f"{n}x {code}" for code, n in sorted(counts.items())) or "nothing"


def _stored(ctx: Context) -> int:
    with ctx.http("attacker") as client:
        return int(client.get("/api/replays", params={"page_size": 1}).json()["total_count"])


# ---------------------------------------------------------------------------------------- item 2

def upload_flood(ctx: Context) -> Outcome:
    """Parallel large FreeKill uploads (not records: each, when read, is refused as one): they must be admitted
    in turn by the byte budget (or refused with 429 after waiting), never all read at once."""
    count = 4 if ctx.quick else 16
    size = min(ctx.limits.max_record_bytes, ctx.limits.max_buffered_bytes, (8 if ctx.quick else 60) << 20)
    payload = os.urandom(size)
    codes: list[int] = []
    lock = threading.Lock()

    def send() -> None:
        try:
            with ctx.http("attacker", timeout=180) as client:
                code = client.post("/api/replays", params={"engine": "freekill"}, content=payload,
                                   headers=OCTETS).status_code
        except Exception as err:  # (a reset connection is an answer too)
            code = -1
            del err
        with lock:
            codes.append(code)

    threads = [threading.Thread(target=send) for _ in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    held = len(codes) == count and all(code in (400, 413, 429) for code in codes)
    return Outcome(f"{count} parallel POST /api/replays?engine=freekill of {size >> 20} MiB each",
                   _statuses(codes), held, "400: read in turn and refused as a record; 429: waited for the budget")


# ---------------------------------------------------------------------------------------- item 6

def rebinding_read(ctx: Context) -> Outcome:
    """A page under another name resolving to 127.0.0.1 (DNS rebinding) reads as that origin: the server must not
    answer a Host it is not known by."""
    port = urlsplit(ctx.http_url).port
    hosts = ["evil.example", f"evil.example:{port}", f"127.0.0.1.nip.example:{port}", ""]
    codes = []
    with ctx.http("attacker") as client:
        for host in hosts:
            for path in ("/api/replays", "/", "/static/list.js"):
                codes.append(client.get(path, headers={"Host": host}).status_code)
    return Outcome(f"{len(codes)} GETs with Host: {', '.join(h or '(empty)' for h in hosts)}", _statuses(codes),
                   all(code == 421 for code in codes))


def cross_origin_write(ctx: Context) -> Outcome:
    """What another site's page can send to the viewer without asking first: a no-cors fetch or a form (no token,
    a simple content type), or any POST naming its own origin."""
    body = (ROOT / "docs" / "examples" / "second_slash.json").read_bytes()
    cases = [{"Content-Type": "text/plain"}, {"Content-Type": "application/x-www-form-urlencoded"},
             {"Content-Type": "multipart/form-data; boundary=x"}, {},
             {**OCTETS, "Origin": "http://evil.example"}, {**OCTETS, "Sec-Fetch-Site": "cross-site"},
             {**OCTETS, "Origin": "null"}]
    before = _stored(ctx)
    codes = []
    for headers in cases:
        with ctx.http(None) as anonymous:  # (what a page may send carries no token)
            codes.append(anonymous.post("/api/replays", content=body, headers=headers).status_code)
        with ctx.http("attacker") as tokened:  # a token, but from another origin
            if "Origin" in headers or "Sec-Fetch-Site" in headers:
                codes.append(tokened.post("/api/replays", content=body, headers=headers).status_code)
    after = _stored(ctx)
    return Outcome(f"{len(codes)} POST /api/replays: simple content types, no content type, a foreign Origin or "
                   "Sec-Fetch-Site", _statuses(codes) + f"; replays stored {before} -> {after}",
                   after == before and all(code in (401, 403, 415) for code in codes))


# ---------------------------------------------------------------------------------------- item 7

def _raise_fd_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def half_open_connections(ctx: Context) -> Outcome:
    """Connections that never finish their headers: the server keeps a bounded number and closes each within its
    header deadline, and the viewer keeps answering meanwhile."""
    from service.web.server import HEADER_SECONDS, MAX_CONNECTIONS

    count = 60 if ctx.quick else 1000
    _raise_fd_limit(count + 256)
    parts = urlsplit(ctx.http_url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 443
    tls = ssl.create_default_context(cafile=str(ctx.ca)) if parts.scheme == "https" else None
    sockets: list[socket.socket] = []
    refused = 0
    started = time.monotonic()
    try:
        for _ in range(count):
            try:
                raw = socket.create_connection((host, port), timeout=HEADER_SECONDS + 10)
                s = tls.wrap_socket(raw, server_hostname=host) if tls is not None else raw
                s.sendall(b"GET /api/replays HTTP/1.1\r\nHost: " + host.encode() + b"\r\nX-Slow: ")
                sockets.append(s)
            except OSError:
                refused += 1  # closed at once: over the server's connection limit
        with ctx.http("probe", timeout=30) as probe:
            answered = probe.get("/api/replays").status_code
        closed = 0
        for s in sockets:
            try:
                closed += s.recv(1) == b""
            except (OSError, ssl.SSLError):
                closed += 1  # reset, or timed out (then not closed: counted below)
        waited = time.monotonic() - started
    finally:
        for s in sockets:
            with contextlib.suppress(OSError):
                s.close()
    closed_all = closed + refused == count
    return Outcome(f"{count} connections sending half a request's headers, never the rest",
                   f"{refused} closed at once (limit {MAX_CONNECTIONS}), {closed} closed by the server, all within "
                   f"{waited:.0f} s; the viewer answered the probe {answered}",
                   closed_all and answered == 200, f"header deadline {HEADER_SECONDS:g} s")


# ---------------------------------------------------------------------------------------- item 14

def refusal_flood(ctx: Context) -> Outcome:
    """Many refused viewer requests (no token, a wrong token, no scope): each is answered and counted, and the log
    says so at a bounded rate (a refusal per request cannot fill the disk)."""
    count = 100 if ctx.quick else 2000
    codes = []
    with ctx.http(None) as anonymous, ctx.http("attacker-reader") as reader:
        for i in range(count):
            if i % 3 == 0:
                codes.append(anonymous.get("/api/replays").status_code)
            elif i % 3 == 1:
                codes.append(anonymous.get("/api/replays", headers={"Authorization": "Bearer sgsv_0_nope"}).status_code)
            else:
                codes.append(reader.post("/api/replays", content=b"x", headers=OCTETS).status_code)
    log_note = ""
    log_path = ctx.extra.get("server_log")
    if log_path is not None:
        log_note = f"server log {os.path.getsize(log_path)} bytes after"
    return Outcome(f"{count} refused viewer requests (no token, bad token, no scope)", _statuses(codes),
                   all(code in (401, 403, 429) for code in codes), log_note)


# ---------------------------------------------------------------------------------------- item 15

def security_headers(ctx: Context) -> Outcome:
    """Every page, document, static file and API answer carries the security headers (HSTS over TLS)."""
    missing: list[str] = []
    paths = ("/", "/replays/x", "/docs/security.md", "/static/viewer.css", "/static/list.js", "/api/replays",
             "/api/nothing")
    with ctx.http("attacker") as client:
        for path in paths:
            headers = client.get(path).headers
            wanted = SECURITY_HEADERS + (("strict-transport-security",) if ctx.http_url.startswith("https") else ())
            missing += [f"{path}: {name}" for name in wanted if name not in headers]
            if "frame-ancestors 'none'" not in headers.get("content-security-policy", ""):
                missing.append(f"{path}: frame-ancestors")
    return Outcome(f"GET {len(paths)} paths", "missing: " + ", ".join(missing) if missing else "every header on each",
                   not missing)


ATTACKS: list[Attack] = [
    Attack("http-upload-flood", 2, upload_flood, seconds=120.0),
    Attack("http-rebinding-read", 6, rebinding_read, seconds=10.0),
    Attack("http-cross-origin-write", 6, cross_origin_write, seconds=20.0),
    Attack("http-half-open-connections", 7, half_open_connections, seconds=60.0),
    Attack("http-refusal-flood", 14, refusal_flood, seconds=90.0),
    Attack("http-security-headers", 15, security_headers, seconds=10.0),
]
