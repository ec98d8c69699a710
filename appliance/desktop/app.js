// The desktop page's script: connects noVNC to the box's websocket with the
// single-use ticket from the page's fragment.
import RFB from "/novnc/core/rfb.js";

const box = location.pathname.split("/")[2];
const status = document.getElementById("status");
const ticket = new URLSearchParams(location.hash.slice(1)).get("ticket") || "";
history.replaceState(null, "", location.pathname); // the ticket is single-use; keep it out of history
const scheme = location.protocol === "https:" ? "wss:" : "ws:";
const url = `${scheme}//${location.host}/desktop/${encodeURIComponent(box)}/ws?ticket=${encodeURIComponent(ticket)}`;
const rfb = new RFB(document.getElementById("screen"), url, { wsProtocols: ["binary"] });
rfb.scaleViewport = true;
rfb.addEventListener("connect", () => {
  status.textContent = "connected";
  document.body.dataset.state = "connected";
});
rfb.addEventListener("disconnect", (e) => {
  status.textContent = e.detail.clean ? "disconnected" : "connection failed";
  document.body.dataset.state = "disconnected";
});
