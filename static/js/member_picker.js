// The team page's add-member field suggests portal users as the lead types (name, username or e-mail): the
// candidates come from the team's candidates endpoint and fill the field's <datalist>; the username is submitted.
(function () {
  "use strict";
  var input = document.getElementById("member-username");
  var list = document.getElementById("member-candidates");
  if (!input || !list || !input.dataset.candidatesUrl) {
    return;
  }
  var timer = null;
  var asked = "";
  function fill(users) {
    list.replaceChildren();
    users.forEach(function (user) {
      var option = document.createElement("option");
      option.value = user.username;
      option.label = user.name ? user.name + " (" + user.username + ")" : user.username;
      option.textContent = option.label;
      list.appendChild(option);
    });
  }
  function search() {
    var query = input.value.trim();
    if (query.length < 2 || query === asked) {
      return;
    }
    asked = query;
    fetch(input.dataset.candidatesUrl + "?q=" + encodeURIComponent(query), {
      headers: { Accept: "application/json" },
      credentials: "same-origin",
    })
      .then(function (response) {
        return response.ok ? response.json() : { users: [] };
      })
      .then(function (body) {
        if (input.value.trim() === query) {
          fill(body.users || []);
        }
      })
      .catch(function () {
        fill([]);
      });
  }
  input.addEventListener("input", function () {
    window.clearTimeout(timer);
    timer = window.setTimeout(search, 200);
  });
})();
