"""Verification speed on one core, against two baselines measured in the same run.

    .venv/bin/python bench/speed.py            # or: make bench

A fixed corpus of self-play games (10 each at 4, 5, 8 and 10 players, fixed seeds) is
played once and serialised to bytes. Then, on one core (the process is pinned to one CPU
where the OS allows it), each measure runs over the whole corpus, best of --repeat runs (the
measures take turns, so a slow spell of the machine falls on all three):

  (a) decode       GameLog.FromString on every log
  (b) decode+touch (a), then read every field of every event
  (c) verify       (a), then verifier.verify on every log

and prints events per second for each and the ratios (how many times slower verification
is than each baseline). A second corpus of hegemony (国战) self-play games at the same player
counts is verified the same way, (d), with its events per second and its ratio to (b) on its
own logs. The machine is noisy, so only ratios measured in one run mean anything across runs.
Peak memory per game verified is measured separately (tracemalloc, Python heap), and a
cProfile of (c) shows the hot spots (it sees only the interpreted code: a compiled module's functions are
counted in their callers). The target (issues 4 and 14): at least 150,000 events/s for (c), and within 5x
of (b). It says whether the engine core ran compiled (setup.py) or interpreted.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import os
import pstats
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from google.protobuf.message import Message

import verifier.replay
from clients.selfplay import play_game
from sgsverify.v1 import game_log_pb2 as pb
from verifier import verify
from verifier._native import is_compiled

PLAYER_COUNTS = (4, 5, 8, 10)
GAMES_PER_COUNT = 10
BASE_SEED = 4000  # game i at n players uses seed BASE_SEED + 100 * n + i
TARGET_EVENTS_PER_SECOND = 150_000
TARGET_RATIO_TO_TOUCH = 5.0

Corpus = list[tuple[int, bytes, int]]  # (players, serialised log, events)


def build_corpus(games: int, mode: int = pb.MODE_IDENTITY) -> Corpus:
    corpus = []
    for n in PLAYER_COUNTS:
        for i in range(games):
            log = play_game(BASE_SEED + 100 * n + i, n, mode=mode)
            corpus.append((n, log.SerializeToString(deterministic=True), len(log.events)))
    return corpus


def core_build() -> str:
    """Whether the engine core runs compiled (setup.py) or interpreted."""
    return "compiled (mypyc)" if is_compiled(verifier.replay) else "interpreted"


def pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity") and hasattr(os, "sched_getaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity here); single-threaded"


# ---------------------------------------------------------------------------- the three measures

def decode(blobs: list[bytes]) -> None:
    for blob in blobs:
        pb.GameLog.FromString(blob)


Plan = list[tuple[str, bool, "Plan | None"]]  # (field, repeated, plan of a message field)


def plan_for(desc: Any) -> Plan:
    return [(f.name, f.is_repeated, plan_for(f.message_type) if f.message_type is not None else None)
            for f in desc.fields]


# Every field of every kind of event (the members of Event's oneof), nested messages included.
PLANS = {f.name: plan_for(f.message_type) for f in pb.Event.DESCRIPTOR.oneofs_by_name["kind"].fields}


def touch(msg: Message, plan: Plan) -> int:
    """Read every field of a message (set or not), recursively; returns a count so nothing is skipped."""
    n = 0
    for name, repeated, sub in plan:
        value = getattr(msg, name)
        if repeated:
            for item in value:
                n += 1 if sub is None else touch(item, sub)
        elif sub is not None:
            n += touch(value, sub)
        else:
            n += 1
    return n


def decode_and_touch(blobs: list[bytes]) -> None:
    for blob in blobs:
        log = pb.GameLog.FromString(blob)
        for ev in log.events:
            kind = ev.WhichOneof("kind")
            if kind is not None:
                touch(getattr(ev, kind), PLANS[kind])


def decode_and_verify(blobs: list[bytes]) -> None:
    for blob in blobs:
        verify(pb.GameLog.FromString(blob))


def best_times(measures: dict[str, Callable[[list[bytes]], None]], blobs: list[bytes], repeat: int
               ) -> dict[str, float]:
    """The best of ``repeat`` runs of each measure. The measures take turns (one run of each per
    round) so that a slow spell of the machine falls on all of them, not on one: the ratios hold."""
    best = dict.fromkeys(measures, float("inf"))
    for _ in range(repeat):
        for name, fn in measures.items():
            gc.collect()
            started = time.perf_counter()
            fn(blobs)
            best[name] = min(best[name], time.perf_counter() - started)
    return best


# ---------------------------------------------------------------------------- memory and profile

def _proc_status_kib(key: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


def _reset_rss_high_water() -> bool:
    """Linux: reset the resident-set high-water mark (VmHWM) so one game's peak can be read."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_memory(corpus: Corpus) -> dict[int, dict[str, float]]:
    """Per player count, the peak memory of decoding and verifying one game, in KiB: the Python heap
    (tracemalloc: mean and max over the games) and, where Linux lets us reset the high-water mark, the
    growth of the resident set (which also sees protobuf's C arenas, which tracemalloc does not)."""
    heap: dict[int, list[int]] = {}
    rss: dict[int, list[int]] = {}
    for n, blob, _ in corpus:
        gc.collect()
        tracemalloc.start()
        verify(pb.GameLog.FromString(blob))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        heap.setdefault(n, []).append(peak)
    for n, blob, _ in corpus:
        gc.collect()
        if not _reset_rss_high_water():
            break
        before = _proc_status_kib("VmRSS")
        verify(pb.GameLog.FromString(blob))
        rss.setdefault(n, []).append(max(0, _proc_status_kib("VmHWM") - before))
    out: dict[int, dict[str, float]] = {}
    for n, peaks in heap.items():
        out[n] = {"heap_mean": sum(peaks) / len(peaks) / 1024, "heap_max": max(peaks) / 1024}
        if n in rss:
            out[n]["rss_growth_max"] = float(max(rss[n]))
    return out


def profile(blobs: list[bytes], top: int) -> str:
    prof = cProfile.Profile()
    prof.enable()
    decode_and_verify(blobs)
    prof.disable()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.strip_dirs()
    out.write(f"--- top {top} by cumulative time\n")
    stats.sort_stats("cumulative").print_stats(top)
    out.write(f"--- top {top} by own time\n")
    stats.sort_stats("tottime").print_stats(top)
    # Keep the tables, drop pstats' preamble lines.
    return "\n".join(line for line in out.getvalue().splitlines()
                     if line.strip() and not line.lstrip().startswith(("Ordered by", "List reduced")))


# ---------------------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="runs per measure; the best counts (default 5)")
    parser.add_argument("--games", type=int, default=GAMES_PER_COUNT, help="games per player count (default 10)")
    parser.add_argument("--top", type=int, default=15, help="functions shown in each profile table")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile tables")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if verification is more than {TARGET_RATIO_TO_TOUCH:g}x slower than decode+touch")
    args = parser.parse_args(argv)

    pinned = pin_to_one_core()
    corpus = build_corpus(args.games)
    blobs = [blob for _, blob, _ in corpus]
    events = sum(e for _, _, e in corpus)

    seconds = best_times({"decode": decode, "decode+touch": decode_and_touch, "verify": decode_and_verify},
                         blobs, args.repeat)
    rate = {k: events / s for k, s in seconds.items()}
    vs_decode = rate["decode"] / rate["verify"]
    vs_touch = rate["decode+touch"] / rate["verify"]
    memory = peak_memory(corpus)
    heg = build_corpus(args.games, pb.MODE_HEGEMONY)
    heg_blobs = [blob for _, blob, _ in heg]
    heg_events = sum(e for _, _, e in heg)
    heg_seconds = best_times({"decode+touch": decode_and_touch, "verify": decode_and_verify}, heg_blobs, args.repeat)
    heg_rate = {k: heg_events / s for k, s in heg_seconds.items()}
    # The ratio is the target that means the same on any machine; events/s depends on the machine.
    ratio_met = vs_touch <= TARGET_RATIO_TO_TOUCH
    rate_met = rate["verify"] >= TARGET_EVENTS_PER_SECOND

    if args.json:
        body: dict[str, Any] = {
            "games": len(corpus), "events": events, "repeat": args.repeat, "cpu": pinned, "core": core_build(),
            "events_per_second": {k: round(v) for k, v in rate.items()},
            "verify_slowdown_vs_decode": round(vs_decode, 2), "verify_slowdown_vs_decode_touch": round(vs_touch, 2),
            "peak_kib_per_game": {str(n): {k: round(v) for k, v in m.items()} for n, m in memory.items()},
            "target_events_per_second": TARGET_EVENTS_PER_SECOND, "target_ratio_to_decode_touch": TARGET_RATIO_TO_TOUCH,
            "target_met": ratio_met, "events_per_second_target_met_here": rate_met,
            "hegemony": {"games": len(heg), "events": heg_events,
                         "events_per_second": {k: round(v) for k, v in heg_rate.items()},
                         "verify_slowdown_vs_decode_touch": round(heg_rate["decode+touch"] / heg_rate["verify"], 2)},
        }
        print(json.dumps(body, indent=1))
    else:
        counts = ", ".join(f"{sum(1 for c in corpus if c[0] == n)}×{n}p" for n in PLAYER_COUNTS)
        print(f"corpus: {len(corpus)} self-play games ({counts}), {events:,} events, "
              f"{sum(len(b) for b in blobs) / 1024:,.0f} KiB serialised; {pinned}; best of {args.repeat}; "
              f"engine core {core_build()}")
        print()
        print(f"{'measure':24} {'seconds':>9} {'events/s':>12} {'verify is':>12}")
        for k, label in (("decode", "(a) decode"), ("decode+touch", "(b) decode + touch"), ("verify", "(c) verify")):
            ratio = f"{rate[k] / rate['verify']:.1f}× slower" if k != "verify" else ""
            print(f"{label:24} {seconds[k]:>9.3f} {rate[k]:>12,.0f} {ratio:>12}")
        print()
        print(f"{'(d) verify, hegemony':24} {heg_seconds['verify']:>9.3f} {heg_rate['verify']:>12,.0f} "
              f"{'':>12}  ({len(heg)} games, {heg_events:,} events; "
              f"{heg_rate['decode+touch'] / heg_rate['verify']:.1f}× its decode + touch)")
        print()
        print(f"ratios: verify/decode = {vs_decode:.1f}×, verify/(decode+touch) = {vs_touch:.1f}× "
              f"(target: ≤ {TARGET_RATIO_TO_TOUCH:.0f}× decode+touch — {'met' if ratio_met else 'NOT met'}; "
              f"≥ {TARGET_EVENTS_PER_SECOND:,} events/s on this machine — {'met' if rate_met else 'NOT met'})")
        print()
        print("peak memory per game verified (decode + verify; Python heap by tracemalloc, and the growth of the")
        print("resident set over the process's size before the game, which also sees protobuf's C arenas):")
        for n, m in sorted(memory.items()):
            rss_note = f"; resident set grew at most {m['rss_growth_max']:,.0f} KiB" if "rss_growth_max" in m else ""
            print(f"  {n:>2} players: heap peak mean {m['heap_mean']:,.0f} KiB, max {m['heap_max']:,.0f} KiB{rss_note}")
        if not args.no_profile:
            print()
            print("profile of (c) over the corpus (cProfile; its overhead inflates the times):")
            print(profile(blobs, args.top))
    return 1 if args.check and not ratio_met else 0


if __name__ == "__main__":
    raise SystemExit(main())
