// The access page: API tokens, SSH keys, secrets and (for the owner)
// users, their invitations and quotas.
import { api, el, enc, when, busy, role, clearErrors } from "./common.js";

function table(id, rows, cols, empty) {
  const tbody = document.querySelector(`#${id} tbody`);
  tbody.replaceChildren(...rows);
  if (!rows.length) tbody.append(el("tr", { class: "empty" }, el("td", { colspan: cols }, empty)));
}
const removeBtn = (label, fn, scope) => el("button", { type: "button", class: "small", "aria-label": label, onclick: (ev) => busy(ev.currentTarget, fn, scope) }, "Remove");

async function tokens() {
  const f = document.getElementById("token-form");
  const list = await api("GET", "/tokens");
  table("tokens", list.map((t) => el("tr", { "data-token": t.name }, el("td", {}, t.name), el("td", {}, when(t.created)),
    el("td", { class: "acts" }, el("button", { type: "button", class: "small", "aria-label": "Revoke " + t.name, onclick: (ev) => busy(ev.currentTarget, async () => { await api("DELETE", "/tokens/" + enc(t.name)); tokens(); }, f) }, "Revoke")))), 3, "No API tokens.");
}
document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const f = ev.currentTarget;
  busy(document.getElementById("t-create"), async () => {
    const e2b = document.getElementById("t-e2b").checked;
    const t = await api("POST", "/tokens", { name: document.getElementById("t-name").value.trim(), e2b });
    document.getElementById("token-value").textContent = t.token;
    document.getElementById("token-once").hidden = e2b;
    // An E2B key: the lines 'paddock e2b env' prints, for this server.
    document.getElementById("e2b-env").textContent = e2b ? [`export E2B_API_URL=${location.origin}/e2b`,
      `export E2B_SANDBOX_URL=${location.origin}/e2b/envd`, `export E2B_API_KEY=${t.token}`].join("\n") : "";
    document.getElementById("e2b-once").hidden = !e2b;
    f.reset();
    tokens();
  }, f);
});

async function keys() {
  const f = document.getElementById("key-form");
  const list = await api("GET", "/keys");
  table("keys", list.map((k) => el("tr", { "data-key": k.name }, el("td", {}, k.name), el("td", {}, k.type), el("td", { class: "wrap" }, el("code", {}, k.fingerprint)),
    el("td", { class: "acts" }, removeBtn("Remove key " + k.name, async () => { await api("DELETE", "/keys/" + enc(k.name)); keys(); }, f)))), 4, "No SSH keys. Add one to use 'ssh -p 2222 BOX@this-server'.");
}
document.getElementById("key-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const f = ev.currentTarget;
  busy(document.getElementById("k-add"), async () => {
    await api("POST", "/keys", { name: document.getElementById("k-name").value.trim(), key: document.getElementById("k-key").value.trim() });
    f.reset();
    keys();
  }, f);
});

async function secrets() {
  const f = document.getElementById("secret-form");
  const list = await api("GET", "/secrets");
  table("secrets", list.map((s) => el("tr", { "data-secret": s.name }, el("td", {}, el("code", {}, s.name)), el("td", {}, s.shared ? "yes" : "no"), el("td", {}, when(s.updated)),
    el("td", { class: "acts" }, s.mine ? removeBtn("Remove secret " + s.name, async () => { await api("DELETE", "/secrets/" + enc(s.name)); secrets(); }, f) : el("span", { class: "muted" }, "the owner's")))), 4, "No secrets.");
}
document.getElementById("secret-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const f = ev.currentTarget;
  const shared = document.getElementById("s-shared")?.checked ? "?shared=true" : "";
  busy(document.getElementById("s-set"), async () => {
    await api("PUT", "/secrets/" + enc(document.getElementById("s-name").value.trim()) + shared, document.getElementById("s-value").value);
    f.reset();
    secrets();
  }, f);
});

// The quota fields, as the API names them, and how each reads.
const quotaFields = ["boxes", "running", "drives", "drive_gib", "jobs", "types"];
const bound = (n) => (n > 0 ? String(n) : "∞");

function quotaText(q) {
  if (q.role !== "member") return "none (owner)";
  const own = (f) => (q.own.includes(f) ? "*" : "");
  return [`boxes ${q.use.boxes}/${bound(q.limits.boxes)}${own("boxes")}`, `running ${q.use.running}/${bound(q.limits.running)}${own("running")}`,
    `drives ${q.use.drives}/${bound(q.limits.drives)}${own("drives")}`, `jobs ${q.use.jobs}/${bound(q.limits.jobs)}${own("jobs")}`,
    `drive GiB ${bound(q.limits.drive_gib)}${own("drive_gib")}`, `types ${q.limits.types.length ? q.limits.types.join(",") : "all"}${own("types")}`].join(" · ");
}

// editQuota opens the quota form for a member: their own values filled
// in, the server's defaults as placeholders.
function editQuota(q) {
  const d = document.getElementById("quota-dialog");
  const form = document.getElementById("quota-form");
  document.getElementById("quota-title").textContent = "Quota of " + q.user;
  clearErrors(form);
  for (const f of quotaFields) {
    const input = document.getElementById("q-" + f);
    const v = f === "types" ? q.limits.types.join(",") : String(q.limits[f]);
    input.value = q.own.includes(f) ? v : "";
    input.placeholder = q.own.includes(f) ? "" : (f === "types" && !v ? "all" : v);
  }
  form.onsubmit = (ev) => {
    ev.preventDefault();
    busy(document.getElementById("q-save"), async () => {
      const put = { default: [] };
      for (const f of quotaFields) {
        const v = document.getElementById("q-" + f).value.trim();
        if (v === "") put.default.push(f);
        else if (f === "types") put.types = v.split(",").map((t) => t.trim()).filter(Boolean);
        else put[f] = Number(v);
      }
      await api("PUT", "/users/" + enc(q.user) + "/quota", put);
      d.close();
      users();
    }, form, document.getElementById("quota-error"));
  };
  document.getElementById("q-cancel").onclick = () => d.close();
  d.showModal();
}

async function users() {
  const f = document.getElementById("invite-form");
  const me = document.body.dataset.user;
  const list = await api("GET", "/users");
  const quotas = await Promise.all(list.map((u) => api("GET", "/users/" + enc(u.name) + "/quota")));
  table("users", list.map((u, i) => el("tr", { "data-user": u.name }, el("td", {}, u.name), el("td", {}, u.role), el("td", {}, when(u.created)),
    el("td", { class: "quota" }, quotaText(quotas[i])),
    el("td", { class: "acts" },
      quotas[i].role === "member" ? el("button", { type: "button", class: "small", "data-action": "quota", "aria-label": "Edit the quota of " + u.name, onclick: () => editQuota(quotas[i]) }, "Quota") : "",
      u.name === me ? "" : removeBtn("Remove user " + u.name, async () => {
        if (!confirm(`Remove ${u.name}? Their tokens and keys go; their boxes and drives stay, owned by nobody but you.`)) return;
        await api("DELETE", "/users/" + enc(u.name)); users();
      }, f)))), 5, "");
}
// The invitations not used yet: who made each, for what role, until
// when; each can be revoked (its link then signs nobody up).
async function invites() {
  const f = document.getElementById("invite-form");
  const list = await api("GET", "/users/invites");
  table("invites", list.map((i) => el("tr", { "data-invite": i.id }, el("td", {}, el("code", {}, i.id)), el("td", {}, i.role), el("td", {}, i.by || "—"), el("td", {}, when(i.expires)),
    el("td", { class: "acts" }, el("button", { type: "button", class: "small", "data-action": "revoke", "aria-label": "Revoke invitation " + i.id,
      onclick: (ev) => busy(ev.currentTarget, async () => { await api("DELETE", "/users/invites/" + enc(i.id)); invites(); }, f, document.getElementById("invite-error")) }, "Revoke")))), 5, "No invitation is pending.");
}
if (role === "owner" || role === "admin") {
  document.getElementById("invite-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    busy(document.getElementById("i-go"), async () => {
      const inv = await api("POST", "/users/invites", { role: document.getElementById("i-role").value });
      document.getElementById("invite-link").textContent = inv.url || inv.token;
      document.getElementById("invite-once").hidden = false;
      invites();
    }, ev.currentTarget, document.getElementById("invite-error"));
  });
}

const fail = (id) => (e) => { const p = document.getElementById(id); p.textContent = e.message; p.hidden = false; };
tokens().catch(fail("token-error"));
keys().catch(fail("key-error"));
secrets().catch(fail("secret-error"));
if (role === "owner" || role === "admin") {
  users().catch(fail("invite-error"));
  invites().catch(fail("invite-error"));
}
