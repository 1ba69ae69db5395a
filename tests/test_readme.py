"""The README's Python examples run, in order, and print what the README says they print."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_python_examples_print_what_the_readme_shows(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    code = "\n".join(blocks)
    expected = [ln[2:] for ln in code.splitlines() if ln.startswith("# ")]
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    assert out.getvalue().splitlines() == expected
    assert (tmp_path / "demo-lib.db").exists()
    assert (tmp_path / "memory-ws" / "memory.db").exists()
