// rooftop report: tooltips for the chart and sortable tables. No network, no libraries.
(function () {
  'use strict';
  var tip = document.getElementById('tip');
  function place(e) {
    var x = e.clientX + 14, y = e.clientY + 14;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth - 4) { x = Math.max(4, e.clientX - w - 14); }
    if (y + h > window.innerHeight - 4) { y = Math.max(4, e.clientY - h - 14); }
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  }
  function hide() { tip.style.display = 'none'; }
  // SVG <title> elements are the tooltips without script; with it, a styled one.
  Array.prototype.forEach.call(document.querySelectorAll('svg .tipped'), function (el) {
    var t = null;
    for (var i = 0; i < el.childNodes.length; i++) {
      if (el.childNodes[i].nodeName === 'title') { t = el.childNodes[i]; break; }
    }
    if (!t) { return; }
    var text = t.textContent;
    el.removeChild(t);
    el.addEventListener('mouseenter', function (e) { tip.textContent = text; tip.style.display = 'block'; place(e); });
    el.addEventListener('mousemove', place);
    el.addEventListener('mouseleave', hide);
    var row = el.getAttribute('data-row');
    if (row) {
      el.addEventListener('click', function () {
        var r = document.getElementById(row);
        if (!r) { return; }
        r.scrollIntoView({ block: 'center', behavior: 'smooth' });
        r.classList.add('hl');
        window.setTimeout(function () { r.classList.remove('hl'); }, 1800);
      });
    }
  });
  // Sortable tables: numbers sort by data-v (missing values last), text naturally.
  Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), function (table) {
    if (!table.tHead || !table.tBodies.length) { return; }
    var ths = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths, function (th, col) {
      th.tabIndex = 0;
      function sort() {
        var asc = th.getAttribute('aria-sort') !== 'ascending';
        Array.prototype.forEach.call(ths, function (h) { h.removeAttribute('aria-sort'); });
        th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
        var numeric = th.classList.contains('num');
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        function key(r) {
          var c = r.cells[col];
          if (!c) { return numeric ? NaN : ''; }
          if (numeric) {
            var v = c.getAttribute('data-v');
            return v === null || v === '' ? NaN : parseFloat(v);
          }
          return c.textContent.trim();
        }
        rows.sort(function (a, b) {
          var x = key(a), y = key(b);
          if (numeric) {
            var xn = isNaN(x), yn = isNaN(y);
            if (xn || yn) { return xn === yn ? 0 : (xn ? 1 : -1); }
            return asc ? x - y : y - x;
          }
          var c = x.localeCompare(y, undefined, { numeric: true, sensitivity: 'base' });
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      }
      th.addEventListener('click', sort);
      th.addEventListener('keydown', function (e) {
        if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); sort(); }
      });
    });
  });
  // Tells a checker (scripts/check-html.sh) that the script ran to the end.
  document.documentElement.setAttribute('data-rooftop', 'ready');
})();
