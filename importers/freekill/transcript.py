"""FreeKill server-side transcripts: one JSON object per line, every request, reply and
notification of one room (what a FreeKill server operator can record).

Line kinds: ``meta`` (first: players and room settings; last: end, result, rounds), ``notify``
(``to``: the player ids that received it), ``request`` (``to``: one player id), ``ai_reply``
(that player's answer; ``"__cancel"`` = declined or the default taken), ``log`` and
``gameover`` (not part of the game).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

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


def read_transcript(lines: Iterable[str | bytes]) -> Transcript:
    """Parse a transcript; raises TranscriptError naming the first line that is not one."""
    transcript: Transcript | None = None
    for line_no, raw in enumerate(lines, 1):
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as err:
            raise TranscriptError(f"line {line_no}: not JSON ({err})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
            raise TranscriptError(f"line {line_no}: a transcript line is an object with a 'kind'")
        kind = obj["kind"]
        if transcript is None:
            if kind != "meta" or not isinstance(obj.get("players"), int):
                raise TranscriptError(f"line {line_no}: a transcript starts with its meta line (players, settings)")
            transcript = Transcript(meta=obj)
            continue
        if kind == "meta":
            transcript.end = obj
            continue
        mine = _KINDS.get(kind)
        if mine is None:
            continue  # log lines, the gameover marker: not part of the game
        seq, cmd = obj.get("seq"), obj.get("cmd")
        if not isinstance(seq, int) or not isinstance(cmd, str):
            raise TranscriptError(f"line {line_no}: a {kind} line needs an integer 'seq' and a 'cmd'")
        transcript.messages.append(Message(seq, mine, cmd, obj.get("data"), _ids(obj.get("to", []), line_no),
                                           BY_AI if kind == "ai_reply" else ""))
    if transcript is None:
        raise TranscriptError("the input is empty: no meta line")
    return transcript
