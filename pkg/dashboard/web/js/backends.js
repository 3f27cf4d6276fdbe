// The backends table: status, catalog, and a health timeline built from
// the health events of the log.

import { h, pill, shortDigest, timeEl, cssToken } from "./dom.js";

const key = (g, b) => g + "\u0000" + b;

// statusAfter is a backend's status once event e applied.
function statusAfter(e) {
  switch (e.kind) {
    case "health_changed": return (e.health && e.health.to) || "unknown";
    case "backend_added": return "unknown";
    case "backend_removed": return "absent";
    default: return null;
  }
}

// statusBefore is a backend's status before event e applied.
function statusBefore(e) {
  switch (e.kind) {
    case "health_changed": return (e.health && e.health.from) || "unknown";
    case "backend_added": return "absent";
    default: return null;
  }
}

// history groups the status-changing events by backend, oldest first.
export function history(events) {
  const m = new Map();
  for (const e of events) {
    if (!e.backend || statusAfter(e) === null) continue;
    const k = key(e.group, e.backend);
    let l = m.get(k);
    if (!l) m.set(k, (l = []));
    l.push({ t: Date.parse(e.time) || 0, gen: e.generation, before: statusBefore(e), after: statusAfter(e), reason: e.health ? e.health.reason : "" });
  }
  return m;
}

// segments cuts [t0, now] into runs of one status.
export function segments(changes, current, t0, now) {
  let status = null;
  for (const c of changes) if (c.t <= t0) status = c.after;
  const inside = changes.filter((c) => c.t > t0 && c.t <= now);
  if (status === null) status = inside.length ? (inside[0].before || "unknown") : current;
  const out = [];
  let start = t0;
  for (const c of inside) {
    if (c.t > start) out.push({ from: start, to: c.t, status });
    status = c.after;
    start = Math.max(start, c.t);
  }
  out.push({ from: start, to: now, status });
  return out;
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
  for (const s of segs) {
    const seg = h("div", { class: "tl s-" + cssToken(s.status), title: s.status + " · " + fmtDur(s.to - s.from) + " · from " + new Date(s.from).toLocaleTimeString() });
    seg.style.left = ((s.from - t0) / span) * 100 + "%";
    seg.style.width = Math.max(0.35, ((s.to - s.from) / span) * 100) + "%";
    bar.append(seg);
  }
  return bar;
}

// renderBackends fills the table body; it returns the counts by status.
// origin is when the log began, when the page holds its first event (the
// timeline then starts there rather than in a time before the fleet).
export function renderBackends(tbody, state, events, windowMs, origin = 0, now = Date.now()) {
  const hist = history(events);
  let t0 = now - windowMs;
  if (origin && origin > t0) t0 = Math.min(origin - 1000, now - 10000);
  const counts = { total: 0, advertisable: 0, byStatus: {} };
  const rows = [];
  for (const g of (state && state.groups) || []) {
    for (const b of g.backends || []) {
      counts.total++;
      if (b.advertisable) counts.advertisable++;
      counts.byStatus[b.status] = (counts.byStatus[b.status] || 0) + 1;
      const changes = hist.get(key(g.name, b.name)) || [];
      const last = changes.length ? changes[changes.length - 1] : null;
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
        h("td", { class: "c-timeline" }, timelineEl(segments(changes, b.status, t0, now), t0, now)),
        h("td", { class: "num" }, last ? timeEl(new Date(last.t).toISOString()) : h("span", { class: "muted" }, "—")),
        h("td", { class: "num mono" }, String(b.generation || "—")),
      ));
    }
  }
  if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: "8", class: "empty" }, "No backends configured.")));
  tbody.replaceChildren(...rows);
  counts.span = now - t0;
  return counts;
}
