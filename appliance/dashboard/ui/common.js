// What every page of the dashboard shares: calls to the API with the
// session's CSRF value, the events stream, and small DOM helpers.

export const csrf = document.querySelector('meta[name="csrf"]')?.content || "";
export const role = document.body.dataset.role;

// ApiError is an API error body: code, message and the field at fault.
export class ApiError extends Error {
  constructor(status, body) {
    super(body.message || `${status}`);
    this.status = status;
    this.code = body.error;
    this.field = body.field || "";
  }
}

// api calls /v1 and returns the decoded JSON (null for 204, the Response
// for anything else). A body that is not a Blob, ArrayBuffer or string
// goes as JSON.
export async function api(method, path, body, opts = {}) {
  const headers = { ...(opts.headers || {}) };
  if (method !== "GET" && method !== "HEAD") headers["X-Paddock-CSRF"] = csrf;
  let payload = body;
  if (body !== undefined && !(body instanceof Blob) && !(body instanceof ArrayBuffer) && typeof body !== "string") {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const r = await fetch("/v1" + path, { method, headers, body: payload, credentials: "same-origin", signal: opts.signal });
  if (!r.ok) {
    let e;
    try { e = await r.json(); } catch { e = { message: `${r.status} ${r.statusText}` }; }
    if (r.status === 401) e.message = (e.message || "") + " (sign in again)";
    throw new ApiError(r.status, e);
  }
  if (r.status === 204) return null;
  if ((r.headers.get("Content-Type") || "").startsWith("application/json")) return r.json();
  return r;
}

export const enc = encodeURIComponent;

// el makes an element: el("td", {class: "x"}, "text", child).
export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of kids.flat()) if (c !== undefined && c !== null) e.append(c);
  return e;
}

// showError puts an error next to what caused it: the element with
// data-field equal to the error's field inside scope, else fallback.
export function showError(scope, err, fallback) {
  clearErrors(scope);
  let where = err.field && scope.querySelector(`[data-field="${CSS.escape(err.field)}"]`);
  if (!where) where = fallback || scope.querySelector('[data-field=""]') || scope.querySelector(".error");
  if (!where) { alert(err.message); return; }
  where.textContent = err.message;
  where.hidden = false;
  where.setAttribute("role", "alert");
}

export function clearErrors(scope) {
  for (const e of scope.querySelectorAll(".error")) { e.hidden = true; e.textContent = ""; }
}

// busy disables a button while an action runs and reports its error.
export async function busy(button, fn, errScope, fallback) {
  if (button) button.disabled = true;
  try {
    if (errScope) clearErrors(errScope);
    return await fn();
  } catch (err) {
    if (errScope) showError(errScope, err, fallback); else alert(err.message);
  } finally {
    if (button) button.disabled = false;
  }
}

// events follows the server's events stream; handlers are by event kind
// (a "metrics" handler asks for the boxes' samples too). While it is
// reconnecting the page says so.
export function events(handlers) {
  const live = document.getElementById("live");
  const es = new EventSource(handlers.metrics ? "/v1/events?metrics=1" : "/v1/events");
  for (const [kind, fn] of Object.entries(handlers)) {
    es.addEventListener(kind, (ev) => fn(JSON.parse(ev.data)));
  }
  es.addEventListener("open", () => { if (live) live.textContent = ""; });
  es.addEventListener("error", () => { if (live) live.textContent = "Reconnecting to the server…"; });
  return es;
}

export function when(t) {
  if (!t) return "";
  const d = new Date(t);
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

export function duration(secs) {
  if (secs <= 0) return "0s";
  const h = Math.floor(secs / 3600), m = Math.floor((secs % 3600) / 60), s = Math.floor(secs % 60);
  if (h > 0) return `${h}h ${String(m).padStart(2, "0")}m`;
  if (m > 0) return `${m}m ${String(s).padStart(2, "0")}s`;
  return `${s}s`;
}

// ttlLeft says how long a running box has before its TTL stops it.
export function ttlLeft(box) {
  if (!box.expires_at) return "—";
  if (box.status !== "running" && box.desired !== "running") return "—";
  return duration((new Date(box.expires_at) - Date.now()) / 1000);
}

export function size(n) {
  if (n === undefined || n === null) return "";
  const u = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + u[i];
}

// useText is a box's newest sample in a few words: "12% CPU · 220 MB".
export function useText(m) {
  if (!m) return "—";
  return `${Math.round(m.cpu_percent)}% CPU · ${size(m.memory_bytes)}`;
}

// oomText says when the kernel last killed a process of the box for its
// memory bound, or "" when it never did.
export function oomText(b) {
  if (!b.oom_at) return "";
  const at = new Date(b.oom_at).toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  return `killed: out of memory at ${at} (${b.oom_kills === 1 ? "1 process" : b.oom_kills + " processes"} past its ${b.memory_mib} MiB)`;
}

// graph draws values (oldest first, each [time ms, value]) over the last
// span ms as an SVG line from 0 to top, labelled for screen readers.
export function graph(series, top, span, label) {
  const W = 300, H = 64, now = Date.now();
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("class", "graph");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  svg.setAttribute("preserveAspectRatio", "none");
  for (const [i, values] of series.entries()) {
    const pts = values.filter(([t]) => t >= now - span).map(([t, v]) => `${(((t - (now - span)) / span) * W).toFixed(1)},${(H - 1 - (Math.min(v, top) / (top || 1)) * (H - 2)).toFixed(1)}`);
    if (!pts.length) continue;
    const line = document.createElementNS(NS, "polyline");
    line.setAttribute("points", pts.join(" "));
    line.setAttribute("class", "series s" + i);
    svg.append(line);
  }
  return svg;
}

export function stateBadge(state) {
  return el("span", { class: "state " + (state || "") }, state || "?");
}

// dialogs: every Cancel button closes its dialog.
for (const b of document.querySelectorAll("dialog .cancel")) {
  b.addEventListener("click", () => b.closest("dialog").close());
}

// confirmByName enables a dialog's button only once the name is typed.
export function confirmByName(input, button, name) {
  input.value = "";
  button.disabled = true;
  input.oninput = () => { button.disabled = input.value !== name; };
}

// download saves a Blob under a name.
export function saveBlob(blob, name) {
  const a = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

// followText reads a streamed text response into a <pre>, keeping it
// scrolled to the end while the reader is at the end.
export async function followText(resp, pre, signal) {
  const reader = resp.body.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done || signal?.aborted) break;
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.append(dec.decode(value, { stream: true }));
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  }
}

// localNote is a box's note with its times in this browser's time (the
// server writes them in UTC); with asleepShown, the idle stop's "its
// next use starts it again", which the page says already, is left out.
export function localNote(note, asleepShown = false) {
  const n = note.replace(/\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z\b/g, (s) => when(s));
  return asleepShown ? n.replace(/; its next use starts it again$/, "") : n;
}
