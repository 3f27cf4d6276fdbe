// Regions of a multi-region fleet (GET /v1/regions): this controller's
// own log and its NATS's mirrors of the other regions' logs.

import { h, pill } from "./dom.js";

// ago is a duration in nanoseconds since the mirror last heard from its
// origin; negative is never.
function ago(ns) {
  if (ns === undefined || ns === null) return "—";
  if (ns < 0) return "never";
  const s = ns / 1e9;
  if (s < 1) return "now";
  if (s < 60) return s.toFixed(s < 10 ? 1 : 0) + "s ago";
  if (s < 3600) return Math.floor(s / 60) + "m ago";
  return Math.floor(s / 3600) + "h ago";
}

// inactiveNs is how long a mirror may hear nothing from its origin before
// it is shown inactive (a live mirror hears a heartbeat every second).
const inactiveNs = 5e9;

// lag is a mirror's lag, the heads compared across the link; unknown
// ("?") when the origin could not be read, never 0 then.
function lag(r) {
  if (r.local) return "—";
  return r.lag === undefined || r.lag === null ? "?" : String(r.lag);
}

function state(r) {
  if (r.error || r.mirror_error) return ["unhealthy", "error"];
  if (r.local) return ["healthy", "local"];
  if ((r.mirror_active_ns ?? -1) < 0 || r.mirror_active_ns > inactiveNs) return ["degraded", "inactive"];
  if (r.lag === undefined || r.lag === null) return ["degraded", "origin unreachable"];
  if (r.lag) return ["degraded", "lagging"];
  return ["healthy", "mirror"];
}

function row(r) {
  const [status, label] = state(r);
  return h("tr", { dataset: { region: r.region } },
    h("td", { class: "mono name" }, r.region),
    h("td", null, pill(status, label)),
    h("td", { class: "num mono head" }, String(r.head || 0)),
    h("td", { class: "num mono lag" }, lag(r)),
    h("td", { class: "num active" }, r.local ? "—" : ago(r.mirror_active_ns)),
    h("td", { class: "error err" }, [r.error, r.mirror_error, r.origin_error].filter(Boolean).join("; ")));
}

// renderRegions fills the panel; it is hidden when there is nothing to
// show (a single-region controller).
export function renderRegions(card, tbody, countEl, list) {
  const rows = Array.isArray(list) ? list : [];
  card.hidden = rows.length === 0;
  tbody.replaceChildren(...rows.map(row));
  const local = rows.find((r) => r.local);
  countEl.textContent = rows.length ? rows.length + " region(s)" + (local ? " · this is " + local.region : "") : "";
}
