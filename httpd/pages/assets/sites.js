/* webstats website pages: the browser's time zone on the add form, and the
   copy buttons. The pages work without it. */
(function (d) {
  'use strict';
  // The add form's zone is UTC until the browser names its own.
  var tz = d.querySelector('input[data-detect-zone]');
  if (tz && tz.value === 'UTC') {
    try {
      var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
      if (zone) tz.value = zone;
    } catch (e) {}
  }

  // A copy button copies the text of the element its data-copy names.
  Array.prototype.forEach.call(d.querySelectorAll('button[data-copy]'), function (b) {
    var src = d.getElementById(b.getAttribute('data-copy'));
    var status = b.parentNode.querySelector('.copied');
    if (!src) return;
    function say(msg) {
      if (!status) return;
      // Emptied first, so that a second "Copied." is announced too.
      status.textContent = '';
      setTimeout(function () { status.textContent = msg; }, 50);
    }
    function fallback() {
      src.focus();
      src.select();
      var ok = false;
      try { ok = d.execCommand('copy'); } catch (e) {}
      say(ok ? 'Copied.' : 'Selected: press Ctrl+C (⌘C on a Mac) to copy.');
    }
    b.hidden = false;
    b.addEventListener('click', function () {
      var text = src.value !== undefined ? src.value : src.textContent;
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(function () { say('Copied.'); }, fallback);
      } else {
        fallback();
      }
    });
  });
})(document);
