"""A regression run's work against `check`'s, counted in instructions (issue 31): the figure that repeats.

    .venv/bin/python bench/regress_instructions.py [--games 80]    # needs valgrind (Debian's package)

`regress_bench.py` times the paths by the clock and by CPU time, on a machine whose speed drifts by half within
a minute; a single round of the same code moves by about 0.1. An instruction count does not move with the
machine's load: this counts, under valgrind's callgrind, the instructions each path executes over the same
--games self-play games (4–10 players, fixed seeds) stored in an SQLite file, in one process:

  check            offline verification of every log (verifier.verify), the baseline
  check, variant   the same under the test variant (tests/regress_variant.py), the variant's baseline
  regress          `regress` under the same engine, in process (LocalBackend(0)): the store read, every replay
                   verified and compared, the report
  regress variant  `regress` under the variant with a named run: most replays change, their comparisons and
                   verdicts written too

Each path runs in a process of its own, after the same set-up (imports, the games loaded, the engine and the
run's code warmed on a few other games, so that one-time costs are no path's); a process that does the set-up
only is subtracted from each. The ratio per path is its baseline's instructions over its own — what
`regress_bench.py`'s "cpu/core" would be on a machine without drift, without the cache effects of several
processes (which instructions do not show) and without the database server's CPU. It takes about a minute a path
here (two at a time on 2 cores). --json prints the figures as one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.ending import signals_interrupt  # noqa: E402

VARIANT = "tests.regress_variant:REBEL_REWARD_TWO"
PATHS = ("setup", "check", "check, variant", "regress", "regress variant")
WARM_GAMES = 4


def _blobs(path: Path) -> list[bytes]:
    data, out, pos = path.read_bytes(), [], 0
    while pos < len(data):
        size = int.from_bytes(data[pos:pos + 4], "big")
        out.append(data[pos + 4:pos + 4 + size])
        pos += 4 + size
    return out


def child(path: str, folder: Path) -> None:
    """One path, in this process (run under callgrind by the parent)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from regress_bench import check

    from service.regress import LocalBackend, RegressOptions, regress
    from storage.database import sqlite_url
    from storage.store import Store

    blobs = _blobs(folder / "games.bin")
    # The set-up every path shares: the engine and the run's code (the store's statements, the comparison, the
    # verdicts' writes) warmed on other games, in a store of their own.
    warm = Store.open(sqlite_url(folder / "warm.sqlite3"))
    check(_blobs(folder / "warm.bin"))
    check(_blobs(folder / "warm.bin"), VARIANT)
    regress(warm, RegressOptions(), LocalBackend(0))
    regress(warm, RegressOptions(engine=VARIANT, run="warm"), LocalBackend(0))
    warm.close()
    store = Store.open(sqlite_url(folder / "games.sqlite3"))
    if path == "check":
        check(blobs)
    elif path == "check, variant":
        check(blobs, VARIANT)
    elif path == "regress":
        result = regress(store, RegressOptions(), LocalBackend(0))
        assert result.verified == len(blobs) and not result.changed, "the same engine reported a change"
    elif path == "regress variant":
        result = regress(store, RegressOptions(engine=VARIANT, run="variant"), LocalBackend(0))
        assert result.verified == len(blobs) and result.changed, "the variant reported no change"
    store.close()


def _write_blobs(path: Path, blobs: list[bytes]) -> None:
    path.write_bytes(b"".join(len(b).to_bytes(4, "big") + b for b in blobs))


def prepare(template: Path, games: int) -> None:
    """What every path's process starts from (each gets a copy): the games, and the warm-up's, as files of
    length-prefixed logs and stored in SQLite files."""
    sys.path.insert(0, str(ROOT / "bench"))
    from regress_bench import fill

    from clients.selfplay import play_game
    from storage.database import sqlite_url

    template.mkdir(parents=True)
    blobs = [play_game(seed, 4 + seed % 7).SerializeToString(deterministic=True) for seed in range(games)]
    warm = [play_game(seed, 4 + seed % 7).SerializeToString(deterministic=True)
            for seed in range(10_000, 10_000 + WARM_GAMES)]
    for name, logs in (("games", blobs), ("warm", warm)):
        _write_blobs(template / f"{name}.bin", logs)
        fill(sqlite_url(template / f"{name}.sqlite3"), logs).close()


def _count(path: str, folder: Path, name: str) -> int:
    """The instructions a process doing ``path`` executed, all of them (callgrind's summary)."""
    run = folder / name.replace(", ", "-").replace(" ", "-")
    shutil.copytree(folder / "template", run)
    out = run / "callgrind.out"
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # (the same dict layouts in every process)
    done = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
                           __file__, "--child", path, "--folder", str(run)],
                          capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{path}: valgrind exited {done.returncode}\n{done.stderr[-3000:]}")
    count = instructions(out.read_text())
    if count is None:
        raise SystemExit(f"{path}: no instruction count in {out}")
    return count


def instructions(callgrind_out: str) -> int | None:
    """The total of a callgrind output file (its ``summary:`` line, or ``totals:`` in older versions)."""
    for line in callgrind_out.splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    return None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--games", type=int, default=80)
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object, last")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder)
        return 0
    if shutil.which("valgrind") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2

    folder = Path(tempfile.mkdtemp(prefix="regress-instructions-"))
    try:
        prepare(folder / "template", args.games)
        # (every process counted on its own: run side by side, as the counts do not depend on the machine's load;
        # the set-up twice, to show how far its count repeats — the error of every subtraction)
        runs = [*PATHS, "setup again"]
        with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
            counts = dict(zip(runs, pool.map(lambda path: _count(path.removesuffix(" again"), folder, path), runs),
                              strict=True))
        for path in runs:
            print(f"  {path}: {counts[path] / 1e6:,.1f} M instructions in all", flush=True)
        work = {path: counts[path] - counts["setup"] for path in PATHS[1:]}
        baseline = {"check": "check", "check, variant": "check, variant", "regress": "check",
                    "regress variant": "check, variant"}
        repeat = abs(counts["setup again"] - counts["setup"])
        print(f"{args.games} games; instructions beyond the set-up's ({counts['setup'] / 1e6:,.0f} M; a second "
              f"count of it differed by {repeat / 1e6:.2f} M):")
        print(f"{'path':<18}{'M instructions':>16}{'M a replay':>12}{'ratio':>8}  (baseline)")
        rows = []
        for path, n in work.items():
            ratio = work[baseline[path]] / n
            rows.append({"path": path, "instructions": n, "per_replay": n / args.games, "baseline": baseline[path],
                         "ratio": ratio})
            print(f"{path:<18}{n / 1e6:>16,.0f}{n / args.games / 1e6:>12.2f}{ratio:>8.3f}  ({baseline[path]})")
        if args.json:
            print(json.dumps({"games": args.games, "setup": counts["setup"], "setup_repeat_difference": repeat,
                              "rows": rows}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    with signals_interrupt("regress_instructions"):  # (SIGTERM too: what it made is removed)
        raise SystemExit(main())
