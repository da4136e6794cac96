"""The FreeKill bridge with many rooms open at once: its memory, CPU, threads and shutdown time.

    python bench/bridge_rooms_bench.py                 # ~3 minutes on 2 shared cores
    python bench/bridge_rooms_bench.py --rooms 1000 --flood 20000 --json

Two scenarios, each a `sgs-verify bridge` process of its own (measured from /proc: resident memory, threads,
CPU time), following a freekill.log written by this script:

1. **open rooms**: ``--rooms`` rooms (default 1,000; `--max-rooms` set above it) each begin at once: every
   room's set-up and its first ``--records`` records (default 200) are written (the shared games' tap records,
   each room a game of its own), so that each has its live stream open to a real `sgs-verify serve` (2 workers,
   SQLite; its stream and concurrency limits raised for the run) and events judged. Measured: the time until
   they are all judged and the CPU it took; then 10 s with every room open and nothing written (idle); then 20 s
   with every room writing one record a second (1,000 records/s with 1,000 rooms); then SIGTERM and the time
   until the process has exited (every stream cancelled: the service stores none of them).
2. **flood**: ``--flood`` rooms (default 20,000) open one after another, a meta record each (the audit's
   flood), under the default `--max-rooms` (300): the rooms over it are reported and not followed. Measured: the
   time to read them all, the process's memory and threads after, and its shutdown time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bridge_bench import setup_length  # noqa: E402

from clients.bridge import DEFAULT_MAX_ROOMS  # noqa: E402
from clients.bridge.replaylog import RotatingLog, room_records  # noqa: E402

DATA = ROOT / "tests" / "data" / "freekill" / "transcripts"
CLOCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Sample:
    rss_mib: float
    peak_rss_mib: float
    threads: int
    cpu_s: float  # user + system since the process started


def sample(pid: int) -> Sample:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return Sample(int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024,
                  int(fields["Threads"]), (int(stat[11]) + int(stat[12])) / CLOCK)


@dataclass
class Phase:
    name: str
    seconds: float
    cpu_s: float
    after: Sample

    @property
    def cpu_percent(self) -> float:
        return 100.0 * self.cpu_s / self.seconds if self.seconds else 0.0


@dataclass
class Scenario:
    name: str
    rooms: int
    max_rooms: int
    phases: list[Phase] = field(default_factory=list)
    judged: int = 0  # events judged by the service (sgs_verify_bridge_events_total) when every room was open
    open: int = 0  # rooms open then (sgs_verify_bridge_rooms_open)
    stopped_s: float = 0.0  # SIGTERM to the bridge's "stopped" (every stream cancelled, its files closed)
    shutdown_s: float = 0.0  # SIGTERM to the process's exit (the interpreter's own teardown after "stopped")
    exit_code: int | None = None
    printed: dict[str, int] = field(default_factory=dict)  # the bridge's output lines, by kind
    notes: list[str] = field(default_factory=list)  # the first few service / uncheckable lines' reasons


class BridgeProcess:
    def __init__(self, folder: Path, address: str, max_rooms: int, metrics_port: int) -> None:
        self.metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        self.out = (folder / "bridge.out").open("w")
        self.err = (folder / "bridge.err").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "clients.cli", "bridge", "--log", str(folder / "freekill.log"), "--state",
             str(folder / "state"), "--server", address, "--token", "", "--json", "--max-rooms", str(max_rooms),
             "--metrics", f"127.0.0.1:{metrics_port}"],
            stdout=self.out, stderr=self.err, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.folder = folder
        end = time.monotonic() + 60
        while "following" not in (folder / "bridge.err").read_text():
            if time.monotonic() > end or self.proc.poll() is not None:
                raise SystemExit("the bridge did not start: " + (folder / "bridge.err").read_text())
            time.sleep(0.1)

    def metric(self, name: str) -> float:
        text = urllib.request.urlopen(self.metrics, timeout=10).read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name) and (len(line) == len(name) or line[len(name)] in " {"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self, sc: Scenario) -> None:
        """SIGTERM; the seconds until it says it stopped and until it has exited, its exit code, what it printed."""
        started = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        err = self.folder / "bridge.err"
        while "sgs-verify: stopped" not in err.read_text() and self.proc.poll() is None:
            time.sleep(0.01)
        sc.stopped_s = time.monotonic() - started
        sc.exit_code = self.proc.wait(300)
        sc.shutdown_s = time.monotonic() - started
        self.out.close()
        self.err.close()
        for line in (self.folder / "bridge.out").read_text().splitlines():
            item = json.loads(line)
            sc.printed[item["kind"]] = sc.printed.get(item["kind"], 0) + 1
            if item["kind"] in ("service", "uncheckable") and len(sc.notes) < 3:
                sc.notes.append(f"{item['kind']}: room {item['room']}: {item.get('reason') or item.get('error')}")
        if sc.exit_code:
            sc.notes.append("stderr: " + err.read_text()[-2000:])


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def reach(bridge: BridgeProcess, name: str, value: float, limit: float = 900.0) -> None:
    """Wait until a metric has reached ``value``."""
    end = time.monotonic() + limit
    while bridge.metric(name) < value:
        if time.monotonic() > end:
            raise SystemExit(f"{name} did not reach {value}: {bridge.metric(name)}")
        time.sleep(0.5)


def settle(bridge: BridgeProcess, name: str, quiet: float = 3.0, limit: float = 900.0) -> float:
    """Wait until a metric has moved and then stopped moving for ``quiet`` seconds; its value."""
    end = time.monotonic() + limit
    last, since = bridge.metric(name), time.monotonic()
    while time.monotonic() < end:
        time.sleep(0.5)
        now = bridge.metric(name)
        if now != last:
            last, since = now, time.monotonic()
        elif now and time.monotonic() - since >= quiet:
            break
    return last


def measured(bridge: BridgeProcess, name: str, started: float, cpu_before: float) -> Phase:
    after = sample(bridge.proc.pid)
    return Phase(name, time.monotonic() - started, after.cpu_s - cpu_before, after)


def open_rooms(address: str, rooms: int, records: int, games: list[list[dict[str, Any]]]) -> Scenario:
    sc = Scenario("open rooms", rooms, rooms + 10)
    folder = Path(tempfile.mkdtemp(prefix="bridge-rooms-bench-"))
    try:
        log = RotatingLog(folder / "freekill.log", max_bytes=30 << 20)
        bridge = BridgeProcess(folder, address, sc.max_rooms, free_port())
        per_room = [[{**r, "room": 1 + k} for r in games[k % len(games)]] for k in range(rooms)]
        setups = [setup_length(games[k % len(games)]) + records for k in range(rooms)]
        cpu = sample(bridge.proc.pid).cpu_s
        started = time.monotonic()
        written = 0
        for k, recs in enumerate(per_room):
            for rec in recs[:setups[k]]:
                log.write_record(rec, time.time())
                written += 1
        reach(bridge, "sgs_verify_bridge_tap_lines_total", written)  # every line read and converted
        sc.judged = int(settle(bridge, "sgs_verify_bridge_events_total"))
        sc.phases.append(measured(bridge, f"{rooms} rooms begin (set-up and {records} records each written at "
                                  "once, judged)", started, cpu))
        sc.open = int(bridge.metric("sgs_verify_bridge_rooms_open"))
        cpu, started = sample(bridge.proc.pid).cpu_s, time.monotonic()
        time.sleep(10)
        sc.phases.append(measured(bridge, f"{rooms} rooms open, idle", started, cpu))
        cpu, started = sample(bridge.proc.pid).cpu_s, time.monotonic()
        sent = setups[:]
        for second in range(20):
            for k, recs in enumerate(per_room):
                if sent[k] < len(recs):
                    log.write_record(recs[sent[k]], time.time())
                    sent[k] += 1
            time.sleep(max(0.0, started + second + 1 - time.monotonic()))
        sc.phases.append(measured(bridge, f"{rooms} rooms open, each writing a record a second", started, cpu))
        bridge.stop(sc)
        log.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return sc


def flood(address: str, rooms: int, game: list[dict[str, Any]]) -> Scenario:
    sc = Scenario("flood", rooms, DEFAULT_MAX_ROOMS)
    folder = Path(tempfile.mkdtemp(prefix="bridge-flood-bench-"))
    try:
        log = RotatingLog(folder / "freekill.log", max_bytes=30 << 20)
        bridge = BridgeProcess(folder, address, sc.max_rooms, free_port())
        cpu, started = sample(bridge.proc.pid).cpu_s, time.monotonic()
        for k in range(rooms):
            log.write_record({**game[0], "room": 100_000 + k}, time.time())
        settle(bridge, "sgs_verify_bridge_tap_lines_total", quiet=2.0)
        sc.phases.append(measured(bridge, f"{rooms} rooms opened one after another", started, cpu))
        bridge.stop(sc)
        log.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return sc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rooms", type=int, default=1000, help="rooms open at once (default 1000)")
    parser.add_argument("--records", type=int, default=200,
                        help="records of each room written after its set-up at the start (default 200)")
    parser.add_argument("--flood", type=int, default=20000, help="rooms opened in the flood (default 20000)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    from service_bench import start_server

    games = [room_records(p, 0) for p in sorted(DATA.glob("*.jsonl.xz"))]
    data_dir = Path(tempfile.mkdtemp(prefix="bridge-rooms-bench-serve-"))
    # Every room is a live stream: the service's per-tenant stream and concurrency limits above the rooms.
    limits = {"SGS_VERIFY_MAX_STREAMS_PER_TENANT": str(args.rooms + 100),
              "SGS_VERIFY_MAX_CONCURRENT": str(args.rooms + 100)}
    server, address = start_server(data_dir, 2, echo=False, env={**os.environ, **limits})
    try:
        results = [open_rooms(address, args.rooms, args.records, games)] if args.rooms else []
        if args.flood:
            results.append(flood(address, args.flood, games[0]))
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(60)
        shutil.rmtree(data_dir, ignore_errors=True)
    if args.json:
        print(json.dumps([{**asdict(sc), "phases": [{**asdict(p), "cpu_percent": round(p.cpu_percent, 1)}
                                                     for p in sc.phases]} for sc in results], indent=2))
        return 0
    for sc in results:
        print(f"\n{sc.name}: {sc.rooms} rooms, --max-rooms {sc.max_rooms}"
              + (f"; {sc.open} open and {sc.judged} events judged after they began" if sc.judged else ""))
        print("| phase | seconds | CPU s | CPU % of a core | RSS MiB | peak RSS MiB | threads |")
        print("|---|---|---|---|---|---|---|")
        for p in sc.phases:
            print(f"| {p.name} | {p.seconds:.1f} | {p.cpu_s:.1f} | {p.cpu_percent:.0f} | {p.after.rss_mib:.0f} | "
                  f"{p.after.peak_rss_mib:.0f} | {p.after.threads} |")
        print(f"shutdown: SIGTERM to 'stopped' {sc.stopped_s:.2f} s, to the process's exit {sc.shutdown_s:.2f} s, "
              f"exit code {sc.exit_code}; printed: " + ", ".join(f"{k} {v}" for k, v in sorted(sc.printed.items())))
        for note in sc.notes:
            print("  " + note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
