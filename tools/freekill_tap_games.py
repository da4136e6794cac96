"""Run N headless FreeKill games with the sgs-verify tap into one tap log, and judge every room.

    SGS_FREEKILL_CORE=../shared/peers/freekill-core-88a912f1.tar.xz \\
        python tools/freekill_tap_games.py --games 30 --cheat-every 1 --log /tmp/fk/freekill.log

Each game is an all-AI room (FreeKill's SmartAI) of the core named by --core or $SGS_FREEKILL_CORE, run
by the test host (tests/freekill_live/host.py); with --cheat-every K, every K-th game also substitutes
PlayCard replies as a modified client would (every kind of tests/freekill_live/host.py CHEATS, each
placed where it applies). The log rotates like freekill.log (--max-bytes). It is the input for the
bridge's latency benchmark and the 30-game measurement: the table says, per game and in all, the
cheats placed by kind, those caught with the right code at the right event by the right player, the
violations on other client replies (the target: none) and the others (FreeKill's AI's own deviations;
by the last cheat before them, since a cheat the verifier did not follow as played would show there). What
was played (rooms, seats, each cheat's player, the tap seq of its reply, the code it must get) is written
beside the log as <log>.games.json, for checking the same log through the live bridge. Needs lua5.4 with
lua-socket and lua-filesystem.
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
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.freekill_live.host import CHEATS, HostError, RotatingLog, install, play_game  # noqa: E402
from tests.freekill_live.judge import evaluate, raw_records, read_rooms  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--games", type=int, default=3)
    ap.add_argument("--players", type=int, default=5)
    ap.add_argument("--cheat-every", type=int, default=0, metavar="K",
                    help="every K-th game also cheats (0: none; 1: every game)")
    ap.add_argument("--cheats", default=",".join(CHEATS), help="kinds to place (comma-separated)")
    ap.add_argument("--core", default=os.environ.get("SGS_FREEKILL_CORE"),
                    help="FreeKill's core: .tar.xz or directory (default $SGS_FREEKILL_CORE)")
    ap.add_argument("--root", type=Path, help="server root to use (default: a temporary directory)")
    ap.add_argument("--log", type=Path, required=True, help="the tap log to write (rotated as name.1, name.2, ...)")
    ap.add_argument("--max-bytes", type=int, default=30 << 20, help="rotate the log at this size (spdlog: 30 MiB)")
    ap.add_argument("--backups", type=int, default=1000)
    ap.add_argument("--first-room", type=int, default=1)
    ap.add_argument("--game-timeout", type=float, default=240.0,
                    help="give a game up after this many seconds (an all-AI stalemate can go on for long)")
    ap.add_argument("--no-judge", action="store_true", help="only play (for the benchmark's input)")
    ap.add_argument("--games-file", type=Path,
                    help="where to write what was played (rooms, seats, winners, each cheat with its player, "
                         "the tap seq of its reply and the code it must get); default: <log>.games.json")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not args.core:
        print("no FreeKill core: give --core or set SGS_FREEKILL_CORE", file=sys.stderr)
        return 2
    kinds = [k for k in args.cheats.split(",") if k]
    unknown = [k for k in kinds if k not in CHEATS]
    if unknown:
        print(f"unknown cheat kinds {unknown} (known: {', '.join(CHEATS)})", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="fkroot-") as tmp:
        root = args.root or Path(tmp)
        install(args.core, root)
        log = RotatingLog(args.log, max_bytes=args.max_bytes, backups=args.backups)
        rows: list[dict[str, Any]] = []
        aborted: list[dict[str, Any]] = []
        try:
            for n in range(args.games):
                # rotated from game to game: each kind in turn is the first tried at a play phase
                cheats = kinds[n % len(kinds):] + kinds[:n % len(kinds)] if kinds else []
                if not (args.cheat_every and n % args.cheat_every == 0):
                    cheats = []
                room = args.first_room + n
                try:
                    game = play_game(None, root, args.log, args.players, room_id=room, seed=n, cheats=cheats,
                                     log=log, timeout_s=args.game_timeout)
                except HostError as err:
                    print(f"room {room}: given up ({err})", file=sys.stderr)
                    aborted.append({"room": room, "why": str(err)[:300]})
                    continue
                rows.append({"room": room, "game": game, "seconds": round(game.seconds, 1),
                             "winner": game.winner, "requests": len(game.view.requests)})
                print(f"room {room}: {game.winner!r} in {game.seconds:.1f} s, {len(game.cheats)} cheat(s)",
                      file=sys.stderr)
        finally:
            log.close()
    games_file = args.games_file or args.log.with_name(args.log.name + ".games.json")
    games_file.write_text(json.dumps({"rooms": [played(row) for row in rows], "given_up": aborted},
                                     ensure_ascii=False, indent=1), encoding="utf-8")
    if args.no_judge:
        return 0
    return report(rows, aborted, args.log, args.json)


def played(row: dict[str, Any]) -> dict[str, Any]:
    """What a game was, for a later check of the same log (e.g. through the live bridge)."""
    game = row["game"]
    return {"room": game.room_id, "seats": game.seats, "winner": game.winner, "seconds": row["seconds"],
            "records": len(game.tap_records),
            "cheats": [{"kind": c.kind, "player": c.player, "seat": game.seats.index(c.player), "seq": c.seq,
                        "reply": c.reply, "expected_code": c.expected_code} for c in game.cheats],
            "timeouts": game.timeouts}


def report(rows: list[dict[str, Any]], aborted: list[dict[str, Any]], log_path: Path, as_json: bool) -> int:
    placed: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    right_event: Counter[str] = Counter()
    right_player: Counter[str] = Counter()
    other_client: list[Any] = []
    other_codes: Counter[str] = Counter()
    after_cheat: Counter[str] = Counter()
    not_followed = []
    games = []
    rooms, raw = read_rooms(log_path), raw_records(log_path)  # the whole log once
    for row in rows:
        result = evaluate(row["game"], log_path, rooms, raw)
        if not result.followed:
            not_followed.append(result.room)
        other_codes.update(result.other_codes)
        after_cheat.update(result.after_cheat)
        other_client.extend((result.room, *v) for v in result.other_client_violations)
        other_client.extend((result.room, *v) for v in result.client_source_violations
                            if v not in result.other_client_violations)
        for c in result.cheats:
            placed[c.kind] += 1
            code_here = c.expected in c.codes
            right_event[c.kind] += c.event is not None and bool(c.codes)
            right_player[c.kind] += c.by == "client" and code_here
            caught[c.kind] += c.caught
        games.append({"room": result.room, "seconds": row["seconds"], "winner": row["winner"],
                      "events": result.events, "followed": result.followed, "finished": result.finished,
                      "cheats": [{"kind": c.kind, "seat": c.seat, "seq": c.seq, "by": c.by, "event": c.event,
                                  "codes": c.codes, "expected": c.expected, "caught": c.caught}
                                 for c in result.cheats],
                      "other_client_violations": result.other_client_violations,
                      "other_codes": result.other_codes, "other_after_cheat": result.after_cheat})
    summary = {"games": len(rows), "given_up": aborted, "followed": len(rows) - len(not_followed),
               "not_followed": not_followed,
               "cheats": sum(placed.values()), "caught": sum(caught.values()),
               "by_kind": {k: {"placed": placed[k], "caught": caught[k], "flagged_event": right_event[k],
                               "right_player": right_player[k]} for k in CHEATS},
               "other_client_violations": len(other_client), "other_codes": dict(other_codes),
               "other_after_cheat": dict(after_cheat)}
    if as_json:
        print(json.dumps({"summary": summary, "games": games}, ensure_ascii=False, indent=1))
    else:
        if aborted:
            print(f"games given up (time limit): {[a['room'] for a in aborted]}")
        print(f"games: {summary['games']}, verifier followed {summary['followed']} to the end"
              + (f" (not: rooms {not_followed})" if not_followed else ""))
        print(f"{'cheat':<18}{'placed':>7}{'caught':>7}{'event flagged':>14}{'client, right code':>20}")
        for k in CHEATS:
            print(f"{k:<18}{placed[k]:>7}{caught[k]:>7}{right_event[k]:>14}{right_player[k]:>20}")
        print(f"{'all':<18}{sum(placed.values()):>7}{sum(caught.values()):>7}")
        print(f"violations on other client replies: {len(other_client)}")
        print("other violations (AI/default decisions), by code: "
              + (", ".join(f"{c} {n}" for c, n in other_codes.most_common()) or "none"))
        print("the same, by the last cheat before them: "
              + (", ".join(f"{c} {n}" for c, n in after_cheat.most_common()) or "none"))
        seconds = [row["seconds"] for row in rows]
        print(f"wall time per game: median {sorted(seconds)[len(seconds) // 2]} s, max {max(seconds)} s")
    ok = sum(caught.values()) == sum(placed.values()) and not other_client
    return 0 if ok else 1


if __name__ == "__main__":
    t0 = time.monotonic()
    code = main()
    print(f"({time.monotonic() - t0:.0f} s)", file=sys.stderr)
    sys.exit(code)
