// A session's graph page: clicking a node (or Enter on it) shows the node in the side panel.
// Text is written with textContent only: nothing from a transcript is ever parsed as HTML.
"use strict";
(function () {
  const graph = document.querySelector(".graph[data-session]");
  const panel = document.getElementById("node-panel");
  if (!graph || !panel) return;
  const detail = panel.querySelector(".node-detail");
  const hint = panel.querySelector(".hint");
  const shown = window.sessiongraphShown;  // /static/shown.js

  function row(dl, term, value) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    dd.textContent = shown(value);
    dl.append(dt, dd);
  }

  async function show(g) {
    graph.querySelectorAll(".node.selected").forEach((n) => n.classList.remove("selected"));
    g.classList.add("selected");
    const id = g.dataset.node;
    const res = await fetch(`/api/nodes/${encodeURIComponent(id)}`,
      { credentials: "same-origin" });
    const data = await res.json();
    if (!res.ok) {
      hint.textContent = data.error ? shown(data.error.message) : "could not read the node";
      hint.hidden = false;
      detail.hidden = true;
      return;
    }
    hint.hidden = true;
    detail.hidden = false;
    detail.querySelector(".node-title").textContent = `${data.kind} · ${data.role}`;
    const dl = detail.querySelector(".node-meta");
    dl.replaceChildren();
    row(dl, "id", data.id);
    row(dl, "predecessor", data.predecessor || "(root)");
    row(dl, "created", data.created_at);
    if (data.head) row(dl, "head", "yes");
    if (data.rewound) row(dl, "rewound", "yes");
    if (data.covers && data.covers.length) row(dl, "covers", `${data.covers.length} nodes`);
    if (data.children.length > 1) row(dl, "fork", `${data.children.length} children`);
    for (const [p, v] of Object.entries(data.written)) row(dl, `marker ${shown(p)}`, v);
    for (const s of data.spawned) row(dl, "spawned", s);
    let text = data.text;
    if (!text && Array.isArray(data.content)) {
      text = data.content.map((b) => b.type === "tool_call" ? `[tool call ${b.name}] ${JSON.stringify(b.arguments)}` : `[${b.type}]`).join("\n");
    }
    detail.querySelector(".node-text").textContent = text ? shown(text) : "(no text)";
  }

  graph.addEventListener("click", (ev) => {
    if (ev.target.closest("a")) return;
    const g = ev.target.closest(".node");
    if (g) show(g);
  });
  graph.addEventListener("keydown", (ev) => {
    const g = ev.target.closest && ev.target.closest(".node");
    if (g && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); show(g); }
  });
})();
