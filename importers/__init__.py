"""Importers: other engines' game records turned into logs of our contract (sgsverify.v1).

An importer parses another engine's data formats and never reaches into the engine (it
may read the deck tables, which are part of the contract): what it cannot know from the
record it leaves out or marks, never invents.
"""

from collections.abc import Callable

from sgsverify.v1 import game_log_pb2 as pb

# The engines whose records can be imported (sgs-verify import ENGINE, check --from, ForeignLog.engine).
ENGINES = ("freekill",)


class RecordError(ValueError):
    """A record that cannot be imported; the message says what and where."""


def importer(engine: str) -> Callable[[bytes, str], pb.GameLog]:
    """The conversion for ``engine``: the record's bytes and file name -> our log; it raises RecordError."""
    if engine == "freekill":
        from importers.freekill import ImportFailure, import_freekill

        def freekill(data: bytes, name: str) -> pb.GameLog:
            try:
                return import_freekill(data, name).log
            except ImportFailure as err:
                raise RecordError(str(err)) from None

        return freekill
    raise RecordError(f"no importer for {engine!r} (known: {', '.join(ENGINES)})")
