"""The schema of a workspace's store of record, its version, and the steps from older versions.

One schema, written for SQLite (``memory.db`` in the workspace folder) and for PostgreSQL (a schema of
its own in a shared database). Its tables:

* ``meta``: ``workspace_id`` (the marker value), ``revision`` (bumped by every install),
  ``schema_version`` (:data:`SCHEMA_VERSION`; a newer one is refused, an older one migrated);
* ``sources``: the append-only source archive, one row per turn handed to a writer (session id, node id,
  speaker, text with credentials redacted, content hash, the original text's hash, what was redacted),
  keyed by its content address; a guard (triggers) refuses ``UPDATE`` and ``DELETE``;
* ``records``, ``citations`` (record -> source or none, label, snippet) and ``links`` (record ->
  record, derived from ``[[topic#^id]]`` in content);
* the full-text index over records' content, tags, headings and topic: an FTS5 table ``records_fts``
  in SQLite, a generated ``tsvector`` column ``records.search`` with the GIN index ``records_search``
  in PostgreSQL; ensured at open, asserted by every search;
* ``installs``: one row per install of the write pipeline (session, node ids), so a pass that
  installed and crashed before marking is recognized and marked instead of written twice;
* ``revisions`` and ``record_versions``: the history (what each revision changed);
* ``tombstones``: deleted records kept for their undo grace period;
* ``erasures``: what each ``memory forget`` erased (counts, never content);
* ``watch`` and ``watch_heads``: the idle watcher's done/failed bookkeeping and the heads it saw last;
* ``organizer_runs``: when each organizer pass ran.

Times are microseconds since the Unix epoch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from memory.errors import WorkspaceSchemaError

if TYPE_CHECKING:
    from memory.database import WorkspaceDatabase

__all__ = [
    "FTS_TABLE",
    "FOLD_FUNCTION",
    "POSTGRES_SCHEMA",
    "SCHEMA_VERSION",
    "SEARCH_CONFIG",
    "SQLITE_SEARCH_INDEX",
    "check_version",
    "postgres_migrations",
    "sqlite_migrations",
    "sqlite_schema",
    "split_statements",
]

SCHEMA_VERSION = 5
"""The workspace schema version this library writes.

Version 2 lets a citation have no source (a person's own save with nothing to cite keeps a bare
snippet citation) and keeps history (a migrated workspace's records become its ``baseline``
versions). Version 3 has every table from the start (tombstones, erasures, the watcher's heads,
the organizer's runs, the archive's redaction columns), none created on first use. Version 4 stems
the full-text index (English: ``retry`` finds ``retries`` and ``retrying``): the SQLite index is made
again with the Porter stemmer, the PostgreSQL ``search`` column with the ``english`` configuration.
Version 5 folds accents in PostgreSQL as FTS5's ``remove_diacritics`` does in SQLite (``café`` finds
``cafe`` and the other way round): the ``search`` column is made again over :data:`FOLD_FUNCTION`
(nothing changes in SQLite).
"""

FTS_TABLE = "records_fts"
"""The SQLite full-text index's table."""

SQLITE_SEARCH_INDEX = (
    f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(content, tags, headings, topic,"
    " tokenize = 'porter unicode61 remove_diacritics 2')"
)
"""The SQLite full-text index: FTS5 over content, tags, headings and topic; words are folded to
lower case without accents (``unicode61``), then reduced to their English stem (``porter``), in the
records and in queries alike."""

SEARCH_CONFIG = "english"
"""The PostgreSQL text search configuration of ``records.search`` and of every query against it
(English stems and stop words, as the Porter stemmer does in SQLite)."""

FOLD_FUNCTION = r"""
CREATE OR REPLACE FUNCTION fold_accents(text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
SELECT CASE WHEN current_setting('server_encoding') = 'UTF8'
    THEN regexp_replace(normalize($1, NFD), '[\u0300-\u036f]', '', 'g') ELSE $1 END
$$;
"""
"""``fold_accents(text)``: the text with its combining accents (U+0300..U+036F) taken off its
letters, as FTS5's ``remove_diacritics`` takes them off in SQLite: ``Café`` is ``Cafe``. Built from
what every PostgreSQL 13+ has (``normalize``, ``regexp_replace``: no extension to install, nothing
a database owner cannot create); a database not encoded in UTF-8 cannot normalize, and its text is
kept as it is. Immutable (a database's encoding never changes), so the generated ``search`` column
may use it; every query goes through it too."""

_POSTGRES_SEARCH = (
    f"search tsvector GENERATED ALWAYS AS (to_tsvector('{SEARCH_CONFIG}', fold_accents("
    "content || ' ' || tags || ' ' || headings || ' ' || topic))) STORED"
)

_HISTORY = """
CREATE TABLE revisions (
    workspace_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY (workspace_id, revision)
);
CREATE TABLE record_versions (
    workspace_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    record_id TEXT NOT NULL,
    op TEXT NOT NULL,
    record TEXT,
    PRIMARY KEY (workspace_id, revision, record_id)
);
CREATE INDEX record_versions_by_record ON record_versions (record_id, revision);
"""

_LATER = """
CREATE TABLE IF NOT EXISTS tombstones (
    record_id TEXT PRIMARY KEY,
    record TEXT NOT NULL,
    deleted_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS erasures (
    revision INTEGER NOT NULL,
    session_id TEXT NOT NULL,
    sources INTEGER NOT NULL,
    records_deleted INTEGER NOT NULL,
    records_updated INTEGER NOT NULL,
    at BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS watch_heads (session_id TEXT PRIMARY KEY, head TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS organizer_runs (
    at BIGINT NOT NULL,
    revision INTEGER NOT NULL,
    archive_top BIGINT NOT NULL,
    changed INTEGER NOT NULL
);
"""
"""Tables that versions before 3 created on first use (``IF NOT EXISTS`` for those)."""

_TABLES = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sources (
    rowid {serial},
    id TEXT NOT NULL UNIQUE,
    session_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    speaker TEXT NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    archived_at BIGINT NOT NULL,
    original_hash TEXT,
    redactions TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX sources_by_node ON sources (node_id);
CREATE INDEX sources_by_session ON sources (session_id);
CREATE TABLE records (
    rowid {serial},
    id TEXT NOT NULL UNIQUE,
    topic TEXT NOT NULL,
    headings TEXT NOT NULL,
    position INTEGER NOT NULL,
    content TEXT NOT NULL,
    tags TEXT NOT NULL,
    time TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL{search}
);
CREATE INDEX records_by_topic ON records (topic, position);
CREATE TABLE citations (
    record_id TEXT NOT NULL REFERENCES records (id),
    ordinal INTEGER NOT NULL,
    source_id TEXT REFERENCES sources (id),
    label TEXT NOT NULL,
    snippet TEXT NOT NULL,
    PRIMARY KEY (record_id, ordinal)
);
CREATE INDEX citations_by_source ON citations (source_id);
CREATE TABLE links (
    from_record TEXT NOT NULL REFERENCES records (id),
    to_record TEXT NOT NULL REFERENCES records (id),
    PRIMARY KEY (from_record, to_record)
);
CREATE TABLE installs (
    revision INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    first_node TEXT NOT NULL,
    node_ids TEXT NOT NULL,
    at BIGINT NOT NULL
);
CREATE INDEX installs_by_first ON installs (session_id, first_node);
CREATE TABLE watch (
    session_id TEXT PRIMARY KEY,
    updated_at BIGINT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    at BIGINT NOT NULL
);
"""

_SQLITE_GUARD = """
CREATE TRIGGER sources_no_update BEFORE UPDATE ON sources
BEGIN SELECT RAISE(ABORT, 'the source archive is append-only: archived rows cannot be updated'); END;
CREATE TRIGGER sources_no_delete BEFORE DELETE ON sources
BEGIN SELECT RAISE(ABORT, 'the source archive is append-only: archived rows cannot be deleted'); END;
"""

POSTGRES_SCHEMA = (
    FOLD_FUNCTION
    + _TABLES.format(
        serial="BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
        search=",\n    " + _POSTGRES_SEARCH,
    )
    + _HISTORY
    + _LATER
    + """
CREATE FUNCTION sources_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('memory.erasing', true) = 'on' THEN
        IF TG_OP = 'DELETE' THEN
            RETURN OLD;
        END IF;
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'the source archive is append-only: archived rows cannot be %', lower(TG_OP)
        USING ERRCODE = 'integrity_constraint_violation';
END $$;
CREATE TRIGGER sources_append_only BEFORE UPDATE OR DELETE ON sources
    FOR EACH ROW EXECUTE FUNCTION sources_append_only();
"""
)
"""The schema in PostgreSQL (created in the workspace's own PostgreSQL schema).

The archive's guard lets a row go only while the transaction-local setting ``memory.erasing`` is on
(``memory forget``); the full-text index is the ``records.search`` column and its GIN index, ensured
at open."""


def sqlite_schema() -> str:
    """The schema of a new SQLite store of record, at :data:`SCHEMA_VERSION`."""
    return (
        _TABLES.format(serial="INTEGER PRIMARY KEY", search="") + _SQLITE_GUARD + _HISTORY + _LATER
    )


_V2 = (
    """
CREATE TABLE citations_v2 (
    record_id TEXT NOT NULL REFERENCES records (id),
    ordinal INTEGER NOT NULL,
    source_id TEXT REFERENCES sources (id),
    label TEXT NOT NULL,
    snippet TEXT NOT NULL,
    PRIMARY KEY (record_id, ordinal)
);
INSERT INTO citations_v2 (record_id, ordinal, source_id, label, snippet)
    SELECT record_id, ordinal, source_id, label, snippet FROM citations;
DROP TABLE citations;
ALTER TABLE citations_v2 RENAME TO citations;
CREATE INDEX citations_by_source ON citations (source_id);
"""
    + _HISTORY
    + """
INSERT INTO revisions (workspace_id, revision, at, kind)
    SELECT (SELECT value FROM meta WHERE key = 'workspace_id'),
        CAST((SELECT value FROM meta WHERE key = 'revision') AS INTEGER),
        CAST(strftime('%s', 'now') AS INTEGER) * 1000000, 'baseline'
    WHERE EXISTS (SELECT 1 FROM records);
INSERT INTO record_versions (workspace_id, revision, record_id, op, record)
    SELECT (SELECT value FROM meta WHERE key = 'workspace_id'),
        CAST((SELECT value FROM meta WHERE key = 'revision') AS INTEGER), r.id, 'baseline',
        json_object('topic', r.topic, 'headings', json(r.headings), 'position', r.position,
            'content', r.content, 'tags', json(r.tags), 'time', r.time,
            'created_at', r.created_at, 'updated_at', r.updated_at,
            'citations', (SELECT json_group_array(json_array(coalesce(c.source_id, ''), c.label,
                c.snippet)) FROM (SELECT * FROM citations WHERE record_id = r.id ORDER BY ordinal) c))
    FROM records r;
"""
)


def _step_2(db: WorkspaceDatabase) -> None:
    for stmt in split_statements(_V2):
        db.execute(stmt)


def _step_3(db: WorkspaceDatabase) -> None:
    for stmt in split_statements(_LATER):
        db.execute(stmt)
    have = {r[1] for r in db.execute("PRAGMA table_info(sources)")}
    if "original_hash" not in have:
        db.execute("ALTER TABLE sources ADD COLUMN original_hash TEXT")
    if "redactions" not in have:
        db.execute("ALTER TABLE sources ADD COLUMN redactions TEXT NOT NULL DEFAULT '[]'")
    db.execute("CREATE INDEX IF NOT EXISTS sources_by_session ON sources (session_id)")


def _step_4(db: WorkspaceDatabase) -> None:
    # The index is derived from the records: the open that runs this step makes it again with the
    # stemming tokenizer (SQLITE_SEARCH_INDEX) and fills it from them, in the same transaction.
    db.execute(f"DROP TABLE IF EXISTS {FTS_TABLE}")


def _postgres_step_4(db: WorkspaceDatabase) -> None:
    # The unstemmed column goes; step 5, which always follows it, makes the current one.
    db.execute("ALTER TABLE records DROP COLUMN search")


def _postgres_step_5(db: WorkspaceDatabase) -> None:
    # Dropping the generated column drops its GIN index; the open that runs this step makes it again.
    for stmt in split_statements(FOLD_FUNCTION):
        db.execute(stmt)
    db.execute("ALTER TABLE records DROP COLUMN IF EXISTS search")
    db.execute(f"ALTER TABLE records ADD COLUMN {_POSTGRES_SEARCH}")


def _step_5(db: WorkspaceDatabase) -> None:
    """Nothing: SQLite's FTS5 index folds accents already (``remove_diacritics 2``)."""


def sqlite_migrations() -> dict[int, Callable[[WorkspaceDatabase], None]]:
    """The SQLite schema steps after version 1, by the version they reach.

    Each runs inside the opening transaction, so a failed step leaves the store as it was.
    """
    return {2: _step_2, 3: _step_3, 4: _step_4, 5: _step_5}


def postgres_migrations() -> dict[int, Callable[[WorkspaceDatabase], None]]:
    """The PostgreSQL schema steps, by the version they reach (PostgreSQL workspaces began at 3).

    Each runs inside the opening transaction, so a failed step leaves the store as it was.
    """
    return {4: _postgres_step_4, 5: _postgres_step_5}


def check_version(stored: object, where: str) -> int:
    """Return the stored schema version, refusing one newer than this library's.

    Raises:
        WorkspaceSchemaError: the version is newer than :data:`SCHEMA_VERSION`, or not a number.
    """
    try:
        version = int(str(stored))
    except ValueError:
        raise WorkspaceSchemaError(where, None, SCHEMA_VERSION) from None
    if version > SCHEMA_VERSION:
        raise WorkspaceSchemaError(where, version, SCHEMA_VERSION)
    return version


def split_statements(script: str) -> list[str]:
    """Split a schema script into statements.

    A statement ends with a line ending in ``;`` outside a trigger or function body (SQLite trigger
    bodies end with ``END;``, PostgreSQL function bodies are quoted between ``$$``).
    """
    out: list[str] = []
    buf: list[str] = []
    body = False
    for line in script.strip().splitlines():
        buf.append(line)
        if line.count("$$") % 2:
            body = not body
        ends = line.rstrip().endswith(";")
        if ends and not body:
            out.append("\n".join(buf).strip().rstrip(";"))
            buf = []
    if "".join(buf).strip():
        out.append("\n".join(buf).strip())
    return out
