"""The tap's Lua on its own (no FreeKill core): loaded into stand-ins for a client's and a server's
environment, it must install nothing on a client, write exact records on a server, merge identical
consecutive notifications, and survive its own failures without touching the game."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

from tests.freekill_live.host import TAP_SOURCE

# Stand-ins for what the tap uses of FreeKill: fk (the RPC table on a server, the Qt binding on a
# client), Fk.Base.ServerPlayerBase (the mixin it wraps), json, cbor (identity on strings here, so the
# payload bytes are known).
PRELUDE = r"""
local server = ...
local lines, warnings, delivered = {}, {}, {}
fk = { Player_Online = 1,
       qInfo = function(fmt, s) assert(fmt == "%s"); lines[#lines + 1] = s end,
       qWarning = function(fmt, s) warnings[#warnings + 1] = s end }
if server == "server" then fk._rpc_finished = false; fk.RoomThread = function() end end
json = { decode = function(s) error("not json") end }
cbor = { encode = function(v)
  if type(v) == "string" then return v end
  if type(v) == "table" and v.boom then error("cannot encode") end
  return "T" end }
local original = function(self, command, data) delivered[#delivered + 1] = command end
Fk = { Base = { ServerPlayerBase = { doNotify = original } } }
dofile(TAP)
local base = Fk.Base.ServerPlayerBase
print("wrapped=" .. tostring(base.doNotify ~= original))
local room = { id = 7, players = {}, settings = { gameMode = "aaa_role_mode" } }
for i = 1, 3 do room.players[i] = { id = i, room = room } end
"""

SCRIPT = PRELUDE + r"""
local p = room.players
if base.doNotify == original then return end
-- every byte value, to check the base64; three players get it: one record
local all = {} for i = 0, 255 do all[#all + 1] = string.char(i) end
local blob = table.concat(all)
for i = 1, 3 do base.doNotify(p[i], "Blob", blob) end
base.doNotify(p[1], "Blob", blob)            -- the same again to one seat: a new record
base.doNotify(p[2], "Other", "x%sy\"z")      -- a format string and a quote in the payload
base.doNotify(p[1], "Boom", { boom = true }) -- the tap fails on it: logged once, game goes on
base.doNotify(p[2], "Boom", { boom = true })
for i = 1, 3 do base.doNotify(p[i], "GameOver", "lord+loyalist") end
print("delivered=" .. table.concat(delivered, ","))
print("warnings=" .. #warnings)
for _, l in ipairs(lines) do print(l) end
"""


def run_lua(lua: str, tmp_path: Path, script: str, mode: str) -> list[str]:
    path = tmp_path / "harness.lua"
    path.write_text(f"local TAP = {json.dumps(str(TAP_SOURCE / 'init.lua'))}\n" + script, encoding="utf-8")
    done = subprocess.run([lua, str(path), mode], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_the_tap_installs_nothing_on_a_client(lua: str, tmp_path: Path) -> None:
    assert run_lua(lua, tmp_path, SCRIPT, "client") == ["wrapped=false"]


def test_the_tap_records_merges_and_survives_its_errors_on_a_server(lua: str, tmp_path: Path) -> None:
    out = run_lua(lua, tmp_path, SCRIPT, "server")
    assert out[0] == "wrapped=true"
    # the game got every notification, the ones the tap failed on included
    assert out[1] == "delivered=" + ",".join(["Blob"] * 4 + ["Other", "Boom", "Boom"] + ["GameOver"] * 3)
    assert out[2] == "warnings=1"  # one failure place, logged once
    records = [json.loads(line.removeprefix("SGSV1 ")) for line in out[3:]]
    assert all(line.startswith("SGSV1 {") for line in out[3:])
    assert [r["seq"] for r in records] == list(range(1, len(records) + 1))
    assert all(r["v"] == 1 and r["room"] == 7 for r in records)
    meta, blob, again, other, over, end = records
    assert meta["kind"] == "meta" and meta["players"] == 3 and meta["ids"] == [1, 2, 3]
    assert meta["mode"] == "aaa_role_mode"
    assert blob["kind"] == "notify" and blob["to"] == [1, 2, 3] and blob["cmd"] == "Blob"
    assert base64.b64decode(blob["cbor"], validate=True) == bytes(range(256))
    assert again["to"] == [1] and again["cbor"] == blob["cbor"]
    assert other["cmd"] == "Other" and base64.b64decode(other["cbor"]) == b'x%sy"z'
    assert over["cmd"] == "GameOver" and over["to"] == [1, 2, 3]
    assert end == {"v": 1, "room": 7, "seq": 6, "kind": "end", "result": "lord+loyalist"}


def test_base64_of_every_length(lua: str, tmp_path: Path) -> None:
    script = PRELUDE + r"""
for n = 0, 7 do
  local s = string.rep("\255\0\128", 3):sub(1, n)
  for i = 1, 3 do base.doNotify(room.players[i], "N" .. n, s) end
end
for _, l in ipairs(lines) do print(l) end
"""
    out = run_lua(lua, tmp_path, script, "server")
    records = [json.loads(line.removeprefix("SGSV1 ")) for line in out[1:]]
    notes = [r for r in records if r["kind"] == "notify"]
    # the last one is still being merged (nothing came after it): 7 flushed
    assert [r["cmd"] for r in notes] == [f"N{n}" for n in range(7)]
    for n, r in enumerate(notes):
        assert r["cbor"] == base64.b64encode((b"\xff\x00\x80" * 3)[:n]).decode()
