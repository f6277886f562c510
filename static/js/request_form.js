/* Live recommendation preview for the new-request form.
 *
 * As the profile changes, wait ~300 ms, then POST the profile to /api/v1/recommendations/ (session auth + CSRF)
 * and render the Recommendation JSON (DESIGN.md) beside the form. Plain JS, no build step, no innerHTML with data.
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
  var PROFILE = ["workload_type", "gpu_memory_gb", "gpu_count", "replicas", "latency_sensitive", "latency_p99_ms",
    "isolation_required", "expected_utilization_pct", "sla_tier", "gpu_model", "duration_hours", "cluster"];
  var NUMBERS = { gpu_memory_gb: 1, gpu_count: 1, replicas: 1, latency_p99_ms: 1, expected_utilization_pct: 1,
    duration_hours: 1 };
  var STRATEGY = { "dedicated": "Dedicated GPU", "mig": "MIG slice", "time-slicing": "Time-sliced share" };
  var timer = null;
  var seq = 0;
  var controller = null;
  var lastBody = null;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === "text") node.textContent = attrs[key];
      else if (key === "className") node.className = attrs[key];
      else node.setAttribute(key, attrs[key]);
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function csrfToken() {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    if (input && input.value) return input.value;
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : "";
  }

  function labelFor(name) {
    var field = form.elements[name];
    var label = field && field.id ? form.querySelector("label[for='" + field.id + "']") : null;
    if (!label) return name === "non_field_errors" ? "" : name.replace(/_/g, " ");
    return label.textContent.replace("*", "").trim();
  }

  function profile() {
    var data = {};
    PROFILE.forEach(function (name) {
      var field = form.elements[name];
      if (!field) return;
      if (field.type === "checkbox") { data[name] = field.checked; return; }
      var value = (field.value || "").trim();
      if (value === "") return;
      if (name === "latency_sensitive") { data[name] = value === "true"; return; }
      if (NUMBERS[name]) {
        var number = Number(value);
        data[name] = isFinite(number) ? number : value;
        return;
      }
      data[name] = value;
    });
    return data;
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

  function markField(name, messages) {
    var wrapper = form.querySelector(".field[data-field='" + name + "']");
    if (!wrapper) return false;
    wrapper.classList.add("api-error");
    var input = wrapper.querySelector("input, select, textarea");
    if (input) input.setAttribute("aria-invalid", "true");
    wrapper.appendChild(el("small", { className: "api-error-text", text: messages.join(" ") }));
    return true;
  }

  function money(cost) {
    if (!cost || cost.amount === null || cost.amount === undefined) return "no price";
    var amount = Number(cost.amount);
    try {
      return new Intl.NumberFormat(undefined, { style: "currency", currency: cost.currency || "USD" }).format(amount);
    } catch (e) {
      return cost.amount + " " + (cost.currency || "");
    }
  }

  function range(pair) {
    if (!Array.isArray(pair) || pair.length !== 2) return "—";
    if (!pair[1]) return "none";  // a dedicated GPU's [0, 0]: never "0–0 %"
    return pair[0] === pair[1] ? pair[1] + " %" : pair[0] + "–" + pair[1] + " %";
  }

  function strategyLabel(strategy) { return STRATEGY[strategy] || strategy || "—"; }

  function kv(term, value, big) {
    return el("div", {}, [el("dt", { text: term }), el("dd", { className: big ? "big" : "", text: value })]);
  }

  function modelText(rec) {
    var text = rec.gpu_model || "—";
    if (rec.mig_profile) text += " · MIG " + rec.mig_profile;
    if (rec.time_slice_replicas) text += " · " + rec.time_slice_replicas + " shares per GPU";
    return text;
  }

  function optionCell(item, chosen) {
    var cell = el("td", {}, [el("strong", { text: strategyLabel(item.strategy) })]);
    if (chosen) cell.appendChild(el("span", { className: "tag", text: "chosen" }));
    cell.appendChild(el("br"));
    cell.appendChild(el("code", { text: item.resource_name || "" }));
    cell.appendChild(document.createTextNode(" · " + (item.gpu_model || "")));
    if (item.tradeoffs && item.tradeoffs.length) {
      cell.appendChild(el("details", { className: "tradeoffs-box" }, [
        el("summary", { text: "Trade-offs (" + item.tradeoffs.length + ")" }),
        el("ul", { className: "tradeoffs" }, item.tradeoffs.map(function (t) { return el("li", { text: t }); })),
      ]));
    }
    return cell;
  }

  function permittedCell(item) {
    if (item.permitted !== false) return el("td", {}, [el("span", { className: "yes", text: "Yes" })]);
    return el("td", {}, [el("span", { className: "no", text: "No" }),
      item.reason ? el("br") : null, item.reason ? el("small", { text: item.reason }) : null]);
  }

  function row(item, chosen, withDuration) {
    return el("tr", { className: chosen ? "chosen" : (item.permitted === false ? "not-permitted" : "") }, [
      optionCell(item, chosen),
      withDuration ? el("td", { className: "num", text: money(item.estimated_cost) }) : null,
      el("td", { className: "num", text: money(item.estimated_monthly_cost) }),
      el("td", { text: item.isolation || "—" }),
      el("td", { className: "num", text: range(item.expected_overhead_pct) }),
      permittedCell(item),
    ]);
  }

  function renderRecommendation(rec) {
    var saving = rec.saving_vs_dedicated_pct;
    var perReplica = "× " + rec.quantity + " per replica × " + rec.replicas + " replica" + (rec.replicas === 1 ? "" : "s");
    var nodes = [
      el("div", { className: "rec-head" }, [
        el("span", { className: "strategy strategy-" + rec.strategy, text: strategyLabel(rec.strategy) }),
        el("code", { className: "rec-resource", text: rec.resource_name }),
        el("span", { className: "muted", text: perReplica }),
      ]),
      el("dl", { className: "kv" }, [
        kv("GPU model", modelText(rec)),
        rec.estimated_cost ? kv("Cost for " + rec.estimated_cost.hours + " h", money(rec.estimated_cost), true) : null,
        kv("Monthly rate", money(rec.estimated_monthly_cost), true),
        rec.gpu_share ? kv("GPU share per unit", rec.gpu_share + " of a GPU") : null,
        kv("Saving vs dedicated", saving === null || saving === undefined ? "—" : saving + " %", true),
        kv("Overhead", range(rec.expected_overhead_pct)),
        kv("Utilization target", range(rec.utilization_target_pct)),
        kv("Isolation", rec.isolation || "—"),
      ]),
    ];
    if (rec.rationale && rec.rationale.length) {
      nodes.push(el("h3", { text: "Why" }));
      nodes.push(el("ol", { className: "rationale" }, rec.rationale.map(function (line) {
        return el("li", { text: line });
      })));
    }
    var alternatives = rec.alternatives || [];
    if (alternatives.length) {
      nodes.push(el("h3", { text: "Alternatives" }));
      var withDuration = !!rec.estimated_cost;
      var titles = ["Option"].concat(withDuration ? ["For " + rec.estimated_cost.hours + " h"] : [])
        .concat(["Monthly rate", "Isolation", "Overhead", "Permitted"]);
      var head = el("tr", {}, titles.map(function (h) {
        return el("th", { className: /^(For|Monthly|Overhead)/.test(h) ? "num" : "", text: h });
      }));
      var rows = [row(rec, true, withDuration)].concat(alternatives.map(function (alt) {
        return row(alt, false, withDuration);
      }));
      nodes.push(el("div", { className: "table-scroll" }, [
        el("table", { className: "table compact alternatives" }, [el("thead", {}, [head]), el("tbody", {}, rows)]),
      ]));
    }
    body.replaceChildren(el("div", { className: "rec" }, nodes));
  }

  function renderErrors(errors) {
    var items = [];
    Object.keys(errors || {}).forEach(function (name) {
      var messages = [].concat(errors[name]);
      markField(name, messages);
      var label = labelFor(name);
      items.push(el("li", {}, [label ? el("strong", { text: label + ": " }) : null, messages.join(" ")]));
    });
    body.replaceChildren(el("div", { className: "preview-errors", role: "alert" }, [
      el("p", { text: "No recommendation for this profile yet:" }),
      el("ul", {}, items),
    ]));
  }

  function renderProblem(text) {
    body.replaceChildren(el("div", { className: "preview-problem" }, [
      el("p", { text: text }),
      el("p", { className: "muted", text: "You can still submit: the portal recommends again on submission." }),
    ]));
  }

  function refresh() {
    var data = profile();
    var key = JSON.stringify(data);
    if (key === lastBody) return;
    if (!data.workload_type || data.gpu_memory_gb === undefined) {
      lastBody = null;
      clearFieldMarks();
      setState("live preview", false);
      body.replaceChildren(el("p", { className: "muted",
        text: "Choose a workload type and the GPU memory one replica needs: the recommendation appears here." }));
      return;
    }
    if (controller) controller.abort();
    controller = typeof AbortController === "function" ? new AbortController() : null;
    var mine = ++seq;
    setState("updating…", true);
    fetch(URL_, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrfToken() },
      body: key,
      signal: controller ? controller.signal : undefined,
    }).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (payload) {
        if (mine !== seq) return;
        lastBody = key;
        clearFieldMarks();
        if (response.ok && payload) {
          renderRecommendation(payload);
          // what_if.js prices the same profile for every option and checks the team's quota and budget.
          form.dispatchEvent(new CustomEvent("preview:recommended", { detail: { profile: data, recommendation: payload } }));
          setState("updated " + new Date().toLocaleTimeString(), false);
        } else if (response.status === 400 && payload) {
          renderErrors(payload);
          setState("check the profile", false);
        } else if (response.status === 401 || response.status === 403) {
          lastBody = null;
          renderProblem("Your session has expired or this page is stale: reload the page or sign in again.");
          setState("unavailable", false);
        } else {
          lastBody = null;
          renderProblem("The recommendation service answered " + response.status + ". Try again in a moment.");
          setState("unavailable", false);
        }
      });
    }).catch(function (error) {
      if (error && error.name === "AbortError") return;
      if (mine !== seq) return;
      lastBody = null;
      renderProblem("Cannot reach the portal to preview the recommendation (network error). It retries as you edit.");
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
