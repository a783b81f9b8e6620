// Draws server-built Plotly figures: <script type="application/json" id=X> + <div data-figure="X">.
(function () {
  "use strict";
  var config = { responsive: true, displaylogo: false, modeBarButtonsToRemove: ["lasso2d", "select2d"] };
  window.cwFigures = {
    config: config,
    draw: function (el) {
      var source = document.getElementById(el.dataset.figure);
      if (!source) { return; }
      var figure = JSON.parse(source.textContent);
      Plotly.newPlot(el, figure.data, figure.layout, config);
    },
  };
  // Text for the DOM (textContent) never needs escaping; for Plotly strings it does.
  // Numeric entities: plotly.js decodes them back to the characters (it does not know &quot;).
  var ENTITIES = { "&": "&#38;", "<": "&#60;", ">": "&#62;", '"': "&#34;", "'": "&#39;" };
  window.cwEscape = function (value) {
    return String(value).replace(/[&<>"']/g, function (c) { return ENTITIES[c]; });
  };
  // A tick label: escaped, long names shortened (the hover box shows them whole).
  window.cwTick = function (value) {
    var text = String(value);
    return window.cwEscape(text.length > 22 ? text.slice(0, 21) + "\u2026" : text);
  };
  // Live refresh of server-rendered fragments: fetch this page, swap the elements with these ids.
  window.cwRefresh = function (ids) {
    return fetch(location.href, { credentials: "same-origin" }).then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (!html) { return; }
        var fresh = new DOMParser().parseFromString(html, "text/html");
        ids.forEach(function (id) {
          var now = document.getElementById(id);
          var next = fresh.getElementById(id);
          if (now && next) { now.replaceWith(document.importNode(next, true)); }
        });
      });
  };
  document.querySelectorAll("[data-figure]").forEach(window.cwFigures.draw);
})();
