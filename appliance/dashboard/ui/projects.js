// The projects page: each Boxfile project with its boxes, drives and
// policies, its last apply, and its drift (what 'paddock plan' of its
// last applied Boxfile would change now), refreshed when a box changes.
import { api, el, enc, events, when } from "./common.js";

const root = document.getElementById("projects");
let ready = false;
let timer = 0;

const links = (names, kind) => names.length ? names.flatMap((n, i) => [i ? ", " : "", kind === "box" ? el("a", { href: "/boxes/" + enc(n) }, n) : n]) : "—";

async function load() {
  try {
    const list = await api("GET", "/projects");
    const out = list.map((p) => el("section", { class: "card project", "data-project": p.name }, el("h2", {}, p.name),
      p.drift_error ? el("p", { class: "error" }, p.drift_error)
        : p.applied_at ? (p.drift?.length
          ? el("div", { class: "drift" }, el("p", { class: "error" }, "Drift: 'paddock plan' would change"),
            el("ul", {}, p.drift.map((c) => el("li", {}, el("code", {}, `${c.action} ${c.address}`),
              (c.attrs || []).map((a) => ` · ${a.name}: ${a.before || "—"} → ${a.after || "—"}`).join(""),
              c.reasons?.length ? ` (${c.reasons.join("; ")})` : ""))))
          : el("p", { class: "ok" }, "No drift: the machine matches the last applied Boxfile."))
          : el("p", { class: "muted" }, "Applied before Paddock kept a record; apply it again to follow its drift."),
      el("dl", { class: "facts" },
        el("dt", {}, "Boxes"), el("dd", {}, links(p.boxes, "box")),
        el("dt", {}, "Drives"), el("dd", {}, links(p.drives)),
        el("dt", {}, "Policies"), el("dd", {}, links(p.policies)),
        p.owner ? [el("dt", {}, "Owner"), el("dd", {}, p.owner)] : null,
        p.applied_at ? [el("dt", {}, "Last applied"), el("dd", {}, `${when(p.applied_at)} by ${p.applied_by}`), el("dt", {}, "State serial"), el("dd", {}, String(p.serial))] : null)));
    root.replaceChildren(...out);
    if (!out.length) root.append(el("p", { class: "muted" }, "No projects yet: 'paddock apply' in a folder with a Boxfile makes one."));
  } catch (e) {
    root.replaceChildren(el("p", { class: "error" }, e.message));
  }
  document.body.dataset.loaded = "1";
}

// Many changes at once (an apply) make one reload.
function soon() { if (!ready) return; clearTimeout(timer); timer = setTimeout(load, 300); }
events({ box: soon, "box-removed": soon, drive: soon, "drive-removed": soon, ready: () => { ready = true; load(); } });
