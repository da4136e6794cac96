// Shared by the pages: the JSON API, escaping, and how cards, codes and rule citations are shown.
// Everything the pages show about a game comes from the server (the engine computes every state).

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

/** Fetch a JSON document from the API; ApiError with the server's message on failure. */
export async function api(path, options = {}) {
  let response;
  try {
    response = await fetch(path, options);
  } catch (err) {
    throw new ApiError(0, `the server cannot be reached (${err.message})`);
  }
  let doc = null;
  try {
    doc = await response.json();
  } catch {
    doc = null;
  }
  if (!response.ok) {
    throw new ApiError(response.status, (doc && doc.error) || `${response.status} ${response.statusText}`);
  }
  return doc;
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
