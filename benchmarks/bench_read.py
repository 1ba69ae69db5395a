"""``read -n 10`` and ``latest`` in a fresh process: walked back from the head, against building the index.

Subject: the look-up window of :func:`memory.lookup.read_transcript` (what ``sessiongraph read``, the
MCP ``read_transcript`` tool and the web API answer) costs the window, not the session. The store is
:func:`_gen.pending_store`'s forked session of ``n`` chain nodes (1e4 in quick mode, 1e5 and 1e6 in
full mode), opened afresh for every run (a new process's first read):

* ``message_tail`` walk: a new store reads the newest 10 messages by walking its rows back from the
  head (the default path now);
* index first: a new store builds the session's index, then reads the same window from it (what
  ``read`` did before, and what a backend without the walk still does);
* ``latest_message`` on a new store (a walk to the first message below the head).

Peak memory: each path once more in a child process, its peak resident set size (``ru_maxrss``) in
the note column, against a child that only opens the store.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _gen import pending_store  # noqa: E402
from _harness import Alt, Bench, parse_args, scratch_dir  # noqa: E402

from graph import SessionStore  # noqa: E402
from memory.lookup import branch_messages, latest_message, read_transcript  # noqa: E402

_CHILD = """
import resource, sys
from graph import SessionStore
from memory.lookup import branch_messages, latest_message, read_transcript
store = SessionStore(sys.argv[1])
how = sys.argv[2]
if how == "walk":
    read_transcript(store, "p", 10)
elif how == "index":
    read_transcript(store, "p", 10, messages=branch_messages(store, "p"))
elif how == "latest":
    latest_message(store, "p")
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _peak_mib(path: Path, how: str) -> float:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), how], capture_output=True, text=True, check=True
    )
    return int(out.stdout.split()[-1]) / 1024


def _sizes(bench: Bench, directory: Path, n: int) -> None:
    with bench.timed(f"build {n:.0e}"):
        store, _, _ = pending_store(directory, n)
        path = Path(store.conn.execute("PRAGMA database_list").fetchone()[2])
        store.close()
    state: dict[str, SessionStore] = {}

    def fresh() -> None:
        if "s" in state:
            state["s"].close()
        state["s"] = SessionStore(path)

    def walk() -> None:
        w = read_transcript(state["s"], "p", 10)
        assert w.returned == 10

    def index_first() -> None:
        w = read_transcript(state["s"], "p", 10, messages=branch_messages(state["s"], "p"))
        assert w.returned == 10

    def latest() -> None:
        assert latest_message(state["s"], "p") is not None

    peaks = {how: _peak_mib(path, how) for how in ("open", "walk", "index", "latest")}
    group = f"read -n 10 in a fresh process, {n:.0e} nodes"
    results = bench.compare(
        group,
        n,
        [
            Alt("index first, then the window", index_first, fresh),
            Alt("message_tail walk from the head", walk, fresh),
            Alt("latest_message walk", latest, fresh),
        ],
    )
    for r, how in zip(results, ("index", "walk", "latest"), strict=True):
        r.note = f"peak {peaks[how]:.0f} MiB (open alone {peaks['open']:.0f} MiB)"
    state["s"].close()
    bench.target(
        f"read -n 10 at {n:.0e} nodes: walk / index first",
        bench.ratio(group, "message_tail walk from the head", "index first, then the window", n),
        "<=",
        0.2,
    )


def main(argv: list[str] | None = None) -> dict[str, object]:
    """Run the read benchmarks and return the JSON-shaped results."""
    args = parse_args(__doc__.splitlines()[0], argv)
    bench = Bench("read -n 10 / latest", args.quick, args.repeats)
    with scratch_dir(args.dir) as directory:
        for n in [10_000] if args.quick else [100_000, 1_000_000]:
            _sizes(bench, directory, n)
    return bench.finish(args.json)


if __name__ == "__main__":
    main()
