/* webstats tracker: https://github.com/webstats/webstats (SPEC §4). */
(function (w, d) {
  'use strict';
  var s = d.currentScript, n = w.navigator, l = w.location, last, api = '', off = false;
  function safe(f) {
    return function (a) { try { f(a); } catch (e) {} };
  }
  function send(p) {
    var b = JSON.stringify(p);
    // text/plain is CORS-safelisted: no preflight. credentials omitted: no cookies.
    if (w.fetch) {
      w.fetch(api, {method: 'POST', body: b, keepalive: true, credentials: 'omit',
        headers: {'Content-Type': 'text/plain'}})['catch'](function () {});
    } else if (n.sendBeacon) {
      n.sendBeacon(api, b);
    }
  }
  function page() {
    return l.href.split('#')[0];
  }
  var view = safe(function () {
    var u = page();
    if (off || u === last) return;
    var r = last === void 0 ? d.referrer : last;
    last = u;
    send({page: u, referrer: r || '', screen_resolution: w.screen.width + 'x' + w.screen.height});
  });
  w.pa = {track: safe(function (e) {
    if (off || !e || !e.name) return;
    send({page: page(), event: {name: String(e.name), value: e.value, unit: e.unit}});
  })};
  safe(function () {
    var h = s && s.getAttribute('data-host');
    if (!h && s && s.src) h = s.src.replace(/^([^:]+:\/\/[^\/]+).*$/, '$1');
    api = (h || '').replace(/\/+$/, '') + '/api/event';
    off = !!s && s.getAttribute('data-dnt') === 'true' &&
      (n.doNotTrack == '1' || n.doNotTrack == 'yes' || w.doNotTrack == '1');
    if (off) return;
    var push = w.history && w.history.pushState;
    if (push) {
      w.history.pushState = function () {
        var x = push.apply(this, arguments);
        view();
        return x;
      };
    }
    w.addEventListener('popstate', view);
    if (d.prerendering) d.addEventListener('prerenderingchange', view, {once: true});
    else view();
  })();
})(window, document);
