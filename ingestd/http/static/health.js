// ingestd live view: what `ingestd status` shows, and whether the daemon answers.

import { api, fmtDuration, fmtTime, fmtTokens, h } from "./dom.js";

export function healthView() {
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
        // a 503 names every problem in the one error shape: {"error": {"code": "unhealthy", "message"}}
        health = { status: e.code === "unhealthy" ? "unhealthy" : "error", reason: e.message };
      }
      const st = await api("/api/status");
      const tail = st.tail;
      body.replaceChildren(
        h("section", { class: "panel", id: "health-daemon" }, h("h2", {}, "Daemon"), dl([
          ["Status", h("span", { class: "status " + (health.status === "ok" ? "status-completed" : "status-error"), id: "daemon-status" }, health.status)],
          ["Reason", health.reason || null],
          ["Stalled", (st.stalls || []).map((s) => `${s.component}: retrying for ${s.seconds} s (${s.retries} retries): ${s.reason}`).join("; ") || null],
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
