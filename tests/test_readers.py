import json

import pytest

from newsquarry.search.ingest.readers import Article, ReadFailure, Skipped, read_paths

HTML_PAGE = """<!DOCTYPE html>
<html lang="en"><head>
<meta charset="utf-8">
<title>Aid convoy reaches the border | The Daily Example</title>
<meta property="og:title" content="Aid convoy reaches the border">
<meta property="article:published_time" content="2019-02-23T10:00:00Z">
<meta property="og:site_name" content="The Daily Example">
</head><body>
<nav><a href="/">Home</a> <a href="/world">World</a> <a href="/sport">Sport</a></nav>
<header><h1>Aid convoy reaches the border</h1></header>
<article>
<p>Trucks carrying humanitarian aid reached the Colombian border on Saturday, where opposition
volunteers waited to carry the food and medicine across the bridge into Venezuela.</p>
<p>"We will not stop until the aid gets through," said Juan Guaidó, who has been recognised as
interim president by dozens of countries. Soldiers loyal to Nicolás Maduro blocked the bridge.</p>
<p>The army has so far refused to let the convoy pass, and clashes were reported in several
towns along the border as crowds gathered to see whether the soldiers would disobey orders.</p>
</article>
<footer>Copyright The Daily Example. <a href="/privacy">Privacy</a></footer>
</body></html>
"""


def read_all(path):
    items = list(read_paths([path]))
    return (
        [i for i in items if isinstance(i, Article)],
        [i for i in items if isinstance(i, ReadFailure)],
        [i for i in items if isinstance(i, Skipped)],
    )


def test_plain_text_seed_title_source_and_body(seed_file, seed_doc):
    assert seed_doc.id == "000_e23b3335c9472580"
    assert seed_doc.title == (
        '"They will torture you": former Venezuelan soldiers risk a false trip'
    )
    assert seed_doc.source == "News from the world"
    assert seed_doc.text.startswith("A a month ago, Harry Solano")
    # the text is kept as it is, translation artefacts included
    assert 'violence, "Solano said.' in seed_doc.text
    assert "embbady" in seed_doc.text and "mbad " in seed_doc.text


def test_plain_text_front_matter(tmp_path):
    f = tmp_path / "story.txt"
    f.write_text(
        "id: my-story\ndate: 2019-02-23T08:00:00Z\nurl: https://example.org/s\nsource: Wire\n\n"
        "A title: with a colon\n\nFirst paragraph.\n\nSecond paragraph.\n",
        encoding="utf-8",
    )
    (a,), fails, _ = read_all(f)
    assert not fails
    assert (a.id, a.date, a.url, a.source) == (
        "my-story",
        "2019-02-23",
        "https://example.org/s",
        "Wire",
    )
    assert a.title == "A title: with a colon"
    assert a.text == "First paragraph.\n\nSecond paragraph."


def test_markdown_with_yaml_front_matter(tmp_path):
    f = tmp_path / "note.md"
    f.write_text(
        "---\nid: md-1\ndate: 2020-05-01\nsource: Blog\nauthor: Ana Pérez\n---\n"
        "# The heading title\n\nBody paragraph one.\n\nBody paragraph two.\n",
        encoding="utf-8",
    )
    (a,), fails, _ = read_all(f)
    assert not fails
    assert (a.id, a.title, a.date, a.source, a.author) == (
        "md-1", "The heading title", "2020-05-01", "Blog", "Ana Pérez"
    )  # fmt: skip
    assert a.text == "Body paragraph one.\n\nBody paragraph two."


def test_jsonl_lines_and_bad_lines_reported(tmp_path):
    f = tmp_path / "feed.jsonl"
    good = {"id": "j1", "title": "One", "text": "Text one.", "date": "2021-01-02", "source": "S"}
    f.write_text(
        json.dumps(good) + "\n"
        + "not json\n"
        + json.dumps([1, 2]) + "\n"
        + json.dumps({"id": "j2", "title": "No text"}) + "\n"
        + json.dumps({"id": "j3", "title": "Three", "text": "Text three.", "date": "yesterday"})
        + "\n" + json.dumps({"title": "No id", "text": "Text four."}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    arts, fails, _ = read_all(f)
    assert [a.id for a in arts][0] == "j1" and arts[0].date == "2021-01-02"
    assert len(arts) == 2 and arts[1].id.startswith("a-")  # id derived from content
    reasons = {fl.path.rsplit(":", 1)[1]: fl.reason for fl in fails}
    assert reasons["2"].startswith("invalid JSON")
    assert "expected a JSON object" in reasons["3"]
    assert "text" in reasons["4"]
    assert "date" in reasons["5"]


def test_html_main_text_title_and_date(tmp_path):
    f = tmp_path / "page.html"
    f.write_text(HTML_PAGE, encoding="utf-8")
    (a,), fails, _ = read_all(f)
    assert not fails
    assert a.title == "Aid convoy reaches the border"
    assert a.date == "2019-02-23"
    assert "said Juan Guaidó" in a.text
    assert "Privacy" not in a.text and "Sport" not in a.text  # boilerplate removed
    assert a.text.count("\n\n") >= 2  # paragraphs kept apart


def test_bad_files_are_named_with_reasons_and_good_ones_read(tmp_path, seed_file):
    (tmp_path / "good.txt").write_text(seed_file.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "other.md").write_text("# T\n\nSome text.\n", encoding="utf-8")
    (tmp_path / "binary.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00IHDR" + bytes(range(256)))
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "latin1.txt").write_bytes("Titre\n\nCaf\xe9 cr\xe8me".encode("latin-1"))
    (tmp_path / "photo.png").write_bytes(b"\x89PNG")
    arts, fails, skipped = read_all(tmp_path)
    assert sorted(a.id for a in arts) == ["good", "sub-other"]
    by_name = {f.path.rsplit("/", 1)[1]: f.reason for f in fails}
    assert by_name["binary.txt"].startswith("binary file")
    assert by_name["empty.txt"] == "empty file"
    assert "invalid UTF-8" in by_name["latin1.txt"]
    assert [s.path.rsplit("/", 1)[1] for s in skipped] == ["photo.png"]


def test_missing_path_is_a_failure(tmp_path):
    _, fails, _ = read_all(tmp_path / "nope")
    assert fails and fails[0].reason == "no such file or folder"


@pytest.mark.parametrize("content", ["   \n\n  \n", "\t\n"])
def test_whitespace_only_files_fail(tmp_path, content):
    f = tmp_path / "blank.txt"
    f.write_text(content, encoding="utf-8")
    arts, fails, _ = read_all(f)
    assert not arts and fails[0].reason == "no text (only whitespace)"


def test_single_block_file_is_its_own_title_and_text(tmp_path):
    f = tmp_path / "one.txt"
    f.write_text("Just one line of news.\n\n  \n", encoding="utf-8")
    (a,), _, _ = read_all(f)
    assert a.text == "Just one line of news." and a.title == "Just one line of news."


@pytest.mark.parametrize(
    "date, want",
    [
        ("2024-01-01", "2024-01-01"),
        ("2024-01-01T10:30:00Z", "2024-01-01"),
        ("2024-01-01T23:30:00+02:00", "2024-01-01"),
        (" 2024-01-01 ", "2024-01-01"),
        (None, None),
        ("", None),
    ],
)
def test_iso_dates_are_accepted(date, want):
    from newsquarry.search.ingest.readers import article_from_mapping

    assert article_from_mapping({"text": "Body.", "date": date}).date == want


@pytest.mark.parametrize(
    "date",
    [
        '2024-01-01"><script>alert(1)</script>',
        "2024-01-01 and more",
        "2024-13-01",
        "yesterday",
        "2024-01-01T25:00",
    ],
)
def test_a_date_with_anything_after_it_is_refused_with_the_reason(tmp_path, date):
    """The whole value must be a date: it is not cut to its first ten characters."""
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": "d", "text": "Body.", "date": date}) + "\n", "utf-8")
    arts, fails, _ = read_all(path)
    assert arts == [] and len(fails) == 1
    assert "not an ISO 8601 date" in fails[0].reason and date[:20] in fails[0].reason
