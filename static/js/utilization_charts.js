// Hourly utilization, memory and power charts (billing/_series_chart.html): the figure JSON is in the page
// (json_script); plotly.js, from our own static files, is loaded only when such a chart is on the page.
(function () {
  "use strict";
  if (window.gpuPortalSeriesCharts) { return; }  // the partial may appear more than once on a page
  window.gpuPortalSeriesCharts = true;
  var charts = Array.prototype.slice.call(document.querySelectorAll(".chart[data-series-figure]"));
  if (!charts.length) { return; }
  function draw() {
    charts.forEach(function (el) {
      var source = document.getElementById(el.getAttribute("data-series-figure"));
      if (!source || !window.Plotly) { return; }
      var figure = JSON.parse(source.textContent);
      window.Plotly.newPlot(el, figure.data, figure.layout, { displaylogo: false, responsive: true })
        .then(function () { el.setAttribute("data-rendered", "true"); });
    });
  }
  if (window.Plotly) { draw(); return; }
  var script = document.createElement("script");
  script.src = charts[0].getAttribute("data-plotly-src");
  script.onload = draw;
  document.head.appendChild(script);
}());
