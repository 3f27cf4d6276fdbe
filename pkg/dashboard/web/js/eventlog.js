// The generation log: one row per event, newest first; a row opens to the
// full event (GET /v1/events?from=G&limit=1).

import { h, timeEl, cssToken } from "./dom.js";

const KIND = {
  health_changed: "health",
  catalog_changed: "catalog",
  backend_added: "added",
  backend_removed: "removed",
  policy_changed: "policy",
};

const MAX_PRE = 64 << 10;

function kv(rows) {
  const dl = h("dl", { class: "kv" });
  for (const [k, v] of rows) {
    if (v === undefined || v === null || v === "") continue;
    dl.append(h("dt", {}, k), v instanceof Node ? h("dd", {}, v) : h("dd", { class: "mono" }, String(v)));
  }
  return dl;
}

function chips(list, max = 80) {
  const box = h("div", { class: "chips" });
  for (const t of list.slice(0, max)) box.append(h("span", { class: "chip mono" }, t));
  if (list.length > max) box.append(h("span", { class: "muted" }, "+" + (list.length - max) + " more"));
  return box;
}

// detail renders a full event.
function detail(ev) {
  const rows = [
    ["generation", ev.generation],
    ["time", ev.time],
    ["controller", ev.controller_id],
    ["schema", ev.schema_version],
    ["group", ev.group],
    ["backend", ev.backend],
  ];
  if (ev.config) {
    rows.push(["url", ev.config.url], ["transport", ev.config.transport]);
    if (ev.config.headers) rows.push(["headers", Object.keys(ev.config.headers).join(", ") + " (references only)"]);
  }
  if (ev.health) {
    rows.push(["from → to", ev.health.from + " → " + ev.health.to], ["advertisable", String(ev.health.advertisable)], ["reason", ev.health.reason]);
  }
  if (ev.catalog) {
    rows.push(["digest", ev.catalog.digest], ["tools", chips(ev.catalog.tools || [])], ["resources", ev.catalog.resources], ["prompts", ev.catalog.prompts]);
    if (ev.catalog.invalid_tools && ev.catalog.invalid_tools.length) rows.push(["invalid tools", chips(ev.catalog.invalid_tools.map((t) => (t.name || "?") + ": " + (t.reason || "")), 20)]);
  }
  if (ev.authorization) rows.push(["policy digest", ev.authorization.digest || "none"]);
  if (ev.error) rows.push(["error", h("span", { class: "error" }, ev.error)]);
  let raw = JSON.stringify(ev, null, 2);
  if (raw.length > MAX_PRE) raw = raw.slice(0, MAX_PRE) + "\n…";
  return h("div", { class: "ev-detail" }, kv(rows), h("details", {}, h("summary", {}, "JSON"), h("pre", { class: "mono" }, raw)));
}

// renderEvents fills the list. open is the set of generations shown in
// full, details the full events fetched so far.
export function renderEvents(ol, events, filter, open, details, max = 200) {
  const text = (filter.text || "").toLowerCase();
  const items = [];
  for (let i = events.length - 1; i >= 0 && items.length < max; i--) {
    const e = events[i];
    if (filter.kind && e.kind !== filter.kind) continue;
    if (text && !((e.backend || "") + " " + (e.group || "")).toLowerCase().includes(text)) continue;
    const target = e.backend ? (e.group ? e.group + "/" : "") + e.backend : (e.kind === "policy_changed" ? "fleet" : "");
    const isOpen = open.has(e.generation);
    const to = e.health ? cssToken(e.health.to) : "";
    const row = h("div", { class: "ev-row", role: "button", tabindex: "0", "aria-expanded": isOpen ? "true" : "false", dataset: { gen: String(e.generation) } },
      h("span", { class: "caret" }, isOpen ? "▾" : "▸"),
      h("span", { class: "gen mono" }, "#" + e.generation),
      h("span", { class: "kind k-" + cssToken(e.kind) + (to ? " to-" + to : "") }, KIND[e.kind] || e.kind || "?"),
      h("span", { class: "target mono" }, target),
      h("span", { class: "summary" + (e.error ? " error" : "") }, e.summary || e.error || ""),
      timeEl(e.time));
    const li = h("li", { class: isOpen ? "open" : "", dataset: { gen: String(e.generation), kind: cssToken(e.kind) } }, row);
    if (isOpen) {
      const d = details.get(e.generation);
      li.append(d instanceof Error ? h("div", { class: "ev-detail error" }, d.message) : d ? detail(d) : h("div", { class: "ev-detail muted" }, "loading…"));
    }
    items.push(li);
  }
  if (!items.length) items.push(h("li", { class: "empty" }, events.length ? "No event matches the filter." : "The log is empty."));
  ol.replaceChildren(...items);
}
