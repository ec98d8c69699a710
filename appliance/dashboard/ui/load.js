// Loads the page's module, named by this script's data-module. A module
// that fails to load (a browser fails the requests in flight when its
// network changes; a proxy drops one) would leave the page inert: the page
// says so (in its [data-load-status] element) and loads itself again, a
// few times, before it gives up (body data-state="failed"). The dashboard
// and the desktop page load their modules through it.
//
// Until the module is in, a form's submit does nothing: a form the module
// handles has no action of its own, and submitted natively it would load
// the page again and lose what was typed. Once the module is in, the body
// carries data-ready.
(() => {
  const mod = document.currentScript.dataset.module;
  const hold = (ev) => { if (!ev.target.hasAttribute("action")) ev.preventDefault(); };
  document.addEventListener("submit", hold, true);
  const key = "paddock-loads:" + location.pathname;
  const say = (text) => {
    const el = document.querySelector("[data-load-status]");
    if (el) el.textContent = text;
  };
  import(mod).then(
    () => {
      sessionStorage.removeItem(key);
      document.removeEventListener("submit", hold, true);
      document.body.dataset.ready = "true";
    },
    (err) => {
      const n = Number(sessionStorage.getItem(key) || "0") + 1;
      sessionStorage.setItem(key, String(n));
      if (n < 4) {
        say(`This page could not load its script (${err.message}); loading it again…`);
        setTimeout(() => location.reload(), 500 * n);
      } else {
        sessionStorage.removeItem(key);
        say(`This page could not load its script (${err.message}): reload it.`);
        document.body.dataset.state = "failed";
      }
    });
})();
