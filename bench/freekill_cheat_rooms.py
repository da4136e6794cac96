"""One cheat, one violation, measured on FreeKill's real core: rooms with one substituted cheat each, followed live.

    SGS_FREEKILL_CORE=<core .tar.xz or folder> python bench/freekill_cheat_rooms.py --rooms 100   # ~20-40 minutes
    ... --rooms 20 --control 4 --players 5          # a quick look
    ... --json

Needs lua5.4 with lua-socket and lua-filesystem (Debian's packages) and FreeKill's core (a GPL-3.0 test peer, never
part of the project: `../shared/peers/`).

What it does: FreeKill's Lua core plays rooms headless with the tap installed (tests/freekill_live/host.py), every
seat on FreeKill's AI but for one modified client's reply per room (host.CHEATS, one kind a room, the kinds in turn,
5 and 8 players in turn), plus control rooms with no cheat. Their tap lines go into one rotating freekill.log that
`sgs-verify bridge` follows while they are played, into a real `sgs-verify serve` (SQLite, 2 workers). Then, per kind:

- placed: rooms where the cheat found a moment (a kind that found none in a room is tried in the next);
- flagged: printed live at the event its reply led to, with its code, naming the player, as the client's reply;
- false: violations printed in those rooms that are neither the cheat's nor FreeKill's own AI's known gaps
  (tests/freekill_live/judge.py AI_DEVIATIONS on an AI's or default decision): the target is 0;
- AI gaps: the AI's known gaps printed in those rooms (not false: FreeKill's AI breaks those rules itself);
- result: the stored replay finished with FreeKill's result (the recorded game over agrees: no GAME_RESULT);
- stored once: exactly one replay stored for the room;
- FreeKill refused: the cheat's reply refused by FreeKill's own rules too (the tap's reply check, printed by the
  bridge with its code: docs/freekill-bridge.md#two-engines); FreeKill false: any other client reply it refused;
  disagreements: replies the stored replay lists as judged differently by the two engines (the target is 0);
- flood without the ruling: the same rooms judged offline with `server_record` off (the illegal decision rejected, as
  every illegal decision of these kinds was before docs/rules.md#server-records): violations beyond the cheat's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from clients.client import VerifierClient  # noqa: E402
from service.server import BackgroundServer  # noqa: E402
from tests.freekill_live import judge as J  # noqa: E402
from tests.freekill_live.host import (  # noqa: E402
    CHEATS,
    CHECK_CODES,
    GameRecord,
    HostError,
    RotatingLog,
    install,
    play_game,
)
from tests.service.conftest import fresh_database, server_config  # noqa: E402
from tests.service.test_bridge import Running, stored, wait_for  # noqa: E402
from tools.ending import signals_interrupt  # noqa: E402
from verifier import verify  # noqa: E402

TOURNAMENT = "fk-cheat-rooms"


def play(root: Path, log: RotatingLog, log_path: Path, room: int, players: int, seed: int,
         cheats: list[str]) -> GameRecord | None:
    for attempt in range(3):  # FreeKill's AI now and then stalls a room: played again under another id
        try:
            return play_game(None, root, log_path, players=players, room_id=room + 100_000 * attempt, seed=seed,
                             cheats=cheats, log=log, timeout_s=120)
        except HostError:
            continue
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rooms", type=int, default=100, help="rooms with one placed cheat (default 100)")
    parser.add_argument("--control", type=int, default=10, help="rooms with no cheat (default 10)")
    parser.add_argument("--players", default="5,8", help="player counts, in turn (default 5,8)")
    parser.add_argument("--core", default=os.environ.get("SGS_FREEKILL_CORE", ""))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not args.core:
        raise SystemExit("FreeKill's core is needed: --core PATH or $SGS_FREEKILL_CORE")
    counts = [int(p) for p in args.players.split(",")]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fk-cheat-rooms-") as tmp_name:
        tmp = Path(tmp_name)
        install(args.core, tmp / "fk")
        url, _ = fresh_database("sqlite", tmp)
        server = BackgroundServer(server_config(url, tmp)).start()
        log_path = tmp / "freekill.log"
        log = RotatingLog(log_path, max_bytes=4_000_000, backups=10_000)
        run = Running(tmp, server.address, TOURNAMENT)
        games: list[GameRecord] = []
        kinds = list(CHEATS)
        try:
            n = 0
            attempts = 0
            while sum(1 for g in games if g.cheats) < args.rooms and attempts < 4 * args.rooms:
                kind = kinds[attempts % len(kinds)]
                game = play(tmp / "fk", log, log_path, 1000 + attempts, counts[attempts % len(counts)], attempts,
                            [kind])
                attempts += 1
                if game is not None:
                    games.append(game)
                n += 1
                print(f"\rrooms played: {len(games)} ({sum(1 for g in games if g.cheats)} with a cheat)", end="",
                      file=sys.stderr, flush=True)
            for c in range(args.control):
                game = play(tmp / "fk", log, log_path, 500 + c, counts[c % len(counts)], 10_000 + c, [])
                if game is not None:
                    games.append(game)
            print(file=sys.stderr)
            wait_for(lambda: run.settled(g.room_id for g in games), 900)
        finally:
            run.stop()
            log.close()
        report = tabulate(games, run, server.address, log_path)
        server.stop()
    report["minutes"] = round((time.monotonic() - started) / 60, 1)
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print_table(report)


def tabulate(games: list[GameRecord], run: Running, address: str, log_path: Path) -> dict[str, Any]:
    printed = [p for p in run.lines.of("violation") if "judge" not in p]  # this engine's verdicts
    # FreeKill's own rules (the tap's reply check), printed beside them: docs/freekill-bridge.md#two-engines
    refused = {(p["room"], p["record"]): p["code"] for p in run.lines.of("violation") if p.get("judge") == "freekill"}
    rooms, raw = J.read_rooms(log_path), J.raw_records(log_path)
    rows: dict[str, Counter[str]] = {}
    control: Counter[str] = Counter()
    with VerifierClient(address, timeout=60) as client:
        by_table = stored(client, TOURNAMENT)
        for game in games:
            infos = by_table.get(f"room {game.room_id}", [])
            replay = client.get(infos[0].id).replay if infos else None
            result_ok = replay is not None and replay.result.finished and "GAME_RESULT" not in replay.violation_codes
            mine = [p for p in printed if p["room"] == game.room_id]
            evaluated = J.evaluate(game, log_path, rooms, raw)
            at_cheat = {(c.event, c.expected) for c in evaluated.cheats}
            gaps = [p for p in mine if p["code"] in J.AI_DEVIATIONS and p["source"] in ("ai", "default")]
            false = [p for p in mine if (p["event"], p["code"]) not in at_cheat and p not in gaps]
            row = rows.setdefault(evaluated.cheats[0].kind, Counter()) if evaluated.cheats else control
            row["rooms"] += 1
            row[f"players {len(game.players)}"] += 1
            row["stored once"] += len(infos) == 1
            row["result"] += result_ok
            row["false"] += len(false)
            row["AI gaps"] += len(gaps)
            row["stopped"] += sum(1 for s in run.lines.of("stopped") if s.get("room") == game.room_id)
            cheat_replies = {(game.room_id, c.seq) for c in evaluated.cheats}
            row["FreeKill false"] += sum(1 for key in refused if key[0] == game.room_id and key not in cheat_replies)
            row["disagreements"] += len(replay.disagreements) if replay is not None else 0
            for cheat in evaluated.cheats:
                row["FreeKill refused"] += refused.get((game.room_id, cheat.seq)) == CHECK_CODES[cheat.kind]
                row["flagged"] += any(p["event"] == cheat.event and p["code"] == cheat.expected
                                      and p["player"] == cheat.player and p["source"] == "client" for p in mine)
                row["flood without the ruling"] += flood_without_ruling(rooms[game.room_id], cheat.event)
    return {"kinds": {k: dict(v) for k, v in sorted(rows.items())}, "control": dict(control),
            "rooms": len(games), "uncheckable": len(run.lines.of("uncheckable"))}


def flood_without_ruling(room: Any, cheat_event: int | None) -> int:
    """Violations after the cheat's event when the same record is judged as an ordinary log (server_record off)."""
    log = J.judge(room, via_transcript=False).log
    log.header.options.server_record = False
    replay = verify(log)
    return sum(len(a.violations) for a in replay.annotations if cheat_event is not None and a.index > cheat_event)


def print_table(report: dict[str, Any]) -> None:
    print(f"{report['rooms']} rooms in {report['minutes']} minutes ({report['uncheckable']} uncheckable)")
    cols = ["rooms", "flagged", "false", "AI gaps", "result", "stored once", "stopped", "FreeKill refused",
            "FreeKill false", "disagreements", "flood without the ruling"]
    print("| kind | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    total: Counter[str] = Counter()
    for kind, row in report["kinds"].items():
        total.update(row)
        print(f"| {kind} ({CHEATS[kind]}) | " + " | ".join(str(row.get(c, 0)) for c in cols) + " |")
    print("| all | " + " | ".join(str(total.get(c, 0)) for c in cols) + " |")
    control = report["control"]
    print("| control (no cheat) | " + " | ".join(str(control.get(c, 0)) if c not in ("flagged", "FreeKill refused")
                                             else "-"
                                             for c in cols) + " |")


if __name__ == "__main__":
    with signals_interrupt("freekill_cheat_rooms"):  # (SIGTERM too: what it made is removed)
        main()
