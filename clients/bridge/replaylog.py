"""Recorded games written into a log as a FreeKill server with the tap would write them: for the tests, the
benchmark, and trying the bridge without a FreeKill server.

``RotatingLog`` appends lines to a file and rotates it by rename when it grows past a size (as spdlog's
rotating sink does: freekill.log -> freekill.log.1), optionally writing a few more lines to the renamed
file first (a writer that has not reopened yet). ``interleave`` deals several rooms' lines out in turns.
"""

from __future__ import annotations

import json
import lzma
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from importers.freekill.tap import tap_line, tap_records


def transcript(path: Path) -> list[dict[str, Any]]:
    data = path.read_bytes()
    if data[:6] == b"\xfd7zXZ\x00":
        data = lzma.decompress(data)
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]


def room_records(path: Path, room: int) -> list[dict[str, Any]]:
    return list(tap_records(transcript(path), room))


def interleave(rooms: Sequence[Sequence[dict[str, Any]]], step: int = 1) -> Iterator[dict[str, Any]]:
    """The rooms' records in turns of ``step`` records each, every room in its own order."""
    at = [0] * len(rooms)
    while any(i < len(r) for i, r in zip(at, rooms, strict=True)):
        for k, records in enumerate(rooms):
            yield from records[at[k]:at[k] + step]
            at[k] += step


class RotatingLog:
    def __init__(self, path: Path, max_bytes: int = 0, late_lines: int = 0) -> None:
        self.path = path
        self.max_bytes = max_bytes  # 0: never rotate
        self.late_lines = late_lines  # lines still written to the old file after its rename
        self.rotations = 0
        self._late = 0
        self.f: BinaryIO = path.open("ab")

    def write(self, line: str) -> None:
        self.f.write(line.encode("utf-8"))
        self.f.flush()
        if self._late:
            self._late -= 1
            if not self._late:
                self._reopen()
            return
        if self.max_bytes and self.f.tell() >= self.max_bytes:
            self.rotate()

    def write_record(self, record: dict[str, Any], at: float) -> None:
        self.write(tap_line(record, at))

    def rotate(self) -> None:
        """Rename the file away (freekill.log.1, the older ones shifted) and go on in a new one."""
        for k in range(self.rotations, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{k}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{k + 1}"))
        os.replace(self.path, self.path.with_name(self.path.name + ".1"))
        self.rotations += 1
        if self.late_lines:
            self._late = self.late_lines
        else:
            self._reopen()

    def _reopen(self) -> None:
        self.f.close()
        self.f = self.path.open("ab")

    def close(self) -> None:
        self.f.close()


__all__ = ["RotatingLog", "interleave", "room_records", "transcript"]
