"""The bridge's state directory: where it resumes after a restart.

    position.json          the follow position: the files being read, by inode, and the offset of the
                           whole lines taken from each (written atomically after the lines are spooled)
    rooms/<room>.<n>.tap   a room's tap lines as read (its spool): an unfinished room is streamed again
                           from it after a restart; <n> counts the games a FreeKill room id has held
    rooms/<room>.<n>.done  the room was stored (the service's answer: replay id): never sent again
    rooms/<room>.<n>.skip  the room could not be checked (why): reported once
    rooms/<room>.<n>.printed  how far an unfinished room's verdicts were printed (Printed): after a restart
                           its stream starts again from its first event, and only what is past that is
                           printed and counted
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clients.bridge.follower import Position

# A room id or game number in a state file's name has at most this many digits (a C++ int has 10): a name
# with more is not the bridge's.
_MAX_DIGITS = 10


class StateError(Exception):
    """The state directory cannot be made, read or written (what, and where)."""


def write_atomically(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write a file whole or not at all; ``durable``: on disk before it is renamed into place (a marker whose
    loss at a crash costs only a second report is written without the fsync)."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as f:
        f.write(data)
        f.flush()
        if durable:
            os.fsync(f.fileno())
    os.replace(tmp, path)


Violation = tuple[int, bool, str, str]  # (event index, derived, code, message): one printed verdict


@dataclass(frozen=True, slots=True)
class Printed:
    """How far a room's verdicts were printed (and counted in the metrics): every violation before event
    ``through``, the last event whose own verdict came, and those in ``past`` (at or after it). The service
    annotates a game in its order, an outcome derived before an event ahead of the event itself: so a stream
    sent again from its first event brings first what was printed, then what was not."""

    through: int = -1
    past: frozenset[Violation] = frozenset()
    checks: int = 0  # the seq of the last check record whose refusal was printed (FreeKill's verdicts, in seq order)


@dataclass(slots=True)
class Saved:
    key: str  # "<room>.<n>"
    room: int
    n: int
    lines: list[str]  # the spool (empty for a done or skipped room)
    outcome: dict[str, Any] | None  # the .done or .skip marker's content
    skipped: bool
    mtime: float  # when the room's spool was last written (its last line)
    printed: Printed = field(default_factory=Printed)  # how far its verdicts were printed before (an unfinished room's)


class StateDir:
    def __init__(self, root: Path) -> None:
        """StateError if the directory cannot be made or written; ``created``: it did not exist."""
        self.root = root
        self.rooms = root / "rooms"
        self.position_file = root / "position.json"
        self.created = not root.exists()
        try:
            self.rooms.mkdir(parents=True, exist_ok=True)
            write_atomically(self.rooms / ".written", b"", durable=False)  # (a directory it may not write to)
            (self.rooms / ".written").unlink()
        except OSError as err:
            doing = "created" if self.created else "written"
            raise StateError(f"the state directory {root} cannot be {doing}: {err.strerror or err}") from None

    def load_position(self) -> list[Position]:
        try:
            data = json.loads(self.position_file.read_text(encoding="utf-8"))
            return [Position(int(f["inode"]), int(f["offset"])) for f in data["files"]]
        except FileNotFoundError:
            return []
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{self.position_file} is not the bridge's position file: {err}") from None

    def save_position(self, positions: list[Position], log: Path) -> None:
        data = {"log": str(log), "files": [{"inode": p.inode, "offset": p.offset} for p in positions]}
        try:
            write_atomically(self.position_file, json.dumps(data).encode("utf-8"))
        except OSError as err:
            raise StateError(f"the state directory {self.root} cannot be written: {err}") from None

    def spool(self, key: str) -> Path:
        return self.rooms / f"{key}.tap"

    def save_printed(self, key: str, printed: Printed) -> None:
        """Written whole (renamed into place) but not fsynced: what a crash loses of it is printed again."""
        data = {"through": printed.through, "past": sorted(list(v) for v in printed.past), "checks": printed.checks}
        try:
            write_atomically(self.rooms / f"{key}.printed", json.dumps(data, ensure_ascii=False).encode("utf-8"),
                             durable=False)
        except OSError as err:
            raise StateError(f"the state directory {self.root} cannot be written: {err}") from None

    def mark(self, key: str, kind: str, outcome: dict[str, Any], *, durable: bool = True) -> None:
        """Record a room's end (kind "done" or "skip"), then drop its spool."""
        try:
            write_atomically(self.rooms / f"{key}.{kind}", json.dumps(outcome, ensure_ascii=False).encode("utf-8"),
                             durable=durable)
            self.spool(key).unlink(missing_ok=True)
            (self.rooms / f"{key}.printed").unlink(missing_ok=True)
        except OSError as err:
            raise StateError(f"the state directory {self.root} cannot be written: {err}") from None

    def saved(self) -> list[Saved]:
        """Every room the state knows, oldest game first per room id."""
        found: dict[str, Saved] = {}
        printed: dict[str, Path] = {}
        for path in self.rooms.iterdir():
            parts = path.name.split(".")
            if len(parts) != 3 or not _number(parts[0]) or not _number(parts[1]) \
                    or parts[2] not in ("tap", "done", "skip", "printed"):
                continue
            key = f"{parts[0]}.{parts[1]}"
            if parts[2] == "printed":
                printed[key] = path
                continue
            entry = found.setdefault(key, Saved(key, int(parts[0]), int(parts[1]), [], None, False, 0.0))
            if parts[2] == "tap":
                entry.lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
                entry.mtime = path.stat().st_mtime
            else:
                try:
                    entry.outcome = json.loads(path.read_text(encoding="utf-8"))
                except ValueError:
                    entry.outcome = {}
                entry.skipped = parts[2] == "skip"
        for entry in found.values():
            if entry.outcome is not None:
                entry.lines = []  # ended: (a spool left by a crash between the marker and its removal)
                self.spool(entry.key).unlink(missing_ok=True)
        for key, path in printed.items():
            if key in found and found[key].outcome is None:
                found[key].printed = _printed(path)
            else:
                path.unlink(missing_ok=True)  # (its room ended, or its spool is gone: a crash between the two)
        return sorted(found.values(), key=lambda s: (s.room, s.n))


def _printed(path: Path) -> Printed:
    """A room's printed file; one that cannot be read (cut short by a crash) says nothing was printed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        past = frozenset((int(i), bool(d), str(c), str(m)) for i, d, c, m in data["past"])
        return Printed(int(data["through"]), past, int(data.get("checks", 0)))
    except (ValueError, KeyError, TypeError):
        return Printed()


def _number(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= _MAX_DIGITS


__all__ = ["Printed", "Saved", "StateDir", "StateError", "Violation", "write_atomically"]
