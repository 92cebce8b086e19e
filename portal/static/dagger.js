// A dagger's page, kept live: its state, rows written, rate, lag and dead letters from
// /api/daggers/<name> every few seconds, so a new dagger is followed to its first written window.
"use strict";
(function () {
  const live = document.getElementById("live");
  if (!live) return;
  const every = Number(live.dataset.refreshMs || 3000);
  const shown = {"rows-written": "rows_written", "input-per-s": "input_per_s", "lag": "lag", "dead-letters": "dead_letters"};

  async function refresh() {
    try {
      const response = await fetch(live.dataset.api, {credentials: "same-origin", headers: {"Accept": "application/json"}});
      if (response.ok) {
        const status = (await response.json()).status || {};
        for (const [id, key] of Object.entries(shown)) {
          const v = status[key];
          document.getElementById(id).textContent = v === null || v === undefined ? "–" : String(v);
        }
        const state = document.getElementById("state");
        if (status.status) {
          state.textContent = status.status;
          state.className = "status s-" + String(status.status).toLowerCase().replace(/[^a-z_]/g, "");
        }
        document.getElementById("first-window").hidden = !(status.rows_written > 0);
        live.dataset.refreshedAt = new Date().toISOString();
      }
    } catch (e) {
      // the next refresh tries again
    }
    setTimeout(refresh, every);
  }
  setTimeout(refresh, every);
})();
