// Draw every dashboard chart from the figure JSON the page embeds (json_script); plotly.js is served locally.
(function () {
  "use strict";
  document.querySelectorAll(".chart[data-figure-id]").forEach(function (el) {
    var source = document.getElementById(el.id.replace(/^chart-/, ""));
    if (!source || !window.Plotly) { return; }
    var figure = JSON.parse(JSON.parse(source.textContent));
    window.Plotly.newPlot(el, figure.data, figure.layout, { displaylogo: false, responsive: true });
  });
}());
