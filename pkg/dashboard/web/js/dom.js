// DOM helpers. Every piece of data goes in as text (textContent or an
// attribute value), never as markup.

// h builds an element: h("td", {class: "x", title: "..."}, child, "text").
// Attributes are set with setAttribute (values are text); "dataset" takes
// an object of data-* values.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "dataset") Object.assign(el.dataset, v);
      else if (k === "text") el.textContent = String(v);
      else if (k.startsWith("on")) throw new Error("h: no event handler attributes");
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export const $ = (id) => document.getElementById(id);

export function setText(id, v) {
  const el = $(id);
  if (el) el.textContent = v === undefined || v === null ? "" : String(v);
}

// rel is a time as "12s ago", "3m ago", "2h ago", "4d ago".
export function rel(t, now = Date.now()) {
  const ms = typeof t === "number" ? t : Date.parse(t);
  if (!ms || ms < 0) return "—";
  let s = Math.round((now - ms) / 1000);
  const future = s < 0;
  s = Math.abs(s);
  let out;
  if (s < 2) return "now";
  if (s < 60) out = s + "s";
  else if (s < 3600) out = Math.floor(s / 60) + "m";
  else if (s < 86400) out = Math.floor(s / 3600) + "h";
  else out = Math.floor(s / 86400) + "d";
  return future ? "in " + out : out + " ago";
}

// timeEl is a <time> whose text is kept relative (see refreshTimes).
export function timeEl(t) {
  const ms = Date.parse(t);
  if (!ms || ms <= 0) return h("span", { class: "muted" }, "—");
  return h("time", { datetime: new Date(ms).toISOString(), title: new Date(ms).toLocaleString(), dataset: { t: String(ms) } }, rel(ms));
}

export function refreshTimes(root = document) {
  const now = Date.now();
  for (const el of root.querySelectorAll("time[data-t]")) {
    el.textContent = rel(Number(el.dataset.t), now);
  }
}

export function shortDigest(d) {
  if (!d) return "—";
  const hex = d.startsWith("sha256:") ? d.slice(7) : d;
  return hex.slice(0, 12);
}

export function shortID(id, n = 10) {
  return id.length > n ? id.slice(0, n) + "…" : id;
}

export function pill(status, text) {
  return h("span", { class: "pill s-" + cssToken(status) }, text || status || "unknown");
}

// cssToken keeps a value usable as part of a class name.
export function cssToken(s) {
  return String(s || "unknown").toLowerCase().replace(/[^a-z0-9_-]/g, "").slice(0, 32) || "unknown";
}

export function empty(text) {
  return h("div", { class: "empty" }, text);
}
