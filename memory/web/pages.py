"""The Memory page and the memory panel: see, find, correct and delete memory.

``/memory?section=topics|timeline|recent|core`` is one page in three parts: the top bar, a secondary
bar (the four sections, then the section's list: the topic folder tree, the Timeline's years, months
and days) and the content (a 76 px header with the name, metadata and actions, then a reading column
at most 780 px wide). Below 720 px the list and the content are one page at a time: choosing a topic
or a day opens the content with a back button (``&list=1`` goes back to the list).

* Topics: the topic file's reading view (:func:`memory.markdown.render_markdown`), ``&view=source``
  for its Markdown;
* Timeline: one day's records (``&day=YYYY-MM-DD``, newest by default), folded by year and month;
* Recent: ``N / limit records``, newest first;
* Core: the block actually injected with its token count against the budget (``Prompt preview``,
  read-only), or ``&view=records``: the core topic's file in an editor, saved through ``PUT
  /api/memory/core`` with compare-and-set on the revision (``/static/memory/memory.js``).

``/memory/panel`` lists every record with its snippet and tags and a delete button whose deletion
can really be undone (``/static/memory/panel.js``).
"""

from __future__ import annotations

from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from graph.server.app import render
from memory.markdown import render_markdown
from memory.records import CORE_TOPIC, Record
from memory.topic_files import render_topic
from memory.web.api import MemoryHandle
from memory.web.data import core_state, recent, records_data, timeline, topic_tree

__all__ = ["SECTIONS", "routes"]

SECTIONS = (("topics", "Topics"), ("timeline", "Timeline"), ("recent", "Recent"), ("core", "Core"))
"""The Memory page's sections: ``(key, label)``."""


def _day_markdown(day: str, records: list[Record]) -> str:
    """A day of the Timeline as Markdown: each record under its topic, with its footnotes."""
    parts: list[str] = []
    by_topic: dict[str, list[Record]] = {}
    for rec in records:
        by_topic.setdefault(rec.topic, []).append(rec)
    for topic, recs in by_topic.items():
        body = render_topic(topic, recs).split("\n", 1)[1]
        parts.append(f"## {topic}\n{body}\n")
    return "".join(parts)


def routes(handle: MemoryHandle) -> list[BaseRoute]:
    """The Memory page's and the panel's routes over ``handle``'s workspace."""

    async def memory_page(request: Request) -> Response:
        ws = handle.ws
        q = request.query_params
        section = q.get("section", "topics")
        if section not in dict(SECTIONS):
            section = "topics"
        ctx: dict[str, Any] = {
            "sections": SECTIONS,
            "section": section,
            "list_state": q.get("list") == "1",
            "revision": ws.revision,
        }
        if section == "topics":
            tree = topic_tree(ws)
            chosen = q.get("topic") or None
            ctx["tree"] = tree
            ctx["topic"] = None
            if chosen and chosen != CORE_TOPIC:
                records = ws.records(chosen)
                if records:
                    text = render_topic(chosen, records)
                    ctx["topic"] = {
                        "path": chosen,
                        "records": len(records),
                        "text": text,
                        "html": Markup(render_markdown(text)),  # sanitized by render_markdown
                        "view": "source" if q.get("view") == "source" else "preview",
                        "updated": max(r.updated_at for r in records),
                    }
            ctx["detail"] = ctx["topic"] is not None and not ctx["list_state"]
        elif section == "timeline":
            years = timeline(ws)
            ctx["years"] = [
                {
                    "year": y,
                    "count": sum(len(d.records) for _, days in months for d in days),
                    "months": [
                        {"month": m, "count": sum(len(d.records) for d in days), "days": days}
                        for m, days in months
                    ],
                }
                for y, months in years
            ]
            all_days = {d.key: d for _, months in years for _, days in months for d in days}
            key = q.get("day") or (next(iter(all_days)) if all_days else None)
            day = all_days.get(key) if key else None
            ctx["day"] = (
                {
                    "key": day.key,
                    "records": len(day.records),
                    "html": Markup(render_markdown(_day_markdown(day.key, day.records))),
                }
                if day
                else None
            )
            ctx["detail"] = q.get("day") is not None and not ctx["list_state"]
        elif section == "recent":
            rows = records_data(ws, recent(ws, handle.recent_limit))
            for row in rows:
                row["html"] = Markup(render_markdown(row["content"]))
            ctx["recent"] = rows
            ctx["recent_limit"] = handle.recent_limit
            ctx["detail"] = not ctx["list_state"]
        else:
            state = core_state(ws, inject=handle.inject)
            ctx["core"] = state
            ctx["core_view"] = "records" if q.get("view") == "records" else "prompt"
            ctx["core_html"] = Markup(render_markdown(state["effective"], id_prefix="core"))
            ctx["core_source_html"] = Markup(
                render_markdown(state["canonical"], id_prefix="core-src")
            )
            ctx["detail"] = not ctx["list_state"]
        return render(request, "memory.html", **ctx)

    async def panel_page(request: Request) -> Response:
        ws = handle.ws
        raw = request.query_params.get("delay", "")
        # Digits 0-9 only ("²" is a digit to str.isdigit, not to int), however many: clamped.
        if raw.isascii() and raw.isdigit():
            digits = raw.lstrip("0") or "0"
            delay = 30_000 if len(digits) > 5 else max(500, min(30_000, int(digits)))
        else:
            delay = 5000
        rows = records_data(ws, recent(ws, 10_000))
        return render(
            request,
            "memory_panel.html",
            records=rows,
            delay_ms=delay,
            toast_ms=delay - min(1000, delay // 4),
        )

    return [
        Route("/memory", memory_page, methods=["GET"]),
        Route("/memory/panel", panel_page, methods=["GET"]),
    ]
