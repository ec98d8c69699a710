// The images page: the user's images (and those shared with them), remove,
// and a build from a Dockerfile and files, its output shown as it comes.
import { api, ApiError, el, enc, when, busy, clearErrors } from "./common.js";
import { tarFiles } from "./tar.js";

const tbody = document.querySelector("#images tbody");
const errP = document.getElementById("image-error");
const log = document.getElementById("build-log");
const csrf = document.querySelector('meta[name="csrf"]').content;

function fail(e) { errP.textContent = e.message; errP.hidden = false; }
function size(n) { return n >= 1 << 30 ? (n / (1 << 30)).toFixed(2) + " GiB" : (n / (1 << 20)).toFixed(1) + " MiB"; }

async function load() {
  const list = await api("GET", "/images");
  tbody.replaceChildren(...list.map((im) => el("tr", { "data-image": im.ref },
    el("td", {}, im.mine ? im.name : im.ref), el("td", {}, el("code", {}, im.id.replace("sha256:", "").slice(0, 12))),
    el("td", {}, size(im.size)), el("td", {}, when(im.built)), el("td", { class: "wrap" }, (im.bases || []).join(", ")),
    el("td", { class: "wrap" }, (im.shared_with || []).join(", ") || "—"),
    el("td", { class: "acts" }, im.mine ? el("button", { type: "button", class: "small", "aria-label": "Remove " + im.name, onclick: (ev) => busy(ev.currentTarget, async () => {
      errP.hidden = true;
      try { await api("DELETE", "/images/" + enc(im.name)); await load(); } catch (e) { fail(e); }
    }) }, "Remove") : null))));
  if (!list.length) tbody.append(el("tr", { class: "empty" }, el("td", { colspan: 7 }, "No images yet.")));
}

// build sends the context and reads the build's server-sent events as
// they come: each log line is shown at once.
async function build(name, tag, policy, context) {
  const q = new URLSearchParams({ name, policy });
  if (tag) q.set("tag", tag);
  const r = await fetch("/v1/images?" + q.toString(), { method: "POST", body: context, credentials: "same-origin",
    headers: { "Content-Type": "application/x-tar", "X-Paddock-CSRF": csrf, Accept: "text/event-stream" } });
  if (!r.ok) {
    let e;
    try { e = await r.json(); } catch { e = { message: `${r.status} ${r.statusText}` }; }
    throw new ApiError(r.status, e);
  }
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error("the build's stream ended before its result");
    buf += value;
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
      if (!data) continue;
      const ev = JSON.parse(data);
      if (ev.type === "log") {
        log.append(ev.text + "\n");
        log.scrollTop = log.scrollHeight;
      } else if (ev.type === "image") {
        return ev.image;
      } else if (ev.type === "error") {
        throw new ApiError(400, { message: ev.message, error: ev.code });
      }
    }
  }
}

// A server that cannot build has no form, and says why instead.
const form = document.getElementById("image-form");
form?.addEventListener("submit", (ev) => {
  ev.preventDefault();
  busy(document.getElementById("i-build"), async () => {
    clearErrors(form);
    errP.hidden = true;
    const [name, tag] = document.getElementById("i-name").value.trim().split(":");
    const dockerfile = new File([document.getElementById("i-dockerfile").value], "Dockerfile", { lastModified: Date.now() });
    const files = [...document.getElementById("i-files").files].filter((f) => f.name !== "Dockerfile");
    log.textContent = "";
    log.hidden = false;
    const im = await build(name, tag || "", document.getElementById("i-policy").value, await tarFiles([dockerfile, ...files]));
    log.append((im.cached ? "unchanged: " : "built ") + im.ref + "\n");
    await load();
  }, form);
});

load().catch(fail);
