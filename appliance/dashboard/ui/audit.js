// The audit page: the entries the user may see, newest first, with
// filters (box, user, action, since), new ones added as they are
// recorded; the owner can verify the chain.
import { api, el, enc, when } from "./common.js";

const body = document.querySelector("#audit tbody");
const err = document.getElementById("a-error");
const form = document.getElementById("a-filters");
const field = (id) => document.getElementById(id).value.trim();
let last = 0;
let filter = "";

function row(e) {
  const on = e.box ? el("a", { href: "/boxes/" + enc(e.box) }, e.box) : e.object || null;
  const detail = e.detail ? JSON.stringify(e.detail) : "";
  // What it was done on sits under the action: a phone's table keeps the
  // time, the action and its result in view.
  return el("tr", { "data-seq": String(e.seq), "data-action": e.action },
    el("td", { class: "wide" }, String(e.seq)), el("td", { class: "at" }, when(e.at)), el("td", { class: "wide" }, e.user || "—"),
    el("td", { class: "fold" }, el("code", {}, e.action), on ? el("div", { class: "small on" }, on) : null),
    el("td", { class: "result " + (e.result === "ok" || e.result === "opened" || e.result === "exit 0" ? "" : "error") }, e.result),
    el("td", { class: "wide detail" }, detail), el("td", { class: "wide" }, [e.addr, e.via].filter(Boolean).join(" · ")));
}

async function load(more) {
  const q = new URLSearchParams(filter);
  if (more) q.set("after", String(last));
  else q.set("limit", "500");
  try {
    const es = await api("GET", "/audit?" + q.toString());
    err.hidden = true;
    if (es.length) last = es[es.length - 1].seq;
    const rows = es.reverse().map(row);
    if (more) body.prepend(...rows);
    else body.replaceChildren(...rows);
    if (!body.children.length) body.replaceChildren(el("tr", { class: "empty" }, el("td", { colspan: "7" }, "No entries.")));
    else body.querySelector("tr.empty")?.remove();
  } catch (e) {
    err.textContent = e.message;
    err.hidden = false;
  }
  document.body.dataset.loaded = "1";
}

form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const q = new URLSearchParams();
  for (const [k, id] of [["box", "a-box"], ["user", "a-user"], ["action", "a-action"], ["since", "a-since"]]) {
    if (field(id)) q.set(k, field(id));
  }
  filter = q.toString();
  last = 0;
  load(false);
});

const verify = document.getElementById("a-verify");
verify?.addEventListener("click", async () => {
  const out = document.getElementById("a-check");
  out.hidden = false;
  out.className = "";
  try {
    // The head this browser saw at its last check is a witness outside
    // the server: a log cut off at its end, or wiped, no longer holds it.
    const seen = localStorage.getItem("paddock-audit-head");
    const c = await api("GET", "/audit/verify" + (seen ? "?seen=" + encodeURIComponent(seen) : ""));
    out.textContent = c.ok ? `The chain holds: ${c.entries} entries, ${c.first} to ${c.last}.` + (seen ? " It still holds the entry this browser saw at its last check." : "")
      : `Broken at entry ${c.broken.seq}: ${c.broken.reason}.`;
    out.className = c.ok ? "ok" : "error";
    if (c.ok && c.head) localStorage.setItem("paddock-audit-head", `${c.head.seq}:${c.head.hash}`);
  } catch (e) {
    out.textContent = e.message;
    out.className = "error";
  }
});

load(false);
setInterval(() => { if (!document.hidden && last) load(true); }, 3000);
