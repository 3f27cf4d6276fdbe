// The admin API: JSON with the admin token, and the event stream read
// with fetch (EventSource cannot send an Authorization header).

const KEY = "fleetgate.adminToken";

export class Unauthorized extends Error {}

export function token() {
  return sessionStorage.getItem(KEY) || "";
}

export function setToken(t) {
  if (t) sessionStorage.setItem(KEY, t);
  else sessionStorage.removeItem(KEY);
}

function headers() {
  const h = { Accept: "application/json" };
  const t = token();
  if (t) h.Authorization = "Bearer " + t;
  return h;
}

// get fetches a JSON document of the admin API.
export async function get(path, signal) {
  const res = await fetch(path, { headers: headers(), cache: "no-store", signal, credentials: "omit" });
  if (res.status === 401) throw new Unauthorized("admin token required");
  if (!res.ok) {
    let msg = res.status + " " + res.statusText;
    try {
      const body = await res.json();
      if (body && typeof body.error === "string") msg = body.error;
    } catch (_) { /* not JSON */ }
    const err = new Error(path.split("?")[0] + ": " + msg);
    err.status = res.status;
    throw err;
  }
  return res.json();
}

const MAX_BUFFER = 1 << 20; // a frame larger than this ends the stream

// parseFrame reads one server-sent event block.
function parseFrame(block) {
  let type = "message", data = "", id = "";
  for (const line of block.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    let value = i < 0 ? "" : line.slice(i + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") type = value;
    else if (field === "data") data += (data ? "\n" : "") + value;
    else if (field === "id") id = value;
  }
  return data ? { type, id, data } : null;
}

// stream follows GET /v1/stream until stop() is called: onFrame(type,
// data) for each frame, onStatus("live" | "reconnecting" | "unauthorized")
// as the connection goes. It reconnects with a backoff, and drops a
// connection that is silent for three heartbeats.
export function stream(onFrame, onStatus) {
  let stopped = false, ctrl = null;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  (async () => {
    let backoff = 500;
    while (!stopped) {
      ctrl = new AbortController();
      let watchdog = null, silence = 45000;
      const arm = () => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => ctrl.abort(), silence);
      };
      try {
        arm();
        const res = await fetch("/v1/stream", { headers: { ...headers(), Accept: "text/event-stream" }, cache: "no-store", signal: ctrl.signal, credentials: "omit" });
        if (res.status === 401) { onStatus("unauthorized"); clearTimeout(watchdog); return; }
        if (!res.ok || !res.body) throw new Error("stream: " + res.status);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          arm();
          buf += value.replace(/\r\n?/g, "\n");
          if (buf.length > MAX_BUFFER) throw new Error("stream: frame too large");
          let i;
          while ((i = buf.indexOf("\n\n")) >= 0) {
            const f = parseFrame(buf.slice(0, i));
            buf = buf.slice(i + 2);
            if (!f) continue;
            let data;
            try { data = JSON.parse(f.data); } catch (_) { continue; }
            if (f.type === "hello") {
              backoff = 500;
              if (data.heartbeat_ms > 0) silence = 3 * data.heartbeat_ms;
              arm();
              onStatus("live");
            }
            onFrame(f.type, data);
          }
        }
      } catch (_) { /* reconnect below */ }
      clearTimeout(watchdog);
      if (stopped) return;
      onStatus("reconnecting");
      await sleep(backoff);
      backoff = Math.min(backoff * 2, 10000);
    }
  })();
  return () => { stopped = true; if (ctrl) ctrl.abort(); };
}
