"""Benchmark of the verification service against offline `sgs-verify check`, in one run.

    .venv/bin/python bench/service_bench.py                 # defaults: 80 games, clients 1 and 4
    .venv/bin/python bench/service_bench.py --games 200 --clients 1,2,4,8 --json out.json

What it does:
1. plays GAMES self-play games (6 players), writes them to files and runs `sgs-verify check`
   on them: its own events/s figure is the offline speed;
2. starts `sgs-verify serve` (a separate process, embedded SQLite in a temporary folder,
   --workers WORKERS) and, for each client count N, submits the games
   - whole-log: VerifyLog, one message per game,
   - upload: UploadLog, client streams of event batches,
   - live: VerifyLive, bidirectional streams of event batches (annotations back per batch),
   with N concurrent clients (threads, one channel each), every game stored;
   and, as one client submitting many games does (`sgs-verify submit`, the client library's
   verify_many / upload_many), whole-log and upload "bulk": one client, one channel, --in-flight calls going at
   once (the library's default);
3. while each phase runs, probes the server's event loop with a health Check every 20 ms and
   reports the latency (p50, p99, max): a blocked event loop shows up there.
Each phase also reports the CPU time the server and its worker processes spent per event (from /proc; "server":
the server process alone, the rest is its workers), and
offline's CPU per event (load_log + verify in this process) over it: CPU time hardly depends on what else the
machine runs, so that ratio is the steadier one on a shared machine.
Offline and the phases run in --rounds rounds (3), taking turns; the best round of each counts (and the least
CPU per event), so a slow spell of the machine falls on all of them, not on one.
Each phase is reported in games/s and events/s and as a ratio to the offline speed (per core: a phase
with N clients, or one client with N calls in flight, is compared with N times the offline speed, up to the
machine's cores), with the batch sizes it used. Against the transport's floor (each phase's calls to a server
that only answers, bench/grpc_floor.py), each phase's "best x off" is the ratio a server of no cost of its own
would keep and "kept" (--json: kept_of_floor_best) the share of it the phase kept: the service's own part (issue
31 asks for 0.9 at one client on each path), printed per path at one client below the table. The streamed
ingest of one client (upload bulk) is printed against issue 14's 100,000 events/s. ``--check`` exits 1 when a
phase keeps less than --min-ratio (0.7) of it (a benchmark, not a test: it is never run by the test suite, timing
does not belong there).
Every phase submits logs with a distinct recorder, so no submission is answered from the store.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from grpc_floor import FloorServer, record_answers  # noqa: E402

from clients.client import DEFAULT_BATCH_SIZE, DEFAULT_IN_FLIGHT, Metadata, Submission, VerifierClient  # noqa: E402
from clients.selfplay import play_game  # noqa: E402
from sgsverify.v1 import game_log_pb2 as pb  # noqa: E402
from tools.ending import signals_interrupt  # noqa: E402
from verifier import load_log, verify  # noqa: E402


@dataclass
class Result:
    phase: str
    clients: int
    games: int
    events: int
    seconds: float
    games_per_s: float
    events_per_s: float
    ratio_to_offline: float
    batch: int | None = None
    in_flight: int | None = None  # the bulk phases': calls going at once from the one client
    # CPU per event of the server and its workers (offline: of verifying), and offline's over it.
    cpu_us_per_event: float | None = None
    server_cpu_us_per_event: float | None = None  # of that, the server process's own (the rest: its workers)
    cpu_ratio_to_offline: float | None = None
    health_p50_ms: float | None = None
    health_p99_ms: float | None = None
    health_max_ms: float | None = None
    # CPU per event of the client side (this process: the client library's calls, gRPC's threads; and the health
    # probe's, a few calls a phase)
    client_cpu_us_per_event: float | None = None
    # Against the transport's floor (bench/grpc_floor.py): the ratio to offline a server of no cost of its own would
    # keep if nothing overlapped ("best x off"), and the share of it this phase kept ("kept of the floor's best").
    floor_best_ratio: float | None = None
    kept_of_floor_best: float | None = None


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu(pid: int) -> float:
    """CPU seconds of one process (all its threads): read from its CPU-time clock, to the nanosecond, where Linux
    has one for other processes (clock id MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)); else from /proc in clock
    ticks (10 ms: coarse for a phase of a fraction of a second)."""
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except OSError:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_tree_cpu(pid: int, children: bool = True) -> float | None:
    """CPU seconds (user + system) used so far by a process and its children (the server and its worker
    processes; ``children=False``: the process alone), from /proc; None where there is no /proc. CPU time,
    unlike wall time, hardly depends on what else the machine runs."""
    total = 0.0
    seen: set[int] = set()
    todo = [pid]
    try:
        while todo:
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            try:
                total += process_cpu(p)
                if not children:
                    break
                for task in Path(f"/proc/{p}/task").iterdir():
                    todo += [int(c) for c in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue  # (a process that ended meanwhile)
    except OSError:
        return None
    return total if seen else None


class HealthProbe:
    """Health checks every ``interval`` seconds on their own channel, timing each."""

    def __init__(self, address: str, interval: float = 0.02) -> None:
        self.client = VerifierClient(address)
        self.interval = interval
        self.latencies: list[float] = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stopping.is_set():
            started = time.perf_counter()
            self.client.health()
            self.latencies.append(time.perf_counter() - started)
            self.stopping.wait(self.interval)

    def __enter__(self) -> HealthProbe:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join()
        self.client.close()

    def summary(self) -> tuple[float, float, float]:
        ms = sorted(x * 1000 for x in self.latencies) or [0.0]
        return statistics.median(ms), ms[min(len(ms) - 1, int(len(ms) * 0.99))], ms[-1]


def stamped(logs: list[pb.GameLog], label: str) -> list[pb.GameLog]:
    out = []
    for log in logs:
        copy = pb.GameLog()
        copy.CopyFrom(log)
        copy.header.recorder = f"bench {label}"
        out.append(copy)
    return out


def offline(blobs: list[bytes]) -> tuple[float, int]:
    """The offline speed as `sgs-verify check` itself reports it (its own timing, which leaves
    out interpreter start-up), on the same logs written to files."""
    events = 0
    for data in blobs:
        events += len(load_log(data).events)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, data in enumerate(blobs):
            path = Path(tmp) / f"game{i:04d}.pb"
            path.write_bytes(data)
            paths.append(str(path))
        out = subprocess.run([sys.executable, "-m", "clients.cli", "check", "-q", *paths], capture_output=True,
                             text=True, cwd=ROOT)
    match = re.search(r"([\d,]+) events/s", out.stdout)
    if match:
        rate = float(match.group(1).replace(",", ""))
        return events / rate, events
    # `check` did not say (an older or newer output format): time the same work here.
    return offline_in_process(blobs), events


def offline_in_process(blobs: list[bytes]) -> float:
    """Wall seconds of what `check` does per log (load_log + verify), in this process (the later rounds)."""
    started = time.perf_counter()
    for data in blobs:
        verify(load_log(data))
    return time.perf_counter() - started


def offline_cpu(blobs: list[bytes]) -> float:
    """CPU microseconds per event of what `check` does per log (load_log + verify), in this process."""
    events = 0
    best = float("inf")
    for _ in range(2):
        started = time.process_time()
        for data in blobs:
            log = load_log(data)
            verify(log)
            events += len(log.events)
        best = min(best, time.process_time() - started)
    return best * 1e6 / (events / 2)


def start_server(data_dir: Path, workers: int, tree: Path = ROOT, echo: bool = True,
                 env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """`sgs-verify serve` of the source tree ``tree`` (bench/service_ab.py: another commit's), on a free port."""
    proc = subprocess.Popen([sys.executable, "-m", "clients.cli", "serve", "--address", "127.0.0.1:0",
                             "--data-dir", str(data_dir), "--workers", str(workers),
                             # the benchmark measures throughput: no per-tenant rate limit in the way
                             "--rate-limit", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tree,
                            start_new_session=True, env=env)
    assert proc.stdout is not None
    address = ""
    for line in proc.stdout:
        if echo:
            print("  " + line.rstrip())
        if m := re.search(r"listening on (\S+)", line):
            address = m.group(1)
        if "limits:" in line:
            break
    if not address:
        raise SystemExit(f"the server of {tree} did not start")
    # Keep reading what the server says (its log), so that a full pipe never stalls it.
    threading.Thread(target=lambda: [None for _ in proc.stdout or ()], daemon=True).start()
    return proc, address


Submit = Callable[[VerifierClient, pb.GameLog], None]  # one game, by one client
SubmitAll = Callable[[list[VerifierClient], list[pb.GameLog]], None]  # every game of a phase, by its clients


def each_game(submit: Submit) -> SubmitAll:
    """A phase whose clients submit game by game, all at once (a thread each), the games shared out in turn."""
    def run(clients: list[VerifierClient], logs: list[pb.GameLog]) -> None:
        with ThreadPoolExecutor(len(clients)) as pool:
            list(pool.map(lambda i: submit(clients[i % len(clients)], logs[i]), range(len(logs))))
    return run


def cores_used(clients: int, in_flight: int | None) -> int:
    """What a phase is held to, in offline speeds: a core for each client, or for each call one client keeps in
    flight, up to the machine's cores."""
    return min(in_flight or clients, os.cpu_count() or 1)


def run_phase(address: str, name: str, logs: list[pb.GameLog], clients: int, submit: SubmitAll,
              offline_events_per_s: float, batch: int | None = None, server_pid: int | None = None,
              offline_cpu_us: float | None = None, in_flight: int | None = None, probe_health: bool = True) -> Result:
    """``in_flight``: the calls the (one) client keeps going, in a bulk phase. ``probe_health``: False for a
    server without the health service (bench/grpc_floor.py's)."""
    events = sum(len(g.events) for g in logs)
    channels = [VerifierClient(address, timeout=300) for _ in range(clients)]
    try:
        with HealthProbe(address) if probe_health else contextlib.nullcontext() as probe:
            cpu_before = None if server_pid is None else process_tree_cpu(server_pid)
            own_before = None if server_pid is None else process_tree_cpu(server_pid, children=False)
            started, client_started = time.perf_counter(), time.process_time()
            submit(channels, logs)
            seconds, client_cpu = time.perf_counter() - started, time.process_time() - client_started
            cpu_after = None if server_pid is None else process_tree_cpu(server_pid)
            own_after = None if server_pid is None else process_tree_cpu(server_pid, children=False)
        health = probe.summary() if probe is not None else None
    finally:
        for c in channels:
            c.close()
    eps = events / seconds
    cores = cores_used(clients, in_flight)
    cpu_us = None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) * 1e6 / events
    own_us = None if own_before is None or own_after is None else (own_after - own_before) * 1e6 / events
    cpu_ratio = None if cpu_us is None or not cpu_us or offline_cpu_us is None else round(offline_cpu_us / cpu_us, 2)
    health_ms: tuple[float | None, float | None, float | None] = \
        (None, None, None) if health is None else (round(health[0], 2), round(health[1], 2), round(health[2], 2))
    return Result(name, clients, len(logs), events, round(seconds, 3), round(len(logs) / seconds, 1), round(eps),
                  round(eps / (offline_events_per_s * cores), 2), batch, in_flight,
                  None if cpu_us is None else round(cpu_us, 1), None if own_us is None else round(own_us, 1), cpu_ratio,
                  *health_ms, client_cpu_us_per_event=round(client_cpu * 1e6 / events, 1))


def whole(client: VerifierClient, log: pb.GameLog) -> None:
    client.verify(log.SerializeToString(), Metadata(tournament="bench"), summary_only=True)


def upload(client: VerifierClient, log: pb.GameLog, batch: int = DEFAULT_BATCH_SIZE) -> None:
    client.upload(log, Metadata(tournament="bench"), batch_size=batch, summary_only=True)


def stored_all(outcomes: Iterable[object]) -> None:
    for outcome in outcomes:
        if not isinstance(outcome, Submission):
            raise SystemExit(f"a bulk phase's game was not stored: {outcome}")


def whole_bulk(client: VerifierClient, logs: list[pb.GameLog], in_flight: int = DEFAULT_IN_FLIGHT) -> None:
    stored_all(client.verify_many((g.SerializeToString() for g in logs), Metadata(tournament="bench"),
                                  in_flight=in_flight))


def upload_bulk(client: VerifierClient, logs: list[pb.GameLog], batch: int = DEFAULT_BATCH_SIZE,
                in_flight: int = DEFAULT_IN_FLIGHT) -> None:
    stored_all(client.upload_many(logs, Metadata(tournament="bench"), batch_size=batch, in_flight=in_flight))


INGEST_TARGET = 100_000  # events/s one client streams in (issue 14)
MIN_RATIO = 0.7  # of the offline speed per core, that every path keeps (issue 14)
LIVE_BATCH = 64  # events per live message: a game server sends what a few moments of play produced


def live(client: VerifierClient, log: pb.GameLog, batch: int = LIVE_BATCH) -> None:
    for _ in client.live(log.header, log.events, Metadata(tournament="bench"), batch_size=batch):
        pass


FLOOR = "floor: "  # (the key of a phase run against bench/grpc_floor.py's server)


def floor_best_ratio(r: Result, floor: Result, offline_s_per_game: float) -> float:
    """The ratio to offline (per core) that a server with no cost of its own would keep on ``r``'s path if nothing
    overlapped: offline's time a game (per core the phase is held to) over that plus the floor's time a game."""
    offline = offline_s_per_game / cores_used(r.clients, r.in_flight)
    return offline / (offline + floor.seconds / floor.games)


def kept_of_floor_best(r: Result, floor: Result, offline_s_per_game: float) -> float:
    """The share of the floor's best ratio that ``r`` kept: its ratio to offline over the floor's best, which is
    the time a game of a server of no cost (offline's per core plus the floor's) over the service's time a game."""
    offline = offline_s_per_game / cores_used(r.clients, r.in_flight)
    return (offline + floor.seconds / floor.games) / (r.seconds / r.games)


def set_floor_shares(results: list[Result], floors: dict[tuple[str, int], Result], offline_s_per_game: float) -> None:
    """Each phase's floor's best ratio and the share of it the phase kept (issue 31: the service's own part)."""
    for r in results:
        f = floors.get((r.phase, r.clients))
        if f is None:
            continue
        best_ratio = floor_best_ratio(r, f, offline_s_per_game)
        r.floor_best_ratio = round(best_ratio, 3)
        r.kept_of_floor_best = round(kept_of_floor_best(r, f, offline_s_per_game), 3)


KEPT_GOAL = 0.9  # of the floor's best ratio, that each path keeps at one client (issue 31)
KEPT_PATHS = (("whole log", "whole-log"), ("upload", "upload stream"), ("live", "live stream"))


def print_floors(results: list[Result], floors: dict[tuple[str, int], Result], offline_s_per_game: float) -> None:
    """Each phase beside the same calls to a server that only answers (bench/grpc_floor.py), per game: the
    service's time, the floor's, offline's (per core the phase is held to), and what is left, the server's own
    part (service - floor - offline; below zero where the path overlaps the transport with verifying); the ratio
    to offline a server with no cost of its own would keep if nothing overlapped, and the share of it the phase
    kept; and per event, the server process's CPU beside the floor server's (gRPC's own share of a server's
    work), and the client's in each. Then "kept of the floor's best" per path at one client, against the goal."""
    print()
    print("the transport's floor: the same calls to a server that only answers (bench/grpc_floor.py); ms a game")
    header = f"{'phase':<15} {'clients':>7} {'service':>8} {'floor':>7} {'offline':>8} {'own':>7} " \
             f"{'best x off':>10} {'kept':>5} {'server cpu us/ev':>16} {'floor cpu':>9} {'client cpu':>10} " \
             f"{'floor':>6}"
    print(header)
    print("-" * len(header))
    for r in results:
        f = floors.get((r.phase, r.clients))
        if f is None:
            continue
        offline = offline_s_per_game / cores_used(r.clients, r.in_flight)
        service, bare = r.seconds / r.games * 1e3, f.seconds / f.games * 1e3
        best_ratio = floor_best_ratio(r, f, offline_s_per_game)
        kept = kept_of_floor_best(r, f, offline_s_per_game)
        cpu = f"{r.server_cpu_us_per_event:>16.1f}" if r.server_cpu_us_per_event is not None else f"{'':>16}"
        floor_cpu = f"{f.cpu_us_per_event:>9.1f}" if f.cpu_us_per_event is not None else f"{'':>9}"
        client = f"{r.client_cpu_us_per_event:>10.1f}" if r.client_cpu_us_per_event is not None else f"{'':>10}"
        floor_client = f"{f.client_cpu_us_per_event:>6.1f}" if f.client_cpu_us_per_event is not None else f"{'':>6}"
        print(f"{r.phase:<15} {r.clients:>7} {service:>8.2f} {bare:>7.2f} {offline * 1e3:>8.2f} "
              f"{service - bare - offline * 1e3:>7.2f} {best_ratio:>9.2f}x {kept:>5.2f} {cpu} {floor_cpu} {client} "
              f"{floor_client}")
    one = {r.phase: r for r in results if r.clients == 1 and r.kept_of_floor_best is not None}
    kept_line = ", ".join(f"{label} {one[phase].kept_of_floor_best:.2f}" for label, phase in KEPT_PATHS
                          if phase in one)
    if kept_line:
        print(f"kept of the floor's best, one client: {kept_line} (goal {KEPT_GOAL})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=80)
    parser.add_argument("--players", type=int, default=6)
    parser.add_argument("--clients", default="1,4", help="comma-separated concurrent client counts")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--live-batch", type=int, default=LIVE_BATCH, help="events per live message (default 64)")
    parser.add_argument("--upload-batch", type=int, default=DEFAULT_BATCH_SIZE,
                        help=f"events per upload message (default: the client library's, {DEFAULT_BATCH_SIZE})")
    parser.add_argument("--in-flight", type=int, default=DEFAULT_IN_FLIGHT,
                        help=f"calls going at once in the bulk phases (default: the client library's, "
                             f"{DEFAULT_IN_FLIGHT}; 0: no bulk phases)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of offline and every phase, taking turns; the best of each counts (default 3)")
    parser.add_argument("--no-floor", dest="floor", action="store_false",
                        help="leave out the transport's floor (bench/grpc_floor.py: each phase against a server "
                             "that only answers)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a phase's ratio to offline (per core) is below --min-ratio")
    parser.add_argument("--min-ratio", type=float, default=MIN_RATIO, help=f"for --check (default {MIN_RATIO})")
    args = parser.parse_args()
    counts = [int(x) for x in args.clients.split(",")]

    print(f"playing {args.games} self-play games ({args.players} players)...")
    logs = [play_game(1000 + i, args.players) for i in range(args.games)]
    blobs = [g.SerializeToString() for g in logs]
    events = sum(len(g.events) for g in logs)
    seconds, _ = offline(blobs)
    print(f"offline (sgs-verify check): {len(logs)} games, {events} events in {seconds:.2f} s")
    offline_best = seconds
    offline_cpu_us = offline_cpu(blobs)
    best: dict[tuple[str, int], Result] = {}  # the fastest round of each phase
    cpu_best: dict[tuple[str, int], float] = {}  # the least CPU per event of each phase, over the rounds
    server_best: dict[tuple[str, int], float] = {}
    floors: dict[tuple[str, int], Result] = {}  # each phase's fastest round against the floor (named FLOOR + phase)

    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        proc, address = start_server(Path(tmp), args.workers)
        try:
            floor: FloorServer | None = None
            if args.floor:
                with VerifierClient(address, timeout=300) as recorder:
                    answers = record_answers(recorder, logs, args.live_batch, args.upload_batch)
                floor = stack.enter_context(FloorServer(answers))
            with HealthProbe(address) as idle:
                time.sleep(1.0)
            p50, p99, worst = idle.summary()
            idle_result = Result("idle server", 0, 0, 0, 1.0, 0, 0, 0, None, None, None, None, None, round(p50, 2),
                                 round(p99, 2), round(worst, 2))
            # Rounds: offline and every phase take turns, and the best round of each counts, so a slow spell of
            # the machine falls on all of them rather than on one (the ratios hold on a shared machine).
            for rnd in range(args.rounds):
                if rnd:
                    offline_best = min(offline_best, offline_in_process(blobs))
                    offline_cpu_us = min(offline_cpu_us, offline_cpu(blobs))
                for n in counts:
                    phases: list[tuple[str, SubmitAll, int | None, int | None]] = [
                        ("whole-log", each_game(whole), None, None),
                        ("upload stream", each_game(lambda c, g: upload(c, g, args.upload_batch)), args.upload_batch,
                         None),
                        ("live stream", each_game(lambda c, g: live(c, g, args.live_batch)), args.live_batch, None)]
                    if n == 1 and args.in_flight:
                        phases += [
                            ("whole-log bulk", lambda cs, gs: whole_bulk(cs[0], gs, args.in_flight), None,
                             args.in_flight),
                            ("upload bulk", lambda cs, gs: upload_bulk(cs[0], gs, args.upload_batch, args.in_flight),
                             args.upload_batch, args.in_flight)]
                    for name, submit, batch, in_flight in phases:
                        phase_logs = stamped(logs, f"{name} x{n} round {rnd}")
                        result = run_phase(address, name, phase_logs, n, submit, events / offline_best, batch,
                                           proc.pid, offline_cpu_us, in_flight)
                        key = (name, n)
                        if key not in best or result.seconds < best[key].seconds:
                            best[key] = result
                        if result.cpu_us_per_event is not None:
                            cpu_best[key] = min(cpu_best.get(key, result.cpu_us_per_event), result.cpu_us_per_event)
                        if result.server_cpu_us_per_event is not None:
                            server_best[key] = min(server_best.get(key, result.server_cpu_us_per_event),
                                                   result.server_cpu_us_per_event)
                        print(f"round {rnd + 1}/{args.rounds}: {name} x{n}: {result.games_per_s} games/s, "
                              f"{result.events_per_s} events/s; health p99 {result.health_p99_ms} ms")
                        if floor is not None:
                            result = run_phase(floor.address, FLOOR + name, phase_logs, n, submit,
                                               events / offline_best, batch, floor.pid, offline_cpu_us, in_flight,
                                               probe_health=False)
                            if key not in floors or result.seconds < floors[key].seconds:
                                floors[key] = result
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)  # (its output is read by start_server's thread to the end)

    offline_eps = events / offline_best
    results = [Result("offline check", 1, len(logs), events, round(offline_best, 3),
                      round(len(logs) / offline_best, 1), round(offline_eps), 1.0, None, None,
                      round(offline_cpu_us, 1), None, 1.0), idle_result]
    for res in floors.values():
        res.ratio_to_offline = round(res.events_per_s / (offline_eps * cores_used(res.clients, res.in_flight)), 2)
    for key, res in best.items():  # (against the best offline round, which may have come after the phase's best)
        cores = cores_used(res.clients, res.in_flight)
        res.ratio_to_offline = round(res.events_per_s / (offline_eps * cores), 2)
        res.cpu_us_per_event = cpu_best.get(key)
        res.server_cpu_us_per_event = server_best.get(key)
        if res.cpu_us_per_event:
            res.cpu_ratio_to_offline = round(offline_cpu_us / res.cpu_us_per_event, 2)
        results.append(res)

    print()
    print(f"machine: {os.cpu_count()} cores; server: {args.workers} worker process(es), embedded SQLite; "
          f"{args.games} games of {args.players} players, {events} events; upload batches of {args.upload_batch} "
          f"events, live batches of {args.live_batch}; bulk: one client, {args.in_flight} calls in flight; ratios are "
          f"per core (N clients, or N in flight: to N x offline, at most {os.cpu_count()} cores)")
    header = f"{'phase':<15} {'clients':>7} {'flight':>6} {'batch':>6} {'games/s':>8} {'events/s':>9} " \
             f"{'x offline':>9} {'cpu us/ev':>9} {'server':>7} {'cpu x off':>9} {'health p50':>10} {'p99':>7} " \
             f"{'max':>7}"
    print(header)
    print("-" * len(header))
    for r in results:
        health = (f"{r.health_p50_ms:>8.2f}ms {r.health_p99_ms:>5.1f}ms {r.health_max_ms:>5.1f}ms"
                  if r.health_p50_ms is not None else "")
        if r.phase == "idle server":
            print(f"{r.phase:<15} {'':>7} {'':>6} {'':>6} {'':>8} {'':>9} {'':>9} {'':>9} {'':>7} {'':>9} {health}")
        else:
            size = "" if r.batch is None else str(r.batch)
            cpu = f"{r.cpu_us_per_event:>9.1f}" if r.cpu_us_per_event is not None else f"{'':>9}"
            own = f"{r.server_cpu_us_per_event:>7.1f}" if r.server_cpu_us_per_event is not None else f"{'':>7}"
            cpu_ratio = f"{r.cpu_ratio_to_offline:>8.2f}x" if r.cpu_ratio_to_offline is not None else f"{'':>9}"
            flight = "" if r.in_flight is None else str(r.in_flight)
            print(f"{r.phase:<15} {r.clients:>7} {flight:>6} {size:>6} {r.games_per_s:>8.1f} {r.events_per_s:>9} "
                  f"{r.ratio_to_offline:>8.2f}x {cpu} {own} {cpu_ratio} {health}")
    if floors:
        set_floor_shares(results, floors, offline_best / len(logs))
        print_floors(results, floors, offline_best / len(logs))
    ingest = best.get(("upload bulk", 1))
    if ingest is not None:
        verdict = "met" if ingest.events_per_s >= INGEST_TARGET else "NOT met"
        print(f"streamed ingest, one client (upload_many, {ingest.in_flight} in flight, batches of {ingest.batch}): "
              f"{ingest.events_per_s:,} events/s (target {INGEST_TARGET:,}: {verdict})")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in [*results, *floors.values()]], indent=1))
    if args.check:
        below = [r for r in results
                 if r.clients > 0 and r.phase != "offline check" and r.ratio_to_offline < args.min_ratio]
        for r in below:
            print(f"CHECK FAILED: {r.phase} x{r.clients} keeps {r.ratio_to_offline:.2f}x of offline per core, "
                  f"below {args.min_ratio}")
        if below:
            return 1
        print(f"check: every path keeps at least {args.min_ratio}x of offline per core")
    return 0


if __name__ == "__main__":
    with signals_interrupt("service_bench"):  # (SIGTERM too: what it made is removed)
        raise SystemExit(main())
