"""The workspace's cross-process write lock: one writer at a time, a 1-second give-up.

A chatting session should not wait on memory: a writer that cannot take the lock within ``timeout``
seconds (1 by default) gives up with :class:`~memory.errors.WorkspaceBusyError`, a retryable
``CONCURRENT_UPDATE``; the next turn comes back to it. Both locks are re-entrant within one object.

* :class:`FileWriteLock`: ``fcntl.flock`` on ``write.lock`` in the workspace folder (its bytes never
  change), for a store of record in SQLite;
* :class:`memory.postgres.AdvisoryWriteLock`: ``pg_try_advisory_lock`` on the workspace's own key, for
  one in PostgreSQL shared by many machines.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from typing_extensions import override

from memory.errors import WorkspaceBusyError, WorkspaceStoreError

__all__ = ["DEFAULT_LOCK_TIMEOUT", "FileWriteLock", "WriteLock"]

DEFAULT_LOCK_TIMEOUT = 1.0
"""Seconds a writer waits for another holder before giving up."""

_POLL = 0.01
"""Seconds between two attempts to take a held lock."""


class WriteLock:
    """A re-entrant, cross-process lock taken by trying until a deadline.

    Subclasses say how to try (:meth:`_try`) and release (:meth:`_release`) once.

    Attributes:
        where: What the lock is, for :class:`WorkspaceBusyError` (a path or a key).
    """

    where: str = ""

    def __init__(self) -> None:
        self._depth = 0

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._depth > 0

    @contextmanager
    def hold(self, timeout: float = DEFAULT_LOCK_TIMEOUT) -> Iterator[None]:
        """Hold the lock for the block (at once when this object holds it already).

        Args:
            timeout: Seconds to wait for another holder (0: one attempt).

        Raises:
            WorkspaceBusyError: the lock stayed held for ``timeout`` seconds.
        """
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        deadline = time.monotonic() + timeout
        while not self._try():
            if time.monotonic() >= deadline:
                self._abandon()
                raise WorkspaceBusyError(self.where, timeout)
            time.sleep(_POLL)
        self._depth = 1
        try:
            yield
        finally:
            self._depth = 0
            self._release()

    def _try(self) -> bool:
        raise NotImplementedError

    def _release(self) -> None:
        raise NotImplementedError

    def _abandon(self) -> None:
        """Let go of what failed attempts keep open."""

    def close(self) -> None:
        """Release what the lock keeps open (nothing is held after a :meth:`hold` block)."""


class FileWriteLock(WriteLock):
    """``fcntl.flock`` on a lock file that is created when missing and never written.

    Args:
        path: The lock file (``<workspace>/write.lock``).

    Raises:
        WorkspaceStoreError: the path is a directory, or the file cannot be created.
    """

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.where = str(path)
        if path.is_dir():
            raise WorkspaceStoreError(
                f"{path} is a directory; the workspace's write lock must be a file "
                "(move the directory away)"
            )
        try:
            path.touch(exist_ok=True)
        except OSError as e:
            raise WorkspaceStoreError(f"cannot create the write lock {path}: {e}") from e
        self._fd: int | None = None

    def _try(self) -> bool:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def _abandon(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @override
    def close(self) -> None:
        if not self._depth:
            self._abandon()
