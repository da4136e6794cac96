"""The FreeKill bridge's latency and capacity: recorded tap logs replayed into a log file, through
`sgs-verify bridge` into a real `sgs-verify serve`.

    python bench/bridge_bench.py            # ~3 minutes on 2 shared cores
    python bench/bridge_bench.py --json

What it does:
1. makes each shared transcript (tests/data/freekill/transcripts) into the tap lines a FreeKill server with the
   tap would have written (importers/freekill/tap.py);
2. starts `sgs-verify serve` (a separate process, SQLite in a temporary folder, 2 workers);
3. for each scenario, writes rooms' lines into a fresh freekill.log (rotating at 4 MB) at a given pace per
   room, each line stamped with the time it is written, while a bridge (in this process, default settings:
   0.2 s poll) follows it; every verdict the bridge receives is timed against the time stamp of the tap line
   its event came from.

Latency = verdict received by the bridge - tap line's time stamp; it does not include FreeKill's own log
flush (up to 3 s: HEADLESS.md section 9.7), which a real server adds. "Game speed" is 20 records/s per room:
a 5-player game's 5-8k tap lines (HEADLESS.md section 8) over 5-7 minutes of play. Capacity: 20 rooms at
growing paces; a scenario "keeps up" when its median lag is under 1 s and the p99 of its last third is not
well above its first third's (lag that grows or starts high: the bridge or the service cannot keep up).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from clients.bridge.bridge import Bridge, Output, Room, Settings  # noqa: E402
from clients.bridge.replaylog import RotatingLog, room_records  # noqa: E402
from clients.client import VerifierClient  # noqa: E402
from importers.freekill.tap import decode_payload  # noqa: E402
from tools.ending import signals_interrupt  # noqa: E402

DATA = ROOT / "tests" / "data" / "freekill" / "transcripts"
GAME_SPEED = 20.0  # records per second per room


@dataclass
class Scenario:
    name: str
    rooms: int
    pace: float  # records/s per room (0: as fast as the writer can)
    seconds: float


@dataclass
class Result:
    scenario: Scenario
    records: int = 0
    verdicts: list[tuple[float, float]] = field(default_factory=list)  # (when received, lag)
    wall: float = 0.0  # writing time
    started: float = 0.0

    def summary(self) -> dict[str, Any]:
        lags = sorted(lag for _, lag in self.verdicts)
        n = len(lags)
        third = sorted(self.verdicts)
        k = max(1, n // 3)
        early = sorted(lag for _, lag in third[:k])
        late = sorted(lag for _, lag in third[-k:])

        def pct(xs: list[float], p: float) -> float:
            return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else 0.0

        # (events/s over the time from the first line written to the last verdict)
        span = max(t for t, _ in self.verdicts) - self.started if self.verdicts else 0.0
        return {"scenario": self.scenario.name, "rooms": self.scenario.rooms, "pace": self.scenario.pace,
                "records": self.records, "records_per_s": round(self.records / self.wall, 1) if self.wall else 0,
                "events": n, "events_per_s": round(n / span, 1) if span else 0,
                "p50_ms": round(pct(lags, 0.5) * 1000), "p99_ms": round(pct(lags, 0.99) * 1000),
                "first_third_p99_ms": round(pct(early, 0.99) * 1000),
                "last_third_p99_ms": round(pct(late, 0.99) * 1000),
                "mean_ms": round(statistics.fmean(lags) * 1000) if lags else None,
                "lag_grows": bool(n) and pct(late, 0.99) > max(1.0, 2 * pct(early, 0.99)),
                "keeps_up": bool(n) and pct(lags, 0.5) < 1.0 and pct(late, 0.99) <= max(1.0, 2 * pct(early, 0.99))}


def setup_length(records: list[dict[str, Any]]) -> int:
    """How many records a game's set-up takes (up to its first round)."""
    for i, rec in enumerate(records):
        if rec["kind"] == "notify" and rec["cmd"] == "GameLog":
            data = decode_payload(rec["cbor"], "setup")
            if isinstance(data, dict) and data.get("type") in ("$RoundStart", "$TurnStart"):
                return i + 1
    return len(records)


def run_scenario(sc: Scenario, address: str, games: list[list[dict[str, Any]]], base: int) -> Result:
    res = Result(sc)
    lock = threading.Lock()
    with tempfile.TemporaryDirectory(prefix="bridge-bench-") as tmp:
        folder = Path(tmp)
        log = RotatingLog(folder / "freekill.log", max_bytes=4 << 20)

        def on_verdict(room: Room, index: int, lag: float) -> None:
            with lock:
                res.verdicts.append((time.time(), lag))

        client = VerifierClient(address, timeout=120)
        bridge = Bridge(Settings(log=folder / "freekill.log", state=folder / "state", tournament=f"bench-{base}"),
                        client, Output(False, open("/dev/null", "w")), on_verdict=on_verdict)  # noqa: SIM115
        bridge.start()
        runner = threading.Thread(target=bridge.run)
        runner.start()
        # Each room plays one of the games (its records renumbered to its room id), from its start: its set-up
        # (to the first round) written at once, then its game at the scenario's pace.
        rooms = [[{**r, "room": base + k} for r in games[k % len(games)]] for k in range(sc.rooms)]
        setups = [setup_length(games[k % len(games)]) for k in range(sc.rooms)]
        started = res.started = time.time()
        sent = [0] * sc.rooms
        while time.time() - started < sc.seconds:
            now = time.time()
            for k, recs in enumerate(rooms):
                due = len(recs) if sc.pace == 0 else \
                    min(len(recs), setups[k] + int((now - started) * sc.pace) + 1)
                while sent[k] < due:
                    log.write_record(recs[sent[k]], time.time())
                    sent[k] += 1
                    res.records += 1
            if all(s >= len(r) for s, r in zip(sent, rooms, strict=True)):
                break
            time.sleep(0.005)
        writing = time.time() - started
        # Let the verdicts of what was written come in (at most 30 s more).
        until = time.time() + 30
        while time.time() < until:
            with lock:
                got = len(res.verdicts)
            time.sleep(0.5)
            with lock:
                if len(res.verdicts) == got and time.time() - started > writing + 1.0:
                    break
        res.wall = writing
        bridge.stop()
        runner.join(60)
        client.close()
        log.close()
    return res


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--seconds", type=float, default=15.0, help="writing time per scenario (default 15)")
    args = parser.parse_args()

    from service_bench import start_server

    games = [room_records(p, 0) for p in sorted(DATA.glob("*.jsonl.xz"))]
    s = args.seconds
    scenarios = [
        Scenario("1 room, game speed", 1, GAME_SPEED, s),
        Scenario("20 rooms, game speed", 20, GAME_SPEED, s),
        Scenario("1 room, 10x", 1, 10 * GAME_SPEED, s),
        Scenario("20 rooms, 5x", 20, 5 * GAME_SPEED, s),
        Scenario("20 rooms, 10x", 20, 10 * GAME_SPEED, s),
        Scenario("20 rooms, 25x", 20, 25 * GAME_SPEED, s),
        Scenario("20 rooms, 50x", 20, 50 * GAME_SPEED, s),
        Scenario("20 rooms, flat out", 20, 0, s),
    ]
    with tempfile.TemporaryDirectory(prefix="bridge-bench-server-") as data_dir:
        proc, address = start_server(Path(data_dir), 2, echo=False)
        try:
            results = [run_scenario(sc, address, games, 1000 * (i + 1)).summary()
                       for i, sc in enumerate(scenarios)]
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print("| scenario | tap records/s | events judged/s | p50 ms | p99 ms | p99 first / last third ms | keeps up |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['scenario']} | {r['records_per_s']} | {r['events_per_s']} | {r['p50_ms']} | {r['p99_ms']} | "
              f"{r['first_third_p99_ms']} / {r['last_third_p99_ms']} | {'yes' if r['keeps_up'] else 'no'} |")
    return 0


if __name__ == "__main__":
    with signals_interrupt("bridge_bench"):  # (SIGTERM too: what it made is removed)
        raise SystemExit(main())
