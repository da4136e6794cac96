"""python -m tools.hostile [--backend sqlite|postgres] [--quick] [--only NAME ...]: the hostile-client harness
(issue 27; the plug-in interface is in tools/hostile/base.py, the rules in tools/hostile/README.md).

Starts `sgs-verify serve` as docs/security.md deploys it — TLS (a throwaway CA), tokens of two tenants and an
admin, the viewer — on loopback, runs each attack in turn while a probe tenant keeps calling and the server's
and its workers' resident memory is sampled, and prints a table. Exit status 1 when an attack was not held,
the probe was denied service, or a process went over the memory bound of docs/security.md.

A deadline is a matter of time, and so of the machine's load: an attack that failed on a deadline (an answer
DEADLINE_EXCEEDED, the probe's call failing so or slower than PROBE_SLOW_SECONDS) while the machine was busy
(its load average, os.getloadavg, at least its CPUs) is said to be so, with the load, and run once more; its
second run is its verdict. If that one fails on a deadline at load too, its row says so ("at load"), and the run
ends with exit status 3 when nothing else failed: undecided, not a hole shown — run it again on a quieter
machine."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from tools.hostile.base import ROOT, Attack, Context, Outcome, ServerLimits, cli

MIB = 1 << 20
# A probe call slower than this counts as service denied (the server's own waits for room are 10 s).
PROBE_SLOW_SECONDS = 5.0
EXIT_NOT_HELD, EXIT_AT_LOAD = 1, 3


def cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def load() -> float:
    """The machine's load average over the last minute (runnable processes: more than its CPUs is busy)."""
    return os.getloadavg()[0]


# ---------------------------------------------------------------------------------------- memory

def _rss_kib(pid: int) -> int:
    try:
        found = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return 0
    return int(found.group(1)) if found else 0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        with contextlib.suppress(OSError):
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


class MemorySampler:
    """Samples the server's resident memory and each of its descendants' (the workers) every 50 ms."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.server_peak = 0
        self.worker_peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        self.server_peak = max(self.server_peak, _rss_kib(self.pid))
        pending, seen = _children(self.pid), set()
        while pending:
            child = pending.pop()
            if child in seen:
                continue
            seen.add(child)
            self.worker_peak = max(self.worker_peak, _rss_kib(child))
            pending += _children(child)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.sample()

    def __enter__(self) -> MemorySampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()


# ---------------------------------------------------------------------------------------- the probe

@dataclass
class Probe:
    """The probe tenant's calls, all through an attack: list, get its replay, verify a small game."""

    ctx: Context
    replay_id: str
    game: bytes
    calls: int = 0
    failures: list[str] = field(default_factory=list)
    slowest: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        from sgsverify.v1 import service_pb2 as spb
        from sgsverify.v1 import service_pb2_grpc as spb_grpc

        md = self.ctx.metadata("probe")
        with self.ctx.channel() as channel:
            stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
            turn = 0
            while not self._stop.is_set():
                turn += 1
                started = time.monotonic()
                try:
                    if turn % 3 == 0:
                        stub.VerifyLog(spb.VerifyLogRequest(encoded_log=self.game, summary_only=True), metadata=md,
                                       timeout=30)
                    elif turn % 3 == 1:
                        stub.ListReplays(spb.ListReplaysRequest(page_size=5), metadata=md, timeout=30)
                    else:
                        stub.GetReplay(spb.GetReplayRequest(id=self.replay_id), metadata=md, timeout=30)
                except grpc.RpcError as err:
                    self.failures.append(f"{err.code().name}: {(err.details() or '')[:80]}")
                self.calls += 1
                self.slowest = max(self.slowest, time.monotonic() - started)
                self._stop.wait(0.25)

    def __enter__(self) -> Probe:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    @property
    def denied(self) -> bool:
        return bool(self.failures) or self.slowest > PROBE_SLOW_SECONDS


# ---------------------------------------------------------------------------------------- the server

@dataclass
class Row:
    attack: Attack
    outcome: Outcome
    seconds: float
    probe_calls: int
    probe_failures: list[str]
    probe_slowest: float
    server_mib: float
    worker_mib: float
    load: float = 0.0  # the highest 1-minute load average seen from the attack's start to its end
    first_try: str = ""  # when it was run again: why, and what its first run got

    @property
    def denied(self) -> bool:
        return bool(self.probe_failures) or self.probe_slowest > PROBE_SLOW_SECONDS

    def failed(self, bound: tuple[float, float]) -> bool:
        return not self.outcome.held or self.denied or self.server_mib > bound[0] or self.worker_mib > bound[1]

    @property
    def deadline(self) -> bool:
        """Whether it failed on a deadline: an answer DEADLINE_EXCEEDED, or the probe's calls failing so or slow."""
        said = " ".join([self.outcome.got, self.outcome.note, *self.probe_failures])
        return ("DEADLINE_EXCEEDED" in said or "timed out" in said.lower()
                or (not self.probe_failures and self.probe_slowest > PROBE_SLOW_SECONDS))

    def at_load(self, bound: tuple[float, float]) -> bool:
        """Failed on a deadline while the machine was busy: the verdict may be the load's, not the server's."""
        return (self.failed(bound) and self.deadline and self.load >= cpus()
                and self.server_mib <= bound[0] and self.worker_mib <= bound[1])


def memory_bound_mib(limits: ServerLimits, baseline_server: float, baseline_worker: float) -> tuple[float, float]:
    """docs/security.md's bound: the server holds at most the budget plus one game read in turn past it, each
    byte a few times over (received, parsed, handed to a worker: x3), plus a largest message arriving for each
    worker; a worker one record or log of the largest size, parsed (x20), above its baseline."""
    server = baseline_server + (3 * (limits.max_buffered_bytes + max(64 * MIB, limits.max_record_bytes))
                                + limits.workers * limits.max_message_bytes) / MIB
    worker = baseline_worker + 20 * max(limits.max_message_bytes, 64 * MIB) / MIB
    return server, worker


class HarnessServer:
    def __init__(self, backend: str, quick: bool, workers: int) -> None:
        self.backend = backend
        self.quick = quick
        self.workers = workers
        self.folder = Path(tempfile.mkdtemp(prefix="sgs-hostile-"))
        self.pg_name = ""
        self.proc: subprocess.Popen[str] | None = None
        self.lines: list[str] = []

    def database(self) -> str:
        if self.backend == "sqlite":
            return f"sqlite:///{self.folder / 'data' / 'replays.sqlite3'}"
        import psycopg

        self.pg_name = f"sgs_hostile_{uuid.uuid4().hex[:10]}"
        for user in ("postgres", "root"):
            try:
                with psycopg.connect(host="127.0.0.1", port=5432, user=user, dbname="test", autocommit=True,
                                     connect_timeout=3) as conn:
                    conn.execute(f'CREATE DATABASE "{self.pg_name}"')
                self.pg_user = user
                return f"postgresql+psycopg://{user}@127.0.0.1:5432/{self.pg_name}"
            except psycopg.Error:
                continue
        raise SystemExit("PostgreSQL is not reachable at 127.0.0.1:5432")

    def start(self) -> Context:
        from tests.service.certs import make_pki

        pki = make_pki(self.folder / "pki")
        url = self.database()
        cli(["db", "upgrade", "--db", url])
        tokens = {"attacker": ("mallory", "submit,read,delete"), "attacker-reader": ("mallory", "read"),
                  "probe": ("probe", "submit,read"), "admin": ("ops", "admin")}
        made = {name: cli(["token", "create", "--tenant", tenant, "--scopes", scopes, "--name", f"hostile {name}",
                           "--db", url]) for name, (tenant, scopes) in tokens.items()}
        limits = ServerLimits(max_message_bytes=16 * MIB, max_buffered_bytes=64 * MIB, max_events=100_000,
                              max_record_bytes=64 * MIB, max_streams_per_tenant=32, max_concurrent=256,
                              stream_idle_seconds=10.0 if self.quick else 30.0,
                              first_message_seconds=2.0 if self.quick else 5.0, workers=self.workers)
        command = [sys.executable, "-m", "clients.cli", "serve", "--address", "127.0.0.1:0", "--http", "127.0.0.1:0",
                   "--db", url, "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
                   "--workers", str(self.workers), "--no-pin-workers",
                   "--max-message-bytes", str(limits.max_message_bytes),
                   "--max-buffered-bytes", str(limits.max_buffered_bytes),
                   "--stream-idle-timeout", str(limits.stream_idle_seconds),
                   "--first-message-timeout", str(limits.first_message_seconds),
                   "--rate-limit", str(limits.rate_limit), "--rate-burst", str(limits.rate_burst)]
        with open(self.folder / "server.log", "w") as errors:  # (the child keeps its own copy of the descriptor)
            self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True, cwd=ROOT,
                                         env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert self.proc.stdout is not None
        grpc_address = http_url = ""
        deadline = time.monotonic() + 120
        while not (grpc_address and http_url):
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit(f"the server did not start: see {self.folder / 'server.log'}:\n"
                                 + (self.folder / "server.log").read_text()[-2000:])
            self.lines.append(line.rstrip())
            if "listening on " in line:
                grpc_address = line.split("listening on ")[1].split()[0]
            if "viewer on " in line:
                http_url = line.split("viewer on ")[1].split()[0]
            if time.monotonic() > deadline:
                raise SystemExit("the server took over 120 s to start")
        threading.Thread(target=self._drain, daemon=True).start()
        return Context(grpc_address=grpc_address, http_url=http_url, ca=pki.ca, tokens=made, limits=limits,
                       backend=self.backend, quick=self.quick, token_db=url, server_pid=self.proc.pid,
                       folder=self.folder)

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.pg_name:
            import psycopg

            with psycopg.connect(host="127.0.0.1", port=5432, user=self.pg_user, dbname="test",
                                 autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{self.pg_name}" WITH (FORCE)')
        shutil.rmtree(self.folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------- running

def discover() -> list[Attack]:
    attacks: list[Attack] = []
    package = Path(__file__).resolve().parent
    for module in sorted(pkgutil.iter_modules([str(package)]), key=lambda m: m.name):
        if module.name.endswith("_attacks"):
            attacks += importlib.import_module(f"tools.hostile.{module.name}").ATTACKS
    return attacks


def seed_probe(ctx: Context) -> tuple[str, bytes]:
    """The probe's own replay (what its GetReplay asks for) and a small game (what its VerifyLog sends)."""
    from clients.selfplay import play_game
    from sgsverify.v1 import service_pb2 as spb
    from sgsverify.v1 import service_pb2_grpc as spb_grpc

    game = play_game(4242, 5).SerializeToString()
    with ctx.channel() as channel:
        grpc.channel_ready_future(channel).result(timeout=60)
        stub = spb_grpc.VerifierServiceStub(channel)  # type: ignore[no-untyped-call]
        answer = stub.VerifyLog(spb.VerifyLogRequest(encoded_log=game, summary_only=True),
                                metadata=ctx.metadata("probe"), timeout=60)
    return answer.info.id, game


def run_attack(attack: Attack, ctx: Context, replay_id: str, game: bytes) -> Row:
    started = time.monotonic()
    load_before = load()
    with MemorySampler(ctx.server_pid) as memory, Probe(ctx, replay_id, game) as probe:
        try:
            outcome = attack.run(ctx)
        except Exception as err:  # an attack's own failure is its row's, not the run's
            outcome = Outcome("(the attack failed)", f"{type(err).__name__}: {str(err)[:200]}", held=False)
        time.sleep(0.5)  # the probe's next call sees the server as the attack left it
    return Row(attack, outcome, time.monotonic() - started, probe.calls, probe.failures, probe.slowest,
               memory.server_peak / 1024, memory.worker_peak / 1024, max(load_before, load()))


def judged(attack: Attack, ctx: Context, replay_id: str, game: bytes, bound: tuple[float, float]) -> Row:
    """The attack's row; run once more when it failed on a deadline while the machine was busy (that run's row
    is the verdict, saying what the first got)."""
    row = run_attack(attack, ctx, replay_id, game)
    if not row.at_load(bound):
        return row
    first = (f"first run: {'DENIED' if row.denied else 'not held'} on a deadline at load {row.load:.1f} on "
             f"{cpus()} CPUs ({row.outcome.got[:120]})")
    print(f"  {attack.name}: {first}: may be the machine's load; run once more", flush=True)
    again = run_attack(attack, ctx, replay_id, game)
    again.first_try = first
    return again


def verdict(row: Row, bound: tuple[float, float]) -> str:
    """The table's "held": yes (said when on a second run), NO, or NO at load (failed twice on a deadline while
    the machine was busy). A row held but with the probe denied or the memory over says so in those columns."""
    if not row.failed(bound):
        return "yes" + (" (second run)" if row.first_try else "")
    if row.at_load(bound):
        return f"NO at load {row.load:.1f} on {cpus()} CPUs, twice (a deadline: may be the load)"
    return "NO" if not row.outcome.held else "yes"


def table(rows: list[Row], bound: tuple[float, float]) -> str:
    lines = ["| attack | item | sent | got | held | other tenant | peak RSS server / worker (MiB) | s | load |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        probe = (f"served ({r.probe_calls} calls, slowest {r.probe_slowest:.2f} s)" if not r.denied else
                 f"DENIED ({len(r.probe_failures)} of {r.probe_calls} failed, slowest {r.probe_slowest:.2f} s: "
                 f"{'; '.join(sorted(set(r.probe_failures))[:2])})")
        over = r.server_mib > bound[0] or r.worker_mib > bound[1]
        got = r.outcome.got + (f" ({r.first_try})" if r.first_try else "")
        held = verdict(r, bound)
        lines.append(f"| {r.attack.name} | {r.attack.item or '-'} | {r.outcome.sent} | {got} | {held} | {probe} | "
                     f"{r.server_mib:.0f} / {r.worker_mib:.0f}{' OVER' if over else ''} | {r.seconds:.1f} | "
                     f"{r.load:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.hostile", description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--quick", action="store_true", help="the CI run: smaller attacks, the quick ones only")
    parser.add_argument("--only", nargs="*", default=[], metavar="NAME", help="run only these attacks")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    attacks = [a for a in discover() if (not args.quick or a.quick) and (not args.only or a.name in args.only)]
    server = HarnessServer(args.backend, args.quick, args.workers)
    rows: list[Row] = []
    try:
        ctx = server.start()
        replay_id, game = seed_probe(ctx)
        time.sleep(1.0)
        baseline = MemorySampler(ctx.server_pid)
        baseline.sample()
        bound = memory_bound_mib(ctx.limits, baseline.server_peak / 1024, baseline.worker_peak / 1024)
        print(f"server {ctx.grpc_address} (TLS, tokens; {args.backend}; {args.workers} workers); "
              f"viewer {ctx.http_url}; "
              f"baseline RSS {baseline.server_peak / 1024:.0f} MiB server, {baseline.worker_peak / 1024:.0f} MiB "
              f"worker; bound {bound[0]:.0f} / {bound[1]:.0f} MiB; load {load():.1f} on {cpus()} CPUs", flush=True)
        for attack in attacks:
            row = judged(attack, ctx, replay_id, game, bound)
            rows.append(row)
            print(f"  {attack.name}: held={'yes' if row.outcome.held else 'NO'} "
                  f"probe={'DENIED' if row.denied else 'served'} rss={row.server_mib:.0f}/{row.worker_mib:.0f} MiB "
                  f"({row.seconds:.1f} s, load {row.load:.1f}) — {row.outcome.got}", flush=True)
        if server.proc is not None and server.proc.poll() is not None:
            print(f"the server died during the run (exit {server.proc.returncode})")
            return 1
    finally:
        server.stop()
    print()
    print(table(rows, bound))
    text, status = summary(rows, bound)
    print(text)
    return status


def summary(rows: list[Row], bound: tuple[float, float]) -> tuple[str, int]:
    """The run's last words and its exit status: 0 every attack held; EXIT_NOT_HELD one was not (or the probe was
    denied, or the memory went over the bound); else EXIT_AT_LOAD, when some failed only on deadlines at load."""
    failed = [r.attack.name for r in rows if r.failed(bound) and not r.at_load(bound)]
    at_load = [f"{r.attack.name} (load {r.load:.1f})" for r in rows if r.at_load(bound)]
    said = []
    if failed:
        said.append(f"\nNOT HELD: {', '.join(failed)}")
    if at_load:
        said.append(f"\n{'ALSO ' if failed else ''}UNDECIDED, AT LOAD: {', '.join(at_load)}: each failed twice on a "
                    f"deadline while the machine ran more than its {cpus()} CPUs could (load average, 1 minute): "
                    "that may be the load, not the server; run it again on a quieter machine (--only NAME)")
    if failed or at_load:
        return "\n".join(said), EXIT_NOT_HELD if failed else EXIT_AT_LOAD
    retried = [r.attack.name for r in rows if r.first_try]
    return (f"\nall {len(rows)} attacks held; no other tenant was denied service; memory within "
            f"{bound[0]:.0f} MiB (server) / {bound[1]:.0f} MiB (worker)"
            + (f" ({', '.join(retried)}: held when run again, after a deadline at load)" if retried else "")), 0


if __name__ == "__main__":
    sys.exit(main())

