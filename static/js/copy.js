/* Copy to clipboard: a button with data-copy-target="<element id>" copies that element's text.
 *
 * The async Clipboard API where the browser allows it (HTTPS or localhost), else a hidden textarea + execCommand.
 * data-copy-state names an aria-live element that says whether it worked.
 */
(function () {
  "use strict";

  function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      return navigator.clipboard.writeText(text);
    }
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      var ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      document.body.removeChild(area);
      if (ok) { resolve(); } else { reject(new Error("copy refused")); }
    });
  }

  document.querySelectorAll("[data-copy-target]").forEach(function (button) {
    button.addEventListener("click", function () {
      var source = document.getElementById(button.dataset.copyTarget);
      var state = document.getElementById(button.dataset.copyState || "copy-state");
      if (!source) return;
      copyText(source.textContent).then(function () {
        if (state) state.textContent = "Copied to the clipboard.";
        button.textContent = "Copied";
      }, function () {
        if (state) state.textContent = "Copy failed: select the text and press Ctrl+C.";
      });
      window.setTimeout(function () { button.textContent = button.dataset.label || "Copy YAML"; }, 2000);
    });
    button.dataset.label = button.textContent;
  });
})();
