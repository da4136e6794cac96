-- SPDX-License-Identifier: GPL-3.0-or-later
--
-- sgsv_tap: a FreeKill server package that records every notification, request and reply of
-- every room as one log line each ("SGSV1 " + a JSON object, see README.md), for sgs-verify's
-- bridge. It changes nothing in the game: every hook calls the original first-class, and the
-- tap's own work runs under pcall (an error is logged once and the game goes on).
--
-- Where it hooks (FreeKill core 88a912f1):
--   * ServerPlayerBase.doNotify, in the mixin table at package load (the ServerPlayer class
--     copies the mixin later, when the room module builds it) -> notifications;
--   * Request._sendPacket / _checkReply / ask, on the first notification of the process (the
--     Request global does not exist while packages load) -> requests and replies.
-- On a client (FreeKill pushes server packages to clients) it installs nothing.

local TAP_VERSION = "sgsv_tap 1.0"
local MARK = "SGSV1 "

local tap = { failed = {} }

-- Log a failure of the tap once per place, then stay silent about it: the game must go on.
local function complain(where, err)
  if tap.failed[where] then return end
  tap.failed[where] = true
  pcall(fk.qWarning, "%s", "[sgsv_tap] " .. where .. " failed (logged once): " .. tostring(err))
end

-- The server-side Lua of FreeKill runs as an RPC child of the server (asio); its `fk` table
-- is the RPC one, which carries `_rpc_finished`. A client's `fk` (the Qt binding) does not.
local function on_server()
  local ok, res = pcall(function()
    return type(fk) == "table" and rawget(fk, "_rpc_finished") ~= nil
      and rawget(fk, "RoomThread") ~= nil
  end)
  return ok and res
end

---------------------------------------------------------------------------------------------
-- base64 (RFC 4648, with padding)

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local b64chars = {}
for i = 1, 64 do b64chars[i - 1] = B64:sub(i, i) end

local function base64(s)
  local out, n = {}, 0
  local len = #s
  for i = 1, len - 2, 3 do
    local a, b, c = s:byte(i, i + 2)
    local v = (a << 16) | (b << 8) | c
    n = n + 1
    out[n] = b64chars[(v >> 18) & 63] .. b64chars[(v >> 12) & 63]
      .. b64chars[(v >> 6) & 63] .. b64chars[v & 63]
  end
  local rest = len % 3
  if rest == 1 then
    local a = s:byte(len)
    local v = a << 16
    n = n + 1
    out[n] = b64chars[(v >> 18) & 63] .. b64chars[(v >> 12) & 63] .. "=="
  elseif rest == 2 then
    local a, b = s:byte(len - 1, len)
    local v = (a << 16) | (b << 8)
    n = n + 1
    out[n] = b64chars[(v >> 18) & 63] .. b64chars[(v >> 12) & 63] .. b64chars[(v >> 6) & 63] .. "="
  end
  return table.concat(out)
end
tap.base64 = base64

---------------------------------------------------------------------------------------------
-- JSON for the record (strings, integers, booleans, lists of integers): our own, because the
-- core's encoder is not ours to depend on for exact output.

local function jstr(s)
  s = tostring(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == "\\" then return "\\\\" end
    return string.format("\\u%04x", c:byte())
  end) .. '"'
end

local function jval(v)
  local t = type(v)
  if t == "string" then return jstr(v) end
  if t == "boolean" then return v and "true" or "false" end
  if t == "number" then
    if math.type(v) == "integer" then return tostring(v) end
    return string.format("%.17g", v)
  end
  if t == "table" then
    local parts = {}
    for i, x in ipairs(v) do parts[i] = jval(x) end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  return "null"
end

-- keys in a fixed order, so that lines are reproducible
local function record(fields)
  local parts = {}
  for i = 1, #fields, 2 do
    local v = fields[i + 1]
    if v ~= nil then parts[#parts + 1] = jstr(fields[i]) .. ":" .. jval(v) end
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

---------------------------------------------------------------------------------------------
-- per-room state and output

local CBOR
local function cbor_encode(v)
  if not CBOR then
    CBOR = rawget(_G, "cbor")
    if type(CBOR) ~= "table" or type(CBOR.encode) ~= "function" then
      CBOR = require "server.rpc.cbor"  -- already loaded by the RPC layer
    end
  end
  return CBOR.encode(v)
end

local rooms = {}  -- room id -> { seq, pending = merged notify or nil, gameover = n }

local function emit(room_id, st, kind, fields)
  st.seq = st.seq + 1
  local all = { "v", 1, "room", room_id, "seq", st.seq, "kind", kind }
  for i = 1, #fields do all[#all + 1] = fields[i] end
  fk.qInfo("%s", MARK .. record(all))
end

local function flush(room_id, st)
  local p = st.pending
  if p then
    st.pending = nil
    emit(room_id, st, "notify", { "to", p.to, "cmd", p.cmd, "cbor", p.b64 })
  end
end

local function room_state(room)
  local id = room.id
  local st = rooms[id]
  if st then return id, st end
  st = { seq = 0, gameover = 0 }
  rooms[id] = st
  local ids = {}
  for i, p in ipairs(room.players or {}) do ids[i] = p.id end
  local settings = room.settings or {}
  local ok, settings_cbor = pcall(cbor_encode, settings)
  emit(id, st, "meta", {
    "players", #ids,
    "mode", type(settings) == "table" and settings.gameMode or nil,
    "settings_cbor", ok and base64(settings_cbor) or nil,
    "ids", ids,
    "tap", TAP_VERSION,
  })
  return id, st
end

---------------------------------------------------------------------------------------------
-- notifications

-- doNotify takes a decoded value, or (old callers) a JSON string it decodes first; the bytes
-- the client gets are the CBOR of that value.
local function payload_of(data)
  if type(data) == "string" then
    local ok, dat = pcall(json.decode, data)
    if ok then data = dat end
  end
  return cbor_encode(data)
end

local function on_notify(player, command, data)
  local room = player.room
  if type(room) ~= "table" or room.id == nil then return end
  local id, st = room_state(room)
  local b64 = base64(payload_of(data))
  local p = st.pending
  if p and p.cmd == command and p.b64 == b64 and not p.seen[player.id] then
    p.to[#p.to + 1] = player.id
    p.seen[player.id] = true
  else
    flush(id, st)
    st.pending = { cmd = command, b64 = b64, to = { player.id }, seen = { [player.id] = true } }
  end
  if command == "GameOver" then
    st.gameover = st.gameover + 1
    if st.gameover >= #(room.players or {}) then
      flush(id, st)
      emit(id, st, "end", { "result", type(data) == "string" and data or "" })
      rooms[id] = nil
    end
  end
end

---------------------------------------------------------------------------------------------
-- requests and replies

local asked = setmetatable({}, { __mode = "k" })  -- Request -> { [player id] = {by, raw} }

local function on_send(req, player)
  local room = req.room
  local id, st = room_state(room)
  flush(id, st)
  local data = req.data[player.id]
  local bytes
  if req.send_encode then bytes = cbor_encode(data) else bytes = tostring(data) end
  emit(id, st, "request", {
    "to", player.id, "cmd", req.command, "cbor", base64(bytes), "timeout", req.timeout,
  })
end

local function contains(list, x)
  for _, y in ipairs(list or {}) do if y == x then return true end end
  return false
end

local function on_asked(req)
  local room = req.room
  local id, st = room_state(room)
  flush(id, st)
  local got = asked[req] or {}
  for _, player in ipairs(req.players) do
    local r = got[player.id]
    local by, status
    if r then
      by = r.by
      status = (r.raw == "__cancel") and "cancel" or "reply"
    elseif contains(req.overtimes, player) then
      by, status = "none", "timeout"
    else
      by, status = "none", "race"
    end
    local result = req.result[player.id]
    local fields = { "to", player.id, "cmd", req.command }
    if result == nil or result == "" or result == "__cancel" then
      fields[#fields + 1] = "cancel"
      fields[#fields + 1] = true
    else
      fields[#fields + 1] = "cbor"
      fields[#fields + 1] = base64(cbor_encode(result))
    end
    fields[#fields + 1] = "by"
    fields[#fields + 1] = by
    fields[#fields + 1] = "status"
    fields[#fields + 1] = status
    emit(id, st, "reply", fields)
  end
  asked[req] = nil
end

local function wrap_request()
  local R = rawget(_G, "Request")
  if type(R) ~= "table" then return false end

  local orig_send = R._sendPacket
  R._sendPacket = function(self, player, ...)
    local controller = player.serverplayer
    local pend = self.pending_requests and self.pending_requests[controller]
    local before = pend and #pend or 0
    local ret = table.pack(orig_send(self, player, ...))
    local ok, err = pcall(function()
      pend = self.pending_requests and self.pending_requests[controller]
      if (pend and #pend or 0) <= before then on_send(self, player) end  -- sent, not parked
    end)
    if not ok then complain("request", err) end
    return table.unpack(ret, 1, ret.n)
  end

  local orig_check = R._checkReply
  R._checkReply = function(self, player, ...)
    -- Who answers is decided by this test inside _checkReply; read it before the call, since
    -- the controller's state may change while the reply is fetched.
    local ok, by = pcall(function()
      local controller = player.serverplayer
      return (controller:getState() == fk.Player_Online and self.send_success[controller])
        and "client" or "ai"
    end)
    local reply = orig_check(self, player, ...)
    if ok and reply ~= "__notready" then
      local ok2, err = pcall(function()
        local got = asked[self] or {}
        asked[self] = got
        got[player.id] = { by = by, raw = reply }
      end)
      if not ok2 then complain("reply", err) end
    elseif not ok then
      complain("attribution", by)
    end
    return reply
  end

  local orig_ask = R.ask
  R.ask = function(self, ...)
    if self._asked then return orig_ask(self, ...) end
    local ret = table.pack(orig_ask(self, ...))
    local ok, err = pcall(on_asked, self)
    if not ok then complain("reply", err) end
    return table.unpack(ret, 1, ret.n)
  end
  return true
end

---------------------------------------------------------------------------------------------
-- install

local function install()
  local base = Fk and Fk.Base and Fk.Base.ServerPlayerBase
  if type(base) ~= "table" or type(base.doNotify) ~= "function" then
    complain("install", "no ServerPlayerBase.doNotify in this core")
    return
  end
  local orig_notify = base.doNotify
  local request_wrapped = false
  base.doNotify = function(self, command, data, ...)
    local ok, err = pcall(function()
      if not request_wrapped then
        request_wrapped = wrap_request()
      end
      on_notify(self, command, data)
    end)
    if not ok then complain("notify", err) end
    return orig_notify(self, command, data, ...)
  end
end

if on_server() then
  local ok, err = pcall(install)
  if not ok then complain("install", err) end
end

-- The tap adds no general, card or skill: it returns no package, so the loader lists nothing.
