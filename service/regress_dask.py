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

from service.regress import ChunkTask, RegressError, ReplayReport, regress_chunk


class DaskBackend:
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
