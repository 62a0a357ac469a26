// ingestd live view: one session: its agent tree and its tool calls on a timeline per agent.

import { TOOL_STATUSES, api, append, cls, costEl, fmtBytes, fmtDuration, fmtTime, fmtTokens, h, longText, sessionName, shortId, statusEl, textLines } from "./dom.js";

// A <details> the live view redraws keeps its place: `key` names it across redraws (see keepOpen).
function keyed(el, key) {
  if (el && el.tagName === "DETAILS") el.dataset.key = key;
  return el;
}

function agentLabel(node) {
  if (node.type === "main") return "main";
  return node.subagent_type || (node.is_compaction ? "compaction" : "subagent");
}

function spawnEl(spawn, agentId) {
  if (!spawn || (!spawn.prompt && !spawn.answer)) return null;
  return h(
    "div",
    { class: "spawn" },
    spawn.prompt ? h("div", { class: "spawn-prompt" }, h("span", { class: "label" }, "prompt "), keyed(longText(spawn.prompt, 160), "spawn-prompt:" + agentId)) : null,
    spawn.answer ? h("div", { class: "spawn-answer" }, h("span", { class: "label" }, "answer "), keyed(longText(spawn.answer, 160), "spawn-answer:" + agentId)) : null,
  );
}

function agentCard(node, spawns) {
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
    spawnEl((spawns || {})[node.agent_id], node.agent_id),
  );
}

// Both walk the tree with a stack of their own, not recursion: a chain of agents is as deep as
// it is (SPEC §4.3), and the CLI and the API serve chains thousands of agents deep.
function treeItem(root, spawns) {
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
        ? h("li", {}, agentCard(node, spawns))
        : h("li", {}, h("details", { open: true, "data-key": "agent:" + node.agent_id }, h("summary", {}, agentCard(node, spawns)), h("ul", {}, kids.map((c) => built.get(c))))),
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
        title: `${c.tool_name || "?"}${c.input_summary ? ": " + c.input_summary.slice(0, 200) : ""} · ${c.status} · ${fmtDuration(c.duration_ms)} · ${c.started_at}`,
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

function resultEl(r) {
  if (!r) return h("span", { class: "muted" }, "—");
  return h("span", { class: r.is_error ? "result-error" : "result-ok" }, `${r.is_error ? "error" : "ok"} · ${fmtBytes(r.size_bytes)}`);
}

// What a call did: its input in one line, and on demand the whole input and the start of its result.
function inputEl(c) {
  if (!c.input_summary && !c.input && !c.result) return h("span", { class: "muted" }, "—");
  const body = [];
  if (c.input) body.push(h("div", { class: "label" }, "input"), h("div", { class: "block mono" }, textLines(c.input)));
  if (c.result) body.push(h("div", { class: "label" }, `result (${fmtBytes(c.result.size_bytes)}${c.result.is_error ? ", an error" : ""})`), h("div", { class: "block mono" }, textLines(c.result.preview || "")));
  const line = (c.input_summary || "").replace(/\s+/g, " ");
  return h("details", { class: "call", "data-key": "call:" + c.tool_use_id }, h("summary", { class: "mono" }, line.length > 120 ? line.slice(0, 120) + "…" : line || "(input)"), body);
}

function toolTable(tl, nodes) {
  const cell = (label, kids, c) => h("td", { "data-label": label, class: c }, kids);
  return h(
    "details",
    { id: "tool-calls", "data-key": "tool-calls" },
    h("summary", {}, `All tool calls (${tl.tool_calls.length})`),
    h(
      "table",
      { class: "data" },
      h("thead", {}, h("tr", {}, ["Agent", "Tool", "Input", "Status", "Result", "Started", "Duration"].map((x) => h("th", { scope: "col" }, x)))),
      h(
        "tbody",
        {},
        tl.tool_calls.map((c) =>
          h(
            "tr",
            { "data-tool-use-id": c.tool_use_id },
            cell("Agent", c.agent_id === null ? "(no agent)" : [nodes.get(c.agent_id) ? agentLabel(nodes.get(c.agent_id)) + " " : "", shortId(c.agent_id)]),
            cell("Tool", c.tool_name || "?"),
            cell("Input", inputEl(c), "input"),
            cell("Status", c.status),
            cell("Result", resultEl(c.result)),
            cell("Started", fmtTime(c.started_at)),
            cell("Duration", fmtDuration(c.duration_ms)),
          ),
        ),
      ),
    ),
  );
}

function promptsEl(prompts) {
  if (!prompts || !prompts.length) return h("p", { class: "muted" }, "No prompts in the log.");
  return h("ol", { class: "prompts", id: "prompts" }, prompts.map((p, i) => h("li", {}, fmtTime(p.at), " ", keyed(longText(p.text, 240, "prompt"), "prompt:" + i))));
}

export function sessionView(id) {
  const body = h("div", { id: "session-body" });
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
      const title = sessionName(s, "Untitled session");
      const meta = h(
        "dl",
        { class: "meta" },
        [
          ["Session", [h("span", { class: "mono", id: "session-id" }, s.session_id), " ", shortId(s.session_id, "copy-only")]],
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
        h("h2", {}, "Prompts"),
        h("section", { class: "panel", id: "prompts-panel" }, promptsEl(tl.prompts)),
        h("h2", {}, "Agents"),
        h("section", { class: "panel", id: "agent-tree" }, tree.tree ? h("ul", { class: "tree" }, treeItem(tree.tree, tl.spawns)) : h("p", { class: "muted" }, "No main agent recorded.")),
      ];
      if (tree.orphans.length) sections.push(h("h2", {}, "Orphans (no parent known)"), h("section", { class: "panel", id: "orphans" }, h("ul", { class: "tree" }, tree.orphans.map((n) => treeItem(n, tl.spawns)))));
      if (tree.compaction_agents.length) sections.push(h("h2", {}, "Compaction sidechains"), h("section", { class: "panel", id: "compaction-agents" }, h("ul", { class: "tree" }, tree.compaction_agents.map((n) => treeItem(n, tl.spawns)))));
      if (tree.unattributed) sections.push(h("h2", {}, "Usage with no agent"), h("section", { class: "panel", id: "unattributed" }, fmtTokens(tree.unattributed.tokens), " tokens ", costEl(tree.unattributed)));
      sections.push(h("h2", {}, "Tool calls"), h("section", { class: "panel" }, timelineEl(tl, nodes), toolTable(tl, nodes)));
      const wasOpen = new Map(Array.from(body.querySelectorAll("details[data-key]"), (d) => [d.dataset.key, d.open]));
      body.replaceChildren(...sections);
      // What the reader opened or closed stays so while the session goes on (every hook redraws it).
      for (const d of body.querySelectorAll("details[data-key]")) if (wasOpen.has(d.dataset.key)) d.open = wasOpen.get(d.dataset.key);
    },
  };
}
