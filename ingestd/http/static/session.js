// ingestd live view: one session: its agent tree and its tool calls on a timeline per agent.

import { TOOL_STATUSES, api, append, cls, costEl, fmtBytes, fmtDuration, fmtTime, fmtTokens, h, longText, sessionHref, sessionName, shortId, statusEl, textLines } from "./dom.js";

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

// ---- the timeline ------------------------------------------------------------------------------------

// Activity separated by more than this is two stretches; the gap between them is idle time.
const IDLE_GAP_MS = 15 * 60 * 1000;
const GAP_PCT = 4; // the width a collapsed idle gap takes
export const TIMELINE_MODES = { last: "last stretch", active: "active spans", whole: "whole span" };

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many || one + "s"}`;
}

function fmtIdle(ms) {
  const m = Math.round(ms / 60000);
  if (m < 60) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} d ${hours % 24} h`;
}

// The stretches of activity: [start, end] of each call (a running one until the last activity) and each
// compaction, merged where they are at most IDLE_GAP_MS apart. Sorted; ms since the epoch.
function stretchesOf(items) {
  const sorted = items.filter((x) => !Number.isNaN(x[0])).sort((a, b) => a[0] - b[0]);
  const out = [];
  for (const [s, e] of sorted) {
    const last = out[out.length - 1];
    if (last && s - last.e <= IDLE_GAP_MS) last.e = Math.max(last.e, e);
    else out.push({ s, e });
  }
  return out;
}

// A time -> percent map over `segs` laid side by side, each as wide as its share of the time drawn
// (at least 3%), with GAP_PCT between two of them. null for a time outside every segment.
function scaleOver(segs) {
  const span = segs.reduce((a, g) => a + Math.max(g.e - g.s, 1000), 0);
  const weights = segs.map((g) => Math.max(g.e - g.s, 1000, span * 0.03));
  const total = weights.reduce((a, w) => a + w, 0);
  const avail = 100 - GAP_PCT * (segs.length - 1);
  let off = 0;
  const placed = segs.map((g, i) => {
    const w = (weights[i] / total) * avail;
    const p = { ...g, off, w };
    off += w + GAP_PCT;
    return p;
  });
  const pct = (t) => {
    for (const g of placed) if (t >= g.s && t <= g.e) return g.off + (g.e > g.s ? ((t - g.s) / (g.e - g.s)) * g.w : 0);
    return null;
  };
  return { placed, pct };
}

function timelineEl(tl, nodes, mode) {
  const t = (iso) => (iso ? new Date(iso).getTime() : NaN);
  if (!tl.tool_calls.length && !tl.compactions.length) return h("p", { class: "muted" }, "No tool calls recorded.");
  const known = [];
  for (const c of tl.tool_calls) known.push(t(c.started_at), t(c.ended_at));
  for (const c of tl.compactions) known.push(t(c.occurred_at));
  known.push(t(tl.started_at), t(tl.last_activity_at));
  const times = known.filter((x) => !Number.isNaN(x));
  const tEnd = Math.max(...times);
  const endOf = (c) => {
    const s = t(c.started_at);
    const e = t(c.ended_at);
    return Number.isNaN(e) ? (c.status === "running" ? tEnd : s) : Math.max(e, s);
  };
  const stretches = stretchesOf([...tl.tool_calls.map((c) => [t(c.started_at), endOf(c)]), ...tl.compactions.map((c) => [t(c.occurred_at), t(c.occurred_at)])]);
  if (!stretches.length) stretches.push({ s: Math.min(...times), e: tEnd });
  const segs = mode === "whole" ? [{ s: Math.min(...times), e: Math.max(tEnd, Math.min(...times) + 1000) }] : mode === "last" ? [stretches[stretches.length - 1]] : stretches;
  const { placed, pct } = scaleOver(segs);
  let hiddenCalls = 0;
  let hiddenCompactions = 0;
  const grid = h("div", { class: "timeline", id: "timeline", "data-mode": mode, "data-stretches": String(stretches.length) });
  for (const aid of tl.agents) {
    const node = nodes.get(aid);
    const label = aid === null ? "(no agent)" : (node ? agentLabel(node) + " " : "") + aid;
    const track = h("div", { class: "track", "data-agent-id": aid === null ? "" : aid });
    for (const c of tl.tool_calls.filter((x) => x.agent_id === aid)) {
      const s = t(c.started_at);
      const x0 = Number.isNaN(s) ? null : pct(s);
      if (x0 === null) {
        hiddenCalls += 1;
        continue;
      }
      const bar = h("span", {
        class: "bar " + cls(c.status, TOOL_STATUSES, "st-"),
        "data-tool-use-id": c.tool_use_id,
        title: `${c.tool_name || "?"}${c.input_summary ? ": " + c.input_summary.slice(0, 200) : ""} · ${c.status} · ${fmtDuration(c.duration_ms)} · ${c.started_at}`,
      });
      bar.style.left = x0 + "%"; // CSSOM, allowed by the style-src policy (no inline style attribute)
      bar.style.width = Math.max(0, (pct(endOf(c)) ?? x0) - x0) + "%";
      track.append(bar);
    }
    for (const c of tl.compactions.filter((x) => x.agent_id === aid)) {
      const at = t(c.occurred_at);
      const x = Number.isNaN(at) ? null : pct(at);
      if (x === null) {
        if (!Number.isNaN(at)) hiddenCompactions += 1;
        continue;
      }
      const mark = h("span", { class: "compaction", "data-boundary-id": c.boundary_id, title: `compaction (${c.trigger || "?"}) at ${c.occurred_at}` + (c.pre_tokens ? `, ${fmtTokens(c.pre_tokens)} tokens before` : "") });
      mark.style.left = x + "%";
      track.append(mark);
    }
    for (let i = 1; i < placed.length; i++) {
      const gap = h("span", { class: "gap", title: `idle ${fmtIdle(placed[i].s - placed[i - 1].e)}` });
      gap.style.left = placed[i - 1].off + placed[i - 1].w + "%";
      gap.style.width = GAP_PCT + "%";
      track.append(gap);
    }
    append(grid, [h("div", { class: "lane-label", title: label }, label), track]);
  }
  grid.dataset.hiddenCalls = String(hiddenCalls);
  grid.dataset.hiddenCompactions = String(hiddenCompactions);
  const axis = h("div", { class: "axis" });
  for (const [i, g] of placed.entries()) {
    if (i && g.w < 12) continue; // too narrow for a label: its gap's hover says how long the idle was
    const at = h("span", { class: "axis-at", title: new Date(g.s).toISOString() }, fmtTime(new Date(g.s).toISOString()));
    at.style.left = g.off + "%";
    axis.append(at);
    if (i) {
      const idle = h("span", { class: "axis-idle" }, `${fmtIdle(g.s - placed[i - 1].e)} idle`);
      idle.style.left = g.off - GAP_PCT + "%";
      axis.append(idle);
    }
  }
  const last = placed[placed.length - 1];
  const end = h("span", { class: "axis-end" }, fmtTime(new Date(last.e).toISOString()));
  axis.append(end);
  append(grid, [axis]);
  const legend = h("div", { class: "legend" }, ["completed", "running", "failed", "interrupted", "compaction"].map((s) => h("span", {}, h("span", { class: "swatch sw-" + s }), s)));
  const note =
    hiddenCalls || hiddenCompactions
      ? h("p", { class: "muted", id: "timeline-hidden" }, `${plural(hiddenCalls, "tool call")}${hiddenCompactions ? ` and ${plural(hiddenCompactions, "compaction")}` : ""} in ${plural(stretches.length - 1, "earlier stretch", "earlier stretches")} not drawn: choose "active spans" to see them.`)
      : null;
  return [legend, grid, note];
}

// The timeline with its mode control; the mode is `state.mode` (kept across redraws).
function timelinePanel(tl, nodes, state) {
  const panel = h("div", { id: "timeline-panel" });
  const select = h("select", { id: "timeline-mode", "aria-label": "timeline range" }, Object.entries(TIMELINE_MODES).map(([k, v]) => h("option", { value: k, selected: k === state.mode }, v)));
  const draw = () => panel.replaceChildren(h("div", { class: "controls" }, h("label", {}, "Show ", select)), ...[timelineEl(tl, nodes, state.mode)].flat().filter(Boolean));
  select.addEventListener("change", () => {
    state.mode = select.value;
    draw();
  });
  draw();
  return panel;
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

// Claude Code's own figures beside ingestd's (the tree's `claude_code`): compared, never added.
function ownTotalsEl(cc) {
  const parts = [];
  const st = cc && cc.cost_state;
  if (st) {
    const differ = st.models.flatMap((m) => m.differs.map((k) => `${m.model} ${k}: Claude Code ${m.claude_code[k]}, ingestd ${m.ingestd[k]}`));
    const verdict = st.tokens_agree ? (st.cost_agrees === false ? "tokens agree, cost differs" : "agrees with ingestd") : "tokens differ";
    parts.push(
      h(
        "span",
        { id: "cc-cost-state", "data-agrees": String(st.tokens_agree && st.cost_agrees !== false), title: differ.join("\n") || "every model's tokens equal ingestd's" },
        st.cost_usd === null ? "?" : "$" + st.cost_usd.toFixed(4),
        " (cost-state, ",
        h("span", { class: st.tokens_agree && st.cost_agrees !== false ? "muted" : "status status-error" }, verdict),
        ")",
      ),
    );
  }
  const line = cc && cc.status_line;
  if (line) parts.push(h("span", { id: "cc-status-line" }, (parts.length ? " · " : "") + "$" + line.cost_usd.toFixed(4) + " (status line, " + fmtTime(line.sampled_at) + ")"));
  return parts.length ? parts : h("span", { class: "muted" }, "—");
}

// What Claude Code's telemetry says of the session (the tree's `telemetry`): beside the exact figures, never added.
function telemetryEl(tm) {
  if (!tm) return h("span", { class: "muted" }, "— (no telemetry: `ingestd hooks install --otel` sends it)");
  const disagree = tm.disagreeing.map((d) => `${d.message_id}: ${d.mismatch}`).join("\n");
  const parts = [
    h(
      "span",
      { id: "telemetry-requests", "data-disagreements": String(tm.disagreements), title: disagree || "every matched request agrees with its message" },
      `${tm.events} API requests: ${tm.matched} matched to transcript messages (`,
      h("span", { class: tm.disagreements ? "status status-error" : "muted" }, `${tm.disagreements} disagree`),
      `), ${tm.otel_only} in telemetry only`,
      tm.otel_only ? [" (", fmtTokens(tm.otel_only_usage.tokens), " tokens ", costEl(tm.otel_only_usage), ", in the cost)"] : "",
      tm.claude_code_cost_usd === null ? "" : `; its cost $${tm.claude_code_cost_usd.toFixed(4)}`,
    ),
  ];
  if (tm.errors) {
    const latest = tm.api_errors.map((e) => `${fmtTime(e.occurred_at)} ${e.agent_id ? shortAgent(e.agent_id) : "no agent"}: ${e.error || "?"}`).join("\n");
    const who = Object.entries(tm.errors_by_agent).map(([a, n]) => `${a ? shortAgent(a) : "no agent"} ${n}`).join(", ");
    parts.push(" · ", h("span", { id: "telemetry-errors", class: "status status-error", title: latest }, `${tm.errors} API errors (${who})`));
  }
  return parts;
}

function shortAgent(id) {
  return id.length > 12 ? id.slice(0, 8) : id;
}

// The session's work by the prompt it answered (`/api/sessions/{id}/tree?by=prompt`).
function byPromptEl(doc) {
  const groups = doc.prompts.map((p) => [p, p.prompt_index === null ? "?" : String(p.prompt_index + 1)]);
  if (doc.no_prompt) groups.push([doc.no_prompt, "before"]);
  if (!groups.length) return h("p", { class: "muted" }, "No prompt ids in the log (Claude Code 2.1.196+ names them).");
  return h(
    "table",
    { class: "data", id: "by-prompt" },
    h("thead", {}, h("tr", {}, ["#", "Began", "Prompt", "Subagents", "Tool calls", "Tokens", "Cost"].map((x) => h("th", { scope: "col" }, x)))),
    h(
      "tbody",
      {},
      groups.map(([g, n], i) =>
        h(
          "tr",
          { "data-prompt-id": g.prompt_id || "" },
          h("td", { class: "num" }, n),
          h("td", {}, g.first_at ? fmtTime(g.first_at) : "—"),
          h("td", {}, g.text ? keyed(longText(g.text, 160, "prompt"), "by-prompt:" + i) : h("span", { class: "muted" }, n === "before" ? "before any prompt" : "(no text in the log)")),
          h("td", { class: "num" }, String(g.agents.length)),
          h("td", { class: "num" }, String(g.tool_calls.total)),
          h("td", { class: "num" }, fmtTokens(g.tokens)),
          h("td", { class: "num" }, costEl(g)),
        ),
      ),
    ),
  );
}

export function sessionView(id) {
  const body = h("div", { id: "session-body" });
  const timeline = { mode: "last" };
  return {
    name: "session",
    session: id,
    mount(main) {
      main.replaceChildren(h("p", {}, h("a", { href: "#/sessions" }, "← Sessions")), body);
    },
    async refresh(change) {
      if (change && change.sessions && !change.sessions.some((s) => s === id || s.startsWith(id))) return;
      const enc = encodeURIComponent(id);
      const [tree, tl, byPrompt] = await Promise.all([api(`/api/sessions/${enc}/tree`), api(`/api/sessions/${enc}/timeline`), api(`/api/sessions/${enc}/tree`, { by: "prompt" })]);
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
          ["Claude Code's own", ownTotalsEl(tree.claude_code)],
          ["Telemetry", h("span", { id: "telemetry" }, telemetryEl(tree.telemetry))],
          ...(tree.forked_from ? [["Forked from", h("span", { id: "forked-from" }, h("a", { href: sessionHref(tree.forked_from.session_id), class: "mono", title: tree.forked_from.session_id }, tree.forked_from.session_id.slice(0, 8)), ` (${tree.forked_from.evidence.replace(/_/g, " ")})`)]] : []),
          ...(tree.forks && tree.forks.length ? [["Forks", h("span", { id: "forks" }, tree.forks.flatMap((f, i) => [i ? ", " : "", h("a", { href: sessionHref(f.session_id), class: "mono", title: f.session_id }, f.session_id.slice(0, 8))]))]] : []),
          ...(tree.teammate_of ? [["Teammate of", h("span", { id: "teammate-of" }, `${tree.teammate_of.name} of `, h("a", { href: sessionHref(tree.teammate_of.session_id), class: "mono", title: tree.teammate_of.session_id }, tree.teammate_of.session_id.slice(0, 8)), ` (${tree.teammate_of.evidence.replace(/_/g, " ")})`)]] : []),
          ...(tree.teammate_sessions && tree.teammate_sessions.length ? [["Teammates", h("span", { id: "teammate-sessions" }, tree.teammate_sessions.flatMap((m, i) => [i ? ", " : "", h("span", { class: "teammate-session", "data-session-id": m.session_id }, m.name, " ", h("a", { href: sessionHref(m.session_id), class: "mono", title: m.session_id }, m.session_id.slice(0, 8)), " ", fmtTokens(m.tokens), " tokens ", costEl(m))]), " (their own sessions, not in this cost)")]] : []),
        ].map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
      );
      const sections = [
        h("h1", { id: "session-title" }, title),
        h("section", { class: "panel" }, meta),
        h("h2", {}, "Prompts"),
        h("section", { class: "panel", id: "prompts-panel" }, promptsEl(tl.prompts)),
        h("h2", {}, "By prompt"),
        h("section", { class: "panel", id: "by-prompt-panel" }, byPromptEl(byPrompt)),
        h("h2", {}, "Agents"),
        h("section", { class: "panel", id: "agent-tree" }, tree.tree ? h("ul", { class: "tree" }, treeItem(tree.tree, tl.spawns)) : h("p", { class: "muted" }, "No main agent recorded.")),
      ];
      if (tree.orphans.length) sections.push(h("h2", {}, "Orphans (no parent known)"), h("section", { class: "panel", id: "orphans" }, h("ul", { class: "tree" }, tree.orphans.map((n) => treeItem(n, tl.spawns)))));
      if (tree.compaction_agents.length) sections.push(h("h2", {}, "Compaction sidechains"), h("section", { class: "panel", id: "compaction-agents" }, h("ul", { class: "tree" }, tree.compaction_agents.map((n) => treeItem(n, tl.spawns)))));
      if (tree.unattributed) sections.push(h("h2", {}, "Usage with no agent"), h("section", { class: "panel", id: "unattributed" }, fmtTokens(tree.unattributed.tokens), " tokens ", costEl(tree.unattributed)));
      sections.push(h("h2", {}, "Tool calls"), h("section", { class: "panel" }, timelinePanel(tl, nodes, timeline), toolTable(tl, nodes)));
      const wasOpen = new Map(Array.from(body.querySelectorAll("details[data-key]"), (d) => [d.dataset.key, d.open]));
      body.replaceChildren(...sections);
      // What the reader opened or closed stays so while the session goes on (every hook redraws it).
      for (const d of body.querySelectorAll("details[data-key]")) if (wasOpen.has(d.dataset.key)) d.open = wasOpen.get(d.dataset.key);
    },
  };
}
