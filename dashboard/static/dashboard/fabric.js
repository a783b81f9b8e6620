// Fabric page: the per-node heatmap and the rails view, drawn from /api/v1/ with plotly.js.
// Node names are untrusted: Plotly gets escaped strings; the hover box is built with textContent.
(function () {
  "use strict";
  var plot = document.getElementById("heatmap");
  var railsPlot = document.getElementById("rails");
  var hoverBox = document.getElementById("hover");
  var statusEl = document.getElementById("heatmap-status");
  var form = document.getElementById("fabric-controls");
  var ibMetrics = JSON.parse(document.getElementById("ib-metrics").textContent);
  var HIGH_IS_BAD = { ib_xmit_wait: 1, ib_errors: 1, nvlink_errors: 1, drift: 1 };
  // High-is-bad metrics: zero is a muted slate (visible against the dark page, unlike "Hot"'s
  // black, so "no errors" differs from "no data"), the worst values glow.
  var BAD_SCALE = [[0, "#243447"], [0.25, "#7a2e12"], [0.6, "#e8702a"], [1, "#ffe066"]];
  var MARK_COLOURS = { critical: "#f85149", warning: "#d29922", silenced: "#8b949e" };
  var state = null; // the drawn heatmap: {body, query}
  var railsBody = null;
  window.cwFabric = { state: function () { return state; }, drawnAt: null };

  function purge(el) { Plotly.purge(el); delete el.dataset.bound; }

  var params = window.cwFabricParams; // fabric-prefetch.js

  function showEmpty(id, message, link) {
    var box = document.getElementById(id);
    box.textContent = message + " ";
    if (link) {
      var a = document.createElement("a");
      a.href = link[0]; a.textContent = link[1]; box.appendChild(a);
    }
    box.hidden = false;
  }

  function emptyMessage(metric) {
    if (ibMetrics.indexOf(metric) >= 0) { return ["No IB metrics found for this window —", ["/coverage/", "see Coverage"]]; }
    if (metric === "tensor_active" || metric === "drift") {
      return ["No tensor-core activity found: the DCGM profiling module may not be loaded —", ["/coverage/", "see Coverage"]];
    }
    return ["No GPU metrics found for this window —", ["/coverage/", "see Coverage"]];
  }

  // Category labels must stay unique after shortening, or two rows would merge.
  function uniqueTicks(names) {
    var seen = {};
    return names.map(function (name) {
      var tick = window.cwTick(name);
      while (seen[tick]) { tick += "\u200b"; }
      seen[tick] = true;
      return tick;
    });
  }

  // Colour bars in readable units: bytes/s drawn as GB/s (Plotly's SI "250G" next to
  // "B/s" would read as "250 billion" or, with its default "B" suffix, as 250 bytes).
  var DISPLAY_UNITS = { "B/s": ["GB/s", 1e9] };
  function display(unit, values) {
    var scaled = DISPLAY_UNITS[unit];
    if (!scaled) { return { unit: unit, z: values }; }
    var z = values.map(function (row) { return row.map(function (v) { return v === null ? null : v / scaled[1]; }); });
    return { unit: scaled[0], z: z };
  }
  // Counts (errors) start at zero; with nothing counted the bar shows 0…1, not −0.5…0.5.
  function zRange(unit, z) {
    if (unit !== "errors") { return {}; }
    var top = 0;
    z.forEach(function (row) { row.forEach(function (v) { if (v !== null && v > top) { top = v; } }); });
    return { zmin: 0, zmax: Math.max(top, 1) };
  }
  function colorbar(unit) {
    return { title: { text: unit, side: "right" }, thickness: 12, exponentformat: "SI" };
  }

  function figure(body) {
    var labels = uniqueTicks(body.nodes);
    var shown = display(body.unit, body.values);
    var marked = { x: [], y: [], color: [] };
    body.nodes.forEach(function (name, i) {
      var mark = body.marks && body.marks[name];
      if (mark) { marked.x.push(0); marked.y.push(labels[i]); marked.color.push(MARK_COLOURS[mark.state] || "#d29922"); }
    });
    var rows = body.nodes.length;
    var heat = {
      type: "heatmap", x: body.times, y: labels, z: shown.z, zsmooth: false, hoverinfo: "none",
      colorscale: HIGH_IS_BAD[body.metric] ? BAD_SCALE : "Viridis", reversescale: false,
      colorbar: colorbar(shown.unit), xgap: 0, ygap: rows > 200 ? 0 : 1,
    };
    Object.assign(heat, zRange(shown.unit, shown.z));
    var marks = {
      type: "scatter", mode: "markers", x: marked.x, y: marked.y, xaxis: "x2", hoverinfo: "none",
      marker: { symbol: "square", size: 7, color: marked.color }, showlegend: false,
    };
    var layout = {
      height: Math.min(Math.max(rows * 12 + 110, 320), 1100),
      paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)", font: { color: "#e6edf3", size: 11 },
      margin: { l: 150, r: 20, t: 10, b: 50 },
      xaxis: { domain: [0, 0.985], title: { text: "time (UTC)" }, type: "date", gridcolor: "#2b3642" },
      xaxis2: { domain: [0.988, 1], visible: false, range: [-1, 1] },
      yaxis: { type: "category", autorange: "reversed", title: { text: "node" }, automargin: false, showgrid: false,
        showticklabels: rows <= 120, tickfont: { size: 10 } },
    };
    return { data: [heat, marks], layout: layout };
  }

  function draw(body) {
    var fig = figure(body);
    Plotly.react(plot, fig.data, fig.layout, window.cwFigures.config);
    if (!plot.dataset.bound) { plot.dataset.bound = "1"; bind(); }
    window.cwFabric.drawnAt = performance.now();
    statusEl.textContent = body.nodes.length + " nodes × " + body.times.length + " columns · step " +
      body.step + " s · " + display(body.unit, []).unit;
  }

  function load() {
    var q = params();
    statusEl.textContent = "loading…";
    history.replaceState(null, "", "?" + ["metric", "window", "start", "end", "sort"].filter(function (k) { return q.get(k); })
      .map(function (k) { return k + "=" + encodeURIComponent(q.get(k)); }).join("&"));
    var prefetched = window.cwFabricPrefetch;
    window.cwFabricPrefetch = null;
    var request = prefetched && prefetched.query === q.toString() ? prefetched.response :
      fetch("/api/v1/heatmap?" + q.toString(), { credentials: "same-origin" });
    return request
      .then(function (r) { return r.json().then(function (b) { return { ok: r.ok, body: b }; }); })
      .then(function (res) {
        document.getElementById("heatmap-empty").hidden = true;
        if (!res.ok) { showEmpty("heatmap-empty", "Bad " + res.body.parameter + ": " + res.body.detail); purge(plot); return; }
        state = { body: res.body, query: q };
        if (!res.body.nodes.length) { purge(plot); var m = emptyMessage(res.body.metric); showEmpty("heatmap-empty", m[0], m[1]); statusEl.textContent = "no data"; return; }
        draw(res.body);
      })
      .catch(function (err) { showEmpty("heatmap-empty", "Could not load the heatmap (" + err + "). Retry, or check /readyz."); });
  }

  function loadRails() {
    var q = params();
    var metric = q.get("metric");
    q.set("metric", ibMetrics.indexOf(metric) >= 0 ? metric : "ib_errors");
    q.delete("sort"); q.delete("width");
    fetch("/api/v1/rails?" + q.toString(), { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (body) {
      var empty = document.getElementById("rails-empty");
      empty.hidden = true;
      if (!body.nodes || !body.nodes.length) { purge(railsPlot); showEmpty("rails-empty", "No IB ports found for this window —", ["/coverage/", "see Coverage"]); return; }
      var labels = uniqueTicks(body.nodes);
      var shown = display(body.unit, body.values);
      Plotly.react(railsPlot, [Object.assign({
        type: "heatmap", x: body.ports.map(window.cwTick), y: labels, z: shown.z, hoverinfo: "none",
        colorscale: HIGH_IS_BAD[body.metric] ? BAD_SCALE : "Viridis", colorbar: colorbar(shown.unit),
      }, zRange(shown.unit, shown.z))], {
        height: Math.min(Math.max(body.nodes.length * 12 + 110, 260), 900), paper_bgcolor: "rgba(0,0,0,0)",
        plot_bgcolor: "rgba(0,0,0,0)", font: { color: "#e6edf3", size: 11 }, margin: { l: 150, r: 20, t: 10, b: 60 },
        xaxis: { type: "category", title: { text: "HCA (device)" } },
        yaxis: { type: "category", autorange: "reversed", title: { text: "node" }, showticklabels: body.nodes.length <= 120 },
      }, window.cwFigures.config);
      railsBody = body;
      if (!railsPlot.dataset.bound) {
        railsPlot.dataset.bound = "1";
        railsPlot.on("plotly_hover", function (ev) {
          var p = ev.points[0];
          var i = p.pointIndex[0], j = p.pointIndex[1];
          showHover(ev.event, [railsBody.nodes[i], railsBody.ports[j], format(railsBody.values[i][j], railsBody.unit)]);
        });
        railsPlot.on("plotly_unhover", function () { hoverBox.hidden = true; });
      }
    });
  }

  function format(value, unit) {
    if (value === null || value === undefined) { return "no data"; }
    var abs = Math.abs(value);
    var text = abs >= 1e9 ? (value / 1e9).toFixed(2) + " G" : abs >= 1e6 ? (value / 1e6).toFixed(2) + " M" :
      abs >= 1e3 ? (value / 1e3).toFixed(1) + " k" : (Math.round(value * 100) / 100) + " ";
    return text + unit;
  }

  function showHover(event, lines) {
    hoverBox.replaceChildren();
    lines.forEach(function (line) { var div = document.createElement("div"); div.textContent = line; hoverBox.appendChild(div); });
    hoverBox.style.left = (event.clientX + 14) + "px";
    hoverBox.style.top = (event.clientY + 14) + "px";
    hoverBox.hidden = false;
  }

  function bind() {
    plot.on("plotly_hover", function (ev) {
      var p = ev.points[0];
      if (!state || !Array.isArray(p.pointIndex)) { return; }
      var body = state.body;
      var name = body.nodes[p.pointIndex[0]];
      var mark = body.marks && body.marks[name];
      var lines = [name, body.times[p.pointIndex[1]], format(body.values[p.pointIndex[0]][p.pointIndex[1]], body.unit)];
      if (mark) { lines.push(mark.state + ": " + mark.alerts.join(", ")); }
      showHover(ev.event, lines);
    });
    plot.on("plotly_unhover", function () { hoverBox.hidden = true; });
    plot.on("plotly_click", function (ev) {
      var p = ev.points[0];
      if (!state || !Array.isArray(p.pointIndex)) { return; }
      var name = state.body.nodes[p.pointIndex[0]];
      var at = state.body.times[p.pointIndex[1]];
      location.href = "/nodes/" + encodeURIComponent(name) + "/?at=" + encodeURIComponent(at);
    });
  }

  // Live: fetch only the new tail and splice it in (columns appended, the last ten refreshed).
  function extend() {
    if (!state || !state.body.nodes.length) { return load(); }
    var body = state.body;
    var q = new URLSearchParams(state.query);
    var step = body.step * 1000;
    // From a few columns back: ingest settles a little behind now, so recent columns fill late.
    var last = Math.max(Date.parse(body.times[Math.max(body.times.length - 10, 0)]), Date.parse(body.start));
    q.delete("window"); q.delete("width");
    q.set("start", new Date(last).toISOString().replace(".000", ""));
    q.set("end", new Date(Math.ceil(Date.now() / step) * step + step).toISOString().replace(".000", ""));
    q.set("step", String(body.step)); q.set("sort", "name");
    return fetch("/api/v1/heatmap?" + q.toString(), { credentials: "same-origin" }).then(function (r) { return r.ok ? r.json() : null; })
      .then(function (tail) { if (tail) { splice(body, tail); draw(body); } });
  }

  function splice(body, tail) {
    var row = {};
    body.nodes.forEach(function (n, i) { row[n] = i; });
    var column = {};
    body.times.forEach(function (t, j) { column[Date.parse(t)] = j; });
    tail.times.forEach(function (t) {
      if (column[Date.parse(t)] === undefined) {
        column[Date.parse(t)] = body.times.length; body.times.push(t);
        body.values.forEach(function (values) { values.push(null); });
      }
    });
    tail.nodes.forEach(function (name, i) {
      if (row[name] === undefined) { row[name] = body.nodes.length; body.nodes.push(name); body.values.push(body.times.map(function () { return null; })); }
      tail.times.forEach(function (t, j) {
        var v = tail.values[i][j];
        if (v !== null) { body.values[row[name]][column[Date.parse(t)]] = v; }
      });
    });
    if (state.query.get("window")) { // a relative window slides: drop what fell off the left
      var span = Date.parse(body.end) - Date.parse(body.start);
      var keepFrom = Date.parse(body.times[body.times.length - 1]) + body.step * 1000 - span;
      var drop = 0;
      while (drop < body.times.length && Date.parse(body.times[drop]) < keepFrom) { drop++; }
      if (drop) { body.times.splice(0, drop); body.values.forEach(function (v) { v.splice(0, drop); }); }
    }
    body.marks = tail.marks;
  }

  form.addEventListener("submit", function (e) { e.preventDefault(); load(); loadRails(); });
  form.querySelectorAll("select, input[type=radio]").forEach(function (el) {
    el.addEventListener("change", function () {
      if (el.name === "window") { document.getElementById("start").value = ""; document.getElementById("end").value = ""; }
      load(); if (el.name !== "sort") { loadRails(); }
    });
  });
  document.addEventListener("live", function (e) {
    var type = e.detail && e.detail.type;
    if (type === "ingest.committed") { extend(); loadRails(); }
    else if (type === "alerts.changed") { extend(); }
  });
  window.cwFabric.ready = load();
  loadRails();
})();
