"""The long fuzz run (docs/fuzzing.md): cases of every family through `check` and every RPC of the service,
on SQLite and PostgreSQL, and a table per family and backend of cases, crashes, hangs, UNKNOWN and INTERNAL
answers, other unexpected outcomes, and the server's resident memory (start/peak/end).

Usage: python tools/fuzz.py [--cases N] [--family F ...] [--backend sqlite|postgres|both] [--seed S]
                            [--start I] [--findings DIR] [--json FILE] [--jobs J]

--cases N is per family (and per backend for the rpc-* families); the check-* families run in this
process (and --jobs more), the rpc-* families against one `sgs-verify serve` per backend, started on a
fresh database with small limits. Every finding's input is written to --findings (default fuzz-findings/)
with the command that replays it. Exit status 1 if anything was found.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import tempfile
import time
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import fuzzing  # noqa: E402

STORE_CHECK_EVERY = 2000  # RPC cases between two checks of the whole store (and a clean-up)
MEMORY_EVERY = 200  # RPC cases between two samples of the server's memory


def offline_chunk(family: str, seed: int, start: int, count: int, findings: str) -> dict[str, Any]:
    """``count`` cases of an offline family from ``start``; a tally (as a dict) and the peak RSS."""
    tally = fuzzing.Tally()
    started = time.monotonic()
    for index in range(start, start + count):
        outcome, data = fuzzing.run_offline_case(family, fuzzing.case_rng(family, seed, index))
        tally.add(outcome)
        if outcome.finding:
            fuzzing.write_finding(Path(findings), family, "offline", seed, index, outcome, data)
    tally.seconds = time.monotonic() - started
    import resource

    return {"tally": tally, "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}


def merge(into: fuzzing.Tally, part: fuzzing.Tally) -> None:
    for name in ("cases", "crashes", "hangs", "unknown", "internal", "unexpected"):
        setattr(into, name, getattr(into, name) + getattr(part, name))
    into.seconds += part.seconds
    for label, n in part.outcomes.items():
        into.outcomes[label] = into.outcomes.get(label, 0) + n


def row(family: str, backend: str, t: fuzzing.Tally, memory: str) -> str:
    return (f"{family:15} {backend:9} {t.cases:>9,} {t.crashes:>7} {t.hangs:>5} {t.unknown:>7} {t.internal:>8} "
            f"{t.unexpected:>10}  {memory}")


HEAD = (f"{'family':15} {'backend':9} {'cases':>9} {'crashes':>7} {'hangs':>5} {'UNKNOWN':>7} {'INTERNAL':>8} "
        f"{'unexpected':>10}  memory (start/peak/end)")


def run_offline(family: str, args: argparse.Namespace, results: list[dict[str, Any]]) -> None:
    """The family's cases in chunks of consecutive indices, in this process or ``--jobs`` others; with
    ``--minutes``, no chunk is started after the family's time is up (the cases done stay consecutive)."""
    cases = args.counts.get(family, args.cases)
    chunk = max(1, min(500, cases // max(1, args.jobs * 4)))
    starts = iter(range(args.start, args.start + cases, chunk))
    tally = fuzzing.Tally()
    peak = 0
    started = time.monotonic()

    def more() -> int | None:
        if args.minutes and time.monotonic() - started > args.minutes * 60:
            return None
        return next(starts, None)

    def take(part: dict[str, Any]) -> None:
        nonlocal peak
        merge(tally, part["tally"])
        peak = max(peak, part["peak_kib"])
        progress(family, "offline", tally, started)

    if args.jobs <= 1:
        while (s := more()) is not None:
            take(offline_chunk(family, args.seed, s, min(chunk, args.start + cases - s), str(args.findings)))
    else:
        with ProcessPoolExecutor(args.jobs) as pool:
            pending: deque[Future[dict[str, Any]]] = deque()
            while True:
                while len(pending) < 2 * args.jobs and (s := more()) is not None:
                    pending.append(pool.submit(offline_chunk, family, args.seed, s,
                                               min(chunk, args.start + cases - s), str(args.findings)))
                if not pending:
                    break
                take(pending.popleft().result())
    tally.seconds = time.monotonic() - started
    memory = f"fuzzer peak {peak // 1024} MiB"
    print(row(family, "offline", tally, memory), flush=True)
    results.append({"family": family, "backend": "offline", **summary(tally), "memory": {"peak_kib": peak}})


_last_progress = 0.0


def progress(family: str, backend: str, tally: fuzzing.Tally, started: float) -> None:
    """A line on stderr, at most every 30 s."""
    global _last_progress
    if time.monotonic() - _last_progress < 30:
        return
    _last_progress = time.monotonic()
    seconds = time.monotonic() - started
    print(f"  … {family} {backend}: {tally.cases:,} cases, {tally.findings} finding(s), "
          f"{tally.cases / max(seconds, 1e-9):,.0f}/s", file=sys.stderr, flush=True)


def summary(t: fuzzing.Tally) -> dict[str, Any]:
    return {"cases": t.cases, "crashes": t.crashes, "hangs": t.hangs, "unknown": t.unknown, "internal": t.internal,
            "unexpected": t.unexpected, "seconds": round(t.seconds, 1), "outcomes": dict(sorted(t.outcomes.items()))}


def run_backend(backend: str, families: list[str], args: argparse.Namespace, results: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory(prefix=f"sgsv-fuzz-{backend}-") as folder:
        server = fuzzing.ServerUnderTest(backend, Path(folder), workers=args.workers).start()
        try:
            for family in families:
                run_rpc_family(server, family, args, results)
        finally:
            server.stop()


def run_rpc_family(server: fuzzing.ServerUnderTest, family: str, args: argparse.Namespace,
                   results: list[dict[str, Any]]) -> None:
    cases = args.counts.get(family, args.cases)
    generator = fuzzing.RPC_GENERATORS[family]
    tally = fuzzing.Tally()
    memory = fuzzing.Memory()
    assert server.proc is not None
    memory.sample(server.proc.pid, first=True)
    store_problems: list[str] = []
    started = time.monotonic()
    end = args.start + cases
    for index in range(args.start, args.start + cases):
        if args.minutes and time.monotonic() - started > args.minutes * 60:
            end = index
            break
        case = generator(fuzzing.case_rng(family, args.seed, index), server.known)
        try:
            outcome = server.run(case)
        except Exception as err:  # the fuzzer's own checks failed to run (e.g. the count after an error)
            outcome = fuzzing.Outcome("unexpected", f"{type(err).__name__}: {err}"[:2000])
        tally.add(outcome)
        if outcome.finding:
            fuzzing.write_finding(args.findings, family, server.backend, args.seed, index, outcome, case.pack())
            print(f"  finding: {family} {server.backend} case {index}: {outcome.label}: {outcome.detail[:300]}",
                  file=sys.stderr, flush=True)
            if not server.alive:
                server.restart()
        done = index - args.start + 1
        if done % MEMORY_EVERY == 0:
            memory.sample(server.proc.pid)
            server.memory.sample(server.proc.pid)
        if done % STORE_CHECK_EVERY == 0:
            store_problems += check_store(server, family, index, args)
        progress(family, server.backend, tally, started)
    store_problems += check_store(server, family, end, args)
    memory.sample(server.proc.pid)
    tally.seconds = time.monotonic() - started
    print(row(family, server.backend, tally, memory.text()), flush=True)
    results.append({"family": family, "backend": server.backend, **summary(tally),
                    "memory": {"start_kib": memory.start, "peak_kib": memory.peak, "end_kib": memory.end,
                               "with_workers_start_kib": memory.start_total,
                               "with_workers_peak_kib": memory.peak_total,
                               "with_workers_end_kib": memory.end_total},
                    "store_problems": store_problems, "server_restarts": server.restarts})


def check_store(server: fuzzing.ServerUnderTest, family: str, index: int, args: argparse.Namespace) -> list[str]:
    try:
        problems = server.check_store()
    except Exception as err:
        problems = [f"the store check failed: {type(err).__name__}: {err}"]
    for p in problems:
        print(f"  store problem after {family} case {index} ({server.backend}): {p}", file=sys.stderr, flush=True)
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000, help="cases per family (and backend), default 1000")
    parser.add_argument("--family", action="append", metavar="FAMILY[=N]", help="only these families "
                        "(repeatable; default: all), each with its own number of cases if =N is given: "
                        + ", ".join(fuzzing.FAMILIES))
    parser.add_argument("--backend", choices=["sqlite", "postgres", "both", "none"], default="both",
                        help="the database of the rpc-* families' server (none: offline families only)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="index of the first case (to replay a finding)")
    parser.add_argument("--findings", type=Path, default=Path("fuzz-findings"), help="where finding inputs go")
    parser.add_argument("--json", type=Path, help="also write the results as JSON here")
    parser.add_argument("--jobs", type=int, default=1, help="processes for the check-* families (default 1)")
    parser.add_argument("--minutes", type=float, default=0, help="at most this long per family (and backend): "
                        "the cases done by then are counted (default: no limit)")
    parser.add_argument("--workers", type=int, default=1, help="the server's verification workers (default 1)")
    args = parser.parse_args(argv)
    # SIGTERM ends the run like ^C: the servers are stopped and their databases dropped.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    args.counts = {}
    families = []
    for item in args.family or fuzzing.FAMILIES:
        name, _, count = item.partition("=")
        if name not in fuzzing.FAMILIES or (count and not count.isdigit()):
            parser.error(f"--family {item}: a family is one of {', '.join(fuzzing.FAMILIES)}, optionally =N")
        families.append(name)
        if count:
            args.counts[name] = int(count)
    offline = [f for f in families if f in fuzzing.OFFLINE_FAMILIES]
    rpc = [f for f in families if f in fuzzing.RPC_FAMILIES]
    backends = {"both": ["sqlite", "postgres"], "none": []}.get(args.backend, [args.backend])
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    counts = ", ".join(f"{f} {args.counts.get(f, args.cases):,}" for f in families)
    print(f"fuzz: seed {args.seed}, from case {args.start}: {counts}"
          + (f" (rpc-* on each of {', '.join(backends)})" if rpc and backends else ""), flush=True)
    print(HEAD, flush=True)
    fuzzing.corpus()
    for family in offline:
        run_offline(family, args, results)
    for backend in backends if rpc else []:
        run_backend(backend, rpc, args, results)
    total = fuzzing.Tally()
    for r in results:
        merge(total, fuzzing.Tally(cases=r["cases"], crashes=r["crashes"], hangs=r["hangs"], unknown=r["unknown"],
                                   internal=r["internal"], unexpected=r["unexpected"]))
    store_problems = sum(len(r.get("store_problems", [])) for r in results)
    print("-" * len(HEAD))
    print(row("all", "", total, f"{store_problems} store problem(s); {time.monotonic() - started:,.0f} s"))
    if args.json:
        args.json.write_text(json.dumps({"seed": args.seed, "start": args.start,
                                         "results": results, "total": summary(total)}, indent=1) + "\n")
    return 1 if total.findings or store_problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
