// The memory panel: a delete that can really be undone.
// The row hides at once; the server delete runs when a timer fires (data-delay-ms); the undo toast
// lives shorter than that timer (data-toast-ms), so its Undo button can always still undo. A
// background refresh never brings back a record whose delete is pending; leaving the page sends the
// pending deletes (fetch keepalive); after a delete, focus returns to the toolbar.
"use strict";
(function () {
  const list = document.getElementById("records");
  if (!list) return;
  const toolbar = document.getElementById("panel-toolbar");
  const toast = document.getElementById("toast");
  const toastText = toast.querySelector(".toast-text");
  const filter = document.getElementById("panel-filter");
  const count = document.getElementById("panel-count");
  const delayMs = Number(list.dataset.delayMs);
  const toastMs = Number(list.dataset.toastMs);
  const pending = new Map(); // record id -> timer
  let toastTimer = null;
  let toastId = null;

  const shown = window.sessiongraphShown;  // /static/shown.js

  function rows() { return Array.from(list.querySelectorAll(".record")); }
  function updateCount() {
    count.textContent = `${rows().filter((r) => !r.hidden).length} records`;
  }

  function commit(id) {
    pending.delete(id);
    return fetch(`/api/memory/records/${encodeURIComponent(id)}?grace=0`, {
      method: "DELETE", credentials: "same-origin", keepalive: true,
    }).then(() => {
      const row = list.querySelector(`.record[data-id="${CSS.escape(id)}"]`);
      if (row) row.remove();
    });
  }

  function hideToast() {
    toast.hidden = true;
    toastId = null;
    if (toastTimer) clearTimeout(toastTimer);
    toastTimer = null;
  }

  function remove(row) {
    const id = row.dataset.id;
    row.hidden = true;
    updateCount();
    pending.set(id, setTimeout(() => commit(id), delayMs));
    toastText.textContent = "Record deleted.";
    toast.hidden = false;
    toastId = id;
    if (toastTimer) clearTimeout(toastTimer);
    toastTimer = setTimeout(hideToast, toastMs);
    toolbar.focus();
  }

  function undo() {
    const id = toastId;
    if (id === null || !pending.has(id)) return hideToast();
    clearTimeout(pending.get(id));
    pending.delete(id);
    const row = list.querySelector(`.record[data-id="${CSS.escape(id)}"]`);
    if (row) row.hidden = false;
    updateCount();
    hideToast();
    toolbar.focus();
  }

  list.addEventListener("click", (ev) => {
    const btn = ev.target.closest("button.delete");
    if (btn) remove(btn.closest(".record"));
  });
  toast.querySelector(".undo").addEventListener("click", undo);
  filter.addEventListener("input", () => {
    const q = filter.value.toLowerCase();
    for (const r of rows()) {
      if (pending.has(r.dataset.id)) continue;
      r.hidden = q !== "" && !r.textContent.toLowerCase().includes(q);
    }
    updateCount();
  });

  function recordRow(rec) {
    const li = document.createElement("li");
    li.className = "record";
    li.dataset.id = rec.id;
    const main = document.createElement("div");
    main.className = "record-main";
    const content = document.createElement("div");
    content.className = "record-content";
    content.textContent = shown(rec.content);
    main.append(content);
    if (rec.snippet) {
      const s = document.createElement("div");
      s.className = "snippet";
      s.textContent = `“${shown(rec.snippet)}”`;
      main.append(s);
    }
    const tags = document.createElement("div");
    tags.className = "tags";
    for (const t of rec.tags) {
      const span = document.createElement("span");
      span.className = "tag";
      span.textContent = shown(t);
      tags.append(span);
    }
    const meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = `${shown(rec.topic)} · ${rec.date}`;
    tags.append(meta);
    main.append(tags);
    const del = document.createElement("button");
    del.type = "button";
    del.className = "delete";
    del.setAttribute("aria-label", "Delete this record");
    del.textContent = "Delete";
    li.append(main, del);
    return li;
  }

  // Background refresh: the server's list, without the records whose delete is pending.
  async function refresh() {
    const res = await fetch("/api/memory/records", { credentials: "same-origin" });
    if (!res.ok) return;
    const records = await res.json();
    const fresh = records.filter((r) => !pending.has(r.id)).map(recordRow);
    const kept = rows().filter((r) => pending.has(r.dataset.id));
    list.replaceChildren(...fresh, ...kept);
    updateCount();
  }
  window.sessiongraphPanelRefresh = refresh;
  setInterval(refresh, 15000);

  // Leaving the page commits every pending delete.
  window.addEventListener("pagehide", () => {
    for (const [id, timer] of pending) {
      clearTimeout(timer);
      commit(id);
    }
  });
})();
