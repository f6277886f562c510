// Draw every dashboard chart from the figure JSON the page embeds (json_script); plotly.js is served locally.
// A bar whose point carries a link (customdata) opens it: a cost bar drills down to the requests behind it, a
// request's bar opens the request. The range controls show only the inputs of the chosen period.
(function () {
  "use strict";
  document.querySelectorAll(".chart[data-figure-id]").forEach(function (el) {
    var source = document.getElementById(el.id.replace(/^chart-/, ""));
    if (!source || !window.Plotly) { return; }
    var figure = JSON.parse(JSON.parse(source.textContent));
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
