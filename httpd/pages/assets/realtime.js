// Refreshes the numbers of the realtime page in place every 10 seconds.
// The page works without it (reload to update).
(function () {
  "use strict";
  var box = document.getElementById("realtime");
  if (!box || !window.fetch) return;
  var src = box.getAttribute("data-src");
  var H = 110, BASE = 115;

  function fmt(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }

  function title(i, n) {
    var ago = 29 - i;
    var when = ago === 0 ? "This minute: " : ago === 1 ? "1 minute ago: " : ago + " minutes ago: ";
    return when + fmt(n) + (n === 1 ? " pageview" : " pageviews");
  }

  function update(d) {
    document.getElementById("rt-visitors").textContent = fmt(d.visitors);
    document.getElementById("rt-sum").textContent = fmt(d.sum);
    var rects = document.querySelectorAll("#rt-chart .pv rect");
    var max = d.max > 0 ? d.max : 1;
    for (var i = 0; i < rects.length && i < d.pageviews.length; i++) {
      var n = d.pageviews[i], h = Math.round(n / max * H * 10) / 10;
      rects[i].setAttribute("y", String(BASE - h));
      rects[i].setAttribute("height", String(h));
      var t = rects[i].querySelector("title");
      if (t) t.textContent = title(i, n);
    }
  }

  function tick() {
    if (document.hidden) return;
    fetch(src, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (d) { if (d) update(d); })
      .catch(function () { /* keep the last numbers */ });
  }

  setInterval(tick, 10000);
  document.addEventListener("visibilitychange", tick);
})();
