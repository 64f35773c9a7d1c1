"""Fixes to whoosh-reloaded 2.7.5 that newsquarry relies on, applied on import.

Whoosh names new segments and temporary files with ``random.choice``: the
global ``random`` module, whose state a host program may seed. Two writes made
after the same ``random.seed(...)`` (a script that seeds for reproducible
sampling, a test framework that seeds every example) get the same segment
name, and the second commit fails on the first one's files (seen here as an
``AssertionError`` in ``create_compound_file`` under hypothesis). Names come
from the operating system's randomness instead, which nobody seeds.

Whoosh maps each segment file into memory (``CompoundStorage`` uses mmap), then
hands every part of it to the codec as a ``BufferFile``, whose constructor
wraps the mapped bytes in ``io.BytesIO``: a *copy*. Opening a searcher thus
copied every segment's terms and postings files into anonymous memory (about
7 MB per segment of 500 Reuters articles, measured), in each searcher: an
indexer holding two searchers grew by twice the index size, and each API
thread held its own copy of the index. ``BufferFile`` now reads straight from
the mapped bytes (``ViewReader``), so the pages are the file's own: shared
between processes and threads, and given back by the kernel when memory is short.

Each posting a commit writes goes through ``PostingPool.add``, which checks
its types with asserts and sums a size estimate term by term; the same
estimate is now one expression (a million calls per 2,000 articles).

Writing a segment asks each posting's document length (``doc_field_length``),
a million times per 2,000 articles, each a read of one byte through three
layers of Python; the lengths of a field are now read once per segment as one
``bytes`` object (one byte per document) and indexed (~10% of the writer's time).

A segment's per-document reader looks a column reader up in a dict, but only
caches the readers it finds: a field with no lengths column (our unscored
keyword fields) costs an ``os.stat`` for every posting of that field each time
a segment is flushed or merged (8% of the writer's time, measured). A segment's
files never change once written, so a missing column is now cached too.

Stored fields are read through a ``VarBytesColumn`` whose reader derived each
document's offset from the lengths in a Python loop when a segment was first
read in a process; it is now one ``itertools.accumulate``.

Opening a segment's term table (``HashReader``) read its directory of 256 hash
tables as 256 separate reads through two Python layers: ~3,000 calls each time a
searcher opened 12 segments (after every commit, in every thread). It is now one
read, unpacked with ``struct.iter_unpack``.

A commit whose postings pass the writer's memory limit spills them to sorted
runs on disk (``externalsort.SortingPool``), one ``marshal.dump`` and one file
write per posting, read back one ``marshal.load`` each: 60% of the writer's time
in a 5,000-article commit (profiled while growing a 1M-passage index). Runs are
now written and read in blocks of ``RUN_BLOCK`` postings: one C call per block,
and still a block per run in memory while the runs are merged.

(The other Whoosh fix, not using ``Searcher.refresh()``, lives in ``store``.)
"""

from __future__ import annotations

import io
import marshal
import operator
import os
import pickle
import secrets
import struct
from array import array
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

import whoosh.codec.base
import whoosh.codec.whoosh3
import whoosh.columns
import whoosh.externalsort
import whoosh.filedb.compound
import whoosh.filedb.filestore
import whoosh.filedb.filetables
import whoosh.filedb.structfile
import whoosh.index
import whoosh.writing
from whoosh.filedb import filetables as ft
from whoosh.util import IDCHARS
from whoosh.util.numeric import byte_to_length


def random_name(size: int = 28) -> str:
    """A file name part from os-level randomness (same alphabet as Whoosh's)."""
    return "".join(secrets.choice(IDCHARS) for _ in range(size))


for _module in (whoosh.codec.base, whoosh.filedb.compound, whoosh.filedb.filestore, whoosh.writing):
    _module.random_name = random_name  # type: ignore[attr-defined]


class ViewReader:
    """A read-only file over a memoryview, without copying it (``read`` copies what it returns).

    What ``BufferFile`` needs of its file: ``read``, ``readinto`` and ``readline``
    (for ``pickle.load``), ``seek``, ``tell``, ``close``.
    """

    __slots__ = ("_view", "_pos", "_len")

    def __init__(self, view: Any) -> None:
        self._view = memoryview(view).cast("B") if not isinstance(view, memoryview) else view
        self._pos = 0
        self._len = len(self._view)

    def read(self, n: int | None = -1) -> bytes:
        start = self._pos
        end = self._len if n is None or n < 0 else min(start + n, self._len)
        if end <= start:
            return b""
        self._pos = end
        return self._view[start:end].tobytes()

    def readinto(self, buf: Any) -> int:
        target = memoryview(buf).cast("B")
        start = self._pos
        end = min(start + len(target), self._len)
        n = max(0, end - start)
        target[:n] = self._view[start:end]
        self._pos = start + n
        return n

    def readline(self, limit: int = -1) -> bytes:
        start = self._pos
        end = self._len if limit is None or limit < 0 else min(start + limit, self._len)
        if end <= start:
            return b""
        # search in chunks: pickle.load asks for a line only for old protocols
        i = start
        while i < end:
            chunk = self._view[i : min(i + 4096, end)].tobytes()
            nl = chunk.find(b"\n")
            if nl >= 0:
                end = i + nl + 1
                break
            i += len(chunk)
        self._pos = end
        return self._view[start:end].tobytes()

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence == 1:
            pos += self._pos
        elif whence == 2:
            pos += self._len
        if pos < 0:
            raise ValueError(f"negative seek position {pos}")
        self._pos = pos
        return pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        self._view = memoryview(b"")
        self._pos = self._len = 0


def _buffer_file_init(self: Any, buf: Any, name: str | None = None, onclose: Any = None) -> None:
    self._buf = buf
    self._name = name
    self.file = ViewReader(buf)
    self.onclose = onclose
    self.is_real = False
    self.is_closed = False


whoosh.filedb.structfile.BufferFile.__init__ = _buffer_file_init  # type: ignore[method-assign]


_MISSING = object()


def _cached_reader(self: Any, fieldname: str, column: Any) -> Any:
    """``W3PerDocReader._cached_reader`` that also remembers a column is absent."""
    readers = self._readers
    reader = readers.get(fieldname, _MISSING)
    if reader is _MISSING:
        reader = self.column_reader(fieldname, column) if self.has_column(fieldname) else None
        readers[fieldname] = reader
    return reader


whoosh.codec.whoosh3.W3PerDocReader._cached_reader = _cached_reader  # type: ignore[method-assign]


def length_bytes(column: Any) -> bytes | None:
    """A one-byte-per-document lengths column as ``bytes`` (None if it has another shape)."""
    try:
        if column._fixedlen != 1:
            return None
        return bytes(column._dbfile.get(column._basepos, column._count))
    except AttributeError:
        return None


def _doc_field_length(self: Any, docnum: int, fieldname: str, default: int = 0) -> Any:
    """``W3PerDocReader.doc_field_length`` reading a field's lengths once, not per call."""
    if docnum > self._doccount:
        raise IndexError(f"Asked for docnum {docnum!r} of {self._doccount}")
    try:
        cache = self._nq_lengths
    except AttributeError:
        cache = self._nq_lengths = {}
    data = cache.get(fieldname, _MISSING)
    if data is _MISSING:
        column = self._cached_reader(
            whoosh.codec.whoosh3._lenfield(fieldname), whoosh.codec.whoosh3.LENGTHS_COLUMN
        )
        data = None if column is None else (length_bytes(column) or column)
        cache[fieldname] = data
    if data is None:
        return default
    if isinstance(data, bytes):
        lbyte = data[docnum] if docnum < len(data) else 0
    else:  # a column of another shape: Whoosh's own way
        lbyte = data[docnum]
    if lbyte:
        return byte_to_length(lbyte)
    return None  # as Whoosh: a zero length byte gives None, not the default


whoosh_doc_field_length = whoosh.codec.whoosh3.W3PerDocReader.doc_field_length  # for tests
whoosh.codec.whoosh3.W3PerDocReader.doc_field_length = _doc_field_length  # type: ignore[method-assign]


def _pool_add(self: Any, item: tuple) -> None:
    """``PostingPool.add`` with Whoosh's size estimate in one expression, no asserts."""
    self.fieldnames.add(item[0])
    vbytes = item[4]
    self.currentsize += 150 + len(item[0]) + 2 * len(item[1]) + (len(vbytes) if vbytes else 0)
    if self.currentsize > self.limit:
        self.save()
    self.current.append(item)


whoosh.writing.PostingPool.add = _pool_add  # type: ignore[method-assign]


class _StoredArray:
    """An array Whoosh wrote in a column file (big-endian, as ``StructFile.write_array``
    writes it), read item by item from the file: what ``get_array`` would have read
    (the same Python numbers), without copying and byte-swapping all of it first."""

    __slots__ = ("_get", "_start", "_item", "_n")

    def __init__(self, dbfile: Any, start: int, typecode: str, n: int) -> None:
        self._get = dbfile.get
        self._start = start
        self._item = struct.Struct(">" + typecode)  # (Whoosh's typecodes: standard sizes)
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        i = operator.index(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError("array index out of range")
        size = self._item.size
        return self._item.unpack(self._get(self._start + i * size, size))[0]

    def __iter__(self) -> Iterator[Any]:
        raw = self._get(self._start, self._n * self._item.size)
        return (v for (v,) in self._item.iter_unpack(raw))


def _read_offsets_and_lengths(self: Any) -> None:
    """``VarBytesColumn.Reader._read_offsets_and_lengths`` deriving offsets at C speed.

    Stored fields live in such a column; when its offsets were not written,
    Whoosh summed the lengths in a Python loop on the first stored-fields read
    of each segment in each process (~20 ms per 10,000 documents). When they were
    (segments past 32,768 documents), offsets and lengths are read from the file per
    document shown (``_StoredArray``), not both arrays copied and byte-swapped on the
    first read (0.8 ms of a fresh process's first search on Reuters' 87,345).
    """
    dbfile, doccount = self._dbfile, self._doccount
    lastbyte = self._basepos + self._length - 1
    lens_code = chr(dbfile.get_byte(lastbyte))
    offsets = None
    if lens_code == "X":
        self.had_stored_offsets = True
        lens_code = chr(dbfile.get_byte(lastbyte - 2))
        offsets_code = chr(dbfile.get_byte(lastbyte - 1))
        offsetstart = (lastbyte - 2) - doccount * struct.calcsize(offsets_code)
        if offsets_code in _STRUCT_CODES and lens_code in _STRUCT_CODES:
            lenstart = offsetstart - (struct.calcsize(lens_code) * doccount)
            self._offsets = _StoredArray(dbfile, offsetstart, offsets_code, doccount)
            self._lengths = _StoredArray(dbfile, lenstart, lens_code, doccount)
            return
        offsets = dbfile.get_array(offsetstart, offsets_code, doccount)
        lastbyte = offsetstart
    lenstart = lastbyte - (struct.calcsize(lens_code) * doccount)
    lengths = dbfile.get_array(lenstart, lens_code, doccount)
    if offsets is None:
        offsets = array("L", accumulate(lengths[:-1], initial=0)) if len(lengths) else array("L")
    self._offsets = offsets
    self._lengths = lengths


# typecodes whose native size (``get_array``'s) is their standard size (``struct``'s ">")
_STRUCT_CODES = frozenset(c for c in "bBhHiIqQf" if struct.calcsize(c) == struct.calcsize(">" + c))
whoosh.columns.VarBytesColumn.Reader._read_offsets_and_lengths = _read_offsets_and_lengths  # type: ignore[method-assign]


class _MovedModules(pickle.Unpickler):
    """Unpickles what was pickled before the code moved under ``newsquarry``: an index
    built when the library was imported as ``search`` names ``search.schema`` in its
    table of contents (the schema's analyzers), which no longer exists by that name."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "search" or module.startswith("search."):
            module = "newsquarry." + module
        return super().find_class(module, name)


class _TocPickle:
    """``whoosh.index``'s pickle module, with ``loads`` through ``_MovedModules``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(pickle, name)

    @staticmethod
    def loads(data: bytes) -> Any:
        return _MovedModules(io.BytesIO(data)).load()


whoosh.index.pickle = _TocPickle()
_whoosh_hash_reader_init = whoosh.filedb.filetables.HashReader.__init__  # kept for tests


def _hash_reader_init(self: Any, dbfile: Any, length: Any = None, magic: bytes = b"HSH3",
                      startoffset: int = 0) -> None:  # fmt: skip
    """``HashReader.__init__`` reading the 256-entry table directory at once."""
    self.dbfile = dbfile
    self.startoffset = startoffset
    self.is_closed = False
    if length is None:
        dbfile.seek(0, os.SEEK_END)
        length = dbfile.tell() - startoffset
    dbfile.seek(startoffset)
    filemagic = dbfile.read(4)
    if filemagic != magic:
        raise ft.FileFormatError(f"Unknown file header {filemagic!r}")
    self.hashtype = dbfile.read_byte()
    self.hashfn = ft._hash_functions[self.hashtype]
    dbfile.read_int()  # unused future expansion bits
    dbfile.read_int()
    self.startofdata = dbfile.tell()
    exptr = startoffset + length - ft._INT_SIZE
    exlen = dbfile.get_int(exptr)
    expos = exptr - exlen
    dbfile.seek(expos)
    self._read_extras()
    dbfile.seek(expos - ft._directory_size)
    raw = dbfile.read(ft._directory_size)
    if len(raw) != ft._directory_size:
        raise EOFError("hash table directory cut short")
    self.tables = list(ft._dir_entry.iter_unpack(raw))
    self.endofdata = self.tables[0][0]


whoosh.filedb.filetables.HashReader.__init__ = _hash_reader_init  # type: ignore[method-assign]


RUN_BLOCK = 8192  # postings per marshal call in a spilled run


def _write_run(self: Any, f: Any, items: list) -> None:
    """``SortingPool._write_run`` writing blocks of items, one ``marshal.dump`` each."""
    for i in range(0, len(items), RUN_BLOCK):
        marshal.dump(items[i : i + RUN_BLOCK], f, 2)
    f.close()


def _read_run(self: Any, path: str) -> Any:
    """``SortingPool._read_run`` for runs written by ``_write_run``: items block by block."""
    f = self._open_run(path)
    try:
        while True:
            try:
                block = marshal.load(f)
            except EOFError:
                return
            yield from block
    finally:
        f.close()
        self._remove_run(path)


whoosh.externalsort.SortingPool._write_run = _write_run  # type: ignore[method-assign]
whoosh.externalsort.SortingPool._read_run = _read_run  # type: ignore[method-assign]
