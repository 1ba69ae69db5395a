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
from memory.editing import EditError, apply_edits, stage_topics
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


def _cut_and_paste(src: Path, dst: Path, rid: str) -> None:
    """Move a record's block and its footnotes from one staged topic file to another."""
    lines = src.read_text("utf-8").split("\n")
    block = [ln for ln in lines if ln.endswith(f"^{rid}")]
    notes = [ln for ln in lines if ln.startswith(f"[^{rid}-")]
    assert len(block) == 1 and notes
    src.write_text("\n".join(ln for ln in lines if ln not in block and ln not in notes), "utf-8")
    body, sep, defs = dst.read_text("utf-8").rstrip("\n").rpartition("\n\n")
    dst.write_text(f"{body}\n\n{block[0]}{sep}{defs}\n" + "\n".join(notes) + "\n", "utf-8")


@pytest.mark.parametrize(
    ("src", "dst"),
    [("alpha", "omega"), ("omega", "alpha")],
    ids=["to-a-later-topic", "to-an-earlier-one"],
)
def test_a_record_cut_from_one_file_and_pasted_into_another_moves(
    tmp_path: Path, src: str, dst: str
) -> None:
    """Before, the move worked only towards a topic sorting before its own: the other way, the
    rewrite of its old topic dropped it first, and the new topic's file named an unknown record."""
    ws = MemoryWorkspace(tmp_path / "ws")
    moved = add_memory(ws, "Deploys wait for the freeze.", topic=src)
    stays = add_memory(ws, "Releases ship on Tuesdays.", topic=src)
    there = add_memory(ws, "Tags are signed.", topic=dst)
    staged = tmp_path / "edit"
    files = {f.stem: f for f in stage_topics(ws, staged)}
    _cut_and_paste(files[src], files[dst], moved.id)
    topics, _ = apply_edits(ws, staged)
    assert topics == sorted([src, dst])
    assert [r.id for r in ws.records(src)] == [stays.id]
    assert [r.id for r in ws.records(dst)] == [there.id, moved.id]
    assert ws.record(moved.id).content == "Deploys wait for the freeze."


def _block(file: Path, rid: str) -> tuple[str, list[str]]:
    lines = file.read_text("utf-8").split("\n")
    return next(ln for ln in lines if ln.endswith(f"^{rid}")), [
        ln for ln in lines if ln.startswith(f"[^{rid}-")
    ]


def test_two_records_swapped_between_files_swap(tmp_path: Path) -> None:
    ws = MemoryWorkspace(tmp_path / "ws")
    a = add_memory(ws, "Deploys wait for the freeze.", topic="alpha")
    b = add_memory(ws, "Tags are signed.", topic="omega")
    staged = tmp_path / "edit"
    files = {f.stem: f for f in stage_topics(ws, staged)}
    (a_line, a_notes), (b_line, b_notes) = (
        _block(files["alpha"], a.id),
        _block(files["omega"], b.id),
    )
    files["alpha"].write_text(f"# alpha\n\n{b_line}\n\n" + "\n".join(b_notes) + "\n", "utf-8")
    files["omega"].write_text(f"# omega\n\n{a_line}\n\n" + "\n".join(a_notes) + "\n", "utf-8")
    apply_edits(ws, staged)
    assert [r.id for r in ws.records("alpha")] == [b.id]
    assert [r.id for r in ws.records("omega")] == [a.id]


def test_a_record_cut_and_pasted_nowhere_is_still_lost(tmp_path: Path) -> None:
    ws = MemoryWorkspace(tmp_path / "ws")
    gone = add_memory(ws, "Deploys wait for the freeze.", topic="alpha")
    add_memory(ws, "Releases ship on Tuesdays.", topic="alpha")
    staged = tmp_path / "edit"
    (file,) = stage_topics(ws, staged)
    lines = file.read_text("utf-8").split("\n")
    file.write_text("\n".join(ln for ln in lines if gone.id not in ln), "utf-8")
    with pytest.raises(EditError) as e:
        apply_edits(ws, staged)
    assert e.value.reason is Rejection.RECORD_LOST and gone.id in str(e.value)
    assert len(ws.records()) == 2


def test_a_record_pasted_into_another_file_but_not_cut_is_refused(tmp_path: Path) -> None:
    """Only changed files are read back: the copy moved the record out of the file still showing it."""
    ws = MemoryWorkspace(tmp_path / "ws")
    copied = add_memory(ws, "Deploys wait for the freeze.", topic="alpha")
    add_memory(ws, "Tags are signed.", topic="omega")
    staged = tmp_path / "edit"
    files = {f.stem: f for f in stage_topics(ws, staged)}
    line, notes = _block(files["alpha"], copied.id)
    body = files["omega"].read_text("utf-8")
    files["omega"].write_text(body + "\n" + line + "\n\n" + "\n".join(notes) + "\n", "utf-8")
    revision = ws.revision
    with pytest.raises(EditError) as e:
        apply_edits(ws, staged)
    assert e.value.reason is Rejection.MALFORMED and "alpha.md" in str(e.value)
    assert e.value.path.endswith("omega.md") and e.value.record_id == copied.id
    assert ws.revision == revision and ws.record(copied.id).topic == "alpha"


@pytest.mark.parametrize("kind", ["folder", "dangling-link"])
def test_a_topic_file_that_is_no_file_is_refused_by_name(tmp_path: Path, kind: str) -> None:
    """Before, a folder named ``x.md`` among the topic files raised a bare IsADirectoryError."""
    from memory.editing import EditFolderError

    ws = MemoryWorkspace(tmp_path / "ws")
    add_memory(ws, "Deploys wait for the freeze.")
    staged = tmp_path / "edit"
    (file,) = stage_topics(ws, staged)
    odd = file.with_name("odd.md")
    if kind == "folder":
        odd.mkdir()
    else:
        odd.symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(EditFolderError, match="odd.md: is not a file"):
        apply_edits(ws, staged)
    assert len(ws.records()) == 1
