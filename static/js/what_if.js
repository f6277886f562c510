/* What-if beside the live preview of the new-request form.
 *
 * When request_form.js has a recommendation ("preview:recommended"), POST the same profile with the chosen team
 * (and, for training or HPC, the hours one run takes on a reference model) to /api/v1/what-if/ and show: the
 * team's spend this month, what the recommended option adds and the budget it leaves, then every strategy on
 * every offered GPU model, priced for the duration, with whether quota and budget allow it. No innerHTML with data.
 */
(function () {
  "use strict";

  var form = document.getElementById("request-form");
  var box = document.getElementById("what-if");
  var out = document.getElementById("what-if-body");
  var refHours = document.getElementById("what-if-reference-hours");
  var refModel = document.getElementById("what-if-reference-model");
  if (!form || !box || !out) return;

  var URL_ = box.dataset.url;
  var STRATEGY = { "dedicated": "Dedicated GPU", "mig": "MIG slice", "time-slicing": "Time-sliced share" };
  var last = null;
  var seq = 0;

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

  function money(cost) {
    if (!cost || cost.amount === null || cost.amount === undefined) return "no price";
    return cost.amount + " " + (cost.currency || "");
  }

  function csrfToken() {
    var input = form.querySelector("input[name=csrfmiddlewaretoken]");
    return input ? input.value : "";
  }

  // The reference model choices are the form's own GPU model choices (the catalog).
  if (refModel && form.elements.gpu_model) {
    Array.prototype.forEach.call(form.elements.gpu_model.options, function (option) {
      if (option.value) refModel.appendChild(el("option", { value: option.value, text: option.textContent }));
    });
  }

  function perRunWanted(profile) {
    return profile.workload_type === "training" || profile.workload_type === "hpc_simulation";
  }

  function budgetLines(answer, rec) {
    var month = answer.month_to_date;
    var lines = [el("p", {}, ["Team this month so far: ", el("strong", { text: month.gpu_hours.toFixed(1) + " GPU-h" }),
      ", " + month.amount + " " + answer.currency + "."])];
    var mine = answer.options.filter(function (o) {
      return o.gpu_model === rec.gpu_model && o.strategy === rec.strategy;
    })[0];
    if (mine && mine.budget) {
      var b = mine.budget;
      lines.push(el("p", {}, ["This request this month: ", el("strong", { text: b.gpu_hours_this_month.toFixed(1) + " GPU-h" }),
        b.cost_this_month !== null ? ", " + b.cost_this_month + " " + answer.currency : "",
        answer.duration_hours === null ? " (no duration: counted to the month's end)." : "."]));
      if (month.budget_gpu_hours === null) lines.push(el("p", { className: "muted", text: "No monthly budget set." }));
      else lines.push(el("p", { className: b.allowed ? "" : "no" }, [
        b.allowed ? "Budget left after it: " : "Over budget: ",
        el("strong", { text: b.left_gpu_hours.toFixed(1) + " GPU-h" }),
        " of " + month.budget_gpu_hours + " GPU-h."]));
    }
    return lines;
  }

  function verdict(check, yes) {
    if (!check) return el("span", { className: "muted", text: "—" });
    return check.allowed ? el("span", { className: "yes", text: yes })
      : el("span", { className: "no", text: "No", title: check.message || "" });
  }

  function table(answer) {
    var hours = answer.duration_hours;
    var heads = ["Option", hours === null ? "Monthly rate" : "For " + hours + " h", "Per run (estimate)", "Quota", "Budget", "Policy"];
    var rows = answer.options.map(function (o) {
      var option = el("td", {}, [el("strong", { text: o.gpu_model }), " · " + (STRATEGY[o.strategy] || o.strategy),
        o.resource_name ? el("br") : null, o.resource_name ? el("code", { text: o.resource_name }) : null,
        o.gpu_share ? el("small", { className: "muted", text: " share " + o.gpu_share }) : null]);
      var cost = o.fits ? money(hours === null ? o.estimated_monthly_cost : o.estimated_cost) : "—";
      var run = o.run ? money(o.run.cost) + " · " + o.run.hours + " h (×" + o.run.speedup + ")" : "—";
      var policy = o.permitted ? el("span", { className: "yes", text: "Yes" })
        : el("span", {}, [el("span", { className: "no", text: "No" }), el("br"), el("small", { text: o.reason || "" })]);
      return el("tr", { className: o.permitted ? "" : "not-permitted" }, [
        option, el("td", { className: "num", text: cost }), el("td", { className: "num", text: run }),
        el("td", {}, [verdict(o.quota, "Yes")]), el("td", {}, [verdict(o.budget, "Yes")]), el("td", {}, [policy]),
      ]);
    });
    return el("div", { className: "table-scroll" }, [el("table", { className: "table compact what-if-table" }, [
      el("thead", {}, [el("tr", {}, heads.map(function (h, i) {
        return el("th", { className: i === 1 || i === 2 ? "num" : "", text: h });
      }))]),
      el("tbody", {}, rows),
    ])]);
  }

  function render(answer, rec) {
    var nodes = budgetLines(answer, rec);
    nodes.push(table(answer));
    if (answer.options.some(function (o) { return o.run; })) {
      nodes.push(el("p", { className: "muted small", text: "Per-run figures are estimates: the reference hours scaled " +
        "by dense FP16/BF16 tensor throughput from NVIDIA's datasheets; memory bandwidth and interconnect change real speed-ups." }));
    }
    nodes.push(el("p", { className: "muted small price-basis", text: "Prices: " + answer.price_basis.text }));
    out.replaceChildren.apply(out, nodes);
  }

  function run(detail) {
    var profile = Object.assign({}, detail.profile);
    var team = form.elements.team ? form.elements.team.value : "";
    if (!team) { out.replaceChildren(el("p", { className: "muted", text: "Choose a team to see its budget and quota." })); return; }
    profile.team = team;
    if (perRunWanted(profile) && refHours && refHours.value && refModel && refModel.value) {
      profile.reference_hours = Number(refHours.value);
      profile.reference_gpu_model = refModel.value;
    }
    box.classList.toggle("per-run", perRunWanted(profile));
    var key = JSON.stringify(profile);
    if (key === last) return;
    last = key;
    var mine = ++seq;
    fetch(URL_, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrfToken() },
      body: key,
    }).then(function (response) {
      return response.json().catch(function () { return null; }).then(function (payload) {
        if (mine !== seq) return;
        if (response.ok && payload) { render(payload, detail.recommendation); return; }
        last = null;
        var messages = payload ? Object.keys(payload).map(function (k) { return k + ": " + [].concat(payload[k]).join(" "); }) : [];
        out.replaceChildren(el("p", { className: "muted", text: "No comparison yet. " + messages.join(" ") }));
      });
    }).catch(function () {
      if (mine !== seq) return;
      last = null;
      out.replaceChildren(el("p", { className: "muted", text: "Cannot reach the portal for the comparison." }));
    });
  }

  var lastDetail = null;
  form.addEventListener("preview:recommended", function (event) { lastDetail = event.detail; run(event.detail); });
  [refHours, refModel].forEach(function (input) {
    if (input) input.addEventListener("change", function () { if (lastDetail) run(lastDetail); });
  });
  if (form.elements.team) form.elements.team.addEventListener("change", function () { if (lastDetail) run(lastDetail); });
})();
