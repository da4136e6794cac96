"""How many replays a second the store takes (issue 30: where the next bottleneck is with N replicas).

    PYTHONPATH=. .venv/bin/python bench/store_write_bench.py --db postgresql+psycopg://postgres@127.0.0.1/DB
    PYTHONPATH=. .venv/bin/python bench/store_write_bench.py            # a temporary SQLite file

Verifies a few self-play games once, then saves distinct copies of their records (each its own log hash, as
distinct games are) from 1 and from T threads — T replicas' store threads writing at once — and prints saves/s
and the events/s that is at the games' size. A benchmark: never run by the tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import threading
import time
from pathlib import Path

from clients.selfplay import play_game
from service.work import VerifyJob, run_job
from storage import migrate
from storage.database import sqlite_url
from storage.store import NewReplay, Store, SubmissionMetadata
from tools.ending import signals_interrupt


def copies(base: list[NewReplay], n: int, tag: str) -> list[NewReplay]:
    out = []
    for i in range(n):
        r = base[i % len(base)]
        out.append(dataclasses.replace(r, log_sha256=f"{tag}{i:08d}".ljust(64, "0")[:64]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default="")
    parser.add_argument("--saves", type=int, default=300)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="store-write-bench-") as tmp:  # (removed however the run ends)
        store = Store.open(args.db or sqlite_url(Path(tmp) / "bench.sqlite3"), pool_size=args.threads + 1)
        try:
            run(store, args.saves, args.threads)
        finally:
            store.close()


def run(store: Store, saves: int, threads_at_most: int) -> None:
    migrate.upgrade(store.engine)
    base = [run_job(VerifyJob(play_game(seed, 6).SerializeToString(deterministic=True), SubmissionMetadata(),
                              100_000, canonical=True)) for seed in range(1, 5)]
    events = sum(r.event_count for r in base) / len(base)
    stamp = f"{time.time_ns():x}"[-8:]
    for threads in (1, threads_at_most):
        records = copies(base, saves, f"{stamp}{threads:02d}")
        chunks = [records[i::threads] for i in range(threads)]
        started = time.perf_counter()
        workers = [threading.Thread(target=lambda c=c: [store.save(r, "bench") for r in c]) for c in chunks]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        seconds = time.perf_counter() - started
        rate = saves / seconds
        print(f"{store.engine.dialect.name}, {threads} thread(s): {rate:.0f} saves/s ({1000 / rate:.2f} ms each), "
              f"{rate * events:,.0f} events/s at {events:.0f} events a game")


if __name__ == "__main__":
    with signals_interrupt("store_write_bench"):  # (SIGTERM too: what it made is removed)
        main()
