// ingestd live view (SPEC §14): the router, the refresh loop and the live stream.
// Plain JavaScript modules, no build step, no network beyond this daemon. Every number comes from the
// read API, i.e. from the same report functions as the CLI.

import { errorBanner, h, printable } from "./dom.js";
import { costView } from "./cost.js";
import { healthView } from "./health.js";
import { searchView } from "./search.js";
import { sessionView } from "./session.js";
import { sessionsView } from "./sessions.js";

// ---- router, refresh loop and the live stream -------------------------------------------------------

const main = document.getElementById("main");
const liveEl = document.getElementById("live");
let view = null;
let inflight = null;
let pending = undefined; // undefined: nothing queued; null: everything; object: a change

function showError(e) {
  main.dataset.state = "error";
  let banner = document.getElementById("view-error");
  if (!banner) {
    banner = errorBanner(e);
    banner.id = "view-error";
    main.prepend(banner);
  } else banner.textContent = printable(e.message || String(e));
}

function clearError() {
  const banner = document.getElementById("view-error");
  if (banner) banner.remove();
}

function merge(a, b) {
  if (a === undefined) return b;
  if (b === undefined) return a;
  if (a === null || b === null || !a.sessions || !b.sessions) return null;
  return { log_id: b.log_id, sessions: [...new Set([...a.sessions, ...b.sessions])] };
}

function refresh(change) {
  pending = merge(pending, change);
  if (inflight) return inflight;
  const v = view;
  inflight = (async () => {
    while (pending !== undefined && v === view) {
      // A view that is costly to recompute (health counts every table) redraws at most every minIntervalMs.
      const wait = (v.minIntervalMs || 0) - (Date.now() - (v.lastRefreshAt || 0));
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (v !== view) break;
      const c = pending;
      pending = undefined;
      v.lastRefreshAt = Date.now();
      try {
        await v.refresh(c);
        if (v === view) {
          clearError();
          main.dataset.state = "ready";
          main.dataset.refreshedAt = String(Date.now());
        }
      } catch (e) {
        if (v === view) showError(e);
      }
    }
  })().finally(() => {
    inflight = null;
    if (pending !== undefined) refresh(undefined);
  });
  return inflight;
}

// A link the page cannot read (a session id or a search that is not valid percent-encoding) says so.
function badLinkView(hash, what) {
  return {
    name: "bad-link",
    mount(el) {
      el.replaceChildren(
        h("p", { class: "banner error", role: "alert", id: "bad-link" }, `This link is malformed: ${hash} is not ${what} (its percent-encoding is broken).`),
        h("p", {}, h("a", { href: "#/sessions" }, "All sessions")),
      );
    },
    async refresh() {},
  };
}

function sessionId(encoded) {
  try {
    return decodeURIComponent(encoded);
  } catch (e) {
    return null; // URIError: a lone or truncated %-escape
  }
}

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [name, ...rest] = hash.split("/");
  const id = name === "session" && rest.length ? sessionId(rest.join("/")) : undefined;
  const query = name === "search" ? (rest.length ? sessionId(rest.join("/")) : "") : undefined;
  if (id === null) view = badLinkView(location.hash, "a session id");
  else if (query === null) view = badLinkView(location.hash, "a search");
  else if (id !== undefined) view = sessionView(id);
  else if (name === "cost") view = costView(refresh);
  else if (name === "health") view = healthView();
  else if (query !== undefined) view = searchView(query, refresh);
  else view = sessionsView(refresh);
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.view === (view.name === "session" ? "sessions" : view.name)) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  main.dataset.state = "loading";
  main.dataset.view = view.name;
  view.mount(main);
  pending = undefined;
  refresh(null);
}

function setLive(state, text) {
  liveEl.dataset.state = state;
  liveEl.textContent = text;
}

let source = null;
let backoffMs = 1000;
let boot = null;

function connect() {
  source = new EventSource("/api/live");
  source.addEventListener("hello", (ev) => {
    const doc = JSON.parse(ev.data);
    backoffMs = 1000;
    const restarted = boot !== null && boot !== doc.boot;
    boot = doc.boot;
    document.body.dataset.boot = String(doc.boot);
    setLive("on", restarted ? "live (daemon restarted)" : "live");
    refresh(null); // whatever happened while disconnected
  });
  source.addEventListener("change", (ev) => {
    const doc = JSON.parse(ev.data);
    document.body.dataset.logId = String(doc.log_id);
    refresh(doc);
  });
  source.addEventListener("error", () => {
    setLive("off", "reconnecting…");
    if (source.readyState === EventSource.CLOSED) {
      // Refused (e.g. too many streams) or the response was not a stream: try again later ourselves.
      source.close();
      setTimeout(connect, backoffMs);
      backoffMs = Math.min(backoffMs * 2, 15000);
    }
  });
}

window.addEventListener("hashchange", route);
route();
connect();
