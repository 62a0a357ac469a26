// ingestd live view: cost per day (in a chosen zone) as a chart stacked by model, and per day, model
// and project as rows stacked by bucket.

import { BROWSER_TZ, BUCKETS, BUCKET_LABELS, api, append, costEl, fmtTokens, h, labelled } from "./dom.js";

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

// ---- the cost-per-day chart -------------------------------------------------------------------------

const MODEL_COLOURS = 6; // the costliest models get a colour each, the rest share "other"
const DAY_MS = 86400000;

function dayNumber(iso) {
  return Math.round(Date.parse(iso + "T00:00:00Z") / DAY_MS);
}

function dayString(n) {
  return new Date(n * DAY_MS).toISOString().slice(0, 10);
}

// Columns from `by=day,model` rows: every day from the first to the last (a day without usage is an
// empty column, so the x axis is time), or every week (starting Monday) when that is over 120 days.
// Each column: {label, models: Map(model -> {usd, tokens, unpricedTokens})}. Sums are for drawing
// only; every figure the page prints comes from the API.
export function chartColumns(rows) {
  if (!rows.length) return { unit: "day", columns: [] };
  const days = rows.map((r) => dayNumber(r.day));
  const first = Math.min(...days);
  const last = Math.max(...days);
  const weekly = last - first + 1 > 120;
  const start = (n) => (weekly ? n - ((new Date(n * DAY_MS).getUTCDay() + 6) % 7) : n);
  const step = weekly ? 7 : 1;
  const columns = new Map();
  for (let n = start(first); n <= last; n += step) columns.set(n, { label: dayString(n), models: new Map() });
  for (const r of rows) {
    const col = columns.get(start(dayNumber(r.day)));
    const m = col.models.get(r.model) || { usd: 0, tokens: 0, unpricedTokens: 0 };
    m.usd += Number(r.cost_usd);
    m.tokens += r.tokens;
    for (const u of Object.values(r.unpriced || {})) m.unpricedTokens += u.tokens;
    col.models.set(r.model, m);
  }
  return { unit: weekly ? "week" : "day", columns: [...columns.values()] };
}

function chartEl(doc) {
  const { unit, columns } = chartColumns(doc.rows);
  const section = h("section", { class: "panel", id: "cost-chart", "data-unit": unit });
  append(section, [h("h2", {}, `Cost per ${unit} by model (${doc.tz})`)]);
  if (!columns.length) return append(section, [h("p", { class: "muted" }, "No usage in this window.")]);
  const byModel = new Map();
  for (const c of columns) for (const [m, v] of c.models) byModel.set(m, (byModel.get(m) || 0) + v.usd);
  const ranked = [...byModel.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([m]) => m);
  const colour = (m) => (ranked.indexOf(m) < MODEL_COLOURS ? "m-" + ranked.indexOf(m) : "m-other");
  const max = Math.max(0, ...columns.map((c) => [...c.models.values()].reduce((a, v) => a + v.usd, 0)));
  const plot = h("div", { class: "chart", role: "img", "aria-label": `cost per ${unit}, ${columns.length} ${unit}s, stacked by model` });
  for (const c of columns) {
    const usd = [...c.models.values()].reduce((a, v) => a + v.usd, 0);
    const unpriced = [...c.models.values()].reduce((a, v) => a + v.unpricedTokens, 0);
    const lines = [...c.models.entries()].map(([m, v]) => `${m}: $${v.usd.toFixed(2)}${v.unpricedTokens ? ` + ${fmtTokens(v.unpricedTokens)} unpriced tokens` : ""}`);
    const col = h("div", {
      class: "col" + (unpriced ? " has-unpriced" : ""),
      "data-day": c.label,
      "data-usd": usd.toFixed(6),
      title: `${unit === "week" ? "week of " : ""}${c.label}: $${usd.toFixed(2)}${unpriced ? " (incomplete: unpriced usage)" : ""} · ${lines.join(" · ")}`,
    });
    const bar = h("div", { class: "colbar" });
    bar.style.height = (max ? (usd / max) * 100 : 0) + "%"; // CSSOM, allowed by the style-src policy
    for (const m of ranked) {
      const v = c.models.get(m);
      if (!v || !v.usd) continue;
      const seg = h("div", { class: "mseg " + colour(m), "data-model": m });
      seg.style.height = (v.usd / usd) * 100 + "%";
      bar.append(seg);
    }
    col.append(bar);
    plot.append(col);
  }
  const axis = h("div", { class: "chart-axis" }, h("span", {}, columns[0].label), h("span", { class: "muted" }, `max $${max.toFixed(2)} per ${unit}`), h("span", {}, columns[columns.length - 1].label));
  const shown = ranked.slice(0, MODEL_COLOURS);
  const legend = h(
    "div",
    { class: "legend", id: "chart-legend" },
    shown.map((m) => h("span", {}, h("span", { class: "swatch " + colour(m) }), m)),
    ranked.length > MODEL_COLOURS ? h("span", {}, h("span", { class: "swatch m-other" }), `${ranked.length - MODEL_COLOURS} more models`) : null,
  );
  return append(section, [plot, axis, legend]);
}

// The plan's limits (official, from the status line) and the 5-hour block running now.
function limitText(name, w) {
  if (!w || !w.official || w.official.used_percentage === null || w.official.used_percentage === undefined) return `${name}: —`;
  const reset = w.official.resets_at ? ` (resets ${fmtClock(w.official.resets_at)})` : "";
  return `${name}: ${w.official.used_percentage}%${reset}${w.official.flag ? " ?" : ""}`;
}

function fmtClock(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString("en-GB", { weekday: "short", hour: "2-digit", minute: "2-digit" });
}

function nowPanel(limits, blocks) {
  const a = blocks.active;
  const hasLimits = limits.windows.five_hour || limits.windows.seven_day;
  return h(
    "section",
    { class: "panel", id: "cost-now" },
    h("h2", {}, "Now"),
    h(
      "p",
      { id: "now-limits" },
      hasLimits
        ? [limitText("5-hour", limits.windows.five_hour), " · ", limitText("7-day", limits.windows.seven_day)]
        : h("span", { class: "muted" }, "No plan limits yet: `ingestd statusline install` records them (Pro and Max plans)."),
    ),
    h(
      "p",
      { id: "now-block", "data-cost-usd": a ? a.cost_usd : "" },
      a
        ? [`Block ${fmtClock(a.start)} to ${fmtClock(a.end)}: `, costEl(a), ` so far, $${Number(a.burn_usd_per_hour).toFixed(2)}/h, projected $${Number(a.projected_cost_usd).toFixed(2)} (${a.remaining_minutes} min left)`]
        : h("span", { class: "muted" }, "No 5-hour block running."),
    ),
  );
}

export function costView(refresh) {
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
      const [limits, blocks, perDayModel] = await Promise.all([
        api("/api/limits", { tz: state.tz }),
        api("/api/blocks", { active: "1", tz: state.tz }),
        api("/api/cost", { ...params, by: "day,model" }),
      ]);
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
      body.replaceChildren(nowPanel(limits, blocks), totals, chartEl(perDayModel), costSection(day, "day", `Per day (${day.tz})`), costSection(model, "model", "Per model"), costSection(project, "project", "Per project"));
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
