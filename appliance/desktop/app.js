// The desktop page's script: connects noVNC to the box's websocket with the
// single-use ticket from the page's fragment.
//
// noVNC is two dozen modules. When one of them fails to load (the browser
// aborts requests in flight when its network changes, a proxy drops one),
// the page says so and loads itself again, a few times, before it gives up:
// the ticket is used only by the websocket, so it still works on the next
// load.
const box = location.pathname.split("/")[2];
const status = document.getElementById("status");
const ticket = new URLSearchParams(location.hash.slice(1)).get("ticket") || "";
const tries = "paddock-desktop-loads:" + location.pathname;
const maxLoads = 4;

function state(s, text) {
  status.textContent = text;
  document.body.dataset.state = s;
}

let RFB;
try {
  RFB = (await import("/novnc/core/rfb.js")).default;
} catch (err) {
  const n = Number(sessionStorage.getItem(tries) || "0") + 1;
  sessionStorage.setItem(tries, String(n));
  if (n < maxLoads && ticket) {
    state("reloading", `could not load the viewer (${err.message}); trying again`);
    setTimeout(() => location.reload(), 500 * n);
  } else {
    sessionStorage.removeItem(tries);
    state("failed", `could not load the viewer: ${err.message}; reload the page`);
  }
  throw err;
}
sessionStorage.removeItem(tries);
history.replaceState(null, "", location.pathname); // the ticket is single-use; keep it out of history

const scheme = location.protocol === "https:" ? "wss:" : "ws:";
const url = `${scheme}//${location.host}/desktop/${encodeURIComponent(box)}/ws?ticket=${encodeURIComponent(ticket)}`;
const rfb = new RFB(document.getElementById("screen"), url, { wsProtocols: ["binary"] });
rfb.scaleViewport = true;
rfb.addEventListener("connect", () => state("connected", "connected"));
rfb.addEventListener("disconnect", (e) => state("disconnected", e.detail.clean ? "disconnected" : "connection failed"));
