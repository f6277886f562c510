// Draw the capacity forecast charts from the figure JSON the page embeds (json_script); plotly.js is served locally.
(function () {
  "use strict";
  document.querySelectorAll(".chart[data-figure]").forEach(function (el) {
    var source = document.getElementById(el.getAttribute("data-figure"));
    if (!source || !window.Plotly) { return; }
    var figure = JSON.parse(source.textContent);
    window.Plotly.newPlot(el, figure.data, figure.layout, { displaylogo: false, responsive: true })
      .then(function () { el.setAttribute("data-rendered", "true"); });
  });
}());
