"""Regression-run speed and the 1,000-game acceptance run (issue 7).

    .venv/bin/python bench/regress_bench.py [--games 1000] [--rounds 3] [--pg postgresql+psycopg://postgres@127.0.0.1/test]

Plays --games self-play games (4–10 players, fixed seeds), stores them in a fresh SQLite file and,
if --pg names a reachable server, a fresh PostgreSQL database (created and dropped here). Then,
measured in the same run:

  check        offline verification of every log in this process (one core): verifier.verify, the baseline
               (under the engine the path runs: the variant's rows against `check` under the variant)
  local        `regress` under the same engine, local worker processes (every core), per store
  dask         the same on a local 2-worker Dask cluster (PostgreSQL only)
  variant      `regress` under tests/regress_variant.py (2 cards for a rebel kill), local

and prints replays/s for each and the ratio per core: replays/s per worker process
(each path's rate divided by its number of workers and by `check`'s rate; 1.0 is the engine's own speed on
every core, issue 31 asks for at least 0.8). On a machine that others share, the wall clock gives a path less
than its cores; so the CPU the run took (this process, its worker processes and Dask's, off the operating
system's accounting; the database server's is not counted, on either side) is set beside it: "cpu/core" is
`check`'s CPU per replay over the run's (needs psutil, which Dask brings).

Each path is measured --rounds times, and each time against its own `check`: half the games verified just
before the path runs and the other half just after (every game once), so that the baseline is taken over the
same minutes as what it is compared with. A shared virtual machine's speed drifts (here, `check` of the same
100 games took 7.7 to 15.2 ms a game within one minute): one `check` at the start, set against runs minutes
later, measured the drift as much as the run. The table gives each path's median ratio over its rounds and
their range. The acceptance checks, every round: the same engine reports no change on every path; the variant
reports exactly the replays that record a kill reward, each with a new KILL_REWARD at or before its first
kill-reward draw (the changed reward can make the state diverge, and be flagged, an event earlier).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from clients.selfplay import play_game  # noqa: E402
from service.regress import LocalBackend, RegressOptions, RegressResult, load_engine, regress  # noqa: E402
from service.work import VerifyJob, run_job  # noqa: E402
from sgsverify.v1 import game_log_pb2 as pb  # noqa: E402
from storage import migrate  # noqa: E402
from storage.database import create_database_engine, sqlite_url  # noqa: E402
from storage.store import Store, SubmissionMetadata  # noqa: E402
from tools.ending import signals_interrupt  # noqa: E402
from verifier import Verifier, verify  # noqa: E402

VARIANT = "tests.regress_variant:REBEL_REWARD_TWO"


def fill(url: str, blobs: list[bytes]) -> Store:
    engine = create_database_engine(url)
    migrate.upgrade(engine)
    engine.dispose()
    store = Store.open(url)
    for data in blobs:
        store.save(run_job(VerifyJob(data, SubmissionMetadata(tournament="bench"), 10**7, canonical=True)))
    return store


def tree_cpu() -> float | None:
    """CPU seconds of this process and every process under it, those that ended included (counted in the
    process that waited for them: a pool's workers in the fork server); None without psutil."""
    try:
        import psutil  # type: ignore[import-untyped]  # (untyped: Dask's dependency, no stubs installed)
    except ImportError:
        return None
    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.Error:  # (ended meanwhile: counted in its parent's children times)
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


@dataclass(slots=True)
class Check:
    """Offline `check` of some games in this process: CPU and wall-clock seconds."""

    games: int = 0
    cpu: float = 0.0
    wall: float = 0.0

    def add(self, other: Check) -> Check:
        return Check(self.games + other.games, self.cpu + other.cpu, self.wall + other.wall)


def check(blobs: list[bytes], engine: str = "") -> Check:
    """`check` of the games (verifier.verify, what `sgs-verify check` does per file) under ``engine``: the
    current one, or a variant (load_engine), verified as the run verifies with it — its ruleset, and each game
    prepared — for a run under a changed engine is set against that engine's own speed, not the current one's
    (the test variant's rule is Python called on every death and a class made for every game: about 3 % more
    time than the compiled engine alone; a developer's real change would be compiled in, on both sides)."""
    _, variant = load_engine(engine)
    wall, cpu = time.perf_counter(), time.process_time()
    for data in blobs:
        log = pb.GameLog.FromString(data)
        if variant is None:
            verify(log)
            continue
        verifier = Verifier(log.header, variant.ruleset(log.header))
        if verifier.game is not None:
            variant.prepare(verifier.game)
        verifier.follow(log.events)
        verifier.finish(hashlib.sha256(log.SerializeToString(deterministic=True)).hexdigest())
    return Check(len(blobs), time.process_time() - cpu, time.perf_counter() - wall)


def paired(blobs: list[bytes], workers: int, run: Callable[[], RegressResult],
           engine: str = "") -> tuple[dict[str, float], RegressResult]:
    """One round of a path against its own `check` under the same engine: half the games checked before it,
    half after."""
    before = check(blobs[0::2], engine)
    cpu_at = tree_cpu()
    res = run()
    cpu_after = tree_cpu()
    base = before.add(check(blobs[1::2], engine))
    check_rate, check_cpu = base.games / base.wall, base.cpu / base.games
    fig = {"rate": res.verified / res.seconds, "check_rate": check_rate, "check_cpu_per_replay": check_cpu}
    fig["per_core"] = fig["rate"] / (workers * check_rate)
    if cpu_at is not None and cpu_after is not None:
        fig["cpu_per_replay"] = (cpu_after - cpu_at) / res.verified
        fig["cpu_per_core"] = check_cpu / fig["cpu_per_replay"]
    return fig, res


def expected_changes(logs: list[pb.GameLog]) -> dict[str, int]:
    out = {}
    for log in logs:
        idx = [i for i, ev in enumerate(log.events) if ev.WhichOneof("kind") == "draw_cards"
               and ev.draw_cards.reason == pb.DRAW_REASON_KILL_REWARD]
        if idx:
            out[hashlib.sha256(log.SerializeToString(deterministic=True)).hexdigest()] = idx[0]
    return out


def check_variant(result: RegressResult, expected: dict[str, int]) -> bool:
    """Exactly the replays with a rebel-kill reward changed, each with a new KILL_REWARD at or before
    its first reward draw (the state may already diverge, and be flagged, an event earlier)."""
    got = {r.replay_id: r for r in result.changed}
    return set(got) == set(expected) and all(
        any(v.code == "KILL_REWARD" and v.index <= first for v in got[i].new_violations)
        for i, first in expected.items())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3, help="each path's runs, each against its own check")
    parser.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test",
                        help="admin URL of a PostgreSQL server ('' to skip PostgreSQL)")
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--dask-as-it-comes", action="store_true",
                        help="the Dask cluster with Dask's defaults, not docs/service.md's (QUIET_CONFIG)")
    args = parser.parse_args()
    t = time.perf_counter()
    logs = [play_game(seed, 4 + seed % 7) for seed in range(args.games)]
    blobs = [log.SerializeToString(deterministic=True) for log in logs]
    print(f"played {len(logs)} games ({sum(len(x.events) for x in logs)} events) in {time.perf_counter() - t:.0f}s",
          flush=True)
    check(blobs)  # (warm: the engine's first games, imports and caches, are no path's baseline)
    check(blobs[:50], VARIANT)
    expected = expected_changes(logs)
    jobs = os.cpu_count() or 1
    stores: list[tuple[str, Store]] = []
    rows: dict[str, dict[str, Any]] = {}
    ok = True

    def measure(path: str, workers: int, run: Callable[[], RegressResult], accept: Callable[[RegressResult], bool],
                want: int, engine: str = "") -> None:
        nonlocal ok
        fig, res = paired(blobs, workers, run, engine)
        good = accept(res)
        ok &= good
        row = rows.setdefault(path, {"path": path, "workers": workers, "expected": want, "rounds": []})
        row["rounds"].append({**fig, "changed": len(res.changed), "as_expected": good})
        print(f"  round {len(row['rounds'])}: {path}: per core {fig['per_core']:.2f}"
              + (f" / cpu {fig['cpu_per_core']:.2f}" if "cpu_per_core" in fig else "")
              + f" (check {fig['check_cpu_per_replay'] * 1000:.2f} ms a replay)", flush=True)

    def unchanged(res: RegressResult) -> bool:
        return not res.changed and not res.failed

    # What the run makes (the SQLite file's folder, the PostgreSQL database) is made inside the try, and removed
    # however the run ends: an error, Ctrl-C or SIGTERM (tools/ending.py), while it fills them too.
    tmp = Path(tempfile.mkdtemp(prefix="regress-bench-"))
    pg_name = admin = ""
    try:
        stores.append(("sqlite", fill(sqlite_url(tmp / "bench.sqlite3"), blobs)))
        if args.pg:
            import psycopg

            admin = args.pg.replace("postgresql+psycopg://", "postgresql://")
            pg_name = f"sgsv_bench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{pg_name}"')
            print(f"created database {pg_name}", flush=True)
            stores.append(("postgresql", fill(args.pg.rsplit("/", 1)[0] + "/" + pg_name, blobs)))
        for rnd in range(args.rounds):
            for name, store in stores:
                def same(store: Store = store) -> RegressResult:
                    return regress(store, RegressOptions(), LocalBackend(jobs))

                # (a run of its own each round: a named run already stored would be resumed, not verified)
                def variant(store: Store = store, rnd: int = rnd) -> RegressResult:
                    return regress(store, RegressOptions(engine=VARIANT, run=f"variant{rnd}"), LocalBackend(jobs))

                measure(f"regress local {jobs} procs, {name}", jobs, same, unchanged, 0)
                measure(f"regress variant + store run, {name}", jobs, variant,
                        lambda res: check_variant(res, expected), len(expected), VARIANT)
        if not args.no_dask and len(stores) > 1:
            import dask
            import distributed

            from service.regress_dask import QUIET_CONFIG, DaskBackend

            dd: Any = distributed
            # The cluster as docs/service.md has one set up: its workers import the engine as they start
            # (--preload: once in a worker's life, not in every run; 0.45 s of CPU a worker, cold), and Dask's
            # own periodic work is turned down (QUIET_CONFIG; --dask-as-it-comes leaves Dask's defaults).
            quiet = {} if args.dask_as_it_comes else QUIET_CONFIG
            with dask.config.set(quiet), \
                    dd.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                    dashboard_address=None, preload=["service.regress"]) as cluster, \
                    dd.Client(cluster) as client:
                for _ in range(args.rounds):
                    measure("regress dask 2 workers, postgresql", 2,
                            lambda: regress(stores[1][1], RegressOptions(), DaskBackend(client)), unchanged, 0)
    finally:
        for _, store in stores:
            store.close()
        if pg_name:
            import psycopg

            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)')
        shutil.rmtree(tmp, ignore_errors=True)
    checks = [r["check_cpu_per_replay"] for row in rows.values() for r in row["rounds"]]
    print(f"check's CPU a replay over the {len(checks)} baselines: {min(checks) * 1000:.2f}-"
          f"{max(checks) * 1000:.2f} ms (median {median(checks) * 1000:.2f})")
    print(f"{'path':<44}{'replays/s':>10}{'per core':>16}{'cpu/core':>16}  changes (expected)")
    for row in rows.values():
        rounds = row["rounds"]
        for key in ("rate", "per_core", "cpu_per_core"):
            if all(key in r for r in rounds):
                row[key] = median(r[key] for r in rounds)
                row[f"{key}_range"] = [min(r[key] for r in rounds), max(r[key] for r in rounds)]
        row["changed"] = [r["changed"] for r in rounds]
        row["as_expected"] = all(r["as_expected"] for r in rounds)

        def spread(key: str, row: dict[str, Any] = row) -> str:
            if key not in row:
                return f"{'-':>16}"
            low, high = row[f"{key}_range"]
            return f"{row[key]:>6.2f} ({low:.2f}-{high:.2f})"

        print(f"{row['path']:<44}{row['rate']:>10.1f}{spread('per_core'):>16}{spread('cpu_per_core'):>16}"
              f"  {'/'.join(map(str, row['changed']))} ({row['expected']}) {'ok' if row['as_expected'] else 'WRONG'}")
    print(json.dumps({"games": args.games, "cores": jobs, "rounds": args.rounds, "rows": list(rows.values())}))
    return 0 if ok else 1


if __name__ == "__main__":
    with signals_interrupt("regress_bench"):
        raise SystemExit(main())
