// The drives page: list (live), new, remove, backup and restore.
import { api, el, enc, events, when, stateBadge, busy, confirmByName, clearErrors } from "./common.js";

const drives = new Map();
const tbody = document.querySelector("#drives tbody");
const errP = document.getElementById("drive-error");
let ready = false;

function fail(e) { errP.textContent = e.message; errP.hidden = false; }
function render() {
  const list = [...drives.values()].sort((a, b) => a.name.localeCompare(b.name));
  // The server column shows once there is more than one server.
  const servers = list.some((d) => d.node);
  document.querySelector("#drives th.node-col").hidden = !servers;
  tbody.replaceChildren(...list.map((d) => el("tr", { "data-drive": d.name },
    el("td", {}, d.name), el("td", {}, stateBadge(d.state)), el("td", {}, d.size || "—"),
    el("td", { class: "wrap" }, Object.entries(d.labels || {}).map(([k, v]) => `${k}=${v}`).join(", ")),
    el("td", {}, d.project || ""), el("td", { class: "wrap" }, (d.used_by || []).map((b) => el("a", { href: "/boxes/" + enc(b) }, b)).flatMap((a, i) => (i ? [", ", a] : [a]))),
    servers ? el("td", { "data-node": d.node || "" }, d.node || "") : null,
    el("td", {}, when(d.created)),
    el("td", { class: "acts" },
      el("a", { class: "button small", href: `/v1/drives/${enc(d.name)}/archive`, download: d.name + ".tar" }, "Backup"),
      el("button", { type: "button", class: "small", onclick: () => openRestore(d.name) }, "Restore"),
      el("button", { type: "button", class: "small", "aria-label": "Remove " + d.name, onclick: (ev) => busy(ev.currentTarget, async () => { errP.hidden = true; try { await api("DELETE", "/drives/" + enc(d.name)); drives.delete(d.name); render(); } catch (e) { fail(e); } }) }, "Remove")))));
  if (!list.length) tbody.append(el("tr", { class: "empty" }, el("td", { colspan: 9 }, ready ? "No drives yet." : "Loading…")));
}

events({
  drive: (d) => { drives.set(d.name, d); if (ready) render(); },
  "drive-removed": (k) => { drives.delete(k.name); if (ready) render(); },
  ready: () => { ready = true; render(); },
});

const form = document.getElementById("drive-form");
form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  busy(document.getElementById("d-create"), async () => {
    const d = await api("POST", "/drives", { name: document.getElementById("d-name").value.trim() });
    drives.set(d.name, d);
    render();
    form.reset();
  }, form);
});

const dlg = document.getElementById("drive-restore");
function openRestore(name) {
  dlg.querySelector(".dr-name").textContent = name;
  clearErrors(dlg);
  document.getElementById("dr-file").value = "";
  confirmByName(document.getElementById("dr-confirm"), document.getElementById("dr-go"), name);
  dlg.dataset.drive = name;
  dlg.showModal();
}
document.getElementById("dr-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const file = document.getElementById("dr-file").files[0];
  busy(document.getElementById("dr-go"), async () => {
    if (!file) throw new Error("choose an archive first");
    await api("PUT", `/drives/${enc(dlg.dataset.drive)}/archive`, file, { headers: { "Content-Type": "application/x-tar" } });
    dlg.close();
  }, dlg);
});
