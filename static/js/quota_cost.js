// The quota increase form: the monthly cost of the units asked beyond the current quota, as the number is typed.
(function () {
  "use strict";
  var out = document.getElementById("cost-effect");
  var input = document.getElementById("id_requested_limit");
  if (!out || !input) {
    return;
  }
  var limit = Number(out.dataset.limit);
  var low = Number(out.dataset.low);
  var high = Number(out.dataset.high);
  function money(value) {
    return value.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  }
  function show() {
    var added = Math.floor(Number(input.value)) - limit;
    if (!(added > 0)) {
      out.textContent = "";
      return;
    }
    var range = Math.round(low) === Math.round(high) ? money(high * added) : money(low * added) + " to " + money(high * added);
    out.textContent = added + " more unit" + (added === 1 ? "" : "s") + ": up to " + range + " " + out.dataset.currency + " a month.";
  }
  input.addEventListener("input", show);
  show();
})();
