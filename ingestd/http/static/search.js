// ingestd live view: full-text search (GET /api/search, the same answer as `ingestd search --json`).
// The query lives in the link (#/search/<words>), so a search can be reloaded and shared.

import { api, fmtTime, h, labelled, sessionHref } from "./dom.js";

const KINDS = [
  ["", "everything"],
  ["prompt", "user prompts"],
  ["text", "assistant text"],
  ["tool", "tool inputs"],
  ["title", "titles"],
  ["summary", "compaction summaries"],
];

// The snippet's parts as text nodes, the matched words in <mark>: never markup from the database.
function snippetEl(parts) {
  return h("span", { class: "snippet" }, parts.map((p) => (p.hit ? h("mark", {}, p.text) : p.text)));
}

function resultEl(r) {
  const what = r.kind === "tool" && r.label ? `tool ${r.label}` : r.kind;
  const name = r.title || r.slug || r.session_id.slice(0, 8);
  return h(
    "li",
    { class: "sresult", "data-session": r.session_id, "data-kind": r.kind },
    h(
      "div",
      { class: "shead" },
      h("a", { href: sessionHref(r.session_id), title: r.session_id }, name),
      " ",
      h("span", { class: "muted" }, what),
      r.agent_id ? h("span", { class: "muted", title: r.agent_id }, ` agent ${r.agent_id.slice(0, 8)}`) : null,
      " ",
      fmtTime(r.occurred_at),
      r.project ? h("span", { class: "muted mono", title: r.project }, " " + r.project) : null,
    ),
    snippetEl(r.snippet),
  );
}

export function searchView(query, refresh) {
  const input = h("input", { type: "search", id: "s-q", value: query, placeholder: "words to find", autocomplete: "off", spellcheck: "false" });
  const kind = h("select", { id: "s-kind" }, KINDS.map(([v, t]) => h("option", { value: v }, t)));
  const body = h("div", { id: "search-body" });
  const form = h(
    "form",
    {
      class: "controls",
      role: "search",
      onsubmit: (ev) => {
        ev.preventDefault();
        location.hash = "#/search/" + encodeURIComponent(input.value.trim());
      },
    },
    labelled("Search", input),
    labelled("in", kind),
    h("button", { type: "submit" }, "Search"),
  );
  const view = {
    name: "search",
    minIntervalMs: 2000,
    mount(main) {
      main.replaceChildren(h("h1", {}, "Search"), form, body);
      input.focus();
    },
    async refresh() {
      if (!query.trim()) {
        body.replaceChildren(h("p", { class: "muted" }, "Prompts, assistant text, tool inputs (commands, paths, patterns, URLs), titles and compaction summaries."));
        return;
      }
      const doc = await api("/api/search", { q: query, kind: kind.value, limit: "50" });
      body.replaceChildren(
        h("p", { class: "muted", id: "search-count" }, doc.count ? `${doc.count}${doc.limited ? "+" : ""} results` : "No results."),
        h("ol", { class: "sresults", id: "search-results" }, doc.results.map(resultEl)),
      );
    },
  };
  kind.addEventListener("change", () => refresh(null));
  return view;
}
