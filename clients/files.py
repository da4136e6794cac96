"""The files a command is given: folders opened into the logs they hold, and FreeKill records told from our
logs by their content (not their names), for `check` and `submit` without `--from`."""

from __future__ import annotations

import json
import lzma
import os
import stat
import zlib
from pathlib import Path

# What a folder given to `check` or `submit` is searched for (recursively).
LOG_SUFFIXES = (".pb", ".json")
RECORD_SUFFIXES = (".jsonl", ".jsonl.xz", ".jsonl.gz", ".fk.rep", ".rep")

FREEKILL_TRANSCRIPT = "a FreeKill transcript"
FREEKILL_REPLAY = "a FreeKill client replay (.fk.rep)"

_XZ, _GZIP = b"\xfd7zXZ\x00", b"\x1f\x8b"
_SNIFF = 64 * 1024  # bytes of a record looked at (uncompressed) to tell what it is


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


def _head(data: bytes) -> bytes:
    """The first bytes of the record, uncompressed when it is xz or gzip (our logs never are)."""
    try:
        if data.startswith(_XZ):
            # (at most the memory the importer gives xz for a record of the default 64 MiB: a file may declare a
            # dictionary of gigabytes, which the decoder would allocate at once)
            return lzma.LZMADecompressor(memlimit=_XZ_SNIFF_MEMORY).decompress(data[: _SNIFF * 4], max_length=_SNIFF)
        if data.startswith(_GZIP):
            return zlib.decompressobj(wbits=31).decompress(data[: _SNIFF * 4], _SNIFF)
    except (lzma.LZMAError, zlib.error, EOFError):
        return b""
    return data[:_SNIFF]


_SQLITE = b"SQLite format 3\x00"
# xz -9's dictionary and the decoder's own few MiB (importers/freekill/limits.py xz_memory of 64 MiB): the client
# library names the figure rather than importing the importer (docs/architecture.md).
_XZ_SNIFF_MEMORY = (64 << 20) + (8 << 20)


def freekill_kind(data: bytes) -> str | None:
    """What FreeKill record ``data`` looks like (FREEKILL_TRANSCRIPT, FREEKILL_REPLAY), or None.

    A transcript is JSON lines whose first line is an object with a ``seq`` and a ``kind`` (its meta
    line); our JSON log is one object, with no such keys. A client replay is Qt's qCompress: a 4-byte
    big-endian length, then a zlib stream; a binary GameLog can happen to look like that, so callers try
    it as our log first and ask this only when that fails (``looks_like_our_log``)."""
    head = _head(data)
    first, _, rest = head.lstrip().partition(b"\n")
    if first.startswith(b"{"):
        try:
            meta = json.loads(first)
        except (ValueError, RecursionError):  # (nested too deep for Python's JSON: no meta line of FreeKill's)
            return None
        if isinstance(meta, dict) and "seq" in meta and "kind" in meta and rest.strip():
            return FREEKILL_TRANSCRIPT
        return None
    if len(data) > 6 and data[4] == 0x78:
        try:
            zlib.decompressobj().decompress(data[4:4 + _SNIFF], 256)
        except zlib.error:
            return None
        return FREEKILL_REPLAY
    return None


def is_unambiguous_freekill(data: bytes) -> bool:
    """A FreeKill record that cannot be one of our logs (compressed, or JSON lines): it is imported without
    trying it as a log first."""
    # (an SQLite file is taken for a FreeKill client's database of recordings: no log of ours is one)
    return data.startswith((_XZ, _GZIP, _SQLITE)) or freekill_kind(data) == FREEKILL_TRANSCRIPT


def format_hint(path: Path, source: str, err: BaseException) -> str:
    """For a file refused as our log with ``--from sgs-verify``: a hint when it is a FreeKill record."""
    from verifier.logio import LogFormatError

    if source != "sgs-verify" or not isinstance(err, LogFormatError) or not_regular(path) is not None:
        return ""
    try:
        with path.open("rb") as f:
            data = f.read(_SNIFF * 4)
    except OSError:
        return ""
    kind = freekill_kind(data)
    return f" (this looks like {kind}: use --from freekill)" if kind else ""
