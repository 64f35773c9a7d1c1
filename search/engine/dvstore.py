"""Doc values on disk: one file per segment, mapped into memory by each process.

Why: reading a segment's postings into doc values (``docvalues.compute_segment``)
took seconds per process on a Reuters-sized index, so every CLI command and every
freshly started server paid it before its first answer. The columns are now
written once, when the segment is written or merged, and a new process maps the
file (``mmap``) and touches only the pages of the columns a query uses.

Name: ``<segment id>.dv`` next to the segment's own files (for example
``newsquarry_k2x9....dv`` beside ``newsquarry_k2x9....seg``). The name matches
Whoosh's segment-file pattern, so Whoosh's own cleanup after each commit removes
the file together with its segment once a merge has replaced it, and a checksum
list of a commit's files sees it as part of the segment.

Format (little-endian), chosen over a set of ``.npy`` files so that a segment's
doc values are one file written with one atomic rename:

- 8 bytes magic ``NQDV\\x00\\x01\\r\\n``, 8 bytes header length ``H``, 8 bytes file size;
- ``H`` bytes of JSON: ``{"version", "segment", "ndocs", "meta",
  "arrays": {name: [dtype, length, offset]}}``;
- each array's raw bytes at its offset from the first 64-byte aligned position
  after the header (each offset 64-byte aligned), read with
  ``numpy.frombuffer`` over the mapping: no copy, no parsing.

Written to a temporary name, fsynced, renamed into place and the folder fsynced,
so a file under the final name is always complete. A file that is missing,
truncated, of another version or of another segment is ignored (and rebuilt
from the postings by the caller): a bad doc-values file can cost time, never a
wrong answer or a lost document.
"""

from __future__ import annotations

import json
import mmap
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
from whoosh.reading import SegmentReader

from newsquarry.search.core.durability import fsync_path
from newsquarry.search.core.errors import IndexDamaged
from newsquarry.search.engine import hooks, integrity

MAGIC = b"NQDV\x00\x01\r\n"
VERSION = 1
EXT = ".dv"
_ALIGN = 64
_PREFIX = 24  # magic, header length, file size


def file_name(segment_id: str, ext: str = EXT) -> str:
    """The doc-values file of a segment (``segment_id`` as Whoosh's ``segment_id()``);
    other derived per-segment files (``quoteclusters``) use the same format with their
    own ``ext``."""
    return f"{segment_id}{ext}"


def _align(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def write(
    folder: str | os.PathLike,
    segment_id: str,
    ndocs: int,
    arrays: dict[str, np.ndarray],
    meta: dict[str, Any],
    ext: str = EXT,
    durable: bool = True,
) -> Path:
    """Write a segment's doc values atomically; returns the file's path.

    ``durable=False`` skips the fsyncs (of the file and of the folder after the rename):
    for files a crash may leave empty or lost because they are checked (CRC) and rebuilt
    when read (``search.pstore``), so a commit holding the write lock does not wait for them.
    """
    folder = Path(folder)
    table: dict[str, list[Any]] = {}
    arrs = {name: np.ascontiguousarray(a).reshape(-1) for name, a in arrays.items()}
    # offsets are relative to the start of the body, the first aligned byte after the header
    pos = 0
    for name, a in arrs.items():
        table[name] = [a.dtype.str, int(a.size), pos]
        pos = _align(pos + a.nbytes)
    header = {
        "version": VERSION,
        "segment": segment_id,
        "ndocs": int(ndocs),
        "meta": meta,
        "arrays": table,
    }
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    base = _align(_PREFIX + len(raw))
    size = base + pos
    final = folder / file_name(segment_id, ext)
    tmp = folder / f"{file_name(segment_id, ext)}.{os.urandom(6).hex()}.tmp"
    try:
        with open(tmp, "wb") as fh:
            fh.write(MAGIC + len(raw).to_bytes(8, "little") + size.to_bytes(8, "little"))
            fh.write(raw)
            for name, a in arrs.items():
                fh.write(b"\0" * (base + table[name][2] - fh.tell()))
                fh.write(a.tobytes())
            fh.write(b"\0" * (size - fh.tell()))
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
    if durable:
        fsync_path(folder)
    return final


class SegmentFile:
    """A mapped doc-values file: its meta data and its arrays (read-only views)."""

    def __init__(self, mm: mmap.mmap, header: dict[str, Any]) -> None:
        self._mm = mm
        self.header = header
        self.meta: dict[str, Any] = header["meta"]
        self.ndocs: int = header["ndocs"]

    def names(self) -> list[str]:
        return list(self.header["arrays"])

    def array(self, name: str) -> np.ndarray:
        """An array of the file, backed by the mapping (no copy)."""
        dtype, count, offset = self.header["arrays"][name]
        if not count:
            return np.zeros(0, dtype=np.dtype(dtype))
        return np.frombuffer(self._mm, dtype=np.dtype(dtype), count=count, offset=offset)

    def json(self, name: str) -> Any:
        """A JSON value stored as a byte array (lists of strings)."""
        return json.loads(self.array(name).tobytes().decode("utf-8"))


def read(
    folder: str | os.PathLike, segment_id: str, ndocs: int, ext: str = EXT
) -> SegmentFile | None:
    """The doc-values file of a segment, or None if it is missing or not valid for it."""
    path = Path(folder) / file_name(segment_id, ext)

    try:
        # against its checksum in the commit's manifest, once per process (search.integrity);
        # damaged, it is derived data: rebuilt from the postings, byte for byte the same
        integrity.VERIFIER.verify(str(path))
    except (IndexDamaged, OSError):
        return None
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < 16:
                return None
            mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    try:
        if mm[:8] != MAGIC or int.from_bytes(mm[16:24], "little") != size:
            return None
        head_len = int.from_bytes(mm[8:16], "little")
        if _PREFIX + head_len > size:
            return None
        header = json.loads(mm[_PREFIX : _PREFIX + head_len].decode("utf-8"))
        if (
            header.get("version") != VERSION
            or header.get("segment") != segment_id
            or header.get("ndocs") != ndocs
        ):
            return None
        base = _align(_PREFIX + head_len)
        for entry in header["arrays"].values():
            dtype, count, offset = entry
            entry[2] = offset + base
            if entry[2] + np.dtype(dtype).itemsize * count > size:
                return None
    except (ValueError, KeyError, TypeError):
        return None
    return SegmentFile(mm, header)


def exists(folder: str | os.PathLike, segment_id: str) -> bool:
    return (Path(folder) / file_name(segment_id)).exists()


def on_new_segments(writer: Any, save: Any) -> Any:
    """Make a Whoosh writer call ``save(folder, segment, reader)`` for each segment its
    commit adds, before the table of contents names them: a feature's per-segment file
    is then part of the commit (listed in its checksum manifest) or the commit fails."""
    before = {s.segment_id() for s in writer.segments}
    original = writer._commit_toc

    def commit_toc(segments: list[Any]) -> None:
        for seg in segments:
            if seg.segment_id() not in before:
                reader = SegmentReader(writer.storage, writer.schema, seg)
                try:
                    save(writer.storage.folder, seg, reader)
                finally:
                    reader.close()
        original(segments)

    writer._commit_toc = commit_toc
    return writer


def read_or_compute(
    folder: Any, segment: Any, ext: str, parse: Any, compute: Any, reader: Any
) -> Any:
    """A committed segment's feature data: ``parse`` of its ``ext`` file when that is
    valid (``parse`` returns None for another version), else ``compute(reader)`` from
    the segment itself (``reader`` already open: a merge reads its sources while they
    exist)."""
    src = read(folder, segment.segment_id(), segment.doc_count_all(), ext=ext)
    data = parse(src) if src is not None else None
    return data if data is not None else compute(reader)


class SegmentFileFeature(hooks.Feature):
    """A feature whose data is one file per segment in this format (``ext``): computed
    from each segment a commit adds and written before its table of contents, carried
    through merges, recomputed from the segment when missing or of another version.

    Subclasses give, as functions: ``compute(reader)``, ``parse(segment file) -> data or
    None`` (None: another version), ``save(folder, segment id, ndocs, data)`` and
    ``merged(folder, merged, sources, datas, maps)`` (``maps`` as ``merging._merge``
    gives them)."""

    ext = ""
    compute: Any
    parse: Any
    save: Any
    merged: Any

    @property
    def segment_exts(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.ext,)

    def writer_opened(self, writer: Any) -> None:
        on_new_segments(
            writer,
            lambda folder, seg, reader: self.save(
                folder, seg.segment_id(), seg.doc_count_all(), self.compute(reader)
            ),
        )

    def merge_source(self, folder: Any, segment: Any, reader: Any) -> Any:
        return read_or_compute(folder, segment, self.ext, self.parse, self.compute, reader)

    def write_merged(
        self, work: Any, merged: Any, sources: list[Any], data: list[Any], maps: Any
    ) -> None:
        self.merged(work, merged, sources, data, maps)


def merge_positions(segment: Any, live: Any, base: int, docs: np.ndarray) -> np.ndarray:
    """A merge source's local docnums ``docs`` in the merged segment (-1: deleted), from
    its live docnums in order and the merged segment's first docnum for it."""
    new = np.full(segment.doc_count_all(), -1, dtype=np.int64)
    new[np.asarray(live, dtype=np.int64)] = base + np.arange(len(live))
    return new[docs] if len(docs) else np.zeros(0, np.int64)


class SegmentCache:
    """A feature's data per committed segment, kept in memory (segments never change):
    from the segment's ``ext`` file when valid, else computed from the segment through
    its reader. At most ``size`` segments, the least recently added dropped first."""

    def __init__(self, ext: str, parse: Any, compute: Any, size: int = 256) -> None:
        self.ext, self.parse, self.compute, self.size = ext, parse, compute, size
        self._data: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, folder: Any, reader: Any) -> Any:
        seg = reader.segment()
        key = (str(folder), seg.segment_id())
        with self._lock:
            got = self._data.get(key)
        if got is not None:
            return got
        if folder is None:
            got = self.compute(reader)
        else:
            got = read_or_compute(folder, seg, self.ext, self.parse, self.compute, reader)
        with self._lock:
            self._data[key] = got
            while len(self._data) > self.size:
                self._data.popitem(last=False)
        return got

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
