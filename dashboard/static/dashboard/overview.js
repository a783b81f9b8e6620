// Overview live updates: counts, firing alerts and ingest health after each ingest cycle or alert
// change; the utilization chart is re-drawn from /api/v1/overview (same trace order as the server's).
(function () {
  "use strict";
  var pending = null;
  function refresh() {
    if (pending) { return; }
    pending = setTimeout(function () {
      pending = null;
      window.cwRefresh(["node-states", "firing-alerts", "firing-count", "ingest-health"]);
      var plot = document.getElementById("plot-util");
      if (!plot || !plot.data) { return; }
      fetch("/api/v1/overview", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (body) {
        var u = body.utilization, x = [], y = [];
        Object.keys(u.series).forEach(function (name) {
          x.push(u.times, u.times); y.push(u.series[name].util, u.series[name].tensor);
        });
        if (x.length === plot.data.length) { Plotly.restyle(plot, { x: x, y: y }); }
      });
    }, 500); // coalesce the burst of per-family events of one cycle
  }
  document.addEventListener("live", function (e) {
    var type = e.detail && e.detail.type;
    if (type === "ingest.committed" || type === "alerts.changed") { refresh(); }
  });
})();
