// What the new-dagger and edit pages share: posting JSON with the session's CSRF token, and
// showing validate's answer (problems at their field, or line and column; the output's columns).
// Every value goes in as text (textContent), never as markup.
"use strict";
window.daggerChecks = (function () {
  function csrf() { return document.getElementById("csrf").value; }

  async function post(url, body, back) {
    const response = await fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: {"Content-Type": "application/json", "Accept": "application/json", "X-CSRFToken": csrf()},
      body: JSON.stringify(body),
    });
    if (response.status === 401) { window.location.assign("/auth/login?next=" + encodeURIComponent(back)); return null; }
    return response.json();
  }

  function said(id, text, kind) { const el = document.getElementById(id); el.textContent = text; el.className = kind || ""; }

  function where(e) {
    if (e.field) return e.field + ": ";
    if (e.line) return "query, line " + e.line + (e.column ? ", column " + e.column : "") + ": ";
    return "";
  }

  function refusal(answer) { return (answer.errors || []).map(function (e) { return where(e) + e.message; }).join("; "); }

  function add(list, kind, text, error) {
    const li = document.createElement("li");
    li.className = "problem " + kind;
    li.textContent = text;
    if (error && error.line) { li.dataset.line = error.line; li.dataset.column = error.column || ""; }
    list.appendChild(li);
  }

  // answer: validate's; shows it in #verdict, #problems and #columns
  function show(answer) {
    const problems = document.getElementById("problems"), columns = document.getElementById("columns");
    problems.replaceChildren();
    columns.hidden = true;
    if (answer.valid) {
      said("verdict", "Valid: the query reads its input and the sink takes its output.", "ok");
      const body = columns.tBodies[0];
      body.replaceChildren();
      for (const c of answer.columns || []) {
        const tr = document.createElement("tr");
        for (const v of [c.name, c.type]) { const td = document.createElement("td"); td.textContent = v; tr.appendChild(td); }
        body.appendChild(tr);
      }
      columns.hidden = false;
      for (const w of answer.warnings || []) add(problems, "warning", w);
      return;
    }
    said("verdict", "Not valid yet:", "error");
    for (const e of answer.errors || []) add(problems, e.kind, where(e) + e.message, e);
  }

  // checks the form's draft (draft(): its JSON) at url as the analyst types
  function checkAsTyped(form, url, draft, back) {
    const WAIT_MS = 600;          // after the last keystroke
    let timer = null, asked = 0;
    async function check() {
      const mine = ++asked;
      said("verdict", "Checking…", "muted");
      try {
        const answer = await post(url, draft(), back);
        if (answer && mine === asked) show(answer);     // an older answer never overwrites a newer one
      } catch (e) {
        if (mine === asked) said("verdict", "The portal did not answer; it will be asked again.", "error");
      }
    }
    function soon() { clearTimeout(timer); timer = setTimeout(check, WAIT_MS); }
    form.addEventListener("input", soon);
    form.addEventListener("change", soon);
    form.addEventListener("submit", function (e) { e.preventDefault(); check(); });
  }

  // a change (deploy, edit): the button held while it goes, then on to the dagger's page or the refusal said
  async function act(buttonId, saidId, url, body, busy, back) {
    const button = document.getElementById(buttonId);
    button.disabled = true;
    said(saidId, busy, "muted");
    try {
      const answer = await post(url, body, back);
      if (!answer) return;
      if (answer.valid && answer.url) { window.location.assign(answer.url); return; }
      said(saidId, refusal(answer), "error");
    } catch (e) {
      said(saidId, "The portal did not answer.", "error");
    }
    button.disabled = false;
  }

  return {post: post, said: said, refusal: refusal, show: show, checkAsTyped: checkAsTyped, act: act};
})();
