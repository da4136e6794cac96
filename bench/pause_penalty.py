"""What pausing between games costs verification on this machine: the same work, with and without pauses.

    .venv/bin/python bench/pause_penalty.py                 # pauses of 0, 1, 3 and 10 ms, 5 rounds
    .venv/bin/python bench/pause_penalty.py --pauses 0,5 --rounds 9

The service verifies a game in a worker process that then waits while the server stores it and the client
sends the next (a few milliseconds a game with one client); `sgs-verify check`, the offline baseline of
bench/service_bench.py, verifies game after game without a pause. This measures how much slower the very same
verification runs when each game follows a pause: one process, the CPU time of each game's verification alone
(time.process_time, so the pause itself is never counted), the pause lengths taking turns round by round, the
median over the rounds. A ratio above 1 is the machine's penalty for waking up (caches, and on a virtual
machine the host's own scheduling), which a serial path of the service pays and the offline baseline does not.
A benchmark, never run by the tests.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clients.selfplay import play_game
from verifier import load_log, verify


def cpu_per_event(blobs: list[bytes], events: int, pause: float) -> float:
    """Microseconds of CPU per event verifying the games, each after a pause of ``pause`` seconds."""
    spent = 0.0
    for data in blobs:
        if pause:
            time.sleep(pause)
        started = time.process_time()
        verify(load_log(data))
        spent += time.process_time() - started
    return spent * 1e6 / events


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=40)
    parser.add_argument("--players", type=int, default=6)
    parser.add_argument("--pauses", default="0,1,3,10", help="comma-separated pauses in milliseconds (0: none)")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    pauses = [float(x) / 1000 for x in args.pauses.split(",")]
    blobs = [play_game(1000 + i, args.players).SerializeToString() for i in range(args.games)]
    events = sum(len(load_log(b).events) for b in blobs)
    cpu_per_event(blobs, events, 0.0)  # (warm-up: imports, caches)
    seen: dict[float, list[float]] = {p: [] for p in pauses}
    for rnd in range(args.rounds):
        order = pauses if rnd % 2 == 0 else pauses[::-1]
        for pause in order:
            seen[pause].append(cpu_per_event(blobs, events, pause))
        print(f"round {rnd + 1}/{args.rounds}: " + ", ".join(f"{p * 1000:g} ms {seen[p][-1]:.2f}" for p in pauses))
    base = statistics.median(seen[pauses[0]])
    print(f"\n{args.games} games of {args.players} players, {events} events; CPU µs per event of verifying alone, "
          f"median over {args.rounds} rounds")
    print(f"{'pause':>8} {'cpu us/ev':>10} {'x first':>8}")
    for pause in pauses:
        value = statistics.median(seen[pause])
        print(f"{pause * 1000:>6g}ms {value:>10.2f} {value / base:>7.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
