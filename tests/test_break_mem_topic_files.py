"""What a topic file shows reads back as the same records; an edit never trips on a record it left alone.

A record whose content opens with a blank (or whitespace-only) line was accepted, but its topic file
showed that line as the gap between two blocks: read back, the record lost the line (an edit of any
other record in the file rewrote it), and a record with tags was parted from its ``<!-- record -->``
line, so editing any record of that topic was refused at a record the person had not touched. Such
content is refused like any other blank line (``MALFORMED``), and what is accepted reads back as it
was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memory import MemoryWorkspace, Rejection, add_memory
from memory.editing import apply_edits, stage_topics
from memory.errors import RejectedError
from memory.topic_files import parse_topic, render_topic

EDGES = ["", " ", "\t", " \t "]


@pytest.mark.parametrize("edge", EDGES, ids=repr)
@pytest.mark.parametrize("tags", [(), ("ops",)], ids=["plain", "tagged"])
def test_a_blank_first_line_is_refused(tmp_path: Path, edge: str, tags: tuple[str, ...]) -> None:
    ws = MemoryWorkspace(tmp_path / "ws")
    with pytest.raises(RejectedError) as e:
        add_memory(ws, f"{edge}\nDeploys wait for the freeze.", tags=tags)
    assert e.value.reason is Rejection.MALFORMED and "blank first line" in e.value.detail
    assert ws.records() == [] and ws.revision == 0


CONTENTS = [
    "Deploys wait for the freeze.",
    "Deploys wait\nfor the freeze.",
    "Deploys wait for the freeze.\n",
    "Deploys wait for the freeze.\n \t",
    "  Indented first line\n\tand a tabbed one",
    "# not a heading\n- not a list ^m-0 [^x]",
]


@pytest.mark.parametrize("tags", [(), ("ops",)], ids=["plain", "tagged"])
def test_every_accepted_content_reads_back_from_its_file(
    tmp_path: Path, tags: tuple[str, ...]
) -> None:
    ws = MemoryWorkspace(tmp_path / "ws")
    for text in CONTENTS:
        add_memory(ws, text, tags=tags, headings=("Release",))
    records = ws.records("notes")
    parsed = parse_topic(render_topic("notes", records), "notes.md", "notes").change.records
    assert [(r.memory_id, r.content, r.tags) for r in parsed] == [
        (r.id, r.content, r.tags) for r in records
    ]


def test_editing_one_record_leaves_its_neighbours_as_they_were(tmp_path: Path) -> None:
    ws = MemoryWorkspace(tmp_path / "ws")
    kept = [add_memory(ws, text, tags=("ops",)) for text in CONTENTS]
    staged = tmp_path / "edit"
    (file,) = stage_topics(ws, staged)
    file.write_text(file.read_text("utf-8").replace("Deploys wait for", "Deploys hold for", 1))
    topics, changed = apply_edits(ws, staged)
    assert topics == ["notes"] and changed == [kept[0].id]
    after = {r.id: r.content for r in ws.records()}
    assert after[kept[0].id] == "Deploys hold for the freeze."
    assert [after[r.id] for r in kept[1:]] == [r.content for r in kept[1:]]


def test_a_writer_installing_during_an_edit_is_never_undone_by_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The edit's freshness check and its install hold the write lock once, with nothing between.

    Before, a writer could install after the check (the files still matched the revision) and
    before the edit's install, which then put the file's older text back over the writer's.
    """
    from memory import editing
    from memory.changes import ChangeSet, SourceRef, UpdateRecord
    from memory.errors import WorkspaceBusyError

    ws = MemoryWorkspace(tmp_path / "ws")
    first = add_memory(ws, "Deploys wait for the freeze.")
    second = add_memory(ws, "Releases ship on Tuesdays.")
    staged = tmp_path / "edit"
    (file,) = stage_topics(ws, staged)
    file.write_text(file.read_text("utf-8").replace("Deploys wait", "Deploys hold", 1))
    writer = MemoryWorkspace(tmp_path / "ws")  # another writer: its own lock handle
    outcome: list[str] = []
    checked = editing.edited_changes

    def check_then_write(*args: object, **kwargs: object) -> object:
        found = checked(*args, **kwargs)  # type: ignore[arg-type]
        ref = SourceRef(source="", label="saved by hand", snippet="Releases ship on Fridays.")
        change = UpdateRecord(
            memory_id=second.id, content="Releases ship on Fridays.", sources=(ref,)
        )
        try:
            with writer.write_lock(0.05):
                writer.apply(ChangeSet(changes=(change,)))
            outcome.append("writer installed")
        except WorkspaceBusyError:
            outcome.append("writer busy")
        return found

    monkeypatch.setattr(editing, "edited_changes", check_then_write)
    apply_edits(ws, staged)
    contents = {r.id: r.content for r in ws.records()}
    assert outcome == ["writer busy"]
    assert contents == {
        first.id: "Deploys hold for the freeze.",
        second.id: "Releases ship on Tuesdays.",
    }


def test_a_file_saved_with_windows_line_ends_reads_as_rendered(tmp_path: Path) -> None:
    """An editor that saves CR LF line ends: the edit applies as made, nothing else changes.

    Before, every such save was refused with "the first line must be '# notes'" (it was, with a
    CR after it).
    """
    ws = MemoryWorkspace(tmp_path / "ws")
    kept = add_memory(ws, "Deploys wait\nfor the freeze.", tags=("ops",), headings=("Release",))
    edited = add_memory(ws, "Releases ship on Tuesdays.")
    staged = tmp_path / "edit"
    (file,) = stage_topics(ws, staged)
    rendered = file.read_bytes()
    file.write_bytes(rendered.replace(b"\n", b"\r\n"))
    assert apply_edits(ws, staged) == ([], [])  # the same text, other line ends: no change
    file.write_bytes(rendered.replace(b"\n", b"\r\n").replace(b"Tuesdays", b"Fridays"))
    assert apply_edits(ws, staged) == (["notes"], [edited.id])
    after = {r.id: (r.content, r.headings, r.tags) for r in ws.records()}
    assert after == {
        kept.id: ("Deploys wait\nfor the freeze.", ("Release",), ("ops",)),
        edited.id: ("Releases ship on Fridays.", (), ()),
    }


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
def test_a_file_saved_with_a_byte_order_mark_reads_as_rendered(tmp_path: Path, crlf: bool) -> None:
    """Windows editors save UTF-8 with a byte order mark; it is not part of the first line.

    Before, the file was refused with "the first line must be '# notes'".
    """
    ws = MemoryWorkspace(tmp_path / "ws")
    rec = add_memory(ws, "Releases ship on Tuesdays.")
    staged = tmp_path / "edit"
    (file,) = stage_topics(ws, staged)
    text = file.read_bytes().replace(b"Tuesdays", b"Fridays")
    file.write_bytes(b"\xef\xbb\xbf" + (text.replace(b"\n", b"\r\n") if crlf else text))
    assert apply_edits(ws, staged) == (["notes"], [rec.id])
    assert [r.content for r in ws.records()] == ["Releases ship on Fridays."]
