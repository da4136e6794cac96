"""Following a log file as ``tail -F`` does: by inode, across rotation and truncation.

The follower hands out whole lines only (a partial last line waits for its newline) with, for each, the
position just after it, so that a caller who has durably taken a line can save where to resume. When the
path is renamed away (rotation) the old file is kept open and read to its end — the writer may go on
writing to the old inode until it reopens — while the new file at the path is read too; the old one is
let go once it has been quiet for ``grace`` seconds. A file that shrinks (truncated in place) is read
again from its start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# At most this much is read from one file per poll (the caller keeps up in steps).
READ_CHUNK = 1 << 20


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


class Follower:
    def __init__(self, path: Path, resume: list[Position] | None = None, *, grace: float = 10.0) -> None:
        self.path = path
        self.grace = grace
        self.files: list[_Open] = []  # the rotated-away ones first, the one the path names last
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

    def poll(self, now: float) -> list[tuple[str, Position]]:
        """The whole lines written since the last poll, oldest file first, each with the position after it."""
        self._check_path(now)
        out: list[tuple[str, Position]] = []
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

    @staticmethod
    def _read(o: _Open) -> list[tuple[str, Position]]:
        size = os.fstat(o.file.fileno()).st_size
        if size < o.offset:
            o.offset = 0  # truncated in place (copytruncate): what is there now is new
        if size == o.offset:
            return []
        o.file.seek(o.offset)
        data = o.file.read(min(READ_CHUNK, size - o.offset))
        end = data.rfind(b"\n")
        if end < 0:
            return []  # a partial line: wait for the rest
        out: list[tuple[str, Position]] = []
        start = 0
        while start <= end:
            nl = data.index(b"\n", start)
            out.append((data[start:nl].decode("utf-8", errors="replace"), Position(o.inode, o.offset + nl + 1)))
            start = nl + 1
        o.offset += end + 1
        return out


__all__ = ["Follower", "Position"]
