// Keeps the new-request form's draft in this tab's sessionStorage as it is typed, so nothing is lost when the
// session expired before Submit: after signing in again the form comes back empty and the draft is restored, with
// a notice and a way to discard it. A submitted request's page clears the draft (its message says it was made).
(function () {
  "use strict";
  var KEY = "gpu-portal:request-draft";
  var SKIPPED = { csrfmiddlewaretoken: true, submission_token: true, submit_duplicate: true };

  function storage() {
    try {
      return window.sessionStorage;
    } catch (error) {
      return null; // storage disabled: the form works as before
    }
  }

  var store = storage();
  if (!store) {
    return;
  }
  if (document.querySelector(".message-request-submitted")) {
    store.removeItem(KEY);
    return;
  }
  var form = document.getElementById("request-form");
  if (!form) {
    return;
  }

  function fields() {
    return Array.prototype.filter.call(form.elements, function (element) {
      return element.name && !SKIPPED[element.name] && element.type !== "submit" && element.type !== "hidden";
    });
  }

  function save() {
    var values = {};
    fields().forEach(function (element) {
      values[element.name] = element.type === "checkbox" ? element.checked : element.value;
    });
    store.setItem(KEY, JSON.stringify({ saved: Date.now(), values: values }));
  }

  function restore(values) {
    var restored = 0;
    fields().forEach(function (element) {
      if (!Object.prototype.hasOwnProperty.call(values, element.name)) {
        return;
      }
      var value = values[element.name];
      if (element.type === "checkbox") {
        element.checked = Boolean(value);
      } else {
        element.value = value;
      }
      if (value !== "" && value !== false) {
        restored += 1;
      }
      element.dispatchEvent(new Event("change", { bubbles: true }));
    });
    var last = fields().pop();
    if (last) {
      last.dispatchEvent(new Event("input", { bubbles: true }));
    }
    return restored;
  }

  function notice() {
    var box = document.createElement("div");
    box.className = "draft-restored";
    box.id = "draft-restored";
    box.setAttribute("role", "status");
    var text = document.createElement("span");
    text.textContent = "Your unsent draft was restored (kept in this browser tab). Check it, then submit. ";
    var discard = document.createElement("button");
    discard.type = "button";
    discard.className = "button small";
    discard.id = "discard-draft";
    discard.textContent = "Discard draft";
    discard.addEventListener("click", function () {
      store.removeItem(KEY);
      window.location.assign(window.location.pathname);
    });
    box.appendChild(text);
    box.appendChild(discard);
    form.insertBefore(box, form.firstChild);
  }

  // Restore only into a fresh form: a page the server re-rendered (errors) or filled (clone, template) wins.
  if (form.dataset.draft === "restore") {
    var raw = store.getItem(KEY);
    var draft = null;
    try {
      draft = raw ? JSON.parse(raw) : null;
    } catch (error) {
      draft = null;
    }
    if (draft && draft.values && restore(draft.values) > 0) {
      notice();
    }
  }
  form.addEventListener("input", save);
  form.addEventListener("change", save);
  form.addEventListener("submit", save);
})();
