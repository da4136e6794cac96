"""The viewer's engine work, run in the verification worker processes (service/workers.py).

A replay's timeline (verifier/state.py: the log followed once, a snapshot of every position) is
built in the worker its id is pinned to and kept there, most recently used first, so the many
positions a replay page asks for are each a look-up. A call names the replay and passes its log
only when the worker asked for it: a call without the log answers None when the worker does not
hold that replay (it was never built there, was evicted, or the worker was restarted), and the
server calls again with the log it read from the store.

Answers are JSON bytes, made here, that the server sends as they are.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import Any

from verifier import load_log
from verifier.state import Timeline

# Timelines kept per worker process. Seats that do not change between positions are stored once, so
# a timeline costs about a hundred bytes per event beyond the log.
MAX_TIMELINES = 8

_TIMELINES: OrderedDict[str, Timeline] = OrderedDict()


class BadPosition(ValueError):
    """A position or seat that is not in the replay; the message says which are."""


def pin(replay_id: str) -> int:
    """Which worker holds a replay's timeline (the index modulo the pool's size)."""
    return int(replay_id[:8], 16)


def _timeline(replay_id: str, log_bytes: bytes | None) -> Timeline | None:
    timeline = _TIMELINES.get(replay_id)
    if timeline is not None:
        _TIMELINES.move_to_end(replay_id)
        return timeline
    if log_bytes is None:
        return None
    timeline = Timeline(load_log(log_bytes))
    _TIMELINES[replay_id] = timeline
    while len(_TIMELINES) > MAX_TIMELINES:
        _TIMELINES.popitem(last=False)
    return timeline


def _json(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


def timeline_json(replay_id: str, log_bytes: bytes | None) -> bytes | None:
    """The positions at a glance (Timeline.summary), or None when the log is needed."""
    timeline = _timeline(replay_id, log_bytes)
    return None if timeline is None else _json(timeline.summary())


def state_json(replay_id: str, log_bytes: bytes | None, position: int, view: int | None) -> bytes | None:
    """The table at one position from one seat's point of view (None: open), or None when the log is
    needed. BadPosition for a position or seat the replay does not have."""
    timeline = _timeline(replay_id, log_bytes)
    if timeline is None:
        return None
    try:
        return _json(timeline.state(position, view))
    except IndexError as err:
        raise BadPosition(str(err)) from None


def cached_count() -> int:
    return len(_TIMELINES)
