"""Full-text search over what was said: query time at 1e6 nodes, and what the index costs an import.

Subject: ``store.search`` answers a person's query over every stored node in under 50 ms (median over
a mix of queries) at 1e6 nodes, and keeping the FTS5 index in step costs an import at most 30%.

- Query time: a store of sessions of 1,000 nodes each, whose text draws words from a Zipf-distributed
  vocabulary of 20,000 pseudo-words (so some words are in a third of the nodes and most in a handful),
  is searched for a common word, a middling one, a rare one, two middling words, a phrase and a
  prefix; each query returns its best 20 hits with snippets.
- Import cost: the same generated Claude Code transcript imported into a fresh store, with the index
  and with a store whose rows carry no indexed text (the same code path minus the index insert).
"""

from __future__ import annotations

import random
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import Alt, Bench, parse_args, scratch_db, scratch_dir  # noqa: E402
from bench_import import _write, claude_code_lines  # noqa: E402

from graph import Node, SessionStore  # noqa: E402
from graph.importers import claude_code  # noqa: E402
from graph.models import Kind, Role, from_micros  # noqa: E402
from graph.store.base import NodeRow, paused_gc  # noqa: E402

_PER_SESSION = 1_000
_VOCAB = 20_000
_SYLLABLES = "ka lo mi ne ru ta si po ve da gu fi ho ze ly bo".split()


def _vocabulary(rng: random.Random) -> list[str]:
    words: set[str] = set()
    while len(words) < _VOCAB:
        words.add("".join(rng.choices(_SYLLABLES, k=rng.randint(2, 4))))
    return sorted(words)


def _build(path: Path, n: int) -> tuple[SessionStore, list[str]]:
    rng = random.Random(5)
    vocab = _vocabulary(rng)
    weights = [1 / (r + 1) for r in range(len(vocab))]
    store = SessionStore(path)
    if store.sessions(1):
        return store, vocab  # reused from --dir
    with paused_gc():
        for s in range(n // _PER_SESSION):
            sid = f"s{s:05d}"
            store.create_session(id=sid, metadata={"runtime": "bench"})
            words = rng.choices(vocab, weights, k=_PER_SESSION * 24)
            nodes, prev = [], None
            for i in range(_PER_SESSION):
                nid = f"{sid}-{i:04d}"
                nodes.append(
                    Node(
                        id=nid,
                        session_id=sid,
                        predecessor=prev,
                        kind=Kind.MESSAGE,
                        role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
                        content=" ".join(words[i * 24 : (i + 1) * 24]),
                        created_at=from_micros(1_700_000_000_000_000 + (s * _PER_SESSION + i)),
                    )
                )
                prev = nid
            store.add_nodes(sid, nodes, head=prev)
    return store, vocab


class _Unindexed(SessionStore):
    """The same store with no text handed to the full-text index (the import floor)."""

    def _db_insert_nodes(self, rows: Sequence[NodeRow]) -> None:
        super()._db_insert_nodes([r._replace(text="") for r in rows])


def _queries(vocab: list[str]) -> dict[str, str]:
    return {
        "common word": vocab[0],
        "middling word": vocab[200],
        "rare word": vocab[15_000],
        "two middling words": f"{vocab[150]} {vocab[300]}",
        "phrase": f'"{vocab[0]} {vocab[1]}"',
        "prefix": vocab[50][:4] + "*",
    }


def _search(bench: Bench, directory: Path, n: int) -> None:
    with bench.timed(f"build {n:.0e}"):
        store, vocab = _build(directory / f"search-{n}.db", n)
    medians = []
    for label, q in _queries(vocab).items():
        hits = store.search(q)
        r = bench.measure(
            f"search over {n:.0e} nodes", label, n, lambda q=q: store.search(q, limit=20)
        )
        r.note = f"{q} -> {len(hits)} hits"
        medians.append(r.median)
    store.close()
    bench.target(
        f"search p50 over queries at {n:.0e} nodes (ms)",
        statistics.median(medians) * 1e3,
        "<=",
        50,
        " ms",
    )


def _import_cost(bench: Bench, directory: Path, size: int) -> None:
    path = _write(directory / f"search-import-{size}.jsonl", claude_code_lines(size))
    state: dict[str, SessionStore] = {}
    k = iter(range(10**6))

    def fresh(cls: type[SessionStore]) -> None:
        if "store" in state:
            state["store"].close()
        state["store"] = cls(scratch_db(directory, f"search-import-{next(k) % 2}.db"))

    def run() -> None:
        claude_code.import_file(state["store"], path)

    g = "import with and without the index"
    bench.compare(
        g,
        size,
        [
            Alt("import, no full-text index", run, lambda: fresh(_Unindexed), per=size),
            Alt("import, full-text index kept", run, lambda: fresh(SessionStore), per=size),
        ],
    )
    state["store"].close()
    bench.target(
        f"import {size:,} entries: indexed / unindexed",
        bench.ratio(g, "import, full-text index kept", "import, no full-text index", size),
        "<=",
        1.3,
    )


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the search benchmarks and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    sizes = [1_000] if args.smoke else [10_000] if args.quick else [100_000, 1_000_000]
    bench = Bench("search()", args.quick, args.repeats)
    with scratch_dir(args.dir) as directory:
        for n in sizes:
            _search(bench, directory, n)
        _import_cost(bench, directory, 200 if args.smoke else 2_000 if args.quick else 20_000)
    return bench.finish(args.json)


if __name__ == "__main__":
    main()
