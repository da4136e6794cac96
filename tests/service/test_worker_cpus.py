"""Each verification worker process runs on a CPU of its own, in turn (service.workers.worker_cpus), unless
the server is told not to (--no-pin-workers, $SGS_VERIFY_PIN_WORKERS=0)."""

from __future__ import annotations

import asyncio
import os

import pytest

from clients.cli import build_parser
from clients.commands.service import _service_config
from service.config import ENV_PIN_WORKERS, ConfigError
from service.workers import WorkerLost, WorkerPool, pin_to_cpu, worker_cpus
from tests.service.test_service_errors import kill_worker

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="no CPU affinity on this OS")


def affinity(pool: WorkerPool, index: int) -> set[int]:
    pid = pool.workers[index].executor.process.pid
    assert pid is not None
    return os.sched_getaffinity(pid)


def test_the_cpus_are_the_allowed_ones_in_turn() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    assert worker_cpus(len(allowed)) == allowed  # the default: a worker per core
    assert worker_cpus(2 * len(allowed) + 1) == allowed * 2 + allowed[:1]


def test_fewer_workers_than_cpus_are_left_to_the_os() -> None:
    """Pinned, they would all sit on the first CPUs (and so would every other such server's)."""
    allowed = len(os.sched_getaffinity(0))
    assert worker_cpus(allowed - 1) == [None] * (allowed - 1)


def test_a_pinned_pools_workers_each_run_on_their_cpu_also_once_restarted() -> None:
    count = max(2, len(os.sched_getaffinity(0)))
    pool = WorkerPool(count, pin=True)
    try:
        expected = worker_cpus(count)
        assert [w.cpu for w in pool.workers] == expected
        assert [affinity(pool, i) for i in range(count)] == [{cpu} for cpu in expected]

        async def restart_and_call() -> int:
            kill_worker(pool, 1)
            with pytest.raises(WorkerLost):  # the dead one (restarted)
                await pool._call(pool.workers[1], len, b"xyz")
            return await pool._call(pool.workers[1], len, b"xyz")

        assert asyncio.run(restart_and_call()) == 3
        assert affinity(pool, 1) == {expected[1]}  # the new process is where the old one was
        assert expected[1] is not None
    finally:
        pool.shutdown()


def test_an_unpinned_pool_leaves_its_workers_to_the_os() -> None:
    pool = WorkerPool(2)
    try:
        assert [w.cpu for w in pool.workers] == [None, None]
        assert [affinity(pool, i) for i in range(2)] == [os.sched_getaffinity(0)] * 2
    finally:
        pool.shutdown()


def test_a_cpu_the_os_refuses_leaves_the_process_unpinned() -> None:
    before = os.sched_getaffinity(0)
    assert pin_to_cpu(os.getpid(), 1 << 20) is None  # no such CPU: EINVAL, not raised
    assert pin_to_cpu(os.getpid(), None) is None
    assert os.sched_getaffinity(0) == before


def test_serve_pins_by_default_and_can_be_told_not_to(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_PIN_WORKERS, raising=False)
    parse = build_parser().parse_args
    assert _service_config(parse(["serve"])).pin_workers is True
    assert _service_config(parse(["serve", "--no-pin-workers"])).pin_workers is False
    for off in ("0", "false", "No", "off"):
        monkeypatch.setenv(ENV_PIN_WORKERS, off)
        assert _service_config(parse(["serve"])).pin_workers is False
    assert _service_config(parse(["serve", "--pin-workers"])).pin_workers is True
    monkeypatch.setenv(ENV_PIN_WORKERS, "yes")
    assert _service_config(parse(["serve"])).pin_workers is True
    monkeypatch.setenv(ENV_PIN_WORKERS, "sometimes")
    with pytest.raises(ConfigError, match="SGS_VERIFY_PIN_WORKERS='sometimes' is not a yes or no"):
        _service_config(parse(["serve"]))
