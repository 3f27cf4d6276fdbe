// Sessions by edge (GET /v1/edges): one card per edge with its sessions
// by class (the convergence verdicts of the sessions in use, and idle ones
// apart: no request for longer than the server's bound), and one page of
// session records.

import { h, pill, timeEl, shortID, empty, cssToken } from "./dom.js";

const CLASSES = ["converged", "incomplete", "stale", "unverifiable", "idle"];

// verdictBar is a stacked bar of counts by class.
export function verdictBar(counts, total) {
  const bar = h("div", { class: "vbar", title: CLASSES.filter((v) => counts[v]).map((v) => counts[v] + " " + v).join(", ") });
  for (const v of CLASSES) {
    const n = counts[v] || 0;
    if (!n) continue;
    const seg = h("div", { class: "vseg s-" + v });
    seg.style.width = (n / Math.max(1, total)) * 100 + "%";
    bar.append(seg);
  }
  return bar;
}

function edgeCard(e, selected, gen) {
  return h("button", { type: "button", class: "edge" + (selected ? " on" : ""), dataset: { edge: e.id } },
    h("div", { class: "edge-head" }, h("span", { class: "mono name" }, e.id || "(unnamed)"), h("span", { class: "count" }, String(e.sessions))),
    verdictBar(e.classes || {}, e.sessions),
    h("div", { class: "sub" },
      e.sessions ? (e.groups || []).join(", ") + " · gen " : "no sessions",
      e.sessions ? h("span", { class: "mono" }, e.min_applied_generation === e.max_applied_generation ? String(e.max_applied_generation) : e.min_applied_generation + "–" + e.max_applied_generation) : null),
    instances(e.stdio));
}

// instances lists an edge's own instances of stdio backends (its status
// record): state, process, restarts and why the last one ended.
function instances(list) {
  if (!list || !list.length) return null;
  return h("ul", { class: "stdio" }, ...list.map((i) =>
    h("li", { dataset: { stdio: i.backend }, title: i.last_error ? "last ended: " + i.last_error : "" },
      h("span", { class: "mono" }, i.backend), " ",
      h("span", { class: "pill s-" + cssToken(i.state) }, i.state),
      i.pid ? h("span", { class: "muted mono" }, " pid " + i.pid) : null,
      " · " + i.restarts + " restart" + (i.restarts === 1 ? "" : "s") + (i.restart_capped ? " (capped)" : ""),
      i.last_error ? h("div", { class: "reason" }, i.last_error) : null)));
}

// renderSessions fills the edge cards and the table; it returns the
// numbers for the tile.
export function renderSessions(edgesEl, tbody, infoEl, data, sel, gen) {
  if (!data || !data.available) {
    edgesEl.replaceChildren(empty("This controller reads no session records."));
    tbody.replaceChildren();
    infoEl.textContent = "";
    return null;
  }
  const cards = (data.edges || []).map((e) => edgeCard(e, sel.edge === e.id, gen));
  if (!cards.length) cards.push(empty(data.ready ? "No sessions." : "Reading session records…"));
  if (data.edges_truncated) cards.push(h("div", { class: "muted" }, "only the busiest edges are listed"));
  edgesEl.replaceChildren(...cards);
  const rows = (data.sessions || []).map((s) => {
    const behind = gen && s.applied_generation < gen;
    return h("tr", { dataset: { session: s.id, edge: s.edge } },
      h("td", { class: "mono", title: "session " + shortID(s.id, 16) }, shortID(s.id)),
      h("td", { class: "mono" }, s.edge),
      h("td", {}, s.group),
      h("td", { class: "mono" }, s.protocol_version || "—"),
      h("td", { class: "client" }, s.client || h("span", { class: "muted" }, "—")),
      h("td", { class: "num mono", title: behind ? "the controller is at " + gen : "the controller's generation" }, String(s.applied_generation),
        behind ? h("span", { class: "lag" }, " −" + (gen - s.applied_generation)) : null),
      h("td", { class: "verdict-cell", title: s.verdict_reason || "" }, h("span", { class: "verdict pill s-" + cssToken(s.class || s.verdict) }, s.class || s.verdict),
        h("div", { class: "reason" }, s.class === "idle" ? "no request for " + idleFor(data.idle_after_ms) + "; last verdict " + s.verdict : s.verdict_reason || "")),
      h("td", { class: "num" }, timeEl(s.last_seen)));
  });
  if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: "8", class: "empty" }, data.total ? "No session matches." : "No sessions.")));
  tbody.replaceChildren(...rows);
  const from = data.matched ? data.offset + 1 : 0;
  const to = data.offset + (data.sessions || []).length;
  infoEl.textContent = from + "–" + to + " of " + data.matched + (data.untracked ? " (" + data.untracked + " more not indexed)" : "");
  const classes = data.classes || {};
  return { total: data.total, converged: classes.converged || 0, idle: classes.idle || 0, classes };
}

function idleFor(ms) {
  const m = Math.round((ms || 0) / 60000);
  return m >= 1 ? "over " + m + " min" : "a while";
}

// applyChanges updates rows of the page in place from a sessions frame;
// it returns false when the page must be reloaded (new or removed rows).
export function applyChanges(data, frame) {
  if (!data || frame.more) return false;
  const byID = new Map((data.sessions || []).map((s, i) => [s.id, i]));
  let reload = (frame.removed || []).length > 0;
  for (const s of frame.changed || []) {
    const i = byID.get(s.id);
    if (i === undefined) { reload = true; continue; }
    data.sessions[i] = s;
  }
  return !reload;
}
