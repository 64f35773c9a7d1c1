"""Hostile text at every entrance: lone surrogates, control characters, NUL-only texts,
non-ASCII digits in dates (issue 33).

Property-based (hypothesis) over articles of arbitrary Unicode, lone surrogates and
control characters included, through each entrance: the JSON Lines reader, the
``newsquarry index`` command, the Python API (``Index.add``) and the HTTP API (POST and
PUT). Each must never fail with a traceback or a 500; valid articles are kept (a batch
writes its valid ones), invalid ones are refused with a reason. The oracle below is
written from the rules (docs/api.md, "Text"), not from the code that applies them.
"""

from __future__ import annotations

import json
import tempfile
import unicodedata
from pathlib import Path

import pytest
from api_support import TOKEN, TagEnricher, build_index
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from newsquarry.api import create_app
from newsquarry.search import Index, InvalidRequest
from newsquarry.search.cli.app import cli
from newsquarry.search.ingest import indexer
from newsquarry.search.ingest.readers import ReadFailure, read_jsonl

AUTH = {"Authorization": f"Bearer {TOKEN}"}
PROPS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

# any code point: hypothesis leaves lone surrogates out of text unless asked
CHARS = st.one_of(
    st.characters(exclude_categories=()),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    st.sampled_from("\x00\x01\x0b\x0c\x1f\x7f\x85\x9f\t\n\r \u2028\ufffe\uffff\ufdd0"),
    st.sampled_from("abc Caracas. "),
)
HOSTILE = st.text(CHARS, max_size=30)
DATES = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "2024-01-31",
            "2019-02-23T10:00:00Z",
            "٢٠٢٤-٠١-٠١",
            "２０２４-０１-０１",
            "2024-01-01T١٠:00",
            "2024-0\ud8001-01",
        ]
    ),  # fmt: skip
)


@st.composite
def records(draw, n_min: int = 1, n_max: int = 4) -> list[dict]:
    out = []
    for i in range(draw(st.integers(n_min, n_max))):
        text = draw(st.one_of(HOSTILE, st.just("Plain text about Caracas."), st.just("\x00" * 5)))
        record = {"id": f"h-{i}" + draw(st.sampled_from(["", "", "\ud800", "x"])), "text": text}
        for key in ("title", "source", "author"):
            if draw(st.booleans()):
                record[key] = draw(HOSTILE)
        date = draw(DATES)
        if date is not None:
            record["date"] = date
        out.append(record)
    # as JSON carries them: a high surrogate followed by a low one is one character
    # ("\ud83d\ude00" is 😀), only lone ones stay
    return json.loads(json.dumps(out))


def _surrogate(value: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in value)


def valid(record: dict) -> bool:
    """The rules, independently of the code: no lone surrogate anywhere, a text with
    something besides whitespace and control characters, a date in ASCII digits."""
    if any(_surrogate(str(v)) for v in record.values()):
        return False
    if not any(not c.isspace() and unicodedata.category(c) != "Cc" for c in record["text"]):
        return False
    date = record.get("date")
    return date is None or date.isascii()


def assert_clean(text: str) -> None:
    """Stored text: no lone surrogate, no control character but tab, LF and CR."""
    assert not _surrogate(text)
    assert all(unicodedata.category(c) != "Cc" or c in "\t\n\r" for c in text), repr(text)


def _jsonl(path: Path, batch: list[dict]) -> Path:
    # json.dumps escapes lone surrogates as \udXXX, exactly what a hostile feed holds
    path.write_text("".join(json.dumps(r) + "\n" for r in batch), encoding="ascii")
    return path


# ------------------------------------------------------------------ reader
@PROPS
@given(batch=records())
def test_jsonl_reader_refuses_invalid_text_per_line(batch):
    with tempfile.TemporaryDirectory() as tmp:
        items = list(read_jsonl(_jsonl(Path(tmp) / "feed.jsonl", batch)))
    assert len(items) == len(batch)
    for record, item in zip(batch, items, strict=True):
        if valid(record):
            assert not isinstance(item, ReadFailure), (record, item)
            assert item.id == record["id"]
            for value in (item.text, item.title, item.source or "", item.author or ""):
                assert_clean(value)
            assert item.text.strip()
        else:
            assert isinstance(item, ReadFailure), (record, item)
            assert item.reason and not _surrogate(item.reason)


def test_named_cases_of_the_reader(tmp_path):
    feed = _jsonl(tmp_path / "feed.jsonl", [
        {"id": "ok", "title": "Title\x00", "text": "Good\x00 text\x0cnext", "source": "S\x85ource"},
        {"id": "sur", "text": "bad \ud800 text"},
        {"id": "nul", "text": "\x00\x00\x00"},
        {"id": "arabic", "text": "x", "date": "٢٠٢٤-٠١-٠١"},
        {"id": "fullwidth", "text": "x", "date": "２０２４-01-01"},
    ])  # fmt: skip
    ok, sur, nul, arabic, fullwidth = read_jsonl(feed)
    assert (ok.title, ok.text, ok.source) == ("Title", "Good text\nnext", "S ource")
    assert "lone surrogate (U+D800) at character 4" in sur.reason
    assert sur.path.endswith("feed.jsonl:2")
    assert "'text' is empty" in nul.reason
    assert "ASCII digits" in arabic.reason and "ASCII digits" in fullwidth.reason


# ------------------------------------------------------------------ the command line
@pytest.fixture()
def tag_enricher(monkeypatch):
    monkeypatch.setattr(indexer, "default_enricher", lambda **_: TagEnricher())


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(batch=records())
def test_index_command_keeps_valid_articles_and_reports_the_others(tag_enricher, batch):
    with tempfile.TemporaryDirectory() as tmp:
        feed = _jsonl(Path(tmp) / "feed.jsonl", batch)
        ix = str(Path(tmp) / "ix")
        r = CliRunner().invoke(cli, ["index", str(feed), "--index", ix, "--no-count"])
        assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
        assert "Traceback" not in r.output
        good = {rec["id"] for rec in batch if valid(rec)}
        bad = [n for n, rec in enumerate(batch, 1) if not valid(rec)]
        for n in bad:
            assert f"failed: {feed}:{n}: " in r.stderr
        assert f"{len(bad)} failed" in r.stdout
        assert r.exit_code == (0 if good else 2)
        if good:
            with Index(ix, create=False) as index:
                assert index.stats()["articles"] == len(good)
                for ident in good:
                    assert_clean(index.article(ident)["text"])


def test_index_command_with_a_lone_surrogate_indexes_the_rest(tag_enricher, tmp_path):
    feed = _jsonl(tmp_path / "feed.jsonl", [
        {"id": "a", "text": "First article."},
        {"id": "b", "title": "Bad \udc80", "text": "Second."},
        {"id": "c", "text": "Third article."},
    ])  # fmt: skip
    ix = str(tmp_path / "ix")
    for _ in range(2):  # and on a rerun
        r = CliRunner().invoke(cli, ["index", str(feed), "--index", ix])
        assert r.exit_code == 0 and r.exception is None, r.output
        assert f"failed: {feed}:2: 'title' holds a lone surrogate (U+DC80)" in r.stderr
    assert "0 added, 0 replaced, 2 unchanged, 0 skipped, 1 failed" in r.stdout


# ------------------------------------------------------------------ the Python API
@PROPS
@given(batch=records())
def test_library_add_refuses_an_invalid_record_with_its_reason(batch):
    with tempfile.TemporaryDirectory() as tmp, Index(Path(tmp) / "ix") as index:
        bad = [n for n, rec in enumerate(batch) if not valid(rec)]
        if bad:
            with pytest.raises(InvalidRequest) as err:
                index.add(batch, enricher=TagEnricher())
            assert err.value.field == f"articles[{bad[0]}]"
            assert not _surrogate(err.value.message)
            assert index.stats()["articles"] == 0  # refused before anything is written
            batch = [rec for rec in batch if valid(rec)]
        report = index.add(batch, enricher=TagEnricher())
        assert sorted(report.added) == sorted(rec["id"] for rec in batch)
        for rec in batch:
            assert_clean(index.article(rec["id"])["text"])


def test_library_checks_article_objects_too(tmp_path):
    from newsquarry.search.core.models import Article

    with Index(tmp_path / "ix") as index:
        with pytest.raises(InvalidRequest, match="lone surrogate"):
            index.add([Article(id="a", title="T", text="x\ud800")], enricher=TagEnricher())
        with pytest.raises(InvalidRequest, match="'text'"):
            index.add([Article(id="a", title="T", text="\x00\x00")], enricher=TagEnricher())
        report = index.add([Article(id="a", title="T\x00", text="ok\x00")], enricher=TagEnricher())
        assert report.added == ["a"]
        assert index.article("a")["text"] == "ok" and index.article("a")["title"] == "T"
        # index_articles itself, whatever called it: reported per article, never a crash
        report = indexer.index_articles(
            index.store, [Article(id="b", title="T", text="y\udfff"),
                          Article(id="c", title="T", text="fine")], enricher=TagEnricher(),
        )  # fmt: skip
        assert report.added == ["c"]
        assert "lone surrogate" in report.failed[0]["reason"] and report.failed[0]["id"] == "b"


# ------------------------------------------------------------------ the HTTP API
@pytest.fixture(scope="module")
def client(tmp_path_factory):
    path = tmp_path_factory.mktemp("api-text")
    build_index(path / "ix")
    app = create_app({"index": str(path / "ix"), "write_token": TOKEN, "lock_timeout": 5.0},
                     enricher=TagEnricher())  # fmt: skip
    return app.test_client()


def _send(client, method: str, url: str, body: object):
    return client.open(url, method=method, data=json.dumps(body), headers=AUTH,
                       content_type="application/json")  # fmt: skip


@PROPS
@given(batch=records())
def test_api_post_writes_the_valid_articles_and_reports_the_others(client, batch):
    r = _send(client, "POST", "/v1/articles", {"articles": batch})
    good = [rec["id"] for rec in batch if valid(rec)]
    bad = [n for n, rec in enumerate(batch) if not valid(rec)]
    if not good:
        assert r.status_code == 422, r.get_data(as_text=True)
        assert r.mimetype == "application/problem+json"
        assert set(r.get_json()["errors"]) == {f"articles.{n}" for n in bad}
        return
    assert r.status_code == 200, r.get_data(as_text=True)
    body = r.get_json()
    assert sorted(body["added"] + body["replaced"] + body["unchanged"]) == sorted(good)
    assert sorted(f["index"] for f in body["failed"]) == bad
    assert all(f["reason"] for f in body["failed"])
    for ident in good:
        got = client.get(f"/v1/articles/{ident}")
        assert got.status_code == 200
        assert_clean(got.get_json()["text"])


@PROPS
@given(record=records(1, 1).map(lambda b: b[0]))
def test_api_put_is_200_or_422_never_500(client, record):
    ident = record.pop("id")
    r = _send(client, "PUT", "/v1/articles/put-" + ident.replace("\ud800", "x"), record)
    record["id"] = ident
    if valid({**record, "id": "x"}):
        assert r.status_code == 200, r.get_data(as_text=True)
    else:
        assert r.status_code == 422, r.get_data(as_text=True)
        assert r.mimetype == "application/problem+json" and r.get_json()["detail"]


def test_api_named_cases(client):
    r = _send(client, "POST", "/v1/articles", {"articles": [
        {"id": "t-ok", "text": "A good one."},
        {"id": "t-sur", "text": "bad \ud800"},
        {"id": "t-id\ud800", "text": "id is bad"},
        {"id": "t-nul", "text": "\x00"},
        {"id": "t-date", "text": "x", "date": "２０２４-01-01"},
    ]})  # fmt: skip
    assert r.status_code == 200, r.get_data(as_text=True)
    body = r.get_json()
    assert body["added"] + body["replaced"] + body["unchanged"] == ["t-ok"]
    reasons = {f["index"]: f["reason"] for f in body["failed"]}
    assert set(reasons) == {1, 2, 3, 4}
    assert "lone surrogate (U+D800)" in reasons[1] and "lone surrogate" in reasons[2]
    assert [f["id"] for f in body["failed"]][1] == "t-id\\ud800"  # echoed, escaped
    assert "empty" in reasons[3] and "date" in reasons[4]
    r = _send(client, "PUT", "/v1/articles/t-put", {"title": "\udfff", "text": "x"})
    assert r.status_code == 422 and "lone surrogate" in r.get_json()["detail"]
    r = _send(client, "PUT", "/v1/articles/t-put", {"text": "x", "date": "٢٠٢٤-٠١-٠١"})
    assert r.status_code == 422


# ------------------------------------------------------------------ ids in URLs
@pytest.mark.parametrize("raw", ["%FF", "%ED%A0%80", "ok%C3", "a%80b", "%C0%AF"])
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_invalid_utf8_in_a_path_id_is_400_not_rewritten(client, raw, method):
    body = {"text": "Written under a replaced id."} if method == "PUT" else None
    r = client.open(f"/v1/articles/{raw}", method=method, headers=AUTH,
                    **({"json": body} if body else {}))  # fmt: skip
    assert r.status_code == 400, r.get_data(as_text=True)
    assert r.mimetype == "application/problem+json"
    problem = r.get_json()
    assert problem["title"] == "Invalid path" and "UTF-8" in problem["detail"]
    # nothing was written under U+FFFD
    assert client.get("/v1/articles/%EF%BF%BD").status_code == 404
    assert client.get("/v1/passages/%FF%23p1").status_code == 400
    assert client.get("/passages/%FF/1").status_code == 400


def test_valid_utf8_ids_in_paths_still_work(client):
    r = _send(client, "PUT", "/v1/articles/caf%C3%A9-%F0%9F%98%80", {"text": "Coffee."})
    assert r.status_code == 200, r.get_data(as_text=True)
    assert client.get("/v1/articles/café-😀").get_json()["id"] == "café-😀"


def test_a_file_name_that_is_not_utf8_is_stored_as_text(tag_enricher, tmp_path):
    """A path read from the disk holds surrogate escapes (os.fsdecode): stored as it was,
    the article could not be returned by the API (a 500)."""
    folder = tmp_path / "feed"
    folder.mkdir()
    with open(bytes(folder) + b"/ok\xff.txt", "wb") as fh:  # the name as bytes
        fh.write(b"A title\n\nSome body text.\n")
    ix = str(tmp_path / "ix")
    r = CliRunner().invoke(cli, ["index", str(folder), "--index", ix])
    assert r.exit_code == 0, r.output
    app = create_app({"index": ix}, enricher=TagEnricher())
    got = app.test_client().get("/v1/articles/ok")
    assert got.status_code == 200, got.get_data(as_text=True)
    assert got.get_json()["path"].endswith("ok\\udcff.txt")


# ------------------------------------------------------------------ queries
@pytest.mark.parametrize(
    ("query", "name"),
    [
        ("q=%FF", "q"),
        ("q=%ED%A0%80", "q"),
        ("q=army+%C3", "q"),
        ("person=%ED%A0%80", "person"),
        ("q=army&speaker=a%80b", "speaker"),
    ],  # fmt: skip
)
def test_invalid_utf8_in_a_query_parameter_is_400_not_a_search_for_everything(client, query, name):
    """Decoded with errors replaced, "q=%FF" was U+FFFD, a word that matches nothing: the
    search answered every passage."""
    for path in ("/v1/search", "/v1/quotes", "/v1/facets/person"):
        r = client.get(f"{path}?{query}")
        assert r.status_code == 400, (path, r.get_data(as_text=True))
        assert r.mimetype == "application/problem+json"
        assert name in r.get_json()["errors"] and "UTF-8" in r.get_json()["detail"]
    assert client.get("/v1/search?q=caf%C3%A9&person=Juan+Guaid%C3%B3").status_code == 200


def test_a_lone_surrogate_in_a_query_or_filter_is_refused_by_the_library(tmp_path):
    ix = Index(tmp_path / "ix")
    ix.add([{"id": "a", "text": "The army said the aid would arrive."}], enricher=TagEnricher())
    for options in ({"q": "army \ud800"}, {"q": "", "filters": {"person": ["\udfff"]}}):
        with pytest.raises(InvalidRequest, match="lone surrogate"):
            ix.search(**options)
    assert ix.search("army").total == 1
    ix.close()
