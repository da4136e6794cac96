"""The tap's reply check at scale: FreeKill's AI plays rooms headless, and the check judges every reply as if a
client had sent it.

    SGS_FREEKILL_CORE=<core .tar.xz or folder> python bench/tap_check_soundness.py            # 50 games, ~10-20 min
    ... --games 10 --extension-share 0.5 --players 5                                          # a quick look
    ... --json out.json                                                                       # everything, kept

Needs lua5.4 with lua-socket and lua-filesystem (Debian's packages) and FreeKill's core (a GPL-3.0 test peer, never
part of the project: `../shared/peers/`); extension rooms need the peers' utility, standard_ex and shzl archives beside
the core's (or in $SGS_FREEKILL_PACKAGES).

What it does: the tap (integrations/freekill/tap) runs with CHECK_AI_REPLIES on, so every reply of every seat is
re-built through FreeKill's own request handlers (or checked against its request's data) and a `check` record written
for it (tests/freekill_live/host.py play_checked_game). A share of the rooms draw their generals from standard_ex and
shzl (界限突破, 神话再临) instead of the core's 25. FreeKill's AI builds its replies through the same handlers, so a
refusal is either a defect of the check or an AI reply FreeKill's own client would not allow: every refusal is
listed with its reply, to be explained. Per request kind it reports: replies checked, passed (declined apart: a
decline is the player's right and the default applies), refused (by code), unjudged (by reason), and the check's cost
per reply (p50, p99, max of the server's CPU time, the records' cpu_us; and the p99 of the wall time, lua_us, which
counts whatever else the machine ran meanwhile); overall, the check's share of the core's CPU (the sum of cpu_us over
the core process's user + system time, /proc).
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from importers.freekill import cbor  # noqa: E402
from tests.freekill_live.host import (  # noqa: E402
    EXTENSION_SETTINGS,
    HostError,
    install,
    install_extensions,
    plain,
    play_checked_game,
)

DEFAULT_CORE = ROOT.parent / "shared" / "peers" / "freekill-core-88a912f1.tar.xz"


def decode(b64: str | None) -> Any:
    if not b64:
        return None
    return plain(cbor.decode(base64.b64decode(b64), skip_tags=True))


def percentile(values: list[int], q: float) -> int:
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Tally:
    def __init__(self) -> None:
        self.checked: Counter[str] = Counter()
        self.passed: Counter[str] = Counter()
        self.declined: Counter[str] = Counter()
        self.refused: Counter[tuple[str, str]] = Counter()
        self.unjudged: Counter[tuple[str, str]] = Counter()
        self.lua_us: dict[str, list[int]] = defaultdict(list)  # wall time (os.getms)
        self.cpu_us: dict[str, list[int]] = defaultdict(list)  # the server's CPU time (os.clock): the check's cost
        self.refusals: list[dict[str, Any]] = []
        self.unjudged_examples: list[dict[str, Any]] = []
        self.side_effects = 0
        self.declined_us = 0
        self.games = 0
        self.extension_games = 0
        self.failed_games = 0
        self.cpu_seconds = 0.0
        self.check_seconds_in_cpu = 0.0  # the check's CPU time in the games whose core CPU time was read
        self.game_seconds: list[float] = []

    def add_game(self, records: list[dict[str, Any]], cpu: float | None, extension: bool, label: str) -> None:
        self.games += 1
        self.extension_games += extension
        replies = {r["seq"]: r for r in records if r["kind"] == "reply"}
        requests: dict[int, dict[str, Any]] = {}
        last_request: dict[int, dict[str, Any]] = {}
        game_us = 0
        for r in records:
            if r["kind"] == "request":
                last_request[r["to"]] = r
            elif r["kind"] == "reply":
                requests[r["seq"]] = last_request.get(r["to"], {})
            if r["kind"] != "check":
                continue
            cmd = r["cmd"]
            self.checked[cmd] += 1
            declined = r["verdict"] == "ok" and str(r.get("why", "")).startswith("declined")
            cpu_us = int(r.get("cpu_us", r["lua_us"]))  # (a tap before cpu_us: the wall time)
            if not declined:  # (a decline is answered at once: the times are those of the replies judged)
                self.lua_us[cmd].append(int(r["lua_us"]))
                self.cpu_us[cmd].append(cpu_us)
            self.declined_us += cpu_us if declined else 0
            game_us += cpu_us
            self.side_effects += int(r.get("side_effects", 0))
            verdict = r["verdict"]
            if verdict == "ok":
                if str(r.get("why", "")).startswith("declined"):
                    self.declined[cmd] += 1
                else:
                    self.passed[cmd] += 1
            elif verdict == "refused":
                self.refused[(cmd, r.get("code", "?"))] += 1
                reply = replies.get(r["reply"], {})
                req = requests.get(r["reply"], {})
                self.refusals.append({"game": label, "seq": r["reply"], "to": r["to"], "cmd": cmd,
                                      "code": r.get("code"), "why": r.get("why"), "by": r.get("by"),
                                      "reply": decode(reply.get("cbor")), "request": decode(req.get("cbor"))})
            else:
                reason = re.sub(r"\d+", "N", str(r.get("why", "")))[:160]
                self.unjudged[(cmd, reason)] += 1
                if len(self.unjudged_examples) < 200:
                    reply = replies.get(r["reply"], {})
                    self.unjudged_examples.append({"game": label, "seq": r["reply"], "cmd": cmd, "why": r.get("why"),
                                                   "reply": decode(reply.get("cbor"))})
        if cpu:
            self.cpu_seconds += cpu
            self.check_seconds_in_cpu += game_us / 1e6

    def report(self) -> str:
        total = sum(self.checked.values())
        lines = [f"games {self.games} ({self.extension_games} of standard_ex + shzl generals), "
                 f"{self.failed_games} given up; replies checked {total}"]
        lines.append("(times: the check's microseconds per reply judged, declines apart: the server's CPU time, and "
                     "the wall time's p99, which a busy machine inflates)")
        lines.append(f"{'kind':<24}{'checked':>8}{'passed':>8}{'declined':>9}{'refused':>8}{'unjudged':>9}"
                     f"{'p50 us':>8}{'p99 us':>8}{'max us':>8}{'wall p99':>9}")
        for cmd in sorted(self.checked, key=lambda c: -self.checked[c]):
            refused = sum(n for (c, _), n in self.refused.items() if c == cmd)
            unjudged = sum(n for (c, _), n in self.unjudged.items() if c == cmd)
            us = self.cpu_us[cmd]
            lines.append(f"{cmd:<24}{self.checked[cmd]:>8}{self.passed[cmd]:>8}{self.declined[cmd]:>9}{refused:>8}"
                         f"{unjudged:>9}{percentile(us, 0.5):>8}{percentile(us, 0.99):>8}{max(us or [0]):>8}"
                         f"{percentile(self.lua_us[cmd], 0.99):>9}")
        every = [u for us in self.cpu_us.values() for u in us]
        every_wall = [u for us in self.lua_us.values() for u in us]
        refused = sum(self.refused.values())
        unjudged = sum(self.unjudged.values())
        lines.append(f"{'all':<24}{total:>8}{sum(self.passed.values()):>8}{sum(self.declined.values()):>9}"
                     f"{refused:>8}{unjudged:>9}{percentile(every, 0.5):>8}{percentile(every, 0.99):>8}"
                     f"{max(every or [0]):>8}{percentile(every_wall, 0.99):>9}")
        if total:
            lines.append(f"refused {refused / total:.2%}, unjudged {unjudged / total:.2%} of replies; "
                         f"side effects swallowed {self.side_effects}")
        declines = sum(self.declined.values())
        if declines:
            lines.append(f"declines: {declines}, {self.declined_us / declines:.1f} us each on average")
        if self.cpu_seconds:
            lines.append(f"check's CPU time {self.check_seconds_in_cpu:.2f} s of the core's CPU "
                         f"{self.cpu_seconds:.1f} s: {self.check_seconds_in_cpu / self.cpu_seconds:.2%}")
        if self.game_seconds:
            lines.append(f"wall time per game: median {sorted(self.game_seconds)[len(self.game_seconds) // 2]:.1f} s")
        if self.refused:
            lines.append("refused, by kind and code:")
            for (cmd, code), n in self.refused.most_common():
                lines.append(f"  {cmd} {code}: {n}")
            lines.append("each refusal:")
            for x in self.refusals:
                lines.append(f"  {x['game']} seq {x['seq']} seat {x['to']} {x['cmd']} {x['code']}: {x['why']}; "
                             f"reply {json.dumps(x['reply'], ensure_ascii=False)[:300]}")
        if self.unjudged:
            lines.append("unjudged, by reason:")
            for (cmd, why), n in self.unjudged.most_common():
                lines.append(f"  {cmd}: {n}  {why}")
        return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--core", default=os.environ.get("SGS_FREEKILL_CORE", str(DEFAULT_CORE)))
    parser.add_argument("--games", type=int, default=50)
    parser.add_argument("--players", type=int, default=5)
    parser.add_argument("--extension-share", type=float, default=0.5,
                        help="the share of rooms whose generals come from standard_ex and shzl (0 to 1)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before a stalled room is given up")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the tallies and every refusal to this file")
    args = parser.parse_args()

    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="tap-check-") as tmp:
        work = Path(tmp)
        plain_root, ext_root = work / "std", work / "ext"
        install(args.core, plain_root)
        extension_ok = args.extension_share > 0
        if extension_ok:
            install(args.core, ext_root)
            try:
                install_extensions(args.core, ext_root)
            except HostError as err:
                print(f"no extension rooms: {err}", file=sys.stderr)
                extension_ok = False
        owed = 0.0
        for n in range(args.games):
            owed += args.extension_share if extension_ok else 0.0
            extension = owed >= 1.0
            if extension:
                owed -= 1.0
            root = ext_root if extension else plain_root
            label = f"{'ext' if extension else 'std'}-{n}"
            started = time.monotonic()
            try:
                game, cpu = play_checked_game(args.core, root, work / f"{label}.log", args.players, room_id=n + 1,
                                              seed=args.seed + n, check=True, check_ai=True,
                                              settings=EXTENSION_SETTINGS if extension else None,
                                              timeout_s=args.timeout)
            except HostError as err:
                tally.failed_games += 1
                print(f"{label}: given up ({str(err)[:120]})", file=sys.stderr)
                continue
            tally.game_seconds.append(time.monotonic() - started)
            tally.add_game(game.tap_records, cpu, extension, label)
            (work / f"{label}.log").unlink(missing_ok=True)
            checks = sum(1 for r in game.tap_records if r["kind"] == "check")
            bad = sum(1 for r in game.tap_records if r["kind"] == "check" and r["verdict"] != "ok")
            print(f"{label}: {checks} checks, {bad} not ok, {time.monotonic() - started:.1f} s", file=sys.stderr)
    print(tally.report())
    if args.json:
        Path(args.json).write_text(json.dumps({
            "checked": dict(tally.checked), "passed": dict(tally.passed), "declined": dict(tally.declined),
            "refused": [[c, k, n] for (c, k), n in tally.refused.items()],
            "unjudged": [[c, w, n] for (c, w), n in tally.unjudged.items()],
            "lua_us": {c: sorted(v) for c, v in tally.lua_us.items()}, "refusals": tally.refusals,
            "unjudged_examples": tally.unjudged_examples, "cpu_seconds": tally.cpu_seconds,
            "check_seconds": tally.check_seconds_in_cpu, "games": tally.games, "failed": tally.failed_games,
        }, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
