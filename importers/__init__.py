"""Importers: other engines' game records turned into logs of our contract (sgsverify.v1).

An importer parses another engine's data formats and never reaches into the engine (it
may read the deck tables, which are part of the contract): what it cannot know from the
record it leaves out or marks, never invents.
"""

from collections.abc import Callable
from dataclasses import dataclass

from sgsverify.v1 import game_log_pb2 as pb
from verifier.logio import MAX_RECORD_BYTES

# The engines whose records can be imported (sgs-verify import ENGINE, check --from, ForeignLog.engine).
ENGINES = ("freekill",)


class RecordError(ValueError):
    """A record that cannot be imported; the message says what and where."""


@dataclass(frozen=True, slots=True)
class Converted:
    """One record of an input: ``name`` the input's, or for one of the records an input holds
    (``part``: a FreeKill client database) its own; ``log`` its conversion, or ``error`` why not."""

    name: str
    log: pb.GameLog | None
    error: RecordError | None = None
    part: bool = False


def importer(engine: str, max_bytes: int = MAX_RECORD_BYTES) -> Callable[[bytes, str], pb.GameLog]:
    """The conversion for ``engine``: the record's bytes and file name -> our log; it raises RecordError.
    ``max_bytes``: the caller's limit on a record, which bounds its size unpacked and what parsing it
    may hold (the service's --max-record-bytes)."""
    if engine == "freekill":
        from importers.freekill import ImportFailure, import_freekill

        def freekill(data: bytes, name: str) -> pb.GameLog:
            try:
                return import_freekill(data, name, max_bytes=max_bytes).log
            except ImportFailure as err:
                raise RecordError(str(err)) from None

        return freekill
    raise RecordError(f"no importer for {engine!r} (known: {', '.join(ENGINES)})")


def importer_of_all(engine: str, max_bytes: int = MAX_RECORD_BYTES) -> Callable[[bytes, str], list[Converted]]:
    """As ``importer``, for an input that may hold several records (a FreeKill client database): each
    with its log or its error, so one bad record loses none of the others. Raises RecordError when the
    input as a whole cannot be read."""
    if engine == "freekill":
        from importers.freekill import ImportFailure, import_records

        def freekill(data: bytes, name: str) -> list[Converted]:
            try:
                records = import_records(data, name, max_bytes=max_bytes)
            except ImportFailure as err:
                raise RecordError(str(err)) from None
            return [Converted(r.name, None, RecordError(str(r.result)), r.part) if isinstance(r.result, ImportFailure)
                    else Converted(r.name, r.result.log, None, r.part) for r in records]

        return freekill
    raise RecordError(f"no importer for {engine!r} (known: {', '.join(ENGINES)})")
