"""A tiny progress bar on stderr (drawn only when stderr is a terminal), and progress lines for when it is
not one (GameProgress)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    def __init__(self, total: int, label: str = "", stream: TextIO | None = None, width: int = 30) -> None:
        self.total = max(total, 1)
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.done = 0
        self.started = time.monotonic()
        self.enabled = self.stream.isatty()
        self._last_draw = 0.0

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        now = time.monotonic()
        if self.enabled and (now - self._last_draw > 0.05 or self.done >= self.total):
            self._last_draw = now
            self.draw()

    def draw(self) -> None:
        filled = int(self.width * self.done / self.total)
        rate = self.done / max(time.monotonic() - self.started, 1e-9)
        bar = "#" * filled + "-" * (self.width - filled)
        left = self.total - self.done
        eta = f", {_duration(left / rate)} left" if self.done > 0 and left > 0 and rate > 0 else ""
        self.stream.write(f"\r{self.label}[{bar}] {self.done}/{self.total} ({rate:.1f}/s{eta})  ")
        self.stream.flush()

    def clear(self) -> None:
        """Erase the bar (before printing a line over it)."""
        if self.enabled:
            self.stream.write("\r" + " " * (len(self.label) + self.width + 40) + "\r")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.draw()
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    return f"{s // 3600}h{s // 60 % 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class GameProgress:
    """Progress of a long run of ``total`` items on stderr: the bar on a terminal; otherwise a plain line
    at the first item and each further tenth of the way ("cheats: 4/20 games, 3.1 s"), so that a run
    piped to a file or watched in CI is not silent either."""

    def __init__(self, total: int, label: str, unit: str = "games", stream: TextIO | None = None) -> None:
        self.total = max(total, 1)
        self.label = label
        self.unit = unit
        self.stream = stream or sys.stderr
        self.bar = ProgressBar(total, f"{label} ", self.stream) if self.stream.isatty() else None
        self.done = 0
        self.started = time.monotonic()
        self._next_line = 1

    def advance(self, steps: int = 1) -> None:
        self.done += steps
        if self.bar is not None:
            self.bar.advance(steps)
            return
        if self.done >= self._next_line or self.done >= self.total:
            seconds = time.monotonic() - self.started
            self.stream.write(f"{self.label}: {self.done}/{self.total} {self.unit}, {seconds:.1f} s\n")
            self.stream.flush()
            tenth = max(1, self.total // 10)
            self._next_line = (self.done // tenth + 1) * tenth

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
