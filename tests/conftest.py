"""Which tests are slow: not in `make test-fast`, the inner loop (`pytest -m "not slow"`); `make test` runs them all.

Slow are the tests that start a service, FreeKill's real core or a browser, run a benchmark under valgrind or a
fuzzing family against a server, and a few single tests that take seconds each (pytest --durations). Marking by
place keeps a new test in those folders slow without a word."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SLOW_FOLDERS = ("service", "freekill_live", "browser")
SLOW_MODULES = frozenset({"test_readme.py", "test_bench.py", "test_fuzz.py"})
# Single tests of several seconds each (pytest --durations): a refused 64 KB replay of one-byte chunks, a Ctrl-C
# in a running cheats command.
SLOW_TESTS = frozenset({"test_the_second_audits_replay_of_one_byte_chunks_is_refused",
                        "test_ctrl_c_in_cheats_ends_it_cleanly"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        path = Path(str(item.path))
        try:
            parts = path.relative_to(TESTS).parts
        except ValueError:
            continue
        name = getattr(item, "originalname", item.name)
        if (parts and parts[0] in SLOW_FOLDERS) or path.name in SLOW_MODULES or name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
