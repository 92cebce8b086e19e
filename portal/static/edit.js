// Changing a dagger's query: checked as the analyst types (validate's checks on the portal's
// Spark), then saved as its next version through `dagger edit`'s own operation.
"use strict";
(function () {
  const form = document.getElementById("edit");
  if (!form) return;
  const checks = window.daggerChecks;
  const back = window.location.pathname;

  function draft() {
    return {query: document.getElementById("query").value,
            watermark_delay: document.getElementById("watermark_delay").value};
  }

  function save() {
    return checks.act("save-button", "save-said", form.dataset.save, draft(), "Checking and changing…", back);
  }

  document.getElementById("save-button").addEventListener("click", save);
  checks.checkAsTyped(form, form.dataset.validate, draft, back);
})();
