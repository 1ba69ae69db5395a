"""Recall stems English words on both backends (workspace schema version 4) and folds accents on
both (version 5: PostgreSQL's column went through ``fold_accents``), and older stores are brought
to it: ``retry`` finds the record that says ``retries``, ``cafe`` the one that says ``Café``."""

from __future__ import annotations

import pytest

from memory import add_memory
from memory.schema import SCHEMA_VERSION
from tests.memory_backends import WorkspaceFactory


def test_recall_finds_other_forms_of_a_word(workspace_factory: WorkspaceFactory) -> None:
    ws = workspace_factory()
    retries = add_memory(ws, "The uploader retries with exponential backoff.", topic="ops").id
    retrying = add_memory(ws, "Retrying a failed deploy is safe.", topic="ops").id
    tea = add_memory(ws, "Tea, not coffee, in the mornings.", topic="me").id
    assert {h.record_id for h in ws.search("retry")} == {retries, retrying}
    assert {h.record_id for h in ws.search("retried deploys")} == {retries, retrying}
    assert [h.record_id for h in ws.search("deploying")] == [retrying]
    assert [h.record_id for h in ws.search("mornings")] == [tea]
    assert [h.record_id for h in ws.search("morning")] == [tea]
    assert ws.search("kubernetes") == []


def _back_to_version_3(ws: object, sqlite: bool) -> None:
    """Give the store of record the unstemmed index version 3 had."""
    conn = ws.conn  # type: ignore[attr-defined]
    if sqlite:
        conn.execute("DROP TABLE records_fts")
        conn.execute(
            "CREATE VIRTUAL TABLE records_fts USING fts5"
            "(content, tags, headings, topic, tokenize = 'unicode61 remove_diacritics 2')"
        )
        conn.execute(
            "INSERT INTO records_fts (rowid, content, tags, headings, topic)"
            " SELECT rowid, content, tags, headings, topic FROM records"
        )
    else:
        conn.execute("ALTER TABLE records DROP COLUMN search")
        conn.execute(
            "ALTER TABLE records ADD COLUMN search tsvector GENERATED ALWAYS AS"
            " (to_tsvector('simple', content || ' ' || tags || ' ' || headings || ' ' || topic))"
            " STORED"
        )
        conn.execute("CREATE INDEX records_search ON records USING gin (search)")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    if hasattr(conn, "commit"):
        conn.commit()


def test_a_version_3_store_is_stemmed_when_opened(workspace_factory: WorkspaceFactory) -> None:
    ws = workspace_factory()
    retries = add_memory(ws, "The uploader retries with exponential backoff.", topic="ops").id
    other = add_memory(ws, "Tea, not coffee, in the mornings.", topic="me").id
    _back_to_version_3(ws, ws.store_url is None)
    assert ws.search("retry") == []  # the old index: only the word as written
    ws.close()
    again = workspace_factory()
    (version,) = again.conn.execute(
        "SELECT value FROM meta WHERE key = 'schema_version'"
    ).fetchone()
    assert int(version) == SCHEMA_VERSION == 5
    assert [h.record_id for h in again.search("retry")] == [retries]
    assert [h.record_id for h in again.search("morning")] == [other]
    assert {r.id for r in again.records()} == {retries, other}


def test_accents_are_folded_on_both_backends(workspace_factory: WorkspaceFactory) -> None:
    ws = workspace_factory()
    cafe = add_memory(ws, "Meet at the Café Noir, crème brûlée after.", topic="me").id
    plain = add_memory(ws, "The cafe on the corner is closed on Mondays.", topic="me").id
    assert {h.record_id for h in ws.search("cafe")} == {cafe, plain}
    assert {h.record_id for h in ws.search("CAFÉ")} == {cafe, plain}
    assert [h.record_id for h in ws.search("creme brulee")] == [cafe]
    assert [h.record_id for h in ws.search("brûlée")] == [cafe]


@pytest.mark.parametrize("workspace_factory", ["postgres"], indirect=True)
def test_a_version_4_postgres_store_folds_accents_when_opened(
    workspace_factory: WorkspaceFactory,
) -> None:
    """(PostgreSQL alone: version 5 changes nothing in SQLite, whose FTS5 folded accents already.)"""
    ws = workspace_factory()
    cafe = add_memory(ws, "Meet at the Café Noir.", topic="me").id
    conn = ws.conn  # type: ignore[attr-defined]
    conn.execute("ALTER TABLE records DROP COLUMN search")
    conn.execute(
        "ALTER TABLE records ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector("
        "'english', content || ' ' || tags || ' ' || headings || ' ' || topic)) STORED"
    )
    conn.execute("CREATE INDEX records_search ON records USING gin (search)")
    conn.execute("DROP FUNCTION fold_accents(text)")
    conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    ws.close()
    again = workspace_factory()
    assert [h.record_id for h in again.search("cafe")] == [cafe]
    assert [h.record_id for h in again.search("retry")] == []
    (version,) = again.conn.execute(
        "SELECT value FROM meta WHERE key = 'schema_version'"
    ).fetchone()
    assert int(version) == 5
