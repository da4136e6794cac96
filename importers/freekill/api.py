"""The importer's library call: FreeKill input (a transcript or a client replay) -> our GameLog.

    from importers.freekill import import_freekill
    result = import_freekill(open("fk_p4_r1.jsonl", "rb").read(), name="fk_p4_r1.jsonl")
    result.log      # sgsverify.v1.GameLog, its header naming FreeKill, the version and the input
    result.sources  # for each event: the transcript seq (or replay entry) it came from

Every failure is an ``ImportFailure`` whose message says what could not be read and where.
"""

from __future__ import annotations

import gzip
import io
import lzma
from collections.abc import Callable
from dataclasses import dataclass, field

from importers.freekill.cards import KNOWN_VERSIONS
from importers.freekill.convert import DEFAULT_VERSION, ENGINE, Conversion, ImportFailure, convert
from importers.freekill.messages import Message
from importers.freekill.transcript import TranscriptError, read_transcript
from sgsverify.v1 import game_log_pb2 as pb

TRANSCRIPT = "freekill-transcript"
FKREP = "freekill-fkrep"
# The largest input taken (a transcript of a long 8-player game is ~15 MB).
MAX_INPUT_BYTES = 256 * 1024 * 1024


@dataclass(slots=True)
class Imported:
    log: pb.GameLog
    format: str  # TRANSCRIPT or FKREP
    sources: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def detect(data: bytes) -> str:
    """A transcript is JSON lines starting with its meta object; a client replay is Qt's qCompress of
    CBOR (a 4-byte length, then a zlib stream, which starts with 0x78)."""
    head = data.lstrip()[:1]
    if head == b"{":
        return TRANSCRIPT
    if len(data) > 5 and data[4] == 0x78:
        return FKREP
    raise ImportFailure("not FreeKill input: neither a server transcript (JSON lines) nor a client replay "
                        "(.fk.rep, qCompress'd CBOR)")


def messages_of(data: bytes, fmt: str) -> tuple[list[Message], str, list[str]]:
    """The record's messages, the FreeKill version it names (or the default) and notes on the input."""
    if fmt == TRANSCRIPT:
        try:
            transcript = read_transcript(io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        except UnicodeDecodeError as err:
            raise ImportFailure(f"the transcript is not UTF-8: {err}") from None
        except TranscriptError as err:
            raise ImportFailure(f"not a FreeKill transcript: {err}") from None
        mode = (transcript.meta.get("settings") or {}).get("gameMode")
        if mode not in (None, "aaa_role_mode"):
            raise ImportFailure(f"the game mode is {mode!r}: only identity mode (aaa_role_mode) is imported")
        notes = []
        if transcript.meta.get("ai"):
            notes.append(f"seats played by FreeKill's {transcript.meta['ai']}")
        # A transcript does not name FreeKill's version: the one card table we have is assumed, and
        # every card the record describes is checked against it (a mismatch is refused).
        return transcript.messages, DEFAULT_VERSION, notes
    from importers.freekill.fkrep import FreeKillFormatError, read_fkrep

    try:
        rec = read_fkrep(data)
    except FreeKillFormatError as err:
        raise ImportFailure(f"not a FreeKill client replay: {err}") from None
    if rec.reconnect:
        raise ImportFailure("a 'reconnect' recording starts in the middle of the game (no set-up): it cannot "
                            "be verified")
    version = version_of(rec.version)
    return rec.messages, version, [f"one seat's view: recorded by FreeKill player {rec.player.id}"]


def version_of(fk_version: str) -> str:
    """Our card table's name for a FreeKill version string (a snapshot hash, or a release name)."""
    for known in KNOWN_VERSIONS:
        if known in fk_version:
            return known
    raise ImportFailure(f"FreeKill version {fk_version!r} has no card table here (known: "
                        f"{', '.join(KNOWN_VERSIONS)}): its card ids cannot be mapped")


def uncompressed(data: bytes) -> bytes:
    """An xz- or gzip-compressed record, uncompressed (at most MAX_INPUT_BYTES of it); others as they are."""
    if data[:6] == b"\xfd7zXZ\x00":
        decompressor: Callable[[io.BytesIO], lzma.LZMAFile | gzip.GzipFile] = lzma.LZMAFile
    elif data[:2] == b"\x1f\x8b":
        decompressor = lambda raw: gzip.GzipFile(fileobj=raw)  # noqa: E731
    else:
        return data
    try:
        with decompressor(io.BytesIO(data)) as stream:
            out = stream.read(MAX_INPUT_BYTES + 1)
    except (lzma.LZMAError, OSError, EOFError) as err:
        raise ImportFailure(f"the compressed input cannot be read: {err}") from None
    if len(out) > MAX_INPUT_BYTES:
        raise ImportFailure(f"the input is over {MAX_INPUT_BYTES} bytes uncompressed; that is the limit")
    return out


def import_freekill(data: bytes, name: str = "", fmt: str = "auto") -> Imported:
    """Convert one FreeKill record (``fmt``: TRANSCRIPT, FKREP or "auto"); xz or gzip compression is
    taken off first."""
    if len(data) > MAX_INPUT_BYTES:
        raise ImportFailure(f"the input is {len(data)} bytes; the limit is {MAX_INPUT_BYTES}")
    data = uncompressed(data)
    if fmt == "auto":
        fmt = detect(data)
    messages, version, notes = messages_of(data, fmt)
    try:
        conv: Conversion = convert(messages, version=version)
    except RecursionError:
        raise ImportFailure("the record nests too deeply to be read") from None
    except ImportFailure:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
        # The record is not shaped as FreeKill writes it; say so rather than crash.
        raise ImportFailure(f"the record is not shaped as FreeKill's ({type(err).__name__}: {err})") from None
    header = conv.log.header
    origin = header.origin
    origin.engine = ENGINE
    origin.engine_version = version
    origin.format = fmt
    origin.source = name
    origin.notes.extend([*notes, *conv.notes])
    header.recorder = f"FreeKill {version}, imported by sgs-verify"
    return Imported(conv.log, fmt, conv.sources, origin.notes[:])
