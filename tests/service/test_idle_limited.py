"""idle_limited, the client streams' idle limit: one watchdog timer per stream (service/guard.py)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from service.guard import StreamIdle, idle_limited


async def messages(gaps: list[float]) -> AsyncIterator[int]:
    for i, gap in enumerate(gaps):
        await asyncio.sleep(gap)
        yield i


async def collect(source: AsyncIterator[int], seconds: float, busy: float = 0.0) -> list[int]:
    got = []
    async for m in idle_limited(source, seconds, "the test stream"):
        got.append(m)
        if busy:
            await asyncio.sleep(busy)  # the consumer's own work between messages is not idleness
    return got


def test_messages_that_keep_coming_pass_however_long_the_stream() -> None:
    assert asyncio.run(collect(messages([0.05] * 12), 0.2)) == list(range(12))  # 0.6 s in all, none idle 0.2 s


def test_a_wait_longer_than_the_limit_ends_the_stream() -> None:
    with pytest.raises(StreamIdle, match=r"the test stream sent nothing for 0\.1 s"):
        asyncio.run(collect(messages([0.0, 0.0, 0.4]), 0.1))


def test_time_the_consumer_spends_between_messages_does_not_count() -> None:
    assert asyncio.run(collect(messages([0.02] * 4), 0.15, busy=0.3)) == [0, 1, 2, 3]


def test_a_cancel_from_outside_stays_a_cancel() -> None:
    async def main() -> None:
        task = asyncio.create_task(collect(messages([0.0, 5.0]), 0.2))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_the_timer_is_gone_once_the_stream_ends() -> None:
    async def main() -> int:
        await collect(messages([0.0, 0.0]), 30.0)
        scheduled: list[asyncio.TimerHandle] = asyncio.get_running_loop()._scheduled  # type: ignore[attr-defined]
        return sum(1 for h in scheduled if not h.cancelled())

    assert asyncio.run(main()) == 0
