"""Regression runs (service/regress.py, `sgs-verify regress`): an unchanged engine reports nothing;
a deliberately changed rule (tests/regress_variant.py: 2 cards for a rebel kill) reports exactly the
replays and events it affects; named runs store verdicts, resume after an interruption and can be
compared against; the Dask path gives the same report as the local one."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from clients.cli import main
from clients.selfplay import play_game
from service.regress import (
    ChunkTask,
    Divergence,
    LocalBackend,
    RegressError,
    RegressOptions,
    ReplayReport,
    StatusChange,
    ViolationAt,
    regress,
    result_text,
)
from service.work import VerifyJob, run_job
from sgsverify.v1 import annotation_pb2 as apb
from sgsverify.v1 import game_log_pb2 as pb
from storage.store import ReplayFilter, Store, SubmissionMetadata
from tests.service.conftest import BACKENDS, fresh_database

VARIANT = "tests.regress_variant:REBEL_REWARD_TWO"
GAMES = [(seed, 4 + seed % 7) for seed in range(12)]


@pytest.fixture(scope="session")
def corpus() -> list[pb.GameLog]:
    return [play_game(seed, players) for seed, players in GAMES]


def reward_events(log: pb.GameLog) -> list[int]:
    """Indices of the kill-reward draws a log records (the events the variant must flag)."""
    return [i for i, ev in enumerate(log.events)
            if ev.WhichOneof("kind") == "draw_cards" and ev.draw_cards.reason == pb.DRAW_REASON_KILL_REWARD]


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path, corpus: list[pb.GameLog]) -> Iterator[Store]:
    url, db = fresh_database(request.param, tmp_path)
    st = Store.open(url)
    for i, log in enumerate(corpus):
        st.save(run_job(VerifyJob(log.SerializeToString(deterministic=True),
                                  SubmissionMetadata(tournament="odd" if i % 2 else "even"), 10**6, canonical=True)))
    try:
        yield st
    finally:
        st.close()
        if db is not None:
            db.drop()


def ids_by_log(corpus: list[pb.GameLog]) -> dict[str, pb.GameLog]:
    import hashlib

    return {hashlib.sha256(log.SerializeToString(deterministic=True)).hexdigest(): log for log in corpus}


def test_unchanged_engine_reports_nothing(store: Store) -> None:
    result = regress(store, RegressOptions(), LocalBackend(0))
    assert result.total == len(GAMES) and result.verified == len(GAMES)
    assert result.changed == [] and result.failed == []


def test_variant_reports_exactly_the_affected_replays_and_events(store: Store, corpus: list[pb.GameLog]) -> None:
    result = regress(store, RegressOptions(engine=VARIANT), LocalBackend(2))
    expected = {i: reward_events(log) for i, log in ids_by_log(corpus).items() if reward_events(log)}
    assert 0 < len(expected) < len(GAMES)  # the corpus has both kinds
    assert {r.replay_id for r in result.changed} == set(expected)
    for r in result.changed:
        first = expected[r.replay_id][0]
        assert r.new_violations[0].code == "KILL_REWARD" and r.new_violations[0].index == first
        assert (r.status_changes[0].index, r.status_changes[0].stored) == (first, "OK")
        assert r.status_changes[0].new == "MISMATCH KILL_REWARD"
        assert r.vanished_violations == ()
        # The variant's 2-card reward differs from the 3 cards the log records, and those are adopted (they
        # are in the draw pile): the verdict changes but the game followed is the recorded one, so the states
        # never diverge (docs/log-format.md#following).
        assert r.first_divergence is None
        assert r.new_engine.endswith("+variant.tests.regress_variant.REBEL_REWARD_TWO")
    assert result.summary()["codes"]["KILL_REWARD"]["new"] >= len(expected)


def forked_run(store: Store, engine: str, run: str, frozen: Path | None = None) -> dict[str, Any]:
    """tests/service/forked_regress.py's run in a process of its own (workers are forked only from a process
    without other threads, and pytest's has other tests' threads)."""
    import subprocess
    import sys

    url = store.engine.url.render_as_string(hide_password=False)
    done = subprocess.run([sys.executable, "-m", "tests.service.forked_regress", url, engine, run,
                           *([str(frozen)] if frozen is not None else [])], cwd=Path(__file__).parents[2],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_forked_workers_give_the_in_process_report(store: Store) -> None:
    """Forked workers (the default in a process without other threads) open stores of their own: one that
    inherited the parent's store from chunks run in the parent leaves it alone, and the parent's store still
    reads and writes afterwards."""
    got = forked_run(store, VARIANT, "by-fork")
    assert got["workers"] == got["here"] and any(r["changed"] for r in got["here"])
    in_pytest = sorted(regress(store, RegressOptions(engine=VARIANT), LocalBackend(0)).reports,
                       key=lambda r: r.replay_id)
    assert got["here"] == json.loads(json.dumps([r.to_json() for r in in_pytest]))
    assert got["stored"] == len(GAMES)
    assert got["stored_after_delete"] == 0 and got["replays"] == len(GAMES)


def test_workers_from_the_fork_server_give_the_in_process_report(store: Store) -> None:
    """Workers from the fork server (a process running threads, as pytest's or a server's) give the same report,
    and the parent's store still reads and writes afterwards."""
    options = RegressOptions(engine=VARIANT, run="by-forkserver")
    here = regress(store, RegressOptions(engine=VARIANT), LocalBackend(0))  # (a store of the parent's in _stores)
    workers = regress(store, options, LocalBackend(2, "forkserver"))
    key = lambda r: r.replay_id  # noqa: E731
    assert sorted(workers.reports, key=key) == sorted(here.reports, key=key) and here.changed
    assert len(store.run_ids(options.run)) == len(GAMES)
    store.delete_run(options.run)
    assert store.run_ids(options.run) == set() and len(store.ids()) == len(GAMES)


@pytest.mark.parametrize("store", [BACKENDS[0]], indirect=True)
def test_forked_workers_leave_the_parents_objects_to_the_parent(store: Store, tmp_path: Path) -> None:
    """A forked worker never collects what it inherited: every object the parent had when it forked is frozen
    out of the worker's collections (gc.freeze), and the parent's own collections get them back after the run.
    (A CI run: a worker collecting a gRPC client that a test had dropped spun for ever in its finalizer,
    without the threads it belongs with; forking a process holding such garbage and collecting in the child
    hangs or crashes the child in 2 runs of 3 here, and never once it is frozen.)"""
    seen = tmp_path / "frozen"
    seen.mkdir()
    got = forked_run(store, "", "frozen", seen)
    assert got["verified"] == len(GAMES) and not any(r["changed"] for r in got["workers"])
    frozen = [int(f.read_text()) for f in seen.iterdir()]
    assert got["frozen_before"] == 0
    assert frozen and all(n >= got["objects_before"] // 2 for n in frozen), (frozen, got["objects_before"])
    assert got["frozen_after"] == 0  # the parent's own again


def test_filters_select_the_replays(store: Store) -> None:
    result = regress(store, RegressOptions(filters=ReplayFilter(tournament="odd")), LocalBackend(0))
    assert result.total == len(GAMES) // 2


class Interrupting:
    """A backend that is interrupted (Ctrl-C) after its first chunk."""

    chunk_size = 16

    def run(self, tasks: Sequence[ChunkTask]) -> Iterator[list[ReplayReport]]:
        yield from LocalBackend(0).run(tasks[:1])
        raise KeyboardInterrupt


class Chunked:
    """A backend that runs in this process and notes the size of each task it is given."""

    def __init__(self, chunk_size: int) -> None:
        self.chunk_size = chunk_size
        self.sizes: list[int] = []

    def run(self, tasks: Sequence[ChunkTask]) -> Iterator[list[ReplayReport]]:
        self.sizes += [len(task.ids) for task in tasks]
        yield from LocalBackend(0).run(tasks)


def test_a_run_is_cut_into_the_backends_chunks_unless_it_says_otherwise(store: Store) -> None:
    backend = Chunked(3)
    regress(store, RegressOptions(), backend)
    assert backend.sizes[0] == 3 and sum(backend.sizes) == len(GAMES)
    backend = Chunked(3)
    regress(store, RegressOptions(chunk_size=5), backend)
    assert backend.sizes[0] == 5 and sum(backend.sizes) == len(GAMES)


def test_named_run_resumes_and_can_be_compared_against(store: Store) -> None:
    whole = regress(store, RegressOptions(engine=VARIANT), LocalBackend(0))
    options = RegressOptions(engine=VARIANT, run="rebel-2", chunk_size=5)
    with pytest.raises(KeyboardInterrupt):
        regress(store, options, Interrupting())
    assert len(store.run_ids("rebel-2")) == 5
    resumed = regress(store, options, LocalBackend(0))
    assert (resumed.resumed, resumed.verified) == (5, len(GAMES) - 5)
    assert sorted(resumed.reports, key=lambda r: r.replay_id) == sorted(whole.reports, key=lambda r: r.replay_id)
    again = regress(store, options, LocalBackend(0))  # a finished run: nothing is verified again
    assert (again.resumed, again.verified) == (len(GAMES), 0)
    assert [r.replay_id for r in again.changed] == [r.replay_id for r in whole.changed]
    # A replay as of the run: the variant's verdict.
    changed = whole.changed[0].replay_id
    as_of = apb.AnnotatedReplay.FromString(store.get(changed, run="rebel-2").replay_blob)
    assert "KILL_REWARD" in as_of.violation_codes and "+variant." in as_of.engine_version
    assert "KILL_REWARD" not in apb.AnnotatedReplay.FromString(store.get(changed).replay_blob).violation_codes
    # The same variant against its own run: nothing changed; the current engine against it: the reverse.
    assert regress(store, RegressOptions(engine=VARIANT, against="rebel-2"), LocalBackend(0)).changed == []
    back = regress(store, RegressOptions(against="rebel-2"), LocalBackend(0))
    assert {r.replay_id for r in back.changed} == {r.replay_id for r in whole.changed}
    assert all(r.new_violations == () and r.vanished_violations for r in back.changed)
    # A run is made by one engine: resuming it with another is refused, --restart replaces it.
    with pytest.raises(RegressError, match="not by this engine"):
        regress(store, RegressOptions(run="rebel-2"), LocalBackend(0))
    fresh = regress(store, RegressOptions(run="rebel-2", restart=True), LocalBackend(0))
    assert fresh.resumed == 0 and fresh.changed == []
    assert [r.name for r in store.runs()] == ["rebel-2"]


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_cli(store: Store, capsys: pytest.CaptureFixture[str]) -> None:
    url = store.engine.url.render_as_string(hide_password=False)
    assert main(["regress", "--db", url, "--jobs", "0"]) == 0
    assert "unchanged" in capsys.readouterr().out
    assert main(["regress", "--db", url, "--jobs", "0", "--engine", VARIANT, "--json", "--run", "v"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["changed"] == len(doc["changed"]) > 0
    assert all(c["new_violations"][0]["code"] == "KILL_REWARD" for c in doc["changed"])
    assert main(["regress", "--db", url, "--jobs", "0", "--engine", VARIANT, "--run", "v"]) == 1
    out = capsys.readouterr().out
    assert "no divergent event: the game followed is the same" in out and "KILL_REWARD" in out
    assert main(["regress", "--db", url, "--list-runs"]) == 0
    assert capsys.readouterr().out.startswith(f"v: {len(GAMES)} replay(s)")


@pytest.mark.parametrize("store", ["sqlite"], indirect=True)
def test_an_interrupted_run_says_what_it_saved(store: Store, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after the first chunk: the message counts the replays the store holds for the run, not the progress
    bar's (a newcomer's interrupted run showed 64/222 when 144 were saved), and says how to resume."""

    class InterruptingLocal(Interrupting):
        def __init__(self, jobs: int) -> None:
            self.chunk_size = 5

    monkeypatch.setattr("service.regress.LocalBackend", InterruptingLocal)
    url = store.engine.url.render_as_string(hide_password=False)
    assert main(["regress", "--db", url, "--jobs", "0", "--run", "cut"]) == 130
    err = capsys.readouterr().err
    assert f"interrupted: 5 of {len(GAMES)} replay(s) saved in run 'cut'" in err, err
    assert "run `sgs-verify regress --run cut` again to resume" in err


def _dask_or_skip() -> None:
    try:
        import distributed  # noqa: F401
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip("dask.distributed is not installed (pip install -e '.[dev]'); CI requires it")


@pytest.mark.parametrize("store", [BACKENDS[1]], indirect=True)
def test_dask_cluster_gives_the_local_report(store: Store) -> None:
    _dask_or_skip()
    import distributed

    from service.regress_dask import DaskBackend

    dd: Any = distributed  # untyped library

    local = regress(store, RegressOptions(engine=VARIANT), LocalBackend(0))
    with dd.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                         dashboard_address=None) as cluster, dd.Client(cluster) as client:
        remote = regress(store, RegressOptions(engine=VARIANT, run="dask", chunk_size=4), DaskBackend(client))
        its_own = regress(store, RegressOptions(engine=VARIANT), DaskBackend(client))  # chunks of DASK_CHUNK
    key = lambda r: r.replay_id  # noqa: E731
    assert sorted(remote.reports, key=key) == sorted(local.reports, key=key)
    assert sorted(its_own.reports, key=key) == sorted(local.reports, key=key)
    assert len(store.run_ids("dask")) == len(GAMES)


# ---------------------------------------------------------------------------------------- the same report (issue 31)

# The comparison as it was before issue 31 (service/regress.py at 3aa18bf), verbatim but for the names.

def _ref_keyed(replay: apb.AnnotatedReplay) -> dict[tuple[int, bool, int], apb.Annotation]:
    """Annotations by (event index, derived, ordinal among the derived outcomes before that event)."""
    out: dict[tuple[int, bool, int], apb.Annotation] = {}
    seen: Counter[tuple[int, bool]] = Counter()
    for ann in replay.annotations:
        key = (ann.index, ann.derived)
        out[(ann.index, ann.derived, seen[key])] = ann
        seen[key] += 1
    return out


def _ref_status(ann: apb.Annotation | None) -> str:
    if ann is None:
        return ""
    name = apb.Status.Name(ann.status).removeprefix("STATUS_")
    return " ".join([name, *(v.code for v in ann.violations)])


def _ref_violations(replay: apb.AnnotatedReplay) -> Counter[ViolationAt]:
    out: Counter[ViolationAt] = Counter(ViolationAt(-1, False, v.code) for v in replay.header_violations)
    for ann in replay.annotations:
        for v in ann.violations:
            out[ViolationAt(ann.index, ann.derived, v.code)] += 1
    return out


def reference_compare(replay_id: str, stored: apb.AnnotatedReplay, new: apb.AnnotatedReplay) -> ReplayReport:
    old_v, new_v = _ref_violations(stored), _ref_violations(new)
    added = tuple(sorted((new_v - old_v).elements(), key=lambda v: (v.index, not v.derived, v.code)))
    gone = tuple(sorted((old_v - new_v).elements(), key=lambda v: (v.index, not v.derived, v.code)))
    old_k, new_k = _ref_keyed(stored), _ref_keyed(new)
    changes = []
    for key in sorted(old_k.keys() | new_k.keys(), key=lambda k: (k[0], not k[1], k[2])):
        a, b = _ref_status(old_k.get(key)), _ref_status(new_k.get(key))
        if a != b:
            changes.append(StatusChange(key[0], key[1], a, b))
    divergence = None
    for i in range(max(len(stored.annotations), len(new.annotations))):
        sa = stored.annotations[i] if i < len(stored.annotations) else None
        na = new.annotations[i] if i < len(new.annotations) else None
        if sa is None or na is None or (sa.index, sa.derived, sa.digest) != (na.index, na.derived, na.digest):
            at = na if na is not None else sa
            assert at is not None
            divergence = Divergence(at.index, at.derived, sa.digest.hex() if sa is not None else "",
                                    na.digest.hex() if na is not None else "")
            break
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


def reference_reports(store: Store, against: str = "", engine: str = "") -> list[ReplayReport]:
    """The reports as the implementation before issue 31 made them, kept here as the yardstick: every log and
    stored verdict read whole, the new replay built from ``Verifier.finish`` with every annotation a message,
    and the two compared annotation by annotation."""
    from service.regress import load_engine
    from verifier import Verifier, load_log

    ids = store.ids()
    logs = store.logs(ids)
    base = store.verdict_blobs(ids, against)
    if against:
        base.update(store.verdict_blobs([i for i in ids if i not in base], ""))
    version, variant = load_engine(engine)
    out = []
    for replay_id in ids:
        log = load_log(logs[replay_id])
        verifier = Verifier(log.header, None if variant is None else variant.ruleset(log.header))
        if variant is not None and verifier.game is not None:
            variant.prepare(verifier.game)
        verifier.follow(log.events)
        new = verifier.finish(replay_id)
        new.engine_version = version
        out.append(reference_compare(replay_id, apb.AnnotatedReplay.FromString(base[replay_id]), new))
    return sorted(out, key=lambda r: r.replay_id)


def _edited(replay: apb.AnnotatedReplay, how: int) -> bytes:
    """A stored verdict changed in one of the ways a regression run must see (or, the last two, encoded
    differently but the same replay)."""
    r = apb.AnnotatedReplay()
    r.CopyFrom(replay)
    mid = len(r.annotations) // 2
    if how == 0:
        r.annotations[mid].digest = bytes(len(r.annotations[mid].digest))
    elif how == 1:
        del r.annotations[-1]
    elif how == 2:
        r.header_violations.add(code="BAD_HEADER", message="edited")
    elif how == 3:
        r.result.winners.append(9)
    elif how == 4:
        r.final_digest = b"\x01" * 32
    elif how == 5:  # a run of statuses changed: log events and the outcomes derived before them
        anns = [apb.Annotation() for _ in r.annotations]
        for copy, ann in zip(anns, r.annotations, strict=True):
            copy.CopyFrom(ann)
        extra = apb.Annotation(index=anns[mid].index, derived=True, status=apb.STATUS_MISMATCH)
        anns[mid].status = apb.STATUS_ILLEGAL
        del r.annotations[:]
        r.annotations.extend([*anns[:mid], extra, *anns[mid:]])
        r.engine_version = "an older engine"  # (recorded, never compared)
    elif how == 6:
        r.annotations[mid].status = apb.STATUS_ILLEGAL
        r.annotations[mid].violations.add(code="SLASH_LIMIT", message="edited")
    elif how == 7:
        r.annotations.add().CopyFrom(r.annotations[-1])
    elif how == 8:
        del r.annotations[:]
    elif how == 9:
        r.result.scores[0].score += 1 if r.result.scores else 0
        r.followed = not r.followed
    elif how == 10:  # the annotations last (field order is not canonical): the same replay
        only = apb.AnnotatedReplay()
        only.annotations.extend(r.annotations)
        del r.annotations[:]
        return r.SerializeToString(deterministic=True) + only.SerializeToString(deterministic=True)
    elif how == 11:  # no head fields at all: the same replay without engine version and hash
        r.ClearField("engine_version")
        r.ClearField("log_sha256")
    return r.SerializeToString(deterministic=True)


EDITS = 12


def test_reports_are_those_of_the_implementation_before_issue_31(store: Store) -> None:
    """Comparing the annotations' bytes first must give exactly the report the annotation-by-annotation
    comparison gave: on unchanged replays, on the variant's, and on stored verdicts edited every way."""
    from sqlalchemy import update

    from storage.models import Verdict

    ids = store.ids()
    for how, replay_id in enumerate(ids[:EDITS]):
        stored = apb.AnnotatedReplay.FromString(store.verdict_blobs([replay_id])[replay_id])
        with store.transaction(write=True) as session:
            session.execute(update(Verdict).where(Verdict.replay_id == replay_id, Verdict.run == "")
                            .values(replay_blob=_edited(stored, how)))
    key = lambda r: r.replay_id  # noqa: E731
    for engine in ("", VARIANT):
        got = sorted(regress(store, RegressOptions(engine=engine, chunk_size=5), LocalBackend(0)).reports, key=key)
        assert got == reference_reports(store, engine=engine)
    plain = {r.replay_id: r for r in reference_reports(store)}
    assert [plain[i].changed for i in ids[:EDITS]] == [True] * 10 + [False] * 2
    assert any(c.derived for c in plain[ids[5]].status_changes)
    # A named run stores the verdicts the replays' full encoding gives, and is compared against the same way.
    regress(store, RegressOptions(engine=VARIANT, run="v"), LocalBackend(0))
    for replay_id, blob in store.verdict_blobs(ids, "v").items():
        log = store.logs([replay_id])[replay_id]
        from service.regress import reverify

        assert blob == reverify(replay_id, log, VARIANT).SerializeToString(deterministic=True)
    got = sorted(regress(store, RegressOptions(against="v"), LocalBackend(0)).reports, key=key)
    assert got == reference_reports(store, against="v")


RUN_STATUSES = (apb.STATUS_OK, apb.STATUS_ILLEGAL, apb.STATUS_MISMATCH)  # of the outcomes of a run, in turn


def _with_derived_runs(replay: apb.AnnotatedReplay, how: int) -> apb.AnnotatedReplay:
    """The replay with runs of outcomes derived before one event (two or three before the same event, which the
    self-play games never have), then changed past the first of a run in one of five ways (``how`` 0: none)."""
    r = apb.AnnotatedReplay()
    r.CopyFrom(replay)
    anns = [apb.Annotation() for _ in r.annotations]
    for copy, ann in zip(anns, r.annotations, strict=True):
        copy.CopyFrom(ann)
    out: list[apb.Annotation] = []
    for i, ann in enumerate(anns):
        if i % 50 == 10:  # a run of derived outcomes before every 50th event
            for n in range(2 + (i // 50) % 2):
                out.append(apb.Annotation(index=ann.index, derived=True, status=RUN_STATUSES[n],
                                          digest=bytes([n]) * 8))
        out.append(ann)
    third = len(out) // 3
    runs = [i for i in range(third, len(out)) if out[i].derived and out[i - 1].derived]
    at = runs[0] if runs else third
    if how == 1:  # the second outcome of a run: another status and a violation
        out[at].status = apb.STATUS_MISMATCH
        out[at].violations.add(code="HP_MISMATCH", message="edited")
    elif how == 2:  # the second outcome of a run is gone
        del out[at]
    elif how == 3:  # one more outcome at the end of a run
        out.insert(at + 1, apb.Annotation(index=out[at].index, derived=True, status=apb.STATUS_ILLEGAL))
    elif how == 4:  # every digest from the second outcome of a run on
        for ann in out[at:]:
            ann.digest = b"\xff" + ann.digest[1:]
    elif how == 5:  # the middle of a run of three said to come before the event before: the third's ordinal moves
        at = next(i for i in range(third, len(out) - 1) if out[i - 1].derived and out[i].derived and out[i + 1].derived)
        out[at].index -= 1
    del r.annotations[:]
    r.annotations.extend(out)
    return r


def test_compare_from_the_first_differing_annotation_is_the_reference_compare(corpus: list[pb.GameLog]) -> None:
    """The annotations both verdicts share from the first on are left out of the comparison: where outcomes
    derived before one event are split between the shared part and the rest, each key's ordinal among them
    moves by the same number on both sides, and the report is still the reference's (in both directions)."""
    from service.regress import compare_encoded
    from verifier import verify
    from verifier.replay import Finished

    for log in corpus[:4]:
        plain = verify(log)  # (the current engine, as a stored verdict)
        for how in range(6):
            for stored, new in ((_with_derived_runs(plain, 0), _with_derived_runs(plain, how)),
                                (_with_derived_runs(plain, how), _with_derived_runs(plain, 0))):
                only = apb.AnnotatedReplay()
                only.annotations.extend(new.annotations)
                summary = apb.AnnotatedReplay()
                summary.CopyFrom(new)
                summary.ClearField("engine_version")
                summary.ClearField("log_sha256")
                del summary.annotations[:]
                finished = Finished(new.engine_version, new.log_sha256, summary,
                                    only.SerializeToString(deterministic=True), len(new.annotations), [])
                got = compare_encoded("r", stored.SerializeToString(deterministic=True), finished)
                assert got == reference_compare("r", stored, new)
                assert got.changed == (how != 0)


def _encoded(replay: apb.AnnotatedReplay, items: Sequence[bytes]) -> tuple[bytes, Any]:
    """A verdict's canonical layout with the annotations given as bytes (head, the run, the rest), and the same
    as a finished verification."""
    from sgsverify.internal import wire_views_pb2 as wv
    from verifier.replay import Finished

    head = apb.AnnotatedReplay(engine_version=replay.engine_version, log_sha256=replay.log_sha256)
    summary = apb.AnnotatedReplay()
    summary.CopyFrom(replay)
    summary.ClearField("engine_version")
    summary.ClearField("log_sha256")
    del summary.annotations[:]
    run = wv.Field3(items=list(items)).SerializeToString()
    blob = head.SerializeToString(deterministic=True) + run + summary.SerializeToString(deterministic=True)
    return blob, Finished(replay.engine_version, replay.log_sha256, summary, run, len(items), [])


def _in_other_bytes(ann: apb.Annotation) -> bytes:
    """The same annotation in other bytes: its index written a second time, as a varint one byte too long."""
    varint = bytearray()
    value = ann.index
    while value >= 0x80:
        varint.append(value & 0x7F | 0x80)
        value >>= 7
    varint += bytes([value | 0x80, 0])
    other = ann.SerializeToString(deterministic=True) + b"\x08" + bytes(varint)
    assert apb.Annotation.FromString(other) == ann
    return other


def _annotations(plain: apb.AnnotatedReplay, how: int) -> list[apb.Annotation]:
    """Copies of the replay's annotations; for ``how`` 6, with the annotation a third of the way and 12 on said
    to be a second one of the event before it, an illegal one (two with the same key)."""
    anns = [apb.Annotation() for _ in plain.annotations]
    for copy, ann in zip(anns, plain.annotations, strict=True):
        copy.CopyFrom(ann)
    at = len(anns) // 3
    if how == 6:
        anns[at + 12].index = anns[at + 11].index
        anns[at + 12].status = apb.STATUS_ILLEGAL
    return anns


def _diverged(plain: apb.AnnotatedReplay, how: int) -> list[bytes]:
    """The replay's annotations as bytes (those of ``_annotations``), changed past a third of the game in one of
    seven ways, each a state that diverges there (every digest from it on): with statuses changed around it,
    with annotations the same in other bytes before it and at it, or keys moved (for 6: a third annotation of
    that key before the two, so that the two pair off with others by key than by position)."""
    anns = _annotations(plain, how)
    at = len(anns) // 3
    for ann in anns[at:]:
        ann.digest = b"\xee" + ann.digest[1:]
    items = [a.SerializeToString(deterministic=True) for a in anns]
    if how == 1:  # a status changed just before the divergence, and two after it
        for i in (at - 1, at + 5, at + 40):
            anns[i].status = apb.STATUS_ILLEGAL
            anns[i].violations.add(code="SLASH_LIMIT", message="edited")
            items[i] = anns[i].SerializeToString(deterministic=True)
    elif how == 2:  # before the divergence, an annotation the same in other bytes (its digest unchanged)
        items[at - 2] = _in_other_bytes(anns[at - 2])
    elif how == 3:  # the first diverging annotation also in other bytes, and one well after it
        items[at] = _in_other_bytes(anns[at])
        items[at + 30] = _in_other_bytes(anns[at + 30])
    elif how in (4, 6):  # a key moved after the divergence (the annotations no longer pair off by position)
        anns[at + 10].index = anns[at + 11].index if how == 6 else anns[at + 10].index + 1
        anns[at + 10].status = apb.STATUS_ILLEGAL
        items[at + 10] = anns[at + 10].SerializeToString(deterministic=True)
    elif how == 5:  # the divergence's own annotation with another status too
        anns[at].status = apb.STATUS_MISMATCH
        items[at] = anns[at].SerializeToString(deterministic=True)
    return items


def test_diverged_states_are_compared_as_the_reference_compares(corpus: list[pb.GameLog]) -> None:
    """Where the state diverges, every annotation after it differs in its digest: only those that differ in more,
    and the first that differs in its digest only, are compared. The report is still the reference's, in both
    directions, with statuses changed around the divergence, annotations the same in other bytes before and at
    it, and keys that no longer pair off."""
    from service.regress import compare_encoded
    from verifier import verify

    for log in corpus[:3]:
        plain = verify(log)
        for how in range(7):
            same = [a.SerializeToString(deterministic=True) for a in _annotations(plain, how)]
            changed = _diverged(plain, how)
            for old_items, new_items in ((same, changed), (changed, same)):
                blob, _ = _encoded(plain, old_items)
                new_blob, finished = _encoded(plain, new_items)
                got = compare_encoded("r", blob, finished)
                want = reference_compare("r", apb.AnnotatedReplay.FromString(blob),
                                         apb.AnnotatedReplay.FromString(new_blob))
                assert got == want, how
                assert got.first_divergence is not None
                assert got.first_divergence.index == plain.annotations[len(plain.annotations) // 3].index
