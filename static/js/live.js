// Live updates: one websocket per page, reconnecting with backoff after a drop.
// Pages listen with: document.addEventListener("live", (e) => e.detail ...)
(function () {
  "use strict";
  var delay = 1000;
  var dot = document.getElementById("live-status");
  function setState(ok) { if (dot) { dot.className = "live-dot " + (ok ? "up" : "down"); } }
  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var socket = new WebSocket(scheme + location.host + "/ws/live/");
    socket.onopen = function () { delay = 1000; setState(true); };
    socket.onmessage = function (message) {
      var event;
      try { event = JSON.parse(message.data); } catch (err) { return; }
      var last = document.getElementById("live-last");
      // UTC, as every other time on the pages ("18:29:43 UTC"), not the browser's zone.
      if (last && event.type !== "hello") { last.textContent = event.type + " at " + new Date().toISOString().slice(11, 19) + " UTC"; }
      document.dispatchEvent(new CustomEvent("live", { detail: event }));
    };
    socket.onclose = function () {
      setState(false);
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 30000);
    };
  }
  window.clusterwatchLive = { connect: connect };
  connect();
})();
