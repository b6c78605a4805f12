// Follows long work without inline script (the CSP forbids it): an element with
// data-poll="<JSON API URL>" and data-kind="run" | "monitor" is refreshed from the JSON API
// every 1.5 s; the page reloads once the work is done so the full result shows.
(function () {
  "use strict";
  var box = document.querySelector("[data-poll]");
  if (!box) { return; }
  var url = box.getAttribute("data-poll");
  var kind = box.getAttribute("data-kind");
  var status = box.querySelector("[data-status]");
  var bar = box.querySelector("progress");
  var log = document.querySelector("[data-log]");

  function get(path, type) {
    return fetch(path, { credentials: "same-origin", headers: { Accept: type } }).then(function (r) {
      if (!r.ok) { throw new Error(String(r.status)); }
      return type === "text/plain" ? r.text() : r.json();
    });
  }

  function tick() {
    get(url, "application/json").then(function (body) {
      if (kind === "monitor") {
        if (!body.bootstrapping) { window.location.reload(); return; }
        return;
      }
      if (body.state !== "queued" && body.state !== "running") { window.location.reload(); return; }
      var percent = Math.round(body.progress * 100);
      if (bar) { bar.value = percent; }
      if (status && body.state === "running") {
        status.textContent = percent + "% done, " + body.items + " listings so far.";
      }
      if (log) {
        return get(url + "/log?tail_lines=40", "text/plain").then(function (text) {
          if (text) { log.textContent = text; log.scrollTop = log.scrollHeight; }
        });
      }
    }).catch(function () {
      // A lost poll is retried at the next tick; nothing to tell the person yet.
    }).then(function () { window.setTimeout(tick, 1500); });
  }
  window.setTimeout(tick, 1000);
})();
