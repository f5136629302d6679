// kafka-chaos report: table filters, hover tooltips and a time crosshair shared by all timelines.
// No network access: everything this page needs is inlined.
(function () {
  "use strict";
  var tip = document.getElementById("tip");

  function clock(s) {
    s = Math.max(0, Math.floor(s));
    var h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, r = s % 60;
    var mm = (h ? String(m).padStart(2, "0") : String(m)) + ":" + String(r).padStart(2, "0");
    return h ? h + ":" + mm : mm;
  }

  document.querySelectorAll("input.filter").forEach(function (input) {
    var table = document.getElementById(input.getAttribute("data-filter"));
    if (!table) { return; }
    input.addEventListener("input", function () {
      var needle = input.value.toLowerCase();
      table.querySelectorAll("tbody tr").forEach(function (row) {
        row.hidden = needle !== "" && row.textContent.toLowerCase().indexOf(needle) < 0;
      });
    });
  });

  var charts = Array.prototype.slice.call(document.querySelectorAll("svg.chart"));
  var lines = charts.map(function (svg) {
    var line = document.createElementNS("http://www.w3.org/2000/svg", "line");
    line.setAttribute("class", "crosshair");
    line.setAttribute("y1", "0");
    line.setAttribute("y2", svg.viewBox.baseVal.height);
    line.style.display = "none";
    svg.appendChild(line);
    return line;
  });

  function showTip(text, event) {
    if (!tip) { return; }
    tip.textContent = text;
    tip.hidden = false;
    var x = Math.min(event.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    tip.style.left = x + "px";
    tip.style.top = (event.clientY + 16) + "px";
  }

  charts.forEach(function (svg) {
    svg.addEventListener("mousemove", function (event) {
      var box = svg.getBoundingClientRect();
      var scale = svg.viewBox.baseVal.width / box.width;
      var x = (event.clientX - box.left) * scale;
      var left = Number(svg.getAttribute("data-left"));
      var width = Number(svg.getAttribute("data-plot-width"));
      var inside = x >= left && x <= left + width;
      lines.forEach(function (line) {
        line.style.display = inside ? "" : "none";
        line.setAttribute("x1", x);
        line.setAttribute("x2", x);
      });
      var target = event.target.closest("[data-tip]");
      var t = (x - left) / width * Number(svg.getAttribute("data-end-ns")) / 1e9;
      if (target) {
        showTip(target.getAttribute("data-tip") + "\n@ " + clock(t), event);
      } else if (inside) {
        showTip(clock(t), event);
      } else if (tip) {
        tip.hidden = true;
      }
    });
    svg.addEventListener("mouseleave", function () {
      lines.forEach(function (line) { line.style.display = "none"; });
      if (tip) { tip.hidden = true; }
    });
  });

  document.querySelectorAll("svg.trend").forEach(function (svg) {
    svg.addEventListener("mousemove", function (event) {
      var target = event.target.closest("[data-tip]");
      if (target) { showTip(target.getAttribute("data-tip"), event); } else if (tip) { tip.hidden = true; }
    });
    svg.addEventListener("mouseleave", function () { if (tip) { tip.hidden = true; } });
  });

  document.documentElement.setAttribute("data-js-ready", "1");
}());
