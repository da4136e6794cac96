"""FreeKill server-side transcripts: one JSON object per line, every request, reply and
notification of one room (what a FreeKill server operator can record).

Line kinds: ``meta`` (first: players and room settings; last: end, result, rounds), ``notify``
(``to``: the player ids that received it), ``request`` (``to``: one player id), ``ai_reply``
(that player's answer; ``"__cancel"`` = declined or the default taken), ``log`` and
``gameover`` (not part of the game).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from importers.freekill.limits import MAX_LINE_ITEMS, json_items
from importers.freekill.messages import BY_AI, NOTIFY, REPLY, REQUEST, Message


class TranscriptError(ValueError):
    """The input is not a FreeKill transcript (with the line where that became clear)."""


@dataclass(slots=True)
class Transcript:
    meta: dict[str, Any]  # the first meta line
    end: dict[str, Any] = field(default_factory=dict)  # the last meta line (end, result, rounds), if any
    messages: list[Message] = field(default_factory=list)


_KINDS = {"notify": NOTIFY, "request": REQUEST, "ai_reply": REPLY}


def _ids(value: Any, line_no: int) -> tuple[int, ...]:
    if isinstance(value, bool):
        raise TranscriptError(f"line {line_no}: 'to' must be player ids")
    if isinstance(value, int):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return tuple(value)
    raise TranscriptError(f"line {line_no}: 'to' must be a player id or a list of them")


def read_transcript(
    lines: Iterable[str | bytes],
    *,
    max_items: int | None = None,
    max_line_items: int = MAX_LINE_ITEMS,
    keep: Callable[[str, str], bool] | None = None,
) -> Transcript:
    """Parse a transcript; raises TranscriptError naming the first line that is not one.

    Bounded as it goes (``lines`` may be a stream): a line holding more than ``max_line_items``
    items (:func:`~importers.freekill.limits.json_items`, counted before it is parsed) is refused;
    ``keep(kind, cmd)`` says whether a message's ``data`` is kept (otherwise it is None, and the
    parsed line is dropped at once); the kept items and one per message count against
    ``max_items``."""
    transcript: Transcript | None = None
    budget = max_items
    for line_no, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        items = json_items(raw)
        if items > max_line_items:
            raise TranscriptError(f"line {line_no}: up to {items} items, more than any FreeKill message holds "
                                  f"({max_line_items}): refused unread")
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as err:
            raise TranscriptError(f"line {line_no} is not UTF-8 ({err})") from None
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, RecursionError) as err:
            if not text.endswith("\n"):  # (the last line, with no newline: the file ends inside it)
                raise TranscriptError(f"line {line_no}: the transcript ends in the middle of this line (its "
                                      f"{line_no - 1} lines before it are whole: a file cut short, or still being "
                                      f"written) ({err})") from None
            raise TranscriptError(f"line {line_no}: not JSON ({err})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
            raise TranscriptError(f"line {line_no}: a transcript line is an object with a 'kind'")
        kind = obj["kind"]
        mine = _KINDS.get(kind)
        if transcript is not None and kind != "meta" and mine is None:
            continue  # log lines, the gameover marker: not part of the game
        cmd = obj.get("cmd")
        kept = kind == "meta" or keep is None or (isinstance(cmd, str) and keep(mine or kind, cmd))
        if budget is not None:
            budget -= items if kept else 1
            if budget < 0:
                raise TranscriptError(f"line {line_no}: the transcript holds more than {max_items} items, the "
                                      "most a record of this size limit may: refused unread")
        if transcript is None:
            if kind != "meta" or not isinstance(obj.get("players"), int):
                raise TranscriptError(f"line {line_no}: a transcript starts with its meta line (players, settings)")
            transcript = Transcript(meta=obj)
            continue
        if kind == "meta":
            transcript.end = obj
            continue
        assert mine is not None
        seq = obj.get("seq")
        if not isinstance(seq, int) or not isinstance(cmd, str):
            raise TranscriptError(f"line {line_no}: a {kind} line needs an integer 'seq' and a 'cmd'")
        data = obj.get("data") if kept else None
        transcript.messages.append(Message(seq, mine, cmd, data, _ids(obj.get("to", []), line_no),
                                           BY_AI if kind == "ai_reply" else ""))
    if transcript is None:
        raise TranscriptError("the input is empty: no meta line")
    return transcript
