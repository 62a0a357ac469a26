// ingestd live view: the sessions list (newest activity first, or by cost or tokens; filters, search).
// Search, project and status are the read API's (over every session, then a page of PAGE rows more
// at a time); the project menu lists every project (/api/projects), not those of the rows shown. The
// menu is fetched on the first refresh, on a live change (a new session can bring a new project) and
// when it is PROJECTS_TTL_MS old, not on every keystroke or filter change.

import { BROWSER_TZ, STATUSES, api, append, costEl, fmtTime, fmtTokens, h, labelled, sessionHref, sessionName, shortId, statusEl } from "./dom.js";

export function sessionsView(refresh) {
  const PAGE = 200;
  const PROJECTS_TTL_MS = 30000;
  let projectsAt = null; // Date.now() of the last /api/projects answer
  const state = { rows: [], matched: 0, projects: [], since: "", until: "", project: "", status: "", q: "", sort: "last_activity", limit: PAGE };
  const search = h("input", { type: "search", id: "f-search", placeholder: "id prefix or title", autocomplete: "off" });
  const project = h("select", { id: "f-project" });
  const status = h("select", { id: "f-status" }, h("option", { value: "" }, "any"), STATUSES.map((s) => h("option", { value: s }, s)));
  // the order is the read API's, over every matching session (not the page shown)
  const SORTS = [["last_activity", "last activity"], ["cost", "cost"], ["tokens", "tokens"]];
  const sort = h("select", { id: "f-sort" }, SORTS.map(([v, label]) => h("option", { value: v }, label)));
  const since = h("input", { type: "date", id: "f-since" });
  const until = h("input", { type: "date", id: "f-until" });
  const count = h("p", { class: "muted", id: "sessions-count" });
  const body = h("div", { id: "sessions-body" });
  const more = h("button", { type: "button", id: "sessions-more", class: "more", hidden: true }, `Show ${PAGE} more`);
  more.addEventListener("click", () => {
    state.limit += PAGE;
    refresh(null);
  });
  let flash = new Set();

  function titleCell(r) {
    const link = h("a", { href: sessionHref(r.session_id), class: "title", title: r.name || null, "data-name-source": r.name_source || "none" });
    append(link, [sessionName(r, "untitled")]);
    return [link, h("span", { class: "sid" }, shortId(r.session_id))];
  }

  function draw() {
    const names = state.projects.map((p) => p.project);
    if (state.project && !names.includes(state.project)) names.push(state.project); // chosen, now without sessions
    project.replaceChildren(h("option", { value: "" }, "all projects"), ...names.map((p) => h("option", { value: p }, p)));
    project.value = state.project;
    const rows = state.rows;
    more.hidden = rows.length >= state.matched;
    const narrowed = state.q.trim() || state.project || state.status;
    count.textContent =
      `${rows.length} of ${state.matched} sessions${narrowed ? " matching" : ""}` +
      (state.since || state.until ? ` active in the chosen dates (${BROWSER_TZ})` : "");
    const cell = (label, kids, c) => h("td", { "data-label": label, class: c }, kids);
    const table = h(
      "table",
      { class: "data", id: "sessions-table" },
      h("thead", {}, h("tr", {}, ["Title", "Project", "Started", "Last activity", "Status", "Agents", "Tokens", "Cost"].map((t, i) => h("th", { scope: "col", class: i >= 5 ? "num" : null }, t)))),
      h(
        "tbody",
        {},
        rows.map((r) =>
          h(
            "tr",
            { "data-session-id": r.session_id, class: flash.has(r.session_id) ? "flash" : null },
            cell("Title", h("div", {}, titleCell(r))),
            cell("Project", h("span", { title: r.project_path || "" }, r.project_path || r.project_slug || "—")),
            cell("Started", fmtTime(r.started_at)),
            cell("Last activity", fmtTime(r.last_activity_at)),
            cell("Status", statusEl(r.status)),
            cell("Agents", h("span", { title: `${r.subagents} subagents` }, String(r.agents)), "num"),
            cell("Tokens", h("span", { class: "tokens" }, fmtTokens(r.tokens)), "num"),
            cell("Cost", costEl(r), "num"),
          ),
        ),
      ),
    );
    body.replaceChildren(rows.length ? table : h("p", { class: "banner" }, "No sessions yet. Start Claude Code with the hooks installed, or run ingestd ingest."));
  }

  let typing = null;
  for (const [el, key] of [[search, "q"], [project, "project"], [status, "status"], [sort, "sort"]]) {
    el.addEventListener("input", () => {
      state[key] = el.value;
      state.limit = PAGE;
      clearTimeout(typing);
      if (el === search) typing = setTimeout(() => refresh(null), 150); // one request per pause in typing
      else refresh(null);
    });
  }
  for (const [el, key] of [[since, "since"], [until, "until"]]) {
    el.addEventListener("change", () => {
      state[key] = el.value;
      refresh(null);
    });
  }

  const view = {
    name: "sessions",
    mount(main) {
      main.replaceChildren(
        h("h1", {}, "Sessions"),
        h("div", { class: "controls", role: "search" }, labelled("Search", search), labelled("Project", project), labelled("Status", status), labelled("Sort by", sort), labelled("Active from", since), labelled("to", until)),
        count,
        body,
        more,
      );
    },
    async refresh(change) {
      const menuDue = change || projectsAt === null || Date.now() - projectsAt > PROJECTS_TTL_MS;
      const [doc, projects] = await Promise.all([
        api("/api/sessions", {
          since: state.since,
          until: state.until,
          tz: BROWSER_TZ,
          limit: state.limit,
          search: state.q.trim(),
          project_is: state.project,
          status: state.status,
          sort: state.sort === "last_activity" ? "" : state.sort,
        }),
        menuDue ? api("/api/projects") : null,
      ]);
      state.rows = doc.rows;
      state.matched = doc.matched;
      if (projects) {
        state.projects = projects.projects;
        projectsAt = Date.now();
      }
      flash = new Set(change && change.sessions ? change.sessions : []);
      draw();
    },
  };
  return view;
}
