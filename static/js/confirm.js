/* Confirmation before an action that cannot be taken back (release, cancel, bulk approve and reject).
 *
 * A submit button (or its form) with data-confirm="<question naming what it acts on>" opens a <dialog> with that
 * question; the form is only sent when the user confirms. On a form with data-confirm-items="<checkbox name>", the
 * dialog lists the ticked boxes' data-label (the requests a bulk action would touch) and refuses to go on with none.
 * A static file (the Content-Security-Policy allows no inline script); without JavaScript the forms submit as before.
 */
(function () {
  "use strict";

  var dialog = null;

  function build() {
    dialog = document.createElement("dialog");
    dialog.id = "confirm-dialog";
    dialog.className = "confirm-dialog";
    dialog.setAttribute("aria-labelledby", "confirm-title");
    dialog.innerHTML =
      '<form method="dialog">' +
      '<h2 id="confirm-title"></h2>' +
      '<ul id="confirm-items"></ul>' +
      '<p class="muted small" id="confirm-note"></p>' +
      '<div class="confirm-buttons">' +
      '<button type="submit" value="cancel" class="button" id="confirm-cancel">Go back</button>' +
      '<button type="submit" value="ok" class="button danger" id="confirm-ok"></button>' +
      "</div></form>";
    document.body.appendChild(dialog);
    return dialog;
  }

  function ticked(form, name) {
    var labels = [];
    form.querySelectorAll("input[type=checkbox][name='" + name + "']").forEach(function (box) {
      if (box.checked) labels.push(box.dataset.label || box.value);
    });
    return labels;
  }

  function ask(form, submitter) {
    var question = (submitter && submitter.dataset.confirm) || form.dataset.confirm;
    if (!question) return false;
    var box = dialog || build();
    var items = form.dataset.confirmItems ? ticked(form, form.dataset.confirmItems) : null;
    var list = box.querySelector("#confirm-items");
    var ok = box.querySelector("#confirm-ok");
    var note = box.querySelector("#confirm-note");
    list.textContent = "";
    note.textContent = "";
    ok.hidden = false;
    if (items !== null) {
      if (!items.length) {
        question = "Tick at least one request first.";
        ok.hidden = true;
      } else {
        question = question.replace("{count}", items.length + " request" + (items.length === 1 ? "" : "s"));
        items.forEach(function (label) {
          var li = document.createElement("li");
          li.textContent = label;
          list.appendChild(li);
        });
      }
    }
    box.querySelector("#confirm-title").textContent = question;
    ok.textContent = (submitter && submitter.dataset.confirmButton) || (submitter ? submitter.textContent.trim() : "Confirm");
    ok.className = "button " + (submitter && submitter.classList.contains("primary") ? "primary" : "danger");
    box.returnValue = "";
    box.onclose = function () {
      if (box.returnValue !== "ok") return;
      form.dataset.confirmed = "1";
      if (submitter && form.requestSubmit) {
        form.requestSubmit(submitter);
      } else {
        form.submit();
      }
    };
    box.showModal();
    box.querySelector("#confirm-cancel").focus();
    return true;
  }

  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || form.method === "dialog") return;
    if (form.dataset.confirmed === "1") {
      delete form.dataset.confirmed;
      return;
    }
    if (ask(form, event.submitter || null)) event.preventDefault();
  });
})();
