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

local TAP_VERSION = "sgsv_tap 1.1"
local MARK = "SGSV1 "

-- Settings (an operator edits them here; the sandbox leaves a package no environment to read).
-- CHECK_REPLIES: re-check each reply a client sent against FreeKill's own rules (the request
--   handlers its honest client builds replies with) and write the verdict as a "check" record.
-- CHECK_AI_REPLIES: check the AI's replies too (for measuring the check, not for production).
local CHECK_REPLIES = true
local CHECK_AI_REPLIES = false

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
    local c = r and r.check
    if c then
      -- (no nil in the list: a hole would cut it short)
      local cf = { "to", player.id, "cmd", req.command, "reply", st.seq, "by", by, "verdict", c.verdict }
      if c.code then cf[#cf + 1] = "code"; cf[#cf + 1] = c.code end
      if c.why then cf[#cf + 1] = "why"; cf[#cf + 1] = c.why end
      if c.effects > 0 then cf[#cf + 1] = "side_effects"; cf[#cf + 1] = c.effects end
      cf[#cf + 1] = "lua_us"
      cf[#cf + 1] = c.us
      cf[#cf + 1] = "cpu_us"
      cf[#cf + 1] = c.cpu
      emit(id, st, "check", cf)
    end
  end
  asked[req] = nil
end

---------------------------------------------------------------------------------------------
-- the reply check: does a reply obey FreeKill's own rules?
--
-- FreeKill's server carries out whatever a client replies. Its honest client builds each reply
-- through a request handler (the same one FreeKill's AI drives on the server): items offered
-- (cards, players, skill buttons), each enabled or not, and an OK button that is enabled when
-- the selection is feasible. The check builds that handler on the server as the AI does, clicks
-- the reply's choices in order, and refuses an item that was not offered or not enabled, or a
-- selection that is not feasible. Request kinds without a handler are checked against the
-- request's own data (options, counts, areas). It never changes the game: every global and
-- field it may touch is saved and restored, random draws and notifications made while it runs
-- are swallowed and counted (side_effects), and errors are contained: a reply it cannot judge
-- is "unjudged", never a violation.

local checking = false      -- true while a check runs (doNotify then delivers nothing)
local side_effects = 0      -- notifications and random draws swallowed during the current check

local function refuse(code, why) error({ sgsv = true, code = code, why = why }, 0) end
local function unjudged(why) error({ sgsv = true, unjudged = true, why = why }, 0) end

local function is_list(t) return type(t) == "table" end
local function has(list, x)
  if type(list) ~= "table" then return false end
  for _, y in ipairs(list) do if y == x then return true end end
  return false
end
local function short(v)
  if type(v) == "table" then
    local parts = {}
    for i, x in ipairs(v) do
      if i > 8 then parts[#parts + 1] = "..." break end
      parts[#parts + 1] = tostring(x)
    end
    return "[" .. table.concat(parts, ",") .. "]"
  end
  return tostring(v)
end

-- skills that carry an interaction (its data is global per skill): found once
local interaction_skills
local function skills_with_interaction()
  if interaction_skills then return interaction_skills end
  interaction_skills = {}
  for _, s in pairs(Fk.skills or {}) do
    if type(s) == "table" and rawget(s, "interaction") ~= nil then
      interaction_skills[#interaction_skills + 1] = s
    end
  end
  return interaction_skills
end

local function copy_history(h)
  local out = {}
  for k, v in pairs(h or {}) do
    if type(v) == "table" then
      local c = {}
      for k2, v2 in pairs(v) do
        if type(v2) == "table" then
          local c2 = {}
          for k3, v3 in pairs(v2) do c2[k3] = v3 end
          c[k2] = c2
        else
          c[k2] = v2
        end
      end
      out[k] = { tab = v, copy = c }
    else
      out[k] = { value = v }
    end
  end
  return out
end

local function restore_history(h, saved)
  if type(h) ~= "table" then return end
  for k in pairs(h) do if saved[k] == nil then h[k] = nil end end
  for k, s in pairs(saved) do
    if s.tab then
      local t = s.tab
      for k2 in pairs(t) do if s.copy[k2] == nil then t[k2] = nil end end
      for k2, v2 in pairs(s.copy) do
        if type(v2) == "table" and type(t[k2]) == "table" then
          local t2 = t[k2]
          for k3 in pairs(t2) do if v2[k3] == nil then t2[k3] = nil end end
          for k3, v3 in pairs(v2) do t2[k3] = v3 end
        else
          t[k2] = v2
        end
      end
      h[k] = t
    else
      h[k] = s.value
    end
  end
end

-- Run fn() with everything a handler may touch saved, and restored afterwards whatever happens.
local function guarded(room, player, active_skill, extra_data, fn)
  local saved_self = rawget(_G, "Self")
  local saved_handler = room.current_request_handler
  local saved_pattern, saved_reason = Fk.currentResponsePattern, Fk.currentResponseReason
  local hist = copy_history(rawget(player, "skillUsedHistory"))
  local bhist = copy_history(rawget(player, "skillBranchUsedHistory"))
  -- the handler counts a click_count skill's use when its button is pressed (the client's own
  -- view): on the server that would notify everyone, so the count goes to the plain Player's
  -- table only, and the table is put back afterwards
  local own_add = rawget(player, "addSkillUseHistory")
  local own_badd = rawget(player, "addSkillBranchUseHistory")
  local super = player.class and player.class.super
  rawset(player, "addSkillUseHistory", super and super.addSkillUseHistory or function() end)
  rawset(player, "addSkillBranchUseHistory", super and super.addSkillBranchUseHistory or function() end)
  local inter = {}
  for i, s in ipairs(skills_with_interaction()) do
    local it = rawget(s, "interaction")
    inter[i] = type(it) == "table" and { it, rawget(it, "data") } or false
  end
  local saved_extra
  if active_skill then
    saved_extra = rawget(active_skill, "_extra_data")
    rawset(active_skill, "_extra_data", type(extra_data) == "table" and extra_data or {})
  end
  local random, randomseed = math.random, math.randomseed
  -- a draw during the check would move the game's random sequence: it gets the range's low end
  math.random = function(m, n)
    side_effects = side_effects + 1
    if n then return m end
    if m then return 1 end
    return 0
  end
  math.randomseed = function() side_effects = side_effects + 1 end
  checking, side_effects = true, 0

  local ok, res = pcall(fn)

  checking = false
  math.random, math.randomseed = random, randomseed
  if active_skill then rawset(active_skill, "_extra_data", saved_extra) end
  for i, s in ipairs(skills_with_interaction()) do
    local v = inter[i]
    if v and rawget(s, "interaction") == v[1] then rawset(v[1], "data", v[2]) end
  end
  rawset(player, "addSkillUseHistory", own_add)
  rawset(player, "addSkillBranchUseHistory", own_badd)
  restore_history(rawget(player, "skillUsedHistory"), hist)
  restore_history(rawget(player, "skillBranchUsedHistory"), bhist)
  Fk.currentResponsePattern, Fk.currentResponseReason = saved_pattern, saved_reason
  room.current_request_handler = saved_handler
  rawset(_G, "Self", saved_self)
  return ok, res
end

-- one click on a handler's item, as the honest client's UI would send it
local function click(h, kind, id, label)
  local items = h.scene and h.scene.items and h.scene.items[kind]
  local item = items and items[id]
  if not item then refuse("FK_NOT_OFFERED", label .. " is not offered") end
  if item.selected then refuse("FK_NOT_SELECTABLE", label .. " is chosen twice") end
  if not item.enabled then refuse("FK_NOT_SELECTABLE", label .. " is not selectable") end
  h:update(kind, id, "click", { selected = true })
end

local function check_interaction(h, value)
  local items = h.scene.items.Interaction
  local item = items and items["1"]
  if not item then return end                       -- the skill asks for none: nothing to set
  local spec = item.spec or {}
  local t = spec.type
  if t == "combo" or t == "cardname" then
    if not has(spec.choices, value) then
      refuse("FK_OPTION_NOT_OFFERED", "interaction " .. short(value) .. " not among " .. short(spec.choices))
    end
  elseif t == "spin" then
    if type(value) ~= "number" or value < spec.from or value > spec.to then
      refuse("FK_OPTION_NOT_OFFERED", "interaction " .. short(value) .. " outside " .. tostring(spec.from)
        .. ".." .. tostring(spec.to))
    end
  elseif t == "checkbox" then
    if not is_list(value) then refuse("FK_MALFORMED", "interaction is not a list") end
    for _, v in ipairs(value) do
      if not has(spec.choices, v) then
        refuse("FK_OPTION_NOT_OFFERED", "interaction " .. short(v) .. " not among " .. short(spec.choices))
      end
    end
  end
  h:update("Interaction", "1", "update", value)
end

-- The players a card's use goes to by itself, when its targets are fixed (cores from v0.5.21 on, which have
-- Card:getFixedTargets; nil before, and for a card whose targets are chosen).
local function fixed_targets(h, player)
  local card = h.selected_card
  if not card and h.skill_name then
    local skill = Fk.skills[h.skill_name]
    if skill and skill.viewAs and skill:isInstanceOf(ViewAsSkill) then card = skill:viewAs(player, h.pendings or {}) end
  end
  if type(card) ~= "table" or type(card.getFixedTargets) ~= "function" then return nil end
  if not card:getFixedTargets(player, h.extra_data) then return nil end
  return card:getAvailableTargets(player, h.extra_data)
end

local HANDLED = { PlayCard = true, AskForUseCard = true, AskForResponseCard = true,
                  AskForUseActiveSkill = true }

-- replay a handler request's reply as clicks
local function check_handler(room, player, command, data, reply)
  local cls = room.request_handlers and room.request_handlers[command]
  if not cls then unjudged("no request handler for " .. command .. " in this core") end
  if type(reply) ~= "table" then refuse("FK_MALFORMED", "the reply is not a card use: " .. short(reply)) end
  local active_skill, extra
  if command == "AskForUseActiveSkill" and is_list(data) then
    active_skill = Fk.skills[data[1]]
    extra = data[4]
    if not active_skill then unjudged("the requested skill " .. tostring(data[1]) .. " is unknown") end
  end
  local ok, res = guarded(room, player, active_skill, extra, function()
    rawset(_G, "Self", player)
    local h = cls:new(player, data)
    local ok_setup, err = pcall(h.setup, h)
    if not ok_setup then unjudged("the handler's set-up failed: " .. tostring(err)) end
    local card, targets = reply.card, reply.targets or {}
    if not is_list(targets) then refuse("FK_MALFORMED", "targets is not a list") end
    if type(card) == "table" then
      local name = card.skill
      if command ~= "AskForUseActiveSkill" then
        if type(name) ~= "string" then refuse("FK_MALFORMED", "a skill use without a skill name") end
        click(h, "SkillButton", name, "skill " .. name)
      end
      if reply.interaction_data ~= nil then check_interaction(h, reply.interaction_data) end
      local subcards = card.subcards or {}
      if not is_list(subcards) then refuse("FK_MALFORMED", "subcards is not a list") end
      for _, cid in ipairs(subcards) do click(h, "CardItem", cid, "card " .. tostring(cid)) end
    elseif math.type(card) == "integer" then
      click(h, "CardItem", card, "card " .. tostring(card))
      if reply.special_skill ~= nil then
        local sp = h.scene.items.SpecialSkills and h.scene.items.SpecialSkills["1"]
        if not (sp and has(sp.skills, reply.special_skill)) then
          refuse("FK_NOT_OFFERED", "special use " .. tostring(reply.special_skill) .. " of card "
            .. tostring(card) .. " is not offered")
        end
        h:update("SpecialSkills", "1", "click", reply.special_skill)
      end
    else
      refuse("FK_MALFORMED", "the reply names no card or skill")
    end
    local fixed = #targets > 0 and fixed_targets(h, player) or nil
    if fixed then
      -- (v0.5.21+: a card whose targets are fixed (桃, 无中生有, equipment, AOE) offers no player to click;
      -- the client sends none and the server takes them all. Naming exactly those is the same use.)
      local want, got = {}, {}
      for _, p in ipairs(fixed) do want[#want + 1] = p.id end
      for _, pid in ipairs(targets) do got[#got + 1] = pid end
      table.sort(want)
      table.sort(got)
      if table.concat(want, ",") ~= table.concat(got, ",") then
        refuse("FK_NOT_SELECTABLE", "targets " .. short(targets) .. " are not the card's fixed targets "
          .. short(want))
      end
    else
      for _, pid in ipairs(targets) do click(h, "Photo", pid, "target " .. tostring(pid)) end
    end
    if not h:feasible() then
      local chosen = type(card) == "table" and card.subcards or { card }
      local nothing = #chosen == 0 and #targets == 0
      refuse("FK_NOT_FEASIBLE", "the selection (cards " .. short(chosen) .. ", targets " .. short(targets)
        .. ") is not feasible" .. (nothing and h.cancelable and "; nothing chosen where a decline was allowed" or ""))
    end
  end)
  if ok then return end
  error(res, 0)
end

-- the request kinds without a handler: the reply against the request's own data

local function ids_of_lists(lists)
  local set, n = {}, 0
  for _, l in ipairs(lists or {}) do
    if is_list(l) then
      for _, id in ipairs(l) do set[id] = (set[id] or 0) + 1; n = n + 1 end
    end
  end
  return set, n
end

local function same_cards(offered, got, what)
  local want, n = ids_of_lists(offered)
  local have, m = ids_of_lists(got)
  for id, k in pairs(have) do
    if (want[id] or 0) < k then refuse("FK_NOT_OFFERED", what .. ": card " .. tostring(id) .. " was not offered") end
  end
  if m ~= n then refuse("FK_BAD_COUNT", what .. ": " .. m .. " cards placed of the " .. n .. " offered") end
end

local function count_in(list, lo, hi, what)
  local n = #list
  if (lo and n < lo) or (hi and n > hi) then
    refuse("FK_BAD_COUNT", string.format("%s: %d chosen, %s..%s allowed", what, n, tostring(lo), tostring(hi)))
  end
end

local function no_duplicates(list, what)
  local seen = {}
  for _, x in ipairs(list) do
    if seen[x] then refuse("FK_DUPLICATE", what .. " " .. tostring(x) .. " chosen twice") end
    seen[x] = true
  end
end

local DATA_CHECKS = {}

DATA_CHECKS.AskForSkillInvoke = function() end  -- yes or no: both are the player's to say

DATA_CHECKS.AskForChoice = function(_, _, data, reply)
  local choices = data[1]
  if not has(choices, reply) then
    refuse("FK_OPTION_NOT_OFFERED", "choice " .. short(reply) .. " not among " .. short(choices))
  end
end

DATA_CHECKS.AskForChoices = function(_, _, data, reply)
  if not is_list(reply) then refuse("FK_MALFORMED", "the reply is not a list of choices") end
  for _, c in ipairs(reply) do
    if not has(data[1], c) then refuse("FK_OPTION_NOT_OFFERED", "choice " .. short(c) .. " not among " .. short(data[1])) end
  end
  no_duplicates(reply, "choice")
  local lim = data[3] or {}
  count_in(reply, lim[1], lim[2], "choices")
end

-- v0.5.21+: options to tick, "Cancel" among them when the request may be declined
DATA_CHECKS.AskForOptions = function(_, _, data, reply)
  if not is_list(reply) then refuse("FK_MALFORMED", "the reply is not a list of options") end
  for _, c in ipairs(reply) do
    if not has(data[1], c) and not (data[4] and c == "Cancel") then
      refuse("FK_OPTION_NOT_OFFERED", "option " .. short(c) .. " not among " .. short(data[1]))
    end
  end
  no_duplicates(reply, "option")
  local lim = data[3] or {}
  count_in(reply, lim[1], lim[2], "options")
end

DATA_CHECKS.AskForGeneral = function(_, _, data, reply)
  if type(reply) == "string" then reply = { reply } end
  if not is_list(reply) then refuse("FK_MALFORMED", "the reply is not a list of generals") end
  local generals, n, no_convert = data[1], data[2] or 1, data[3]
  local true_names = {}
  for _, g in ipairs(generals or {}) do
    local gen = Fk.generals[g]
    if gen then true_names[gen.trueName] = true end
  end
  for _, g in ipairs(reply) do
    if not has(generals, g) then
      local gen = Fk.generals[g]
      -- the client may swap a candidate for a general of the same name (unless told not to)
      if no_convert or not gen or not true_names[gen.trueName] then
        refuse("FK_NOT_OFFERED", "general " .. short(g) .. " not among " .. short(generals))
      end
    end
  end
  no_duplicates(reply, "general")
  count_in(reply, n, n, "generals")
  local rule = Fk.choose_general_rule and Fk.choose_general_rule[data[5] or "askForGeneralsChosen"]
  if rule then
    -- (the rule's extra data: data[6]; from v0.5.21 data[7], after the prompt)
    local extra = type(data[6]) == "table" and data[6] or type(data[7]) == "table" and data[7] or { n = n }
    if extra.n == nil then extra = { n = n } end
    local selected = {}
    for _, g in ipairs(reply) do
      if has(generals, g) and not rule.card_filter(g, selected, generals, extra) then
        refuse("FK_NOT_SELECTABLE", "general " .. g .. " is not selectable with " .. short(selected))
      end
      selected[#selected + 1] = g
    end
    if not rule.feasible(selected, generals, extra) then
      refuse("FK_NOT_FEASIBLE", "generals " .. short(selected) .. " are not a feasible choice")
    end
  end
end

DATA_CHECKS.AskForCardChosen = function(room, _, data, reply)
  -- {target id, flag, reason, prompt}; from v0.5.21 {target player, flag, prompt}
  local target = data[1]
  if type(target) ~= "table" then target = math.type(target) == "integer" and room:getPlayerById(target) or nil end
  local flag = data[2]
  if math.type(reply) ~= "integer" then refuse("FK_MALFORMED", "the reply is not a card id: " .. short(reply)) end
  if type(flag) == "string" then
    if not target then unjudged("the target " .. tostring(data[1]) .. " is not in the room") end
    if reply == -1 and flag:find("h") and #target:getCardIds("h") > 0 then return end  -- a face-down hand card
    for _, area in ipairs({ "h", "e", "j" }) do
      if flag:find(area) and has(target:getCardIds(area), reply) then return end
    end
    refuse("FK_NOT_OFFERED", "card " .. reply .. " is not in player " .. tostring(target.id) .. "'s areas " .. flag)
  elseif type(flag) == "table" and is_list(flag.card_data) then
    for _, pile in ipairs(flag.card_data) do
      if is_list(pile) and has(pile[2], reply) then return end
    end
    refuse("FK_NOT_OFFERED", "card " .. reply .. " is not among the cards offered")
  else
    unjudged("AskForCardChosen with an area flag of an unknown shape")
  end
end

DATA_CHECKS.AskForPoxi = function(_, _, data, reply)
  if not is_list(reply) then refuse("FK_MALFORMED", "the reply is not a list of cards") end
  local poxi = Fk.poxi_methods and Fk.poxi_methods[data.type]
  if not poxi then unjudged("no poxi method " .. tostring(data.type)) end
  local piles = data.data
  local offered = {}
  local shaped = is_list(piles)
  for _, pile in ipairs(shaped and piles or {}) do
    if is_list(pile) and is_list(pile[2]) then
      for _, id in ipairs(pile[2]) do offered[id] = true end
    else
      shaped = false
    end
  end
  local selected = {}
  for _, id in ipairs(reply) do
    if shaped and id ~= -1 and not offered[id] then
      refuse("FK_NOT_OFFERED", "card " .. tostring(id) .. " was not offered")
    end
    if id ~= -1 and not poxi.card_filter(id, selected, piles, data.extra_data) then
      refuse("FK_NOT_SELECTABLE", "card " .. tostring(id) .. " is not selectable with " .. short(selected))
    end
    selected[#selected + 1] = id
  end
  no_duplicates(reply, "card")
  if not poxi.feasible(selected, piles, data.extra_data) then
    refuse("FK_NOT_FEASIBLE", "cards " .. short(selected) .. " are not a feasible choice")
  end
end

DATA_CHECKS.AskForAG = function(_, _, data, reply)
  if not has(data[1], reply) then refuse("FK_NOT_OFFERED", "card " .. short(reply) .. " not among " .. short(data[1])) end
end

DATA_CHECKS.AskForGuanxing = function(_, _, data, reply)
  if not is_list(reply) then refuse("FK_MALFORMED", "the reply is not a list of piles") end
  same_cards(data.cards, reply, "guanxing")
  local top, bottom = reply[1] or {}, reply[2] or {}
  if data.max_top_cards == 0 then top, bottom = {}, reply[1] or {} end
  count_in(top, data.min_top_cards, data.max_top_cards, "cards on top")
  count_in(bottom, data.min_bottom_cards, data.max_bottom_cards, "cards at the bottom")
end

DATA_CHECKS.AskForExchange = function(_, _, data, reply)
  if not is_list(reply) then refuse("FK_MALFORMED", "the reply is not a list of piles") end
  same_cards(data.piles, reply, "exchange")
  if #reply ~= #(data.piles or {}) then
    refuse("FK_BAD_COUNT", #reply .. " piles given back of " .. #(data.piles or {}))
  end
end

DATA_CHECKS.AskForArrangeCards = function(_, _, data, reply)
  if not is_list(reply) then refuse("FK_MALFORMED", "the reply is not a list of rows") end
  same_cards(data.cards, reply, "arrangement")
  for i, row in ipairs(reply) do
    local cap, lim = (data.capacities or {})[i], (data.limits or {})[i]
    count_in(row, lim, cap, "row " .. i)
  end
end

DATA_CHECKS.AskForMoveCardInBoard = function(_, _, data, reply)
  if type(reply) ~= "table" then refuse("FK_MALFORMED", "the reply is not a move") end
  for i, id in ipairs(data.cards or {}) do
    if id == reply.cardId and (data.cardsPosition or {})[i] == reply.pos then return end
  end
  refuse("FK_NOT_OFFERED", "moving card " .. short(reply.cardId) .. " from side " .. short(reply.pos)
    .. " was not offered")
end

DATA_CHECKS.AskForCardsAndChoice = function(_, _, data, reply)
  if type(reply) ~= "table" then refuse("FK_MALFORMED", "the reply is not cards and a choice") end
  local cards = reply.cards or {}
  if not is_list(cards) then refuse("FK_MALFORMED", "cards is not a list") end
  for _, id in ipairs(cards) do
    if not has(data.cards, id) or has(data.disabled, id) then
      refuse("FK_NOT_OFFERED", "card " .. tostring(id) .. " was not offered")
    end
  end
  no_duplicates(cards, "card")
  if has(data.cancel_choices, reply.choice) then return end
  if not has(data.choices, reply.choice) then
    refuse("FK_OPTION_NOT_OFFERED", "choice " .. short(reply.choice) .. " not among " .. short(data.choices))
  end
  count_in(cards, data.min, data.max, "cards")
end

DATA_CHECKS.AskForLuckCard = function() end  -- yes or no

-- A dialog of a package's own QML: judged when it is one whose data is known. The general choice of an
-- identity room at v0.5.22 is one: {component = {name = "ChooseInitialGeneralBox", model = {prop = {generals,
-- choiceNum, convertDisabled, ...}}}}, answered {"g1[,g2]", "kingdom,<k>"}.
DATA_CHECKS.CustomDialog = function(room, player, data, reply)
  local comp = type(data.component) == "table" and data.component or nil
  local prop = comp and type(comp.model) == "table" and type(comp.model.prop) == "table" and comp.model.prop or nil
  if not (comp and comp.name == "ChooseInitialGeneralBox" and prop and is_list(prop.generals)) then
    unjudged("a CustomDialog of a kind the check does not know")
  end
  if not (is_list(reply) and type(reply[1]) == "string") then
    refuse("FK_MALFORMED", "the general choice is not {generals, kingdom}")
  end
  local chosen = {}
  for g in reply[1]:gmatch("[^,]+") do chosen[#chosen + 1] = g end
  DATA_CHECKS.AskForGeneral(room, player, { prop.generals, prop.choiceNum or 1, prop.convertDisabled }, chosen)
end

-- Judge one reply: "ok" | "refused" (code, why) | "unjudged" (why).
local function judge_reply(req, player, reply)
  local command = req.command
  if reply == "__cancel" or reply == "" or reply == nil then
    return "ok", nil, "declined: the request's default applies"
  end
  local data = req.data and req.data[player.id]
  local room = req.room
  local fn
  if HANDLED[command] then
    fn = function() check_handler(room, player, command, data, reply) end
  elseif DATA_CHECKS[command] then
    if type(data) ~= "table" then return "unjudged", nil, command .. " with data of an unknown shape" end
    fn = function()
      local ok, err = guarded(room, player, nil, nil, function()
        DATA_CHECKS[command](room, player, data, reply)
      end)
      if not ok then error(err, 0) end
    end
  else
    return "unjudged", nil, "no rule for the request kind " .. tostring(command)
  end
  local ok, err = pcall(fn)
  if ok then return "ok" end
  if type(err) == "table" and err.sgsv then
    if err.unjudged then return "unjudged", nil, err.why end
    return "refused", err.code, err.why
  end
  return "unjudged", nil, "the check raised an error: " .. tostring(err)
end

local function now_us()
  local ok, v = pcall(os.getms)
  if ok and type(v) == "number" then return v end
  return os.clock() * 1e6
end

-- The server's CPU time in microseconds: the check's own cost, which the wall clock (now_us) overstates on a busy
-- machine by whatever ran in between.
local function cpu_us()
  return os.clock() * 1e6
end

local function run_check(req, player, reply)
  local started, cpu_started = now_us(), cpu_us()
  local verdict, code, why = judge_reply(req, player, reply)
  local effects = side_effects
  side_effects = 0
  return { verdict = verdict, code = code, why = why, effects = effects,
           us = math.floor(now_us() - started + 0.5), cpu = math.floor(cpu_us() - cpu_started + 0.5) }
end
tap.judge_reply = judge_reply

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
        local check
        if CHECK_REPLIES and (by == "client" or CHECK_AI_REPLIES) then
          check = run_check(self, player, reply)
        end
        got[player.id] = { by = by, raw = reply, check = check }
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
    if checking then
      -- a reply check is running: it must not speak to anyone (counted, and dropped)
      side_effects = side_effects + 1
      return
    end
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
