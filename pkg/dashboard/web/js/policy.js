// The authorization policy in force (GET /v1/authorization).

import { h, empty, shortDigest, cssToken } from "./dom.js";

function globs(label, list) {
  if (!list || !list.length) return null;
  const box = h("div", { class: "globs" }, h("span", { class: "glabel" }, label));
  for (const g of list.slice(0, 50)) box.append(h("span", { class: "chip mono" }, g));
  if (list.length > 50) box.append(h("span", { class: "muted" }, "+" + (list.length - 50)));
  return box;
}

// renderPolicy fills el; it returns a short summary for the tile.
export function renderPolicy(el, auth) {
  if (!auth) {
    el.replaceChildren(empty("—"));
    return { value: "—", sub: "" };
  }
  const parts = [];
  if (auth.error) parts.push(h("p", { class: "banner error" }, "The policy in the log is unreadable; edges refuse every tool: " + auth.error));
  const sec = auth.section;
  if (!sec) {
    parts.push(empty("No authorization section: every tool, prompt and resource is allowed."));
    el.replaceChildren(...parts);
    return { value: "allow all", sub: auth.generation ? "since #" + auth.generation : "never set" };
  }
  const def = sec.default || "allow";
  parts.push(h("div", { class: "policy-head" },
    h("span", {}, "default "), h("span", { class: "effect e-" + cssToken(def) }, def),
    h("span", { class: "muted" }, " · " + (sec.rules || []).length + " rule" + ((sec.rules || []).length === 1 ? "" : "s")),
    h("div", { class: "spacer" }),
    h("span", { class: "mono muted", title: auth.digest || "" }, shortDigest(auth.digest))));
  const ol = h("ol", { class: "rules" });
  for (const r of sec.rules || []) {
    const applies = [globs("tools", r.tools), globs("prompts", r.prompts), globs("resources", r.resources)].filter(Boolean);
    ol.append(h("li", { class: "rule" },
      h("div", { class: "rule-head" }, h("span", { class: "effect e-" + cssToken(r.effect) }, r.effect), h("span", { class: "mono name" }, r.name)),
      ...(applies.length ? applies : [h("div", { class: "globs muted" }, "applies to every item")]),
      r.when ? h("pre", { class: "when mono" }, r.when) : null));
  }
  if ((sec.rules || []).length) parts.push(ol);
  if (sec.rate_limits) {
    parts.push(h("details", { class: "limits" }, h("summary", {}, "rate limits"), h("pre", { class: "mono" }, JSON.stringify(sec.rate_limits, null, 2))));
  }
  el.replaceChildren(...parts);
  const n = (sec.rules || []).length;
  return { value: "default " + def, sub: n + (n === 1 ? " rule" : " rules") + " · since #" + auth.generation };
}
