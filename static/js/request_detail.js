/* Request detail page: refresh the live cluster status without a reload (copying the YAML is copy.js).
 *
 * "Refresh status" (and, while the request is approved or provisioning or its pod waits, a timer every 10 s) GETs
 * the status endpoint and swaps in the panel the server rendered (Django-escaped HTML from the same origin), the
 * manifests once they are rendered, and a note when the status changed (the actions then differ: reload).
 * Each refresh also re-reads the "Use it" card's pods and events from the workload endpoint ("Read the cluster
 * again" does only that), and so does the page once shown: the server renders it without calling the cluster.
 * An unreachable cluster comes back as the server's message, not as a failure.
 */
(function () {
  "use strict";

  var POLL_MS = 10000;

  var panel = document.getElementById("live-status");
  if (!panel) return;
  var body = document.getElementById("live-status-body");
  var state = document.getElementById("live-state");
  var refresh = document.getElementById("refresh-status");
  var initialStatus = panel.dataset.status;
  var polling = panel.dataset.polling === "true";
  var timer = null;
  var busy = false;

  function setState(text) { if (state) state.textContent = text; }

  function showManifests(data) {
    var pre = document.getElementById("manifests-yaml");
    if (!pre || !data.manifests_yaml) return;
    if (pre.textContent !== data.manifests_yaml) pre.textContent = data.manifests_yaml;
    var meta = document.getElementById("manifests-meta");
    if (meta) {
      var when = data.manifests_rendered_at ? ", rendered " + data.manifests_rendered_at.slice(0, 16).replace("T", " ") + " UTC" : "";
      meta.textContent = data.manifest_count + " object" + (data.manifest_count === 1 ? "" : "s") + when;
    }
    ["manifests-body", "manifest-tools"].forEach(function (id) {
      var node = document.getElementById(id);
      if (node) node.hidden = false;
    });
    var empty = document.getElementById("manifests-empty");
    if (empty) empty.hidden = true;
  }

  function showStatusChange(data) {
    if (data.status === initialStatus) return;
    var note = document.getElementById("status-changed");
    if (note) {
      note.querySelector("[data-status-changed-to]").textContent = data.status_display;
      note.hidden = false;
    }
    var badge = document.querySelector("h1 .status");
    if (badge) {
      badge.className = "status status-" + data.status;
      badge.textContent = data.status_display;
    }
  }

  var access = document.getElementById("access");
  var readCluster = document.getElementById("read-cluster");
  var workloadState = document.getElementById("workload-state");
  var workloadBusy = false;

  function loadWorkload() {
    if (!access || !access.dataset.workloadUrl || workloadBusy) return;
    workloadBusy = true;
    access.classList.add("is-loading");
    fetch(access.dataset.workloadUrl, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        // Django-escaped HTML rendered by the same templates as the page, from the same origin.
        document.getElementById("workload-pods").innerHTML = data.pods_html;
        document.getElementById("workload-events").innerHTML = data.events_html;
        if (workloadState) workloadState.textContent = "pods and events read " + new Date().toLocaleTimeString();
      })
      .catch(function (error) {
        if (workloadState) workloadState.textContent = "Could not read pods and events (" + error.message + ")";
      })
      .then(function () {
        workloadBusy = false;
        access.classList.remove("is-loading");
      });
  }

  function schedule() {
    window.clearTimeout(timer);
    timer = polling ? window.setTimeout(load, POLL_MS) : null;
  }

  function load() {
    if (busy) return;
    if (document.hidden && polling) { schedule(); return; }
    busy = true;
    panel.classList.add("is-loading");
    if (refresh) refresh.disabled = true;
    fetch(panel.dataset.statusUrl, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok) throw new Error("HTTP " + response.status);
        return response.json();
      })
      .then(function (data) {
        body.innerHTML = data.html;
        showManifests(data);
        showStatusChange(data);
        polling = data.polling;
        panel.dataset.polling = polling ? "true" : "false";
        var now = new Date().toLocaleTimeString();
        setState((polling ? "Refreshing every 10 s · " : "") + "checked " + now);
        loadWorkload();
      })
      .catch(function (error) {
        setState("Could not refresh (" + error.message + ")" + (polling ? "; trying again in 10 s." : "."));
      })
      .then(function () {
        busy = false;
        panel.classList.remove("is-loading");
        if (refresh) refresh.disabled = false;
        schedule();
      });
  }

  if (readCluster) readCluster.addEventListener("click", function (event) { event.preventDefault(); loadWorkload(); });
  // The page renders without calling the cluster: its pods and events are read now, from the workload endpoint.
  if (document.getElementById("workload-reading")) loadWorkload();
  if (refresh) refresh.addEventListener("click", function () { window.clearTimeout(timer); load(); });
  document.addEventListener("visibilitychange", function () { if (!document.hidden && polling) load(); });
  schedule();
})();
