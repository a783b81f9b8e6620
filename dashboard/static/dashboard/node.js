// Node page live updates: after an ingest cycle, re-read this page's figures and redraw them in
// place (not when the page is pinned to a moment with ?at= or a custom range: that view is history).
(function () {
  "use strict";
  var params = new URLSearchParams(location.search);
  if (params.get("at") || params.get("start")) { return; }
  var pending = null;
  function refresh() {
    fetch(location.href, { credentials: "same-origin" }).then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        document.querySelectorAll("[data-figure]").forEach(function (el) {
          var source = fresh.getElementById(el.dataset.figure);
          if (!source) { return; }
          var figure = JSON.parse(source.textContent);
          Plotly.react(el, figure.data, figure.layout, window.cwFigures.config);
        });
      });
  }
  document.addEventListener("live", function (e) {
    if (e.detail && e.detail.type === "ingest.committed" && !pending) {
      pending = setTimeout(function () { pending = null; refresh(); }, 500);
    }
  });
})();
