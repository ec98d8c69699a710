// The policies page: list, create and edit allowlists.
import { api, el, enc, busy, clearErrors } from "./common.js";

const form = document.getElementById("policy-new");
const tbody = document.querySelector("#policies tbody");
let editing = "";
const lines = (id) => document.getElementById(id).value.split("\n").map((s) => s.trim()).filter(Boolean);

async function load() {
  const list = await api("GET", "/policies");
  tbody.replaceChildren(...list.map((p) => el("tr", { "data-policy": p.name },
    el("td", {}, p.name), el("td", { class: "wrap" }, (p.allow_domains || []).join(", ")), el("td", { class: "wrap" }, (p.allow_cidrs || []).join(", ")),
    el("td", {}, p.project || ""), el("td", { class: "wrap" }, (p.used_by || []).join(", ")),
    el("td", { class: "acts" },
      p.project ? el("span", { class: "muted" }, "edit its Boxfile") : el("button", { type: "button", class: "small", onclick: () => edit(p) }, "Edit"),
      el("button", { type: "button", class: "small", onclick: (ev) => busy(ev.currentTarget, async () => { await api("DELETE", "/policies/" + enc(p.name)); load(); }, form) }, "Remove")))));
  if (!list.length) tbody.append(el("tr", { class: "empty" }, el("td", { colspan: 6 }, "No named policies yet.")));
}

function edit(p) {
  editing = p.name;
  clearErrors(form);
  document.getElementById("pn-title").textContent = "Edit policy " + p.name;
  document.getElementById("p-name").value = p.name;
  document.getElementById("p-name").readOnly = true;
  document.getElementById("p-domains").value = (p.allow_domains || []).join("\n");
  document.getElementById("p-cidrs").value = (p.allow_cidrs || []).join("\n");
  document.getElementById("p-save").textContent = "Save";
  document.getElementById("p-cancel").hidden = false;
  document.getElementById("p-domains").focus();
}
function reset() {
  editing = "";
  form.reset();
  document.getElementById("pn-title").textContent = "New policy";
  document.getElementById("p-name").readOnly = false;
  document.getElementById("p-save").textContent = "Create";
  document.getElementById("p-cancel").hidden = true;
}
document.getElementById("p-cancel").addEventListener("click", reset);
form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const body = { name: document.getElementById("p-name").value.trim(), allow_domains: lines("p-domains"), allow_cidrs: lines("p-cidrs") };
  busy(document.getElementById("p-save"), async () => {
    if (editing) await api("PUT", "/policies/" + enc(editing), body);
    else await api("POST", "/policies", body);
    reset();
    await load();
  }, form);
});
load().catch((e) => { tbody.replaceChildren(el("tr", { class: "empty" }, el("td", { colspan: 6, class: "error" }, e.message))); });
