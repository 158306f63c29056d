// Load the search index when someone searches, not on every page view.
// Material's bundle requests search/search_index.json (about 1.5 MB) with XMLHttpRequest as
// soon as a page loads. This holds that one request back until the search box is focused or
// opened; a page reached from a search result (?h=...) loads it at once, to highlight the
// terms. Loaded before the bundle (site/overrides/main.html).
(function () {
  "use strict";
  const INDEX = /\/search\/search_index\.json$/;
  let wanted = new URLSearchParams(window.location.search).has("h");
  const waiting = [];

  function release() {
    if (wanted) return;
    wanted = true;
    for (const send of waiting.splice(0)) send();
  }

  const open = XMLHttpRequest.prototype.open;
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.open = function (method, url) {
    this._rlmguideIndex = INDEX.test(new URL(String(url), window.location.href).pathname);
    return open.apply(this, arguments);
  };
  XMLHttpRequest.prototype.send = function () {
    if (!this._rlmguideIndex || wanted) return send.apply(this, arguments);
    const request = this;
    const args = arguments;
    waiting.push(function () { send.apply(request, args); });
  };

  document.addEventListener("focusin", function (event) {
    if (event.target.closest && event.target.closest(".md-search")) release();
  });
  document.addEventListener("change", function (event) {
    if (event.target.id === "__search" && event.target.checked) release();
  });
})();
