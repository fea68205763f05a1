// kaudit report: sortable tables and the findings filter. No network, no library; without
// script the page shows everything (groups open or collapsed as written).
(function () {
  "use strict";

  function cellValue(row, i) {
    var cell = row.cells[i];
    if (!cell) return "";
    var v = cell.getAttribute("data-v");
    return v === null ? cell.textContent.trim() : v;
  }

  function sortTable(th) {
    var table = th.closest("table");
    var index = Array.prototype.indexOf.call(th.parentNode.children, th);
    var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    Array.prototype.forEach.call(th.parentNode.children, function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    var numeric = th.classList.contains("n");
    Array.prototype.forEach.call(table.tBodies, function (body) {
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = cellValue(a, index), y = cellValue(b, index), r;
        if (numeric) {
          // unknown values sort last whatever the direction
          var nx = x === "" ? null : Number(x), ny = y === "" ? null : Number(y);
          if (nx === null || ny === null) return (nx === null) - (ny === null);
          r = nx - ny;
        } else {
          r = x.localeCompare(y);
        }
        return dir === "ascending" ? r : -r;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  }

  document.querySelectorAll("th[data-sort]").forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener("click", function () { sortTable(th); });
    th.addEventListener("keydown", function (e) { if (e.key === "Enter") sortTable(th); });
  });

  var form = document.getElementById("finding-filters");
  if (form) {
    var text = form.querySelector("[name=q]"), status = form.querySelector("[name=status]");
    var source = form.querySelector("[name=source]"), count = form.querySelector(".count");
    var apply = function () {
      var q = text.value.trim().toLowerCase(), st = status.value, src = source.value, shown = 0;
      document.querySelectorAll("#findings details.group").forEach(function (group) {
        var visible = 0;
        group.querySelectorAll("tr.finding").forEach(function (row) {
          var ok = (!st || row.getAttribute("data-status") === st) &&
                   (!src || row.getAttribute("data-source") === src) &&
                   (!q || row.textContent.toLowerCase().indexOf(q) >= 0);
          row.hidden = !ok;
          if (ok) visible++;
        });
        group.hidden = visible === 0;
        if (q || st || src) group.open = visible > 0;
        shown += visible;
      });
      count.textContent = shown + " of " + count.getAttribute("data-total") + " finding row(s) shown";
    };
    form.addEventListener("input", apply);
    form.addEventListener("submit", function (e) { e.preventDefault(); });
  }

  // printing shows every group open
  window.addEventListener("beforeprint", function () {
    document.querySelectorAll("details").forEach(function (d) { d.setAttribute("data-was", d.open ? "1" : ""); d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    document.querySelectorAll("details").forEach(function (d) { d.open = d.getAttribute("data-was") === "1"; });
  });
})();
