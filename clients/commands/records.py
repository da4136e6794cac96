"""The hint for a file refused as one of our logs that is a FreeKill record, told by its content (never its name) by
the importer's own test (importers.freekill ``sniff``; ``unambiguous`` tells `check` and `submit` to import one
without trying it as a log first)."""

from __future__ import annotations

from pathlib import Path

from clients.files import not_regular
from importers.freekill import KIND_NAMES, sniff

_HINT_BYTES = 256 * 1024  # read for a hint: enough for the importer's test, compressed


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
