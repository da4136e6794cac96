"""A regression run with forked workers, in a process of its own: tests/service/test_regress.py runs it.

Workers are forked only from a process that runs no other thread (service.regress.default_start_method; the
`regress` command is such a process). pytest's process has threads other tests left (a server's WAL
checkpointer, a stream's sender): a fork while one of them holds SQLite's allocator lock left a CI run's worker
waiting on it for ever. So the forking is done here, and the result printed as JSON.

    python -m tests.service.forked_regress URL ENGINE RUN [FROZEN_DIR]
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading

from service import regress as regress_module
from service.regress import LocalBackend, RegressOptions, regress
from storage.store import Store


def main(argv: list[str]) -> int:
    url, engine, run = argv[:3]
    if len(argv) > 3:  # each worker notes how many objects it has frozen as it starts
        started, folder = regress_module._start_worker, argv[3]

        def noting_what_is_frozen() -> None:
            started()
            with open(os.path.join(folder, str(os.getpid())), "w", encoding="utf-8") as out:
                out.write(str(gc.get_freeze_count()))

        regress_module._start_worker = noting_what_is_frozen
    assert threading.active_count() == 1, threading.enumerate()
    store = Store.open(url)
    try:
        here = regress(store, RegressOptions(engine=engine), LocalBackend(0))  # (a store of this process's)
        objects_before, frozen_before = len(gc.get_objects()), gc.get_freeze_count()
        workers = regress(store, RegressOptions(engine=engine, run=run), LocalBackend(2, "fork"))
        result = {
            "here": sorted((r.to_json() for r in here.reports), key=lambda r: r["replay_id"]),
            "workers": sorted((r.to_json() for r in workers.reports), key=lambda r: r["replay_id"]),
            "verified": workers.verified, "stored": len(store.run_ids(run)), "objects_before": objects_before,
            "frozen_before": frozen_before, "frozen_after": gc.get_freeze_count()}
        store.delete_run(run)
        result["stored_after_delete"] = len(store.run_ids(run))
        result["replays"] = len(store.ids())
    finally:
        store.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
