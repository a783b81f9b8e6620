// Live refresh of a server-rendered page, like the overview: after an ingest cycle that covered one
// of the families named in <body data-live-families="runs kueue"> (or any alert change), re-fetch
// the page and swap the elements named in data-live-ids, then draw the figures they hold.
(function () {
  "use strict";
  var root = document.querySelector("[data-live-ids]");
  if (!root) { return; }
  var ids = root.getAttribute("data-live-ids").split(" ");
  var families = (root.getAttribute("data-live-families") || "").split(" ");
  var pending = null;
  function refresh() {
    if (pending) { return; }
    pending = setTimeout(function () { // coalesce the burst of per-family events of one cycle
      pending = null;
      window.cwRefresh(ids).then(function () {
        ids.forEach(function (id) {
          var fresh = document.getElementById(id);
          if (fresh) { fresh.querySelectorAll("[data-figure]").forEach(window.cwFigures.draw); }
        });
      });
    }, 500);
  }
  document.addEventListener("live", function (e) {
    var event = e.detail || {};
    if (event.type === "alerts.changed") { refresh(); return; }
    if (event.type === "ingest.committed" && (event.families || []).some(function (f) { return families.indexOf(f) >= 0; })) { refresh(); }
  });
})();
