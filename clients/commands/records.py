"""A file given to `check` or `submit` without `--from`: one of our logs, or a FreeKill record, told by its content
(never its name) by the importer's own test (importers.freekill.sniff)."""

from __future__ import annotations

from pathlib import Path

from clients.files import not_regular
from importers.freekill import KIND_NAMES, sniff, unambiguous

_HINT_BYTES = 256 * 1024  # read for a hint: enough for the importer's test, compressed


def is_freekill_record(data: bytes) -> bool:
    """A FreeKill record that cannot be one of our logs (compressed, a database, a transcript): imported without
    being tried as a log first."""
    return unambiguous(data)


def may_be_freekill_record(data: bytes) -> bool:
    """Does ``data``, which did not load as one of our logs, look like a FreeKill record (a client replay can
    look like a binary log, so it is asked only then)?"""
    return sniff(data) is not None


def format_hint(path: Path, source: str, err: BaseException) -> str:
    """For a file refused as our log with ``--from sgs-verify``: a hint when it is a FreeKill record."""
    from verifier.logio import LogFormatError

    if source != "sgs-verify" or not isinstance(err, LogFormatError) or not_regular(path) is not None:
        return ""
    try:
        with path.open("rb") as f:
            data = f.read(_HINT_BYTES)
    except OSError:
        return ""
    kind = sniff(data)
    return f" (this looks like {KIND_NAMES[kind]}: use --from freekill)" if kind else ""
