"""Reading logs: binary protobuf or its JSON mapping, with clear errors."""

from __future__ import annotations

from google.protobuf import json_format
from google.protobuf.message import DecodeError

from sgsverify.v1 import game_log_pb2 as pb

MAX_LOG_BYTES = 64 * 1024 * 1024
# The most events in one game: the default of `sgs-verify check --max-events` and of the
# service's limit (service.config.Limits.max_events_per_game, `sgs-verify serve --max-events`).
MAX_LOG_EVENTS = 100_000


class LogFormatError(ValueError):
    """The input is not a readable GameLog; the message says why."""


def load_log(data: bytes, fmt: str = "auto") -> pb.GameLog:
    """Parse a GameLog from bytes; ``fmt`` is "binary", "json" or "auto" (JSON if it starts with '{')."""
    if len(data) > MAX_LOG_BYTES:
        raise LogFormatError(f"the log is {len(data)} bytes; the limit is {MAX_LOG_BYTES}")
    if fmt == "auto":
        fmt = "json" if data.lstrip()[:1] == b"{" else "binary"
    log = pb.GameLog()
    if fmt == "json":
        try:
            json_format.Parse(data.decode("utf-8"), log)
        except UnicodeDecodeError as err:
            raise LogFormatError(f"not UTF-8 JSON: {err}") from None
        except json_format.ParseError as err:
            raise LogFormatError(f"not a GameLog in JSON: {err}") from None
        return log
    try:
        log.ParseFromString(data)
    except DecodeError as err:
        raise LogFormatError(f"not a binary GameLog: {err}") from None
    if not log.HasField("header"):
        raise LogFormatError("not a GameLog: it has no header")
    return log


def dump_json(log: pb.GameLog) -> str:
    return json_format.MessageToJson(log, indent=1, ensure_ascii=False)
