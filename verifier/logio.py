"""Reading logs: binary protobuf or its JSON mapping, with clear errors."""

from __future__ import annotations

import os
import stat

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from sgsverify.v1 import game_log_pb2 as pb

MAX_LOG_BYTES = 64 * 1024 * 1024
# The largest record of another engine read from a file (a FreeKill transcript of a long game is ~15 MB;
# the service's default --max-record-bytes is the same).
MAX_RECORD_BYTES = 64 * 1024 * 1024
# The most events in one game: the default of `sgs-verify check --max-events` and of the
# service's limit (service.config.Limits.max_events_per_game, `sgs-verify serve --max-events`).
MAX_LOG_EVENTS = 100_000
# The longest error message (parser messages may quote whole values of the input).
MAX_MESSAGE_CHARS = 1000


class LogFormatError(ValueError):
    """The input is not a readable GameLog; the message says why (always printable: no lone
    surrogates, at most MAX_MESSAGE_CHARS characters)."""

    def __init__(self, message: str) -> None:
        super().__init__(printable(message))


def printable(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` made safe to encode as UTF-8 (a lone surrogate, which may come from the input, is
    written as its escape ``\\udXXX``) and cut to ``limit`` characters."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    return text


def read_file(path: str | os.PathLike[str], limit: int = MAX_LOG_BYTES) -> bytes:
    """A file's bytes, or LogFormatError when it is larger than ``limit``: decided by its size, or (a pipe)
    by reading at most ``limit`` + 1 bytes — never by reading a huge file whole first. OSError as open()."""
    with open(path, "rb") as f:
        info = os.fstat(f.fileno())
        if stat.S_ISREG(info.st_mode) and info.st_size > limit:
            raise LogFormatError(f"the file is {info.st_size} bytes; the limit is {limit}; not read")
        if stat.S_ISREG(info.st_mode):
            data = f.read()  # sized by the file (read(limit + 1) would take limit bytes of memory at once)
        else:
            chunks, size = [], 0
            while size <= limit and (chunk := f.read(1 << 20)):
                chunks.append(chunk)
                size += len(chunk)
            data = b"".join(chunks)
    if len(data) > limit:
        raise LogFormatError(f"the file is more than {limit} bytes, the limit; not read")
    return data


def load_log(data: bytes, fmt: str = "auto") -> pb.GameLog:
    """Parse a GameLog from bytes; ``fmt`` is "binary", "json" or "auto" (see ``parse_log``)."""
    return parse_log(data, fmt)[0]


def parse_log(data: bytes, fmt: str = "auto") -> tuple[pb.GameLog, str]:
    """Parse a GameLog from bytes; returns it and the format it was in ("binary" or "json").

    With ``fmt="auto"`` the format is decided by parsing, not by the first byte: bytes that look
    like JSON (a '{' after white space) are read as JSON and, if they are not, as binary — a
    binary log can begin with those bytes too (its header's length is then 0x7b) — and any
    other bytes as binary. When neither reading works, the error is that of the likelier one."""
    if len(data) > MAX_LOG_BYTES:
        raise LogFormatError(f"the log is {len(data)} bytes; the limit is {MAX_LOG_BYTES}")
    if fmt == "json":
        return _json_log(data), "json"
    if fmt == "binary":
        return _binary_log(data), "binary"
    if fmt != "auto":
        raise ValueError(f"unknown log format {fmt!r}: binary, json or auto")
    if data.lstrip()[:1] != b"{":
        return _binary_log(data), "binary"
    try:
        return _json_log(data), "json"
    except LogFormatError as json_error:
        try:
            return _binary_log(data), "binary"
        except LogFormatError:
            raise json_error from None


def _json_log(data: bytes) -> pb.GameLog:
    log = pb.GameLog()
    try:
        json_format.Parse(data.decode("utf-8"), log)
    except UnicodeDecodeError as err:
        raise LogFormatError(f"not UTF-8 JSON: {err}") from None
    except json_format.ParseError as err:
        raise LogFormatError(f"not a GameLog in JSON: {err}") from None
    except RecursionError:
        raise LogFormatError("not a GameLog in JSON: it nests too deeply") from None
    return log


def _binary_log(data: bytes) -> pb.GameLog:
    log = pb.GameLog()
    try:
        log.ParseFromString(data)
    except DecodeError as err:
        raise LogFormatError(f"not a binary GameLog: {err}") from None
    if not log.HasField("header"):
        raise LogFormatError("not a GameLog: it has no header")
    return log


def dump_json(log: pb.GameLog) -> str:
    return json_format.MessageToJson(log, indent=1, ensure_ascii=False)
