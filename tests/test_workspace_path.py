"""A memory workspace is a folder: values that name none are refused with a typed error, no folder made."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memory.errors import MemoryLayerError, WorkspacePathError
from memory.workspace import MemoryWorkspace


@pytest.mark.parametrize("value", [":memory:", Path(":memory:"), "", "  "], ids=repr)
def test_a_value_that_names_no_folder_is_refused_and_nothing_is_made(
    value: str | Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(WorkspacePathError) as caught:
        MemoryWorkspace(value)
    assert caught.value.path == str(value)
    assert repr(str(value)) in str(caught.value)
    assert isinstance(caught.value, MemoryLayerError) and isinstance(caught.value, ValueError)
    assert os.listdir(tmp_path) == []


def test_a_folder_is_still_a_workspace(tmp_path: Path) -> None:
    with MemoryWorkspace(tmp_path / "ws") as ws:
        assert ws.path == tmp_path / "ws"
    assert (tmp_path / "ws" / "memory.db").is_file()
