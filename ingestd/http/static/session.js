// ingestd live view: one session: its agent tree and its tool calls on a timeline per agent.

import { TOOL_STATUSES, api, append, cls, costEl, fmtDuration, fmtTime, fmtTokens, h, statusEl } from "./dom.js";

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

// Both walk the tree with a stack of their own, not recursion: a chain of agents is as deep as
// it is (SPEC §4.3), and the CLI and the API serve chains thousands of agents deep.
function treeItem(root) {
  const built = new Map();
  const stack = [[root, false]];
  while (stack.length) {
    const [node, ready] = stack.pop();
    const kids = node.children || [];
    if (!ready && kids.length) {
      stack.push([node, true]);
      for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], false]);
      continue;
    }
    built.set(
      node,
      kids.length === 0
        ? h("li", {}, agentCard(node))
        : h("li", {}, h("details", { open: true }, h("summary", {}, agentCard(node)), h("ul", {}, kids.map((c) => built.get(c))))),
    );
  }
  return built.get(root);
}

function walk(root, out) {
  const stack = [root];
  while (stack.length) {
    const node = stack.pop();
    out.set(node.agent_id, node);
    const kids = node.children || [];
    for (let i = kids.length - 1; i >= 0; i--) stack.push(kids[i]);
  }
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

export function sessionView(id) {
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
      const title = s.title ? s.title : h("span", { class: "muted" }, "Untitled session");
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
