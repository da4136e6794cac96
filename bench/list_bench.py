"""How a page of the replay list costs as the store grows: the same pages on a small store and on a large one.

    .venv/bin/python bench/list_bench.py                      # 2,000 and 20,000 replays, SQLite
    .venv/bin/python bench/list_bench.py --small 1000 --large 50000 --db postgresql+psycopg://postgres@127.0.0.1/test

A list (ListReplays, `sgs-verify list`, the viewer's) is newest first, a page at a time with a keyset token. It
stores the replays of a few self-play games under distinct hashes (as many as asked, in one tenant and one
tournament, so every filter below matches them all), then times, on both stores, the first page, a page in
the middle and the last page of 50 — with no filter, a tenant's and a tournament's — and the total count each
page carries. Each figure is the best of --repeat; the ratio is the large store's over the small one's, both
measured in this run: a page read off an index stays near 1 however large the store (the count, which reads
every matching replay, grows with it). A benchmark, never run by the tests. ``--db``: an empty database
(PostgreSQL: analyzed after each fill, as autovacuum soon would be; its replays are deleted afterwards); default
a temporary SQLite file.
"""

from __future__ import annotations

import argparse
import functools
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from clients.selfplay import play_game
from service.work import VerifyJob, run_job
from storage import migrate
from storage.database import sqlite_url
from storage.store import NewReplay, ReplayFilter, Store, SubmissionMetadata
from tools.ending import signals_interrupt

PAGE = 50
FILTERS = {"all": ReplayFilter(), "tenant": ReplayFilter(tenant="default"),
           "tournament": ReplayFilter(tournament="bench")}


def fill(store: Store, records: list[NewReplay], count: int, start: int) -> None:
    for n in range(start, start + count):
        store.save(replace(records[n % len(records)], log_sha256=f"{n:064x}"))


def best(fn: Callable[[], object], repeat: int) -> float:
    """Milliseconds of the fastest of ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times) * 1e3


def page_times(store: Store, filters: ReplayFilter, repeat: int) -> dict[str, float]:
    """Milliseconds for the first, a middle and the last page (tokens walked once beforehand)."""
    tokens = [""]
    while True:
        token = store.list(filters, page_size=PAGE, page_token=tokens[-1]).next_page_token
        if not token:
            break
        tokens.append(token)
    chosen = {"first": tokens[0], "middle": tokens[len(tokens) // 2], "last": tokens[-1]}
    return {name: best(functools.partial(store.list, filters, page_size=PAGE, page_token=token), repeat)
            for name, token in chosen.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--small", type=int, default=2_000)
    parser.add_argument("--large", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--db", help="an empty database URL (default: a temporary SQLite file)")
    args = parser.parse_args()
    records = [run_job(VerifyJob(play_game(100 + i, 6).SerializeToString(), SubmissionMetadata(tournament="bench"),
                                 100_000)) for i in range(10)]
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(args.db or sqlite_url(Path(tmp) / "replays.sqlite3"))
        try:
            migrate.upgrade(store.engine)
            if store.count():
                raise SystemExit("--db is not empty")
            seen: dict[int, dict[str, dict[str, float]]] = {}
            for size in (args.small, args.large):
                started = time.perf_counter()
                fill(store, records, size - store.count(), store.count())
                if not store.sqlite:
                    # What autovacuum does after a load this size, soon: PostgreSQL plans from its statistics,
                    # and before they are taken it takes the freshly filled tables for nearly empty ones.
                    with store.engine.begin() as conn:
                        conn.exec_driver_sql("ANALYZE")
                print(f"{size:,} replays stored ({time.perf_counter() - started:.1f} s)")
                seen[size] = {name: page_times(store, f, args.repeat) for name, f in FILTERS.items()}
        finally:
            if args.db:
                with store.engine.begin() as conn:
                    conn.exec_driver_sql("DELETE FROM replays")
            store.close()
    print(f"\n{store.url.split('://')[0]}; pages of {PAGE}, best of {args.repeat}, milliseconds (each with its total "
          f"count); ratio: {args.large:,} replays over {args.small:,}")
    print(f"{'filter':<11} {'page':<7} {f'{args.small:,}':>9} {f'{args.large:,}':>9} {'ratio':>6}")
    for name in FILTERS:
        for which in ("first", "middle", "last"):
            small, large = seen[args.small][name][which], seen[args.large][name][which]
            print(f"{name:<11} {which:<7} {small:>9.1f} {large:>9.1f} {large / small:>6.2f}")
    return 0


if __name__ == "__main__":
    with signals_interrupt("list_bench"):  # (SIGTERM too: what it made is removed)
        raise SystemExit(main())
