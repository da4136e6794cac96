"""A headless FreeKill host for tests (test code, not product).

It runs FreeKill's Lua core (the peer named by ``$SGS_FREEKILL_CORE``: the ``.tar.xz`` archive or
an extracted directory) the way FreeKill's server (asio) does: ``lua5.4 lua/server/rpc/entry.lua``
in ``<root>/packages/freekill-core`` with ``FK_RPC_MODE=cbor``, speaking CBOR JSON-RPC over the
child's stdin/stdout. The sgs-verify tap (``integrations/freekill/tap``) is installed beside the
core as ``<root>/packages/sgsv_tap``; its ``qInfo`` lines go to a log file in asio's line pattern
(``YY-MM-DD HH:MM:SS.mmm <thread>[I] <text>``) that rotates at a small size as spdlog's rotating
sink does. One room is driven with every seat on Trust (FreeKill's AI plays them all) and every
delay resumed at once.

The host keeps its own record of what crossed the pipe (notifications per seat, requests, in
order), so that a test can hold the tap's output against it. It can also play a **modified
client**: before a chosen ``PlayCard`` request it switches that seat Online and answers its
``waitForReply`` with a crafted reply (a cheat), then switches the seat back to Trust. The core
carries such a reply out without checking it.

Facts used here (methods, parameters, framing, game flow) are the ones in the project's notes on
running FreeKill headless; no FreeKill code is in this file.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tarfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from importers.freekill import cbor

ROOT = Path(__file__).resolve().parents[2]
TAP_SOURCE = ROOT / "integrations" / "freekill" / "tap"
TAP_DIR = "sgsv_tap"
TAP_MARKER = "SGSV1 "
CARDS_TSV = ROOT / "importers" / "freekill" / "data" / "cards-88a912f1.tsv"

# JSON-RPC keys as the core's CBOR framing has them (integers instead of names)
K_JSONRPC, K_METHOD, K_PARAMS, K_ERROR, K_ID, K_RESULT = 100, 101, 102, 103, 104, 105
ONLINE, TRUST = 1, 2

SETTINGS: dict[str, Any] = {
    "gameMode": "aaa_role_mode",
    "enableFreeAssign": False,
    "enableDeputy": False,
    "generalNum": 3,
    "generalTimeout": 15,
    "luckTime": 0,
    "password": "",
    "disabledPack": ["test_p_0"],
    "disabledGenerals": [],
}

# The cheats a modified client can send, and the code the verifier must give each.
CHEATS: dict[str, str] = {
    "second_slash": "SLASH_LIMIT",      # a second 杀 in one play phase (no 诸葛连弩, no 咆哮)
    "not_held": "CARD_NOT_OWNED",       # a 杀 that lies in another player's hand
    "draw_pile": "CARD_NOT_OWNED",      # a 无中生有 taken from the draw pile
    "peach_full_hp": "PEACH_FULL_HP",   # 桃 when not wounded
    "out_of_range": "OUT_OF_RANGE",     # a 杀 at a target beyond the attack range
    "skill_not_owned": "SKILL_NOT_OWNED",  # 制衡 by a general without it
    # Decisions the rules forbid and the verifier once rejected, so that its game parted from FreeKill's, which
    # carried them out: a server's record now carries them out too (docs/rules.md#server-records).
    "two_targets": "INVALID_TARGET",    # a 杀 at two characters without 方天画戟
    "duel_self": "INVALID_TARGET",      # 决斗 aimed at oneself
    "dismantle_self": "INVALID_TARGET",  # 过河拆桥 aimed at oneself
    "peach_other": "INVALID_TARGET",    # 桃 on another character who is not dying
    "jink_in_play": "WRONG_TIMING",     # 闪 used in one's own play phase
    "ex_nihilo_other": "INVALID_TARGET",  # 无中生有 aimed at another character
    "savage_one": "INVALID_TARGET",     # 南蛮入侵 aimed at one other character
    "lightning_other": "INVALID_TARGET",  # 闪电 put in another character's judgment area
    "analeptic_other": "INVALID_TARGET",  # 酒 given to another character
    "equip_other": "INVALID_TARGET",    # an equipment card put on another character
    "snatch_far": "DISTANCE_LIMIT",     # 顺手牵羊 at distance 2 or more
    "supply_far": "DISTANCE_LIMIT",     # 兵粮寸断 at distance 2 or more
    "duplicate_delayed": "DUPLICATE_DELAYED_TRICK",  # 乐不思蜀 on a character whose judgment area holds one
    # Replies to other requests than PlayCard (the focus FreeKill moves to the seat names the request: RESPONSES).
    "wrong_answer": "WRONG_CARD",       # a 杀 played where a 杀's target is asked for 闪
    "discard_short": "HAND_LIMIT",      # one card too few discarded in the discard phase
    "discard_extra": "HAND_LIMIT",      # one card too many discarded in the discard phase
}
# The request (MoveFocus's name for it) each reply cheat answers.
RESPONSES = {"wrong_answer": "jink", "discard_short": "phase_discard", "discard_extra": "phase_discard"}
DISCARDS = frozenset(kind for kind, focus in RESPONSES.items() if focus == "phase_discard")
# Kinds whose moment is rare (a card of which the deck holds one or two, meeting the state it needs): a short run
# places them when a game offers the moment; every kind placed is checked all the same.
RARE_CHEATS = frozenset({"lightning_other", "supply_far", "duplicate_delayed", "analeptic_other", "savage_one"})

# Every kind is placed wherever it first applies, several in one game, in any order: a card used from another
# player's hand or the draw pile and a skill the general lacks, which FreeKill's server carries out, are
# followed by the verifier as played (docs/log-format.md#taken-cards), so no cheat has to come last. (They were
# once refused, and the verifier's game parted from FreeKill's after them: they were placed last, one a game.)

SLASHES = frozenset({"slash", "fire__slash", "thunder__slash"})
WEAPON_RANGE = {"crossbow": 1, "double_swords": 2, "qinggang_sword": 2, "ice_sword": 2, "guding_blade": 2,
                "blade": 3, "spear": 3, "axe": 3, "fan": 4, "halberd": 4, "kylin_bow": 5}
HAND, EQUIP, JUDGE, DRAW_PILE = 1, 2, 3, 6


class HostError(RuntimeError):
    """The core or the pipe did something the host cannot go on from."""


# ---------------------------------------------------------------------------------------------
# the log file, as asio's spdlog writes it


class RotatingLog:
    """Lines in asio's file pattern, rotated by size like spdlog's rotating sink: when a line
    would take the file past ``max_bytes``, ``name.N`` becomes ``name.N+1`` (the oldest beyond
    ``backups`` is dropped), the file becomes ``name.1`` and a new file is started."""

    LEVELS: ClassVar[dict[str, str]] = {"qDebug": "D", "qInfo": "I", "qWarning": "W", "qCritical": "C"}

    def __init__(self, path: Path, max_bytes: int = 1 << 20, backups: int = 5, thread: int = 4242) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self.thread = thread
        self.rotations = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(path, "ab")  # noqa: SIM115 - kept open across calls, closed by close()

    def rotated(self, n: int) -> Path:
        return self.path.with_name(f"{self.path.name}.{n}")

    def write(self, method: str, text: str) -> None:
        now = time.time()
        stamp = time.strftime("%y-%m-%d %H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"
        line = f"{stamp} {self.thread}[{self.LEVELS.get(method, 'I')}] {text}\n".encode()
        if self._file.tell() + len(line) > self.max_bytes and self._file.tell() > 0:
            self._rotate()
        self._file.write(line)
        self._file.flush()

    def _rotate(self) -> None:
        self._file.close()
        for n in range(self.backups, 0, -1):
            src = self.path if n == 1 else self.rotated(n - 1)
            if src.exists():
                os.replace(src, self.rotated(n))
        self._file = open(self.path, "ab")  # noqa: SIM115
        self.rotations += 1

    def close(self) -> None:
        self._file.close()


# ---------------------------------------------------------------------------------------------
# installing the core and the tap


def install(core: str | Path | None, root: Path, tap: Path | None = TAP_SOURCE) -> Path:
    """``<root>/packages/freekill-core`` from the archive or directory ``core`` (kept if already
    there; ``core`` None: it must be) and a fresh copy of the tap as ``<root>/packages/sgsv_tap``
    (``tap`` None: no tap); returns the core's dir."""
    target = root / "packages" / "freekill-core"
    if not (target / "lua" / "server" / "rpc" / "entry.lua").exists():
        if core is None:
            raise HostError(f"no FreeKill core in {target}, and none given")
        core = Path(core)
        target.mkdir(parents=True, exist_ok=True)
        if core.is_dir():
            shutil.copytree(core, target, dirs_exist_ok=True)
        else:
            with tarfile.open(core) as archive:
                archive.extractall(target, filter="data")
    if not (target / "lua" / "server" / "rpc" / "entry.lua").exists():
        raise HostError(f"{target} is not a FreeKill core (no lua/server/rpc/entry.lua)")
    tap_target = root / "packages" / TAP_DIR
    if tap_target.exists():
        shutil.rmtree(tap_target)
    if tap is not None:
        shutil.copytree(tap, tap_target)
    return target


# ---------------------------------------------------------------------------------------------
# what the host saw, and what it did


@dataclass(slots=True)
class Cheat:
    kind: str
    player: int  # the FreeKill player id that "sent" it
    reply: dict[str, Any]  # the substituted PlayCard reply
    request_index: int  # index into HostView.requests of the request it answered
    expected_code: str
    seq: int | None = None  # the tap's reply record for it (filled from the log after the game)


@dataclass(slots=True)
class HostView:
    """Everything that crossed the pipe towards the players, in order."""

    notifications: dict[int, list[tuple[str, bytes]]] = field(default_factory=dict)  # player id -> (cmd, cbor)
    requests: list[tuple[int, str, bytes, int]] = field(default_factory=list)  # (player id, cmd, cbor, timeout)
    online_replies: list[tuple[int, bytes]] = field(default_factory=list)  # (player id, reply bytes sent)


@dataclass(slots=True)
class GameRecord:
    room_id: int
    players: list[int]
    seats: list[int]  # player ids in seat order (ArrangeSeats: the lord first)
    view: HostView
    cheats: list[Cheat]
    winner: str | None
    over: bool
    log_path: Path
    seconds: float
    lua_errors: list[str] = field(default_factory=list)  # qCritical lines (SmartAI's own bugs and the like)
    timeouts: list[tuple[int, int]] = field(default_factory=list)  # (player, request index) left unanswered
    # the tap's records of this room as they passed through the host on their way to the log
    tap_records: list[dict[str, Any]] = field(default_factory=list)
    anomalies: list[str] = field(default_factory=list)  # things the host did not expect (should stay empty)


# ---------------------------------------------------------------------------------------------
# game state as the notifications show it (enough to place cheats)


def load_card_names(path: Path = CARDS_TSV) -> dict[int, tuple[str, int]]:
    """FreeKill card id -> (name, sub_type)."""
    names = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#") or line.startswith("id\t"):
            continue
        cols = line.split("\t")
        names[int(cols[0])] = (cols[1], int(cols[5]))
    return names


# Our script, run by the core's own interpreter in its directory: every card the installed packages define, as
# "id, name, sub_type" lines on stderr (the core bans io's streams once loaded: the stream is kept before; its log
# calls, RPCs to a host from v0.5.22 on, do nothing here).
CARD_DUMP_LUA = """local err = io.stderr
package.path = package.path .. ";./?.lua;./?/init.lua;./lua/lib/?.lua;./lua/?.lua;./lua/?/init.lua"
fk = require "server.rpc.fk"
for _, f in ipairs({"qDebug", "qInfo", "qWarning", "qCritical"}) do fk[f] = function() end end  -- (RPC calls: no host)
dofile "lua/freekill.lua"
for _, c in ipairs(Fk.cards) do err:write(string.format("%d\\t%s\\t%d\\n", c.id, c.name, c.sub_type or 0)) end
"""
_CARD_TABLES: dict[tuple[str, tuple[str, ...]], dict[int, tuple[str, int]]] = {}


def installed_card_names(core_dir: Path, lua: str = "lua5.4") -> dict[int, tuple[str, int]]:
    """FreeKill card id -> (name, sub_type) for every card of the packages installed beside ``core_dir`` (the
    extension packs' cards, 国战's deck: their ids follow the core's), asked of the core itself; the core's own
    table (CARDS_TSV) when it cannot say."""
    root = core_dir.parent.parent
    key = (str(core_dir), tuple(sorted(p.name for p in (root / "packages").iterdir() if p.is_dir())))
    if key not in _CARD_TABLES:
        script = root / "sgsv_card_dump.lua"
        script.write_text(CARD_DUMP_LUA, encoding="utf-8")
        try:
            done = subprocess.run([lua, str(script)], cwd=core_dir, capture_output=True, timeout=120,
                                  env=dict(os.environ, FK_RPC_MODE="cbor", FK_DISABLED_PACKS="[]"))
            names = {int(i): (n, int(t)) for i, n, t in (line.split("\t") for line in
                                                            done.stderr.decode("utf-8", "replace").splitlines()
                                                            if line.count("\t") == 2 and line.split("\t")[0].isdigit())}
        except (OSError, subprocess.TimeoutExpired, ValueError):
            names = {}
        _CARD_TABLES[key] = names if len(names) >= 160 else load_card_names()
    return _CARD_TABLES[key]


def plain(value: Any) -> Any:
    """A decoded payload with the core's byte strings as text and tags unwrapped."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, cbor.Tag):
        return plain(value.value)
    return value


class Table:
    """Seats, HP, generals, phases, card places and use counts, from the notifications."""

    def __init__(self, cards: dict[int, tuple[str, int]]) -> None:
        self.cards = cards
        self.order: list[int] = []
        self.dead: set[int] = set()
        self.hp: dict[int, int] = {}
        self.max_hp: dict[int, int] = {}
        self.general: dict[int, str] = {}
        self.phase: dict[int, int] = {}
        self.place: dict[int, tuple[int, int | None]] = {}  # card -> (area, owner)
        self.slashes_used: dict[int, int] = {}
        self.play_requests: dict[int, int] = {}  # PlayCard requests in the current play phase

    def on(self, cmd: str, data: Any) -> None:
        if cmd == "ArrangeSeats" and isinstance(data, list):
            self.order = [int(x) for x in data]
        elif cmd == "PropertyUpdate" and isinstance(data, list) and len(data) >= 3:
            pid, prop, value = data[0], data[1], data[2]
            if prop == "hp":
                self.hp[pid] = value
            elif prop == "maxHp":
                self.max_hp[pid] = value
            elif prop == "general":
                self.general[pid] = value
            elif prop == "dead" and value:
                self.dead.add(pid)
            elif prop == "phase":
                self.phase[pid] = value
                self.slashes_used[pid] = 0
                self.play_requests[pid] = 0
        elif cmd in ("PrepareDrawPile", "SyncDrawPile", "ShuffleDrawPile") and isinstance(data, list):
            for cid in data:
                if isinstance(cid, int):
                    self.place[cid] = (DRAW_PILE, None)
        elif cmd == "MoveCards" and isinstance(data, list) and data and isinstance(data[0], list):
            for move in data[0]:
                if not isinstance(move, dict):
                    continue
                area, to = move.get("toArea"), move.get("to")
                if not isinstance(area, int):
                    continue
                owner = to if area in (HAND, EQUIP, 3) and isinstance(to, int) else None
                for info in move.get("moveInfo") or []:
                    if isinstance(info, dict) and isinstance(info.get("cardId"), int):
                        self.place[info["cardId"]] = (area, owner)
        elif cmd == "AddCardUseHistory" and isinstance(data, list) and len(data) >= 3 and data[1] == "slash":
            self.slashes_used[data[0]] = self.slashes_used.get(data[0], 0) + int(data[2])

    # --- queries

    def name(self, cid: int) -> str:
        return self.cards.get(cid, ("?", 0))[0]

    def hand(self, pid: int) -> list[int]:
        return sorted(c for c, (a, o) in self.place.items() if a == HAND and o == pid)

    def equips(self, pid: int) -> list[int]:
        return sorted(c for c, (a, o) in self.place.items() if a == EQUIP and o == pid)

    def draw_pile(self) -> list[int]:
        return sorted(c for c, (a, _) in self.place.items() if a == DRAW_PILE)

    def alive(self) -> list[int]:
        return [p for p in self.order if p not in self.dead]

    def attack_range(self, pid: int) -> int:
        return max([WEAPON_RANGE.get(self.name(c), 1) for c in self.equips(pid)] + [1])

    def judged(self, pid: int) -> list[str]:
        """The names of the cards in ``pid``'s judgment area."""
        return sorted(self.name(c) for c, (a, o) in self.place.items() if a == JUDGE and o == pid)

    def has_sub_type(self, pid: int, sub_type: int) -> bool:
        return any(self.cards.get(c, ("", 0))[1] == sub_type for c in self.equips(pid))

    def distance_bounds(self, a: int, b: int) -> tuple[int, int]:
        """The lowest and highest the distance from a to b can be, given what the host tracks
        (horses and 马术 counted; skills it does not model widen the bounds)."""
        alive = self.alive()
        i, j = alive.index(a), alive.index(b)
        seat = min((i - j) % len(alive), (j - i) % len(alive))
        d = seat + (1 if self.has_sub_type(b, 5) else 0) - (1 if self.has_sub_type(a, 6) else 0)
        if self.general.get(a) == "machao":
            d -= 1
        return max(1, d), max(1, d)

    def in_range_targets(self, pid: int) -> list[int]:
        rng = self.attack_range(pid)
        return [t for t in self.alive() if t != pid and self.safe_target(t)
                and self.distance_bounds(pid, t)[1] <= rng]

    def out_of_range_targets(self, pid: int) -> list[int]:
        rng = self.attack_range(pid)
        return [t for t in self.alive() if t != pid and self.safe_target(t)
                and self.distance_bounds(pid, t)[0] > rng]

    def safe_target(self, t: int) -> bool:
        # 空城 forbids a 杀 or 决斗 on 诸葛亮 with no hand card, 谦逊 顺手牵羊 and 乐不思蜀 on 陆逊: keep them out of
        # every cheat's targets, so that each cheat breaks exactly one rule.
        return self.general.get(t) not in ("zhugeliang", "luxun")

    def others(self, pid: int) -> list[int]:
        return [t for t in self.alive() if t != pid and self.safe_target(t)]

    def far_targets(self, pid: int) -> list[int]:
        """Characters surely at distance 2 or more (distance_bounds; no skill of the pool lifts 顺手牵羊's limit but
        奇才, which only 黄月英 has)."""
        if self.general.get(pid) == "huangyueying":
            return []
        return [t for t in self.others(pid) if self.distance_bounds(pid, t)[0] >= 2]


class Planner:
    """Chooses, at a PlayCard request, whether and how to cheat (one cheat a play phase)."""

    def __init__(self, kinds: Iterable[str], table: Table, rng: random.Random) -> None:
        self.todo = list(kinds)
        for kind in self.todo:
            if kind not in CHEATS:
                raise ValueError(f"unknown cheat {kind!r} (known: {', '.join(CHEATS)})")
        self.table = table
        self.rng = rng
        self.second_slash_step: tuple[int, int] | None = None  # (player, target) after the first 杀
        self.phases = 0  # play phases seen

    def slashes_in_hand(self, pid: int) -> list[int]:
        return [c for c in self.table.hand(pid) if self.table.name(c) in SLASHES]

    def may_slash_twice(self, pid: int) -> bool:
        t = self.table
        return (t.general.get(pid) == "zhangfei"
                or any(t.name(c) == "crossbow" for c in t.equips(pid)))

    def choose_answer(self, pid: int, focus: str) -> tuple[str, dict[str, Any], bool] | None:
        """(kind, reply, is_the_cheat) for a request other than PlayCard (``focus``: its name in MoveFocus), or
        None (the AI answers). A discard's reply is completed from the request itself (``complete``)."""
        t = self.table
        if pid in t.dead:
            return None
        for kind in self.todo:
            if RESPONSES.get(kind) != focus:
                continue
            if kind == "wrong_answer":
                slashes = self.slashes_in_hand(pid)
                if not slashes:
                    continue
                self.todo.remove(kind)
                return kind, {"card": slashes[0], "targets": []}, True
            if kind in DISCARDS:
                self.todo.remove(kind)
                return kind, {}, True
        return None

    def complete(self, kind: str, pid: int, request: Any) -> dict[str, Any]:
        """The reply of a cheat that needs the request's data: ``discard_short`` discards one card fewer than the
        request's ``min_num``, ``discard_extra`` one more (the hand holds more than is due: HP above 0)."""
        if kind not in DISCARDS:
            raise ValueError(kind)
        due = int(request[3]["min_num"]) if isinstance(request, list) and len(request) > 3 else 1
        count = max(due - 1, 0) if kind == "discard_short" else due + 1
        return {"card": {"skill": "discard_skill", "subcards": self.table.hand(pid)[:count]}, "targets": []}

    def choose(self, pid: int) -> tuple[str, dict[str, Any], bool] | None:
        """(kind, reply, is_the_cheat) for this PlayCard request of ``pid``, or None (AI plays)."""
        t = self.table
        t.play_requests[pid] = t.play_requests.get(pid, 0) + 1
        if pid in t.dead or t.phase.get(pid) != 5:
            return None
        if self.second_slash_step is not None:
            who, target = self.second_slash_step
            self.second_slash_step = None
            if who == pid and t.slashes_used.get(pid, 0) == 1 and not self.may_slash_twice(pid):
                slashes = self.slashes_in_hand(pid)
                targets = [x for x in t.in_range_targets(pid) if x == target] or t.in_range_targets(pid)
                if slashes and targets:
                    return "second_slash", {"card": slashes[0], "targets": [targets[0]]}, True
            return None
        first = t.play_requests[pid] == 1 and t.slashes_used.get(pid, 0) == 0
        if not first or not self.todo:
            return None
        self.phases += 1
        for kind in self.todo:
            if kind in RESPONSES:
                continue
            made = self.make(kind, pid)
            if made is not None:
                self.todo.remove(kind)
                return made
        return None

    def make(self, kind: str, pid: int) -> tuple[str, dict[str, Any], bool] | None:
        t = self.table
        hand = t.hand(pid)
        if kind == "second_slash":
            if self.may_slash_twice(pid) or len(self.slashes_in_hand(pid)) < 2:
                return None
            targets = t.in_range_targets(pid)
            if not targets:
                return None
            target = self.rng.choice(targets)
            self.second_slash_step = (pid, target)
            # The first 杀 is legal: the client's reply must not be flagged.
            return "second_slash_first", {"card": self.slashes_in_hand(pid)[0], "targets": [target]}, False
        if kind == "not_held":
            others = [c for c, (a, o) in sorted(t.place.items())
                      if a == HAND and o not in (pid, None) and t.name(c) in SLASHES]
            targets = t.in_range_targets(pid)
            if not others or not targets:
                return None
            return kind, {"card": self.rng.choice(others), "targets": [self.rng.choice(targets)]}, True
        if kind == "draw_pile":
            pile = [c for c in t.draw_pile() if t.name(c) == "ex_nihilo"]
            if not pile:
                return None
            return kind, {"card": self.rng.choice(pile), "targets": []}, True
        if kind == "peach_full_hp":
            peaches = [c for c in hand if t.name(c) == "peach"]
            if not peaches or t.hp.get(pid) is None or t.hp.get(pid) != t.max_hp.get(pid):
                return None
            return kind, {"card": peaches[0], "targets": []}, True
        if kind == "out_of_range":
            slashes = self.slashes_in_hand(pid)
            targets = t.out_of_range_targets(pid)
            if not slashes or not targets:
                return None
            return kind, {"card": slashes[0], "targets": [self.rng.choice(targets)]}, True
        if kind == "skill_not_owned":
            if t.general.get(pid) == "sunquan" or not hand:
                return None
            return kind, {"card": {"skill": "zhiheng", "subcards": [hand[0]]}, "targets": []}, True
        return self.make_target_cheat(kind, pid, hand)

    def make_target_cheat(self, kind: str, pid: int, hand: list[int]) -> tuple[str, dict[str, Any], bool] | None:
        """The kinds that aim a card where the rules do not let it go (or use it when nothing asks for it)."""
        t = self.table
        named = {name: [c for c in hand if t.name(c) == name] for name in {t.name(c) for c in hand}}
        others = t.others(pid)

        def reply(card: int, targets: list[int]) -> tuple[str, dict[str, Any], bool]:
            return kind, {"card": card, "targets": targets}, True

        if kind == "two_targets":
            targets = t.in_range_targets(pid)
            slashes = self.slashes_in_hand(pid)
            if len(targets) < 2 or not slashes or any(t.name(c) == "halberd" for c in t.equips(pid)):
                return None
            return reply(slashes[0], self.rng.sample(targets, 2))
        if kind == "duel_self" and named.get("duel") and t.general.get(pid) != "zhugeliang":
            return reply(named["duel"][0], [pid])
        if kind == "dismantle_self" and named.get("dismantlement") and (len(hand) > 1 or t.equips(pid)):
            return reply(named["dismantlement"][0], [pid])
        if kind == "peach_other" and named.get("peach") and others:
            return reply(named["peach"][0], [self.rng.choice(others)])
        if kind == "jink_in_play" and named.get("jink"):
            return reply(named["jink"][0], [])
        if kind == "ex_nihilo_other" and named.get("ex_nihilo") and others:
            return reply(named["ex_nihilo"][0], [self.rng.choice(others)])
        if kind == "savage_one" and named.get("savage_assault") and others and len(t.alive()) > 2:
            # (with one other character alive, that one is every other: no cheat)
            return reply(named["savage_assault"][0], [self.rng.choice(others)])
        if kind == "analeptic_other" and named.get("analeptic") and others:
            return reply(named["analeptic"][0], [self.rng.choice(others)])
        if kind == "lightning_other" and named.get("lightning"):
            free = [o for o in others if "lightning" not in t.judged(o)]
            return reply(named["lightning"][0], [self.rng.choice(free)]) if free else None
        if kind == "equip_other" and others:
            equips = [c for c in hand if t.cards.get(c, ("", 0))[1] in (3, 4, 5, 6)]
            return reply(equips[0], [self.rng.choice(others)]) if equips else None
        if kind == "snatch_far" and named.get("snatch"):
            far = [o for o in t.far_targets(pid) if t.hand(o) or t.equips(o)]
            return reply(named["snatch"][0], [self.rng.choice(far)]) if far else None
        if kind == "supply_far" and named.get("supply_shortage"):
            far = [o for o in t.far_targets(pid) if "supply_shortage" not in t.judged(o)]
            return reply(named["supply_shortage"][0], [self.rng.choice(far)]) if far else None
        if kind == "duplicate_delayed" and named.get("indulgence"):
            held = [o for o in others if "indulgence" in t.judged(o)]
            return reply(named["indulgence"][0], [self.rng.choice(held)]) if held else None
        return None


# ---------------------------------------------------------------------------------------------
# the host


class Host:
    def __init__(self, core_dir: Path, room_id: int, players: int, log: RotatingLog,
                 cheats: Iterable[str], seed: int, lua: str = "lua5.4", timeout_s: float = 300.0,
                 timeouts: int = 0) -> None:
        self.core_dir = core_dir
        self.room_id = room_id
        self.player_ids = list(range(1, players + 1))
        self.conn_of = {pid: 1000 + pid for pid in self.player_ids}
        self.pid_of = {conn: pid for pid, conn in self.conn_of.items()}
        self.log = log
        self.lua = lua
        self.deadline = time.monotonic() + timeout_s
        self.view = HostView({pid: [] for pid in self.player_ids})
        self.table = Table(installed_card_names(core_dir, lua))
        self.planner = Planner(cheats, self.table, random.Random(seed))
        self.thinking: dict[int, bool] = {}
        self.pending: dict[int, tuple[str, dict[str, Any], bool]] = {}  # conn -> planned reply
        self.cheats: list[Cheat] = []
        self.tap_records: list[dict[str, Any]] = []
        self.timeouts_left = timeouts  # PlayCard requests an online client leaves unanswered
        self.timeouts: list[tuple[int, int]] = []
        self.silent: set[int] = set()  # connections that will not answer
        self.timer_due: int | None = None  # the connection whose request timer is to fire
        self.lua_errors: list[str] = []
        self.anomalies: list[str] = []
        self.winner: str | None = None
        self.over = False
        self._last: tuple[str, bytes] | None = None
        self._last_seen: set[int] = set()
        self._next_id = 1
        self._buf = b""
        self._off = 0
        self.proc: subprocess.Popen[bytes] | None = None

    # --- the pipe

    def start(self) -> None:
        env = dict(os.environ, FK_RPC_MODE="cbor", FK_DISABLED_PACKS="[]")
        # stderr to a file: a pipe nobody reads could fill and stall the core.
        self._stderr = open(self.core_dir.parent.parent / f"lua-stderr-{self.room_id}.txt", "w+b")  # noqa: SIM115
        self.proc = subprocess.Popen([self.lua, "lua/server/rpc/entry.lua"], cwd=self.core_dir, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        while True:  # serve calls until the core says hello
            packet = self._read()
            if packet.get(K_METHOD) in (b"hello", "hello"):
                return
            self._serve(packet)

    def stop(self) -> str:
        """Close the pipe and return what the core wrote to stderr."""
        if self.proc is None:
            return ""
        try:
            if self.over and self.proc.poll() is None:
                self.call("bye", [])  # ends the core's loop cleanly (EOF alone makes it raise)
        except (HostError, OSError, ValueError):
            pass
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        self._stderr.seek(0)
        err = self._stderr.read()
        self._stderr.close()
        self.proc = None
        return err.decode("utf-8", errors="replace")

    def _send(self, packet: dict[int, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(cbor.encode(packet))
        self.proc.stdin.flush()

    def _read(self) -> dict[int, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            if self._off < len(self._buf):
                try:
                    value, end = cbor.decode_prefix(self._buf, self._off)
                except cbor.CborError:
                    pass  # most likely a packet cut by the pipe: read on
                else:
                    self._off = end
                    if not isinstance(value, dict):
                        raise HostError(f"the core sent a packet that is not a map: {value!r}")
                    return value
            if time.monotonic() > self.deadline:
                raise HostError("the game took longer than the host's time limit")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise HostError("the core closed its output (crashed?): " + self.stop()[-2000:])
            self._buf = self._buf[self._off:] + chunk
            self._off = 0

    def call(self, method: str, params: list[Any]) -> Any:
        """Call the core and serve its calls until the answer comes (they may nest)."""
        call_id = self._next_id
        self._next_id += 1
        self._send({K_JSONRPC: "2.0", K_METHOD: method, K_PARAMS: params, K_ID: call_id})
        while True:
            packet = self._read()
            if K_METHOD in packet:
                self._serve(packet)
                continue
            if packet.get(K_ID) != call_id:
                raise HostError(f"an answer to a call the host did not make: {packet!r}")
            if packet.get(K_ERROR) is not None:
                raise HostError(f"{method} failed in the core: {plain(packet[K_ERROR])!r}")
            return packet.get(K_RESULT)

    def _serve(self, packet: dict[int, Any]) -> None:
        method = plain(packet[K_METHOD])
        params = packet.get(K_PARAMS) or []
        handler: Callable[..., Any] | None = getattr(self, "m_" + str(method), None)
        result = handler(*params) if handler is not None else None
        if K_ID in packet:
            self._send({K_JSONRPC: "2.0", K_ID: packet[K_ID], K_RESULT: result})

    # --- the game

    def play(self) -> None:
        self.call("HandleRequest", [f"-1,{self.room_id},newroom"])
        while not self.over:
            reason = "delay_done"
            if self.timer_due is not None:
                # The request timer fires (a real server waits timeout + 0.5 s): the default is taken.
                pid = self.pid_of[self.timer_due]
                self.timer_due = None
                self.call("SetPlayerState", [self.room_id, pid, TRUST])
                reason = "request_timer"
            done = self.call("ResumeRoom", [self.room_id, reason])
            if done is True:
                break
        self.over = True

    # --- parent methods the core calls

    def m_RoomThread_getRoom(self, room_id: int) -> bytes:
        players = [{"connId": self.conn_of[pid], "id": pid, "screenName": f"p{pid}", "avatar": "liubei",
                    "totalGameTime": 0, "state": TRUST, "gameData": [0, 0, 0]} for pid in self.player_ids]
        return cbor.encode({"id": room_id, "ownerId": self.player_ids[0], "timeout": 15,
                            "settings": cbor.encode(SETTINGS), "players": players})

    def m_ServerPlayer_doNotify(self, conn: int, command: Any, data: bytes) -> None:
        cmd = plain(command)
        pid = self.pid_of.get(conn)
        if pid is None:
            self.anomalies.append(f"a notification to an unknown connection {conn}")
            return
        self.view.notifications[pid].append((cmd, bytes(data)))
        key = (cmd, bytes(data))
        if key == self._last and pid not in self._last_seen:
            self._last_seen.add(pid)  # the same message to the next seat: seen already
            return
        self._last, self._last_seen = key, {pid}
        if cmd not in ("ArrangeSeats", "PropertyUpdate", "PrepareDrawPile", "SyncDrawPile", "ShuffleDrawPile",
                       "MoveCards", "AddCardUseHistory", "MoveFocus", "GameOver"):
            return
        value = plain(cbor.decode(data, skip_tags=True)) if data else ""
        if cmd == "GameOver":
            self.winner = value if isinstance(value, str) else str(value)
            return
        if cmd == "MoveFocus":
            self.on_focus(value)
            return
        self.table.on(cmd, value)

    def on_focus(self, value: Any) -> None:
        if not (isinstance(value, list) and len(value) >= 2 and isinstance(value[0], list) and len(value[0]) == 1):
            return
        pid = value[0][0]
        if value[1] != "PlayCard":
            answer = self.planner.choose_answer(pid, str(value[1]))
            if answer is not None:
                self.call("SetPlayerState", [self.room_id, pid, ONLINE])
                self.pending[self.conn_of[pid]] = answer
            return
        t = self.table
        if self.timeouts_left > 0 and self.planner.second_slash_step is None and pid not in t.dead \
                and t.phase.get(pid) == 5 and t.play_requests.get(pid, 0) == 0:
            # An online client that does not answer this time: before any cheat is placed (with many kinds to
            # place, a game's first play requests all went to cheats, and no timeout came).
            t.play_requests[pid] = 1
            self.timeouts_left -= 1
            self.call("SetPlayerState", [self.room_id, pid, ONLINE])
            self.silent.add(self.conn_of[pid])
            return
        plan = self.planner.choose(pid)
        if plan is None:
            return
        # A modified client: the seat is Online when the request is sent, so its reply is awaited.
        self.call("SetPlayerState", [self.room_id, pid, ONLINE])
        self.pending[self.conn_of[pid]] = plan

    def m_ServerPlayer_doRequest(self, conn: int, command: Any, data: bytes, timeout: int, _ts: int = 0) -> None:
        cmd = plain(command)
        pid = self.pid_of[conn]
        self.view.requests.append((pid, cmd, bytes(data), int(timeout)))
        plan = self.pending.get(conn)
        # (a 闪 is asked for with AskForUseCard, or — 护驾's call on v0.5.22 — AskForResponseCard: the same reply)
        wanted = ("AskForUseCard", "AskForResponseCard") if plan is not None and plan[0] == "wrong_answer" else \
            ("AskForUseActiveSkill",) if plan is not None and plan[0] in DISCARDS \
            else ("PlayCard",)
        if plan is not None and cmd not in wanted:
            self.anomalies.append(f"seat {pid} was switched Online for {wanted} but was asked {cmd} first")

    def m_ServerPlayer_waitForReply(self, conn: int, _timeout: int = 0) -> Any:
        pid = self.pid_of[conn]
        if conn in self.silent:
            self.silent.discard(conn)
            self.timer_due = conn
            self.timeouts.append((pid, len(self.view.requests) - 1))
            return "__notready"
        plan = self.pending.pop(conn, None)
        # Back to Trust before answering: the tap must still call this a client's reply.
        self.call("SetPlayerState", [self.room_id, pid, TRUST])
        if plan is None:
            self.anomalies.append(f"seat {pid} was asked for a reply with nothing planned")
            return "__cancel"
        kind, reply, is_cheat = plan
        if not reply:  # (completed from the request it answers)
            request = plain(cbor.decode(self.view.requests[-1][2], skip_tags=True))
            reply = self.planner.complete(kind, pid, request)
        payload = cbor.encode(reply)
        self.view.online_replies.append((pid, payload))
        index = len(self.view.requests) - 1
        if is_cheat:
            self.cheats.append(Cheat(kind, pid, reply, index, CHEATS[kind]))
        return payload

    def m_ServerPlayer_thinking(self, conn: int) -> bool:
        return self.thinking.get(conn, False)

    def m_ServerPlayer_setThinking(self, conn: int, value: bool) -> None:
        self.thinking[conn] = bool(value)

    def _log(self, method: str, text: Any) -> None:
        line = plain(text)
        self.log.write(method, line)
        at = line.find(TAP_MARKER)
        if at >= 0:
            record = json.loads(line[at + len(TAP_MARKER):])
            if record.get("room") == self.room_id:
                self.tap_records.append(record)
        if method == "qCritical":
            self.lua_errors.append(line)

    def m_qDebug(self, text: Any) -> None:
        self._log("qDebug", text)

    def m_qInfo(self, text: Any) -> None:
        self._log("qInfo", text)

    def m_qWarning(self, text: Any) -> None:
        self._log("qWarning", text)

    def m_qCritical(self, text: Any) -> None:
        self._log("qCritical", text)

    def m_Room_gameOver(self, _room: int) -> None:
        self.over = True

    def m_ServerPlayer_getSaveState(self, *_: Any) -> str:
        return "{}"

    def m_ServerPlayer_getGlobalSaveState(self, *_: Any) -> str:
        return "{}"

    def m_Room_getSessionData(self, *_: Any) -> str:
        return "{}"

    def m_Room_getSessionId(self, *_: Any) -> int:
        return 0


# ---------------------------------------------------------------------------------------------
# the one call tests use


def play_game(core: str | Path | None, root: Path, log_path: Path, players: int = 5, *, room_id: int = 1,
              seed: int = 0, cheats: Iterable[str] = (), log: RotatingLog | None = None,
              max_log_bytes: int = 1 << 20, timeout_s: float = 300.0, timeouts: int = 0) -> GameRecord:
    """Play one all-AI room with the tap installed; the tap's lines go to ``log_path`` (or to
    ``log``, a RotatingLog shared by several games). ``cheats``: kinds from CHEATS to substitute,
    each placed at the first play phase where it applies (at most one a play phase); the ones
    placed are in the record with the tap's seq of their reply. ``timeouts``: that many times, a seat
    is switched Online for a PlayCard request that it then leaves unanswered until the request timer
    fires (the default reply is taken)."""
    started = time.monotonic()
    core_dir = install(core, root)
    own_log = log is None
    # Rotated like a real server's log, but with room for every file a game writes: a game FreeKill's AI drags out
    # on a loaded machine wrote 6 MB, and with spdlog's default 5 backups its first records were dropped (the
    # tests read that as lost lines: TapGap). Only what is written takes room.
    sink = log if log is not None else RotatingLog(log_path, max_bytes=max_log_bytes, backups=1000)
    host = Host(core_dir, room_id, players, sink, cheats, seed, timeout_s=timeout_s, timeouts=timeouts)
    stderr = ""
    try:
        host.start()
        host.play()
    finally:
        stderr = host.stop()
        if own_log:
            sink.close()
    place_cheats(host.cheats, host.tap_records)
    if stderr.strip():
        host.lua_errors.append("stderr: " + stderr.strip()[-2000:])
    return GameRecord(room_id, host.player_ids, list(host.table.order), host.view, host.cheats, host.winner, host.over,
                      log_path, time.monotonic() - started, lua_errors=host.lua_errors,
                      timeouts=host.timeouts, anomalies=host.anomalies, tap_records=host.tap_records)


def place_cheats(cheats: list[Cheat], records: list[dict[str, Any]]) -> None:
    """Fill each cheat's ``seq``: the tap's reply record answering the request it was sent for (the
    tap's requests are the host's, one for one: the coverage tests hold that)."""
    request_seqs = [r["seq"] for r in records if r["kind"] == "request"]
    for cheat in cheats:
        if cheat.request_index >= len(request_seqs):
            continue
        req_seq = request_seqs[cheat.request_index]
        cheat.seq = next((r["seq"] for r in records
                          if r["kind"] == "reply" and r["seq"] > req_seq and r["to"] == cheat.player), None)


# ---------------------------------------------------------------------------------------------
# for the tap's reply check (tests/freekill_live/test_tap_check.py, bench/tap_check_soundness.py): extension
# packages from the peers, the tap's check settings, a fixed Lua seed, rooms of other settings, two cheats of
# an extension room (a general not offered, a once-a-phase skill used twice), the core's CPU time

EXTENSIONS = ("utility", "standard_ex", "shzl")
# the generals offered then come from standard_ex and shzl only (the core's own cards stay)
EXTENSION_SETTINGS: dict[str, Any] = {**SETTINGS, "disabledPack": ["test_p_0", "standard"]}
SEED_DIR = "sgsv_seed"
# The tap's reply check must refuse these (the check's codes: integrations/freekill/tap/README.md).
CHECK_CODES: dict[str, str] = {
    "second_slash": "FK_NOT_SELECTABLE", "not_held": "FK_NOT_OFFERED", "draw_pile": "FK_NOT_OFFERED",
    "peach_full_hp": "FK_NOT_SELECTABLE", "out_of_range": "FK_NOT_SELECTABLE", "skill_not_owned": "FK_NOT_OFFERED",
    "two_targets": "FK_NOT_SELECTABLE", "duel_self": "FK_NOT_SELECTABLE", "dismantle_self": "FK_NOT_SELECTABLE",
    "peach_other": "FK_NOT_SELECTABLE", "jink_in_play": "FK_NOT_SELECTABLE", "ex_nihilo_other": "FK_NOT_SELECTABLE",
    "savage_one": "FK_NOT_SELECTABLE", "lightning_other": "FK_NOT_SELECTABLE",
    "analeptic_other": "FK_NOT_SELECTABLE", "equip_other": "FK_NOT_SELECTABLE", "snatch_far": "FK_NOT_SELECTABLE",
    "supply_far": "FK_NOT_SELECTABLE", "duplicate_delayed": "FK_NOT_SELECTABLE",
    "wrong_answer": "FK_NOT_SELECTABLE", "discard_short": "FK_NOT_FEASIBLE", "discard_extra": "FK_NOT_SELECTABLE",
    # the extension room's own (CheckHost)
    "general_not_offered": "FK_NOT_OFFERED",  # the lord picks 界孙权 though not among the candidates
    "skill_twice": "FK_NOT_SELECTABLE",       # 界制衡 (once a play phase) a second time
    "card_chosen_elsewhere": "FK_NOT_OFFERED",  # asked to choose a card of a player's, one from the draw pile
    "choice_not_offered": "FK_OPTION_NOT_OFFERED",  # asked to choose among options (AskForChoice), another one
}
# the lord's general the host forces, and its once-a-phase skill it then uses twice
FORCED_GENERAL, TWICE_SKILL = "ex__sunquan", "ex__zhiheng"
EXTRA_CHEATS = frozenset({"general_not_offered", "skill_twice", "card_chosen_elsewhere", "choice_not_offered"})
# An AskForChoice is announced by its skill's name (MoveFocus), which many other requests share: the host takes such
# a request as a modified client would, declines it when it is not a choice (a decline is always the player's to
# make: FreeKill's default; a skill's invocation it accepts, to reach the choice after it), and stops on a name that
# led to none twice. At most this many declines a name, and requests taken a game.
CHOICE_PROBES_A_NAME, CHOICE_PROBES_A_GAME = 2, 24
# The skills of the extension room's pool whose requests include an AskForChoice (FreeKill's focus text, the skill's
# name; "trigger": two skills of one player triggered at once), and the general the host seats for one of them.
CHOICE_SKILLS = frozenset({"benghuai", "yinghun", "guhuo", "wumou", "zhiji", "qinyin", "trigger", "#kylin_bow_skill"})
CHOICE_GENERAL = "dongzhuo"


def peer_archive(core: str | Path, name: str) -> Path | None:
    """The peers' archive of package ``name`` (``<name>-<commit>.tar.xz``) beside the core's archive, or in
    ``$SGS_FREEKILL_PACKAGES``; None when there is none."""
    places = [Path(os.environ["SGS_FREEKILL_PACKAGES"])] if os.environ.get("SGS_FREEKILL_PACKAGES") else []
    places.append(Path(core).parent)
    for place in places:
        found = sorted(place.glob(f"{name}-*.tar.xz"))
        if found:
            return found[-1]
    return None


def install_extensions(core: str | Path, root: Path, names: Iterable[str] = EXTENSIONS) -> None:
    """Extract each package's peer archive into ``<root>/packages/<name>`` (kept if there); HostError when an
    archive is missing."""
    for name in names:
        target = root / "packages" / name
        if target.exists() and any(target.iterdir()):
            continue
        archive = peer_archive(core, name)
        if archive is None:
            raise HostError(f"no {name}-*.tar.xz beside {core} (nor in $SGS_FREEKILL_PACKAGES)")
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")


def configure_tap(root: Path, *, check: bool = True, check_ai: bool = False, lua_seed: int | None = None) -> None:
    """Set the installed tap's check settings (the lines at the top of its init.lua), and seed Lua's random
    generator at package load (a package of its own, ``sgsv_seed``) when ``lua_seed`` is given (else none)."""
    path = root / "packages" / TAP_DIR / "init.lua"
    text = path.read_text(encoding="utf-8")
    for name, value in (("CHECK_REPLIES", check), ("CHECK_AI_REPLIES", check_ai)):
        for old in (f"local {name} = true\n", f"local {name} = false\n"):
            text = text.replace(old, f"local {name} = {'true' if value else 'false'}\n", 1)
        if f"local {name} = {'true' if value else 'false'}\n" not in text:
            raise HostError(f"the tap has no setting {name}")
    path.write_text(text, encoding="utf-8")
    seed_dir = root / "packages" / SEED_DIR
    if seed_dir.exists():
        shutil.rmtree(seed_dir)
    if lua_seed is not None:
        seed_dir.mkdir(parents=True)
        (seed_dir / "init.lua").write_text(f"math.randomseed({int(lua_seed)})\n", encoding="utf-8")


class CheckHost(Host):
    """A Host with room settings of its own, the extension room's two cheats, and the core's CPU time."""

    def __init__(self, *args: Any, settings: dict[str, Any] | None = None, extras: Iterable[str] = (),
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = dict(settings if settings is not None else SETTINGS)
        self.extras = set(extras)
        unknown = self.extras - EXTRA_CHEATS
        if unknown:
            raise ValueError(f"unknown extra cheats {sorted(unknown)}")
        self.twice_state: dict[int, int] = {}  # seat -> uses of TWICE_SKILL the host sent this phase
        self.choice_misses: dict[str, int] = {}  # focus text -> requests other than a choice it announced
        self.choice_probes = 0
        self.asked_index: dict[int, int] = {}  # conn -> its planned request's index in view.requests
        self.extra_pending: dict[int, tuple[str, Any, bool]] = {}  # conn -> (kind, reply, is_cheat)
        self.cpu_seconds: float | None = None

    def m_RoomThread_getRoom(self, room_id: int) -> bytes:
        players = [{"connId": self.conn_of[pid], "id": pid, "screenName": f"p{pid}", "avatar": "liubei",
                    "totalGameTime": 0, "state": TRUST, "gameData": [0, 0, 0]} for pid in self.player_ids]
        return cbor.encode({"id": room_id, "ownerId": self.player_ids[0], "timeout": 15,
                            "settings": cbor.encode(self.settings), "players": players})

    def core_cpu(self) -> float | None:
        """The core process's user + system CPU seconds so far (Linux /proc), None if unreadable."""
        if self.proc is None:
            return None
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def on_focus(self, value: Any) -> None:
        if isinstance(value, list) and len(value) >= 2 and isinstance(value[0], list) and value[0] and self.extras:
            # (the lord chooses alone, among lords; the others all at once: the first of them is played here)
            seats = value[0]
            choosing = str(value[1]) == "AskForGeneral" and len(seats) > 1
            if choosing and "choice_not_offered" in self.extras:
                # The last of them takes 董卓, whose 崩坏 asks a choice (AskForChoice) at his first end phase: his 8
                # HP are never the least. A cheat unless he was offered (as the first one's pick, below).
                self.call("SetPlayerState", [self.room_id, seats[-1], ONLINE])
                self.extra_pending[self.conn_of[seats[-1]]] = ("general_not_offered", [CHOICE_GENERAL], True)
            plan = self.plan_extra(seats[0], str(value[1]), len(seats))
            if plan is not None:
                self.call("SetPlayerState", [self.room_id, seats[0], ONLINE])
                self.extra_pending[self.conn_of[seats[0]]] = plan
                return
            if choosing:
                return
        super().on_focus(value)

    def plan_extra(self, pid: int, focus: str, asked: int) -> tuple[str, Any, bool] | None:
        t = self.table
        if focus == "AskForGeneral" and asked > 1 and "general_not_offered" in self.extras:
            self.extras.discard("general_not_offered")
            taken = set(t.general.values())
            pick = next(g for g in (FORCED_GENERAL, "ex__lvmeng", "ex__ganning") if g not in taken)
            return "general_not_offered", [pick], True  # (legal if it happens to be offered)
        if asked == 1 and focus == "AskForCardChosen" and "card_chosen_elsewhere" in self.extras and t.draw_pile():
            self.extras.discard("card_chosen_elsewhere")  # (过河拆桥, 顺手牵羊 and the like: a card of another's)
            return "card_chosen_elsewhere", t.draw_pile()[0], True
        if asked == 1 and "choice_not_offered" in self.extras and focus in CHOICE_SKILLS \
                and pid not in t.dead and self.choice_misses.get(focus, 0) < CHOICE_PROBES_A_NAME \
                and self.choice_probes < CHOICE_PROBES_A_GAME:
            return "choice_probe", focus, False
        if asked != 1 or focus != "PlayCard" or "skill_twice" not in self.extras:
            return None
        if pid in t.dead or t.phase.get(pid) != 5:
            return None
        if t.general.get(pid) != FORCED_GENERAL:
            return None
        t.play_requests[pid] = t.play_requests.get(pid, 0) + 1  # (what the Planner counts, it is not asked)
        used = self.twice_state.get(pid, 0) if t.play_requests[pid] > 1 else 0
        hand = t.hand(pid)
        if not hand or used >= 2:
            return None
        self.twice_state[pid] = used + 1
        reply = {"card": {"skill": TWICE_SKILL, "subcards": [hand[0]]}, "targets": []}
        if used == 0:
            return "skill_twice_first", reply, False  # the first use is legal: the check must pass it
        self.extras.discard("skill_twice")
        return "skill_twice", reply, True

    def m_ServerPlayer_doRequest(self, conn: int, command: Any, data: bytes, timeout: int, _ts: int = 0) -> None:
        plan = self.extra_pending.get(conn)
        if plan is None:
            super().m_ServerPlayer_doRequest(conn, command, data, timeout, _ts)
            return
        cmd = plain(command)
        pid = self.pid_of[conn]
        self.view.requests.append((pid, cmd, bytes(data), int(timeout)))
        self.asked_index[conn] = len(self.view.requests) - 1  # (two seats may be asked before either answers)
        wanted = ("AskForGeneral", "CustomDialog") if plan[0] == "general_not_offered" else \
            ("AskForCardChosen",) if plan[0] == "card_chosen_elsewhere" else ("PlayCard",)
        if cmd not in wanted and plan[0] != "choice_probe":  # (a probe takes whatever its skill asks)
            self.anomalies.append(f"seat {pid} was switched Online for {wanted} but was asked {cmd} first")

    def m_ServerPlayer_waitForReply(self, conn: int, _timeout: int = 0) -> Any:
        plan = self.extra_pending.pop(conn, None)
        if plan is None:
            return super().m_ServerPlayer_waitForReply(conn, _timeout)
        pid = self.pid_of[conn]
        self.call("SetPlayerState", [self.room_id, pid, TRUST])
        kind, reply, is_cheat = plan
        index = self.asked_index.pop(conn, len(self.view.requests) - 1)
        if kind == "choice_probe":
            return self.answer_probe(pid, str(reply), index)
        if kind == "general_not_offered":
            offered = plain(cbor.decode(self.view.requests[index][2], skip_tags=True))
            if self.view.requests[index][1] == "CustomDialog":  # (v0.5.22: a dialog, answered "g", "kingdom,")
                prop = offered.get("component", {}).get("model", {}).get("prop", {}) if isinstance(offered, dict) \
                    else {}
                offered = [prop.get("generals", [])]
                reply = [reply[0], "kingdom,"]
            # (a general of the same name as a candidate, ex__sunquan for a sunquan, is FreeKill's 同名替换: legal;
            # a general's name without its package prefix is its true name)
            names = [str(g).split("__")[-1] for g in offered[0]] if isinstance(offered, list) and offered else []
            is_cheat = str(reply[0]).split(",")[0].split("__")[-1] not in names
        payload = cbor.encode(reply)
        self.view.online_replies.append((pid, payload))
        self.cheats.append(Cheat(kind, pid, reply, index, CHECK_CODES[kind] if is_cheat else "ok"))
        return payload


    def answer_probe(self, pid: int, focus: str, index: int) -> str | bytes:
        """A request taken on its skill's name: an AskForChoice is answered with an option it did not offer (one
        it shows greyed out when it has one: what a modified client can click); any other request is declined."""
        cmd, data = self.view.requests[index][1], self.view.requests[index][2]
        self.choice_probes += 1
        if cmd == "AskForSkillInvoke":  # yes: the skill goes on to its choice (the next request on its name)
            self.view.online_replies.append((pid, cbor.encode("1")))
            self.cheats.append(Cheat("choice_probe_invoked", pid, {"focus": focus, "request": cmd}, index, "ok"))
            return cbor.encode("1")
        # (AskForChoices from v0.5.22 for some: the options first as well, answered with a list of them)
        request = plain(cbor.decode(data, skip_tags=True)) if cmd in ("AskForChoice", "AskForChoices") else None
        if not (isinstance(request, list) and request and isinstance(request[0], list)):
            self.choice_misses[focus] = self.choice_misses.get(focus, 0) + 1
            self.view.online_replies.append((pid, b"__cancel"))
            self.cheats.append(Cheat("choice_probe_declined", pid, {"focus": focus, "request": cmd}, index, "ok"))
            return "__cancel"  # (a decline: the request's default, the player's to choose; the check passes it)
        offered = [str(c) for c in request[0]]
        greyed = [str(c) for c in request[1]] if len(request) > 1 and isinstance(request[1], list) else []
        choice = next((c for c in greyed if c not in offered), f"{offered[0]}_not_offered")
        self.extras.discard("choice_not_offered")
        # (a client's reply is CBOR, the option's text: FreeKill decodes what it can, receive_decode aside)
        payload = cbor.encode(choice if cmd == "AskForChoice" else [choice])
        self.view.online_replies.append((pid, payload))
        self.cheats.append(Cheat("choice_not_offered", pid, {"choice": choice, "offered": offered}, index,
                                 CHECK_CODES["choice_not_offered"]))
        return payload


def play_checked_game(core: str | Path | None, root: Path, log_path: Path, players: int = 5, *, room_id: int = 1,
                      seed: int = 0, cheats: Iterable[str] = (), extras: Iterable[str] = (),
                      settings: dict[str, Any] | None = None, check: bool = True, check_ai: bool = False,
                      lua_seed: int | None = None, timeout_s: float = 300.0,
                      lua: str = "lua5.4") -> tuple[GameRecord, float | None]:
    """play_game with the tap's check set (``check``, ``check_ai``), the room's ``settings`` (SETTINGS; e.g.
    EXTENSION_SETTINGS, with install_extensions done on ``root``), Lua's seed fixed at load (``lua_seed``), and
    the extension room's cheats (``extras``; their Cheat.expected_code is "ok" when the reply turned out legal).
    ``lua``: the interpreter's command (fixed_lua makes one whose games repeat). Returns the record and the
    core's CPU seconds over the game (None where /proc is not readable)."""
    started = time.monotonic()
    core_dir = install(core, root)
    configure_tap(root, check=check, check_ai=check_ai, lua_seed=lua_seed)
    sink = RotatingLog(log_path, max_bytes=64 << 20)
    host = CheckHost(core_dir, room_id, players, sink, cheats, seed, lua=lua, timeout_s=timeout_s,
                     settings=settings, extras=extras)
    cpu: float | None = None
    try:
        host.start()
        host.play()
        cpu = host.core_cpu()
    finally:
        stderr = host.stop()
        sink.close()
    place_cheats(host.cheats, host.tap_records)
    if stderr.strip():
        host.lua_errors.append("stderr: " + stderr.strip()[-2000:])
    record = GameRecord(room_id, host.player_ids, list(host.table.order), host.view, host.cheats, host.winner,
                        host.over, log_path, time.monotonic() - started, lua_errors=host.lua_errors,
                        timeouts=host.timeouts, anomalies=host.anomalies, tap_records=host.tap_records)
    return record, cpu


FIXED_TIME_C = "#include <time.h>\ntime_t time(time_t *t) { if (t) *t = 1700000000; return 1700000000; }\n"


def fixed_lua(workdir: Path, lua: str = "lua5.4") -> str | None:
    """A command that runs ``lua`` so that a game with a fixed Lua seed (``lua_seed``) repeats: Lua 5.4 seeds its
    string hashes (and so the order of pairs()) from time() and addresses, so the command runs it with address
    randomisation off (setarch -R) and time() fixed (a preloaded library built here with cc). None when this
    machine lacks cc or setarch, or they do not work."""
    cc, setarch, real = shutil.which("cc") or shutil.which("gcc"), shutil.which("setarch"), shutil.which(lua)
    if cc is None or setarch is None or real is None:
        return None
    workdir.mkdir(parents=True, exist_ok=True)
    src, lib, wrapper = workdir / "fixed_time.c", workdir / "fixed_time.so", workdir / "lua-fixed"
    src.write_text(FIXED_TIME_C, encoding="utf-8")
    built = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", str(lib), str(src)], capture_output=True, check=False)
    if built.returncode != 0:
        return None
    wrapper.write_text(f'#!/bin/sh\nLD_PRELOAD="{lib}" exec "{setarch}" "$(uname -m)" -R "{real}" "$@"\n',
                       encoding="utf-8")
    wrapper.chmod(0o755)
    probe = subprocess.run([str(wrapper), "-e", "print(os.time())"], capture_output=True, text=True, check=False)
    return str(wrapper) if probe.stdout.strip() == "1700000000" else None
