"""Importers: other engines' game records turned into logs of our contract (sgsverify.v1).

An importer parses another engine's data formats and never reaches into the engine (it
may read the deck tables, which are part of the contract): what it cannot know from the
record it leaves out or marks, never invents.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

from sgsverify.v1 import annotation_pb2 as apb
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


@dataclass(frozen=True, slots=True)
class ServerSeat:
    player: str  # as our logs name a player ("freekill:1003")
    role: int  # sgsverify.v1.Role (ROLE_UNSPECIFIED when the record does not say)
    general: str  # the recording engine's name for it


@dataclass(frozen=True, slots=True)
class ServerRecord:
    """What a server's record says beside its game: the server's own verdicts on its clients' replies
    (``checks``, in record order), and, for a record our engine does not replay (``not_replayed``), the record
    as it is stored (``data``, in ``format``) with who sat where and how the game ended."""

    judge: str  # who made the checks ("FreeKill 88a912f1, sgs-verify tap 1")
    checks: tuple[apb.ServerCheck, ...] = ()
    client_replies: tuple[int, ...] = ()  # the record positions of the replies a client made
    not_replayed: str = ""
    data: bytes = b""
    format: str = ""  # how ``data`` is stored (at most 8 characters: "fktap")
    source: str = ""  # its origin, in words ("FreeKill room 12, game 1"; the file's name)
    records: int = 0
    seats: tuple[ServerSeat, ...] = ()
    finished: bool = False
    side: int = 0  # sgsverify.v1.Side
    winners: tuple[int, ...] = ()  # seats
    result_reason: str = ""


@dataclass(frozen=True, slots=True)
class Judged:
    """A record imported for the service: its log when our engine can replay it (None: ``server.not_replayed``
    says why), and what its server judged (None: the record holds no verdicts of a server's)."""

    log: pb.GameLog | None
    server: ServerRecord | None = None
    reply_events: dict[int, int] = field(default_factory=dict)  # reply record position -> first event


def server_timeline(fmt: str, data: bytes) -> list[tuple[int, str, str]]:
    """A stored record our engine did not replay (ServerRecord.format, .data), in words: (its position, kind,
    what it says) for each record, in order."""
    from importers.freekill.taproom import FORMAT, timeline

    if fmt == FORMAT:
        return timeline(data)
    raise RecordError(f"no reader for records stored as {fmt!r}")


def judging_importer(engine: str, max_bytes: int = MAX_RECORD_BYTES) -> Callable[[bytes, str], Judged]:
    """As ``importer``, for a record that may carry its server's own verdicts (a FreeKill room's tap lines) and
    is stored even where our engine cannot replay it; any other record as ``importer`` converts it."""
    if engine == "freekill":
        from importers.freekill import ImportFailure
        from importers.freekill.taproom import judged_room, looks_like_tap

        plain = importer(engine, max_bytes)

        def freekill(data: bytes, name: str) -> Judged:
            if not looks_like_tap(data, max_bytes):
                return Judged(plain(data, name))
            try:
                return judged_room(data, name, max_bytes=max_bytes)
            except ImportFailure as err:
                raise RecordError(str(err)) from None

        return freekill
    raise RecordError(f"no importer for {engine!r} (known: {', '.join(ENGINES)})")


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
