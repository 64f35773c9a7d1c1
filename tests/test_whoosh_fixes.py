"""The fixes to Whoosh in search.whoosh_fixes: segment files read in place, not copied."""

from __future__ import annotations

import io
import pickle
import tracemalloc

from conftest import PassThrough

from newsquarry.search.core.models import Article
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.engine.whoosh_fixes import ViewReader
from newsquarry.search.ingest.indexer import index_articles


def test_view_reader_reads_like_a_file_and_pickle_loads_from_it():
    data = pickle.dumps({"a": [1, 2, 3]}, protocol=2) + b"line one\nline two\n" + b"\x00" * 5
    ref, view = io.BytesIO(data), ViewReader(memoryview(data))
    assert pickle.load(view) == pickle.load(ref) and view.tell() == ref.tell()
    assert view.readline() == ref.readline() == b"line one\n"
    assert view.read(4) == ref.read(4) == b"line"
    buf_a, buf_b = bytearray(3), bytearray(3)
    assert view.readinto(buf_a) == ref.readinto(buf_b) and buf_a == buf_b
    assert view.seek(-2, 2) == ref.seek(-2, 2)
    assert view.read() == ref.read() == b"\x00\x00"
    assert view.read(10) == b"" and view.readline() == b""
    view.seek(0)
    assert pickle.load(view) == {"a": [1, 2, 3]}
    # protocol-0 pickles need readline
    view = ViewReader(memoryview(pickle.dumps(["x", 1.5], protocol=0)))
    assert pickle.load(view) == ["x", 1.5]


def _articles(n: int):
    for i in range(n):
        words = " ".join(f"w{i}x{j} common{j % 50}" for j in range(60))
        yield Article(id=f"a{i:04d}", title=f"Title {i}", text=f"{words}.\n\n{words} again.")


def test_opening_a_searcher_does_not_copy_the_segment_files(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    index_articles(store, _articles(400), enricher=PassThrough(), commit_every=100)
    store.close()
    segment_bytes = sum(f.stat().st_size for f in (tmp_path / "ix").glob("*.seg"))
    assert segment_bytes > 2_000_000  # big enough for a copy to show

    store = WhooshStore(tmp_path / "ix", create=False)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        searcher = store.searcher()
        assert store.content_hash("a0007") is not None  # terms and postings read
        assert searcher.doc_frequency("text", "common7") > 0
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # Whoosh's BufferFile copied each segment's terms and postings files (most of
    # the .seg file) into memory per searcher; read in place it is a few kilobytes
    assert grown < segment_bytes * 0.1, (grown, segment_bytes)


def test_a_missing_length_column_is_looked_up_once_per_segment(tmp_path):
    """Unscored keyword fields have no lengths column; asking must not stat the disk each time."""
    from whoosh import fields, index

    schema = fields.Schema(k=fields.KEYWORD(scorable=False), t=fields.TEXT)
    ix = index.create_in(str(tmp_path), schema)
    with ix.writer() as w:
        for i in range(50):
            w.add_document(k=f"v{i % 3}", t=f"word w{i}")
    with ix.reader() as reader:
        perdoc = reader._perdoc
        asked: list[str] = []
        has_column = perdoc.has_column
        perdoc.has_column = lambda name: asked.append(name) or has_column(name)
        lengths = [reader.doc_field_length(d, "k") for d in range(50)]
        text_lengths = [reader.doc_field_length(d, "t") for d in range(50)]
    assert lengths == [0] * 50  # no column: the default, as before
    assert text_lengths == [2] * 50
    assert len(asked) == 2  # once for "k", once for "t"


def test_document_lengths_read_once_match_whooshs_own(tmp_path):
    """The cached lengths give what Whoosh's per-call read gives, for every document."""
    from whoosh import fields, index

    from newsquarry.search.engine.whoosh_fixes import whoosh_doc_field_length

    schema = fields.Schema(t=fields.TEXT, k=fields.KEYWORD(scorable=False), n=fields.TEXT)
    ix = index.create_in(str(tmp_path), schema)
    with ix.writer() as w:
        for i in range(300):
            w.add_document(t=" ".join(f"w{j}" for j in range(i % 40)), k="a", n="xx yy")
        w.add_document(k="only keywords")  # no text at all: length byte 0
    with ix.reader() as reader:
        perdoc = reader._perdoc
        for name in ("t", "k", "n", "missing"):
            ours = [perdoc.doc_field_length(d, name, -1) for d in range(301)]
            theirs = [whoosh_doc_field_length(perdoc, d, name, -1) for d in range(301)]
            assert ours == theirs, name
        assert perdoc.doc_field_length(41, "t") == 1


def test_postings_spilled_to_disk_past_the_pool_limit_read_back_whole(tmp_path):
    """A commit larger than the writer's memory limit spills sorted runs and merges them."""
    from whoosh import fields, index
    from whoosh.query import Term

    schema = fields.Schema(t=fields.TEXT(stored=True))
    ix = index.create_in(str(tmp_path), schema)
    w = ix.writer(limitmb=0.05)  # ~50 KB of postings: several runs for 2,000 documents
    for i in range(2000):
        w.add_document(t=f"common w{i} m{i % 7}")
    assert w.pool.runs  # it did spill
    w.commit()
    with ix.searcher() as s:
        assert s.doc_count() == 2000
        assert len(s.search(Term("t", "common"), limit=None)) == 2000
        assert len(s.search(Term("t", "m3"), limit=None)) == len(range(3, 2000, 7))
        assert [h["t"] for h in s.search(Term("t", "w1234"))] == ["common w1234 m2"]


def test_spilled_runs_are_written_in_blocks_and_read_back_in_order(tmp_path, monkeypatch):
    """Runs hold blocks of postings (one marshal record each), merged back item by item."""
    import marshal
    import random

    from whoosh.externalsort import SortingPool

    from newsquarry.search.engine import whoosh_fixes

    monkeypatch.setattr(whoosh_fixes, "RUN_BLOCK", 100)  # blocks cut inside every run
    rng = random.Random(7)
    items = [(f"f{rng.randrange(5)}", rng.randbytes(3), i, 1.0, None) for i in range(2500)]
    pool = SortingPool(maxsize=1000, tempdir=str(tmp_path))
    runs: list = []
    real = pool._add_run
    pool._add_run = lambda path: (runs.append(open(path, "rb").read()), real(path))  # noqa: SIM115
    for item in items:
        pool.add(item)
    pool.save()
    assert len(runs) == 3
    with open(tmp_path / "run", "wb") as fh:
        fh.write(runs[0])
    with open(tmp_path / "run", "rb") as fh:
        first = marshal.load(fh)
    assert isinstance(first, list) and len(first) == 100  # a block, not one posting
    assert list(pool.items()) == sorted(items)


BUILD_AS_SEARCH = r"""
import sys, types
import newsquarry.search.engine.schema as schema
# the library as it was imported before it moved under newsquarry: ``search.schema``
sys.modules["search"] = types.ModuleType("search")
sys.modules["search.schema"] = schema
for obj in list(vars(schema).values()):
    if getattr(obj, "__module__", None) == "newsquarry.search.engine.schema":
        obj.__module__ = "search.schema"
from newsquarry.search.core.models import Article
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.engine.store import WhooshStore
store = WhooshStore(sys.argv[1])
index_articles(store, [Article(id="old-1", title="Cocoa", text="Ghana's cocoa crop grew.")])
store.close()
"""

SEARCH = r"""
import sys
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
store = WhooshStore(sys.argv[1], create=False)
print(store.search(SearchRequest(q="cocoa")).total)
"""


def test_an_index_built_before_the_move_under_newsquarry_still_opens(tmp_path):
    """Its table of contents names ``search.schema``: read as ``newsquarry.search.engine.schema``.

    Both steps run in fresh processes outside the checkout, where ``search`` is not
    importable (as for an installed newsquarry)."""
    import os
    import subprocess
    import sys

    ix = tmp_path / "ix"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}

    def run(code: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", code, str(ix)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip

    built = run(BUILD_AS_SEARCH)
    assert built.returncode == 0, built.stderr
    toc = next(ix.glob("_*.toc")).read_bytes()
    assert b"search.schema" in toc and b"newsquarry.search.engine.schema" not in toc
    found = run(SEARCH)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() == "1"


def test_hash_reader_reads_its_table_directory_at_once_with_the_same_result(tmp_path):
    """The term tables of a real segment open with the same directory and answer the same."""
    from whoosh.filedb.filestore import FileStorage
    from whoosh.filedb.filetables import HashReader, HashWriter

    from newsquarry.search.engine import whoosh_fixes

    storage = FileStorage(str(tmp_path)).create()
    w = HashWriter(storage.create_file("t.hsh"))
    pairs = {f"key{i}".encode(): f"value{i}".encode() for i in range(3000)}
    for k, v in pairs.items():
        w.add(k, v)
    w.close()
    length = storage.file_length("t.hsh")
    ours = HashReader(storage.open_file("t.hsh"), length)
    theirs = HashReader.__new__(HashReader)
    whoosh_fixes._whoosh_hash_reader_init(theirs, storage.open_file("t.hsh"), length)
    assert len(ours.tables) == 256 and ours.tables == theirs.tables
    assert ours.endofdata == theirs.endofdata and ours.extras == theirs.extras
    assert all(ours[k] == v for k, v in pairs.items()) and b"nope" not in ours
    # and a searcher over a real index still finds its words
    store = WhooshStore(tmp_path / "ix")
    a = Article(id="h1", title="Harbour", text="The harbour council met on the budget.")
    index_articles(store, [a], enricher=PassThrough())
    assert [h.article_id for h in store.search(SearchRequest(q="harbour")).hits] == ["h1"]


def test_a_columns_stored_offsets_are_read_per_document_with_the_same_values():
    """A stored-fields column with its offsets written (Whoosh writes them past 32,768
    documents) reads each document's offset and length from the file
    (``whoosh_fixes._StoredArray``): every value as Whoosh's own arrays give it."""
    import pytest
    from whoosh.columns import VarBytesColumn
    from whoosh.filedb.structfile import BufferFile, StructFile

    from newsquarry.search.engine.whoosh_fixes import _StoredArray

    values = [b"", b"a", b"bc" * 300, b"", b"\x00\xff" * 40_000, b"z"] * 7
    for cutoff in (2, 10_000):  # offsets written / not written (derived from the lengths)
        raw = io.BytesIO()
        out = StructFile(raw)
        writer = VarBytesColumn(write_offsets_cutoff=cutoff).writer(out)
        for docnum, v in enumerate(values):
            writer.add(docnum, v)
        writer.finish(len(values))
        data = raw.getvalue()
        dbfile = BufferFile(memoryview(data))
        reader = VarBytesColumn().reader(dbfile, 0, len(data), len(values))
        assert reader.had_stored_offsets is (cutoff == 2)
        assert [reader[d] for d in range(len(values))] == values == list(reader)
        lengths = [len(v) for v in values]
        starts = [sum(lengths[:d]) for d in range(len(values))]
        assert list(reader._lengths) == lengths and list(reader._offsets) == starts
        if cutoff == 2:
            assert isinstance(reader._offsets, _StoredArray)
            assert [reader._offsets[d] for d in range(len(values))] == starts
            assert reader._lengths[-1] == lengths[-1] and reader._lengths[2:5] == lengths[2:5]
            with pytest.raises(IndexError):
                reader._lengths[len(values)]
