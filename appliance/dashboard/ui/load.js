// Loads the page's module, named by this script's data-module. A module
// that fails to load (a browser fails the requests in flight when its
// network changes; a proxy drops one) would leave the page inert: the page
// says so (in its [data-load-status] element) and loads itself again, a
// few times, before it gives up (body data-state="failed"). The dashboard
// and the desktop page load their modules through it.
(() => {
  const mod = document.currentScript.dataset.module;
  const key = "paddock-loads:" + location.pathname;
  const say = (text) => {
    const el = document.querySelector("[data-load-status]");
    if (el) el.textContent = text;
  };
  import(mod).then(
    () => sessionStorage.removeItem(key),
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
