"""Syndication: one wire story republished by several outlets is one story (issue 36).

A real index on disk: a wire story and three copies (a new headline and dateline, one cut
short, one lightly edited with a paragraph added), another story on the same event, two
templated reports that differ only in their figures, and a repeat a month later. Checked
through the library (``group="story"``, ``dedupe="story"``, ``copies``, ``Index.article``),
across a merge, a delete and damaged derived files, the API and the CLI.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from newsquarry.api import create_app
from newsquarry.search.archive import stories as story_links
from newsquarry.search.archive import storysigs
from newsquarry.search.cli.app import cli
from newsquarry.search.core.models import Article, Entity, Quote
from newsquarry.search.engine import dvstore
from newsquarry.search.engine.views import DocValuesCache, cache_for
from newsquarry.search.library import Index

WIRE = [
    "The central bank raised its main interest rate by half a point on Tuesday, to 4.5 "
    "percent, the first increase in three years, saying prices were rising faster than "
    "it had expected and that the labour market remained tight.",
    '"We cannot wait for inflation to become entrenched," said Maria Lopez, the governor, '
    "at a news conference in the capital after the board's monthly meeting.",
    "Economists had been divided over the timing of the move. Several banks had forecast "
    "a pause until the autumn, pointing to weak retail sales and slowing factory orders "
    "in the first quarter of the year.",
    "The currency rose sharply against the dollar after the announcement, while shares "
    "of builders and retailers fell in afternoon trading on the stock exchange.",
    "The board will meet again in six weeks. Lopez declined to say whether further "
    "increases would follow, telling reporters that every decision would depend on the data.",
]
SAME_EVENT = (
    "Homeowners with variable mortgages face higher monthly payments after Tuesday's "
    "decision by the central bank, brokers warned. Maria Lopez, the governor, has argued "
    "for months that inflation must be tamed. Estate agents in the capital reported that "
    "buyers were already hesitating, and two lenders said they would review their offers "
    "next week. Consumer groups urged families to check the terms of their loans and to "
    "seek advice before the summer, when many fixed deals come to an end."
)
TEMPLATE = (
    "Northwind Traders reported quarterly net profit of {a} million dollars, against {b} "
    "million dollars a year earlier, on sales of {c} million dollars. The company said "
    "demand from its largest customers had held up well and that it expected the second "
    "half of the year to be in line with the first. The board proposed a dividend of {d} "
    "cents a share, payable next month to shareholders on the register at the end of the "
    "quarter, and confirmed its forecast for the full year."
)


def articles() -> list[Article]:
    wire = "\n\n".join(WIRE)
    edited = "\n\n".join(
        [WIRE[0].replace("on Tuesday", "this week"), WIRE[1], WIRE[2], WIRE[3],
         WIRE[4].replace("telling reporters", "saying"),
         "Analysts at two large banks now expect a second rise before the end of the year."]
    )  # fmt: skip
    return [
        Article(
            id="wire",
            title="Central bank raises rates",
            text=wire,
            source="Wire",
            date="2024-03-04",
        ),  # fmt: skip
        Article(
            id="herald",
            title="Rates up: what it means",
            source="Herald",
            text="CAPITAL (Wire) - " + wire,
            date="2024-03-05",
        ),  # fmt: skip
        Article(
            id="gazette",
            title="Bank lifts rates",
            source="Gazette",
            text="\n\n".join(WIRE[:3]),
            date="2024-03-06",
        ),  # fmt: skip
        Article(
            id="echo", title="Interest rates rise", source="Echo", text=edited, date="2024-03-07"
        ),  # fmt: skip
        Article(
            id="mortgages",
            title="Mortgage pain ahead",
            source="Herald",
            text=SAME_EVENT,
            date="2024-03-05",
        ),  # fmt: skip
        Article(
            id="q1",
            title="Northwind results",
            source="Wire",
            date="2024-03-05",
            text=TEMPLATE.format(a="12.4", b="10.1", c="310", d="15"),
        ),  # fmt: skip
        Article(
            id="q2",
            title="Northwind results",
            source="Wire",
            date="2024-03-06",
            text=TEMPLATE.format(a="8.7", b="9.9", c="280", d="12"),
        ),  # fmt: skip
        Article(
            id="repeat",
            title="Central bank raises rates",
            text=wire,
            source="Archive",
            date="2024-04-20",
        ),  # fmt: skip
    ]


QUOTE = re.compile(r'"([^"]+)," said (Maria Lopez)')


class Tagger:
    """Tags Maria Lopez and the quotation written ``"...," said Maria Lopez``."""

    def enrich(self, items):
        for article, passages in items:
            for p in passages:
                p.entities = [
                    Entity(text=m.group(0), name="Maria Lopez", type="person",
                           start=m.start(), end=m.end())
                    for m in re.finditer(r"Maria Lopez", p.text)
                ]  # fmt: skip
                p.quotes = [
                    Quote(text=m.group(1), start=m.start(1), end=m.end(1), kind="direct",
                          speaker=m.group(2), speaker_mention=m.group(2), cue="said")
                    for m in QUOTE.finditer(p.text)
                ]  # fmt: skip
            yield article, passages


@pytest.fixture()
def ix(tmp_path):
    index = Index(tmp_path / "ix")
    arts = articles()
    index.add(arts[:4], enricher=Tagger())  # two commits: two segments
    index.add(arts[4:], enricher=Tagger())
    yield index
    index.close()


def story_of(index: Index) -> dict[str, tuple[str, int]]:
    """article id -> (story, copies), from the hits of a search for everything."""
    r = index.search("", per_page=100)
    return {h.article_id: (h.story, h.copies) for h in r.hits}


def test_copies_are_one_story_and_others_are_not(ix):
    got = story_of(ix)
    for copy in ("wire", "herald", "gazette", "echo"):
        assert got[copy] == ("wire", 3), copy  # the first publication names the story
    for alone in ("mortgages", "q1", "q2", "repeat"):
        assert got[alone] == (alone, 0), alone  # same event; other figures; a month later
    r = ix.search("central bank", group="story", per_page=10)
    assert r.total_stories == len({h.story for h in r.hits}) == len(r.hits)
    best = next(h for h in r.hits if h.story == "wire")
    assert {i.split("#")[0] for i in best.more_ids} | {best.article_id} >= {"herald", "echo"}
    listed = ix.article("echo")["copies"]
    assert [c["id"] for c in listed] == ["wire", "herald", "gazette", "echo"]
    assert listed[0]["first"] and not any(c["first"] for c in listed[1:])
    changed = {c["id"]: c["changed"] for c in listed}
    assert changed["herald"] < 0.15 and changed["gazette"] < 0.15  # as published / cut short
    assert ix.article("mortgages")["copies"] == []


def test_dedupe_counts_a_story_once(ix):
    raw = ix.quotes("", facets=["speaker", "source"])
    once = ix.quotes("", facets=["speaker", "source"], dedupe="story")
    counts = {v.value: v.count for v in raw.facets["speaker"].values}
    assert counts == {"Maria Lopez": 5}  # four copies and the repeat a month later
    assert {v.value: v.count for v in once.facets["speaker"].values} == {"Maria Lopez": 2}
    assert raw.total == once.total == 5  # hits are not deduplicated, counts are
    sources = {v.value: v.count for v in once.facets["source"].values}
    assert sources == {"Wire": 1, "Herald": 1, "Gazette": 1, "Echo": 1, "Archive": 1}


def test_stories_survive_a_merge_and_follow_a_delete(ix, tmp_path):
    before = story_of(ix)
    ix.optimize()
    assert story_of(ix) == before
    ix.delete("wire")
    got = story_of(ix)
    assert got["herald"] == ("herald", 2) and got["echo"] == ("herald", 2)


def test_damaged_or_missing_derived_files_are_made_again(ix):
    before = story_of(ix)
    folder = Path(ix.path)
    saved = folder / story_links.FILE
    assert saved.exists()
    saved.write_bytes(b"not a numpy file")
    for f in folder.glob(f"*{storysigs.EXT}"):
        f.unlink()
    storysigs._segments.clear()
    fresh = Index(folder)
    try:
        assert story_of(fresh) == before
    finally:
        fresh.close()


def test_the_api_and_the_cli_show_stories(ix):
    ix.close()
    client = create_app({"index": str(ix.path)}).test_client()
    body = client.get("/v1/search?group=story&per_page=20").get_json()
    assert body["total_stories"] == 5 and body["total_pages"] == 1
    hit = next(h for h in body["hits"] if h["story"] == "wire")
    assert hit["copies"] == 3
    counts = client.get("/v1/facets/speaker?mode=quotes&dedupe=story").get_json()["values"]
    assert [(v["value"], v["count"]) for v in counts] == [("Maria Lopez", 2)]
    article = client.get("/v1/articles/gazette").get_json()
    assert [c["id"] for c in article["copies"]] == ["wire", "herald", "gazette", "echo"]
    bad = client.get("/v1/search?dedupe=nope")
    assert bad.status_code == 400 and "dedupe" in bad.get_json()["errors"]
    params = {p["name"] for p in client.get("/openapi.json").get_json()["paths"]["/v1/search"]
              ["get"]["parameters"]}  # fmt: skip
    assert "dedupe" in params

    runner = CliRunner()
    env = {"NO_COLOR": "1", "NEWSQUARRY_DAEMON": "0"}
    shown = runner.invoke(cli, ["--index", str(ix.path), "show", "echo"], env=env)
    assert shown.exit_code == 0, shown.output
    assert "The same story in 3 other articles" in shown.stdout
    assert "wire  Wire · 2024-03-04 · first published" in shown.stdout
    grouped = runner.invoke(cli, ["--index", str(ix.path), "search", "", "--group", "story",
                                  "--json", "-n", "20"], env=env)  # fmt: skip
    assert json.loads(grouped.stdout)["total_stories"] == 5
    once = runner.invoke(cli, ["--index", str(ix.path), "facets", "speaker", "--mode", "quotes",
                               "--dedupe", "story", "--json"], env=env)  # fmt: skip
    assert [(v["value"], v["count"]) for v in json.loads(once.stdout)["values"]] == [
        ("Maria Lopez", 2)
    ]


def test_a_new_process_maps_the_saved_stories_by_key_id(ix):
    """The saved stories hold the grouped articles as this state's key-table ids too: a
    store opened afresh on the same state (as each new process is) maps them with numpy,
    reads the sources and dates only for a copies list, and answers as linking did; a
    store whose key ids are not the table's reads them by article id, the same."""
    before = story_of(ix)
    copies = ix.article("herald")["copies"]
    assert [c["id"] for c in copies] == ["wire", "herald", "gazette", "echo"]
    folder = Path(ix.path)
    ix.close()
    fresh = Index(folder)
    try:
        assert story_of(fresh) == before
        view = cache_for(fresh.store).view(fresh.store.searcher())
        st = story_links._states[view]
        assert isinstance(st.sources, story_links._Saved)  # mapped, not linked or looked up
        assert fresh.article("herald")["copies"] == copies
    finally:
        fresh.close()
    DocValuesCache.key_tables = False  # registries filled segment by segment: other ids
    try:
        other = Index(folder)
        try:
            assert story_of(other) == before
            view = cache_for(other.store).view(other.store.searcher())
            assert isinstance(story_links._states[view].sources, dict)
            assert other.article("herald")["copies"] == copies
        finally:
            other.close()
    finally:
        DocValuesCache.key_tables = True


def test_stories_saved_by_ids_only_are_saved_again_with_key_ids(ix):
    """A file saved before the key ids were (article ids only, in the ``.npz`` saved
    before ``FILE``) is read as before, and saved again as ``FILE`` with the key ids
    once (the ``.npz`` removed), so the processes after it map them."""
    before = story_of(ix)
    folder = Path(ix.path)
    ix.close()
    saved = folder / story_links.FILE
    src = dvstore.read(folder, saved.stem, 0, ext=saved.suffix)
    older = {k: np.array(src.array(k)) for k in ("doc", "sim", "kept")}
    older["crc"] = np.array(src.meta["crc"])
    del src
    saved.unlink()
    with open(folder / story_links.OLD_FILE, "wb") as fh:
        np.savez(fh, **older)
    for _ in range(2):
        fresh = Index(folder)
        try:
            assert story_of(fresh) == before
            view = cache_for(fresh.store).view(fresh.store.searcher())
            kinds = type(story_links._states[view].sources)
        finally:
            fresh.close()
    assert kinds is story_links._Saved  # the second store read the key ids
    assert saved.exists() and not (folder / story_links.OLD_FILE).exists()
    src = dvstore.read(folder, saved.stem, 0, ext=saved.suffix)
    assert len(src.array("gid")) == len(older["sim"]) and src.meta["table"]


def test_saved_stories_with_a_changed_byte_are_linked_again(ix):
    """Every part of the saved file that answers read is checked (the document by its CRC;
    the state, key ids, similarities and kept shares by another): a flipped byte in the
    header or in any array is not trusted, the stories are linked again and saved whole.
    (The zero bytes that align the arrays are read by nothing.)"""
    before = story_of(ix)
    folder = Path(ix.path)
    ix.close()
    saved = folder / story_links.FILE
    data = saved.read_bytes()
    src = dvstore.read(folder, saved.stem, 0, ext=saved.suffix)
    head_end = 24 + int.from_bytes(data[8:16], "little")
    spots = list(range(0, head_end, 7))
    for dtype, count, offset in src.header["arrays"].values():
        size = np.dtype(dtype).itemsize * count
        spots += [offset, offset + size // 2, offset + size - 1] if size else []
    del src
    for at in spots:
        saved.write_bytes(data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :])
        fresh = Index(folder)
        try:
            assert story_of(fresh) == before, at
        finally:
            fresh.close()
        assert saved.read_bytes() == data, at  # linked again and saved as before
