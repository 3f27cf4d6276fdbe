// The backends table: status, catalog, and the health timeline of each
// backend as GET /v1/timeline draws it.

import { h, pill, shortDigest, timeEl, cssToken } from "./dom.js";

const key = (g, b) => g + "\u0000" + b;

// byBackend indexes GET /v1/timeline's rows by group and backend. The
// server draws the timelines (package timeline: the log's health events
// and every status change the controller reported, merged by time); the
// page only paints them.
export function byBackend(tl) {
  const m = new Map();
  for (const b of (tl && tl.backends) || []) m.set(key(b.group, b.backend), b);
  return m;
}

function fmtDur(ms) {
  const s = Math.round(ms / 1000);
  if (s < 60) return s + "s";
  if (s < 3600) return Math.round(s / 60) + "m";
  return (s / 3600).toFixed(1) + "h";
}

function timelineEl(segs, t0, now) {
  const span = Math.max(1, now - t0);
  const bar = h("div", { class: "timeline" });
  for (const x of segs || []) {
    const s = { from: Date.parse(x.from), to: Date.parse(x.to), status: x.status };
    if (!(s.to > s.from)) continue;
    const seg = h("div", { class: "tl s-" + cssToken(s.status), dataset: { status: cssToken(s.status) }, title: s.status + " · " + fmtDur(s.to - s.from) + " · from " + new Date(s.from).toLocaleTimeString() });
    seg.style.left = ((s.from - t0) / span) * 100 + "%";
    seg.style.width = Math.max(0.35, ((s.to - s.from) / span) * 100) + "%";
    bar.append(seg);
  }
  return bar;
}

// renderBackends fills the table body from the state and the timelines;
// it returns the counts by status.
export function renderBackends(tbody, state, tl) {
  const rows_ = byBackend(tl);
  const t0 = tl ? Date.parse(tl.from) : 0;
  const now = tl ? Date.parse(tl.to) : 0;
  const counts = { total: 0, advertisable: 0, byStatus: {} };
  const rows = [];
  for (const g of (state && state.groups) || []) {
    for (const b of g.backends || []) {
      counts.total++;
      if (b.advertisable) counts.advertisable++;
      counts.byStatus[b.status] = (counts.byStatus[b.status] || 0) + 1;
      const row = rows_.get(key(g.name, b.name));
      const last = row && row.last_change ? row.last_change : "";
      const tools = b.tools || [];
      const url = h("span", { class: "mono url", title: b.url }, b.url);
      const status = h("td", { class: "c-status" }, pill(b.status));
      if (b.reason) status.append(h("div", { class: "reason", title: b.reason }, b.reason));
      if (!b.advertisable && (b.status === "healthy" || b.status === "degraded")) status.append(h("div", { class: "reason" }, "not advertised"));
      rows.push(h("tr", { dataset: { backend: b.name, group: g.name, status: cssToken(b.status) }, class: b.advertisable ? "" : "down" },
        status,
        h("td", { class: "c-name" }, h("div", { class: "name" }, b.name), h("div", { class: "sub", title: b.transport || "streamable-http" }, g.name)),
        h("td", { class: "c-url" }, url),
        h("td", { class: "num mono", title: tools.slice(0, 60).join("\n") + (tools.length > 60 ? "\n…" : "") }, String(tools.length)),
        h("td", { class: "mono", title: b.digest || "" }, shortDigest(b.digest)),
        h("td", { class: "c-timeline" }, timelineEl(row ? row.segments : [], t0, now)),
        h("td", { class: "num" }, last ? timeEl(last) : h("span", { class: "muted" }, "—")),
        h("td", { class: "num mono" }, String(b.generation || "—")),
      ));
    }
  }
  if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: "8", class: "empty" }, "No backends configured.")));
  tbody.replaceChildren(...rows);
  counts.sinceLogBegan = !!(tl && tl.since_log_began);
  counts.span = now - t0;
  return counts;
}
