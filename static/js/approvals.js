/* Approval queue: the "tick all" checkbox of the bulk form. */
(function () {
  "use strict";
  var all = document.getElementById("tick-all");
  if (!all) return;
  var boxes = function () { return document.querySelectorAll("#bulk-form input[name=ids]"); };
  all.addEventListener("change", function () {
    boxes().forEach(function (box) { box.checked = all.checked; });
  });
})();
