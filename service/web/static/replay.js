// The replay page: the table at any event (computed by the server's engine), the event timeline with
// violations in place, and moving around by event, turn, violation and point of view. The address
// holds the position and the view (#e=42&view=3), so a link opens exactly there.
import { api, cardHtml, codeChip, esc, resultText, ruleLinks, sourceTag, typing, verdictText } from "./common.js";

const $ = (id) => document.getElementById(id);
const SLOTS = { weapon: "weapon", armor: "armor", defensive_horse: "+1 horse", offensive_horse: "−1 horse" };
const MARKS = { chained: "chained 铁索", drunk: "drunk 酒" };
// Dark souls (暗魂): a dead character's soul that may still act, marked with its host's seat + 1.
const SOUL_MARKS = { luohan: "罗汉", xuanwu: "玄武", youzhu: "游助" };
const HIDDEN_MARKS = new Set(["analeptic_used"]);

const replayId = decodeURIComponent(location.pathname.split("/").filter(Boolean).pop() || "");
const page = {
  replay: null, timeline: null, positions: 0, events: 0,
  pos: 0, view: "open",
  byIndex: new Map(), // annotation index -> annotations
  violationPositions: [], turnStarts: [],
  cache: new Map(), asked: 0,
};

function seatCount() {
  return page.replay ? page.replay.info.seats.length : 0;
}

function readHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  const e = parseInt(h.get("e") ?? "0", 10);
  const v = (h.get("view") || "open").toLowerCase();
  const seat = parseInt(v, 10);
  return {
    pos: Number.isFinite(e) ? Math.max(0, Math.min(e, page.positions - 1)) : 0,
    view: v !== "open" && Number.isInteger(seat) && seat >= 0 && seat < seatCount() ? seat : "open",
  };
}

function writeHash() {
  const hash = `#e=${page.pos}&view=${page.view}`;
  if (location.hash !== hash) history.replaceState(null, "", hash);
}

// ------------------------------------------------------------------------------------------ the verdict

function renderVerdict() {
  const { info, verdict, origin } = page.replay;
  const bad = verdict.violation_count > 0 || !verdict.followed || verdict.header_violations.length > 0;
  const codes = verdict.violation_codes.map((c) => codeChip(c)).join(" ");
  const place = [info.tournament, info.round && `round ${info.round}`, info.table && `table ${info.table}`]
    .filter(Boolean).join(" · ");
  $("title").textContent = `${place || "replay"} · ${info.id.slice(0, 12)}`;
  document.title = `${place || "Replay"} ${info.id.slice(0, 8)} — sgs-verify`;
  const header = verdict.header_violations.map((v) =>
    `<li>${codeChip(v.code)} ${esc(v.message)} <span class="cite">${ruleLinks(v.rule)}</span></li>`).join("");
  const notices = verdict.header_notices.map((n) =>
    `<li>${codeChip(n.code)} (notice, not a violation) ${esc(n.message)} <span class="cite">${ruleLinks(n.rule)}</span></li>`).join("");
  // docs/rules.md#scoring: each seat's score; how it is made up shows on hover.
  const scores = (verdict.scores || []).map((x) => {
    const player = (info.seats[x.seat] || {}).player;
    return `<span class="score" title="${esc(x.basis)}">seat ${x.seat}${player ? " " + esc(player) : ""}: <b>${x.score}</b></span>`;
  }).join(" · ");
  const hint = verdict.violation_count > 0 ? ' <span class="muted">— press <kbd>N</kbd> for the next violation</span>' : "";
  $("verdict").innerHTML = `
    <div class="verdict-line"><span id="verdict-text" class="verdict ${bad ? "bad" : "ok"}">${esc(verdictText(verdict))}</span>
      ${codes}${hint}</div>
    <div class="muted">${esc(resultText(verdict.result))}${verdict.result.reason ? ": " + esc(verdict.result.reason) : ""}
      ${page.serverOnly ? ` · ${info.event_count} records of the recording server · <b>not replayed by this engine</b>`
        : ` · ${info.event_count} events · ${esc(info.ruleset)} · seed ${esc(info.seed)}`}
      ${verdict.followed || page.serverOnly ? "" : ` · <b>not followed</b> from event ${verdict.stopped_at}: ${esc(verdict.stopped_reason)}`}
      ${origin ? ` · from ${esc(origin)}` : ""}</div>
    ${scores ? `<div id="scores" class="muted">scores: ${scores}</div>` : ""}
    ${verdict.by_source_text ? `<div id="by-source" class="muted">who decided: ${esc(verdict.by_source_text)}</div>` : ""}
    ${serverHtml(verdict.server)}
    ${header || notices ? `<ul class="header-violations">${header}${notices}</ul>` : ""}`;
  const select = $("view");
  select.innerHTML = `<option value="open">everyone (open)</option>` + info.seats.map((s) =>
    `<option value="${s.seat}">seat ${s.seat}: ${esc(s.player || "")}</option>`).join("");
}

// The recording server's own verdicts (docs/freekill-bridge.md#two-engines), beside ours or alone.
function serverHtml(server) {
  if (!server) return "";
  const c = server.coverage;
  const refused = server.refused.map((r) =>
    `<li>${codeChip(r.code)} reply #${r.reply}${r.event !== null ? ` (event ${r.event})` : ""}, player ${esc(String(r.player))}${r.seat !== null ? ` (seat ${r.seat})` : ""}: ${esc(r.request)}: ${esc(r.why)}</li>`).join("");
  const disagree = server.disagreements.map((d) =>
    `<li>reply #${d.reply}${d.event !== null ? ` (event ${d.event})` : ""}: this engine ${d.engine_codes.length ? d.engine_codes.map(codeChip).join(" ") : "allowed it"}, FreeKill's rules ${esc(d.server)} ${esc(d.server_code)} ${esc(d.server_why)}</li>`).join("");
  return `<div id="server" class="muted">${server.not_replayed ? "judged by the recording server's rules only" : "also judged by the recording server's rules"}: ${esc(server.judge)} ·
    ${server.refused.length} client repl${server.refused.length === 1 ? "y" : "ies"} refused ·
    client replies ${c.client_replies}: judged by both ${c.both}, this engine only ${c.engine_only}, the server only ${c.server_only}, neither ${c.neither}
    ${c.why_unjudged.length ? `<span title="${esc(c.why_unjudged.join("\n"))}">(why)</span>` : ""}
    ${refused ? `<ul class="server-refused">${refused}</ul>` : ""}
    ${disagree ? `<div class="bad">the two engines disagree on ${server.disagreements.length} repl${server.disagreements.length === 1 ? "y" : "ies"}:</div><ul id="disagreements">${disagree}</ul>` : ""}</div>`;
}

// ------------------------------------------------------------------------------------------ the timeline

function annotationsAt(pos) {
  return page.byIndex.get(pos) || [];
}

function hasViolation(pos) {
  return annotationsAt(pos).some((a) => a.violations.length > 0);
}

function renderTimeline() {
  const items = [];
  const starts = new Map();
  for (const t of page.timeline.turns) if (t.position >= 0 && !starts.has(t.position)) starts.set(t.position, t);
  const events = page.replay.events;
  let lastRound = 0;
  for (let pos = 0; pos < page.positions; pos++) {
    const turn = starts.get(pos);
    if (turn) {
      if (turn.round !== lastRound) {
        items.push(`<li class="round-sep" role="presentation">Round ${turn.round}</li>`);
        lastRound = turn.round;
      }
      items.push(`<li class="turn-sep" role="presentation">Turn ${turn.turn} · seat ${turn.seat}</li>`);
    }
    const anns = annotationsAt(pos);
    const own = anns.find((a) => !a.derived);
    for (const a of anns.filter((x) => x.derived)) {
      const codes = a.violations.map((v) => codeChip(v.code)).join(" ");
      items.push(`<li class="derived${a.violations.length ? " bad" : ""}" role="presentation" data-for="${pos}">` +
        `<span class="mark">${a.violations.length ? "✗" : "·"}</span> derived: ${esc(a.text)} ${codes}</li>`);
    }
    const text = pos < page.events ? events[pos].text : "end of the log";
    const status = own ? own.status : (pos < page.events ? "" : "END");
    const bad = own && own.violations.length > 0;
    const codes = own ? own.violations.map((v) => codeChip(v.code)).join(" ") + (bad ? " " + sourceTag(own.source) : "") : "";
    items.push(`<li class="ev${bad ? " bad" : ""}${hasViolation(pos) ? " has-violation" : ""}" data-pos="${pos}">` +
      `<button type="button" data-pos="${pos}" tabindex="-1"><span class="idx">${pos < page.events ? pos : "end"}</span>` +
      `<span class="mark" aria-hidden="true">${bad ? "✗" : ""}</span> <span class="txt">${esc(text)}</span> ${codes}` +
      `${status && status !== "OK" && status !== "END" ? ` <span class="status s-${esc(status)}">${esc(status)}</span>` : ""}` +
      `</button></li>`);
  }
  const list = $("timeline");
  list.innerHTML = items.join("");
  list.addEventListener("click", (e) => {
    const target = e.target.closest("[data-pos], [data-for]");
    if (!target) return;
    go(parseInt(target.dataset.pos ?? target.dataset.for, 10));
  });
}

function markTimeline() {
  const list = $("timeline");
  const old = list.querySelector("li.ev.current");
  if (old) {
    old.classList.remove("current");
    old.querySelector("button").removeAttribute("aria-current");
  }
  const li = list.querySelector(`li.ev[data-pos="${page.pos}"]`);
  if (li) {
    li.classList.add("current");
    li.querySelector("button").setAttribute("aria-current", "step");
    // Scroll the list only (never the page): the current event stays in view.
    const top = li.offsetTop;
    if (top < list.scrollTop || top + li.offsetHeight > list.scrollTop + list.clientHeight) {
      list.scrollTop = Math.max(0, top - list.clientHeight / 2);
    }
  }
}

// ------------------------------------------------------------------------------------------ the table

function hpHtml(s) {
  const full = Math.max(0, Math.min(s.hp, s.max_hp));
  const pips = "●".repeat(full) + "○".repeat(Math.max(0, s.max_hp - full));
  return `<span class="hp${s.hp <= 1 ? " low" : ""}" title="HP ${s.hp} of ${s.max_hp}"><span class="pips" aria-hidden="true">${pips}</span> ${s.hp}/${s.max_hp}</span>`;
}

// One general (identity), or a main and a deputy (hegemony), face up or down; one the viewer may not see is "?".
function generalsHtml(s) {
  const kingdom = s.kingdom ? " · " + esc(s.kingdom) : "";
  if (!s.generals || s.generals.length < 2) {
    return s.general ? `<span class="general">${esc(s.general_zh || s.general)}${kingdom}</span>` : "";
  }
  const one = (g) => g.name
    ? `<span class="general${g.face_up ? "" : " face-down"}" title="${g.face_up ? "face up" : "face down"}">${esc(g.name_zh || g.name)}</span>`
    : '<span class="general face-down" title="face down, not shown to this seat">?</span>';
  return s.generals.map(one).join(" ") + (kingdom ? `<span class="kingdom">${kingdom}</span>` : "");
}

function seatHtml(s, state) {
  const roleText = s.role ? `<span class="role role-${esc(s.role)}">${esc(s.role)}</span>` : '<span class="role hidden-role" title="hidden">?</span>';
  const general = generalsHtml(s);
  const hand = s.hand
    ? `<div class="hand" data-hidden="false"><span class="label">hand ${s.hand_count}</span> ${s.hand.map((c) => cardHtml(c)).join(" ") || '<span class="muted">empty</span>'}</div>`
    : `<div class="hand" data-hidden="true"><span class="label">hand</span> <span class="count">${s.hand_count} card${s.hand_count === 1 ? "" : "s"}</span></div>`;
  const equip = Object.entries(s.equipment).map(([slot, c]) => `<span class="slot">${esc(SLOTS[slot] || slot)}</span> ${cardHtml(c)}`).join(" ");
  const judgment = s.judgment.map((c) => cardHtml(c)).join(" ");
  // Cards on the general (不屈's 创): the state lists them when the view may see them, else only counts them.
  const onGeneralCount = s.general_cards_count || 0;
  const onGeneral = !onGeneralCount ? "" : s.general_cards
    ? `<div class="on-general" data-hidden="false" data-count="${onGeneralCount}"><span class="label">on general ${onGeneralCount}</span> ${s.general_cards.map((c) => cardHtml(c)).join(" ")}</div>`
    : `<div class="on-general" data-hidden="true" data-count="${onGeneralCount}"><span class="label">on general</span> <span class="count">${onGeneralCount} card${onGeneralCount === 1 ? "" : "s"}</span></div>`;
  const rebornAs = (s.reborn_as || []).map((g) => g.name_zh || g.name);
  const reborn = rebornAs.length
    ? `<span class="reborn-tag" data-reborn="${rebornAs.length}" title="reborn as ${esc(rebornAs.join(", then "))}">reborn${rebornAs.length > 1 ? " ×" + rebornAs.length : ""}</span>`
    : "";
  const marks = Object.entries(s.marks).filter(([k]) => !HIDDEN_MARKS.has(k))
    .map(([k, v]) => `<span class="mark-tag mark-${esc(k)}">${esc(SOUL_MARKS[k] ? `${SOUL_MARKS[k]} soul → seat ${v - 1}` : MARKS[k] || k)}</span>`).join(" ");
  const classes = ["seat", s.current ? "current" : "", s.alive ? "" : "dead", state.view === s.seat ? "viewer" : "", s.chained ? "chained" : ""];
  return `<article class="${classes.filter(Boolean).join(" ")}" data-seat="${s.seat}" aria-label="seat ${s.seat}">
    <header><span class="seat-no">${s.seat}</span> <b class="player">${esc(s.player || "seat " + s.seat)}</b> ${roleText}
      ${s.current ? '<span class="turn-tag">turn</span>' : ""}${reborn}${s.alive ? "" : '<span class="dead-tag">dead</span>'}</header>
    <div class="line">${general} ${hpHtml(s)} ${marks}</div>
    ${hand}
    ${equip ? `<div class="equip"><span class="label">equipment</span> ${equip}</div>` : ""}
    ${judgment ? `<div class="judgment"><span class="label">judgment</span> ${judgment}</div>` : ""}
    ${onGeneral}
  </article>`;
}

function renderState(state) {
  if (state.error) {
    $("seats").innerHTML = state.seats.map((s) => `<article class="seat"><header><span class="seat-no">${s.seat}</span> <b>${esc(s.player)}</b></header></article>`).join("");
    $("center").innerHTML = `<p class="error">${esc(state.error)}</p>`;
    return;
  }
  $("seats").innerHTML = state.seats.map((s) => seatHtml(s, state)).join("");
  const processing = state.processing.length ? `<div><span class="label">processing</span> ${state.processing.map((c) => cardHtml(c)).join(" ")}</div>` : "";
  const phase = state.over ? "game over" : (state.turn ? `turn ${state.turn} (round ${state.round}) · seat ${state.current}${state.phase ? " · " + state.phase + " phase" : ""}` : "before the first turn");
  const result = state.result ? `<div class="result ${state.result.finished ? "" : "muted"}">${esc(resultText(state.result))}${state.result.reason ? ": " + esc(state.result.reason) : ""}</div>` : "";
  $("center").innerHTML = `
    <div class="piles"><span class="pile" id="draw-pile">draw pile <b>${state.draw_pile}</b></span>
      <span class="pile" id="discard-pile">discard pile <b>${state.discard_pile}</b></span></div>
    <div class="phase">${esc(phase)}</div>
    ${state.waiting ? `<div class="muted">waiting for ${esc(state.waiting)}</div>` : ""}
    ${processing}${result}
    ${state.engine_version !== page.replay.verdict.engine_version ? `<div class="muted small">table computed by ${esc(state.engine_version)}; the verdict was stored by ${esc(page.replay.verdict.engine_version)}</div>` : ""}`;
}

function annotationHtml(a) {
  // Beside each violation on a decision: who made it (client / AI / default), when the log says.
  const violations = a.violations.map((v) => `<li class="violation">${sourceTag(a.source)} ${codeChip(v.code)} <span class="message">${esc(v.message)}</span>
      <div class="cite">rule: ${ruleLinks(v.rule)}</div></li>`).join("");
  return `<div class="ann ${a.violations.length ? "bad" : ""}">
    <div><span class="status s-${esc(a.status)}">${esc(a.status)}</span>${a.derived ? ' <span class="muted">derived before this event</span>' : ""}
      ${!a.applied && !a.derived ? ' <span class="muted">(not applied: the game went on without it)</span>' : ""}
      <span class="txt">${esc(a.text)}</span>${a.source ? ` <span class="muted">· decided by</span> ${sourceTag(a.source)}` : ""}</div>
    ${violations ? `<ul class="violations">${violations}</ul>` : ""}</div>`;
}

function renderAnnotation() {
  const pos = page.pos;
  const anns = annotationsAt(pos);
  const head = pos < page.events ? `Event ${pos} of ${page.events}: ${esc(page.replay.events[pos].text)}` : `End of the log (after event ${page.events - 1})`;
  const own = anns.filter((a) => !a.derived);
  const derived = anns.filter((a) => a.derived);
  $("annotation").innerHTML = `<h2 id="event-title">${head}</h2>
    ${own.map(annotationHtml).join("")}
    ${derived.length ? `<details ${derived.some((a) => a.violations.length) ? "open" : ""}><summary>${derived.length} outcome${derived.length === 1 ? "" : "s"} derived before this event</summary>${derived.map(annotationHtml).join("")}</details>` : ""}
    ${!own.length && pos < page.events ? '<p class="muted">no annotation</p>' : ""}`;
}

// ------------------------------------------------------------------------------------------ moving

async function fetchState(pos, view) {
  const key = `${pos}|${view}`;
  let found = page.cache.get(key);
  if (!found) {
    found = api(`/api/replays/${encodeURIComponent(page.replay.info.id)}/state?event=${pos}&view=${view}`);
    page.cache.set(key, found);
    found.catch(() => page.cache.delete(key));
    if (page.cache.size > 400) page.cache.delete(page.cache.keys().next().value);
  }
  return found;
}

async function show() {
  const asked = ++page.asked;
  const { pos, view } = page;
  $("slider").value = String(pos);
  // (said as the panel's title says it: "event 15 of 900", events counted from 0)
  $("position").textContent = pos < page.events ? `event ${pos} of ${page.events}` : `end (${page.events} events)`;
  $("view").value = String(view);
  writeHash();
  markTimeline();
  renderAnnotation();
  document.body.dataset.position = String(pos);
  document.body.dataset.view = String(view);
  if (page.serverOnly) {
    $("center").innerHTML = `<p class="muted">No board: this engine did not replay this record
      (${esc(page.replay.verdict.server.not_replayed)}). The timeline is the recording server's own record; its
      rules judged each client reply (${esc(page.replay.verdict.server.judge)}).</p>`;
    document.body.dataset.shown = `${pos}|${view}`;
    return;
  }
  try {
    const state = await fetchState(pos, view);
    if (asked !== page.asked) return;
    renderState(state);
    document.body.dataset.shown = `${pos}|${view}`;
    if (pos + 1 < page.positions) fetchState(pos + 1, view).catch(() => {});
  } catch (err) {
    if (asked !== page.asked) return;
    $("center").innerHTML = `<p class="error">${esc(err.message)}</p>`;
  }
}

function go(pos, view = page.view) {
  if (!Number.isFinite(pos)) return;
  page.pos = Math.max(0, Math.min(pos, page.positions - 1));
  page.view = view;
  show();
}

function nextOf(list, pos) {
  return list.find((p) => p > pos);
}

function prevOf(list, pos) {
  for (let i = list.length - 1; i >= 0; i--) if (list[i] < pos) return list[i];
  return undefined;
}

function flash(message) {
  const el = $("position");
  el.textContent = message;
  setTimeout(() => show(), 1200);
}

function step(what, dir) {
  const pos = page.pos;
  if (what === "event") return go(pos + dir);
  const list = what === "turn" ? page.turnStarts : page.violationPositions;
  const to = dir > 0 ? nextOf(list, pos) : prevOf(list, pos);
  if (to === undefined) {
    if (what === "turn") return go(dir > 0 ? page.positions - 1 : 0);
    return flash(dir > 0 ? "no later violation" : "no earlier violation");
  }
  return go(to);
}

function onKey(e) {
  if (typing(e) || e.altKey || e.ctrlKey || e.metaKey) return;
  const k = e.key;
  let handled = true;
  if (k === "ArrowRight") step(e.shiftKey ? "turn" : "event", 1);
  else if (k === "ArrowLeft") step(e.shiftKey ? "turn" : "event", -1);
  else if (k === "n" || k === "N") step("violation", 1);
  else if (k === "p" || k === "P") step("violation", -1);
  else if (k === "o" || k === "O") go(page.pos, "open");
  else if (k === "Home") go(0);
  else if (k === "End") go(page.positions - 1);
  else if (/^[0-9]$/.test(k)) {
    const seat = parseInt(k, 10); // seats are numbered from 0, as everywhere on the page
    if (seat < seatCount()) go(page.pos, seat);
  } else handled = false;
  if (handled) e.preventDefault();
}

async function start() {
  try {
    const replay = await api(`/api/replays/${encodeURIComponent(replayId)}`);
    page.replay = replay;
    page.serverOnly = replay.info.judged_by === "server";
    // A record this engine did not replay: its server's records are the timeline; there is no board of ours.
    page.timeline = page.serverOnly ? { positions: replay.events.length + 1, turns: [] }
      : await api(`/api/replays/${encodeURIComponent(replayId)}/timeline`);
  } catch (err) {
    $("verdict").innerHTML = `<p class="error">${esc(err.message)}</p> <a href="/">back to the replays</a>`;
    // (nothing to move around in: the board, the controls and the timeline are not shown empty)
    for (const el of document.querySelectorAll("main .main-col, main .timeline-panel")) el.hidden = true;
    return;
  }
  page.events = page.serverOnly ? page.replay.events.length : page.replay.info.event_count;
  page.positions = page.timeline.positions;
  for (const a of page.replay.annotations) {
    if (!page.byIndex.has(a.index)) page.byIndex.set(a.index, []);
    page.byIndex.get(a.index).push(a);
  }
  page.violationPositions = [...page.byIndex.keys()].filter((i) => hasViolation(i)).sort((a, b) => a - b);
  page.turnStarts = [...new Set(page.timeline.turns.map((t) => t.position).filter((p) => p >= 0))].sort((a, b) => a - b);
  const slider = $("slider");
  slider.max = String(page.positions - 1);
  renderVerdict();
  renderTimeline();
  slider.addEventListener("input", () => go(parseInt(slider.value, 10)));
  $("c-prev").addEventListener("click", () => step("event", -1));
  $("c-next").addEventListener("click", () => step("event", 1));
  $("c-prev-turn").addEventListener("click", () => step("turn", -1));
  $("c-next-turn").addEventListener("click", () => step("turn", 1));
  $("c-prev-violation").addEventListener("click", () => step("violation", -1));
  $("c-next-violation").addEventListener("click", () => step("violation", 1));
  $("view").addEventListener("change", (e) => go(page.pos, e.target.value === "open" ? "open" : parseInt(e.target.value, 10)));
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", () => {
    const h = readHash();
    if (h.pos !== page.pos || h.view !== page.view) go(h.pos, h.view);
  });
  const h = readHash();
  document.body.dataset.ready = "true";
  go(h.pos, h.view);
}

start();
