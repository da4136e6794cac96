"""FreeKill's client replays (``.fk.rep``): read them, and build them from server transcripts.

The container (FreeKill's client, ``lua/client/clientbase.lua``, ``lua/client/client.lua``,
``src/client/client.cpp``, ``src/client/replayer.cpp``; facts only, no code of theirs is here):

- the file is Qt's ``qCompress`` of one item: a 4-byte big-endian length of the uncompressed
  data, then a zlib stream. From FreeKill v0.5.12 (commit f1abb96f, 2025-08-03) the item is
  **CBOR**; up to v0.5.11 it is **JSON text**. Both are in players' hands and are told apart by
  content (JSON text starts with ``[``, which no CBOR array does), never by the version string;
- the item is an array: ``[0]`` FreeKill's version; ``[1]`` the date ``%Y%m%d%H%M%S``, extended
  at game over with ``.name.mode.general.role.winners`` (the name with its dots written
  ``%2e``; also the file name); ``[2]`` the room as entered, ``[capacity, timeout, settings]``;
  ``[3]`` the recording player, ``[id, screenName, avatar]``; ``[4]`` ``""``; ``[5]``
  ``"normal"`` or ``"reconnect"`` (a reconnect or an observer's recording, starting mid-game
  with ``Reconnect`` / ``Observe``); ``[6]``–``[9]`` ``""``;
- from ``[10]`` on, entries ``[ms, isRequest, command, payload]``;
- in CBOR, ``[2]``, ``[3]`` and each payload are byte strings holding CBOR (plain text for
  :data:`TEXT_COMMANDS`); in JSON, they are strings holding JSON text, and ``[5]`` is ``""``
  (the versions that wrote JSON had no reconnect recordings). A JSON payload that is not JSON
  text is the bare string FreeKill sent (old servers sent a few strings unencoded).

The client starts recording on ``StartGame`` (which is therefore not recorded: FreeKill's
replayer plays one itself) with ``AddPlayer`` entries for the other players, records every
message it then receives, its own requests included, and stops after ``GameOver``. Nobody's
replies are recorded.

Reading is strict: anything that is not such a file raises :class:`FreeKillFormatError`, which
says what is wrong and where. Lua's strings have no type, so a string may come as a CBOR text or
byte string; both read as ``str``. Map keys read as strings: a Lua table's integer keys (a
virtual card ``{[2] = name, [3] = suit, ...}``) as their decimal strings, as the JSON
transcripts have them. Reading is bounded: the uncompressed size by ``max_size``, the nesting by
``max_depth`` and the number of items (arrays, maps and their elements) by ``max_items``, so a
small file cannot make a large Python object.
"""

from __future__ import annotations

import json
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from . import cbor
from .limits import MAX_LINE_ITEMS, json_items, json_nested_items
from .messages import NOTIFY, REQUEST, Message

__all__ = [
    "CBOR",
    "CONTAINER_VERSIONS",
    "DATE_FORMAT",
    "DEFAULT_AVATAR",
    "DEFAULT_DATE",
    "DEFAULT_MAX_SIZE",
    "DEFAULT_VERSION",
    "FIRST_ENTRY",
    "JSON",
    "TEXT_COMMANDS",
    "FreeKillFormatError",
    "Recording",
    "RecordingPlayer",
    "ReplayName",
    "Room",
    "fkrep_from_transcript",
    "json_items",
    "qcompress",
    "quncompress",
    "read_fkrep",
    "recording_from_transcript",
    "screen_name",
    "write_fkrep",
]

# The largest uncompressed recording we accept. A long 10-player game is a few MB.
DEFAULT_MAX_SIZE: Final = 256 * 1024 * 1024

# Commands whose payload FreeKill's client takes as plain text, not CBOR.
TEXT_COMMANDS: Final = frozenset(
    {"ErrorMsg", "ErrorDlg", "Heartbeat", "ServerMessage", "UpdateAvatar", "UpdatePassword"}
)

FIRST_ENTRY: Final = 10  # items [0]-[9] are the header
DATE_FORMAT: Final = "%Y%m%d%H%M%S"
NORMAL: Final = "normal"
RECONNECT: Final = "reconnect"

# The two containers (see the module's docstring), and a real version string that wrote each.
CBOR: Final = "cbor"
JSON: Final = "json"
CONTAINER_VERSIONS: Final = {CBOR: "0.5.22", JSON: "0.5.11"}

# What our writer puts where a transcript says nothing (see fkrep_from_transcript).
DEFAULT_VERSION: Final = CONTAINER_VERSIONS[CBOR]
DEFAULT_DATE: Final = datetime(2025, 11, 15)  # that snapshot's date: no wall clock, output is deterministic
DEFAULT_AVATAR: Final = "liubei"  # avatars are general names
MS_PER_SEQ: Final = 10

_CHUNK: Final = 1 << 16  # zlib input fed per step


class FreeKillFormatError(ValueError):
    """The bytes are not a FreeKill replay; the message says what is wrong and where."""


# The most characters of a value of the record a message quotes: a text item may be as long as the record
# (its repr up to 4 times that, in 4 bytes a character), and its message is printed and sent to the caller.
QUOTED_CHARS: Final = 60


def quoted(text: str) -> str:
    """``text``'s repr, cut to :data:`QUOTED_CHARS` characters (and its length said) when it is longer."""
    if len(text) <= QUOTED_CHARS:
        return repr(text)
    return f"{text[:QUOTED_CHARS]!r}… ({len(text)} characters)"


# ---------------------------------------------------------------------------------------------
# the recording


@dataclass(frozen=True, slots=True)
class ReplayName:
    """Item ``[1]``: when the recording started and, once the game is over, who recorded it and
    how it ended (``finished``). ``winners`` is the ``GameOver`` string (``""``: a draw, or the
    player left)."""

    timestamp: datetime
    player_name: str | None = None
    game_mode: str | None = None
    general: str | None = None
    role: str | None = None
    winners: str | None = None

    @property
    def finished(self) -> bool:
        return self.player_name is not None

    def __str__(self) -> str:
        date = self.timestamp.strftime(DATE_FORMAT)
        if not self.finished:
            return date
        # FreeKill escapes the dots of the name only: the other parts hold none.
        name = (self.player_name or "").replace(".", "%2e")
        return ".".join([date, name, self.game_mode or "", self.general or "", self.role or "", self.winners or ""])

    @classmethod
    def parse(cls, text: str) -> ReplayName:
        parts = text.split(".", 6)  # (at most 7 parts: a text of a million dots is not a million strings)
        if len(parts) not in (1, 6) or not re.fullmatch(r"[0-9]{14}", parts[0]):
            raise FreeKillFormatError(
                f"item [1] {quoted(text)} is neither a date %Y%m%d%H%M%S nor date.name.mode.general.role.winners"
            )
        try:
            timestamp = datetime.strptime(parts[0], DATE_FORMAT)
        except ValueError as e:
            raise FreeKillFormatError(f"item [1] {quoted(text)}: {parts[0]!r} is no date ({e})") from None
        if len(parts) == 1:
            return cls(timestamp)
        name, mode, general, role, winners = parts[1:]
        return cls(timestamp, name.replace("%2e", "."), mode, general, role, winners)


@dataclass(frozen=True, slots=True)
class Room:
    """Item ``[2]``: the room as entered."""

    capacity: int
    timeout: int
    settings: dict[str, Any]


@dataclass(frozen=True, slots=True)
class RecordingPlayer:
    """Item ``[3]``: the player whose client recorded."""

    id: int
    screen_name: str
    avatar: str


@dataclass(frozen=True)
class Recording:
    """One ``.fk.rep``. ``messages`` are its entries in order: ``seq`` is the entry's index in
    the top-level array (so the first is :data:`FIRST_ENTRY`), ``kind`` REQUEST or NOTIFY,
    ``to`` the recording player. ``ms[i]`` is the timestamp of ``messages[i]`` (FreeKill's:
    wall-clock milliseconds; ours: the transcript's seq x 10)."""

    version: str
    name: ReplayName
    room: Room
    player: RecordingPlayer
    reconnect: bool  # starts mid-game: the client reconnected or observed
    messages: list[Message] = field(default_factory=list)
    ms: list[int] = field(default_factory=list)

    @property
    def file_name(self) -> str:
        """FreeKill's own file name for it: ``recording/<this>``."""
        return f"{self.name}.fk.rep"


# ---------------------------------------------------------------------------------------------
# the container


def qcompress(data: bytes, level: int = 6) -> bytes:
    """Qt's ``qCompress``: the 4-byte big-endian length, then a zlib stream."""
    if len(data) > 0xFFFFFFFF:
        raise ValueError(f"{len(data)} bytes do not fit qCompress's 32-bit length")
    return len(data).to_bytes(4, "big") + zlib.compress(data, level)


def quncompress(data: bytes, max_size: int = DEFAULT_MAX_SIZE) -> bytes:
    """Qt's ``qUncompress``, strictly: the declared length must be right, at most ``max_size``,
    and the zlib stream must be whole with nothing after it. Decompresses step by step and never
    past the declared length, so a zip bomb is refused after ``max_size`` bytes at most."""
    if len(data) < 4:
        raise FreeKillFormatError(f"not qCompress data: {len(data)} byte(s), fewer than the 4-byte length")
    declared = int.from_bytes(data[:4], "big")
    if declared > max_size:
        raise FreeKillFormatError(
            f"qCompress header declares {declared} uncompressed bytes, more than the cap of {max_size}"
        )
    inflater = zlib.decompressobj()
    out = bytearray()
    pos = 4
    try:
        while not inflater.eof:
            chunk = inflater.unconsumed_tail
            if not chunk:
                if pos >= len(data):
                    raise FreeKillFormatError(
                        f"truncated zlib stream: it ends after {len(data) - 4} byte(s) "
                        f"({len(out)} of the {declared} declared bytes decompressed)"
                    )
                chunk = data[pos : pos + _CHUNK]
                pos += len(chunk)
            # One byte more than declared is enough to know the length is wrong.
            out += inflater.decompress(chunk, declared + 1 - len(out))
            if len(out) > declared:
                raise FreeKillFormatError(
                    f"the zlib stream holds more than the {declared} bytes the qCompress header declares"
                )
    except zlib.error as e:
        raise FreeKillFormatError(f"not a zlib stream after the qCompress header: {e}") from None
    trailing = len(inflater.unused_data) + len(data) - pos
    if trailing:
        raise FreeKillFormatError(f"{trailing} byte(s) after the zlib stream")
    if len(out) != declared:
        raise FreeKillFormatError(f"the qCompress header declares {declared} bytes, the zlib stream holds {len(out)}")
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# reading


def read_fkrep(
    data: bytes,
    *,
    max_size: int = DEFAULT_MAX_SIZE,
    max_depth: int = cbor.DEFAULT_MAX_DEPTH,
    max_items: int | None = None,
) -> Recording:
    """The recording in ``data`` (a ``.fk.rep`` file's bytes, or ``bytes.fromhex`` of the
    client database's ``myGameRecordings.recording``), in either container (CBOR or JSON, told
    apart by content). Raises :class:`FreeKillFormatError` for anything else: not qCompress, bad
    zlib, not CBOR or JSON, wrong shapes or types. ``max_size`` caps the uncompressed size,
    ``max_depth`` the nesting of every CBOR item, ``max_items`` the items of the whole recording
    (every array, map, key and value of the item and its payloads; JSON's are counted from the
    text before it is parsed: :func:`json_items`)."""
    raw = quncompress(bytes(data), max_size)
    start = len(raw) - len(raw.lstrip())
    if raw[start : start + 1] == b"[":
        try:
            return _read(_JsonContainer(raw, max_items))
        except FreeKillFormatError as e:  # the shape checks name CBOR's types: say JSON's
            text = str(e)
            for cbor_kind, json_kind in _JSON_KINDS:
                text = text.replace(cbor_kind, json_kind)
            raise FreeKillFormatError(text) from None
    return _read(_CborContainer(raw, max_depth, max_items))


_JSON_KINDS: Final = (("a CBOR text string", "a JSON string"), ("a CBOR map", "a JSON object"),
                      ("a CBOR integer", "a JSON number"), ("a CBOR float", "a JSON number"), ("a CBOR ", "a JSON "))


class _CborContainer:
    """v0.5.12 on: the item and its payloads are CBOR."""

    name = "CBOR"
    modes = (NORMAL, RECONNECT)
    limit: int

    def __init__(self, raw: bytes, max_depth: int, max_items: int | None) -> None:
        self.raw = raw
        self.max_depth = max_depth
        self.left = self.limit = 2 * len(raw) + 2 if max_items is None else max_items  # an item is a byte at least

    def _take(self, count: int) -> None:
        self.left -= count

    def _limit_error(self, where: str) -> FreeKillFormatError:
        return FreeKillFormatError(f"{where} holds more items than the whole recording may ({self.limit}): "
                                   "refused before it is read whole")

    def top(self) -> Any:
        try:
            top, count = cbor.decode_counted(self.raw, max_depth=self.max_depth, skip_tags=True, max_items=self.left)
        except cbor.CborError as e:
            if e.reason.startswith("more than"):
                raise self._limit_error("the recording") from None
            raise FreeKillFormatError(f"the uncompressed recording is not one CBOR item: {e}") from None
        self._take(count)
        return top

    def payload(self, value: Any, where: str) -> Any:
        """The CBOR a byte string holds (Lua may have written it as a text string: its UTF-8 bytes
        are the same), decoded with string keys and normalised as the JSON transcripts have it."""
        if isinstance(value, str):
            value = value.encode("utf-8")
        if not isinstance(value, bytes):
            raise FreeKillFormatError(f"{where} is a CBOR {_kind(value)}, not a byte string holding CBOR")
        try:
            decoded, count = cbor.decode_counted(value, max_depth=self.max_depth, str_keys=True, skip_tags=True,
                                                 max_items=max(min(self.left, MAX_LINE_ITEMS), 0))
        except cbor.CborError as e:
            if e.reason.startswith("more than") and self.left > MAX_LINE_ITEMS:
                raise FreeKillFormatError(f"{where} holds more than {MAX_LINE_ITEMS} items, more than any FreeKill "
                                          "message holds: refused before it is read whole") from None
            if e.reason.startswith("more than"):
                raise self._limit_error(where) from None
            raise FreeKillFormatError(f"{where} is not CBOR: {e.reason} at byte {e.offset} of its {len(value)}") \
                from None
        self._take(count)
        try:
            return cbor.json_shaped(decoded)
        except cbor.CborError as e:
            raise FreeKillFormatError(f"{where} {e.reason}") from None


class _JsonContainer:
    """Up to v0.5.11: the item is JSON text, and ``[2]``, ``[3]`` and the payloads are strings
    holding JSON text (or, for a payload, the bare string FreeKill sent)."""

    name = "JSON"
    modes = ("", NORMAL, RECONNECT)

    def __init__(self, raw: bytes, max_items: int | None) -> None:
        self.raw = raw
        # The text's count covers the payloads too: their brackets and commas as they stand, or escaped.
        items = json_nested_items(raw)
        if max_items is not None and items > max_items:
            raise FreeKillFormatError(f"the recording (JSON) holds up to {items} items, more than the "
                                      f"{max_items} it may: refused before it is parsed")

    def top(self) -> Any:
        try:
            return json.loads(self.raw)
        except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise FreeKillFormatError(f"the uncompressed recording starts as JSON but is not JSON text: {e}") \
                from None

    def payload(self, value: Any, where: str, *, bare: bool = False) -> Any:
        if not isinstance(value, str):
            raise FreeKillFormatError(f"{where} is a JSON {_json_kind(value)}, not a string holding JSON text")
        items = json_items(value)
        if items > MAX_LINE_ITEMS:
            raise FreeKillFormatError(f"{where} holds up to {items} items, more than any FreeKill message holds "
                                      f"({MAX_LINE_ITEMS}): refused before it is parsed")
        try:
            return json.loads(value)
        except (ValueError, RecursionError) as e:
            if bare:
                return value
            raise FreeKillFormatError(f"{where} is not JSON text: {e}") from None


def _read(container: _CborContainer | _JsonContainer) -> Recording:
    top = container.top()
    kind = f"a JSON {_json_kind(top)}" if isinstance(container, _JsonContainer) else f"a CBOR {_kind(top)}"
    if not isinstance(top, list):
        raise FreeKillFormatError(f"the recording is {kind}, not an array")
    if len(top) < FIRST_ENTRY:
        raise FreeKillFormatError(
            f"the recording array has {len(top)} item(s), fewer than the {FIRST_ENTRY} of its header"
        )

    version = _text(top[0], "item [0] (version)")
    name = ReplayName.parse(_text(top[1], "item [1] (date and name)"))
    room_item = container.payload(top[2], "item [2] (room)")
    if not (isinstance(room_item, list) and len(room_item) >= 3):
        raise FreeKillFormatError(f"item [2] (room) holds {_shape(room_item)}, not [capacity, timeout, settings]")
    room = Room(
        _int(room_item[0], "item [2] (room) capacity"),
        _int(room_item[1], "item [2] (room) timeout"),
        _map(room_item[2], "item [2] (room) settings"),
    )
    player_item = container.payload(top[3], "item [3] (recording player)")
    if not (isinstance(player_item, list) and len(player_item) >= 3):
        raise FreeKillFormatError(
            f"item [3] (recording player) holds {_shape(player_item)}, not [id, screenName, avatar]"
        )
    player = RecordingPlayer(
        _int(player_item[0], "item [3] (recording player) id"),
        _text(player_item[1], "item [3] (recording player) screenName"),
        _text(player_item[2], "item [3] (recording player) avatar"),
    )
    for i in (4, 6, 7, 8, 9):
        _text(top[i], f"item [{i}] (reserved)")
    mode = _text(top[5], "item [5] (normal or reconnect)")
    if mode not in container.modes:
        allowed = " nor ".join(repr(m) for m in container.modes)
        raise FreeKillFormatError(f"item [5] is {quoted(mode)}, neither {allowed} ({container.name} container)")

    messages: list[Message] = []
    stamps: list[int] = []
    to = (player.id,)
    for i in range(FIRST_ENTRY, len(top)):
        entry = top[i]
        top[i] = None  # the undecoded payload is not needed once decoded
        where = f"entry [{i}]"
        if not (isinstance(entry, list) and len(entry) >= 4):
            raise FreeKillFormatError(f"{where} is {_shape(entry)}, not [ms, isRequest, command, payload]")
        ms = _int(entry[0], f"{where} ms")
        if not isinstance(entry[1], bool):
            raise FreeKillFormatError(f"{where} isRequest is {_kind_in(container, entry[1])}, not a boolean")
        cmd = _text(entry[2], f"{where} command")
        where = f"{where} ({cmd if len(cmd) <= QUOTED_CHARS else quoted(cmd)})"
        if cmd in TEXT_COMMANDS:
            payload: Any = _text(entry[3], f"{where} payload")
        elif isinstance(container, _JsonContainer):
            payload = container.payload(entry[3], f"{where} payload", bare=True)
        else:
            payload = container.payload(entry[3], f"{where} payload")
        messages.append(Message(i, REQUEST if entry[1] else NOTIFY, cmd, payload, to))
        stamps.append(ms)
    return Recording(version, name, room, player, mode == RECONNECT, messages, stamps)


def _kind_in(container: _CborContainer | _JsonContainer, value: Any) -> str:
    return f"a JSON {_json_kind(value)}" if isinstance(container, _JsonContainer) else f"a CBOR {_kind(value)}"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return {int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__)


def _text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FreeKillFormatError(f"{where} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    raise FreeKillFormatError(f"{where} is a CBOR {_kind(value)}, not a string")


def _int(value: Any, where: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():  # a Lua number that went out as a double
        return int(value)
    raise FreeKillFormatError(f"{where} is a CBOR {_kind(value)}, not an integer")


def _map(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if value == []:  # Lua writes an empty table as an empty array
        return {}
    raise FreeKillFormatError(f"{where} is a CBOR {_kind(value)}, not a map")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if value is cbor.UNDEFINED:
        return "undefined"
    if isinstance(value, cbor.Simple):
        return f"simple value {value.value}"
    return {
        int: "integer", float: "float", str: "text string", bytes: "byte string", list: "array", dict: "map",
    }.get(type(value), type(value).__name__)


def _shape(value: Any) -> str:
    return f"an array of {len(value)}" if isinstance(value, list) else f"a CBOR {_kind(value)}"


# ---------------------------------------------------------------------------------------------
# writing


def write_fkrep(recording: Recording, *, level: int = 6, container: str = CBOR) -> bytes:
    """``recording`` as a ``.fk.rep`` file's bytes (``read_fkrep`` gives it back), in
    ``container`` :data:`CBOR` (FreeKill v0.5.12 on) or :data:`JSON` (up to v0.5.11).

    CBOR: payloads are CBOR of ``data`` — text for :data:`TEXT_COMMANDS` — with every map whose
    keys are all decimal integers (``"2"``, ``"10"``, not ``"02"``) written with integer keys, as
    FreeKill's Lua tables are. JSON: the item is JSON text, ``[2]``, ``[3]`` and the payloads
    strings holding JSON text (text for :data:`TEXT_COMMANDS`), ``[5]`` ``""`` (those versions
    had no reconnect recordings). ``seq`` and ``to`` of the messages are not written (the reader
    sets them)."""
    if container not in (CBOR, JSON):
        raise ValueError(f"container {container!r} is neither {CBOR!r} nor {JSON!r}")
    if len(recording.ms) != len(recording.messages):
        raise ValueError(f"{len(recording.ms)} timestamps for {len(recording.messages)} messages")
    as_json = container == JSON
    if as_json and recording.reconnect:
        raise ValueError("the JSON container (up to v0.5.11) has no reconnect recordings")

    def packed(value: Any) -> Any:
        if as_json:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        return cbor.encode(_lua(value))

    room = [recording.room.capacity, recording.room.timeout, recording.room.settings]
    me = recording.player
    items: list[Any] = [
        recording.version,
        str(recording.name),
        packed(room),
        packed([me.id, me.screen_name, me.avatar]),
        "",
        "" if as_json else RECONNECT if recording.reconnect else NORMAL,
        "",
        "",
        "",
        "",
    ]
    for msg, ms in zip(recording.messages, recording.ms, strict=True):
        if msg.kind not in (NOTIFY, REQUEST):
            raise ValueError(f"message seq {msg.seq} is a {msg.kind!r}: a client recording holds no replies")
        if msg.cmd in TEXT_COMMANDS:
            if not isinstance(msg.data, str):
                raise ValueError(f"message seq {msg.seq}: {msg.cmd} carries text, not a {type(msg.data).__name__}")
            payload: Any = msg.data if as_json else msg.data.encode("utf-8")
        else:
            payload = packed(msg.data)
        items.append([ms, msg.kind == REQUEST, msg.cmd, payload])
    if as_json:
        return qcompress(json.dumps(items, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), level)
    return qcompress(cbor.encode(items), level)


_DECIMAL: Final = re.compile(r"0|[1-9][0-9]{0,18}")  # canonical, and within 64 bits (checked below)


def _lua(value: Any) -> Any:
    """``value`` with the maps a Lua table with integer keys would be keyed by integers."""
    if isinstance(value, Mapping):
        items = {k: _lua(v) for k, v in value.items()}
        if items and all(isinstance(k, str) and _DECIMAL.fullmatch(k) and int(k) < 1 << 63 for k in items):
            return {int(k): v for k, v in items.items()}
        return items
    if isinstance(value, list | tuple):
        return [_lua(v) for v in value]
    return value


def screen_name(player_id: int) -> str:
    """The screen name our writer gives a FreeKill player id: transcripts carry none, and these
    are the ones FreeKill's headless run used (its ``GameSummary`` banner names ``p1``, ``p2``…)."""
    return f"p{player_id}"


def recording_from_transcript(
    lines: Iterable[Mapping[str, Any]],
    player_id: int,
    *,
    version: str = DEFAULT_VERSION,
    date: datetime = DEFAULT_DATE,
    avatar: str = DEFAULT_AVATAR,
) -> Recording:
    """What ``player_id``'s FreeKill client would have recorded of the game a server transcript
    (its lines as JSON objects) holds — see :func:`fkrep_from_transcript`."""
    lines = list(lines)
    meta = next((ln for ln in lines if ln.get("kind") == "meta" and "settings" in ln), None)
    if meta is None:
        raise ValueError("the transcript has no meta line with the players and settings")
    settings = dict(meta["settings"])
    players = _player_ids(lines)
    if player_id not in players:
        raise ValueError(f"player id {player_id} is not in this game (its players: {sorted(players)})")
    # The room's timeout is not in the transcript; its requests' most common one is it.
    timeouts = Counter(ln["timeout"] for ln in lines
                       if ln.get("kind") == "request" and isinstance(ln.get("timeout"), int))
    timeout = timeouts.most_common(1)[0][0] if timeouts else 15
    room = Room(int(meta.get("players", len(players))), timeout, settings)
    me = RecordingPlayer(player_id, screen_name(player_id), avatar)

    messages: list[Message] = []
    stamps: list[int] = []
    general, role, winners = "", "unknown", None
    started = False
    for ln in lines:
        kind, cmd = ln.get("kind"), ln.get("cmd")
        if kind not in ("notify", "request"):
            continue  # ai_reply, meta, log, gameover: no client receives them
        seq = int(ln["seq"])
        to = ln.get("to")
        if kind == "request":
            copies = 1 if to == player_id or (isinstance(to, list) and player_id in to) else 0
        else:
            # A player listed twice got the message twice (two identical broadcasts in a row).
            copies = to.count(player_id) if isinstance(to, list) else int(to == player_id)
        if not copies:
            continue
        if not started:
            if cmd != "StartGame":
                continue  # before StartGame the client is not recording
            # Recording starts here, with the other players; StartGame itself is not recorded.
            started = True
            for pid in sorted(players - {player_id}):
                messages.append(Message(0, NOTIFY, "AddPlayer", [pid, screen_name(pid), avatar, True, 0]))
                stamps.append(seq * MS_PER_SEQ)
            continue
        data = ln.get("data")
        for _ in range(copies):
            messages.append(Message(0, REQUEST if kind == "request" else NOTIFY, str(cmd), data))
            stamps.append(seq * MS_PER_SEQ)
        if cmd == "PropertyUpdate" and isinstance(data, list) and len(data) >= 3 and data[0] == player_id:
            if data[1] == "general":
                general = str(data[2])
            elif data[1] == "role":
                role = str(data[2])
        if cmd == "GameOver":
            winners = str(data)
            break  # the client stops recording
    if not started:
        raise ValueError(f"player {player_id} never received StartGame: FreeKill's client would record nothing")

    if winners is None:  # unfinished: FreeKill would save nothing; the date alone is what it held
        name = ReplayName(date.replace(microsecond=0))
    else:
        mode = str(settings.get("gameMode", ""))
        name = ReplayName(date.replace(microsecond=0), me.screen_name, mode, general, role, winners)
    to = (player_id,)
    numbered = [Message(FIRST_ENTRY + i, m.kind, m.cmd, m.data, to) for i, m in enumerate(messages)]
    return Recording(version, name, room, me, False, numbered, stamps)


def fkrep_from_transcript(
    lines: Iterable[Mapping[str, Any]],
    player_id: int,
    *,
    version: str | None = None,
    date: datetime = DEFAULT_DATE,
    avatar: str = DEFAULT_AVATAR,
    level: int = 6,
    container: str = CBOR,
) -> bytes:
    """The ``.fk.rep`` that ``player_id``'s FreeKill client would have recorded of the game in a
    server transcript (its lines as JSON objects, in order). Deterministic: no wall clock.

    - ``container``: :data:`CBOR` or :data:`JSON` (see :func:`write_fkrep`); ``version``
      (transcripts do not say it) defaults to a real version that wrote that container
      (:data:`CONTAINER_VERSIONS`: ``0.5.22``, ``0.5.11``).
    - Header: ``version``, ``date`` extended at game over with the
      player's screen name, ``meta.settings.gameMode``, the player's general and role as the last
      ``PropertyUpdate`` they received said (``""`` / ``"unknown"`` if none, as FreeKill writes),
      and the ``GameOver`` winners; the room ``[meta.players, the most common request timeout,
      meta.settings]``; the player ``[id, screen_name(id), avatar]``; ``"normal"``.
    - Names are made up (transcripts carry none): ``screen_name(id)`` is ``p<id>``, every avatar
      ``avatar``, every total game time 0.
    - Entries, from the player's ``StartGame`` on (which, as in FreeKill, is not itself
      recorded): ``AddPlayer [id, screenName, avatar, true, 0]`` for every other player in
      ascending id order, then every ``notify`` line whose ``to`` lists the player — once per
      time it lists them: a ``to`` naming the player twice is two identical messages sent in a
      row, merged into one line by the transcript — and every ``request`` line to the player
      (isRequest true), in transcript order, up to and including ``GameOver``. Never
      ``ai_reply``, ``meta``, ``log`` or ``gameover`` lines.
    - ``ms`` is the line's seq x 10 (the ``AddPlayer`` entries get StartGame's), so
      ``ms // 10`` gives the transcript seq back.
    - Payloads: CBOR of the line's ``data``, maps whose keys are all decimal integers written
      with integer keys, as FreeKill's Lua tables are (see :func:`write_fkrep`).
    """
    if container not in CONTAINER_VERSIONS:
        raise ValueError(f"container {container!r} is neither {CBOR!r} nor {JSON!r}")
    rec = recording_from_transcript(lines, player_id, version=version or CONTAINER_VERSIONS[container], date=date,
                                    avatar=avatar)
    return write_fkrep(rec, level=level, container=container)


def _player_ids(lines: list[Mapping[str, Any]]) -> set[int]:
    # The seating names every player; without it, whoever was sent anything.
    for ln in lines:
        if ln.get("kind") == "notify" and ln.get("cmd") == "ArrangeSeats" and isinstance(ln.get("data"), list):
            return {int(pid) for pid in ln["data"]}
    ids: set[int] = set()
    for ln in lines:
        to: Any = ln.get("to")
        if ln.get("kind") in ("notify", "request") and to is not None:
            ids.update(int(pid) for pid in (to if isinstance(to, list) else [to]))
    return ids
