// ingestd live view: DOM helpers, formatting and the read API client (SPEC §14).
//
// Every string from the database (titles, prompts, task descriptions, paths, tool names) is hostile:
// the DOM is built with createElement + text nodes (`h`) and never from HTML text.

export const BUCKETS = ["input", "output", "cache_read", "cache_write_5m", "cache_write_1h"];
export const BUCKET_LABELS = {
  input: "input",
  output: "output",
  cache_read: "cache read",
  cache_write_5m: "cache write 5m",
  cache_write_1h: "cache write 1h",
};
export const STATUSES = ["working", "waiting", "completed", "error", "unknown"];
export const TOOL_STATUSES = ["running", "completed", "failed", "denied", "interrupted"];
export const BROWSER_TZ = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
export const NF = new Intl.NumberFormat("en-US");

// ---- printable text: the terminal's rule (ingestd/report/printable.py) ----------------------------
//
// A control character (Unicode category Cc) or a bidi control in a title, a path or a tool name
// is shown as an escape (\x1b, \u202e), never applied: U+202E made "/home/u/exe.png/ptf" of a path
// and a fake "$0.00" of a title. The same characters and the same spelling as the CLI's
// printable_text (a browser test compares the two over every code point up to U+FFFF).
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

export function printable(s) {
  return s.replace(UNPRINTABLE, (c) => {
    const n = c.charCodeAt(0);
    return n < 0x100 ? "\\x" + n.toString(16).padStart(2, "0") : "\\u" + n.toString(16).padStart(4, "0");
  });
}

// attributes a person reads (a tooltip): printable too; others (href, data-*) keep the exact text
const READ_ATTRS = new Set(["title", "aria-label", "alt", "placeholder"]);

// ---- DOM helpers (text only) ------------------------------------------------------------------

export function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    el.append(k instanceof Node ? k : printable(String(k))); // a string becomes a Text node, never markup
  }
  return el;
}

export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : READ_ATTRS.has(k) ? printable(String(v)) : String(v));
  }
  return append(el, kids);
}

export function cls(value, known, prefix) {
  return prefix + (known.includes(value) ? value : "other");
}

export function sessionHref(id) {
  return "#/session/" + encodeURIComponent(id);
}

// ---- formatting -----------------------------------------------------------------------------------

export function fmtTokens(n) {
  return NF.format(n || 0);
}

export function pad(n) {
  return String(n).padStart(2, "0");
}

export function fmtTime(iso) {
  if (!iso) return h("span", { class: "muted" }, "—");
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return h("span", {}, iso);
  const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return h("time", { datetime: iso, title: iso }, text);
}

export function fmtDuration(ms) {
  if (ms === null || ms === undefined) return "—";
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const m = Math.floor(ms / 60000);
  return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function money(text) {
  const v = Number(text);
  if (v >= 1) return "$" + v.toFixed(2);
  const s = v.toFixed(4);
  return Number(s) === 0 ? "<$0.0001" : "$" + s;
}

// Cost of one usage block: the priced part, and unpriced usage apart; never "$0" for unpriced usage.
export function costEl(u) {
  const models = Object.keys(u.unpriced || {});
  const priced = u.cost_usd !== "0";
  const el = h("span", {
    class: "cost",
    "data-cost-usd": u.cost_usd,
    "data-tokens": u.tokens,
    "data-cost-complete": String(u.cost_complete),
  });
  if (!priced && models.length === 0) {
    append(el, [u.tokens ? "$0" : h("span", { class: "muted" }, "—")]);
    return el;
  }
  if (priced) append(el, [h("span", { title: `$${u.cost_usd} (exact, priced usage)` }, money(u.cost_usd))]);
  if (models.length) {
    const detail = models.map((m) => `${m}: ${fmtTokens(u.unpriced[m].tokens)} tokens, no price`).join("\n");
    append(el, [h("span", { class: "unpriced", title: detail }, priced ? "+ unpriced" : "unpriced")]);
  }
  return el;
}

export function statusEl(status) {
  return h("span", { class: "status " + cls(status, STATUSES, "status-") }, status || "—");
}

// ---- read API -------------------------------------------------------------------------------------

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

export async function api(path, params) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) if (v) url.searchParams.set(k, v);
  let resp;
  try {
    resp = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
  } catch (e) {
    throw new ApiError(0, "unreachable", "the daemon cannot be reached; retrying when it is back");
  }
  let doc = null;
  try {
    doc = await resp.json();
  } catch (e) {
    throw new ApiError(resp.status, "bad_response", `the daemon answered ${resp.status} without JSON`);
  }
  if (!resp.ok) {
    const err = (doc && doc.error) || {};
    throw new ApiError(resp.status, err.code, err.message);
  }
  return doc;
}

export function errorBanner(e) {
  return h("p", { class: "banner error", role: "alert" }, e.message || String(e));
}

export function labelled(text, control) {
  return h("label", {}, text, control);
}

// ---- long text, ids ---------------------------------------------------------------------------------

// Lines of text as text nodes with <br> between them: a newline stays a line break, every other
// control character an escape (printable); tabs become spaces.
export function textLines(text) {
  const out = [];
  String(text).replaceAll("\t", "    ").split(/\r?\n/).forEach((line, i) => {
    if (i) out.push(h("br", {}));
    out.push(line);
  });
  return out;
}

// A value cut to `n` characters, the rest on demand: a <details> whose summary is the start.
export function longText(text, n, className) {
  const s = String(text);
  const oneLine = s.replace(/\s+/g, " ").trim();
  if (s.length <= n && !s.includes("\n")) return h("span", { class: className || null }, s);
  return h(
    "details",
    { class: "long " + (className || "") },
    h("summary", {}, oneLine.length > n ? oneLine.slice(0, n) + "…" : oneLine),
    h("div", { class: "full" }, textLines(s)),
  );
}

// A short id for a list (its first 8 characters), the full id on hover and a button copying it.
export function shortId(id, className) {
  if (!id) return h("span", { class: "muted" }, "—");
  const copy = h("button", { type: "button", class: "copy", title: "copy the full id", "aria-label": "copy the full id " + id }, "copy");
  copy.addEventListener("click", (ev) => {
    ev.preventDefault();
    ev.stopPropagation();
    if (navigator.clipboard) navigator.clipboard.writeText(id).catch(() => {});
  });
  return h("span", { class: "shortid " + (className || ""), "data-full-id": id }, h("span", { class: "mono", title: id }, id.slice(0, 8)), copy);
}

// A session's name as people know it: its title, else its slug, else its first prompt (the API's
// `name` and `name_source`), marked so a slug or a prompt does not pass for a title.
export function sessionName(r, fallback) {
  if (!r.name) return h("span", { class: "muted" }, fallback);
  if (r.name_source === "title") return h("span", { class: "name-title" }, r.name);
  return h("span", { class: "name-" + (r.name_source === "slug" ? "slug" : "prompt"), title: r.name_source === "slug" ? "Claude Code's name for the session" : "the session's first prompt" }, r.name);
}

export function fmtBytes(n) {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
