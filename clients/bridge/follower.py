"""Following a log file as ``tail -F`` does: by inode, across rotation and truncation.

The follower hands out whole lines only (a partial last line waits for its newline) with, for each, the
position just after it, so that a caller who has durably taken a line can save where to resume. When the
path is renamed away (rotation) the old file is kept open and read to its end — the writer may go on
writing to the old inode until it reopens — and the new file at the path is read after it: a poll reads a
newer file only once the older ones are read to their end, so that a room's lines written before the
rotation come before those written after it. The old file is let go once it has been quiet for ``grace``
seconds. A file that shrinks (truncated in place) is read again from its start.

A line of any length is read: one longer than ``max_line`` bytes is not held but read on to its newline and
handed out as ``Overlong`` (its first bytes and its length), so that the follower goes on after it and the
caller can say why it was skipped. What one file holds of a line is at most ``max_line`` bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

# Whole lines handed out from one file per poll, at most (the caller keeps up in steps); and how much of an
# overlong line is read past per poll (not held: only counted).
READ_CHUNK = 1 << 20
SKIP_PER_POLL = 64 << 20
HEAD_BYTES = 256  # of an overlong line, kept to tell what it was


@dataclass(frozen=True, slots=True)
class Overlong:
    """A line longer than the follower's limit, read past: its first bytes (decoded) and its length."""

    head: str
    size: int


@dataclass(slots=True)
class Position:
    inode: int
    offset: int  # bytes of whole lines taken


@dataclass(slots=True)
class _Open:
    file: BinaryIO
    inode: int
    offset: int  # the start of the first line not handed out yet
    quiet_since: float | None = None  # when the path stopped naming it (rotated), and it has been quiet since
    read_to: int = -1  # how far it has been read (-1: to offset): the line at offset is pending or skipped
    pending: bytearray = field(default_factory=bytearray)  # the line being read, up to the follower's limit
    skipped: int | None = None  # the line being read is over the limit: its bytes so far (not held)
    head: bytes = b""  # the first bytes of the skipped line

    def __post_init__(self) -> None:
        if self.read_to < 0:
            self.read_to = self.offset

    def restart(self) -> None:
        self.offset = self.read_to = 0
        self.pending = bytearray()
        self.skipped = None
        self.head = b""


Line = tuple[str | Overlong, Position]


class Follower:
    def __init__(self, path: Path, resume: list[Position] | None = None, *, grace: float = 10.0,
                 max_line: int = 4 << 20) -> None:
        self.path = path
        self.grace = grace
        self.max_line = max_line
        self.files: list[_Open] = []  # the rotated-away ones first, the one the path names last
        self.read_bytes = 0  # read by the last poll (it may have read without handing out a line: an overlong one)
        if resume:
            self._resume(resume)

    def _rotated(self) -> list[Path]:
        """The path and the files it was rotated to (freekill.log.1, .2, ...), oldest first."""
        if not self.path.parent.is_dir():
            return [self.path]
        numbered = [(int(p.name[len(self.path.name) + 1:]), p) for p in self.path.parent.glob(self.path.name + ".*")
                    if p.name[len(self.path.name) + 1:].isdigit()]
        return [p for _, p in sorted(numbered, reverse=True)] + [self.path]

    def _resume(self, resume: list[Position]) -> None:
        """Resume by inode: the files being read may have been rotated since (found among the rotated files),
        and the files rotated after them were not read yet (read from their start)."""
        offsets = {pos.inode: pos.offset for pos in resume}
        started = False
        for candidate in self._rotated():
            try:
                inode = candidate.stat().st_ino
            except OSError:
                continue
            if inode not in offsets and not started:
                continue  # older than what was being read: read already
            started = True
            try:
                f = candidate.open("rb")
            except OSError:
                continue
            size = os.fstat(f.fileno()).st_size
            offset = offsets.get(inode, 0)
            self.files.append(_Open(f, inode, offset if offset <= size else 0))  # (shorter: truncated meanwhile)

    def positions(self) -> list[Position]:
        return [Position(o.inode, o.offset) for o in self.files]

    def close(self) -> None:
        for o in self.files:
            o.file.close()
        self.files = []

    def exists(self) -> bool:
        """Whether it has a file to read (the path named one when it was last looked at, or was rotated from)."""
        return bool(self.files)

    def poll(self, now: float) -> list[Line]:
        """The whole lines written since the last poll, oldest file first, each with the position after it (an
        overlong line as Overlong)."""
        self._check_path(now)
        self.read_bytes = 0
        out: list[Line] = []
        for o in list(self.files):
            got = self._read(o)
            out += got
            current = o is self.files[-1] and self._names(o)
            if current:
                continue
            if got:
                o.quiet_since = now
            elif o.quiet_since is not None and now - o.quiet_since >= self.grace:
                o.file.close()
                self.files.remove(o)
                continue
            if o.read_to < os.fstat(o.file.fileno()).st_size:
                break  # more of it to read: the newer files wait (their lines come after its)
        return out

    def _names(self, o: _Open) -> bool:
        try:
            return self.path.stat().st_ino == o.inode
        except OSError:
            return False

    def _check_path(self, now: float) -> None:
        try:
            st = self.path.stat()
        except OSError:
            return  # between a rename and the new file's creation: the old one is still read
        if any(o.inode == st.st_ino for o in self.files):
            return
        try:
            f = self.path.open("rb")
        except OSError:
            return
        inode = os.fstat(f.fileno()).st_ino
        for o in self.files:
            if o.quiet_since is None:
                o.quiet_since = now  # rotated away: read on until it has been quiet for the grace time
        self.files.append(_Open(f, inode, 0))

    def _read(self, o: _Open) -> list[Line]:
        size = os.fstat(o.file.fileno()).st_size
        if size < o.read_to:
            o.restart()  # truncated in place (copytruncate): what is there now is new
        out: list[Line] = []
        taken = skipped = 0
        while o.read_to < size and taken < READ_CHUNK and skipped < SKIP_PER_POLL:
            o.file.seek(o.read_to)
            data = o.file.read(min(READ_CHUNK, size - o.read_to))
            if not data:
                break
            base = o.read_to
            o.read_to += len(data)
            self.read_bytes += len(data)
            start = 0
            while (nl := data.find(b"\n", start)) >= 0:
                end = Position(o.inode, base + nl + 1)
                if o.skipped is not None:
                    out.append((Overlong(o.head.decode("utf-8", errors="replace"), o.skipped + nl - start), end))
                    o.skipped, o.head = None, b""
                else:
                    line = bytes(o.pending + data[start:nl]) if o.pending else data[start:nl]
                    o.pending = bytearray()
                    out.append((line.decode("utf-8", errors="replace") if len(line) <= self.max_line else
                                Overlong(line[:HEAD_BYTES].decode("utf-8", errors="replace"), len(line)), end))
                    taken += len(line)
                o.offset = end.offset
                start = nl + 1
            rest = len(data) - start
            if o.skipped is not None:
                o.skipped += rest
                skipped += rest
            elif len(o.pending) + rest > self.max_line:
                # Over the limit with no newline yet: read on to it without holding it.
                o.head = bytes((o.pending + data[start:start + HEAD_BYTES])[:HEAD_BYTES])
                o.skipped = len(o.pending) + rest
                o.pending = bytearray()
                skipped += rest
            else:
                o.pending += data[start:]
        return out


__all__ = ["Follower", "Line", "Overlong", "Position"]
