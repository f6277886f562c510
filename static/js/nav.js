/* The header's Menu button on narrow screens: it shows and hides the navigation (#topnav) and says so in
 * aria-expanded. The CSS folds the navigation only once this script has marked the header, so without
 * scripts the links stay on the page, stacked.
 */
(function () {
  "use strict";

  var toggle = document.querySelector(".menu-toggle");
  var topbar = document.querySelector(".topbar");
  if (!toggle || !topbar) { return; }
  topbar.classList.add("is-collapsible");
  toggle.addEventListener("click", function () {
    var open = topbar.classList.toggle("nav-open");
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
  });
})();
