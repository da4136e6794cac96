"""Regression runs on a Dask distributed cluster (``sgs-verify regress --scheduler ADDRESS``).

Each chunk of replay ids is one Dask task running ``service.regress.regress_chunk``: the worker
opens the database itself (the URL travels with the task, so every worker must reach the same
PostgreSQL server), reads the logs and stored verdicts, verifies, stores the run's verdicts and
returns the chunk's reports. The workers need this package installed (same version: the engine
version is checked per verdict). See docs/service.md, "Regression runs on a cluster".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from service.regress import DASK_CHUNK, ChunkTask, RegressError, ReplayReport, regress_chunk

# Dask's own periodic work, turned down for workers that run nothing but the engine (docs/service.md, "Regression
# runs on a cluster", has them as environment variables for `dask scheduler` and `dask worker`): by default each
# process checks its event loop every 20 ms, its memory every 100 ms, the system every 500 ms, and samples a
# profile every 10 ms, and each of those takes the GIL from the thread verifying. Measured on a local 2-worker
# cluster, 300 games, CPU per replay over check's: 0.77-0.81 per core as Dask comes, 0.81-0.82 with these, and
# 0.89-0.90 with these and chunks of DASK_CHUNK (0.82-0.86 with those chunks alone).
QUIET_CONFIG = {
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.profile.enabled": False,
}


class DaskBackend:
    chunk_size = DASK_CHUNK

    def __init__(self, scheduler: str | Any) -> None:
        """``scheduler``: the scheduler's address (tcp://host:8786), or a distributed.Client."""
        self.scheduler = scheduler

    def run(self, tasks: Sequence[ChunkTask]) -> Iterator[list[ReplayReport]]:
        try:
            import distributed
        except ImportError:
            raise RegressError("--scheduler needs Dask: pip install 'dask[distributed]'") from None
        dd: Any = distributed  # untyped library
        client: Any
        if isinstance(self.scheduler, dd.Client):
            client, own = self.scheduler, False
        else:
            client, own = dd.Client(self.scheduler, timeout=30), True
        futures = []
        try:
            # pure=False: a chunk is not a cacheable value (it writes the run's verdicts).
            futures = [client.submit(regress_chunk, task, pure=False, retries=1) for task in tasks]
            for fut in dd.as_completed(futures):
                reports: list[ReplayReport] = fut.result()
                yield reports
        finally:
            for fut in futures:
                fut.cancel()
            if own:
                client.close()
