"""How a long run (a benchmark, the fuzzer) ends on a signal: SIGTERM as Ctrl-C, so that what it made is undone.

On SIGTERM (or SIGHUP: its terminal closed) Python ends at once: no ``finally``, no ``with`` runs, and what the
run created is left behind — a PostgreSQL database (``sgsv_bench_…``), a temporary folder, a server it started.
Within :func:`signals_interrupt`, SIGTERM and SIGHUP raise KeyboardInterrupt as SIGINT does, so the run unwinds
through its own clean-ups; a second signal while it does is said and ignored, so that the clean-up is not cut
short itself (SIGKILL still ends it); the process then ends with status 128 + the signal's number, saying so,
without a traceback.

Only the standard library (the benchmarks import it before anything heavy).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def signals_interrupt(name: str) -> Iterator[None]:
    """Within it, SIGINT, SIGTERM and SIGHUP are KeyboardInterrupt (the first; later ones are ignored while the
    run cleans up); leaving on one is SystemExit(128 + its number), with one line on stderr naming ``name``."""
    received: list[int] = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if received:
            os.write(2, f"{name}: {signal.Signals(signum).name} ignored: cleaning up\n".encode())
            return
        received.append(signum)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in SIGNALS}
    try:
        yield
    except KeyboardInterrupt:
        signum = received[0] if received else signal.SIGINT
        print(f"{name}: stopped by {signal.Signals(signum).name}; what it made is removed", file=sys.stderr)
        raise SystemExit(128 + signum) from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
