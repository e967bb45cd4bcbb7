// corral's dashboard: live regions. htmx's SSE extension holds the page's connection to
// /live (reconnecting with Last-Event-ID); each event it receives is only a signal that
// something changed: it is never put into the page (the swap is cancelled here), and the
// regions marked data-live fetch themselves again (hx-trigger="live"), at most once per
// PERIOD_MS and always once after the last event of a burst, so a busy fleet neither
// floods the server nor leaves a region stale.
(function () {
  "use strict";
  var PERIOD_MS = 400;
  var timer = null;
  var pending = false;

  function refresh() {
    document.querySelectorAll("[data-live]").forEach(function (region) {
      htmx.trigger(region, "live");
    });
  }

  function rest() {
    timer = setTimeout(function () {
      timer = null;
      if (pending) {
        pending = false;
        refresh();
        rest();
      }
    }, PERIOD_MS);
  }

  document.addEventListener("htmx:sseBeforeMessage", function (event) {
    event.preventDefault();
    if (timer !== null) {
      pending = true;
      return;
    }
    refresh();
    rest();
  });
})();
