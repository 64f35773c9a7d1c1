"""Whoosh's file storage made durable and checksummed, and reading that turns damage into
``IndexDamaged``: the engine's lowest floor above the files themselves."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from whoosh.fields import ensure_schema
from whoosh.filedb.filestore import FileStorage, Storage
from whoosh.index import TOC, FileIndex

from newsquarry.search.core.durability import fsync_path
from newsquarry.search.core.errors import (
    READ_DAMAGE,
    IndexDamaged,
)
from newsquarry.search.engine import (
    integrity,
    keytable,
    whoosh_fixes,  # noqa: F401  (applies the fixes)
)
from newsquarry.search.engine.integrity import INDEX_NAME


class _OneFile:
    """A storage stand-in that serves one file under another name (for ``TOC.read``)."""

    def __init__(self, storage: FileStorage, real: str) -> None:
        self._storage = storage
        self._real = real

    def open_file(self, name: str, *a: Any, **kw: Any) -> Any:
        return FileStorage.open_file(self._storage, self._real, *a, **kw)


class KeptTocIndex(FileIndex):
    """Whoosh's ``FileIndex``, keeping the table of contents its opening reads.

    Whoosh reads the newest TOC when an index is opened (to check that it can), again for
    its schema and again for the first reader; each read unpickles the schema (0.4 ms on
    Reuters, of a fresh process's ~30 ms open + first search). Here the first read is kept
    and serves the store's schema check (``opened_schema``) and the first ``_read_toc``
    (the first searcher's or writer's), once, if that generation's file is still the
    newest and the same file (inode, size, times) as when it was read: a TOC file is never
    written again under its name, so it is what reading it again would give. Every later
    ``_read_toc`` reads the file, as Whoosh's does (a writer changes the segments it is
    given: nothing else holds them then)."""

    def __init__(self, storage: Storage, schema: Any = None, indexname: str = INDEX_NAME) -> None:
        if not isinstance(storage, Storage):
            raise ValueError(f"{storage!r} is not a Storage object")
        self.storage = storage
        self._schema = ensure_schema(schema) if schema else None
        self.indexname = indexname
        self._kept_lock = threading.Lock()
        generation = TOC._latest_generation(storage, indexname)
        identity = self._identity(generation)  # before the read: a file replaced after it
        toc = TOC.read(storage, indexname, gen=generation, schema=self._schema)  # is not kept
        self._kept: tuple[Any, tuple | None] | None = (toc, identity)

    def _identity(self, generation: int) -> tuple | None:
        try:
            st = os.stat(self.storage._fpath(TOC._filename(self.indexname, generation)))
        except (OSError, AttributeError):
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def opened_schema(self) -> Any:
        """The schema of the TOC read at opening, while it is kept (else read again)."""
        kept = self._kept
        return kept[0].schema if kept is not None else self.schema

    def _read_toc(self) -> Any:
        with self._kept_lock:
            kept, self._kept = self._kept, None
        if kept is not None:
            toc, identity = kept
            if (
                identity is not None
                and TOC._latest_generation(self.storage, self.indexname) == toc.generation
                and self._identity(toc.generation) == identity
            ):
                return toc
        return super()._read_toc()


class DurableFileStorage(FileStorage):
    """Whoosh's file storage, with the writes of a commit on disk and checksummed before it counts.

    Whoosh writes a commit's segment files, then a new table of contents (TOC)
    under a temporary name, then renames the TOC into place: the rename is the
    commit. Just before that rename, the checksum manifest of the new
    generation is written (``search.integrity``); then every file created since
    the last commit that still exists (the segment files, the segment's article
    list, the temporary TOC) and the folder are fsynced (Whoosh itself never
    calls fsync, so after a power cut the renamed TOC could be on disk while the
    data it points to is not), and the folder again after the rename. Files
    Whoosh deletes before that (the parts it assembles into one compound
    segment file) cost nothing.

    Reading: every file a manifest lists is checked against its CRC the first
    time this process opens it (``verify=True``, see ``integrity.Verifier``).
    ``discard_uncommitted()`` removes what a failed commit wrote.
    """

    def __init__(self, *args: Any, verify: bool = True, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.verify = verify
        self._created: set[str] = set()
        self._created_lock = threading.Lock()
        self._learned: tuple[int, int] | None = None  # (generation, manifest mtime) learned

    def create_file(self, name: str, excl: bool = False, mode: str = "wb", **kw: Any) -> Any:
        with self._created_lock:
            self._created.add(name)
        return super().create_file(name, excl=excl, mode=mode, **kw)

    def open_index(self, indexname: str = INDEX_NAME, schema: Any = None,
                   indexclass: Any = None) -> Any:  # fmt: skip
        """Whoosh's ``open_index``, as a ``KeptTocIndex`` unless told otherwise."""
        return super().open_index(indexname, schema, indexclass or KeptTocIndex)

    def open_file(self, name: str, *args: Any, **kw: Any) -> Any:
        if self.verify:
            m = integrity.TOC_RE.match(name)
            if m:
                self._learn(int(m.group(1)))
            integrity.VERIFIER.verify(self._fpath(name))
        return super().open_file(name, *args, **kw)

    def _learn(self, generation: int) -> None:
        """Read the manifest of ``generation`` once, so the files it lists are verified."""
        folder = Path(self.folder)
        try:
            mtime = os.stat(folder / integrity.manifest_name(generation)).st_mtime_ns
        except FileNotFoundError:
            return
        if self._learned == (generation, mtime):
            return
        try:
            manifest = integrity.read_manifest(folder, generation)
        except (integrity.ManifestMissing, ValueError, OSError):
            return  # reads go on unverified; `check` names it and writes refuse
        integrity.VERIFIER.learn(folder, manifest)
        self._learned = (generation, mtime)

    def rename_file(self, oldname: str, newname: str, safe: bool = False) -> None:
        m = integrity.TOC_RE.match(newname)
        if m:  # the commit: checksums, then everything reaches the disk, then the rename
            with self._created_lock:
                created = set(self._created)
            self._write_manifest(oldname, int(m.group(1)))
            with self._created_lock:
                created |= self._created
            for name in sorted(created):
                self._sync(self._fpath(name))
            self._sync(self.folder)
        super().rename_file(oldname, newname, safe)
        if m:
            with self._created_lock:
                self._created -= created
            self._sync(self.folder)  # then the rename itself

    def _write_manifest(self, temp_toc: str, generation: int) -> None:
        folder = Path(self.folder)
        toc = TOC.read(_OneFile(self, temp_toc), INDEX_NAME, generation)
        previous = integrity.latest_manifest(folder, below=generation)
        manifest = integrity.build_manifest(
            folder,
            self,
            toc.schema,
            toc.segments,
            generation,
            temp_toc,
            previous,
            # the segments' merged key table (``engine.keytable``), derived data
            derived=(
                keytable.file_name([(g.segment_id(), g.doc_count_all()) for g in toc.segments]),
            ),
        )
        integrity.write_manifest_file(folder, manifest)

    def discard_uncommitted(self) -> list[str]:
        """Delete the files written since the last commit (a commit that failed); their names."""
        with self._created_lock:
            created, self._created = self._created, set()
        removed = []
        for name in sorted(created):
            try:
                os.remove(self._fpath(name))
                removed.append(name)
            except OSError:
                pass
        folder = Path(self.folder)
        current = max(integrity.toc_generations(folder), default=-1)
        for name in os.listdir(folder):  # a manifest written for the commit that failed
            mm = integrity.MANIFEST_RE.match(name)
            if (
                (mm and int(mm.group(1)) > current)
                or name.endswith(".sums.tmp")
                or (".sums." in name and name.endswith(".tmp"))
            ):
                try:
                    os.remove(folder / name)
                    removed.append(name)
                except OSError:
                    pass
        temp = folder / f"{INDEX_NAME}.tmp"  # the writer's posting pools
        if temp.is_dir():
            shutil.rmtree(temp, ignore_errors=True)
            removed.append(temp.name)
        return removed

    # a path deleted meanwhile (a compound segment's parts) or a folder: best effort
    _sync = staticmethod(fsync_path)


@contextmanager
def reading(path: Path) -> Iterator[None]:
    """Turn the ways Whoosh fails on a damaged file into ``IndexDamaged``."""
    try:
        yield
    except READ_DAMAGE as exc:
        raise IndexDamaged(
            f"the index could not be read ({type(exc).__name__}: {exc}): it may be damaged. "
            "Run `newsquarry check` for the details and `newsquarry repair` to rebuild it"
        ) from None
