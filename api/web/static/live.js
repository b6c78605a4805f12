// Status texts follow the state without a reload. Pages mark what can change and this script
// reads the JSON API with the session cookie and changes those parts in place:
//
//   [data-live-run="/api/runs/ID"]            a run: its page (with [data-live-log]) or a row of
//                                             a runs table; followed until the run has ended
//   [data-live-monitors="/api/monitoring"]    a list of monitors: rows [data-monitor-id="ID"]
//   [data-live-monitor="/api/monitoring/ID"]  one monitor's page; when the monitor settles (its
//                                             first look done, paused, failed) the page's
//                                             [data-live-swap][id] sections are fetched afresh
//
// Inside them: [data-run-state] / [data-monitor-state] hold a state pill, [data-run-status] a
// sentence, [data-run-field=started_at|finished_at] and [data-monitor-last] dates,
// [data-count=open|sold|reserved|deleted] numbers, [data-count-likely] the likely sales.
//
// Polling backs off while nothing changes (from 1 s, x1.5 each time, up to a cap), is fast
// again after a change, waits while the tab is hidden, and backs off harder after a failed
// request. No framework, no inline script (the pages' CSP forbids it).
(function () {
  "use strict";

  var WORDS = {
    queued: "Queued", running: "Running", succeeded: "Done", failed: "Failed",
    cancelled: "Cancelled", active: "Active", paused: "Paused", error: "Error",
    starting: "Starting"
  };
  var ENDED = { succeeded: true, failed: true, cancelled: true };
  var MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  function each(scope, selector, fn) {
    var found = scope.querySelectorAll(selector);
    for (var i = 0; i < found.length; i += 1) { fn(found[i]); }
  }

  function pad(n) { return n < 10 ? "0" + n : String(n); }

  // As the pages' `when` filter writes it: "22 Nov 2026, 09:12 UTC".
  function when(iso) {
    var date = iso ? new Date(iso) : null;
    if (!date || isNaN(date.getTime())) { return "—"; }
    return pad(date.getUTCDate()) + " " + MONTHS[date.getUTCMonth()] + " " + date.getUTCFullYear() +
      ", " + pad(date.getUTCHours()) + ":" + pad(date.getUTCMinutes()) + " UTC";
  }

  function text(el, value) {
    if (el.textContent !== value) { el.textContent = value; }
  }

  function pill(holder, value) {
    var span = holder.querySelector(".state");
    if (!span) { return; }
    span.className = "state state-" + value;
    text(span, WORDS[value] || value);
  }

  function get(url, type) {
    var accept = type === "text" ? "text/plain" : type === "html" ? "text/html" : "application/json";
    return fetch(url, { credentials: "same-origin", headers: { Accept: accept } }).then(function (r) {
      if (!r.ok) { throw new Error(String(r.status)); }
      return type === "json" ? r.json() : r.text();
    });
  }

  // Calls `step` (a promise of "changed", "same" or "done") until it says "done".
  function follow(step, most) {
    var first = 1000;
    var delay = first;
    function later() { window.setTimeout(whenVisible, delay); }
    function whenVisible() {
      if (!document.hidden) { tick(); return; }
      document.addEventListener("visibilitychange", function shown() {
        if (document.hidden) { return; }
        document.removeEventListener("visibilitychange", shown);
        tick();
      });
    }
    function tick() {
      step().then(function (outcome) {
        if (outcome === "done") { return; }
        delay = outcome === "changed" ? first : Math.min(most, delay * 1.5);
        later();
      }, function () {
        // A lost request is tried again later; nothing to tell the person yet.
        delay = Math.min(most, delay * 2);
        later();
      });
    }
    later();
  }

  // --- runs -----------------------------------------------------------------------------

  function runStatus(run) {
    if (run.state === "queued") { return "Waiting for its turn…"; }
    if (run.state === "running") {
      if (run.progress >= 0.5) { return "Analysing " + run.items + " listings…"; }
      var reading = run.source === "monitor" ? "Reading the monitor's history…" : "Reading the catalogue…";
      var since = run.started_at ? Math.round((Date.now() - new Date(run.started_at).getTime()) / 1000) : 0;
      return since > 0 ? reading + " " + since + " s so far." : reading;
    }
    if (run.state === "succeeded") { return "Done: " + run.items + " listings analysed."; }
    if (run.state === "failed") { return "It failed: " + (run.error || "no reason was recorded") + "."; }
    return "Cancelled.";
  }

  function showRun(scope, run) {
    var ended = ENDED[run.state] === true;
    var percent = Math.round(run.progress * 100);
    each(scope, "[data-run-state]", function (el) { pill(el, run.state); });
    each(scope, "[data-run-status]", function (el) { text(el, runStatus(run)); });
    each(scope, "[data-run-percent]", function (el) { text(el, run.state === "running" ? percent + "%" : ""); });
    each(scope, "[data-run-items]", function (el) { text(el, String(run.items)); });
    each(scope, "progress", function (el) {
      // Nothing measured yet: an indeterminate bar shows the work is under way.
      if (!ended && percent === 0) { el.removeAttribute("value"); } else { el.value = percent; }
    });
    each(scope, "[data-run-field]", function (el) { text(el, when(run[el.getAttribute("data-run-field")])); });
    each(scope, "[data-run-when]", function (el) {
      el.hidden = (el.getAttribute("data-run-when") === "done") !== ended;
    });
    each(scope, "[data-run-analysis]", function (el) {
      if (run.analysis_id) { el.setAttribute("href", "/analyses/" + run.analysis_id); }
      el.hidden = !run.analysis_id;
    });
    each(scope, "[data-run-downloads]", function (el) { el.hidden = !run.analysis_id; });
    return ended;
  }

  function followRun(scope) {
    var url = scope.getAttribute("data-live-run");
    var logUrl = scope.getAttribute("data-live-log");
    var log = logUrl ? document.querySelector("[data-log]") : null;
    var last = "";
    follow(function () {
      return get(url, "json").then(function (run) {
        var ended = showRun(scope, run);
        var key = [run.state, run.progress, run.items, run.analysis_id].join("|");
        var outcome = ended ? "done" : key !== last ? "changed" : "same";
        last = key;
        if (!log) { return outcome; }
        return get(logUrl, "text").then(function (lines) {
          if (lines && log.textContent !== lines) {
            log.textContent = lines;
            log.scrollTop = log.scrollHeight;
          }
          return outcome;
        });
      });
    }, 5000);
  }

  // --- monitors -------------------------------------------------------------------------

  function monitorState(monitor) {
    return monitor.bootstrapping ? "starting" : monitor.status;
  }

  function showMonitor(scope, monitor) {
    var counts = monitor.counts || {};
    each(scope, "[data-monitor-state]", function (el) { pill(el, monitorState(monitor)); });
    each(scope, "[data-count]", function (el) {
      text(el, String(counts[el.getAttribute("data-count")] || 0));
    });
    each(scope, "[data-count-likely]", function (el) {
      var likely = counts.likely_sold || 0;
      var words = el.getAttribute("data-count-likely") === "of-which" ? ", of which " + likely + " likely" : "(" + likely + " likely)";
      text(el, likely ? words : "");
    });
    each(scope, "[data-monitor-polls]", function (el) { text(el, String(monitor.polls)); });
    each(scope, "[data-monitor-last]", function (el) { text(el, when(monitor.last_poll_at)); });
  }

  function fingerprint(monitor) {
    return JSON.stringify([monitor.id, monitor.status, monitor.bootstrapping, monitor.polls, monitor.counts]);
  }

  function followMonitors(scope) {
    var url = scope.getAttribute("data-live-monitors");
    var last = "";
    follow(function () {
      return get(url, "json").then(function (body) {
        var key = "";
        body.monitors.forEach(function (monitor) {
          key += fingerprint(monitor);
          each(scope, "[data-monitor-id]", function (row) {
            if (row.getAttribute("data-monitor-id") === monitor.id) { showMonitor(row, monitor); }
          });
        });
        var outcome = key !== last ? "changed" : "same";
        last = key;
        return outcome;
      });
    }, 20000);
  }

  // The parts of the page that only the server draws (the listings, the actions that depend
  // on the state), fetched again and put in place of the old ones.
  function swapSections() {
    return get(window.location.href, "html").then(function (html) {
      var fresh = new DOMParser().parseFromString(html, "text/html");
      each(document, "[data-live-swap][id]", function (old) {
        var replacement = fresh.getElementById(old.id);
        if (replacement) { old.replaceWith(document.importNode(replacement, true)); }
      });
    });
  }

  function followMonitor(marker) {
    var url = marker.getAttribute("data-live-monitor");
    var settled = marker.getAttribute("data-settled");
    var last = "";
    follow(function () {
      return get(url, "json").then(function (monitor) {
        showMonitor(document, monitor);
        var shape = monitor.status + (monitor.bootstrapping ? "-starting" : "");
        var swapped = Promise.resolve();
        if (shape !== settled) {
          settled = shape;
          if (!monitor.bootstrapping) {
            each(document, "[data-monitor-bootstrap]", function (el) {
              el.className = "flash flash-success";
              text(el, "The first look is done: " + (monitor.counts ? monitor.counts.open || 0 : 0) +
                " open listings recorded. The monitor now checks the catalogue every " +
                monitor.interval_seconds + " s.");
            });
          }
          swapped = swapSections();
        }
        var key = fingerprint(monitor);
        var outcome = key !== last ? "changed" : "same";
        last = key;
        return swapped.then(function () { return outcome; });
      });
    }, 20000);
  }

  each(document, "[data-live-run]", followRun);
  each(document, "[data-live-monitors]", followMonitors);
  each(document, "[data-live-monitor]", followMonitor);
})();
