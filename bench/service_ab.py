"""The service of this tree against the service of another commit, on the same games, taking turns.

    .venv/bin/python bench/service_ab.py --base main~3            # or any commit, tag or branch
    .venv/bin/python bench/service_ab.py --base b673740 --games 20 --rounds 8

On a shared machine, two benchmark runs minutes apart differ by more than most changes do (seen here: the
same code 0.47x and 0.82x of offline in two runs). This starts both servers at once — the base commit's from
a temporary git worktree, with this tree's virtualenv — and alternates every phase between them, round by
round (the order flips each round), so a slow spell falls on both. Each phase (whole-log, upload, live, as in
bench/service_bench.py) reports, per server, the median over the rounds of the CPU time the server and its
worker processes spent per event (from /proc) and of the wall time per event, and the ratio of this tree's to
the base's: below 1 is faster. A benchmark, never run by the tests.
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import service_bench as sb  # noqa: E402

from clients.client import VerifierClient  # noqa: E402
from clients.selfplay import play_game  # noqa: E402
from sgsverify.v1 import game_log_pb2 as pb  # noqa: E402

PHASES: dict[str, Callable[[VerifierClient, pb.GameLog], None]] = {
    "whole-log": sb.whole, "upload stream": sb.upload, "live stream": sb.live}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the commit to compare with (anything git rev-parse takes)")
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()

    logs = [play_game(1000 + i, 6) for i in range(args.games)]
    events = sum(len(g.events) for g in logs)
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base_tree), args.base], cwd=ROOT, check=True)
        try:
            (Path(tmp) / "base-data").mkdir()
            (Path(tmp) / "this-data").mkdir()
            servers = {"base": sb.start_server(Path(tmp) / "base-data", 2, base_tree, echo=False),
                       "this": sb.start_server(Path(tmp) / "this-data", 2, ROOT, echo=False)}
            clients = {name: VerifierClient(address, timeout=300) for name, (_, address) in servers.items()}
            cpu: dict[tuple[str, str], list[float]] = {}
            wall: dict[tuple[str, str], list[float]] = {}
            try:
                for rnd in range(args.rounds):
                    for phase, submit in PHASES.items():
                        for name in ("base", "this") if rnd % 2 == 0 else ("this", "base"):
                            proc = servers[name][0]
                            before = sb.process_tree_cpu(proc.pid) or 0.0
                            started = time.perf_counter()
                            for log in sb.stamped(logs, f"{phase} round {rnd}"):
                                submit(clients[name], log)
                            wall.setdefault((name, phase), []).append((time.perf_counter() - started) * 1e6 / events)
                            after = sb.process_tree_cpu(proc.pid) or 0.0
                            cpu.setdefault((name, phase), []).append((after - before) * 1e6 / events)
                    print(f"round {rnd + 1}/{args.rounds} done")
            finally:
                for c in clients.values():
                    c.close()
                for proc, _ in servers.values():
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(timeout=60)  # (its output is read by start_server's thread to the end)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT, check=False)

    print()
    print(f"{args.games} games of 6 players, {events} events, {args.rounds} rounds; base {args.base}; medians "
          "over the rounds, microseconds per event")
    print(f"{'phase':<15} {'cpu base':>9} {'cpu this':>9} {'ratio':>6} {'wall base':>10} {'wall this':>10} "
          f"{'ratio':>6}")
    for phase in PHASES:
        cb, ct = (statistics.median(cpu[(n, phase)]) for n in ("base", "this"))
        wb, wt = (statistics.median(wall[(n, phase)]) for n in ("base", "this"))
        print(f"{phase:<15} {cb:>9.1f} {ct:>9.1f} {ct / cb:>6.2f} {wb:>10.1f} {wt:>10.1f} {wt / wb:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
