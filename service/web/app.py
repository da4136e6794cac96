"""The viewer's HTTP side: a Starlette app with the JSON API under /api/, the pages, their static files
and the project's documents rendered (the `rule` of every violation links into them).

It runs in the server's process, on the same event loop as gRPC (service/web/server.py), and shares
the gRPC service's store, worker pool and I/O threads: store calls run in the I/O threads, the
engine (a replay's state at an event) in the worker processes, nothing CPU-bound on the loop.

Access control goes in one place: every /api/ request passes through ``Guard`` (the ``guard``
argument of ``create_app``) before its handler. The server's is ``token_guard``: the same bearer tokens,
scopes, tenants and rate limit as gRPC (docs/security.md); it puts the caller (a service.guard.Principal)
on ``request.state.principal``, and every handler sees only that caller's tenant's replays.

    GET  /api/replays                        the list: ?player= &code= &tournament= &round= &table=
                                             &submitter= &violations=true|false &since= &until=
                                             &source=client|ai|default &page_size= &page_token=
    POST /api/replays                        upload a log (binary or JSON) as the body; ?engine=freekill
                                             &name=FILE for another engine's record; ?tournament= ...
    GET  /api/replays/{id}                   info, verdict and every annotation (id or unique prefix)
    GET  /api/replays/{id}/timeline          per position: turn, round, current seat, phase; the turns
    GET  /api/replays/{id}/state?event=N     the table after event N (N = event count: the end)
                                             &view=SEAT|open
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import grpc
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from importers import server_timeline
from service import viewing
from service.config import Limits
from service.convert import violation_code_problem
from service.guard import Authenticator, Denied, GuardInterceptor, Principal, RateLimiter, StreamIdle, idle_limited
from service.judges import SERVER_RULE
from service.metrics import Metrics
from service.servicer import RpcFailure, VerifierServicer, failure_for
from service.shared_limits import SharedLimits
from service.workers import WorkerLost, WorkerPool
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from storage.store import (
    DEFAULT_PAGE_SIZE,
    InvalidQuery,
    ReplayFilter,
    ReplaySummary,
    Store,
    SubmissionMetadata,
    judged_by,
)
from verifier import load_log, text
from verifier.state import ROLE_NAMES, SIDE_NAMES, annotation_json, source_counts, violation_json

P = ParamSpec("P")
T = TypeVar("T")

WEB = Path(str(resources.files("service.web")))
STATIC = WEB / "static"
# The project's documents (docs/, shipped in the package as service/web/docs), and the files they link to:
# the example logs and the fuzz runs' figures beside them, the contract's .proto files (service/web/proto).
DOCS = WEB / "docs"
DOC_NAME = re.compile(r"[a-z0-9_-]+\.(md|png)")
DOC_FOLDERS = ("examples", "fuzz-run")
DOC_DATA_NAME = re.compile(r"[a-z0-9_-]+\.json")
PROTO = WEB / "proto"
PROTO_NAME = re.compile(r"sgsverify/v1/[a-z0-9_]+\.proto")

# An RPC status as an HTTP one.
HTTP_STATUS = {grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.NOT_FOUND: 404,
               grpc.StatusCode.RESOURCE_EXHAUSTED: 413, grpc.StatusCode.DEADLINE_EXCEEDED: 504,
               grpc.StatusCode.UNAVAILABLE: 503}

# Decides whether an /api/ request may go on: None lets it through, a Response answers it instead.
Guard = Callable[[Request], Awaitable[Response | None]]


async def allow_all(request: Request) -> Response | None:
    return None


# What the viewer's API requests are counted as in the limits shared over replicas (a request, not a stream).
VIEWER_METHOD = "Viewer/Api"

# A guard's refusal as an HTTP status.
DENIED_STATUS = {grpc.StatusCode.UNAUTHENTICATED: 401, grpc.StatusCode.PERMISSION_DENIED: 403,
                 grpc.StatusCode.UNAVAILABLE: 503, grpc.StatusCode.RESOURCE_EXHAUSTED: 429}


def token_guard(auth: Authenticator, rates: RateLimiter | None, metrics: Metrics | None = None,
                extra: Guard | None = None, shared: SharedLimits | None = None) -> Guard:
    """The viewer's side of the gRPC guard: ``Authorization: Bearer TOKEN`` checked like gRPC metadata (401
    without a valid token, unless the server runs open), the scope of the request (read for GET, submit for
    an upload; 403 without it), the tenant's rate limit (429 with Retry-After) — over every replica too, with
    ``shared`` limits, as an RPC's is. Then ``extra``, if given."""

    async def guard(request: Request) -> Response | None:
        needed = "submit" if request.method == "POST" else "read"
        try:
            principal = await auth.authenticate(request.headers.get("authorization"))
            if not principal.allows(needed):
                raise Denied(grpc.StatusCode.PERMISSION_DENIED, f"this needs a token with the {needed!r} scope; "
                             f"this one has {', '.join(sorted(principal.scopes))}", "permission")
            if shared is not None:
                refusal = await shared.admit(VIEWER_METHOD, principal.tenant)
                if refusal is not None:
                    raise Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal.message, refusal.reason,
                                 refusal.retry_after)
            wait = rates.take(principal.tenant) if rates is not None else None
            if wait is not None:
                raise Denied(grpc.StatusCode.RESOURCE_EXHAUSTED, f"over this tenant's rate limit (--rate-limit); "
                             f"retry in {wait:.2f} s", "rate", retry_after=wait)
        except Denied as denied:
            if metrics is not None:
                metrics.refused.labels(denied.reason).inc()
            status = DENIED_STATUS.get(denied.code, 500)
            response = error_response(status, denied.message)
            if status == 401:
                response.headers["WWW-Authenticate"] = 'Bearer realm="sgs-verify"'
            if denied.retry_after is not None:
                response.headers["Retry-After"] = str(max(1, round(denied.retry_after + 0.5)))
            return response
        request.state.principal = principal
        return await extra(request) if extra is not None else None

    return guard


def principal(request: Request) -> Principal:
    """The caller the guard let through; none (a guard that sets none) is refused, not served."""
    found = getattr(request.state, "principal", None)
    if not isinstance(found, Principal):
        raise ApiError(500, "the request has no caller (the viewer's guard set none)")
    return found


class GuardMiddleware:
    """Runs the guard before every /api/ handler: the one place where access is decided."""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = await self.guard(Request(scope, receive))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


class ApiError(Exception):
    def __init__(self, status: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.retry_after = retry_after


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message, "status": status}, status_code=status)


def json_bytes(data: bytes, status: int = 200) -> Response:
    return Response(data, status_code=status, media_type="application/json")


# ---------------------------------------------------------------------------------------- documents

@functools.cache
def _markdown() -> Any:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    md.core.ruler.push("served_links", _served_links)
    return md


def link_target(doc: str, href: str) -> str | None:
    """Where a document's link goes on the viewer: ``href`` itself when it is absolute, an anchor, or within
    docs/; the served copy of a .proto file; None for a file of the source tree the viewer does not serve
    (verifier/state.py): a reader of the page gets its path, not a link to nothing."""
    import posixpath
    from urllib.parse import urlsplit

    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("#", "/")) or not parts.path:
        return href
    where = posixpath.normpath(posixpath.join("docs", posixpath.dirname(doc), parts.path))
    if where.startswith("docs/"):
        return href
    if where.startswith("proto/") and PROTO_NAME.fullmatch(where.removeprefix("proto/")):
        return "/" + where + (f"#{parts.fragment}" if parts.fragment else "")
    return None


def _served_links(state: Any) -> None:
    """A core rule: every link of a document checked by ``link_target``; one to a file the viewer does not
    serve becomes its text, marked with the file's path."""
    doc = state.env.get("doc", "")
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        dropped: list[bool] = []
        for token in block.children:
            if token.type == "link_open":
                href = token.attrGet("href") or ""
                target = link_target(doc, str(href))
                dropped.append(target is None)
                if target is None:
                    token.type, token.tag, token.attrs = "html_inline", "", {}
                    token.content = f'<span class="source-path" title="{_escape(str(href))} in the source tree">'
                else:
                    token.attrSet("href", target)
            elif token.type == "link_close" and dropped and dropped.pop():
                token.type, token.tag, token.content = "html_inline", "", "</span>"


@functools.cache
def rendered_doc(name: str) -> str:
    """A document of docs/ as a page (its explicit <a id> anchors kept, so citations land on them)."""
    source = (DOCS / name).read_text(encoding="utf-8")
    title = next((line[2:].strip() for line in source.splitlines() if line.startswith("# ")), name)
    body = _markdown().render(source, {"doc": name})
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" '
            f'content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
            f'<title>{_escape(title)} — sgs-verify</title>'
            f'<link rel="stylesheet" href="/static/viewer.css"></head><body class="doc"><nav class="topbar">'
            f'<a href="/">sgs-verify replays</a> <span>·</span> <a href="/docs/rules.md">rules</a> '
            f'<a href="/docs/codes.md">codes</a> <a href="/docs/viewer.md">viewer</a></nav>'
            f'<main class="doc-body">{body}</main></body></html>')


def _escape(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


# ---------------------------------------------------------------------------------------- JSON shapes

def summary_json(s: ReplaySummary) -> dict[str, Any]:
    m = s.metadata
    return {
        "id": s.id, "tenant": s.tenant, "log_sha256": s.log_sha256 or s.id,
        "submitted_at": s.submitted_at.astimezone(UTC).isoformat(timespec="seconds"),
        "tournament": m.tournament, "round": m.round, "table": m.table, "submitter": m.submitter,
        "log_format": s.log_format, "log_size": s.log_size, "event_count": s.event_count, "ruleset": s.ruleset,
        "mode": pb.Mode.Name(s.mode) if s.mode in pb.Mode.values() else str(s.mode), "seed": str(s.seed),
        "recorder": s.recorder,
        "seats": [{"seat": x.seat, "player": x.player, "role": ROLE_NAMES.get(x.role, ""), "general": x.general}
                  for x in s.seats],
        "engine_version": s.engine_version, "violation_count": s.violation_count,
        "violation_codes": list(s.violation_codes), "followed": s.followed, "stopped_at": s.stopped_at,
        "stopped_reason": s.stopped_reason,
        "result": {"finished": s.finished, "side": SIDE_NAMES.get(s.side, "") if s.finished else "",
                   "winners": list(s.winners), "reason": s.result_reason},
        "judged_by": judged_by(s.log_format), "url": f"/replays/{s.id}"}


_VERDICT_NAMES = {apb.SERVER_VERDICT_OK: "ok", apb.SERVER_VERDICT_REFUSED: "refused",
                  apb.SERVER_VERDICT_UNJUDGED: "unjudged"}


def server_json(replay: apb.AnnotatedReplay) -> dict[str, Any] | None:
    """The recording server's verdicts kept beside ours (or alone): who judged, its refusals, which replies each
    engine judged, and where the two disagree (docs/freekill-bridge.md#two-engines); None when there are none."""
    if not replay.server_judge:
        return None
    cov = replay.coverage
    return {
        "judge": replay.server_judge, "not_replayed": replay.not_replayed,
        "checks": len(replay.server_checks),
        "refused": [{"reply": c.reply, "event": c.event if c.HasField("event") else None, "player": c.player,
                     "seat": c.seat if c.HasField("seat") else None, "request": c.request, "code": c.code,
                     "why": c.why, "source": text.SOURCE_KEY.get(c.source, str(c.source))}
                    for c in replay.server_checks if c.verdict == apb.SERVER_VERDICT_REFUSED],
        "coverage": {"client_replies": cov.client_replies, "both": cov.judged_by_both,
                     "engine_only": cov.judged_by_engine_only, "server_only": cov.judged_by_server_only,
                     "neither": cov.judged_by_neither, "why_unjudged": list(cov.why_unjudged)},
        "disagreements": [{"reply": d.reply, "event": d.event if d.HasField("event") else None, "player": d.player,
                           "seat": d.seat if d.HasField("seat") else None, "engine_codes": list(d.engine_codes),
                           "server": _VERDICT_NAMES.get(d.server_verdict, "?"), "server_code": d.server_code,
                           "server_why": d.server_why} for d in replay.disagreements]}


def server_record_json(summary: ReplaySummary, replay: apb.AnnotatedReplay, record: bytes) -> dict[str, Any]:
    """A record this engine did not replay, for the page: the server's records in words as the timeline, each
    check an annotation at the reply it judged (a refusal a violation), no board (there is no state of ours)."""
    entries = server_timeline(summary.log_format, record)
    position = {seq: i for i, (seq, _, _) in enumerate(entries)}
    annotations = []
    for c in replay.server_checks:
        if c.reply not in position:
            continue
        refused = c.verdict == apb.SERVER_VERDICT_REFUSED
        ann: dict[str, Any] = {
            "index": position[c.reply], "derived": False, "applied": True, "kind": "server_check",
            "status": "ILLEGAL" if refused else "OK" if c.verdict == apb.SERVER_VERDICT_OK else "NOT_CHECKED",
            "text": f"FreeKill's rules: {_VERDICT_NAMES.get(c.verdict, '?')}" + (f" ({c.why})" if c.why else ""),
            "violations": [{"code": c.code, "message": f"{c.request}: {c.why}", "rule": SERVER_RULE,
                            **({"seat": c.seat} if c.HasField("seat") else {})}] if refused else [],
            "digest": "", "source": text.SOURCE_KEY.get(c.source, str(c.source))}
        if c.HasField("seat"):
            ann["seat"] = c.seat
        annotations.append(ann)
    return {
        "info": summary_json(summary), "origin": replay.server_judge,
        "verdict": {
            "engine_version": replay.engine_version, "violation_count": replay.violation_count,
            "violation_codes": list(replay.violation_codes), "followed": False, "stopped_at": 0,
            "stopped_reason": replay.stopped_reason, "result": summary_json(summary)["result"], "scores": [],
            "header_violations": [], "header_notices": [], "by_source": {"client": replay.violation_count}
            if replay.violation_count else {}, "by_source_text": "", "server": server_json(replay)},
        "events": [{"index": i, "kind": kind, "text": f"#{seq} {what}"} for i, (seq, kind, what) in enumerate(entries)],
        "annotations": annotations}


def replay_json(summary: ReplaySummary, replay: apb.AnnotatedReplay, log: pb.GameLog) -> dict[str, Any]:
    events = list(log.events)
    by_source = source_counts(replay)
    return {
        "info": summary_json(summary),
        "origin": text.origin(log.header.origin),
        "verdict": {
            "engine_version": replay.engine_version, "violation_count": replay.violation_count,
            "violation_codes": list(replay.violation_codes), "followed": replay.followed,
            "stopped_at": None if replay.followed else replay.stopped_at, "stopped_reason": replay.stopped_reason,
            "result": summary_json(summary)["result"],
            # docs/rules.md#scoring: each seat's score and how it is made up (finished identity games).
            "scores": [{"seat": x.seat, "score": x.score, "basis": x.basis} for x in replay.result.scores],
            "header_violations": [violation_json(v) for v in replay.header_violations],
            "header_notices": [{"code": n.code, "message": n.message, "rule": n.rule} for n in replay.header_notices],
            # Violations on decisions whose log says who made them, by that source ({"client": 2, "ai": 1}), and
            # in words ("" when none is attributed).
            "by_source": {text.SOURCE_KEY.get(k, str(k)): n for k, n in sorted(by_source.items())},
            "by_source_text": text.violations_by_source(by_source, replay.violation_count),
            "server": server_json(replay)},
        "events": [{"index": i, "kind": ev.WhichOneof("kind") or "", "text": text.describe(ev, text.skill_zh)}
                   for i, ev in enumerate(events)],
        "annotations": [annotation_json(a, events) for a in replay.annotations]}


def _flag(value: str, name: str) -> bool | None:
    v = value.strip().lower()
    if v in ("", "any", "all"):
        return None
    if v in ("1", "true", "yes", "on", "only"):
        return True
    if v in ("0", "false", "no", "off", "clean"):
        return False
    raise ApiError(400, f"{name}={value!r}: say true or false")


def _when(value: str, name: str) -> datetime | None:
    if not value.strip():
        return None
    try:
        at = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ApiError(400, f"{name}={value!r} is not an ISO date or time (2026-03-01, 2026-03-01T12:00)") from None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at


# ?source= of the list: who made the decision a violation is about (sgsverify.v1.DecisionSource).
SOURCE_PARAM = {name: value for value, name in text.SOURCE_KEY.items()}


def _source(value: str) -> int | None:
    v = value.strip().lower()
    if v in ("", "any", "all"):
        return None
    if v not in SOURCE_PARAM:
        raise ApiError(400, f"source={value[:40]!r}: say client, ai or default")
    return int(SOURCE_PARAM[v])


def _int(value: str | None, name: str, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ApiError(400, f"{name}={value!r} is not a whole number") from None


# ---------------------------------------------------------------------------------------- the API

class ViewerApi:
    """The handlers, over the gRPC service's store, worker pool and I/O threads."""

    def __init__(self, store: Store, servicer: VerifierServicer, pool: WorkerPool, io: Executor,
                 limits: Limits, admission: GuardInterceptor | None = None) -> None:
        """``admission``: the gRPC guard, whose limits uploads go through (None: none, as in an embedding
        program's tests)."""
        self.store = store
        self.admission = admission
        self.servicer = servicer
        self.pool = pool
        self.io = io
        self.limits = limits

    async def _io(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.io, functools.partial(fn, *args, **kwargs))

    async def list_replays(self, request: Request) -> Response:
        q = request.query_params
        if (problem := violation_code_problem(q.get("code", "").strip().upper())) is not None:
            raise ApiError(400, f"code: {problem}")
        filters = ReplayFilter(
            tournament=q.get("tournament", "").strip(), round=q.get("round", "").strip(),
            table=q.get("table", "").strip(), submitter=q.get("submitter", "").strip(),
            player=q.get("player", "").strip(), has_violations=_flag(q.get("violations", ""), "violations"),
            violation_code=q.get("code", "").strip().upper(), violation_source=_source(q.get("source", "")),
            judged_by=q.get("judged_by", "").strip().lower(),
            submitted_after=_when(q.get("since", ""), "since"),
            submitted_before=_when(q.get("until", ""), "until"), tenant=principal(request).sees)
        page = await self._io(self.store.list, filters, _int(q.get("page_size"), "page_size", DEFAULT_PAGE_SIZE),
                              q.get("page_token", ""))
        return JSONResponse({"replays": [summary_json(s) for s in page.replays],
                             "next_page_token": page.next_page_token, "total_count": page.total_count})

    async def get_replay(self, request: Request) -> Response:
        stored = await self._io(self.store.get, request.path_params["id"], include_log=True,
                                tenant=principal(request).sees)
        assert stored.log_bytes is not None
        log_bytes = stored.log_bytes

        def build() -> dict[str, Any]:
            replay = apb.AnnotatedReplay.FromString(stored.replay_blob)
            if judged_by(stored.summary.log_format) == "server":
                return server_record_json(stored.summary, replay, log_bytes)
            return replay_json(stored.summary, replay, load_log(log_bytes))

        return JSONResponse(await self._io(build))

    async def timeline(self, request: Request) -> Response:
        return json_bytes(await self._engine_call(request, viewing.timeline_json))

    async def _engine_call(self, request: Request, fn: Callable[..., bytes | None], *args: Any) -> bytes:
        """Ask the worker the replay is pinned to; when it does not hold the replay, read the log from the
        store and ask again (once more on a fresh worker if that one died). The store says first whether the
        caller may see the replay (a worker holds any tenant's)."""
        replay_id = await self._io(self.store.resolve, request.path_params["id"], principal(request).sees)
        key = viewing.pin(replay_id)
        for attempt in (1, 2):
            try:
                answer = await self.pool.call_pinned(key, fn, replay_id, None, *args)
                if answer is None:
                    stored = await self._io(self.store.get, replay_id, include_log=True)
                    answer = await self.pool.call_pinned(key, fn, replay_id, stored.log_bytes, *args)
                assert answer is not None
                return answer
            except WorkerLost:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def state(self, request: Request) -> Response:
        q = request.query_params
        position = _int(q.get("event"), "event", 0)
        raw_view = q.get("view", "open").strip().lower()
        if raw_view in ("", "open"):
            view: int | None = None
        else:
            view = _int(raw_view, "view", 0)
        try:
            data = await self._engine_call(request, viewing.state_json, position, view)
        except viewing.BadPosition as err:
            raise ApiError(400, str(err)) from None
        return json_bytes(data)

    async def upload(self, request: Request) -> Response:
        """The body is read only once the guard's limits admit it (service.guard.GuardInterceptor.admitted: the
        same --max-concurrent, streams per tenant and byte budget as gRPC's uploads, with room set aside for its
        declared length, or the limit without one), into one buffer of that length, and handed to the worker
        from there (out of band: service.workers)."""
        q = request.query_params
        engine = q.get("engine", "").strip().lower()
        if engine in ("sgs-verify", "sgsverify", "log"):
            engine = ""
        limit = self.limits.max_record_bytes if engine else self.limits.max_message_bytes
        option = "--max-record-bytes" if engine else "--max-message-bytes"
        declared_text = request.headers.get("content-length")
        declared = int(declared_text) if declared_text and declared_text.isdigit() else None
        if declared is not None and declared > limit:
            raise ApiError(413, f"the upload is {declared} bytes; this server takes at most {limit} ({option})")
        meta = SubmissionMetadata(tournament=q.get("tournament", "").strip(), round=q.get("round", "").strip(),
                                  table=q.get("table", "").strip(), submitter=q.get("submitter", "").strip())
        caller = principal(request)
        async with contextlib.AsyncExitStack() as admitted:
            if self.admission is not None:
                try:
                    await admitted.enter_async_context(self.admission.admitted(
                        caller, "Viewer/Upload", limit if declared is None else declared))
                except Denied as denied:
                    raise ApiError(429 if denied.retry_after is not None else 413, denied.message,
                                   retry_after=denied.retry_after) from None
            body = await self._body(request, declared, limit, option)
            # A log is stored as its bytes (immutable); a foreign record goes to the worker as it is and never
            # comes back (the converted log does).
            data: bytes | bytearray = body if engine else bytes(body)
            del body
            response = await self.servicer.submit_encoded(data, meta, engine=engine, name=q.get("name", ""),
                                                          where="the upload", principal=caller)
            del data
        summary = await self._io(self.store.get, response.info.id, tenant=caller.tenant)
        return JSONResponse({"created": response.created, "replay": summary_json(summary.summary)},
                            status_code=201 if response.created else 200)

    async def _body(self, request: Request, declared: int | None, limit: int, option: str) -> bytearray:
        """The request's body in one buffer (its declared length, allocated once: pages are touched only as the
        bytes arrive); StreamIdle when the client sends nothing for --stream-idle-timeout."""
        buffer = bytearray(declared or 0)
        view = memoryview(buffer) if declared is not None else None
        size = 0
        chunks = idle_limited(request.stream(), self.limits.stream_idle_seconds, "the upload")
        try:
            async for chunk in chunks:
                end = size + len(chunk)
                if end > (limit if view is None else len(buffer)):
                    raise ApiError(413, f"the upload is over {limit} bytes, this server's limit ({option})")
                if view is not None:
                    view[size:end] = chunk
                else:
                    buffer += chunk
                size = end
        except StreamIdle as idle:
            raise ApiError(408, str(idle)) from None
        except ClientDisconnect:
            raise ApiError(400, f"the client went away after {size} bytes of its upload") from None
        finally:
            if view is not None:
                view.release()
        if declared is not None and size < declared:
            raise ApiError(400, f"the upload ended after {size} of its {declared} bytes")
        return buffer


def _api_errors(handler: Callable[[Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    @functools.wraps(handler)
    async def wrapper(request: Request) -> Response:
        try:
            return await handler(request)
        except ApiError as err:
            response = error_response(err.status, err.message)
            if err.retry_after is not None:
                response.headers["Retry-After"] = str(max(1, round(err.retry_after + 0.5)))
            return response
        except Exception as err:
            failure = failure_for(err)
            if failure is None and isinstance(err, InvalidQuery):
                failure = RpcFailure(grpc.StatusCode.INVALID_ARGUMENT, str(err))
            if failure is None:
                raise
            return error_response(HTTP_STATUS.get(failure.code, 500), failure.message)

    return wrapper


def create_app(api: ViewerApi, guard: Guard = allow_all) -> Starlette:
    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def replay_page(request: Request) -> Response:
        return FileResponse(STATIC / "replay.html")

    async def doc(request: Request) -> Response:
        name = request.path_params["name"]
        if not DOC_NAME.fullmatch(name) or not (DOCS / name).is_file():
            return HTMLResponse("<p>No such document.</p>", status_code=404)
        if name.endswith(".png"):
            return FileResponse(DOCS / name, media_type="image/png")
        return HTMLResponse(rendered_doc(name))

    async def doc_data(request: Request) -> Response:
        folder, name = request.path_params["folder"], request.path_params["name"]
        path = DOCS / folder / name
        if folder not in DOC_FOLDERS or not DOC_DATA_NAME.fullmatch(name) or not path.is_file():
            return HTMLResponse("<p>No such file.</p>", status_code=404)
        return FileResponse(path, media_type="application/json")

    async def doc_folder(request: Request) -> Response:
        folder = request.path_params["folder"]
        if folder not in DOC_FOLDERS or not (DOCS / folder).is_dir():
            return HTMLResponse("<p>No such folder.</p>", status_code=404)
        names = sorted(p.name for p in (DOCS / folder).iterdir() if DOC_DATA_NAME.fullmatch(p.name))
        items = "".join(f'<li><a href="{_escape(n)}">{_escape(n)}</a></li>' for n in names)
        return HTMLResponse(f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>docs/{folder}/ — '
                            f'sgs-verify</title><link rel="stylesheet" href="/static/viewer.css"></head>'
                            f'<body class="doc"><main class="doc-body"><h1>docs/{folder}/</h1><ul>{items}</ul>'
                            f'</main></body></html>')

    async def proto(request: Request) -> Response:
        name = request.path_params["name"]
        if not PROTO_NAME.fullmatch(name) or not (PROTO / name).is_file():
            return HTMLResponse("<p>No such file.</p>", status_code=404)
        return FileResponse(PROTO / name, media_type="text/plain; charset=utf-8")

    async def api_not_found(request: Request) -> Response:
        return error_response(404, f"no such API route: {request.method} {request.url.path}")

    api_routes = [
        Route("/replays", _api_errors(api.list_replays), methods=["GET"]),
        Route("/replays", _api_errors(api.upload), methods=["POST"]),
        Route("/replays/{id}", _api_errors(api.get_replay), methods=["GET"]),
        Route("/replays/{id}/timeline", _api_errors(api.timeline), methods=["GET"]),
        Route("/replays/{id}/state", _api_errors(api.state), methods=["GET"]),
        Route("/{rest:path}", api_not_found),
    ]
    return Starlette(routes=[
        Route("/", page), Route("/replays/{id}", replay_page),
        Route("/docs/{name}", doc),
        Route("/docs/{folder}/", doc_folder), Route("/docs/{folder}/{name}", doc_data),
        Route("/proto/{name:path}", proto),
        Mount("/static", app=StaticFiles(directory=STATIC)),
        Mount("/api", routes=api_routes, middleware=[Middleware(GuardMiddleware, guard=guard)]),
    ])
