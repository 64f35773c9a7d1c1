"""Durable writes: one fsync helper for files and folders (commits, doc values, merges, repair)."""

from __future__ import annotations

import os


def fsync_path(path: str | os.PathLike) -> None:
    """fsync a file or a folder (a folder makes its renames durable), best effort: a path
    deleted meanwhile or a filesystem that cannot fsync a folder is no error."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
