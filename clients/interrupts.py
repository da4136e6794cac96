"""Ctrl-C for the command line: every command ends on it with ``interrupted`` and exit status 130.

Python raises KeyboardInterrupt from its signal handler wherever the main thread happens to be. In the
engine's compiled core (mypyc) that place can be inside the runtime's own C code: there a failed call is
taken for a failed allocation, and the process aborts with "fatal: out of memory" (exit 134) instead of
unwinding. So the loops that run the engine in this process take Ctrl-C *deferred*: the handler only
notes it, and the loop raises KeyboardInterrupt itself between two games or files (``deferred`` and
``raise_if_interrupted``); a game in progress ends first. Worker processes ignore SIGINT (the terminal
sends it to the whole process group): their parent decides, and ends them (``stop_pool``).

Only the standard library here: clients/cli.py imports this module before the heavy imports, so that a
Ctrl-C in the first half-second ends the command just as cleanly.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import contextmanager, suppress
from types import FrameType

EXIT_INTERRUPTED = 130

_pending = False


def exit_now(signum: int = signal.SIGINT, frame: FrameType | None = None) -> None:
    """The SIGINT handler while the command line is still starting (importing): nothing to clean up yet,
    so say so and end at once (a KeyboardInterrupt there would print an import traceback)."""
    with suppress(OSError, ValueError):
        sys.stdout.flush()
    os.write(2, b"interrupted\n")
    os._exit(EXIT_INTERRUPTED)


def _note(signum: int, frame: FrameType | None) -> None:
    global _pending
    _pending = True


@contextmanager
def deferred() -> Iterator[None]:
    """Within it, Ctrl-C is only noted; ``raise_if_interrupted`` raises it where the caller chooses. A
    Ctrl-C noted and not yet raised is raised on leaving."""
    global _pending
    if signal.getsignal(signal.SIGINT) is _note:  # nested: the outer one decides
        yield
        return
    _pending = False
    try:
        before = signal.signal(signal.SIGINT, _note)
    except ValueError:  # not the main thread: signals cannot be handled here anyway
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
    raise_if_interrupted()


def raise_if_interrupted() -> None:
    """KeyboardInterrupt if Ctrl-C was noted (by ``deferred``) since it started."""
    global _pending
    if _pending:
        _pending = False
        raise KeyboardInterrupt


def ignore_in_worker() -> None:
    """A worker process's initializer: Ctrl-C at the terminal reaches every process of the group; the
    parent handles it and ends the workers, which must not die mid-task (or abort in compiled code)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop_pool(pool: Executor) -> None:
    """End a pool at once after Ctrl-C: queued tasks cancelled, worker processes terminated (not waited
    for: a game in progress in one is abandoned)."""
    pool.shutdown(wait=False, cancel_futures=True)
    if isinstance(pool, ProcessPoolExecutor):
        processes = dict(getattr(pool, "_processes", None) or {})  # the executor keeps no public handle
        for process in processes.values():
            if process.is_alive():
                process.terminate()
        for process in processes.values():
            process.join(timeout=5)
