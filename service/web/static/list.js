// The replay list: filters and paging (kept in the page's address), and uploading a log.
import { api, codeChip, esc, resultText, verdictText } from "./common.js";

const PAGE_SIZE = 25;
const FILTERS = ["player", "code", "tournament", "source", "judged_by", "violations"];
const $ = (id) => document.getElementById(id);

// Page tokens of the pages before this one (keyset paging only goes forward).
let previous = [];
let nextToken = "";

function readQuery() {
  const q = new URLSearchParams(location.search);
  const f = {};
  for (const name of FILTERS) f[name] = q.get(name) || "";
  f.page_token = q.get("page_token") || "";
  return f;
}

function fillForm(f) {
  $("f-player").value = f.player;
  $("f-code").value = f.code;
  $("f-tournament").value = f.tournament;
  $("f-source").value = ["client", "ai", "default"].includes(f.source) ? f.source : "";
  $("f-judged").value = ["engine", "server"].includes(f.judged_by) ? f.judged_by : "";
  $("f-violations").checked = f.violations === "true";
}

function formFilters() {
  return {
    player: $("f-player").value.trim(),
    code: $("f-code").value.trim().toUpperCase(),
    tournament: $("f-tournament").value.trim(),
    source: $("f-source").value,
    judged_by: $("f-judged").value,
    violations: $("f-violations").checked ? "true" : "",
    page_token: "",
  };
}

function queryString(f) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
  return q.toString();
}

function status(message, kind = "") {
  const el = $("status");
  el.textContent = message;
  el.className = `notice-line ${kind}`;
}

function playersHtml(seats) {
  return seats.map((s) => {
    const lord = s.role === "lord" ? ' <span class="role role-lord">lord</span>' : "";
    return `<span class="player">${esc(s.player || "seat " + s.seat)}${s.general ? " (" + esc(s.general) + ")" : ""}${lord}</span>`;
  }).join(", ");
}

function rowHtml(r) {
  const when = new Date(r.submitted_at);
  const date = isNaN(when) ? r.submitted_at : when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
  const place = [r.tournament, r.round && `round ${r.round}`, r.table && `table ${r.table}`].filter(Boolean).join(" · ");
  const bad = r.violation_count > 0 || !r.followed;
  const codes = r.violation_codes.map((c) => codeChip(c)).join(" ");
  return `<tr class="${bad ? "has-violations" : ""}" data-id="${esc(r.id)}">
    <td><a class="open" href="${esc(r.url)}" title="open replay ${esc(r.id)}">${esc(date)}</a><div class="muted mono">${esc(r.id.slice(0, 12))}</div></td>
    <td>${esc(place) || '<span class="muted">—</span>'}</td>
    <td class="players">${playersHtml(r.seats)}</td>
    <td><span class="verdict ${bad ? "bad" : "ok"}">${esc(verdictText(r))}</span><div class="muted">${esc(resultText(r.result))}</div>${r.judged_by === "server" ? '<div class="muted judged-server" title="this engine did not replay it: the recording server\'s own rules judged its client replies">judged by the server\'s rules</div>' : ""}</td>
    <td class="codes">${codes || '<span class="muted">—</span>'}</td>
    <td class="num">${r.event_count}</td>
  </tr>`;
}

async function load(f, { push = false } = {}) {
  const qs = queryString(f);
  if (push) history.pushState({ previous }, "", qs ? `?${qs}` : location.pathname);
  status("Loading…");
  let page;
  try {
    page = await api(`/api/replays?${queryString({ ...f, page_size: PAGE_SIZE })}`);
  } catch (err) {
    status(err.message, "error");
    return;
  }
  status("");
  const body = $("replays").querySelector("tbody");
  body.innerHTML = page.replays.map(rowHtml).join("");
  const filtered = FILTERS.some((k) => f[k]);
  $("total").textContent = `(${page.total_count}${filtered ? " matching" : ""})`;
  const empty = $("empty");
  empty.hidden = page.replays.length > 0;
  empty.innerHTML = filtered
    ? "No stored replay matches these filters."
    : "No replays are stored yet. Upload a log above, or submit some: <code>sgs-verify submit games/*.pb</code> " +
      "(or start the service with <code>sgs-verify serve --http 127.0.0.1:8080 --examples</code>, as <code>make run</code> does, for a few example games).";
  nextToken = page.next_page_token;
  $("p-next").disabled = !nextToken;
  $("p-prev").disabled = previous.length === 0 && !f.page_token;
  $("p-first").disabled = !f.page_token;
  $("p-where").textContent = pagerText(page.replays.length, page.total_count, previous.length, Boolean(f.page_token));
}

/** Where this page is in the list: "1–25 of 70", "26–50 of 70" (every page before is full: keyset paging). */
export function pagerText(shown, total, pagesBefore, hasToken) {
  if (!shown) return "";
  if (hasToken && pagesBefore === 0) return `${shown} more of ${total}`; // opened at a later page: no count of those before
  const first = pagesBefore * PAGE_SIZE + 1;
  return `showing ${first}–${first + shown - 1} of ${total}`;
}

/**
 * FreeKill record or our log, told by the file's first bytes (as `sgs-verify check` does: clients/files.py):
 * xz or gzip (our logs never are), JSON lines whose first line has a `seq` and a `kind` (a transcript's meta
 * line), or Qt's qCompress (a 4-byte length, then zlib's 0x78) in a file named .rep. The name decides the rest.
 */
export function sniffFormat(bytes, name) {
  const starts = (...magic) => magic.every((b, i) => bytes[i] === b);
  if (starts(0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00) || starts(0x1f, 0x8b)) return "freekill";
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  const lines = text.trimStart().split("\n");
  if (lines[0].startsWith("{") && lines.length > 1 && lines[1].trim()) {
    try {
      const first = JSON.parse(lines[0]);
      if (first && typeof first === "object" && "seq" in first && "kind" in first) return "freekill";
    } catch (err) {
      // not JSON lines: our JSON log is one object over many lines
    }
  }
  const lower = name.toLowerCase();
  if (bytes.length > 5 && bytes[4] === 0x78 && /\.(fk\.rep|rep)$/.test(lower)) return "freekill";
  return /\.(jsonl|fk\.rep|rep|xz|gz)$/.test(lower) ? "freekill" : "log";
}

async function formatFor(file) {
  const choice = $("u-format").value;
  if (choice !== "auto") return choice;
  const head = new Uint8Array(await file.slice(0, 64 * 1024).arrayBuffer());
  return sniffFormat(head, file.name);
}

async function upload(event) {
  event.preventDefault();
  const file = $("u-file").files[0];
  if (!file) {
    status("Choose a log file first.", "error");
    return;
  }
  const q = new URLSearchParams();
  const tournament = $("u-tournament").value.trim();
  if (tournament) q.set("tournament", tournament);
  if ((await formatFor(file)) === "freekill") {
    q.set("engine", "freekill");
    q.set("name", file.name);
  }
  $("u-send").disabled = true;
  status(`Verifying ${file.name}…`);
  try {
    const doc = await api(`/api/replays?${q}`, { method: "POST", body: file,
      headers: { "Content-Type": "application/octet-stream" } });
    if (doc.created) {
      status("Stored; opening its verdict…", "ok");
      location.assign(doc.replay.url);
      return;
    }
    // A log is stored once: the labels of its first submission stay. Say so, and stay on the page (the form
    // keeps what was typed) rather than open the replay as if the upload had been stored as typed.
    const was = doc.replay.tournament ? `under the tournament “${doc.replay.tournament}”` : "with no tournament";
    const typed = tournament && tournament !== doc.replay.tournament
      ? ` The tournament typed here, “${tournament}”, was not recorded: a log is stored once, with the labels of its first submission.`
      : "";
    const el = $("status");
    el.className = "notice-line ok";
    el.innerHTML = `${esc(file.name)} is already stored (submitted ${esc(doc.replay.submitted_at)} ${esc(was)}).${esc(typed)} ` +
      `<a href="${esc(doc.replay.url)}">Open its verdict</a>.`;
  } catch (err) {
    status(`${file.name}: ${err.message}`, "error");
  } finally {
    $("u-send").disabled = false;
  }
}

function start() {
  const f = readQuery();
  previous = (history.state && history.state.previous) || [];
  fillForm(f);
  $("filters").addEventListener("submit", (e) => {
    e.preventDefault();
    previous = [];
    load(formFilters(), { push: true });
  });
  $("f-clear").addEventListener("click", () => {
    fillForm({ player: "", code: "", tournament: "", source: "", judged_by: "", violations: "" });
    previous = [];
    load(formFilters(), { push: true });
  });
  $("p-next").addEventListener("click", () => {
    const cur = readQuery();
    previous = [...previous, cur.page_token];
    load({ ...cur, page_token: nextToken }, { push: true });
  });
  $("p-prev").addEventListener("click", () => {
    const cur = readQuery();
    const token = previous.length ? previous[previous.length - 1] : "";
    previous = previous.slice(0, -1);
    load({ ...cur, page_token: token }, { push: true });
  });
  $("p-first").addEventListener("click", () => {
    previous = [];
    load({ ...readQuery(), page_token: "" }, { push: true });
  });
  $("upload").addEventListener("submit", upload);
  window.addEventListener("popstate", (e) => {
    previous = (e.state && e.state.previous) || [];
    const g = readQuery();
    fillForm(g);
    load(g);
  });
  load(f);
  // (Tests and scripts wait for this before using the forms: until now a submit would reload the page.)
  document.body.dataset.ready = "true";
}

start();
