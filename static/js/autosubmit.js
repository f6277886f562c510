// Submits a filter form as soon as one of its [data-autosubmit] controls changes (no inline handlers: the
// Content-Security-Policy allows scripts from our static files only).
(function () {
  "use strict";
  document.querySelectorAll("[data-autosubmit]").forEach(function (control) {
    control.addEventListener("change", function () {
      if (control.form) {
        control.form.submit();
      }
    });
  });
})();
