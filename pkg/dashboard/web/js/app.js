// fleetgate dashboard: loads the admin API's state, follows /v1/stream,
// and renders. No data is ever inserted as markup.

import { get, stream, token, setToken, Unauthorized } from "./api.js";
import { $, setText, refreshTimes, rel } from "./dom.js";
import { renderBackends } from "./backends.js";
import { renderEvents } from "./eventlog.js";
import { renderPolicy } from "./policy.js";
import { renderSessions, applyChanges } from "./sessions.js";
import { renderRegions } from "./regions.js";

const MAX_EVENTS = 1000; // events kept in the page
const MAX_DETAILS = 100; // full events cached
const REGIONS_EVERY = 1500; // ms between reads of /v1/regions: a change shows within 2 s

const S = {
  state: null,
  timeline: null, // GET /v1/timeline
  statusAt: new Map(), // group\0backend -> time of the newest status shown
  auth: null,
  events: [], // briefs, oldest first
  first: 0,
  edges: null,
  sel: { edge: "", verdict: "", offset: 0, limit: 50 },
  windowMs: 3600e3,
  open: new Set(),
  details: new Map(),
  filter: { kind: "", text: "" },
  stopStream: null,
  lastEventAt: 0,
  regions: [],
  regionsOff: false, // a single-region controller (404): no more reads
};

// ---- rendering ----

function renderHeader() {
  const gen = S.state ? S.state.generation : 0;
  setText("gen", gen || "0");
  setText("t-gen", gen || "0");
  setText("t-gen-sub", S.lastEventAt ? "last event " + rel(S.lastEventAt) : "no events yet");
  const leader = $("leader");
  if (S.state) {
    leader.textContent = S.state.leader ? "leader" : "standby";
    leader.className = "badge " + (S.state.leader ? "b-leader" : "b-standby");
  }
}

function drawBackends() {
  const counts = renderBackends($("backends").tBodies[0], S.state, S.timeline);
  setText("t-backends", counts.total ? counts.advertisable + " / " + counts.total : "—");
  const sub = $("t-backends-sub");
  sub.replaceChildren();
  for (const [st, n] of Object.entries(counts.byStatus).sort()) {
    const s = document.createElement("span");
    s.className = "mini s-" + st.replace(/[^a-z]/g, "");
    s.textContent = n + " " + st;
    sub.append(s);
  }
  setText("backends-count", counts.total + " in " + ((S.state && S.state.groups) || []).length + " group(s)");
  const label = { 900000: "15m", 3600000: "1h", 21600000: "6h", 86400000: "24h" }[S.windowMs] || "";
  setText("window-label", counts.sinceLogBegan ? "· since the log began (" + rel(Date.now() - counts.span).replace(" ago", "") + ")" : "· last " + label);
}

function drawEvents() {
  renderEvents($("events"), S.events, S.filter, S.open, S.details);
  const shown = S.events.length;
  setText("events-count", shown ? "#" + S.events[0].generation + " – #" + S.events[shown - 1].generation : "");
  $("older").hidden = !(shown && S.events[0].generation > S.first && S.events.length < MAX_EVENTS);
}

function drawPolicy() {
  const t = renderPolicy($("policy"), S.auth);
  setText("t-policy", t.value);
  setText("t-policy-sub", t.sub);
  setText("policy-gen", S.auth && S.auth.generation ? "since #" + S.auth.generation : "");
}

function drawSessions() {
  const gen = S.state ? S.state.generation : 0;
  const t = renderSessions($("edges"), $("sessions").tBodies[0], $("page-info"), S.edges, S.sel, gen);
  if (!t) {
    setText("t-sessions", "—");
    setText("t-sessions-sub", "no session records");
    setText("sessions-count", "");
  } else {
    // Converged among the sessions in use: an idle one (a client that
    // left its session open) is counted apart, not as stale.
    const active = t.total - t.idle;
    setText("t-sessions", active ? Math.round((100 * t.converged) / active) + "%" : "—");
    setText("t-sessions-sub", active + " active · " + t.idle + " idle · " + (S.edges.edges || []).length + " edge(s)");
    setText("sessions-count", t.total + " total");
  }
  const d = S.edges;
  $("prev").disabled = !d || S.sel.offset <= 0;
  $("next").disabled = !d || S.sel.offset + S.sel.limit >= (d.matched || 0);
}

function drawAll() {
  renderHeader();
  drawBackends();
  drawEvents();
  drawPolicy();
  drawSessions();
}

function banner(msg) {
  const b = $("banner");
  b.hidden = !msg;
  b.textContent = msg || "";
}

// ---- loading ----

function edgesPath() {
  const q = new URLSearchParams({ offset: String(S.sel.offset), limit: String(S.sel.limit) });
  if (S.sel.edge) q.set("edge", S.sel.edge);
  if (S.sel.verdict) q.set("class", S.sel.verdict);
  return "/v1/edges?" + q;
}

function timelinePath() {
  return "/v1/timeline?window=" + Math.round(S.windowMs / 1000) + "s";
}

async function loadAll() {
  const [state, recent, edges, tl] = await Promise.all([get("/v1/state"), get("/v1/events/recent?limit=500"), get(edgesPath()), get(timelinePath())]);
  S.state = state;
  S.timeline = tl;
  S.auth = state.authorization || null;
  S.first = recent.first;
  mergeEvents(recent.events || []);
  S.edges = edges;
  banner("");
  drawAll();
  loadRegions().catch(handleError);
}

function mergeEvents(list) {
  const byGen = new Map(S.events.map((e) => [e.generation, e]));
  for (const e of list) byGen.set(e.generation, e);
  S.events = [...byGen.values()].sort((a, b) => a.generation - b.generation).slice(-MAX_EVENTS);
  const last = S.events[S.events.length - 1];
  if (last) S.lastEventAt = Date.parse(last.time) || S.lastEventAt;
}

// Coalesced reloads of one resource.
function debounced(fn, ms) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(async () => {
      timer = null;
      try { await fn(); } catch (e) { handleError(e); }
    }, ms);
  };
}

const reloadState = debounced(async () => {
  S.state = await get("/v1/state");
  S.auth = S.state.authorization || null;
  renderHeader();
  drawBackends();
  drawPolicy();
}, 150);

const reloadTimeline = debounced(async () => {
  S.timeline = await get(timelinePath());
  drawBackends();
}, 150);

const reloadEdges = debounced(async () => {
  S.edges = await get(edgesPath());
  drawSessions();
}, 300);

async function openDetail(gen) {
  if (S.details.has(gen)) return;
  try {
    const evs = await get("/v1/events?from=" + gen + "&limit=1");
    S.details.set(gen, evs && evs[0] && evs[0].generation === gen ? evs[0] : new Error("event #" + gen + " is no longer in the log"));
  } catch (e) {
    if (e instanceof Unauthorized) return handleError(e);
    S.details.set(gen, e);
  }
  while (S.details.size > MAX_DETAILS) S.details.delete(S.details.keys().next().value);
  drawEvents();
}

// loadRegions reads the regions; a 404 (single region) hides the panel
// for good, another failure keeps the last rows.
async function loadRegions() {
  if (S.regionsOff) return;
  try {
    S.regions = await get("/v1/regions");
  } catch (e) {
    if (e instanceof Unauthorized) throw e;
    if (e.status === 404) { S.regionsOff = true; S.regions = []; }
    else return;
  }
  renderRegions($("regions-card"), $("regions").tBodies[0], $("regions-count"), S.regions);
}

const reloadRegions = debounced(loadRegions, 150);

// ---- the stream ----

function onFrame(type, data) {
  switch (type) {
    case "hello":
      loadAll().catch(handleError);
      break;
    case "event": {
      mergeEvents([data]);
      if (S.state && data.generation > S.state.generation) S.state.generation = data.generation;
      if (data.kind === "health_changed" && data.health) {
        setStatus(data.group, data.backend, data.time, data.health.to, data.health.reason, data.health.advertisable);
      }
      renderHeader();
      drawBackends();
      drawEvents();
      drawSessions(); // the lag of each session's applied generation
      reloadState();
      reloadTimeline();
      reloadRegions();
      break;
    }
    case "status":
      // A change of the status the controller reports, event or not
      // (unknown to unhealthy, degraded to healthy are no events).
      setStatus(data.group, data.backend, data.time, data.to, data.reason);
      drawBackends();
      reloadState();
      reloadTimeline();
      break;
    case "reset":
      loadAll().catch(handleError);
      break;
    case "sessions":
      if (applyChanges(S.edges, data)) drawSessions();
      reloadEdges();
      break;
    case "edges":
      // An edge's status record (its stdio instances) changed.
      reloadEdges();
      break;
  }
}

// setStatus shows a backend's status from a frame, unless the page
// already shows a newer one (an event is stored after the status change
// that made it, and a later change may have come first).
function setStatus(group, backend, time, status, reason, advertisable) {
  const k = group + "\u0000" + backend;
  const at = Date.parse(time) || 0;
  if (!S.state || at < (S.statusAt.get(k) || 0)) return;
  S.statusAt.set(k, at);
  for (const g of S.state.groups || []) {
    if (g.name !== group) continue;
    for (const b of g.backends || []) {
      if (b.name !== backend) continue;
      b.status = status || "unknown";
      b.reason = reason || "";
      if (advertisable !== undefined) b.advertisable = advertisable;
    }
  }
}

function onStatus(st) {
  const live = $("live");
  live.dataset.status = st === "live" ? "live" : st === "unauthorized" ? "off" : "wait";
  setText("live-text", st === "live" ? "live" : st === "unauthorized" ? "token refused" : "reconnecting");
  if (st === "unauthorized") showLogin("The stream refused the token.");
}

function startStream() {
  if (S.stopStream) S.stopStream();
  S.stopStream = stream(onFrame, onStatus);
}

// ---- token ----

function showLogin(msg) {
  $("login").hidden = false;
  $("main").hidden = true;
  const err = $("login-error");
  err.hidden = !msg;
  err.textContent = msg || "";
  $("token-input").value = "";
  $("token-input").focus();
}

function hideLogin() {
  $("login").hidden = true;
  $("main").hidden = false;
}

function handleError(e) {
  if (e instanceof Unauthorized) {
    if (S.stopStream) { S.stopStream(); S.stopStream = null; }
    onStatus("unauthorized");
    return;
  }
  banner(String(e && e.message ? e.message : e));
}

async function connect() {
  try {
    await loadAll();
    hideLogin();
    startStream();
  } catch (e) {
    if (e instanceof Unauthorized) showLogin(token() ? "The admin API refused this token." : "");
    else { hideLogin(); banner(e.message); startStream(); }
  }
}

// ---- wiring ----

function wire() {
  $("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    setToken($("token-input").value.trim());
    connect();
  });
  $("token-forget").addEventListener("click", () => {
    setToken("");
    if (S.stopStream) { S.stopStream(); S.stopStream = null; }
    showLogin("Token forgotten.");
  });
  $("token-btn").addEventListener("click", () => showLogin(""));
  $("window").addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-ms]");
    if (!b) return;
    S.windowMs = Number(b.dataset.ms);
    for (const x of $("window").querySelectorAll("button")) x.classList.toggle("on", x === b);
    reloadTimeline();
  });
  const toggle = (row) => {
    const gen = Number(row.dataset.gen);
    if (S.open.has(gen)) S.open.delete(gen);
    else { S.open.add(gen); openDetail(gen); }
    drawEvents();
  };
  $("events").addEventListener("click", (ev) => {
    const row = ev.target.closest(".ev-row");
    if (row) toggle(row);
  });
  $("events").addEventListener("keydown", (ev) => {
    const row = ev.target.closest(".ev-row");
    if (row && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); toggle(row); }
  });
  $("kind-filter").addEventListener("change", (ev) => { S.filter.kind = ev.target.value; drawEvents(); });
  $("text-filter").addEventListener("input", (ev) => { S.filter.text = ev.target.value; drawEvents(); });
  $("older").addEventListener("click", async () => {
    try {
      const r = await get("/v1/events/recent?limit=200&before=" + S.events[0].generation);
      S.first = r.first;
      const keep = S.events;
      S.events = [...(r.events || []), ...keep].slice(0, MAX_EVENTS);
      drawEvents();
    } catch (e) { handleError(e); }
  });
  $("verdict-filter").addEventListener("change", (ev) => { S.sel.verdict = ev.target.value; S.sel.offset = 0; reloadEdges(); });
  $("edges").addEventListener("click", (ev) => {
    const b = ev.target.closest("button[data-edge]");
    if (!b) return;
    S.sel.edge = S.sel.edge === b.dataset.edge ? "" : b.dataset.edge;
    S.sel.offset = 0;
    reloadEdges();
  });
  $("prev").addEventListener("click", () => { S.sel.offset = Math.max(0, S.sel.offset - S.sel.limit); reloadEdges(); });
  $("next").addEventListener("click", () => { S.sel.offset += S.sel.limit; reloadEdges(); });
  // Relative times and the timelines move on with the clock.
  setInterval(() => { refreshTimes(); renderHeader(); if ($("main").hidden === false) reloadTimeline(); }, 5000);
  setInterval(() => { if ($("main").hidden === false) loadRegions().catch(handleError); }, REGIONS_EVERY);
}

wire();
connect();
