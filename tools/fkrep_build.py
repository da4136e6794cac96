"""Build FreeKill client replays (.fk.rep) from a server transcript: one per seat.

Usage: python tools/fkrep_build.py TRANSCRIPT [--out DIR] [--naming seat|freekill] [--container cbor|json]

TRANSCRIPT is a FreeKill server transcript (JSON lines; ``.xz`` compressed is read too). For
every seat — in ``ArrangeSeats`` order, seat 1 the lord — it writes what that player's FreeKill
client would have recorded (``importers.freekill.fkrep.fkrep_from_transcript``) into DIR
(default: the current directory), named

- ``--naming seat`` (default): ``<transcript stem>.seat<k>.fk.rep``, k the seat (1-based);
- ``--naming freekill``: FreeKill's own name, item [1] of the recording —
  ``<date>.<name>.<mode>.<general>.<role>.<winners>.fk.rep``. Every seat of one game shares
  the date, so only a finished game has a distinct name per seat; an unfinished one is refused.

``--container``: ``cbor`` (default; FreeKill v0.5.12 on, version string ``0.5.22``) or ``json``
(up to v0.5.11, version string ``0.5.11``).

It prints one line per file: the seat, the FreeKill player id and the path. Exit 0, or 2 for a
usage error or a transcript that cannot be read.
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from importers.freekill.fkrep import CBOR, CONTAINER_VERSIONS, recording_from_transcript, write_fkrep  # noqa: E402


@dataclass(frozen=True, slots=True)
class SeatFile:
    seat: int  # 1-based, ArrangeSeats order
    player_id: int
    path: Path


def read_transcript(path: Path) -> list[dict[str, Any]]:
    """A transcript's lines as JSON objects (``.xz`` files decompressed)."""
    raw = lzma.decompress(path.read_bytes()) if path.suffix == ".xz" else path.read_bytes()
    lines: list[dict[str, Any]] = []
    for n, text in enumerate(raw.decode("utf-8").splitlines(), 1):
        if not text.strip():
            continue
        obj = json.loads(text)
        if not isinstance(obj, dict):
            raise ValueError(f"{path}:{n}: a {type(obj).__name__}, not a JSON object")
        lines.append(obj)
    return lines


def seat_order(lines: Sequence[dict[str, Any]]) -> list[int]:
    """The FreeKill player ids in seat order (``ArrangeSeats``)."""
    for ln in lines:
        if ln.get("kind") == "notify" and ln.get("cmd") == "ArrangeSeats" and isinstance(ln.get("data"), list):
            return [int(pid) for pid in ln["data"]]
    raise ValueError("the transcript has no ArrangeSeats: no seats to build replays for")


def build(transcript: Path, out: Path, naming: str = "seat", container: str = CBOR) -> list[SeatFile]:
    """Write one .fk.rep per seat of ``transcript`` into ``out``; return what was written."""
    if naming not in ("seat", "freekill"):
        raise ValueError(f"naming {naming!r} is neither 'seat' nor 'freekill'")
    lines = read_transcript(transcript)
    stem = transcript.name.removesuffix(".xz").removesuffix(".jsonl")
    built: list[tuple[int, int, str, bytes]] = []
    for seat, pid in enumerate(seat_order(lines), 1):
        rec = recording_from_transcript(lines, pid, version=CONTAINER_VERSIONS[container])
        if naming == "freekill" and not rec.name.finished:
            raise ValueError("the game is unfinished: its seats' FreeKill names (the date alone) would collide")
        name = f"{stem}.seat{seat}.fk.rep" if naming == "seat" else rec.file_name
        built.append((seat, pid, name, write_fkrep(rec, container=container)))
    names = [name for _, _, name, _ in built]
    if len(set(names)) != len(names):
        raise ValueError(f"two seats would get the same file name: {sorted(names)}")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for seat, pid, name, data in built:
        (out / name).write_bytes(data)
        written.append(SeatFile(seat, pid, out / name))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcript", type=Path)
    parser.add_argument("--out", type=Path, default=Path("."))
    parser.add_argument("--naming", choices=("seat", "freekill"), default="seat")
    parser.add_argument("--container", choices=sorted(CONTAINER_VERSIONS), default=CBOR)
    args = parser.parse_args(argv)
    try:
        files = build(args.transcript, args.out, args.naming, args.container)
    except (OSError, ValueError, lzma.LZMAError) as e:  # JSON and UTF-8 errors are ValueErrors
        print(f"fkrep_build: {args.transcript}: {e}", file=sys.stderr)
        return 2
    for f in files:
        print(f"seat {f.seat}\tplayer {f.player_id}\t{f.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
