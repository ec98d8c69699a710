// The desktop page's script: connects noVNC to the box's websocket with the
// single-use ticket from the page's fragment. The page loads it through the
// dashboard's ui/load.js, which loads the page again when one of noVNC's
// modules fails to load: the ticket is used only by the websocket, so it
// still works then.
import RFB from "/novnc/core/rfb.js";

const box = location.pathname.split("/")[2];
const status = document.getElementById("status");
const frag = new URLSearchParams(location.hash.slice(1));
const ticket = frag.get("ticket") || "";
const viewOnly = frag.get("view") === "1"; // the server drops a viewer's input; say so
history.replaceState(null, "", location.pathname); // the ticket is single-use; keep it out of history

function state(s, text) {
  status.textContent = text;
  document.body.dataset.state = s;
}

const scheme = location.protocol === "https:" ? "wss:" : "ws:";
const url = `${scheme}//${location.host}/desktop/${encodeURIComponent(box)}/ws?ticket=${encodeURIComponent(ticket)}`;
const rfb = new RFB(document.getElementById("screen"), url, { wsProtocols: ["binary"] });
rfb.scaleViewport = true;
rfb.viewOnly = viewOnly;
rfb.addEventListener("connect", () => state("connected", "connected"));
rfb.addEventListener("disconnect", (e) => state("disconnected", e.detail.clean ? "disconnected" : "connection failed"));
