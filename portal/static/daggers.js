// The daggers page, kept live: the table is redrawn from /api/daggers every few seconds. Every
// value goes in as text (textContent), never as markup.
"use strict";
(function () {
  const table = document.getElementById("daggers");
  if (!table) return;
  const every = Number(table.dataset.refreshMs || 5000);
  const columns = ["dagger", "team", "cluster", "version", "status", "input_per_s", "lag", "watermark_delay_s",
                   "rows_written", "dead_letters", "sink_errors"];
  const numeric = new Set(["input_per_s", "lag", "rows_written", "dead_letters", "sink_errors"]);

  function cell(row, key) {
    const td = document.createElement("td");
    const value = row[key];
    if (key === "dagger") {
      const a = document.createElement("a");
      a.href = "/daggers/" + encodeURIComponent(value);
      a.textContent = value;
      td.appendChild(a);
      return td;
    }
    td.textContent = value === null || value === undefined ? "–" : (key === "watermark_delay_s" ? value + " s" : String(value));
    if (numeric.has(key)) td.className = "num";
    if (key === "status") td.className = "status s-" + String(value).toLowerCase().replace(/[^a-z_]/g, "");
    return td;
  }

  async function refresh() {
    try {
      const response = await fetch("/api/daggers", {credentials: "same-origin", headers: {"Accept": "application/json"}});
      if (response.status === 401) { window.location.assign("/auth/login?next=/daggers"); return; }
      if (!response.ok) throw new Error(String(response.status));
      const data = await response.json();
      const body = document.createElement("tbody");
      for (const row of data.daggers) {
        const tr = document.createElement("tr");
        tr.dataset.dagger = row.dagger;
        for (const key of columns) tr.appendChild(cell(row, key));
        body.appendChild(tr);
      }
      table.replaceChild(body, table.tBodies[0]);
      table.dataset.refreshedAt = new Date().toISOString();
    } catch (e) {
      // the next refresh tries again
    }
    setTimeout(refresh, every);     // after the answer: a slow portal is not asked again meanwhile
  }
  setTimeout(refresh, every);
})();
