// Fabric page, loaded before plotly.js: starts the first heatmap request while the browser is
// still parsing plotly (fabric.js takes the response over), and owns the query parameters.
(function () {
  "use strict";
  var form = document.getElementById("fabric-controls");
  var plot = document.getElementById("heatmap");

  window.cwFabricParams = function () {
    var data = new FormData(form);
    var q = new URLSearchParams();
    q.set("metric", data.get("metric"));
    q.set("sort", data.get("sort"));
    if (data.get("start") && data.get("end")) {
      q.set("start", data.get("start") + ":00Z");
      q.set("end", data.get("end") + ":00Z");
    } else {
      q.set("window", data.get("window") || "6h");
    }
    q.set("width", String(Math.max(plot.clientWidth - 200, 200)));
    return q;
  };

  var first = window.cwFabricParams().toString();
  window.cwFabricPrefetch = { query: first, response: fetch("/api/v1/heatmap?" + first, { credentials: "same-origin" }) };
})();
