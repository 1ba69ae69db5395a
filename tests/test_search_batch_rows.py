"""A batch of nodes is indexed for search under the seqs its rows were given.

The SQLite store writes a batch's full-text rows under seqs it works out from the table's largest,
because one statement inserting the batch under the write lock gives its rows consecutive seqs. When
that rule does not hold (SQLite picks a random rowid once the largest possible one is taken), the
store looks each seq up instead; both ways every hit names the node that said it.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graph import Kind, Node, Role, SessionStore

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _batch(session: str, words: list[str]) -> list[Node]:
    nodes, prev = [], None
    for i, word in enumerate(words):
        nid = f"{session}-{i}"
        nodes.append(
            Node(
                id=nid,
                session_id=session,
                predecessor=prev,
                kind=Kind.MESSAGE,
                role=Role.USER,
                content=f"turn {i} says {word}",
                created_at=T0 + timedelta(seconds=i),
            )
        )
        prev = nid
    return nodes


@pytest.mark.parametrize("largest_taken", [False, True], ids=["consecutive", "random-rowids"])
def test_every_hit_of_a_batch_names_the_node_that_said_it(
    tmp_path: Path, largest_taken: bool
) -> None:
    store = SessionStore(tmp_path / "s.db")
    store.create_session("other", id="other")
    if largest_taken:
        # A row at the largest rowid makes SQLite choose random rowids for the next inserts.
        store.add_nodes("other", _batch("other", ["filler"]))
        store.conn.execute("UPDATE nodes SET seq = 9223372036854775807 WHERE id = 'other-0'")
        store.conn.commit()
    words = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape"]
    store.create_session("s", id="s")
    store.add_nodes("s", _batch("s", words), head=f"s-{len(words) - 1}")
    seqs = [r[0] for r in store.conn.execute("SELECT seq FROM nodes WHERE session_id = 's'")]
    consecutive = sorted(seqs) == list(range(min(seqs), min(seqs) + len(words)))
    assert consecutive is not largest_taken  # each case takes the path it names
    seqs = [r[0] for r in store.conn.execute("SELECT seq FROM nodes WHERE session_id = 's'")]
    consecutive = sorted(seqs) == list(range(min(seqs), min(seqs) + len(words)))
    assert consecutive is not largest_taken  # each case takes the path it names
    for i, word in enumerate(words):
        hits = store.search(word)
        assert [h.node_id for h in hits] == [f"s-{i}"], word
    store.close()
