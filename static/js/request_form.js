/* Live recommendation preview for the new-request form.
 *
 * As the profile changes, wait ~300 ms, then POST the profile fields (form-encoded, CSRF header) to the form's
 * data-preview-url and put the HTML fragment the server answers beside the form: the recommendation rendered by
 * templates/allocations/_spec.html (the same template as a request's page), or the field errors (400), whose
 * data-field attributes mark the fields. No HTML is built here: one renderer, on the server.
 */
(function () {
  "use strict";

  var form = document.getElementById("request-form");
  var body = document.getElementById("preview-body");
  var state = document.getElementById("preview-state");
  var panel = document.getElementById("preview");
  if (!form || !body) return;

  var URL_ = form.dataset.previewUrl;
  var DEBOUNCE_MS = 300;
  // The fields the recommendation depends on (the team scopes it; name, image... do not change it).
  var FIELDS = ["team", "workload_type", "gpu_memory_gb", "gpu_count", "replicas", "latency_sensitive",
    "latency_p99_ms", "isolation_required", "expected_utilization_pct", "sla_tier", "gpu_model", "duration_hours",
    "cluster"];
  var NUMBERS = { gpu_memory_gb: 1, gpu_count: 1, replicas: 1, latency_p99_ms: 1, expected_utilization_pct: 1,
    duration_hours: 1 };
  var placeholder = Array.prototype.slice.call(body.childNodes).map(function (node) { return node.cloneNode(true); });
  var timer = null;
  var seq = 0;
  var controller = null;
  var lastBody = null;

  function csrfToken() {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    if (input && input.value) return input.value;
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function formBody() {
    var data = new URLSearchParams();
    FIELDS.forEach(function (name) {
      var field = form.elements[name];
      if (!field) return;
      if (field.type === "checkbox") { if (field.checked) data.append(name, "on"); return; }
      data.append(name, (field.value || "").trim());
    });
    return data;
  }

  // The profile as JSON, for what_if.js (it posts the same profile to the what-if API).
  function profile(data) {
    var result = {};
    data.forEach(function (value, name) {
      if (name === "team" || value === "") return;
      if (name === "isolation_required") result[name] = true;
      else if (name === "latency_sensitive") result[name] = value === "true";
      else if (NUMBERS[name]) result[name] = isFinite(Number(value)) ? Number(value) : value;
      else result[name] = value;
    });
    if (!("isolation_required" in result)) result.isolation_required = false;
    return result;
  }

  function setState(text, busy) {
    state.textContent = text;
    panel.setAttribute("aria-busy", busy ? "true" : "false");
    panel.classList.toggle("is-loading", !!busy);
  }

  function clearFieldMarks() {
    form.querySelectorAll(".field.api-error").forEach(function (node) {
      node.classList.remove("api-error");
      var msg = node.querySelector(".api-error-text");
      if (msg) msg.remove();
      var input = node.querySelector("input, select, textarea");
      if (input) input.removeAttribute("aria-invalid");
    });
  }

  function markFields() {
    body.querySelectorAll("[data-field]").forEach(function (item) {
      var wrapper = form.querySelector(".field[data-field='" + item.dataset.field + "']");
      if (!wrapper) return;
      wrapper.classList.add("api-error");
      var input = wrapper.querySelector("input, select, textarea");
      if (input) input.setAttribute("aria-invalid", "true");
      var text = item.querySelector(".preview-error-text");
      var message = (text ? text.textContent : item.textContent).trim();
      // The server already printed this message under the field (the page came back with errors): once is enough.
      var printed = wrapper.querySelector(".errorlist");
      if (printed && printed.textContent.indexOf(message) !== -1) return;
      var note = document.createElement("small");
      note.className = "api-error-text";
      note.textContent = message;
      wrapper.appendChild(note);
    });
  }

  // The server's fragment (Django-escaped template output) parsed into nodes; scripts in it would not run.
  function showFragment(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    body.replaceChildren.apply(body, Array.prototype.slice.call(doc.body.childNodes));
  }

  // The recommendation in one line beside Submit, for screens where the preview sits below the form.
  var summary = document.getElementById("preview-summary");
  function showSummary(rec) {
    if (!summary) return;
    if (!rec) { summary.hidden = true; return; }
    var head = rec.querySelector(".rec-head");
    var monthly = rec.querySelector(".rec-monthly");
    var text = head ? head.textContent.replace(/\s+/g, " ").trim() : "";
    if (monthly) text += " · " + monthly.textContent.replace(/\s+/g, " ").trim() + " a month";
    summary.querySelector(".summary-text").textContent = text;
    summary.hidden = false;
  }

  function showProblem(text) {
    showSummary(null);
    var first = document.createElement("p");
    first.textContent = text;
    var second = document.createElement("p");
    second.className = "muted";
    second.textContent = "You can still submit: the portal recommends again on submission.";
    var box = document.createElement("div");
    box.className = "preview-problem";
    box.append(first, second);
    body.replaceChildren(box);
  }

  function refresh() {
    var data = formBody();
    var key = data.toString();
    if (key === lastBody) return;
    if (!data.get("workload_type") || !data.get("gpu_memory_gb")) {
      lastBody = null;
      clearFieldMarks();
      setState("live preview", false);
      body.replaceChildren.apply(body, placeholder.map(function (node) { return node.cloneNode(true); }));
      showSummary(null);
      return;
    }
    if (controller) controller.abort();
    controller = typeof AbortController === "function" ? new AbortController() : null;
    var mine = ++seq;
    setState("updating…", true);
    fetch(URL_, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Accept": "text/html", "X-CSRFToken": csrfToken() },
      body: data,
      signal: controller ? controller.signal : undefined,
    }).then(function (response) {
      return response.text().then(function (html) {
        if (mine !== seq) return;
        lastBody = key;
        clearFieldMarks();
        if (response.redirected || response.status === 401 || response.status === 403) {
          // A redirect is the sign-in page: the session expired.
          lastBody = null;
          showProblem("Your session has expired or this page is stale: reload the page or sign in again.");
          setState("unavailable", false);
        } else if (response.ok) {
          showFragment(html);
          var rec = body.querySelector(".rec");
          showSummary(rec);
          // what_if.js prices the same profile for every option and checks the team's quota and budget.
          form.dispatchEvent(new CustomEvent("preview:recommended", { detail: {
            profile: profile(data),
            recommendation: { strategy: rec ? rec.dataset.strategy : "", gpu_model: rec ? rec.dataset.gpuModel : "" },
          } }));
          setState("updated " + new Date().toLocaleTimeString(), false);
        } else if (response.status === 400) {
          showFragment(html);
          showSummary(null);
          markFields();
          setState("check the profile", false);
        } else {
          lastBody = null;
          showProblem("The recommendation service answered " + response.status + ". Try again in a moment.");
          setState("unavailable", false);
        }
      });
    }).catch(function (error) {
      if (error && error.name === "AbortError") return;
      if (mine !== seq) return;
      lastBody = null;
      showProblem("Cannot reach the portal to preview the recommendation (network error). It retries as you edit.");
      setState("offline", false);
    });
  }

  function schedule() {
    if (timer) clearTimeout(timer);
    timer = setTimeout(refresh, DEBOUNCE_MS);
  }

  form.addEventListener("input", schedule);
  form.addEventListener("change", schedule);
  window.addEventListener("online", schedule);
  refresh();
})();
