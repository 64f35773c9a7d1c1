"""Integrity checks on an index folder, shared by the reliability tests."""

from __future__ import annotations

from collections import Counter

from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.passages import split_passages
from newsquarry.search.ingest.readers import article_from_mapping


def expected_passage_ids(raw_articles: list[dict]) -> dict[str, list[str]]:
    """Article id -> the passage ids indexing it must produce (passages are deterministic)."""
    out = {}
    for raw in raw_articles:
        art = article_from_mapping(raw)
        out[art.id] = [p.id for p in split_passages(art)]
    return out


def index_contents(path) -> dict:
    """Every live stored document of the index at ``path``, grouped, with duplicates counted.

    Opens the index like any reader would (``WhooshStore(create=False)``): that
    it opens at all is part of what is checked.
    """
    store = WhooshStore(path, create=False)
    try:
        ids: Counter[str] = Counter()
        articles: set[str] = set()
        passages: dict[str, list[str]] = {}
        quotes: list[dict] = []
        with store.ix.searcher() as s:
            for fields in s.reader().all_stored_fields():
                ids[fields["id"]] += 1
                kind = fields["doctype"]
                if kind == "article":
                    articles.add(fields["id"])
                elif kind == "passage":
                    passages.setdefault(fields["article_id"], []).append(fields["id"])
                else:
                    quotes.append(fields)
        return {
            "generation": store.generation,
            "stats": store.stats(),
            "duplicates": sorted(i for i, n in ids.items() if n > 1),
            "articles": articles,
            "passages": {a: sorted(p) for a, p in passages.items()},
            "quotes": quotes,
        }
    finally:
        store.close()


def assert_exact(contents: dict, expected: dict[str, list[str]], committed: set[str]) -> None:
    """The index holds exactly ``committed`` articles, each with all its passages, once."""
    assert contents["duplicates"] == [], f"duplicate documents: {contents['duplicates'][:5]}"
    missing = committed - contents["articles"]
    extra = contents["articles"] - committed
    assert not missing and not extra, f"missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}"
    assert set(contents["passages"]) <= committed, "passages of an article that is not there"
    for aid in committed:
        assert contents["passages"].get(aid) == sorted(expected[aid]), f"passages of {aid}"
    live_passages = {p for ps in contents["passages"].values() for p in ps}
    for q in contents["quotes"]:
        assert q["passage_id"] in live_passages, f"orphan quote {q['id']}"
    stats = contents["stats"]
    assert stats["articles"] == len(committed)
    assert stats["passages"] == sum(len(expected[a]) for a in committed)
    assert stats["quotes"] == len(contents["quotes"])
