// Shared by the pages: the JSON API, escaping, and how cards, codes and rule citations are shown.
// Everything the pages show about a game comes from the server (the engine computes every state).

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// A server with tokens (docs/security.md) answers the API 401 without one: the page asks for it once, keeps
// it in this tab's sessionStorage (gone when the tab closes; never in a cookie, never in the address) and sends
// it as a bearer header with every API request.
const TOKEN_KEY = "sgs-verify-token";

function withToken(options) {
  const token = sessionStorage.getItem(TOKEN_KEY);
  const headers = new Headers(options.headers || {});
  if (token) headers.set("Authorization", `Bearer ${token}`);
  return { ...options, headers };
}

/** Ask for a token in a small dialog; the token, or null when cancelled. */
export function askForToken(reason) {
  return new Promise((resolve) => {
    const dialog = document.createElement("dialog");
    dialog.className = "token-dialog";
    dialog.innerHTML = `<form method="dialog"><p><strong>This server needs a token.</strong></p>` +
      `<p class="reason">${esc(reason || "")}</p>` +
      `<label>Token <input name="token" type="password" autocomplete="off" spellcheck="false" size="48" required></label>` +
      `<p class="hint">Kept in this tab only (sessionStorage) and sent as a bearer header.</p>` +
      `<menu><button value="cancel" formnovalidate>Cancel</button> <button value="ok" class="primary">Use token</button></menu></form>`;
    document.body.append(dialog);
    dialog.addEventListener("close", () => {
      const token = dialog.returnValue === "ok" ? dialog.querySelector("input").value.trim() : "";
      dialog.remove();
      resolve(token || null);
    });
    dialog.showModal();
  });
}

/** Fetch a JSON document from the API; ApiError with the server's message on failure. */
export async function api(path, options = {}) {
  for (let attempt = 0; ; attempt++) {
    let response;
    try {
      response = await fetch(path, withToken(options));
    } catch (err) {
      throw new ApiError(0, `the server cannot be reached (${err.message})`);
    }
    let doc = null;
    try {
      doc = await response.json();
    } catch {
      doc = null;
    }
    const message = (doc && doc.error) || `${response.status} ${response.statusText}`;
    if (response.status === 401 && attempt < 3) {
      sessionStorage.removeItem(TOKEN_KEY);
      const token = await askForToken(message);
      if (token) {
        sessionStorage.setItem(TOKEN_KEY, token);
        continue;
      }
    }
    if (!response.ok) {
      throw new ApiError(response.status, message);
    }
    return doc;
  }
}

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** A card as a small chip: name, suit and number (red suits in red), its id in the title. */
export function cardHtml(card, extra = "") {
  if (!card) return "";
  const as = card.as ? ` <span class="as">as ${esc(card.as)}</span>` : "";
  return `<span class="card${card.red ? " red" : ""}" title="${esc(card.en || card.name)} #${card.id}${extra ? " " + esc(extra) : ""}">` +
    `${esc(card.name)} <span class="suit">${esc(card.suit)}${esc(card.number)}</span>${as}</span>`;
}

/** A rule citation ("docs/rules.md#slash-limit; docs/log-format.md#setup") as links into the served documents. */
export function ruleLinks(rule) {
  if (!rule) return "";
  return rule.split(";").map((part) => part.trim()).filter(Boolean).map((part) => {
    const m = /^docs\/([a-z0-9_-]+\.md)(#[a-z0-9-]+)?$/.exec(part);
    if (!m) return esc(part);
    return `<a class="rule" href="/docs/${m[1]}${m[2] || ""}">${esc(part)}</a>`;
  }).join("; ");
}

export function codeChip(code, href = "") {
  const inner = esc(code);
  return href ? `<a class="code" href="${esc(href)}">${inner}</a>` : `<span class="code">${inner}</span>`;
}

// Who made a decision (the log's Event.source, in the annotation's "source"), for a reader.
export const SOURCE_LABELS = { client: "client", ai: "AI", default: "default" };
const SOURCE_TITLES = {
  client: "made by the player's own client (a human, or a modified client)",
  ai: "made by an AI standing in for the player",
  default: "nobody replied in time: the engine took its default",
};

/** A tag saying who made a decision ("" when the log does not say). */
export function sourceTag(source) {
  if (!source) return "";
  const label = SOURCE_LABELS[source] || source;
  return `<span class="source source-${esc(source)}" data-source="${esc(source)}" title="${esc(SOURCE_TITLES[source] || "")}">${esc(label)}</span>`;
}

export function verdictText(info) {
  if (info.violation_count > 0) {
    return `${info.violation_count} violation${info.violation_count === 1 ? "" : "s"}`;
  }
  if (!info.followed) return "not followed";
  return "clean";
}

export function resultText(result) {
  if (!result) return "";
  if (result.finished) return `${result.side} win${result.winners.length ? " (seats " + result.winners.join(", ") + ")" : ""}`;
  return "unfinished";
}

/** Is the key event meant for a text field (so the page's shortcuts stay out of the way)? */
export function typing(event) {
  const t = event.target;
  if (!t || !t.tagName) return false;
  if (t.isContentEditable) return true;
  if (t.tagName === "TEXTAREA" || t.tagName === "SELECT") return true;
  return t.tagName === "INPUT" && !["range", "checkbox", "button", "submit", "radio", "file"].includes(t.type);
}
