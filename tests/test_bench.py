"""The speed benchmark runs (small corpus, one round) and reports every figure it promises.

No timing is asserted: the machine's speed varies; only the report's shape and sanity are checked."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_speed_benchmark_reports_rates_ratios_and_memory() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "speed.py"), "--games", "1", "--repeat", "1",
                           "--json"], capture_output=True, text=True, timeout=240, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["games"] == 4  # one per player count: 4, 5, 8, 10
    assert report["events"] > 0
    rates = report["events_per_second"]
    assert set(rates) == {"decode", "decode+touch", "verify"}
    assert all(rate > 0 for rate in rates.values())
    assert report["verify_slowdown_vs_decode_touch"] > 0
    assert set(report["peak_kib_per_game"]) == {"4", "5", "8", "10"}
    assert isinstance(report["target_met"], bool)
    heg = report["hegemony"]
    assert heg["games"] == 4 and heg["events"] > 0 and heg["events_per_second"]["verify"] > 0
    assert report["core"] in ("compiled (mypyc)", "interpreted")


def test_speed_benchmark_prints_the_profile() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "speed.py"), "--games", "1", "--repeat", "1",
                           "--top", "5"], capture_output=True, text=True, timeout=240, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert "ratios: verify/decode" in done.stdout
    assert "profile of (c)" in done.stdout
    # The driver's own functions where it runs interpreted; a compiled core's are counted in their callers,
    # and the interpreted rules packages (the cards' effects) show.
    compiled = "engine core compiled" in done.stdout
    assert ("tricks.py" in done.stdout or "basic.py" in done.stdout) if compiled else "replay.py" in done.stdout


def test_pause_penalty_benchmark_reports_each_pause_against_none() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "pause_penalty.py"), "--games", "2", "--rounds", "1",
                           "--pauses", "0,1"], capture_output=True, text=True, timeout=240, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.strip().endswith("x") and "ms" in line]
    assert [r[0] for r in rows] == ["0ms", "1ms"]
    assert rows[0][2] == "1.00x" and float(rows[1][1]) > 0


def test_service_benchmark_runs_every_phase_and_reports_its_ratio(tmp_path: Path) -> None:
    out = tmp_path / "service.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "service_bench.py"), "--games", "3", "--clients", "1",
                           "--rounds", "1", "--in-flight", "2", "--json", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = {r["phase"]: r for r in json.loads(out.read_text())}
    paths = ("whole-log", "upload stream", "live stream", "whole-log bulk", "upload bulk")
    # each path also run against bench/grpc_floor.py's server, which only answers
    assert set(results) == {"offline check", "idle server", *paths, *(f"floor: {p}" for p in paths)}
    for phase in paths:
        for r in (results[phase], results[f"floor: {phase}"]):
            assert r["games"] == 3 and r["events"] == results["offline check"]["events"]
            assert r["events_per_s"] > 0 and r["ratio_to_offline"] > 0
        assert results[phase]["cpu_us_per_event"] > 0  # (the server's and its workers', off their CPU clocks)
        # the share of the floor's best ratio the phase kept (issue 31), beside that best
        assert results[phase]["floor_best_ratio"] > 0 and results[phase]["kept_of_floor_best"] > 0
    assert results["upload bulk"]["in_flight"] == 2 and results["whole-log"]["in_flight"] is None
    assert "streamed ingest, one client (upload_many, 2 in flight" in done.stdout
    assert "the transport's floor" in done.stdout
    assert "kept of the floor's best, one client: whole log " in done.stdout
    assert ", upload " in done.stdout and ", live " in done.stdout



def test_regress_benchmark_pairs_every_round_with_its_own_check() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "regress_bench.py"), "--games", "12", "--rounds", "2",
                           "--pg", "", "--no-dask"], capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]  # (1: a path's report was wrong)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["games"] == 12 and report["rounds"] == 2
    paths = {row["path"]: row for row in report["rows"]}
    assert set(paths) == {f"regress local {report['cores']} procs, sqlite", "regress variant + store run, sqlite"}
    for row in paths.values():
        assert len(row["rounds"]) == 2 and row["as_expected"]
        for r in row["rounds"]:  # each round against the check measured around it
            assert r["check_rate"] > 0 and r["check_cpu_per_replay"] > 0 and r["rate"] > 0
            assert r["per_core"] == r["rate"] / (row["workers"] * r["check_rate"])
        low, high = row["per_core_range"]
        assert low <= row["per_core"] <= high
    assert paths["regress variant + store run, sqlite"]["expected"] > 0
    assert paths["regress variant + store run, sqlite"]["changed"] == \
        [paths["regress variant + store run, sqlite"]["expected"]] * 2
    assert "check's CPU a replay over the 4 baselines" in done.stdout


def test_regress_instructions_benchmark_runs_every_path_and_reads_callgrinds_total(tmp_path: Path) -> None:
    """Each path's process as the benchmark runs it under valgrind (here without: the counting is valgrind's),
    from a prepared folder; and the total read off a callgrind output file."""
    sys.path.insert(0, str(ROOT / "bench"))
    import regress_instructions as bench

    bench.prepare(tmp_path / "template", 3)
    for path in bench.PATHS:
        run = tmp_path / path.replace(", ", "-").replace(" ", "-")
        shutil.copytree(tmp_path / "template", run)
        done = subprocess.run([sys.executable, str(ROOT / "bench" / "regress_instructions.py"), "--child", path,
                               "--folder", str(run)], capture_output=True, text=True, timeout=240, cwd=ROOT,
                              check=False)
        assert done.returncode == 0, path + ": " + done.stderr[-2000:]  # (asserts the run's report in the process)
    variant = tmp_path / "regress-variant" / "games.sqlite3"
    with sqlite3.connect(variant) as conn:  # the variant's run stored its verdicts
        assert conn.execute("SELECT count(*) FROM verdicts WHERE run = 'variant'").fetchone() == (3,)
    sample = "version: 1\ncreator: callgrind-3.19.0\ncmd: python\nevents: Ir\nfn=(1) main\n5 100\nsummary: 123456789\n"
    assert bench.instructions(sample) == 123456789
    assert bench.instructions(sample.replace("summary:", "totals:")) == 123456789
    assert bench.instructions("events: Ir\n") is None


@pytest.mark.postgres
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_regress_benchmark_stopped_by_a_signal_removes_what_it_made(signum: int, tmp_path: Path) -> None:
    """Issue 43: SIGTERM left its PostgreSQL database (sgsv_bench_…) behind, and every run its SQLite folder.
    Stopped while it runs, it drops the one and removes the other, and says so."""
    from tests.service.conftest import PG_HOST, PG_PORT, require_pg

    user = require_pg()
    admin = f"postgresql+psycopg://{user}@{PG_HOST}:{PG_PORT}/test"
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "regress_bench.py"), "--games", "12", "--rounds",
                             "1000", "--pg", admin, "--no-dask"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=ROOT, env={**os.environ, "TMPDIR": str(tmp_path)}, start_new_session=True)
    name = ""
    left: list[tuple[int]] = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # (the database is made after the games are played)
            if line.startswith("created database "):
                name = line.split()[-1]
                break
        assert name.startswith("sgsv_bench_"), proc.communicate(timeout=300)
        assert len(list(tmp_path.glob("regress-bench-*"))) == 1
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if name:
            with psycopg.connect(admin.replace("+psycopg", ""), autocommit=True) as conn:
                left = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchall()
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # (for the next run, if it failed)
    assert proc.returncode == 128 + signum, err[-2000:]
    assert f"regress_bench: stopped by {signal.Signals(signum).name}; what it made is removed" in err
    assert "Traceback" not in err
    assert not left, f"the database {name} was left behind"
    assert list(tmp_path.glob("regress-bench-*")) == []
