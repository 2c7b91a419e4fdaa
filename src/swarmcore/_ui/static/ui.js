// swarmcore ui: follow a running run. Reading works without this file.
(function () {
  "use strict";
  var main = document.getElementById("run");
  if (!main || !main.dataset.live || !window.EventSource) return;
  var page = window.location.pathname;
  var open = function () {
    // Keep the <details> a reader opened across refreshes.
    return Array.prototype.map.call(main.querySelectorAll("details[open]"), function (d) {
      return d.id || d.dataset.agent || "";
    });
  };
  var refresh = function () {
    var keep = open();
    return fetch(page + "?part=body", { headers: { Accept: "text/html" }, credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        main.innerHTML = html;  // our own server's escaped HTML
        keep.forEach(function (id) {
          var d = id && document.getElementById(id);
          if (d) d.open = true;
        });
      });
  };
  var events = new EventSource(main.dataset.live);
  events.addEventListener("open", function () { main.dataset.following = "1"; });
  events.addEventListener("changed", refresh);
  events.addEventListener("finished", function () {
    events.close();
    delete main.dataset.live;
    refresh().then(function () { main.dataset.finished = "1"; });
  });
  events.addEventListener("gone", function () { events.close(); window.location.reload(); });
  events.addEventListener("error", function () {
    // Refused (too many pages follow this run) or the viewer stopped: say so, stop following.
    if (events.readyState !== EventSource.CLOSED || !main.dataset.live) return;
    delete main.dataset.live;
    var note = document.createElement("p");
    note.className = "note";
    note.id = "live-off";
    note.textContent = "Live updates are off for this page: reload it to see where the run is.";
    main.insertBefore(note, main.firstChild);
  });
})();
