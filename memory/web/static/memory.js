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

  // Control and bidirectional formatting characters shown as escapes (\x1b, \u202e), as the
  // server shows them: a right-to-left override must not reorder what the page shows.
  const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function shown(text) {
    return String(text).replace(CONTROLS, (c) => {
      const n = c.charCodeAt(0);
      return n < 0x100 ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u${n.toString(16).padStart(4, "0")}`;
    });
  }

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
