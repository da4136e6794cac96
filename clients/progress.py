"""A tiny progress bar on stderr (drawn only when stderr is a terminal)."""

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
