// The projects page: each Boxfile project with its boxes, drives and
// policies, live; a box whose observed state is not its declared one is
// shown as drifting until the reconciler catches up.
import { api, el, enc, events, stateBadge } from "./common.js";

const boxes = new Map();
const drives = new Map();
let policies = [];
let ready = false;
const root = document.getElementById("projects");

function render() {
  const names = new Set([...boxes.values(), ...drives.values(), ...policies].map((o) => o.project).filter(Boolean));
  const out = [...names].sort().map((p) => {
    const bs = [...boxes.values()].filter((b) => b.project === p).sort((a, b) => a.name.localeCompare(b.name));
    const drift = bs.filter((b) => b.status !== b.desired);
    return el("section", { class: "card project", "data-project": p }, el("h2", {}, p),
      el("p", { class: drift.length ? "error" : "ok" }, drift.length ? `Not yet as declared: ${drift.map((b) => `${b.name} is ${b.status}, declared ${b.desired}`).join("; ")}` : "Matches its declaration."),
      el("dl", { class: "facts" },
        el("dt", {}, "Boxes"), el("dd", {}, bs.length ? bs.flatMap((b, i) => [i ? ", " : "", el("a", { href: "/boxes/" + enc(b.name) }, b.name), " ", stateBadge(b.status)]) : "—"),
        el("dt", {}, "Drives"), el("dd", {}, [...drives.values()].filter((d) => d.project === p).map((d) => d.name).join(", ") || "—"),
        el("dt", {}, "Policies"), el("dd", {}, policies.filter((x) => x.project === p).map((x) => x.name).join(", ") || "—")));
  });
  root.replaceChildren(...out);
  if (!out.length) root.append(el("p", { class: "muted" }, "No projects yet: 'paddock apply' in a folder with a Boxfile makes one."));
}

events({
  box: (b) => { boxes.set(b.name, b); if (ready) render(); },
  "box-removed": (k) => { boxes.delete(k.name); if (ready) render(); },
  drive: (d) => { drives.set(d.name, d); if (ready) render(); },
  "drive-removed": (k) => { drives.delete(k.name); if (ready) render(); },
  ready: async () => { policies = await api("GET", "/policies").catch(() => []); ready = true; render(); },
});
