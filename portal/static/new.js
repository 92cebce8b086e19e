// The three steps of a new dagger: the draft is checked as the analyst types (the portal's Spark
// runs `dagger validate`'s checks), previewed on its topic's latest messages, then deployed.
"use strict";
(function () {
  const form = document.getElementById("draft");
  if (!form) return;
  const checks = window.daggerChecks;
  const BACK = "/daggers/new";

  function value(id) { const el = document.getElementById(id); return el ? el.value : ""; }

  function draft() {
    const chosen = form.querySelector("input[name=input]:checked");
    const prefix = chosen ? chosen.dataset.prefix : "";
    const row = document.getElementById("suffix-row");
    if (row) row.hidden = !prefix;
    const shown = document.getElementById("suffix-prefix");
    if (shown) shown.textContent = prefix;
    const sinkType = value("sink_type");
    document.getElementById("sink-name-label").hidden = sinkType === "log";
    return {
      team: form.dataset.team, name: value("name"), input: chosen ? chosen.value : null,
      topic_suffix: prefix ? value("topic_suffix") : undefined, query: value("query"),
      watermark_delay: value("watermark_delay"), parallelism: Number(value("parallelism")),
      sink: {type: sinkType, name: value("sink_name")},
    };
  }

  async function preview() {
    checks.said("preview-said", "Reading the topic's latest messages…", "muted");
    const table = document.getElementById("preview");
    table.hidden = true;
    try {
      const answer = await checks.post(form.dataset.preview, draft(), BACK);
      if (!answer) return;
      if (!answer.valid) { checks.said("preview-said", checks.refusal(answer), "error"); return; }
      checks.said("preview-said", answer.read + " messages read, " + answer.skipped + " set aside, " + answer.row_count +
                  " rows" + (answer.row_count > answer.rows.length ? " (the first " + answer.rows.length + " shown)" : ""), "ok");
      const names = answer.rows.length ? Object.keys(answer.rows[0]) : [];
      const head = table.tHead.rows[0];
      head.replaceChildren();
      for (const n of names) { const th = document.createElement("th"); th.scope = "col"; th.textContent = n; head.appendChild(th); }
      const body = table.tBodies[0];
      body.replaceChildren();
      for (const row of answer.rows) {
        const tr = document.createElement("tr");
        for (const n of names) {
          const td = document.createElement("td");
          const v = row[n];
          td.textContent = v === null || v === undefined ? "–" : (typeof v === "object" ? JSON.stringify(v) : String(v));
          tr.appendChild(td);
        }
        body.appendChild(tr);
      }
      table.hidden = names.length === 0;
    } catch (e) {
      checks.said("preview-said", "The portal did not answer.", "error");
    }
  }

  function deploy() {
    return checks.act("deploy-button", "deploy-said", form.dataset.deploy,
                      Object.assign(draft(), {cluster: value("cluster")}), "Checking and deploying…", BACK);
  }

  document.getElementById("preview-button").addEventListener("click", preview);
  document.getElementById("deploy-button").addEventListener("click", deploy);
  checks.checkAsTyped(form, form.dataset.validate, draft, BACK);
  draft();
})();
