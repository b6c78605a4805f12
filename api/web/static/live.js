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
// sentence, [data-run-field=started_at|finished_at] dates, [data-count=open|sold|reserved|
// deleted] numbers, [data-count-likely] the likely sales. A monitor's page has its checks
// relative to now ([data-monitor-last], [data-monitor-next], each with [data-at], counted
// every second on the server's clock, told by [data-server-now] and each answer's Date) with
// their time of day beside them ([data-monitor-last-time], [data-monitor-next-time]), and
// the marketplace's clock at the last check ([data-market-clock]). It asks again just after
// the next check is due, so "last check" moves when the check happens.
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

  // As the monitor page's `clock_time` filter writes it: "27 Nov 2026, 05:11:04 UTC".
  function clockTime(iso) {
    var shown = when(iso);
    var date = iso ? new Date(iso) : null;
    return shown === "—" ? shown : shown.replace(" UTC", ":" + pad(date.getUTCSeconds()) + " UTC");
  }

  // The server's clock minus this device's, in ms: relative times count on the server's,
  // which stamps the checks, whatever this device's clock says.
  var skew = 0;
  each(document, "[data-server-now]", function (el) {
    var told = Date.parse(el.getAttribute("data-server-now"));
    if (!isNaN(told)) { skew = told - Date.now(); }
  });
  function serverNow() { return Date.now() + skew; }

  function span(seconds) {
    seconds = Math.abs(seconds);
    if (seconds < 90) { return Math.round(seconds) + " s"; }
    if (seconds < 90 * 60) { return Math.round(seconds / 60) + " min"; }
    if (seconds < 36 * 3600) { return Math.round(seconds / 3600) + " h"; }
    return Math.round(seconds / 86400) + " days";
  }

  // As `_clocks.ago` and `_clocks.due_in` say it.
  function relative(el) {
    var at = Date.parse(el.getAttribute("data-at") || "");
    if (isNaN(at)) { return; }
    var seconds = (serverNow() - at) / 1000;
    if (el.hasAttribute("data-monitor-last")) {
      text(el, seconds < 2 ? "just now" : span(seconds) + " ago");
    } else {
      text(el, -seconds >= 1 ? "in " + span(seconds) : seconds < 3 ? "due now" :
        seconds < 120 ? "checking now (due " + span(seconds) + " ago)" : "late: due " + span(seconds) + " ago");
    }
  }

  function tickClocks() {
    each(document, "[data-monitor-last][data-at], [data-monitor-next][data-at]", relative);
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
      var told = Date.parse(r.headers.get("Date") || "");
      // The header is to the second: kept only when it disagrees by more than that.
      if (!isNaN(told) && Math.abs(told - serverNow()) > 1500) { skew = told - Date.now(); }
      return type === "json" ? r.json() : r.text();
    });
  }

  // Calls `step` (a promise of "changed", "same" or "done") until it says "done". `dueIn`,
  // when given, knows when the next change is due (ms from now, or null when it cannot
  // tell): the wait is then that, within 1 s and `most`, instead of the backoff.
  function follow(step, most, dueIn) {
    var first = 1000;
    var delay = first;
    function later() {
      var due = dueIn ? dueIn() : null;
      var wait = due === null ? delay : Math.max(first, Math.min(most, due));
      window.setTimeout(whenVisible, wait);
    }
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
    showChecks(scope, monitor);
  }

  // The checks' times and the marketplace's clock, as monitor.html draws them.
  function showChecks(scope, monitor) {
    var active = monitor.status === "active";
    each(scope, "[data-monitor-last]", function (el) {
      el.setAttribute("data-at", monitor.last_poll_at || "");
      if (!monitor.last_poll_at) { text(el, "Not yet"); }
    });
    each(scope, "[data-monitor-last-time]", function (el) {
      text(el, monitor.last_poll_at ? clockTime(monitor.last_poll_at) + ", our clock" : "");
    });
    each(scope, "[data-monitor-next]", function (el) {
      el.setAttribute("data-at", active && monitor.next_poll_at ? monitor.next_poll_at : "");
      if (!active) { text(el, "Paused"); } else if (!monitor.next_poll_at) { text(el, "Not scheduled"); }
    });
    each(scope, "[data-monitor-next-time]", function (el) {
      text(el, active && monitor.next_poll_at ? clockTime(monitor.next_poll_at) + ", our clock" : "");
    });
    each(scope, "[data-market-clock]", function (el) {
      if (monitor.clock !== "market" || !monitor.last_check_market_at || !monitor.last_poll_at) { return; }
      var first = el.firstChild;
      if (first && first.nodeType === 3) { first.nodeValue = clockTime(monitor.last_check_market_at); }
      var note = el.querySelector(".muted");
      var apart = (Date.parse(monitor.last_check_market_at) - Date.parse(monitor.last_poll_at)) / 1000;
      var words = Math.abs(apart) < 60 ? "in step with ours" : span(apart) + (apart > 0 ? " ahead of ours" : " behind ours");
      if (note) { text(note, "at the last check: " + words); }
    });
    tickClocks();
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
    var next = document.querySelector("[data-monitor-next][data-at]");
    var due = next ? Date.parse(next.getAttribute("data-at")) : NaN;
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
        due = monitor.status === "active" && monitor.next_poll_at ? Date.parse(monitor.next_poll_at) : NaN;
        return swapped.then(function () { return outcome; });
      });
    }, 20000, function () {
      // Just after the next check is due (a check takes a moment); while it is overdue,
      // every few seconds until it lands.
      if (isNaN(due)) { return null; }
      var wait = due - serverNow();
      return wait > 0 ? wait + 1500 : 3000;
    });
  }

  if (document.querySelector("[data-monitor-last], [data-monitor-next]")) {
    tickClocks();
    window.setInterval(function () { if (!document.hidden) { tickClocks(); } }, 1000);
  }
  each(document, "[data-live-run]", followRun);
  each(document, "[data-live-monitors]", followMonitors);
  each(document, "[data-live-monitor]", followMonitor);
})();
