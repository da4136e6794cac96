"""The importer's library call: FreeKill input (a transcript, a client replay, or the client's
database of replays) -> our GameLog.

    from importers.freekill import import_freekill
    result = import_freekill(open("fk_p4_r1.jsonl", "rb").read(), name="fk_p4_r1.jsonl")
    result.log      # sgsverify.v1.GameLog, its header naming FreeKill, the version and the input
    result.sources  # for each event: the transcript seq (or replay entry) it came from

    for record in import_records(open("freekill.db", "rb").read(), "freekill.db"):
        record.name, record.result   # each recording: its FreeKill name, an Imported or an ImportFailure

Every failure is an ``ImportFailure`` whose message says what could not be read and where. What an
input may cost to read is bounded by ``max_bytes`` (the caller's limit on a record: the service's
``--max-record-bytes``): see limits.py.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from typing import Any

from importers.freekill.cards import KNOWN_VERSIONS, CardTableError, card_table
from importers.freekill.convert import ENGINE, Conversion, Converter, ImportFailure, convert
from importers.freekill.limits import DEFAULT_MAX_BYTES, BoundedReader, TooLarge, XzReader, max_items, xz_memory
from importers.freekill.messages import NOTIFY, REPLY, REQUEST, Message
from importers.freekill.settings import not_judged
from importers.freekill.transcript import TranscriptError, read_transcript
from sgsverify.v1 import game_log_pb2 as pb

TRANSCRIPT = "freekill-transcript"
FKREP = "freekill-fkrep"
DATABASE = "freekill-database"  # FreeKill's client database: its recordings are each an FKREP
SQLITE_MAGIC = b"SQLite format 3\x00"
# FreeKill's client database keeps each replay as a row of this table, the .fk.rep's bytes as hex.
RECORDINGS_TABLE = "myGameRecordings"
RECORDING_COLUMN = "recording"

# What the converter reads of a transcript (convert.py): every notification it has a handler for and
# the set-up's (Converter.read_setup); the requests cross_check looks at and the replies fanjian_suit does, and the
# discard phase's reply (Converter.discards_nothing: a reply that names no card).
# The data of any other message is dropped as the line is read (tests/test_fkrep_limits.py holds the
# conversion of every test game to the same log with and without it).
SETUP_COMMANDS = frozenset({"ArrangeSeats", "PropertyUpdate", "SetBanner", "PrepareDrawPile", "SyncDrawPile",
                            "MoveCards", "GameLog"})
READ_NOTIFICATIONS = SETUP_COMMANDS | {name[3:] for name in dir(Converter) if name.startswith("on_")}
READ_REQUESTS = frozenset({"AskForUseCard"})
READ_REPLIES = frozenset({"AskForChoice", "AskForChoices", "AskForUseActiveSkill"})


@dataclass(slots=True)
class Imported:
    log: pb.GameLog
    format: str  # TRANSCRIPT or FKREP
    sources: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reply_events: dict[int, int] = field(default_factory=dict)  # (Conversion.reply_events)


@dataclass(frozen=True, slots=True)
class Record:
    """One record of an input: the input itself, or one recording of a client database (``part``),
    named by FreeKill's own name for it (its date, and at game over player, mode, general, role and
    winners); ``result`` is its import or why it failed (the others are not lost)."""

    name: str
    result: Imported | ImportFailure
    part: bool = False


@dataclass(slots=True)
class _Read:
    messages: list[Message]
    version: str  # FreeKill's version as the record names it ("" when it names none)
    notes: list[str]
    label: str = ""  # FreeKill's name for a recording


def needed(kind: str, cmd: str) -> bool:
    """Whether the converter reads the data of this message (see READ_NOTIFICATIONS)."""
    if kind == NOTIFY:
        return cmd in READ_NOTIFICATIONS
    if kind == REQUEST:
        return cmd in READ_REQUESTS
    return kind == REPLY and cmd in READ_REPLIES


# What each kind of FreeKill input is called where a person reads it.
KIND_NAMES = {TRANSCRIPT: "a FreeKill transcript", FKREP: "a FreeKill client replay (.fk.rep)",
              DATABASE: "FreeKill's client database (SQLite)"}
_XZ, _GZIP = b"\xfd7zXZ\x00", b"\x1f\x8b"
_SNIFF = 64 * 1024  # bytes of an input looked at (uncompressed) to tell what it is


def _kind_of(head: bytes, strict: bool) -> str | None:
    """The one test of what FreeKill input ``head`` (the input's first bytes, uncompressed) is. A transcript is
    JSON lines starting with its meta object; a client replay is Qt's qCompress (a 4-byte length, then a zlib
    stream, which starts with 0x78) of CBOR or JSON; the client's database is an SQLite file. Loose (the importer,
    told the input is FreeKill's): the first byte or two decide, and the reader says what is wrong after them.
    ``strict`` (telling FreeKill input from one of our logs): a transcript's first line must be an object with a
    ``seq`` and a ``kind`` and have lines after it (our JSON log is one object with no such keys), and a replay's
    zlib stream must inflate."""
    if head.startswith(SQLITE_MAGIC):
        return DATABASE
    first, _, rest = head.lstrip().partition(b"\n")
    if first[:1] == b"{":
        if not strict:
            return TRANSCRIPT
        try:
            meta = json.loads(first)
        except (ValueError, RecursionError):  # (nested too deep for Python's JSON: no meta line of FreeKill's)
            return None
        return TRANSCRIPT if isinstance(meta, dict) and "seq" in meta and "kind" in meta and rest.strip() else None
    if len(head) > 5 and head[4] == 0x78:
        if not strict:
            return FKREP
        try:
            zlib.decompressobj().decompress(head[4:], 256)
        except zlib.error:
            return None
        return FKREP
    return None


def detect(head: bytes) -> str:
    """What FreeKill input ``head`` (the input's first bytes, uncompressed; 16 are enough) is, for the importer:
    TRANSCRIPT, FKREP or DATABASE; ImportFailure when none."""
    kind = _kind_of(head, strict=False)
    if kind is None:
        raise ImportFailure("not FreeKill input: neither a server transcript (JSON lines), a client replay "
                            "(.fk.rep, qCompress'd CBOR or JSON) nor FreeKill's client database (SQLite)")
    return kind


def _inflated_head(data: bytes) -> bytes:
    """The first bytes of ``data``, uncompressed when it is xz or gzip (FreeKill's records may be; our logs never
    are), read as the importer reads it (``opened``: xz's decoder within the memory of a record of the default
    size); nothing when it cannot be inflated."""
    try:
        with opened(data, DEFAULT_MAX_BYTES) as stream:
            return stream.read(_SNIFF)
    except (TooLarge, lzma.LZMAError, OSError, EOFError, zlib.error):
        return b""


def sniff(data: bytes) -> str | None:
    """TRANSCRIPT, FKREP or DATABASE when ``data`` (compressed or not) looks like that FreeKill input, else None:
    for a command given a file that may be a FreeKill record or one of our logs. A binary GameLog can happen to
    look like a client replay, so a caller tries it as a log first and asks this only when that fails (see
    ``unambiguous``)."""
    return _kind_of(_inflated_head(data), strict=True)


def unambiguous(data: bytes) -> bool:
    """FreeKill input that cannot be one of our logs (compressed, a database, a transcript): imported without
    being tried as a log first."""
    return data.startswith((_XZ, _GZIP)) or sniff(data) in (TRANSCRIPT, DATABASE)


def opened(data: bytes, max_bytes: int) -> io.BufferedIOBase:
    """``data`` as a stream, inflated as it is read when it is xz or gzip (nothing is copied); xz's decoder
    takes at most limits.xz_memory(max_bytes)."""
    raw = io.BytesIO(data)
    if data.startswith(_XZ):
        return io.BufferedReader(XzReader(data, xz_memory(max_bytes)))
    if data.startswith(_GZIP):
        return gzip.GzipFile(fileobj=raw)
    return raw


def import_records(data: bytes, name: str = "", fmt: str = "auto", *,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> list[Record]:
    """Every record in one input (``fmt``: TRANSCRIPT, FKREP, DATABASE or "auto"): the input itself,
    or each recording of a client database in its order, named as FreeKill names it. xz or gzip
    compression is taken off first. ``max_bytes`` bounds the input, packed and unpacked, and the
    items it may hold (limits.py). A database that is not FreeKill's raises ImportFailure; a
    recording in it that cannot be imported is a Record holding its ImportFailure."""
    if len(data) > max_bytes:
        raise ImportFailure(f"the input is {len(data)} bytes; the limit is {max_bytes}")
    try:
        with opened(data, max_bytes) as stream:
            reader = BoundedReader(stream, max_bytes, "the input")
            head = reader.head(16)
            if fmt == "auto":
                fmt = detect(head)
            if fmt == TRANSCRIPT:
                read = _transcript(reader.lines(head), max_bytes)
                return [Record(name, _imported(read, TRANSCRIPT, name))]
            whole = head + reader.read()
    except TooLarge as err:
        raise ImportFailure(str(err)) from None
    except (lzma.LZMAError, zlib.error, OSError, EOFError) as err:
        raise ImportFailure(f"the compressed input cannot be read: {err}") from None
    if fmt == FKREP:
        read = _fkrep(whole, max_bytes)
        return [Record(name, _imported(read, FKREP, name))]
    if fmt != DATABASE:
        raise ImportFailure(f"unknown FreeKill input format {fmt!r}")
    recordings = database_recordings(whole, max_bytes)
    del whole
    records: list[Record] = []
    seen: dict[str, int] = {}
    for number, recording in enumerate(recordings, 1):
        label = f"recording {number}"
        try:
            if isinstance(recording, ImportFailure):
                raise recording
            read = _fkrep(recording, max_bytes)
            label = _unique(read.label, seen)
            result: Imported | ImportFailure = _imported(read, FKREP, f"{name}: {label}")
        except ImportFailure as err:
            result = ImportFailure(f"{label} of the database: {err}")
        records.append(Record(label, result, part=True))
    return records


def import_freekill(data: bytes, name: str = "", fmt: str = "auto", *,
                    max_bytes: int = DEFAULT_MAX_BYTES) -> Imported:
    """Convert one FreeKill record (``fmt``: TRANSCRIPT, FKREP, DATABASE or "auto"); a client database
    must hold exactly one recording (``import_records`` takes any number)."""
    records = import_records(data, name, fmt, max_bytes=max_bytes)
    if len(records) != 1:
        raise ImportFailure(f"FreeKill's client database with {len(records)} recordings: one record is taken "
                            "here (`sgs-verify import freekill` takes the database, one log per recording)")
    result = records[0].result
    if isinstance(result, ImportFailure):
        raise result
    return result


def _unique(label: str, seen: dict[str, int]) -> str:
    count = seen[label] = seen.get(label, 0) + 1
    return label if count == 1 else f"{label}-{count}"


def _transcript(lines: Iterator[bytes], max_bytes: int) -> _Read:
    try:
        transcript = read_transcript(lines, max_items=max_items(max_bytes), keep=needed)
    except TranscriptError as err:
        raise ImportFailure(f"not a FreeKill transcript: {err}") from None
    settings = transcript.meta.get("settings")
    why = not_judged(settings if isinstance(settings, dict) else {})
    if why:
        raise ImportFailure(f"the room is not imported: {why}")
    notes = []
    if transcript.meta.get("ai"):
        notes.append(f"seats played by FreeKill's {transcript.meta['ai']}")
    # A transcript does not name FreeKill's version: the card table is the one the record's cards fit.
    return _Read(transcript.messages, "", notes)


def _fkrep(data: bytes, max_bytes: int) -> _Read:
    from importers.freekill.fkrep import FreeKillFormatError, read_fkrep

    try:
        rec = read_fkrep(data, max_size=max_bytes, max_items=max_items(max_bytes))
    except FreeKillFormatError as err:
        raise ImportFailure(f"not a FreeKill client replay: {err}") from None
    if rec.reconnect:
        raise ImportFailure("a 'reconnect' recording starts in the middle of the game (no set-up): it cannot "
                            "be verified")
    return _Read(rec.messages, rec.version, [f"one seat's view: recorded by FreeKill player {rec.player.id}"],
                 str(rec.name))


def card_facts(messages: list[Message]) -> Iterator[tuple[int, int, str, int, int]]:
    """Every card the record describes, as it does: (record position, FreeKill id, name, suit, number)
    of each moved card's ``beforeCard``, each description once."""
    seen: set[tuple[int, str, Any, Any]] = set()
    for msg in messages:
        if msg.kind != NOTIFY or msg.cmd != "MoveCards":
            continue
        for move in Converter.moves(msg.data):
            for info in move.get("moveInfo") or []:
                before = info.get("beforeCard") if isinstance(info, dict) else None
                if not isinstance(before, dict) or not isinstance(before.get("2"), str):
                    continue
                fk_id, card_name, suit, number = info.get("cardId"), before["2"], before.get("3", 0), before.get("4", 0)
                if not isinstance(fk_id, int) or not isinstance(suit, int) or not isinstance(number, int):
                    continue  # the converter names what is wrong with it
                key = (fk_id, card_name, suit, number)
                if key not in seen:
                    seen.add(key)
                    yield msg.seq, fk_id, card_name, suit, number


def choose_table(messages: list[Message]) -> tuple[str, int]:
    """The card table (its FreeKill snapshot) that every card the record shows fits, and how many
    descriptions were checked; FreeKill's version string is not asked (a release names no card set).
    Refused when the cards contradict every table, naming for each the first card that does."""
    facts = list(card_facts(messages))
    why: list[str] = []
    for version in KNOWN_VERSIONS:
        table = card_table(version)
        for seq, fk_id, card_name, suit, number in facts:
            try:
                table.check_fact(fk_id, card_name, suit, number)
            except CardTableError as err:
                why.append(f"record position {seq}: {err}")
                break
        else:
            return version, len(facts)
    raise ImportFailure("the record's cards match no card table here: " + "; ".join(why))


def _imported(read: _Read, fmt: str, name: str) -> Imported:
    try:
        table, checked = choose_table(read.messages)
        conv: Conversion = convert(read.messages, version=table)
    except RecursionError:
        raise ImportFailure("the record nests too deeply to be read") from None
    except ImportFailure:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
        # The record is not shaped as FreeKill writes it; say so rather than crash.
        raise ImportFailure(f"the record is not shaped as FreeKill's ({type(err).__name__}: {err})") from None
    version = read.version or table
    header = conv.log.header
    origin = header.origin
    origin.engine = ENGINE
    origin.engine_version = version
    origin.format = fmt
    origin.source = name
    table_note = f"card table {table}, which all {checked} card descriptions of the record fit"
    origin.notes.extend([*read.notes, table_note, *conv.notes])
    header.recorder = f"FreeKill {version}, imported by sgs-verify"
    return Imported(conv.log, fmt, conv.sources, origin.notes[:], conv.reply_events)


def database_recordings(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> list[bytes | ImportFailure]:
    """The recordings of FreeKill's client database (an SQLite file's bytes), in its order: table
    myGameRecordings, column recording, each a .fk.rep's bytes as hex (a recording that is not
    hex is its ImportFailure). Another SQLite file is refused. The file is read in memory, with its
    schema untrusted and every value at most twice ``max_bytes`` long."""
    if not data.startswith(SQLITE_MAGIC):
        raise ImportFailure("not an SQLite database")
    try:
        with closing(sqlite3.connect(":memory:")) as con:
            con.text_factory = bytes  # TEXT that is not UTF-8 (in the schema, or a recording) is read, not a crash
            con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 2 * max_bytes + 2)
            con.execute("PRAGMA trusted_schema = OFF")
            con.deserialize(data)
            con.execute("PRAGMA query_only = ON")
            tables = con.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND lower(name) = lower(?)",
                                 (RECORDINGS_TABLE,)).fetchall()
            if not tables:
                raise ImportFailure(f"an SQLite database, but not FreeKill's client database: it has no table "
                                    f"{RECORDINGS_TABLE}")
            columns = {bytes(row[1]).decode("utf-8", "replace").lower()
                       for row in con.execute(f"PRAGMA table_info({RECORDINGS_TABLE})")}
            if RECORDING_COLUMN not in columns:
                raise ImportFailure(f"an SQLite database, but not FreeKill's client database: its table "
                                    f"{RECORDINGS_TABLE} has no column {RECORDING_COLUMN}")
            out: list[bytes | ImportFailure] = []
            for (value,) in con.execute(f"SELECT {RECORDING_COLUMN} FROM {RECORDINGS_TABLE}"):
                out.append(_recording_bytes(value))
    except sqlite3.Error as err:
        raise ImportFailure(f"the SQLite database cannot be read: {err}") from None
    except UnicodeDecodeError:  # SQLite's message quotes a damaged schema, which Python cannot decode
        raise ImportFailure("the SQLite database cannot be read: its schema is damaged") from None
    if not out:
        raise ImportFailure(f"FreeKill's client database holds no recording ({RECORDINGS_TABLE} is empty)")
    return out


def _recording_bytes(value: Any) -> bytes | ImportFailure:
    if isinstance(value, bytes):  # a BLOB: the hex as bytes, or the file's own bytes
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return bytes(value)
    if not isinstance(value, str):
        return ImportFailure(f"it is {type(value).__name__}, not a .fk.rep as hex")
    try:
        return bytes.fromhex(value)
    except ValueError as err:
        return ImportFailure(f"it is not a .fk.rep as hex ({err})")
