// The boxes page: the list, live from the events stream, with filters,
// the "New box" form and each box's actions.
import { api, el, enc, events, ttlLeft, when, stateBadge, showError, clearErrors, busy, confirmByName, role, size, useText, oomText, localNote } from "./common.js";

const boxes = new Map();
const use = new Map(); // box name -> its newest sample
const snapshots = new Map(); // id -> snapshot
const tbody = document.querySelector("#boxes tbody");
const owner = role === "owner" || role === "admin";
const filters = { state: document.getElementById("f-state"), project: document.getElementById("f-project"), owner: document.getElementById("f-owner"), node: document.getElementById("f-node"), label: document.getElementById("f-label") };
// A label filter is KEY=VALUE (or KEY, any value), several with commas.
const labelsMatch = (b, text) => text.split(",").map((s) => s.trim()).filter(Boolean).every((want) => {
  const [k, ...v] = want.split("=");
  const have = (b.labels || {})[k.trim()];
  return have !== undefined && (!v.length || have === v.join("=").trim());
});
// The server column and filter show once boxes are on more than one
// server (a box's node is set only then).
let servers = false;
let ready = false;

// A box's actions: its start or stop in the row, the rest in a menu
// beside it (a popover, so that no column's width can push them out of
// view, at any width).
function actions(b) {
  const td = el("td", { class: "acts" });
  const err = (e) => { const p = document.getElementById("list-error"); p.textContent = `${b.name}: ${e.message}`; p.hidden = false; };
  const run = (btn, fn) => busy(btn, async () => { document.getElementById("list-error").hidden = true; try { await fn(); } catch (e) { err(e); } });
  const post = (path, body) => () => api("POST", `/boxes/${enc(b.name)}/${path}`, body);
  // A box shared as a viewer is read only; as a member, its owner's alone
  // forks and removes it.
  if (b.access === "viewer") return td;
  const menu = el("div", { popover: "", class: "row-menu", role: "menu", id: `menu-${b.name}` });
  const item = (label, fn, cls) => el("button", { type: "button", role: "menuitem", class: "small " + (cls || ""), "data-action": label.toLowerCase(), "aria-label": `${label} ${b.name}`,
    onclick: (e) => { const btn = e.currentTarget; menu.hidePopover(); fn(btn); } }, label);
  const primary = b.desired === "running"
    ? el("button", { type: "button", class: "small", "data-action": "stop", "aria-label": `Stop ${b.name}`, onclick: (e) => run(e.currentTarget, post("stop")) }, "Stop")
    : el("button", { type: "button", class: "small", "data-action": "start", "aria-label": `Start ${b.name}`, onclick: (e) => run(e.currentTarget, post("start")) }, "Start");
  menu.append(item("Snapshot", (btn) => run(btn, post("snapshots"))));
  if (!b.access) menu.append(item("Fork", (btn) => run(btn, post("fork", {}))));
  menu.append(item("Restore", () => openRestore(b.name)));
  if (!b.access) menu.append(item("Remove", () => openRemove(b.name), "danger-text"));
  const more = el("button", { type: "button", class: "small more", "data-action": "more", "aria-label": `More actions for ${b.name}`, "aria-haspopup": "menu", popovertarget: menu.id }, "More ▾");
  // Under its button, kept inside the window.
  menu.addEventListener("toggle", (e) => {
    if (e.newState !== "open") return;
    const r = more.getBoundingClientRect();
    const w = menu.offsetWidth, h = menu.offsetHeight;
    menu.style.left = Math.max(4, Math.min(r.right - w, innerWidth - w - 4)) + "px";
    menu.style.top = (r.bottom + h + 4 <= innerHeight ? r.bottom + 2 : Math.max(4, r.top - h - 2)) + "px";
  });
  td.append(primary, more, menu);
  return td;
}

function row(b) {
  const drives = (b.mounts || []).map((m) => m.drive).join(", ");
  return el("tr", { "data-box": b.name },
    el("td", { class: "name" }, el("a", { href: `/boxes/${enc(b.name)}` }, b.name), b.access ? el("div", { class: "muted small shared" }, `shared with you: ${b.access}`) : null),
    owner ? el("td", { class: "wide" }, b.owner || "") : null,
    el("td", { class: "wide fold" }, b.project || ""),
    servers ? el("td", { class: "wide", "data-node": b.node || "" }, b.node || "") : null,
    el("td", { class: "wide" }, b.type),
    el("td", { class: "status" }, stateBadge(b.status), b.sleeping ? el("div", { class: "note small" }, "asleep: its next use starts it") : null,
      b.error ? el("div", { class: "error small" }, b.error) : null,
      b.note ? el("div", { class: "note small" }, localNote(b.note, b.sleeping)) : null,
      b.oom_at ? el("div", { class: "oom small" }, oomText(b)) : null),
    el("td", { class: "use num wide", "data-use": b.name }, b.status === "running" ? useText(use.get(b.name)) : "—"),
    el("td", { class: "ttl num wide", "data-expires": b.expires_at || "" }, ttlLeft(b)),
    el("td", { class: "wide fold" }, b.policy || "allow-all"),
    el("td", { class: "wide fold" }, drives),
    actions(b));
}

function fillFilter(sel, values) {
  if (!sel) return;
  const cur = sel.value;
  const have = new Set([...sel.options].map((o) => o.value));
  for (const v of [...values].sort()) if (v && !have.has(v)) sel.append(el("option", {}, v));
  sel.value = cur;
}

function render() {
  const rows = [...boxes.values()].sort((a, b) => a.name.localeCompare(b.name));
  fillFilter(filters.project, new Set(rows.map((b) => b.project)));
  fillFilter(filters.owner, new Set(rows.map((b) => b.owner)));
  servers = rows.some((b) => b.node);
  document.querySelector("#boxes th.node-col").hidden = !servers;
  filters.node.closest("label").hidden = !servers;
  fillFilter(filters.node, new Set(rows.map((b) => b.node)));
  const shown = rows.filter((b) => (!filters.state.value || b.status === filters.state.value) &&
    (!filters.project.value || b.project === filters.project.value) &&
    (!filters.owner || !filters.owner.value || b.owner === filters.owner.value) &&
    (!servers || !filters.node.value || b.node === filters.node.value) &&
    labelsMatch(b, filters.label.value));
  // A row's menu open while the list changes stays open on the new row.
  const open = tbody.querySelector(".row-menu:popover-open")?.id;
  tbody.replaceChildren(...shown.map(row));
  if (open) document.getElementById(open)?.showPopover();
  if (shown.length === 0) {
    const msg = !ready ? "Loading…" : rows.length ? "No box matches the filters." : "No boxes yet. Make one with New box, or 'paddock new'.";
    tbody.append(el("tr", { class: "empty" }, el("td", { colspan: 12 }, msg)));
  }
}

for (const f of Object.values(filters)) f?.addEventListener("change", render);
filters.label.addEventListener("input", render);
setInterval(() => { for (const td of tbody.querySelectorAll("td.ttl")) { const b = boxes.get(td.closest("tr").dataset.box); if (b) td.textContent = ttlLeft(b); } }, 1000);

events({
  box: (b) => { boxes.set(b.name, b); if (ready) render(); },
  "box-removed": (k) => { boxes.delete(k.name); if (ready) render(); },
  snapshot: (s) => snapshots.set(s.id, s),
  "snapshot-removed": (k) => snapshots.delete(k.id),
  ready: () => { ready = true; render(); },
  // A sample changes its box's Use cell alone.
  metrics: (m) => {
    use.set(m.box, m);
    const td = tbody.querySelector(`td[data-use="${CSS.escape(m.box)}"]`);
    if (td) td.textContent = useText(m);
  },
});

// New box.
const dlg = document.getElementById("new-box");
const form = document.getElementById("new-form");
document.getElementById("new-open").addEventListener("click", () => { clearErrors(form); dlg.showModal(); document.getElementById("n-name").focus(); });
form.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const f = form.elements;
  const body = { type: f.type.value, image: f.image.value, policy: f.policy.value, desktop: f.desktop.checked };
  if (f.name.value.trim()) body.name = f.name.value.trim();
  if (f.ttl.value.trim()) body.ttl = f.ttl.value.trim();
  const mounts = [...form.querySelectorAll('input[name="drive"]:checked')].map((c) => ({ drive: c.value, path: form.querySelector(`input[name="mount-${CSS.escape(c.value)}"]`).value }));
  if (mounts.length) body.mounts = mounts;
  const env = {};
  for (const line of f.env.value.split("\n")) {
    if (!line.trim()) continue;
    const i = line.indexOf("=");
    if (i <= 0) { showError(form, { field: "env", message: `env: "${line}" is not NAME=value` }); return; }
    env[line.slice(0, i).trim()] = line.slice(i + 1);
  }
  if (Object.keys(env).length) body.env = env;
  await busy(document.getElementById("new-create"), async () => {
    const b = await api("POST", "/boxes", body);
    boxes.set(b.name, b);
    render();
    dlg.close();
    form.reset();
  }, form);
});

// Remove, confirmed by typing the name.
const rm = document.getElementById("rm-box");
function openRemove(name) {
  rm.querySelector(".rm-name").textContent = name;
  clearErrors(rm);
  confirmByName(document.getElementById("rm-confirm"), document.getElementById("rm-go"), name);
  rm.dataset.box = name;
  rm.showModal();
}
document.getElementById("rm-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const name = rm.dataset.box;
  await busy(document.getElementById("rm-go"), async () => {
    await api("DELETE", `/boxes/${enc(name)}`);
    boxes.delete(name);
    render();
    rm.close();
  }, rm);
});

// Restore from a chosen snapshot.
const rs = document.getElementById("restore-box");
function openRestore(name) {
  rs.querySelector(".restore-name").textContent = name;
  clearErrors(rs);
  const sel = document.getElementById("restore-snap");
  const mine = [...snapshots.values()].filter((s) => s.box === name && s.state === "ready").sort((a, b) => b.created.localeCompare(a.created));
  sel.replaceChildren(...mine.map((s) => el("option", { value: s.id }, `${when(s.created)} · ${s.reason}${s.size ? " · " + size(s.size) : ""} · ${s.id}`)));
  document.getElementById("restore-go").disabled = mine.length === 0;
  if (!mine.length) sel.append(el("option", {}, "no snapshots yet"));
  rs.dataset.box = name;
  rs.showModal();
}
document.getElementById("restore-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  await busy(document.getElementById("restore-go"), async () => {
    await api("POST", `/boxes/${enc(rs.dataset.box)}/restore`, { snapshot: document.getElementById("restore-snap").value });
    rs.close();
  }, rs);
});
