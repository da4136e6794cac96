"""The service of this tree against the service of another commit, on the same games, taking turns.

    .venv/bin/python bench/service_ab.py --base main~3            # or any commit, tag or branch
    .venv/bin/python bench/service_ab.py --base b673740 --games 20 --rounds 8

On a shared machine, two benchmark runs minutes apart differ by more than most changes do (seen here: the
same code 0.47x and 0.82x of offline in two runs). This starts both servers at once — the base commit's from
a temporary git worktree, with this tree's virtualenv — and alternates every phase between them, round by
round (the order flips each round), so a slow spell falls on both. Each phase (whole-log, upload, live, as in
bench/service_bench.py, and its bulk phases: one client with this tree's client library's calls in flight)
reports, per server, the median over the rounds of the CPU time the server and its worker processes spent per
event (from /proc) and of the wall time per event, and the ratio of this tree's to the base's: below 1 is
faster. A benchmark, never run by the tests.

Both servers run the engine core the same way: when this tree's is compiled (setup.py, ``make native``), the
base's worktree is compiled too before the rounds (about a minute and a half; a base from before the compiled
core, or ``--interpreted``, runs both from their sources) — a compiled server against an interpreted one
would measure the build, not the change.
"""

from __future__ import annotations

import argparse
import os
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
from tools.ending import signals_interrupt  # noqa: E402
from verifier import replay  # noqa: E402
from verifier._native import INTERPRETED, is_compiled  # noqa: E402

PHASES: dict[str, Callable[[VerifierClient, pb.GameLog], None]] = {
    "whole-log": sb.whole, "upload stream": sb.upload, "live stream": sb.live}
# One client, the client library's calls in flight (this tree's library, against either server).
BULK_PHASES: dict[str, Callable[[VerifierClient, list[pb.GameLog]], None]] = {
    "whole-log bulk": sb.whole_bulk, "upload bulk": sb.upload_bulk}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the commit to compare with (anything git rev-parse takes)")
    parser.add_argument("--games", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--interpreted", action="store_true",
                        help="run both engine cores from their sources (no build of the base)")
    args = parser.parse_args()

    logs = [play_game(1000 + i, 6) for i in range(args.games)]
    events = sum(len(g.events) for g in logs)
    with tempfile.TemporaryDirectory() as tmp:
        base_tree = Path(tmp) / "base"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(base_tree), args.base], cwd=ROOT, check=True)
        try:
            compiled = not args.interpreted and is_compiled(replay) and compile_core(base_tree)
            env = None if compiled else {**os.environ, INTERPRETED: "1"}
            print(f"engine cores: {'both compiled (mypyc)' if compiled else 'both interpreted'}")
            (Path(tmp) / "base-data").mkdir()
            (Path(tmp) / "this-data").mkdir()
            servers = {"base": sb.start_server(Path(tmp) / "base-data", 2, base_tree, echo=False, env=env),
                       "this": sb.start_server(Path(tmp) / "this-data", 2, ROOT, echo=False, env=env)}
            clients = {name: VerifierClient(address, timeout=300) for name, (_, address) in servers.items()}
            cpu: dict[tuple[str, str], list[float]] = {}
            wall: dict[tuple[str, str], list[float]] = {}
            try:
                for rnd in range(args.rounds):
                    for phase in (*PHASES, *BULK_PHASES):
                        for name in ("base", "this") if rnd % 2 == 0 else ("this", "base"):
                            proc = servers[name][0]
                            before = sb.process_tree_cpu(proc.pid) or 0.0
                            started = time.perf_counter()
                            stamped = sb.stamped(logs, f"{phase} round {rnd}")
                            if phase in BULK_PHASES:
                                BULK_PHASES[phase](clients[name], stamped)
                            else:
                                for log in stamped:
                                    PHASES[phase](clients[name], log)
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
    for phase in (*PHASES, *BULK_PHASES):
        cb, ct = (statistics.median(cpu[(n, phase)]) for n in ("base", "this"))
        wb, wt = (statistics.median(wall[(n, phase)]) for n in ("base", "this"))
        print(f"{phase:<15} {cb:>9.1f} {ct:>9.1f} {ct / cb:>6.2f} {wb:>10.1f} {wt:>10.1f} {wt / wb:>6.2f}")
    return 0


def compile_core(tree: Path) -> bool:
    """Compile the engine core of the worktree ``tree`` in place, as ``make native`` does; False when that
    commit has no compiled core (no setup.py) or its build fails (said why)."""
    if not (tree / "setup.py").exists():
        print("the base has no compiled core: both run interpreted")
        return False
    print("compiling the base's engine core ...")
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(f"the base's build failed, both run interpreted:\n{done.stderr[-2000:]}")
        return False
    return True


if __name__ == "__main__":
    with signals_interrupt("service_ab"):  # (SIGTERM too: what it made is removed)
        raise SystemExit(main())
