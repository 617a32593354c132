// rqfast dashboard: live updates. The pages work without it (reload to update); with it, each element
// with data-live="<url>" is replaced by that URL's HTML every data-every milliseconds while the tab
// is visible, and an element with data-events="<url>" lists a queue's events as they arrive (SSE;
// when the server refuses a stream the page keeps polling).
(function () {
  'use strict';

  function poll(element) {
    var url = element.getAttribute('data-live');
    var every = parseInt(element.getAttribute('data-every') || '3000', 10);
    var dot = document.querySelector('.live-dot');
    var busy = false;
    function refresh() {
      if (document.hidden || busy) { return; }
      busy = true;
      fetch(url, { credentials: 'same-origin', headers: { 'X-Requested-With': 'fetch' } })
        .then(function (response) {
          if (!response.ok) { throw new Error(response.status); }
          return response.text();
        })
        .then(function (html) {
          element.innerHTML = html;
          element.setAttribute('data-updated', String(Date.now()));
          if (dot) { dot.classList.remove('stale'); }
        })
        .catch(function () { if (dot) { dot.classList.add('stale'); } })
        .then(function () { busy = false; });
    }
    setInterval(refresh, every);
    element.refresh = refresh;
  }

  function listen(element) {
    if (!window.EventSource) { return; }
    var list = element.querySelector('tbody') || element;
    var source = new EventSource(element.getAttribute('data-events'));
    source.addEventListener('job', function (message) {
      var event = JSON.parse(message.data);
      var row = document.createElement('tr');
      var when = new Date(event.at * 1000).toISOString().replace('T', ' ').slice(0, 19);
      [when, event.name, event.job_id, event.worker, event.detail].forEach(function (text) {
        var cell = document.createElement('td');
        cell.textContent = text;
        row.appendChild(cell);
      });
      list.insertBefore(row, list.firstChild);
      while (list.children.length > 50) { list.removeChild(list.lastChild); }
      element.setAttribute('data-received', String(parseInt(element.getAttribute('data-received') || '0', 10) + 1));
      var live = document.querySelector('[data-live]');
      if (live && live.refresh) { live.refresh(); }
    });
    source.onerror = function () { element.setAttribute('data-stream', 'retrying'); };
    source.onopen = function () { element.setAttribute('data-stream', 'open'); };
  }

  document.querySelectorAll('[data-live]').forEach(poll);
  document.querySelectorAll('[data-events]').forEach(listen);
})();
