"""Regression runs: re-verify stored replays under the current engine and say what changed.

The unit of work is a chunk of replay ids (``regress_chunk``): it reads the logs and the verdicts
to compare with from the store, verifies each log again, compares, and — for a named run — stores
the new verdicts under the run's name in one transaction. The same function runs in local worker
processes (``LocalBackend``) and on a Dask cluster (``DaskBackend``, service/regress_dask.py),
so both give the same report. A named run can be interrupted and resumed: replays that already
have a verdict of the run are not verified again, their differences are recomputed from the two
stored verdicts.

What is compared, per replay, between the stored verdict (the submission's, or a named run's with
``against``) and the new one: every annotation's status and violation codes (log events by index,
derived outcomes by their place among the outcomes derived before the same event), the first
annotation whose state digest differs, the final digest, whether the log was followed, and the
result (finished, winning side and winners), and the seats' scores (docs/rules.md#scoring) where the stored
verdict has them (a verdict stored before scores existed has none: that is not a change). The engine version
is recorded, never compared.
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import multiprocessing
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from typing import Any, Protocol

from service.work import finished_facts
from sgsverify.internal import wire_views_pb2 as wv
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from storage.models import SUBMISSION_RUN
from storage.store import InvalidQuery, ReplayFilter, Store, VerdictFacts, pickled_by_fields
from verifier import Verifier, engine_version, load_log
from verifier.engine.effects import Ruleset
from verifier.engine.game import Game
from verifier.replay import Finished

DEFAULT_CHUNK = 16
# On a Dask cluster a chunk is a task the scheduler ships and tracks: 8-13 ms of it a chunk, where the same 16
# replays take some 100 ms of work; 64 a chunk quarter that (measured: 0.77-0.82 of check's CPU per core at 16,
# 0.82-0.86 at 64) and still give every worker several chunks of a run worth distributing.
DASK_CHUNK = 64


class RegressError(Exception):
    """A regression run that cannot start (the message says why)."""


# ---------------------------------------------------------------------------------------- engines

class EngineVariant(Protocol):
    """An engine variant under development (or a test's deliberately changed rule): the ruleset
    to verify a game with (None: the default one), and a chance to adjust each new game — through its
    mode, ruleset or state: the core's classes are compiled (setup.py), and their methods cannot be
    replaced on an instance."""

    def ruleset(self, header: pb.GameHeader) -> Ruleset | None: ...

    def prepare(self, game: Game) -> None: ...


@cache
def load_engine(spec: str) -> tuple[str, EngineVariant | None]:
    """The engine to verify with: "" is the current engine; "MODULE:NAME" names an EngineVariant,
    whose version is the current engine's plus "+variant.MODULE.NAME"."""
    if not spec:
        return engine_version(), None
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise RegressError(f"engine variant {spec!r} is not MODULE:NAME")
    try:
        variant = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise RegressError(f"engine variant {spec!r} cannot be loaded: {err}") from None
    return f"{engine_version()}+variant.{module_name}.{attr}", variant


def reverify(replay_id: str, log_bytes: bytes, engine: str = "") -> apb.AnnotatedReplay:
    return reverify_finished(replay_id, log_bytes, engine).replay()


def reverify_finished(replay_id: str, log_bytes: bytes, engine: str = "") -> Finished:
    """``reverify`` in parts (Verifier.finished): the annotations stay in their wire form, to be compared with
    the stored verdict's bytes and stored as they are, never built as messages when nothing changed."""
    version, variant = load_engine(engine)
    log = load_log(log_bytes)
    if variant is None:
        verifier = Verifier(log.header)
    else:
        verifier = Verifier(log.header, variant.ruleset(log.header))
        if verifier.game is not None:
            variant.prepare(verifier.game)
    verifier.follow(log.events)
    return replace(verifier.finished(replay_id), engine_version=version)


# ---------------------------------------------------------------------------------------- comparing

@pickled_by_fields
@dataclass(frozen=True, slots=True)
class ViolationAt:
    index: int
    derived: bool
    code: str


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class StatusChange:
    index: int
    derived: bool
    stored: str  # e.g. "OK", "ILLEGAL SLASH_LIMIT"; "" when the annotation is new
    new: str  # "" when the annotation is gone


@pickled_by_fields
@dataclass(frozen=True, slots=True)
class Divergence:
    """The first annotation whose state digest differs (index of its log event)."""

    index: int
    derived: bool
    stored_digest: str
    new_digest: str


@pickled_by_fields  # (every report crosses from a worker to the run's process)
@dataclass(frozen=True, slots=True)
class ReplayReport:
    replay_id: str
    changed: bool
    stored_engine: str = ""
    new_engine: str = ""
    new_violations: tuple[ViolationAt, ...] = ()
    vanished_violations: tuple[ViolationAt, ...] = ()
    status_changes: tuple[StatusChange, ...] = ()
    first_divergence: Divergence | None = None
    stored_result: str = ""
    new_result: str = ""
    winner_changed: bool = False
    followed_changed: bool = False
    final_digest_changed: bool = False
    # The seats' scores, when the stored verdict has them and the new one gives others.
    stored_scores: tuple[int, ...] = ()
    new_scores: tuple[int, ...] = ()
    scores_changed: bool = False
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def result_text(replay: apb.AnnotatedReplay) -> str:
    res = replay.result
    if not res.finished:
        return "unfinished" if replay.followed else f"not followed from event {replay.stopped_at}"
    side = pb.Side.Name(res.side).removeprefix("SIDE_")
    return f"{side} win {list(res.winners)}"


# An annotation as compared: its event index, derived or not, status, violation codes, state digest.
_Row = tuple[int, bool, int, tuple[str, ...], bytes]
_STATUS_NAMES = {v.number: v.name.removeprefix("STATUS_") for v in apb.Status.DESCRIPTOR.values}


def _rows(replay: apb.AnnotatedReplay) -> list[_Row]:
    """Each annotation read once (protobuf's attributes cost most of a comparison)."""
    # (most annotations have no violation: their codes are () without a comprehension's call)
    return [(a.index, a.derived, a.status, tuple([v.code for v in a.violations]) if a.violations else (), a.digest)
            for a in replay.annotations]


def _keyed(rows: list[_Row]) -> dict[tuple[int, bool, int], _Row]:
    """Annotations by (event index, derived, ordinal among the derived outcomes before that event)."""
    out: dict[tuple[int, bool, int], _Row] = {}
    seen: dict[tuple[int, bool], int] = {}
    for row in rows:
        key = (row[0], row[1])
        n = seen.get(key, 0)
        out[(row[0], row[1], n)] = row
        seen[key] = n + 1
    return out


def _status(row: _Row | None) -> str:
    if row is None:
        return ""
    name = _STATUS_NAMES.get(row[2])
    if name is None:
        name = apb.Status.Name(row[2]).removeprefix("STATUS_")  # (raises on an unknown value, as it did)
    return " ".join([name, *row[3]])


def _violations(replay: apb.AnnotatedReplay, rows: list[_Row]) -> Counter[ViolationAt]:
    out: Counter[ViolationAt] = Counter(ViolationAt(-1, False, v.code) for v in replay.header_violations)
    for index, derived, _, codes, _ in rows:
        for code in codes:
            out[ViolationAt(index, derived, code)] += 1
    return out


def compare(replay_id: str, stored: apb.AnnotatedReplay, new: apb.AnnotatedReplay) -> ReplayReport:
    old_rows, new_rows = _rows(stored), _rows(new)
    old_v, new_v = _violations(stored, old_rows), _violations(new, new_rows)
    added = tuple(sorted((new_v - old_v).elements(), key=lambda v: (v.index, not v.derived, v.code)))
    gone = tuple(sorted((old_v - new_v).elements(), key=lambda v: (v.index, not v.derived, v.code)))
    if len(old_rows) == len(new_rows) and all(a[:2] == b[:2] for a, b in zip(old_rows, new_rows, strict=True)):
        # The same (event index, derived) in the same places (a replay whose verdict changed but whose events
        # were judged in the same order: most): each annotation's key is the same on both sides, so they pair
        # off by position, and a key's ordinal follows the position among those of its event.
        places = [i for i, (a, b) in enumerate(zip(old_rows, new_rows, strict=True))
                  if a[2:4] != b[2:4] and _status(a) != _status(b)]
        places.sort(key=lambda i: (old_rows[i][0], not old_rows[i][1], i))
        changes = [StatusChange(old_rows[i][0], old_rows[i][1], _status(old_rows[i]), _status(new_rows[i]))
                   for i in places]
    else:
        old_k, new_k = _keyed(old_rows), _keyed(new_rows)
        differing = []
        for key in old_k.keys() | new_k.keys():
            a, b = old_k.get(key), new_k.get(key)
            # (equal status and codes give equal texts: only the others are written out and compared)
            if (a is None or b is None or a[2:4] != b[2:4]) and _status(a) != _status(b):
                differing.append(key)
        differing.sort(key=lambda k: (k[0], not k[1], k[2]))
        changes = [StatusChange(k[0], k[1], _status(old_k.get(k)), _status(new_k.get(k))) for k in differing]
    divergence = None
    first = next((i for i, (sa, na) in enumerate(zip(old_rows, new_rows, strict=False))
                  if sa[4] != na[4] or sa[:2] != na[:2]), min(len(old_rows), len(new_rows)))
    if first < max(len(old_rows), len(new_rows)):  # (where they differ, or where the shorter list ends)
        old_at = old_rows[first] if first < len(old_rows) else None
        new_at = new_rows[first] if first < len(new_rows) else None
        at = new_at if new_at is not None else old_at
        assert at is not None
        divergence = Divergence(at[0], at[1], old_at[4].hex() if old_at is not None else "",
                                new_at[4].hex() if new_at is not None else "")
    r1, r2 = stored.result, new.result
    winner_changed = (r1.finished, r1.side, list(r1.winners)) != (r2.finished, r2.side, list(r2.winners))
    followed_changed = (stored.followed, stored.stopped_at) != (new.followed, new.stopped_at)
    final_changed = stored.final_digest != new.final_digest
    old_scores, new_scores = tuple(s.score for s in r1.scores), tuple(s.score for s in r2.scores)
    scores_changed = bool(old_scores) and old_scores != new_scores
    changed = bool(added or gone or changes or divergence or winner_changed or followed_changed or final_changed
                   or scores_changed)
    return ReplayReport(
        replay_id=replay_id, changed=changed, stored_engine=stored.engine_version, new_engine=new.engine_version,
        new_violations=added, vanished_violations=gone, status_changes=tuple(changes), first_divergence=divergence,
        stored_result=result_text(stored), new_result=result_text(new), winner_changed=winner_changed,
        followed_changed=followed_changed, final_digest_changed=final_changed,
        stored_scores=old_scores if scores_changed else (), new_scores=new_scores if scores_changed else (),
        scores_changed=scores_changed)


# AnnotatedReplay's fields 1 (engine_version) and 2 (log_sha256) as wire-format tags: what precedes the
# annotations (field 3) in a canonical encoding.
_HEAD_TAGS = (0x0A, 0x12)


def _head_end(blob: bytes) -> int:
    """Where the fields before the annotations end in a stored replay's encoding (its start if it has none)."""
    pos, size = 0, len(blob)
    while pos < size and blob[pos] in _HEAD_TAGS:
        pos += 1
        length = shift = 0
        while pos < size:
            byte = blob[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        pos += length
    return min(pos, size)


def compare_encoded(replay_id: str, stored_blob: bytes, new: Finished) -> ReplayReport:
    """``compare`` of a stored verdict's encoding with a finished verification, the same report.

    Most replays are unchanged, and every annotation's status, codes and digest are then the same: so the
    annotations' bytes are compared first, in one piece. When the stored encoding holds exactly the new
    annotations' bytes after its head, the two lists of annotations are equal, and ``compare`` of the two
    replays without them gives the same report (no status change, no divergence; the violations that differ
    can only be the header's). Otherwise the annotations the two share byte for byte from the first on (a game
    that verifies differently from some event on has the same annotations before it) are left out of both, and
    ``compare`` of what is left gives the same report: equal annotations add the same violations to both sides
    (which cancel), no status change and no divergence, and each key's ordinal among the derived outcomes of its
    event moves by the same number on both sides (the report gives no ordinal; their order stays). Those shared at
    the end are left out too where that changes no key (below)."""
    start = _head_end(stored_blob)
    end = start + len(new.annotations)
    if stored_blob.startswith(new.annotations, start):
        # (The new annotations are whole fields, so the stored encoding's fields end where theirs do.)
        stored = apb.AnnotatedReplay.FromString(stored_blob[:start] + stored_blob[end:])
        if not stored.annotations:
            summary = apb.AnnotatedReplay(engine_version=new.engine_version, log_sha256=new.log_sha256)
            summary.MergeFrom(new.summary)
            return compare(replay_id, stored, summary)
    # (as lists: a view's item is a new bytes object at each reading)
    old_items = list(wv.Field3.FromString(stored_blob).items)
    new_items = list(wv.Field3.FromString(new.annotations).items)
    shared = _shared_prefix(old_items, new_items)
    # The annotations both share byte for byte at the end (a changed verdict that leaves the state as it was:
    # the rest of the game is annotated as before), when both have as many: left out too if what is left
    # between has the same (event index, derived) on both sides, so that every key after it is the same on
    # both sides (and its annotation, the same, is no change) and the annotations still pair off by position.
    tail = 0
    if len(old_items) == len(new_items):
        tail = _shared_prefix(old_items[shared:][::-1], new_items[shared:][::-1])
    # The stored verdict without its annotations, and only the annotations compared added back. When they are one
    # canonical run after its head (as stored), it is never decoded whole; otherwise it is, and they are dropped.
    old_run = wv.Field3(items=old_items).SerializeToString()
    if stored_blob.startswith(old_run, start):
        stored = apb.AnnotatedReplay.FromString(stored_blob[:start] + stored_blob[start + len(old_run):])
    else:
        stored = apb.AnnotatedReplay.FromString(stored_blob)
        del stored.annotations[:]
    old_mid, new_mid = _compared(old_items[shared:], new_items[shared:], tail)
    # (MergeFromString appends the annotations after the other fields: the same replay)
    stored.MergeFromString(wv.Field3(items=old_mid).SerializeToString())
    fresh = apb.AnnotatedReplay(engine_version=new.engine_version, log_sha256=new.log_sha256)
    fresh.MergeFromString(wv.Field3(items=new_mid).SerializeToString())
    fresh.MergeFrom(new.summary)
    return compare(replay_id, stored, fresh)


def _shared_prefix(old: list[bytes], new: list[bytes]) -> int:
    """How many items both lists start with (compared a block at a time, in C)."""
    size, at = min(len(old), len(new)), 0
    while at < size:
        end = min(at + 32, size)
        if old[at:end] != new[at:end]:
            while old[at] == new[at]:
                at += 1
            return at
        at = end
    return size


def _sans_digest(items: Sequence[bytes]) -> Sequence[wv.AnnotationSansDigest]:
    view = wv.AnnotationsSansDigest.FromString(wv.Field3(items=items).SerializeToString())
    view.DiscardUnknownFields()  # (the digests)
    return view.annotations


def _compared(old: list[bytes], new: list[bytes], tail: int) -> tuple[list[bytes], list[bytes]]:
    """Of the annotations after those both verdicts share from the first on, those ``compare`` needs to see for
    the same report. Without the ``tail`` both share byte for byte at the end (as many on both sides) if what is
    left has the same (event index, derived) on both sides; and then, if the annotations left pair off by
    position (the same keys in the same places), only the pairs that differ in more than their state digests
    and the first that differs in its digests only (where the state first diverges, unless a pair before it
    does). The others (the same annotation on both sides, or the same but for its digests, after that first)
    add equal violations to both sides, no status change and no earlier divergence; with the same keys in the
    same places on both sides before and after, ``compare`` pairs what is left by position as it paired the
    whole."""
    if len(old) != len(new):
        return old, new
    middle = len(old) - tail
    differing = [i for i in range(middle) if old[i] != new[i]]
    old_view, new_view = _sans_digest([old[i] for i in differing]), _sans_digest([new[i] for i in differing])
    # (the pairs equal byte for byte have the same keys on both sides: only the others can make them differ)
    by_position = all(a.index == b.index and a.derived == b.derived for a, b in zip(old_view, new_view, strict=True))
    if not by_position:
        if tail and sorted([(a.index, a.derived) for a in old_view]) == \
                sorted([(a.index, a.derived) for a in new_view]):
            return old[:middle], new[:middle]
        return old, new  # (the tail not left out after all)
    kept: list[int] = []
    diverged = False
    for i, a, b in zip(differing, old_view, new_view, strict=True):
        if a != b:
            kept.append(i)
        elif not diverged and apb.Annotation.FromString(old[i]).digest != apb.Annotation.FromString(new[i]).digest:
            diverged = True
            kept.append(i)
        # (else: the same annotation but for its digest after the first such, or in other bytes)
    return [old[i] for i in kept], [new[i] for i in kept]


# ---------------------------------------------------------------------------------------- the work

@dataclass(frozen=True, slots=True)
class ChunkTask:
    """One unit of work: picklable, so it can go to a local process or a Dask worker."""

    db_url: str
    ids: tuple[str, ...]
    against: str = SUBMISSION_RUN
    run: str = ""  # "": nothing is stored
    engine: str = ""


_stores: dict[str, Store] = {}


def store_for(url: str) -> Store:
    """One store per process and database (workers keep their connections between chunks)."""
    store = _stores.get(url)
    if store is None:
        store = _stores[url] = Store.open(url, pool_size=1)
    return store


def regress_chunk(task: ChunkTask) -> list[ReplayReport]:
    store = store_for(task.db_url)
    logs, base = store.logs_and_verdict_blobs(task.ids, task.against)
    if task.against != SUBMISSION_RUN:
        missing = [i for i in task.ids if i in logs and i not in base]
        if missing:
            base.update(store.verdict_blobs(missing, SUBMISSION_RUN))
    # Every replay of the chunk verified first, then every one compared: the engine runs with its caches warm
    # from the replay before, not cooled by a comparison and a verdict's facts in between.
    done: list[ReplayReport | tuple[str, Finished]] = []
    for replay_id in task.ids:
        if replay_id not in logs:
            done.append(ReplayReport(replay_id, changed=False, error="the replay was deleted during the run"))
            continue
        try:
            done.append((replay_id, reverify_finished(replay_id, logs[replay_id], task.engine)))
        except Exception as err:  # a log the engine cannot take any more is a finding, not a crash
            done.append(ReplayReport(replay_id, changed=True, error=f"{type(err).__name__}: {err}"))
    reports: list[ReplayReport] = []
    verdicts: list[tuple[str, VerdictFacts]] = []
    for item in done:
        if isinstance(item, ReplayReport):
            reports.append(item)
            continue
        replay_id, new = item
        reports.append(compare_encoded(replay_id, base[replay_id], new))
        if task.run:
            verdicts.append((replay_id, finished_facts(new)))
    if verdicts:
        store.save_verdicts(task.run, verdicts)
    return reports


def compare_stored(store: Store, ids: Sequence[str], against: str, run: str) -> list[ReplayReport]:
    """The differences of replays the run already verified (resuming): from the stored verdicts."""
    out = []
    for start in range(0, len(ids), 200):
        part = ids[start:start + 200]
        base = store.verdict_blobs(part, against)
        if against != SUBMISSION_RUN:
            base.update(store.verdict_blobs([i for i in part if i not in base], SUBMISSION_RUN))
        done = store.verdict_blobs(part, run)
        for replay_id in part:
            if replay_id in done and replay_id in base:
                out.append(compare(replay_id, apb.AnnotatedReplay.FromString(base[replay_id]),
                                   apb.AnnotatedReplay.FromString(done[replay_id])))
    return out


# ---------------------------------------------------------------------------------------- backends

class Backend(Protocol):
    """Runs chunk tasks; yields each chunk's reports as it finishes. ``chunk_size``: the replays a task it runs
    best, unless the run says otherwise (RegressOptions.chunk_size)."""

    chunk_size: int

    def run(self, tasks: Sequence[ChunkTask]) -> Iterator[list[ReplayReport]]: ...


# The stores a forked worker inherited from its parent (``_stores`` of a process that ran chunks itself): kept
# referenced and never used or closed, as their connections are the parent's (a SQLite handle closed here could
# checkpoint and remove the parent's WAL; a PostgreSQL one would end the parent's session). A worker ends by
# os._exit, which finalizes nothing.
_inherited: list[Store] = []


def _start_worker() -> None:
    # Ctrl-C goes to the whole process group: the parent stops handing out chunks and waits for
    # the running ones, so their verdicts are stored (nothing half-done to redo).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A forked worker opens stores of its own (store_for), never its parent's.
    _inherited.extend(_stores.values())
    _stores.clear()
    # and a worker ends with its parent, even when that was killed (a server running the Regress RPC)
    from service.workers import exit_with_parent

    exit_with_parent()


def default_start_method() -> str:
    """How LocalBackend starts its workers when not told: "fork" in a process that runs no other thread (the
    `regress` command): a forked worker has the engine and the store's code loaded already, at no cost; else
    (a server: gRPC's threads, its store's) "forkserver", as a forked worker would inherit those threads' locks
    mid-use and could crash or hang. A worker the fork server starts imports the parent's main module again
    (multiprocessing does, to find the task's function): about 0.2 s of CPU a worker, where a fork costs 0.03."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "forkserver"


class LocalBackend:
    """Worker processes on this machine (jobs=0: in this process, for tests and debugging)."""

    chunk_size = DEFAULT_CHUNK

    def __init__(self, jobs: int | None = None, start_method: str | None = None) -> None:
        """``start_method``: None, the default_start_method() when the run starts; never "fork" in a process
        that runs threads (gRPC's, a store's): a forked worker inherits their locks mid-use and can crash or
        hang."""
        self.jobs = (os.cpu_count() or 1) if jobs is None else jobs
        self.start_method = start_method

    def run(self, tasks: Sequence[ChunkTask]) -> Iterator[list[ReplayReport]]:
        if self.jobs <= 0:
            for task in tasks:
                yield regress_chunk(task)
            return
        context = multiprocessing.get_context(self.start_method or default_start_method())
        if isinstance(context, multiprocessing.context.ForkServerContext):
            # Each worker would import the engine, the store and SQLAlchemy itself: about 0.5 s of CPU a
            # worker, as much as verifying 100 games. The fork server imports them once (when it starts: once
            # per process, so a server's later runs pay nothing) and every worker is forked with them loaded.
            context.set_forkserver_preload([__name__])
        # A forked worker must never collect what it inherited: the parent's garbage (a gRPC channel a test
        # dropped, say) would be finalized there, without the threads it belongs with (a CI run: a worker spun
        # for ever in a gRPC object's finalizer). Frozen in the parent while workers are forked, it is left to
        # the parent's own collections.
        freeze = isinstance(context, multiprocessing.context.ForkContext) and not gc.get_freeze_count()
        if freeze:
            gc.freeze()
        pool = ProcessPoolExecutor(self.jobs, mp_context=context, initializer=_start_worker)
        try:
            futures: list[Future[list[ReplayReport]]] = [pool.submit(regress_chunk, t) for t in tasks]
            for fut in as_completed(futures):
                yield fut.result()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            if freeze:
                gc.unfreeze()


# ---------------------------------------------------------------------------------------- the run

@dataclass(frozen=True, slots=True)
class RegressOptions:
    filters: ReplayFilter = field(default_factory=ReplayFilter)
    run: str = ""  # store the new verdicts under this name (and resume it)
    against: str = SUBMISSION_RUN  # compare with this run's verdicts (default: the submission's)
    engine: str = ""  # "" the current engine, or "MODULE:FACTORY" (see load_engine)
    restart: bool = False  # forget the run's stored verdicts first
    chunk_size: int | None = None  # replays per task; None: the backend's (Backend.chunk_size)


@dataclass(slots=True)
class RegressResult:
    engine_version: str
    total: int = 0
    resumed: int = 0  # verified earlier by the same run (not verified again)
    verified: int = 0
    reports: list[ReplayReport] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def changed(self) -> list[ReplayReport]:
        return sorted((r for r in self.reports if r.changed), key=lambda r: r.replay_id)

    @property
    def failed(self) -> list[ReplayReport]:
        return [r for r in self.reports if r.error]

    def summary(self) -> dict[str, Any]:
        changed = self.changed
        codes: dict[str, list[int]] = {}
        for r in changed:
            for v in r.new_violations:
                codes.setdefault(v.code, [0, 0])[0] += 1
            for v in r.vanished_violations:
                codes.setdefault(v.code, [0, 0])[1] += 1
        return {
            "engine_version": self.engine_version, "replays": self.total, "resumed": self.resumed,
            "verified": self.verified, "unchanged": len(self.reports) - len(changed), "changed": len(changed),
            "with_new_violations": sum(1 for r in changed if r.new_violations),
            "with_vanished_violations": sum(1 for r in changed if r.vanished_violations),
            "with_status_changes": sum(1 for r in changed if r.status_changes),
            "diverged": sum(1 for r in changed if r.first_divergence is not None),
            "winner_changed": sum(1 for r in changed if r.winner_changed),
            "failed": len(self.failed),
            "codes": {c: {"new": n, "vanished": g} for c, (n, g) in sorted(codes.items())},
            "seconds": round(self.seconds, 3),
        }


def chunks(ids: Sequence[str], size: int) -> Iterable[tuple[str, ...]]:
    for start in range(0, len(ids), max(size, 1)):
        yield tuple(ids[start:start + size])


def regress(store: Store, options: RegressOptions, backend: Backend,
            on_progress: Callable[[int, int], None] | None = None,
            on_report: Callable[[ReplayReport], None] | None = None) -> RegressResult:
    """Re-verify the replays matching the filters and compare; see the module's doc."""
    started = time.perf_counter()
    version, _ = load_engine(options.engine)
    if options.run and options.run == options.against:
        raise RegressError(f"run {options.run!r} cannot be compared with itself")
    if options.against != SUBMISSION_RUN and options.against not in {r.name for r in store.runs()}:
        raise RegressError(f"there is no run named {options.against!r} to compare with")
    done: set[str] = set()
    if options.run:
        if options.restart:
            store.delete_run(options.run)
        for info in store.runs():
            if info.name == options.run and set(info.engine_versions) != {version}:
                raise RegressError(f"run {options.run!r} was made by {', '.join(info.engine_versions)}, not by "
                                   f"this engine ({version}): choose another name, or --restart to replace it")
        done = store.run_ids(options.run)
    if options.filters.judged_by == "server":
        raise RegressError("the records this engine did not replay (judged_by server) hold their server's verdicts "
                           "only: there is no verdict of this engine's to re-verify")
    # (a record this engine did not replay is not re-verified: its verdict is its server's)
    ids = store.ids(dataclasses.replace(options.filters, judged_by="engine"))
    todo = [i for i in ids if i not in done]
    result = RegressResult(version, total=len(ids), resumed=len(ids) - len(todo))
    if result.resumed:
        for report in compare_stored(store, [i for i in ids if i in done], options.against, options.run):
            result.reports.append(report)
            if on_report is not None:
                on_report(report)
    if on_progress is not None:
        on_progress(result.resumed, result.total)
    tasks = [ChunkTask(_worker_url(store), part, options.against, options.run, options.engine)
             for part in chunks(todo, options.chunk_size or backend.chunk_size)]
    try:
        for reports in backend.run(tasks):
            result.verified += len(reports)
            for report in reports:
                result.reports.append(report)
                if on_report is not None:
                    on_report(report)
            if on_progress is not None:
                on_progress(result.resumed + result.verified, result.total)
    finally:
        result.seconds = time.perf_counter() - started
    return result


def _worker_url(store: Store) -> str:
    url = store.engine.url.render_as_string(hide_password=False)
    if url in ("sqlite://", "sqlite:///:memory:"):
        raise InvalidQuery("a regression run needs a database workers can open (not an in-memory SQLite)")
    return url
