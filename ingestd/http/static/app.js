// ingestd live view (SPEC §14). Plain JavaScript, no build step, no network beyond this daemon.
//
// Every string from the database (titles, prompts, task descriptions, paths, tool names) is hostile:
// the DOM is built with createElement + textContent (the `h` helper) and never from HTML text.
// Every number comes from the read API, i.e. from the same report functions as the CLI.
"use strict";

(() => {
  const BUCKETS = ["input", "output", "cache_read", "cache_write_5m", "cache_write_1h"];
  const BUCKET_LABELS = {
    input: "input",
    output: "output",
    cache_read: "cache read",
    cache_write_5m: "cache write 5m",
    cache_write_1h: "cache write 1h",
  };
  const STATUSES = ["working", "waiting", "completed", "error", "unknown"];
  const TOOL_STATUSES = ["running", "completed", "failed", "denied", "interrupted"];
  const BROWSER_TZ = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  const NF = new Intl.NumberFormat("en-US");
  const SVG_NS = "http://www.w3.org/2000/svg";

  // ---- DOM helpers (text only) ------------------------------------------------------------------

  function append(el, kids) {
    for (const k of kids.flat(Infinity)) {
      if (k === null || k === undefined || k === false) continue;
      el.append(k instanceof Node ? k : String(k)); // a string becomes a Text node, never markup
    }
    return el;
  }

  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") el.className = v;
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? "" : String(v));
    }
    return append(el, kids);
  }

  function cls(value, known, prefix) {
    return prefix + (known.includes(value) ? value : "other");
  }

  function sessionHref(id) {
    return "#/session/" + encodeURIComponent(id);
  }

  // ---- formatting -----------------------------------------------------------------------------------

  function fmtTokens(n) {
    return NF.format(n || 0);
  }

  function pad(n) {
    return String(n).padStart(2, "0");
  }

  function fmtTime(iso) {
    if (!iso) return h("span", { class: "muted" }, "—");
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return h("span", {}, iso);
    const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
    return h("time", { datetime: iso, title: iso }, text);
  }

  function fmtDuration(ms) {
    if (ms === null || ms === undefined) return "—";
    if (ms < 1000) return `${ms} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
    const m = Math.floor(ms / 60000);
    return `${m} min ${Math.round((ms % 60000) / 1000)} s`;
  }

  function money(text) {
    const v = Number(text);
    if (v >= 1) return "$" + v.toFixed(2);
    const s = v.toFixed(4);
    return Number(s) === 0 ? "<$0.0001" : "$" + s;
  }

  // Cost of one usage block: the priced part, and unpriced usage apart; never "$0" for unpriced usage.
  function costEl(u) {
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

  function statusEl(status) {
    return h("span", { class: "status " + cls(status, STATUSES, "status-") }, status || "—");
  }

  // ---- read API -------------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message || code || `HTTP ${status}`);
      this.status = status;
      this.code = code;
    }
  }

  async function api(path, params) {
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

  // ---- views ------------------------------------------------------------------------------------------
  // A view has mount(main) (builds its controls once) and refresh(change) (refetches and redraws its data
  // region; change is the live event, or null for "everything").

  function errorBanner(e) {
    return h("p", { class: "banner error", role: "alert" }, e.message || String(e));
  }

  function labelled(text, control) {
    return h("label", {}, text, control);
  }

  function sessionsView() {
    const PAGE = 200;
    const state = { rows: [], since: "", until: "", project: "", status: "", q: "", limit: PAGE };
    const search = h("input", { type: "search", id: "f-search", placeholder: "id prefix or title", autocomplete: "off" });
    const project = h("select", { id: "f-project" });
    const status = h("select", { id: "f-status" }, h("option", { value: "" }, "any"), STATUSES.map((s) => h("option", { value: s }, s)));
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

    function projectsOf(rows) {
      return [...new Set(rows.map((r) => r.project_path || r.project_slug || ""))].filter((p) => p).sort();
    }

    function matches(r) {
      const q = state.q.trim().toLowerCase();
      if (state.project && (r.project_path || r.project_slug || "") !== state.project) return false;
      if (state.status && r.status !== state.status) return false;
      if (!q) return true;
      const title = (r.title || r.first_prompt || "").toLowerCase();
      return r.session_id.toLowerCase().startsWith(q) || title.includes(q);
    }

    function titleCell(r) {
      const link = h("a", { href: sessionHref(r.session_id), class: "title" });
      if (r.title) append(link, [r.title]);
      else if (r.first_prompt) append(link, [h("span", { class: "prompt-mark" }, "prompt"), r.first_prompt]);
      else append(link, [h("span", { class: "muted" }, "untitled")]);
      return [link, h("span", { class: "sid" }, r.session_id)];
    }

    function draw() {
      const keep = project.value;
      project.replaceChildren(h("option", { value: "" }, "all projects"), ...projectsOf(state.rows).map((p) => h("option", { value: p }, p)));
      project.value = projectsOf(state.rows).includes(keep) ? keep : "";
      state.project = project.value;
      const rows = state.rows.filter(matches);
      const capped = state.rows.length >= state.limit;
      more.hidden = !capped;
      count.textContent =
        `${rows.length} of ${capped ? "the " + state.rows.length + " most recent" : state.rows.length} sessions` +
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
      body.replaceChildren(rows.length || state.rows.length ? table : h("p", { class: "banner" }, "No sessions yet. Start Claude Code with the hooks installed, or run ingestd ingest."));
    }

    for (const [el, key] of [[search, "q"], [project, "project"], [status, "status"]]) {
      el.addEventListener("input", () => {
        state[key] = el.value;
        draw();
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
          h("div", { class: "controls", role: "search" }, labelled("Search", search), labelled("Project", project), labelled("Status", status), labelled("Active from", since), labelled("to", until)),
          count,
          body,
          more,
        );
      },
      async refresh(change) {
        const doc = await api("/api/sessions", { since: state.since, until: state.until, tz: BROWSER_TZ, limit: state.limit });
        state.rows = doc.rows;
        flash = new Set(change && change.sessions ? change.sessions : []);
        draw();
      },
    };
    return view;
  }

  function agentLabel(node) {
    if (node.type === "main") return "main";
    return node.subagent_type || (node.is_compaction ? "compaction" : "subagent");
  }

  function agentCard(node) {
    const facts = h(
      "span",
      { class: "facts" },
      h("span", {}, "own ", h("span", { class: "own-tokens" }, fmtTokens(node.own.tokens)), " tok ", costEl(node.own)),
      node.children && node.children.length ? h("span", {}, "subtree ", h("span", { class: "subtree-tokens" }, fmtTokens(node.subtree.tokens)), " tok ", costEl(node.subtree)) : null,
      h("span", {}, `${node.tool_calls.total} tool calls`),
      node.outcome_cause ? h("span", {}, node.outcome_cause) : null,
    );
    let edge = null;
    if (node.orphan_reason) edge = h("span", { class: "edge orphan", title: "no parent evidence is ever invented" }, node.orphan_reason.replaceAll("_", " "));
    else if (node.edge) edge = h("span", { class: "edge", title: `linked ${node.edge.created_at || ""} by ${node.edge.source}` }, "via " + node.edge.source);
    return h(
      "div",
      { class: "agent", "data-agent-id": node.agent_id, "data-status": node.status },
      statusEl(node.status),
      " ",
      h("span", { class: "name" }, agentLabel(node)),
      h("span", { class: "aid" }, node.agent_id),
      edge,
      node.description ? h("span", { class: "desc" }, node.description) : null,
      facts,
    );
  }

  function treeItem(node) {
    if (!node.children || node.children.length === 0) return h("li", {}, agentCard(node));
    return h("li", {}, h("details", { open: true }, h("summary", {}, agentCard(node)), h("ul", {}, node.children.map(treeItem))));
  }

  function walk(node, out) {
    out.set(node.agent_id, node);
    for (const c of node.children || []) walk(c, out);
    return out;
  }

  function timelineEl(tl, nodes) {
    const times = [];
    const t = (iso) => (iso ? new Date(iso).getTime() : NaN);
    for (const c of tl.tool_calls) times.push(t(c.started_at), t(c.ended_at));
    for (const c of tl.compactions) times.push(t(c.occurred_at));
    times.push(t(tl.started_at), t(tl.last_activity_at));
    const known = times.filter((x) => !Number.isNaN(x));
    if (!tl.tool_calls.length && !tl.compactions.length) return h("p", { class: "muted" }, "No tool calls recorded.");
    const t0 = Math.min(...known);
    const t1 = Math.max(...known, t0 + 1000);
    const pct = (x) => ((x - t0) / (t1 - t0)) * 100;
    const grid = h("div", { class: "timeline", id: "timeline" });
    for (const aid of tl.agents) {
      const node = nodes.get(aid);
      const label = aid === null ? "(no agent)" : (node ? agentLabel(node) + " " : "") + aid;
      const track = h("div", { class: "track", "data-agent-id": aid === null ? "" : aid });
      for (const c of tl.tool_calls.filter((x) => x.agent_id === aid)) {
        const s = t(c.started_at);
        if (Number.isNaN(s)) continue;
        const e = Number.isNaN(t(c.ended_at)) ? (c.status === "running" ? t1 : s) : t(c.ended_at);
        const bar = h("span", {
          class: "bar " + cls(c.status, TOOL_STATUSES, "st-"),
          "data-tool-use-id": c.tool_use_id,
          title: `${c.tool_name || "?"} · ${c.status} · ${fmtDuration(c.duration_ms)} · ${c.started_at}`,
        });
        bar.style.left = pct(s) + "%"; // CSSOM, allowed by the style-src policy (no inline style attribute)
        bar.style.width = Math.max(0, pct(e) - pct(s)) + "%";
        track.append(bar);
      }
      for (const c of tl.compactions.filter((x) => x.agent_id === aid)) {
        const at = t(c.occurred_at);
        if (Number.isNaN(at)) continue;
        const mark = h("span", { class: "compaction", "data-boundary-id": c.boundary_id, title: `compaction (${c.trigger || "?"}) at ${c.occurred_at}` + (c.pre_tokens ? `, ${fmtTokens(c.pre_tokens)} tokens before` : "") });
        mark.style.left = pct(at) + "%";
        track.append(mark);
      }
      append(grid, [h("div", { class: "lane-label", title: label }, label), track]);
    }
    append(grid, [h("div", { class: "axis" }, fmtTime(new Date(t0).toISOString()), fmtTime(new Date(t1).toISOString()))]);
    const legend = h("div", { class: "legend" }, ["completed", "running", "failed", "interrupted", "compaction"].map((s) => h("span", {}, h("span", { class: "swatch sw-" + s }), s)));
    return [legend, grid];
  }

  function toolTable(tl, nodes) {
    const cell = (label, kids, c) => h("td", { "data-label": label, class: c }, kids);
    return h(
      "details",
      { id: "tool-calls" },
      h("summary", {}, `All tool calls (${tl.tool_calls.length})`),
      h(
        "table",
        { class: "data" },
        h("thead", {}, h("tr", {}, ["Agent", "Tool", "Status", "Started", "Ended", "Duration"].map((x) => h("th", { scope: "col" }, x)))),
        h(
          "tbody",
          {},
          tl.tool_calls.map((c) =>
            h(
              "tr",
              { "data-tool-use-id": c.tool_use_id },
              cell("Agent", c.agent_id === null ? "(no agent)" : (nodes.get(c.agent_id) ? agentLabel(nodes.get(c.agent_id)) + " " : "") + c.agent_id),
              cell("Tool", c.tool_name || "?"),
              cell("Status", c.status),
              cell("Started", fmtTime(c.started_at)),
              cell("Ended", fmtTime(c.ended_at)),
              cell("Duration", fmtDuration(c.duration_ms)),
            ),
          ),
        ),
      ),
    );
  }

  function sessionView(id) {
    const body = h("div", { id: "session-body" });
    let openTools = false;
    return {
      name: "session",
      session: id,
      mount(main) {
        main.replaceChildren(h("p", {}, h("a", { href: "#/sessions" }, "← Sessions")), body);
      },
      async refresh(change) {
        if (change && change.sessions && !change.sessions.some((s) => s === id || s.startsWith(id))) return;
        const enc = encodeURIComponent(id);
        const [tree, tl] = await Promise.all([api(`/api/sessions/${enc}/tree`), api(`/api/sessions/${enc}/timeline`)]);
        const s = tree.session;
        const nodes = new Map();
        if (tree.tree) walk(tree.tree, nodes);
        for (const n of [...tree.orphans, ...tree.compaction_agents]) walk(n, nodes);
        const old = document.getElementById("tool-calls");
        if (old) openTools = old.open;
        const title = s.title ? s.title : s.first_prompt ? [h("span", { class: "prompt-mark" }, "prompt"), s.first_prompt] : h("span", { class: "muted" }, "Untitled session");
        const meta = h(
          "dl",
          { class: "meta" },
          [
            ["Session", h("span", { class: "mono" }, s.session_id)],
            ["Project", s.project_path || s.project_slug || "—"],
            ["Branch", s.git_branch || "—"],
            ["Claude Code", s.cc_version || "—"],
            ["Started", fmtTime(s.started_at)],
            ["Last activity", fmtTime(s.last_activity_at)],
            ["Status", [statusEl(s.status), s.end_reason ? ` (${s.end_reason})` : ""]],
            ["Agents", `${s.agents} (${s.subagents} subagents)`],
            ["Tokens", h("span", { id: "session-tokens" }, fmtTokens(s.tokens))],
            ["Cost", costEl(s)],
          ].map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
        );
        const sections = [
          h("h1", { id: "session-title" }, title),
          h("section", { class: "panel" }, meta),
          h("h2", {}, "Agents"),
          h("section", { class: "panel", id: "agent-tree" }, tree.tree ? h("ul", { class: "tree" }, treeItem(tree.tree)) : h("p", { class: "muted" }, "No main agent recorded.")),
        ];
        if (tree.orphans.length) sections.push(h("h2", {}, "Orphans (no parent known)"), h("section", { class: "panel", id: "orphans" }, h("ul", { class: "tree" }, tree.orphans.map(treeItem))));
        if (tree.compaction_agents.length) sections.push(h("h2", {}, "Compaction sidechains"), h("section", { class: "panel", id: "compaction-agents" }, h("ul", { class: "tree" }, tree.compaction_agents.map(treeItem))));
        if (tree.unattributed) sections.push(h("h2", {}, "Usage with no agent"), h("section", { class: "panel", id: "unattributed" }, fmtTokens(tree.unattributed.tokens), " tokens ", costEl(tree.unattributed)));
        sections.push(h("h2", {}, "Tool calls"), h("section", { class: "panel" }, timelineEl(tl, nodes), toolTable(tl, nodes)));
        body.replaceChildren(...sections);
        const details = document.getElementById("tool-calls");
        if (details) details.open = openTools;
      },
    };
  }

  function stackEl(totals, max) {
    const total = BUCKETS.reduce((a, b) => a + (totals[b] || 0), 0);
    const fill = h("span", { class: "fill" });
    fill.style.width = (max ? (total / max) * 100 : 0) + "%";
    for (const b of BUCKETS) {
      if (!totals[b]) continue;
      const seg = h("span", { class: "seg b-" + b, title: `${BUCKET_LABELS[b]}: ${fmtTokens(totals[b])} tokens` });
      seg.style.width = (totals[b] / total) * 100 + "%";
      fill.append(seg);
    }
    const label = BUCKETS.map((b) => `${BUCKET_LABELS[b]} ${fmtTokens(totals[b] || 0)}`).join(", ");
    return h("span", { class: "stack", role: "img", "aria-label": label }, fill);
  }

  function costSection(doc, by, heading) {
    const max = Math.max(0, ...doc.rows.map((r) => r.tokens));
    const label = (r) => (by === "day" ? r.day : by === "model" ? r.model : r.project_path || "(no project)");
    return h(
      "section",
      { class: "panel", id: "cost-by-" + by },
      h("h2", {}, heading),
      doc.rows.length ? null : h("p", { class: "muted" }, "No usage in this window."),
      doc.rows.map((r) =>
        h(
          "div",
          { class: "crow", "data-key": r.key },
          h("span", { class: "label", title: label(r) }, label(r)),
          stackEl(r.totals, max),
          h("span", { class: "nums" }, h("span", { class: "tokens" }, fmtTokens(r.tokens)), " tok ", costEl(r)),
        ),
      ),
    );
  }

  function costView() {
    const state = { tz: BROWSER_TZ, since: "", until: "" };
    const zones = typeof Intl.supportedValuesOf === "function" ? Intl.supportedValuesOf("timeZone") : [];
    const tz = h("input", { type: "text", id: "c-tz", value: BROWSER_TZ, list: "c-zones", autocomplete: "off", spellcheck: "false" });
    const since = h("input", { type: "date", id: "c-since" });
    const until = h("input", { type: "date", id: "c-until" });
    const body = h("div", { id: "cost-body" });
    const legend = h("div", { class: "legend" }, BUCKETS.map((b) => h("span", {}, h("span", { class: "swatch b-" + b }), BUCKET_LABELS[b])));
    const view = {
      name: "cost",
      mount(main) {
        main.replaceChildren(
          h("h1", {}, "Cost"),
          h("div", { class: "controls" }, labelled("Time zone", tz), h("datalist", { id: "c-zones" }, zones.map((z) => h("option", { value: z }))), labelled("From", since), labelled("to", until)),
          legend,
          body,
        );
      },
      async refresh() {
        const params = { tz: state.tz, since: state.since, until: state.until };
        const [day, model, project] = await Promise.all(["day", "model", "project"].map((by) => api("/api/cost", { ...params, by })));
        const totals = h(
          "section",
          { class: "panel", id: "cost-totals", "data-tokens": day.tokens, "data-cost-usd": day.cost_usd },
          h(
            "div",
            { class: "totals" },
            h("div", {}, h("div", { class: "muted" }, "Cost"), h("div", { class: "big" }, costEl(day))),
            h("div", {}, h("div", { class: "muted" }, "Tokens"), h("div", { class: "big tokens" }, fmtTokens(day.tokens))),
            h("div", {}, h("div", { class: "muted" }, "Billed messages"), h("div", { class: "big" }, fmtTokens(day.billed_messages))),
          ),
          h("dl", { class: "meta" }, BUCKETS.map((b) => [h("dt", {}, h("span", { class: "swatch b-" + b }), BUCKET_LABELS[b]), h("dd", { "data-bucket": b }, fmtTokens(day.totals[b]))])),
          Object.keys(day.unpriced).length
            ? h("p", { id: "cost-unpriced" }, "Not priced (no rate for these models; not in the cost above): ", Object.entries(day.unpriced).map(([m, u], i) => [i ? "; " : "", h("span", { class: "mono" }, m), ` ${fmtTokens(u.tokens)} tokens in ${u.messages} messages`]))
            : null,
          h("p", { class: "muted" }, `Window ${day.window.since || "start"} to ${day.window.until || "now"} (UTC, whole quarter-hours); days in ${day.tz}.`),
        );
        body.replaceChildren(totals, costSection(day, "day", `Per day (${day.tz})`), costSection(model, "model", "Per model"), costSection(project, "project", "Per project"));
      },
    };
    tz.addEventListener("change", () => {
      state.tz = tz.value.trim() || BROWSER_TZ;
      refresh(null);
    });
    for (const [el, key] of [[since, "since"], [until, "until"]]) {
      el.addEventListener("change", () => {
        state[key] = el.value;
        refresh(null);
      });
    }
    return view;
  }

  function healthView() {
    const body = h("div", { id: "health-body" });
    const dl = (pairs) => h("dl", { class: "meta" }, pairs.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v === null || v === undefined ? h("span", { class: "muted" }, "—") : v)]));
    const counts = (obj) => (Object.keys(obj).length ? Object.entries(obj).map(([k, n]) => `${k} ${n}`).join(", ") : "none");
    return {
      name: "health",
      minIntervalMs: 2000,
      mount(main) {
        main.replaceChildren(h("h1", {}, "Health"), body);
      },
      async refresh() {
        let health;
        try {
          health = await api("/api/health");
        } catch (e) {
          health = { status: "error", reason: e.message };
        }
        const st = await api("/api/status");
        const tail = st.tail;
        body.replaceChildren(
          h("section", { class: "panel", id: "health-daemon" }, h("h2", {}, "Daemon"), dl([
            ["Status", h("span", { class: "status " + (health.status === "ok" ? "status-completed" : "status-error"), id: "daemon-status" }, health.status)],
            ["Reason", health.reason || health.message || null],
            ["Schema", st.schema.version === null ? null : `${st.schema.version} (${st.schema.name})`],
            ["Database", st.database.path],
            ["Size", `${fmtTokens(st.database.size_bytes)} bytes (WAL ${fmtTokens(st.database.wal_bytes || 0)})`],
            ["Now", fmtTime(st.now)],
          ])),
          h("section", { class: "panel", id: "health-ingest" }, h("h2", {}, "Ingestion"), dl([
            ["Last transcript read", fmtTime(st.last_ingest_at)],
            ["Last hook", fmtTime(st.last_hook_at)],
            ["Files tracked", fmtTokens(tail.files_tracked)],
            ["Tail lag", `${fmtTokens(tail.bytes_behind_at_last_read)} bytes behind at the last read`],
            ["Since last ingest", tail.seconds_since_last_ingest === null ? null : fmtDuration(Math.round(tail.seconds_since_last_ingest * 1000))],
          ])),
          h("section", { class: "panel", id: "health-quarantine" }, h("h2", {}, "Skipped lines (quarantine)"), dl([
            ["Lines", h("span", { id: "skipped-lines" }, fmtTokens(st.skipped.lines))],
            ["By reason", counts(st.skipped.by_reason)],
          ])),
          h("section", { class: "panel" }, h("h2", {}, "Sessions and agents"), dl([
            ["Active sessions", String(st.sessions.active)],
            ["Sessions", counts(st.sessions.by_status)],
            ["Agents", counts(st.agents.by_status)],
            ["Unpriced models", Object.keys(st.unpriced).length ? Object.entries(st.unpriced).map(([m, u]) => `${m} (${fmtTokens(u.tokens)} tokens)`).join(", ") : "none"],
          ])),
          h("section", { class: "panel", id: "health-retention" }, h("h2", {}, "Retention"), dl([
            ["Last prune", st.last_prune ? [fmtTime(st.last_prune.ran_at), ` ${st.last_prune.target}: ${st.last_prune.rows} rows before `, fmtTime(st.last_prune.cutoff)] : "never"],
            ["Last backup", st.backup.last_backup_at ? fmtTime(st.backup.last_backup_at) : "never"],
          ])),
        );
      },
    };
  }

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
    } else banner.textContent = e.message || String(e);
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

  function route() {
    const hash = location.hash.replace(/^#\/?/, "");
    const [name, ...rest] = hash.split("/");
    if (name === "session" && rest.length) view = sessionView(decodeURIComponent(rest.join("/")));
    else if (name === "cost") view = costView();
    else if (name === "health") view = healthView();
    else view = sessionsView();
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
})();
