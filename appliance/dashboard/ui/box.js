// A box's page: overview, terminal, desktop, jobs, prompt, files,
// snapshots and network, each a tab; the box, its jobs and snapshots
// follow the events stream.
import { api, el, enc, events, ttlLeft, when, stateBadge, showError, clearErrors, busy, size, saveBlob, followText, graph, oomText, localNote } from "./common.js";
import { Terminal } from "./vendor/xterm/xterm.mjs";
import { FitAddon } from "./vendor/xterm/addon-fit.mjs";
import { tarFiles } from "./tar.js";

const name = document.body.dataset.box;
const B = `/boxes/${enc(name)}`;
let box = null;
// What the box sent through the credential broker, by secret (a box's
// own answer has it, not the events stream's).
let brokerUse = [];
const jobs = new Map();
const snaps = new Map();

// Tabs: the address's fragment names the open one, so reload keeps it.
const tabs = [...document.querySelectorAll('[role="tab"]')];
const opened = new Set();
function select(id, focus) {
  for (const t of tabs) {
    const on = t.id === "tab-" + id;
    t.setAttribute("aria-selected", on);
    t.tabIndex = on ? 0 : -1;
    document.getElementById(t.getAttribute("aria-controls")).hidden = !on;
    if (on && focus) t.focus();
  }
  if (location.hash !== "#" + id) history.replaceState(null, "", "#" + id);
  if (!opened.has(id)) { opened.add(id); onOpen[id]?.(); }
  if (id === "terminal") fitTerm();
}
for (const t of tabs) {
  t.addEventListener("click", () => select(t.id.slice(4)));
  t.addEventListener("keydown", (e) => {
    const i = tabs.indexOf(t);
    const j = e.key === "ArrowRight" ? (i + 1) % tabs.length : e.key === "ArrowLeft" ? (i - 1 + tabs.length) % tabs.length : e.key === "Home" ? 0 : e.key === "End" ? tabs.length - 1 : -1;
    if (j >= 0) { e.preventDefault(); select(tabs[j].id.slice(4), true); }
  });
}

// Overview and the header.
const boxErr = document.getElementById("box-error");
function report(e) { boxErr.textContent = e.message; boxErr.hidden = false; }
function act(label, fn, cls) {
  return el("button", { type: "button", class: cls || "", id: "act-" + label.toLowerCase(), onclick: (ev) => busy(ev.currentTarget, async () => { boxErr.hidden = true; try { await fn(); } catch (e) { report(e); } }) }, label);
}
// Previews: what listens in the box, each port a link that opens its
// preview through this server's /preview (the browser's session gives the
// preview host a cookie of its own). Read when the box starts running and
// on "Look again".
const previews = el("span", { id: "previews" });
let portsOf = "";
async function loadPorts() {
  portsOf = "running";
  try { renderPorts(await api("GET", B + "/ports")); } catch (e) { previews.replaceChildren(e.message); }
}
function renderPorts(ports) {
  const again = el("button", { type: "button", class: "link", id: "ports-again", onclick: loadPorts }, "Look again");
  if (box?.status !== "running") { previews.replaceChildren("when the box runs, what listens in it is shown here"); return; }
  if (!ports.length) {
    previews.replaceChildren(`nothing listens in the box yet: a server started there on 0.0.0.0 shows here ('paddock preview ${name}') `, again);
    return;
  }
  const items = ports.map((p) => el("li", {}, p.url
    ? el("a", { href: "/preview?to=" + encodeURIComponent(p.url), target: "_blank", rel: "noopener", "data-port": p.port }, `${p.port}: ${p.url}`)
    : `${p.port} (${p.address}): ${p.note || "no preview on this server"}`));
  previews.replaceChildren(el("ul", { class: "ports" }, ...items), again);
}
function renderBox() {
  if (!box) return;
  const st = document.getElementById("box-state");
  st.replaceWith(Object.assign(stateBadge(box.status), { id: "box-state" }));
  const acts = document.getElementById("box-actions");
  acts.replaceChildren(
    box.desired === "running" ? act("Stop", () => api("POST", B + "/stop")) : act("Start", () => api("POST", B + "/start")),
    act("Snapshot", () => api("POST", B + "/snapshots")),
    act("Fork", async () => { const f = await api("POST", B + "/fork", {}); location.href = "/boxes/" + enc(f.name); }));
  const facts = [["State", box.status + (box.error ? ": " + box.error : "") + (box.note ? " (" + localNote(box.note) + ")" : "")],
    ...(box.access ? [["Shared", `with you as a ${box.access}, by ${box.owner}`]] : []),
    ...(box.oom_at ? [["Killed", el("span", { class: "oom", id: "oom" }, oomText(box).replace(/^killed: /, ""))]] : []), ["Type", `${box.type} (${box.cpus} CPU, ${box.memory_mib} MiB)`],
    ["Image", box.image], ...(box.node ? [["Server", box.node]] : []), ["Address", box.ip || ""],
    ...(brokerUse.length ? [["Broker", el("span", { id: "broker-use" }, brokerUse.map(brokerText).join("; "))]] : []), ["Project", box.project || "—"], ["Owner", box.owner || ""],
    ["Labels", Object.entries(box.labels || {}).sort().map(([k, v]) => `${k}=${v}`).join(", ") || "—"],
    ["Idle stop", box.idle_stop ? `after ${box.idle_stop} unused${box.sleeping ? " (asleep: its next use starts it)" : ""}` : "—"],
    ["Desktop", box.desktop ? "yes" : "no"], ["Drives", (box.mounts || []).map((m) => `${m.drive} at ${m.path}${m.readonly ? " (read-only)" : ""}`).join(", ") || "—"],
    ["Created", when(box.created)], ["From snapshot", box.from || "—"],
    ["Previews", previews]];
  document.getElementById("facts").replaceChildren(...facts.flatMap(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
  if (box.status === "running" && portsOf !== "running") loadPorts();
  if (box.status !== "running") { portsOf = box.status; renderPorts([]); }
  document.getElementById("policy-select").value = box.policy || "allow-all";
  document.getElementById("net-policy").textContent = box.policy || "allow-all";
  tickTTL();
}
// brokerText is what a box sent with one secret: "MODEL_KEY: 2 requests
// (2xx 2), 1 refused, 16 B up, 477 B down".
function brokerText(u) {
  const cls = ["2xx", "4xx", "5xx"].filter((k) => u.status?.[k]).map((k) => `${k} ${u.status[k]}`);
  return `${u.secret}: ${u.requests} request${u.requests === 1 ? "" : "s"}${cls.length ? ` (${cls.join(", ")})` : ""}` +
    `${u.refused ? `, ${u.refused} refused` : ""}, ${size(u.bytes_up)} up, ${size(u.bytes_down)} down`;
}
async function loadBroker() {
  try { brokerUse = (await api("GET", B)).broker || []; } catch { return; }
  renderBox();
}
function tickTTL() { if (box) document.getElementById("ttl-left").textContent = box.expires_at ? ttlLeft(box) + " left" : "no TTL"; }
setInterval(tickTTL, 1000);

const ttlForm = document.getElementById("ttl-form");
ttlForm.addEventListener("submit", (e) => {
  e.preventDefault();
  busy(document.getElementById("ttl-extend"), async () => { box = await api("PUT", B + "/ttl", { ttl: document.getElementById("ttl-new").value.trim() }); renderBox(); }, ttlForm);
});
const polForm = document.getElementById("policy-form");
polForm.addEventListener("submit", (e) => {
  e.preventDefault();
  busy(document.getElementById("policy-set"), async () => { box = await api("PUT", B + "/policy", { policy: document.getElementById("policy-select").value }); renderBox(); }, polForm);
});

// Terminal: a login shell over a websocket; "New shell" (or a reload)
// opens a fresh one.
let term, fit, sock;
function fitTerm() {
  if (!fit || document.getElementById("panel-terminal").hidden) return;
  fit.fit();
}
function openShell() {
  const state = document.getElementById("term-state");
  if (!term) {
    term = new Terminal({ cursorBlink: true, fontSize: 14, scrollback: 5000, convertEol: false });
    fit = new FitAddon();
    term.loadAddon(fit);
    term.open(document.getElementById("term"));
    window.paddockTerm = term; // for tests and the console
    term.onData((d) => { if (sock?.readyState === 1) sock.send(new TextEncoder().encode(d)); });
    term.onResize(({ rows, cols }) => { if (sock?.readyState === 1) sock.send(JSON.stringify({ rows, cols })); });
    new ResizeObserver(fitTerm).observe(document.getElementById("term"));
  }
  fitTerm();
  sock?.close();
  term.reset();
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(`${proto}//${location.host}/v1${B}/terminal?rows=${term.rows}&cols=${term.cols}`);
  ws.binaryType = "arraybuffer";
  sock = ws;
  state.textContent = "Connecting…";
  ws.onopen = () => { state.textContent = "Connected"; document.body.dataset.term = "open"; term.focus(); };
  ws.onmessage = (ev) => {
    if (typeof ev.data === "string") {
      const m = JSON.parse(ev.data);
      state.textContent = m.error ? "Error: " + m.error : `The shell exited (${m.exit}).`;
      return;
    }
    term.write(new Uint8Array(ev.data));
  };
  ws.onclose = () => { if (sock === ws) { document.body.dataset.term = "closed"; if (state.textContent === "Connected" || state.textContent === "Connecting…") state.textContent = "Disconnected: is the box running?"; } };
}
document.getElementById("term-new").addEventListener("click", openShell);

// Desktop: the noVNC page in a frame, with a ticket.
const deskErr = document.getElementById("desk-error");
document.getElementById("desk-open").addEventListener("click", (e) => busy(e.currentTarget, async () => {
  deskErr.hidden = true;
  try {
    const t = await api("POST", B + "/desktop");
    const f = document.getElementById("desk-frame");
    f.src = t.path;
    f.hidden = false;
  } catch (err) { deskErr.textContent = err.message; deskErr.hidden = false; }
}));
// The gallery: the box's recent screenshots, kept by the server.
async function loadShots() {
  try {
    const list = await api("GET", B + "/screenshots");
    document.getElementById("shots-empty").hidden = list.length > 0;
    document.getElementById("shots").replaceChildren(...list.map((sh) => {
      const url = `/v1${B}/screenshots/${enc(sh.id)}`;
      const at = new Date(sh.taken);
      const file = `${name}-${sh.taken.replace(/[:.]/g, "-")}.png`;
      return el("li", { "data-shot": sh.id }, el("figure", {}, el("a", { href: url, target: "_blank", rel: "noopener" }, el("img", { src: url, alt: `Screenshot of ${name} at ${at.toLocaleString()}`, loading: "lazy" })),
        el("figcaption", {}, at.toLocaleString(), " · ", size(sh.size), " · ", el("a", { href: url, download: file }, "Download PNG"))));
    }));
  } catch (err) { deskErr.textContent = err.message; deskErr.hidden = false; }
}
document.getElementById("shot-take").addEventListener("click", (e) => busy(e.currentTarget, async () => {
  deskErr.hidden = true;
  const st = document.getElementById("desk-state");
  st.textContent = "Taking a screenshot…";
  try {
    await api("POST", B + "/screenshots");
    st.textContent = "";
    await loadShots();
  } catch (err) { st.textContent = ""; deskErr.textContent = err.message; deskErr.hidden = false; }
}));

// Jobs and prompts.
const jobBody = document.querySelector("#jobs tbody");
let following = null;
function renderJobs() {
  const list = [...jobs.values()].sort((a, b) => b.started.localeCompare(a.started));
  jobBody.replaceChildren(...list.map((j) => el("tr", { "data-job": j.id, class: following?.id === j.id ? "selected" : "" },
    el("td", {}, el("button", { type: "button", class: "link", onclick: () => follow(j.id, document.getElementById("job-log")) }, j.id)),
    el("td", { class: "wrap" }, el("code", {}, j.cmd.join(" "))),
    el("td", {}, stateBadge(j.state)), el("td", { class: "num" }, j.exit_code ?? ""), el("td", {}, when(j.started)),
    el("td", { class: "acts pair" }, ...jobButtons(j)))));
  if (!list.length) jobBody.append(el("tr", { class: "empty" }, el("td", { colspan: 6 }, "No jobs yet.")));
}
// A running job can be stopped (TERM, which it may trap) or killed
// (KILL), by whoever may work in the box.
function jobButtons(j) {
  if (j.state !== "running" || box?.access === "viewer") return [];
  const signal = (sig, label, cls) => {
    const b = el("button", { type: "button", class: `small ${cls}`, "data-signal": sig, "aria-label": `${label} job ${j.id} (${sig})` }, label);
    b.onclick = () => busy(b, async () => { jobs.set(j.id, await api("POST", `${B}/jobs/${enc(j.id)}/signal`, { signal: sig })); renderJobs(); });
    return b;
  };
  return [signal("TERM", "Stop", ""), " ", signal("KILL", "Kill", "danger")];
}
async function follow(id, pre) {
  following?.ctl.abort();
  const ctl = new AbortController();
  following = { id, ctl };
  if (pre.id === "job-log") renderJobs();
  pre.textContent = "";
  try {
    const r = await api("GET", `${B}/jobs/${enc(id)}/log?follow=1`, undefined, { signal: ctl.signal });
    await followText(r, pre, ctl.signal);
    const j = jobs.get(id) || await api("GET", `${B}/jobs/${enc(id)}`);
    if (!ctl.signal.aborted) pre.dataset.done = "1";
    return j;
  } catch (e) {
    if (e.name !== "AbortError") pre.append(`\n[${e.message}]`);
  }
}
const jobForm = document.getElementById("job-form");
jobForm.addEventListener("submit", (e) => {
  e.preventDefault();
  const cmd = document.getElementById("job-cmd").value.trim();
  if (!cmd) return;
  busy(document.getElementById("job-start"), async () => {
    const j = await api("POST", B + "/jobs", { cmd: ["bash", "-lc", cmd] });
    jobForm.reset();
    jobs.set(j.id, j);
    renderJobs();
    follow(j.id, document.getElementById("job-log"));
  }, jobForm);
});

const promptForm = document.getElementById("prompt-form");
async function loadAgents() {
  const sel = document.getElementById("prompt-agent");
  try {
    const list = await api("GET", B + "/agents");
    // Each agent says whether a prompt would run, and if not, why and
    // what to do (the server's own rule: the one prompt applies).
    sel.replaceChildren(...list.map((a) => el("option", { value: a.name, disabled: !a.installed }, `${a.name} · ${!a.installed ? "not installed" : a.hint ? "not ready" : "credentials: " + (a.credentials || "none needed")}`)));
    const def = list.find((a) => !a.hint) || list.find((a) => a.installed);
    if (def) sel.value = def.name;
    const note = () => { const a = list.find((x) => x.name === sel.value); document.getElementById("agent-note").textContent = a?.hint ? a.hint.replace(/^agent "[^"]*" /, "This agent ") + "." : ""; };
    sel.onchange = note;
    note();
  } catch (e) { showError(promptForm, e); }
}
promptForm.addEventListener("submit", (e) => {
  e.preventDefault();
  busy(document.getElementById("prompt-start"), async () => {
    const j = await api("POST", B + "/prompt", { agent: document.getElementById("prompt-agent").value, task: document.getElementById("prompt-task").value });
    jobs.set(j.id, j);
    renderJobs();
    const pre = document.getElementById("prompt-log");
    delete pre.dataset.done;
    follow(j.id, pre);
  }, promptForm);
});

// Files.
const dirPath = document.getElementById("dir-path");
const filesErr = document.getElementById("files-error");
async function openDir(p) {
  filesErr.hidden = true;
  try {
    const d = await api("GET", `${B}/dir?path=${enc(p)}`);
    dirPath.value = d.path;
    const tar = document.getElementById("dir-tar");
    tar.href = `/v1${B}/files?path=${enc(d.path)}`;
    tar.download = (d.path === "/" ? "root" : d.path.split("/").pop()) + ".tar";
    const tbody = document.querySelector("#files tbody");
    tbody.replaceChildren(...d.entries.map((f) => {
      const full = (d.path === "/" ? "" : d.path) + "/" + f.name;
      const link = f.type === "dir" ? el("button", { type: "button", class: "link", onclick: () => openDir(full) }, f.name + "/")
        : f.type === "file" ? el("a", { href: `/v1${B}/download?path=${enc(full)}`, download: f.name }, f.name)
          : el("span", {}, f.name, f.target ? ` → ${f.target}` : "");
      return el("tr", { "data-name": f.name }, el("td", { class: "wrap" }, link), el("td", { class: "num" }, f.type === "file" ? size(f.size) : ""), el("td", {}, when(f.modified)));
    }));
    if (!d.entries.length) tbody.append(el("tr", { class: "empty" }, el("td", { colspan: 3 }, "Empty folder.")));
    if (d.truncated) tbody.append(el("tr", { class: "empty" }, el("td", { colspan: 3 }, "More entries than shown; use the terminal.")));
  } catch (e) { filesErr.textContent = e.message; filesErr.hidden = false; }
}
document.getElementById("dir-form").addEventListener("submit", (e) => { e.preventDefault(); openDir(dirPath.value); });
document.getElementById("dir-up").addEventListener("click", () => { const p = dirPath.value.replace(/\/+$/, ""); openDir(p.slice(0, p.lastIndexOf("/")) || "/"); });
document.getElementById("upload-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const files = [...document.getElementById("upload-input").files];
  const st = document.getElementById("upload-state");
  if (!files.length) { st.textContent = "Choose files first."; return; }
  busy(document.getElementById("upload-go"), async () => {
    filesErr.hidden = true;
    try {
      st.textContent = `Uploading ${files.length} file(s)…`;
      const tar = await tarFiles(files);
      await api("PUT", `${B}/files?path=${enc(dirPath.value)}`, tar, { headers: { "Content-Type": "application/x-tar" } });
      st.textContent = `Uploaded ${files.map((f) => f.name).join(", ")}.`;
      openDir(dirPath.value);
    } catch (err) { st.textContent = ""; filesErr.textContent = err.message; filesErr.hidden = false; }
  });
});

// Snapshots.
const snapErr = document.getElementById("snap-error");
function renderSnaps() {
  const list = [...snaps.values()].sort((a, b) => b.created.localeCompare(a.created));
  const tbody = document.querySelector("#snapshots tbody");
  const run = (fn) => (ev) => busy(ev.currentTarget, async () => { snapErr.hidden = true; try { await fn(); } catch (e) { snapErr.textContent = e.message; snapErr.hidden = false; } });
  tbody.replaceChildren(...list.map((s) => el("tr", { "data-snapshot": s.id }, el("td", {}, el("code", {}, s.id)), el("td", {}, s.reason), el("td", {}, stateBadge(s.state)), el("td", {}, when(s.created)), el("td", { class: "num size" }, s.size ? size(s.size) : "—"),
    el("td", { class: "acts" },
      el("button", { type: "button", class: "small", disabled: s.state !== "ready", onclick: run(() => api("POST", B + "/restore", { snapshot: s.id })) }, "Restore"),
      el("button", { type: "button", class: "small", disabled: s.state !== "ready", onclick: run(async () => { const f = await api("POST", B + "/fork", { snapshot: s.id }); location.href = "/boxes/" + enc(f.name); }) }, "Fork")))));
  if (!list.length) tbody.append(el("tr", { class: "empty" }, el("td", { colspan: 6 }, "No snapshots yet. Stopping a box takes one.")));
}
document.getElementById("snap-take").addEventListener("click", run0(() => api("POST", B + "/snapshots")));
function run0(fn) { return (ev) => busy(ev.currentTarget, async () => { snapErr.hidden = true; try { await fn(); } catch (e) { snapErr.textContent = e.message; snapErr.hidden = false; } }); }

const dropWhy = {
  boxes: "to another box", host: "to this server's own services", metadata: "to cloud metadata addresses",
  policy: "outside the box's policy", spoof: "with a forged source address", frame: "forged or foreign frames at the box's port",
};

// Network: the firewall's counters and the resolver's decisions.
async function pollNetwork() {
  if (!document.getElementById("panel-network").hidden) {
    try {
      const r = await api("GET", B + "/policy");
      document.getElementById("net-policy").textContent = r.policy;
      document.querySelector("#drops tbody").replaceChildren(...Object.entries(r.drops || {}).map(([k, v]) => el("tr", {}, el("td", {}, k, el("span", { class: "muted" }, dropWhy[k] ? " · " + dropWhy[k] : "")), el("td", { class: "num" }, v))));
      const dns = (r.dns || []).slice().reverse();
      document.querySelector("#dns tbody").replaceChildren(...dns.map((d) => el("tr", {}, el("td", {}, new Date(d.time).toLocaleTimeString()), el("td", { class: "wrap" }, d.name), el("td", {}, d.allowed ? "allowed" : "refused"), el("td", { class: "wrap" }, d.reason))));
      if (!dns.length) document.querySelector("#dns tbody").append(el("tr", { class: "empty" }, el("td", { colspan: 4 }, "No lookups yet.")));
    } catch (e) { report(e); }
  }
  setTimeout(pollNetwork, 2000);
}

const onOpen = { terminal: openShell, desktop: loadShots, prompt: loadAgents, files: () => openDir(dirPath.value), network: pollNetwork };

// Use: the last hour's samples as graphs, then each new one.
const HOUR = 3600 * 1000;
let samples = [];
function renderUse() {
  samples = samples.filter((m) => Date.parse(m.at) >= Date.now() - HOUR);
  const last = samples[samples.length - 1];
  document.getElementById("use-empty").hidden = samples.length > 0;
  const pts = (f) => samples.map((m) => [Date.parse(m.at), f(m)]);
  const peak = (f) => Math.max(0, ...samples.map(f));
  const cpuTop = Math.max(100, peak((m) => m.cpu_percent));
  const memTop = last?.memory_limit_bytes || peak((m) => m.memory_bytes) || 1;
  const netTop = Math.max(1024, peak((m) => Math.max(m.net_rx_rate, m.net_tx_rate)));
  // The graphs span the samples there are: from a minute up to the hour.
  const span = Math.min(HOUR, Math.max(60 * 1000, samples.length ? Date.now() - Date.parse(samples[0].at) : 0));
  document.getElementById("graph-cpu").replaceChildren(graph([pts((m) => m.cpu_percent)], cpuTop, span, "CPU use over the last hour, in percent of one CPU"));
  document.getElementById("graph-mem").replaceChildren(graph([pts((m) => m.memory_bytes)], memTop, span, "Memory use over the last hour"));
  document.getElementById("graph-net").replaceChildren(graph([pts((m) => m.net_rx_rate), pts((m) => m.net_tx_rate)], netTop, span, "Network in and out over the last hour"));
  const text = (id, t) => { document.getElementById(id).textContent = t; };
  if (!last || box?.status !== "running") {
    for (const id of ["use-cpu", "use-mem", "use-net", "use-disk", "use-procs"]) text(id, "—");
    return;
  }
  text("use-cpu", `${last.cpu_percent.toFixed(1)}% of one CPU`);
  text("use-mem", `${size(last.memory_bytes)}${last.memory_limit_bytes ? " of " + size(last.memory_limit_bytes) : ""}`);
  text("use-net", `${size(Math.round(last.net_rx_rate))}/s in, ${size(Math.round(last.net_tx_rate))}/s out`);
  text("use-disk", `${size(last.disk_bytes)}${last.disk_limit_bytes ? " of " + size(last.disk_limit_bytes) : ""}`);
  text("use-procs", String(last.processes));
}
async function loadUse() {
  try { samples = (await api("GET", B + "/metrics?since=1h")).samples || []; } catch { samples = []; }
  renderUse();
}

events({
  box: (b) => { if (b.name === name) { box = b; renderBox(); renderUse(); } },
  metrics: (m) => { if (m.box === name) { samples.push(m); renderUse(); loadBroker(); } },
  "box-removed": (k) => { if (k.name === name) { report(new Error(`Box ${name} was removed.`)); document.body.dataset.removed = "1"; } },
  job: (j) => { if (j.box === name) { jobs.set(j.id, j); renderJobs(); } },
  "job-removed": (k) => { jobs.delete(k.id); renderJobs(); },
  snapshot: (s) => { if (s.box === name) { snaps.set(s.id, s); renderSnaps(); } },
  "snapshot-removed": (k) => { snaps.delete(k.id); renderSnaps(); },
  ready: () => { document.body.dataset.ready = "1"; renderJobs(); renderSnaps(); loadUse(); loadBroker(); },
});
// The fragment names the tab at load, and later too: a link to #files,
// or the browser's back and forward, open the tab it names.
const fromHash = () => (tabs.some((t) => t.id === "tab-" + location.hash.slice(1)) ? location.hash.slice(1) : "overview");
window.addEventListener("hashchange", () => select(fromHash()));
select(fromHash());
