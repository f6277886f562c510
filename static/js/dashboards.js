// Draw every dashboard chart from the figure JSON the page embeds (json_script); plotly.js is served locally.
// A bar whose point carries a link (customdata) opens it: a cost bar drills down to the requests behind it, a
// request's bar opens the request. The range controls show only the inputs of the chosen period.
// Under NARROW_PX wide (a phone) a figure's meta.narrow (billing/charts.py) is merged in: fewer, shorter ticks.
(function () {
  "use strict";
  var NARROW_PX = 600;
  function isObject(value) { return value !== null && typeof value === "object" && !Array.isArray(value); }
  function merge(target, extra) {
    Object.keys(extra).forEach(function (key) {
      if (isObject(extra[key]) && isObject(target[key])) { merge(target[key], extra[key]); } else { target[key] = extra[key]; }
    });
    return target;
  }
  document.querySelectorAll(".chart[data-figure-id]").forEach(function (el) {
    var source = document.getElementById(el.id.replace(/^chart-/, ""));
    if (!source || !window.Plotly) { return; }
    var figure = JSON.parse(JSON.parse(source.textContent));
    var narrow = figure.layout.meta && figure.layout.meta.narrow;
    if (narrow && el.clientWidth < NARROW_PX) {
      merge(figure.layout, narrow.layout || {});
      figure.data.forEach(function (trace) { merge(trace, narrow.trace || {}); });
      el.setAttribute("data-narrow", "true");
    }
    window.Plotly.newPlot(el, figure.data, figure.layout, { displaylogo: false, responsive: true }).then(function () {
      el.on("plotly_click", function (event) {
        var point = event && event.points && event.points[0];
        var link = point && point.customdata;
        if (typeof link === "string" && link) { window.location.assign(link); }
      });
    });
  });
  var period = document.getElementById("id_period");
  function showPeriodInputs() {
    document.querySelectorAll("#dashboard-controls [data-period]").forEach(function (label) {
      var shown = label.getAttribute("data-period") === period.value;
      label.hidden = !shown;
      label.querySelectorAll("input, select").forEach(function (input) { input.disabled = !shown; });
    });
  }
  if (period) {
    period.addEventListener("change", showPeriodInputs);
    showPeriodInputs();
  }
}());
