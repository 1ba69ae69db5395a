// The Memory page's Core editor: save with compare-and-set on the revision, preview through the
// server's one sanitizer. A refused save keeps the draft in the editor and says why.
"use strict";
(function () {
  const form = document.getElementById("core-editor");
  if (!form) return;
  const text = document.getElementById("core-text");
  const status = document.getElementById("core-status");
  const preview = document.getElementById("core-draft-preview");
  const rev = form.querySelector(".rev");

  const shown = window.sessiongraphShown;  // /static/shown.js

  function say(message, kind) {
    status.textContent = shown(message);
    status.className = "status" + (kind ? " " + kind : "");
  }

  async function send(method, url, body) {
    const res = await fetch(url, {
      method, credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    return { res, data };
  }

  async function showPreview() {
    const { res, data } = await send("POST", "/api/memory/preview", { text: text.value });
    // the HTML comes from the server's sanitizer (memory.markdown.sanitize)
    if (res.ok) preview.innerHTML = data.html;
  }

  document.getElementById("core-preview-btn").addEventListener("click", showPreview);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    say("Saving…");
    const revision = Number(form.dataset.revision);
    const { res, data } = await send("PUT", "/api/memory/core", { text: text.value, revision });
    if (res.ok) {
      form.dataset.revision = String(data.revision);
      rev.textContent = String(data.revision);
      text.value = data.canonical;
      say(`Saved: revision ${data.revision}.`, "ok");
      showPreview();
      return;
    }
    const err = data && data.error ? data.error : { code: `HTTP ${res.status}`, message: "the save failed" };
    say(`Not saved (${err.code}): ${err.message}. Your draft is kept.`, "error");
  });
})();
