"""Hostile files: every reader yields articles or failures with a reason, in bounded time.

Property-based (hypothesis) over random bytes and over format-shaped soup for
each extension, plus the named cases of issue 8: binary files, huge files,
deeply nested HTML, invalid UTF-8, a JSON line that is not an object, an
article of a million words, and a JSON line too long to read into memory.
Size limits are lowered with monkeypatch where a real-size file would make the
test slow; the code path is the same.
"""

from __future__ import annotations

import gzip
import json
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from newsquarry.search.core.ids import id_problem
from newsquarry.search.core.models import Article
from newsquarry.search.ingest import readers
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.ingest.readers import ReadFailure, Skipped, read_file, read_paths

BOUND = 5.0  # seconds one small hostile file may take
EXTS = [".txt", ".md", ".markdown", ".jsonl", ".ndjson", ".html", ".htm", ".pdf", ""]

PIECES = [
    "---\n", "title: ", "id: ", "date: ", "source: ", "\n\n", "\n", "# ", "| ", ": ",
    '{"text": "', '{"id": ', '"}', "}", "{", "[", "]", "null", "1e999", '"\\ud800"',
    "<html>", "<body>", "<p>", "</p>", "<div>", "</div>", "<script>", "<!--", "&amp;",
    "<title>", "&#0;", "\r\n", "\r", "\ufeff", "“", "”", '"', "!!!", "...", "Mr. ",
    "Word ", "The council said. ", "- [", "&a [*a]", "*a", "2019-02-30", "\x00",
]  # fmt: skip


@st.composite
def shaped(draw) -> bytes:
    """Bytes shaped like our formats: pieces of front matter, JSON, HTML, text."""
    parts = draw(st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=20)), max_size=40))
    raw = "".join(parts).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        raw += draw(st.binary(max_size=20))
    return raw


def check_items(items: list, path) -> None:
    for item in items:
        assert isinstance(item, (Article, ReadFailure, Skipped)), item
        if isinstance(item, (ReadFailure, Skipped)):
            assert item.reason and isinstance(item.reason, str)
            continue
        assert item.text.strip(), "an article with no text"
        assert len(item.text) <= readers.MAX_ARTICLE_CHARS
        assert id_problem(item.id) is None, item.id
        for p in split_passages(item):  # what the indexer does next must hold too
            assert item.text[p.start : p.end] == p.text


PROPS = settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@PROPS
@given(data=st.one_of(st.binary(max_size=400), shaped()), ext=st.sampled_from(EXTS))
def test_any_bytes_in_any_format_give_articles_or_failures(tmp_path, data, ext):
    path = tmp_path / f"f{ext}"
    path.write_bytes(data)
    started = time.monotonic()
    items = list(read_file(path))  # must not raise
    assert time.monotonic() - started < BOUND
    assert items, "every file gives at least one item"
    check_items(items, path)


@PROPS
@given(lines=st.lists(st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["id", "title", "text", "date", "url", "source", "author", "x"]),
        inner, max_size=6),
    max_leaves=20,
), max_size=8))  # fmt: skip
def test_any_json_values_as_lines_give_articles_or_failures_per_line(tmp_path, lines):
    path = tmp_path / "feed.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in lines), encoding="utf-8")
    items = list(read_file(path))
    check_items(items, path)
    if lines:
        assert len(items) == len(lines)  # one item per line: nothing dropped silently


def test_binary_file_is_refused(tmp_path):
    for ext in (".txt", ".md", ".html", ".jsonl"):
        f = tmp_path / f"bin{ext}"
        f.write_bytes(bytes(range(256)) * 40)
        (item,) = list(read_file(f))
        assert isinstance(item, ReadFailure)
        assert "binary" in item.reason or "UTF-8" in item.reason
    gz = tmp_path / "feed.jsonl"  # a compressed feed under its plain name: one failure
    gz.write_bytes(gzip.compress(b'{"text": "an article"}\n' * 1000))
    (item,) = list(read_file(gz))
    assert isinstance(item, ReadFailure) and "gzip-compressed" in item.reason


def test_invalid_utf8_is_refused_with_the_byte_position(tmp_path):
    f = tmp_path / "latin1.txt"
    f.write_bytes("Title\n\nCafé au lait.".encode("latin-1"))
    (item,) = list(read_file(f))
    assert isinstance(item, ReadFailure) and "invalid UTF-8 at byte 10" in item.reason
    j = tmp_path / "mixed.jsonl"
    j.write_bytes(b'{"text": "good line"}\n{"text": "caf\xe9"}\n')
    good, bad = list(read_file(j))
    assert isinstance(good, Article) and isinstance(bad, ReadFailure)
    assert bad.path.endswith(":2") and "UTF-8" in bad.reason


def test_json_lines_that_are_not_objects(tmp_path):
    f = tmp_path / "feed.jsonl"
    f.write_text('42\n"text"\n[1, 2]\nnull\n{"text": "ok"}\n{"text": ' + "[" * 100000 + "\n")
    items = list(read_file(f))
    assert [type(i).__name__ for i in items] == ["ReadFailure"] * 4 + ["Article", "ReadFailure"]
    assert "expected a JSON object, got int" in items[0].reason
    assert "expected a JSON object, got list" in items[2].reason
    assert items[5].path.endswith(":6")


def test_huge_files_are_refused_before_being_read(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_FILE_BYTES", 1000)
    monkeypatch.setattr(readers, "MAX_HTML_BYTES", 500)
    big = tmp_path / "big.txt"
    big.write_text("Title\n\n" + "word " * 400)
    page = tmp_path / "big.html"
    page.write_text("<html><body><p>" + "word " * 200 + "</p></body></html>")
    (a,), (b,) = list(read_file(big)), list(read_file(page))
    assert isinstance(a, ReadFailure) and "file larger than" in a.reason
    assert isinstance(b, ReadFailure) and "file larger than" in b.reason


def test_a_json_line_too_long_is_skipped_without_reading_it_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(readers, "MAX_LINE_BYTES", 1000)
    f = tmp_path / "feed.jsonl"
    f.write_bytes(
        b'{"id": "before", "text": "fine"}\n'
        + b'{"id": "huge", "text": "'
        + b"a" * 5000
        + b'"}\n'
        + b'{"id": "after", "text": "also fine"}\n'
    )
    items = list(read_file(f))
    assert [getattr(i, "id", None) for i in items] == ["before", None, "after"]
    assert items[1].path.endswith(":2") and "line longer than" in items[1].reason


def test_an_article_of_a_million_words_is_refused_with_a_reason(tmp_path):
    f = tmp_path / "million.jsonl"
    f.write_text(json.dumps({"id": "m", "text": "word " * 1_000_000}) + "\n")
    started = time.monotonic()
    (item,) = list(read_file(f))
    assert isinstance(item, ReadFailure)
    assert "longer than 1000000 characters" in item.reason
    t = tmp_path / "million.txt"
    t.write_text("Title\n\n" + "word " * 1_000_000)
    (item,) = list(read_file(t))
    assert isinstance(item, ReadFailure) and "longer than" in item.reason
    assert time.monotonic() - started < BOUND


def test_the_longest_article_accepted_splits_in_bounded_time(tmp_path):
    text = ("Word " * 30 + "end. ") * (readers.MAX_ARTICLE_CHARS // 160)
    article = readers.article_from_mapping(
        {"id": "long", "text": text[: readers.MAX_ARTICLE_CHARS]}
    )
    started = time.monotonic()
    passages = split_passages(article)
    assert passages and time.monotonic() - started < BOUND


def test_punctuation_runs_split_in_linear_time():
    # the sentence-end pattern was quadratic in a run of marks: 40,000 "!" took a minute
    article = readers.article_from_mapping({"id": "bang", "text": "Hello" + "!" * 200_000})
    started = time.monotonic()
    split_passages(article)
    assert time.monotonic() - started < 1.0


def test_deeply_nested_html_gives_an_article_or_a_failure(tmp_path):
    f = tmp_path / "deep.html"
    f.write_text(
        "<html><body>" + "<div>" * 50_000 + "<p>" + "Deep text in a paragraph. " * 20
        + "</p>" + "</div>" * 50_000 + "</body></html>"
    )  # fmt: skip
    started = time.monotonic()
    items = list(read_file(f))
    assert time.monotonic() - started < BOUND
    check_items(items, f)


def test_deeply_nested_yaml_front_matter(tmp_path):
    f = tmp_path / "deep.md"
    f.write_text("---\ntitle: " + "[" * 20_000 + "]" * 20_000 + "\n---\n\nBody text.\n")
    (item,) = list(read_file(f))
    assert isinstance(item, ReadFailure)
    bomb = tmp_path / "bomb.md"
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, name in zip("abcdefg", "bcdefgh", strict=True):
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    bomb.write_text("---\n" + "\n".join(lines) + "\ntitle: *h\n---\n\nBody text.\n")
    started = time.monotonic()
    (item,) = list(read_file(bomb))
    assert isinstance(item, ReadFailure) and "'title' must be a string" in item.reason
    assert time.monotonic() - started < BOUND


def test_one_bad_file_never_stops_the_others(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"\x00\x01")
    (tmp_path / "b.jsonl").write_text("[]\n")
    (tmp_path / "c.txt").write_text("Good title\n\nGood body.\n")
    (tmp_path / "d.exe").write_bytes(b"MZ")
    kinds = [type(i).__name__ for i in read_paths([tmp_path])]
    assert kinds == ["ReadFailure", "ReadFailure", "Article", "Skipped"]
