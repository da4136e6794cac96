"""The files a command is given: folders opened into the logs they hold, each file read only when it is a regular
one. (A FreeKill record is told from our logs by the importer: clients/commands/records.py.)"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# What a folder given to `check` or `submit` is searched for (recursively).
LOG_SUFFIXES = (".pb", ".json")
RECORD_SUFFIXES = (".jsonl", ".jsonl.xz", ".jsonl.gz", ".fk.rep", ".rep")


def expand_folders(paths: list[Path], suffixes: tuple[str, ...]) -> tuple[list[Path], list[tuple[Path, str]]]:
    """``paths`` with every folder replaced by the files under it whose names end in one of ``suffixes``
    (sorted, so that a run is repeatable); and the folders that hold none, each with what to say of it (the
    other files are still taken)."""
    out: list[Path] = []
    empty: list[tuple[Path, str]] = []
    for path in paths:
        if not path.is_dir():
            out.append(path)
            continue
        found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(suffixes))
        if not found:
            empty.append((path, f"a folder with no log in it (looked for {', '.join(suffixes)})"))
        out.extend(found)
    return out, empty


_NOT_REGULAR = ((stat.S_ISFIFO, "a FIFO (a named pipe)"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def not_regular(path: Path) -> str | None:
    """What ``path`` is when it is not a regular file (a FIFO, a device, a socket), else None (a regular file, or
    a path that cannot be looked at: opening it says why). Told without opening it: opening a FIFO waits for a
    writer, for ever if none comes."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    return next((what for test, what in _NOT_REGULAR if test(mode)), "not a regular file")


def read_named_file(path: Path, limit: int) -> bytes:
    """A file named to a command (`check`, `submit`, `import`), as verifier.logio.read_file reads it, when it is
    a regular file; anything else is LogFormatError saying what it is, and is not read (a FIFO would stop the
    whole batch, waiting for a writer)."""
    from verifier.logio import LogFormatError, read_file

    what = not_regular(path)
    if what is not None:
        raise LogFormatError(f"it is {what}, not a regular file: not read")
    return read_file(path, limit)
