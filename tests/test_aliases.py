"""The alias table (search/aliases.py): learnt from articles, applied at query time.

Unit tests of the learning rules, then a real index on disk: an article that
teaches an alias merges facet counts and filters at the next search, with no
re-indexing; hits show the canonical name and keep the mention as written; the
override file and the ``aliases`` command.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from newsquarry.search.aliases import AliasTable, normal_form, parse_overrides
from newsquarry.search.cli import cli
from newsquarry.search.errors import InvalidRequest
from newsquarry.search.models import Article, Entity, Passage, Quote
from newsquarry.search.requests import SearchRequest
from newsquarry.search.searching import facet_values, run_search
from newsquarry.search.store import WhooshStore


def table_of(*articles: list[tuple[str, str]]) -> AliasTable:
    t = AliasTable()
    for a in articles:
        t.learn(a)
    return t


def test_spelling_variants_share_a_normal_form():
    assert normal_form("u.s.") == normal_form("u.s") == normal_form("us") == "us"
    assert normal_form("carl c. icahn") == normal_form("carl icahn")
    assert normal_form("trans world airlines inc") == "trans world airlines"
    assert normal_form("federal reserve board") == "federal reserve"
    t = table_of(
        [("person", "Carl C. Icahn")], [("person", "Carl Icahn")], [("person", "Carl Icahn")]
    )
    assert t.canonical("person", "Carl C. Icahn") == "Carl Icahn"


def test_acronym_joins_its_expansion_when_they_meet_in_an_article():
    t = table_of(
        [("org", "Securities and Exchange Commission"), ("org", "SEC")],
        [("org", "SEC")],
        [("speaker", "S and P"), ("org", "Standard and Poor's Corp")],
        [("org", "USDA"), ("org", "U.S. Agriculture Department")],
    )
    assert t.canonical("org", "SEC") == "Securities and Exchange Commission"
    assert t.canonical("speaker", "S and P") == "Standard and Poor's Corp"
    # the same letters in another order need a second article
    assert t.canonical("org", "USDA") == "USDA"
    t.learn([("org", "USDA"), ("org", "U.S. Agriculture Department")])
    assert t.canonical("org", "USDA") == "U.S. Agriculture Department"


def test_a_word_in_lower_case_is_not_an_acronym():
    t = table_of([("org", "Sec"), ("org", "Securities and Exchange Commission")])
    assert t.canonical("org", "Sec") == "Sec"


def test_clipping_needs_two_articles_and_a_majority():
    t = table_of([("org", "Fed"), ("org", "Federal Reserve")])
    assert t.canonical("org", "Fed") == "Fed"
    t.learn([("org", "Fed"), ("org", "Federal Reserve Board")])
    assert t.canonical("org", "Fed") in ("Federal Reserve", "Federal Reserve Board")
    assert t.canonical("org", "Federal Reserve Board") == t.canonical("org", "Federal Reserve")


def test_an_acronym_is_a_name_of_its_own_not_the_first_word_of_a_longer_one():
    # "GATT" starts "GATT Council" in two stories: still two bodies
    t = table_of(
        [("org", "GATT"), ("org", "GATT Council")], [("org", "GATT"), ("org", "GATT Council")]
    )
    assert t.canonical("org", "GATT") == "GATT"
    # a word that is not an acronym does join the name it starts
    t = table_of(
        [("org", "Moody's"), ("org", "Moody's Investors Service")],
        [("org", "Moody's"), ("org", "Moody's Investors Service")],
    )
    assert t.canonical("org", "Moody's") == "Moody's Investors Service"


def test_a_firm_s_first_word_and_an_acronym_of_its_one_word_name_join_it():
    firm = [("org", "Dome"), ("org", "Dome Petroleum Ltd")]
    t = table_of(firm, firm)
    assert t.canonical("org", "Dome") == "Dome Petroleum Ltd"
    # a modifier of another body does not: "House" / "House Banking Committee"
    t = table_of(*[[("org", "House"), ("org", "House Banking Committee")]] * 2)
    assert t.canonical("org", "House") == "House"
    t = table_of(*[[("org", "House"), ("org", "House of Representatives")]] * 2)
    assert t.canonical("org", "House") == "House of Representatives"
    # "X of <a place>" is a branch, not the body itself
    branch = [("org", "Volkswagen"), ("org", "Volkswagen of America"), ("place", "America")]
    t = table_of(branch, branch)
    assert t.canonical("org", "Volkswagen") == "Volkswagen"
    unit = [("org", "Texaco Inc"), ("org", "Texaco"), ("org", "Texaco Pipeline Co")]
    assert table_of(unit, unit).canonical("org", "Texaco") == "Texaco Inc"  # a firm of its own
    # a short name only rarely written with a suffix still joins
    t = table_of(*[[("org", "Ford"), ("org", "Ford Motor Co")]] * 3, [("org", "Ford Inc")])
    assert t.canonical("org", "Ford") == "Ford Motor Co"
    branch = [("org", "Volkswagen"), ("org", "Volkswagen U.S. Inc"), ("place", "U.S.")]
    assert table_of(branch, branch).canonical("org", "Volkswagen") == "Volkswagen"
    both = [("org", "VW"), ("org", "Volkswagen AG")]
    t = table_of(both, both)
    assert t.canonical("org", "VW") == "Volkswagen AG"
    t = table_of(*[[("org", "WV"), ("org", "Volkswagen AG")]] * 2)  # letters out of order
    assert t.canonical("org", "WV") == "WV"


def test_a_place_before_an_org_name_makes_the_bare_name_its_alias():
    both = [("org", "U.S. Treasury"), ("org", "Treasury"), ("place", "U.S.")]
    t = table_of(both, both, [("org", "Treasury")])
    # one body, shown in the form the archive writes more often
    assert t.canonical("org", "U.S. Treasury") == t.canonical("org", "Treasury") == "Treasury"
    # the words before must be a place of the archive: "World" is not
    pair = [("org", "World Bank"), ("org", "Bank")]
    t = table_of(pair, pair, [("place", "U.S.")])
    assert t.canonical("org", "Bank") == "Bank"


def test_an_abbreviation_with_a_dot_joins_the_one_longer_name_it_starts():
    t = table_of([("place", "California")], [("place", "California")], [("place", "Calif.")])
    assert t.canonical("place", "Calif.") == "California"
    # two longer names start with it: ambiguous, left alone
    t.learn([("place", "Califon")])
    t.learn([("place", "Califon")])
    assert t.canonical("place", "Calif.") == "Calif."


def test_an_acronym_never_written_beside_its_name_joins_the_one_name_with_its_initials():
    name = [("org", "American Telephone and Telegraph Co")]
    t = table_of(name, name, name, [("org", "ATT")], [("org", "ATT")], [("org", "ATT")])
    assert t.canonical("org", "ATT") == "American Telephone and Telegraph Co"
    # a second common name with the same initials: which one is unknown
    other = [("org", "Atlantic Tool and Tile Corp")]
    t.learn(other), t.learn(other), t.learn(other)
    assert t.canonical("org", "ATT") == "ATT"


def test_a_name_is_counted_in_the_facet_the_archive_types_it_as():
    t = table_of(
        *[[("place", "Soviet Union")]] * 4, [("org", "Soviet Union")], [("person", "Reagan")]
    )
    r = t.resolver()
    assert r.types == {"soviet union": "place"}  # only names typed two ways are listed


def test_surname_joins_the_one_full_name_the_archive_knows():
    t = table_of(
        [("person", "Ronald Reagan")], [("person", "Ronald Reagan")], [("person", "Reagan")]
    )
    assert t.canonical("person", "Reagan") == "Ronald Reagan"
    # a second full name with that surname, as common: ambiguous, left alone
    t.learn([("person", "Nancy Reagan")])
    t.learn([("person", "Nancy Reagan")])
    assert t.canonical("person", "Reagan") == "Reagan"


def test_forgetting_an_article_takes_its_evidence_away():
    t = AliasTable()
    t.learn([("org", "European Community"), ("org", "EC")], article_id="a1")
    assert t.canonical("org", "EC") == "European Community"
    t.forget("a1")
    assert t.canonical("org", "EC") == "EC"


def test_a_table_updated_article_by_article_equals_one_learnt_at_once():
    """A writer keeps the summed evidence between commits and updates it per article put,
    replaced or deleted: the aliases must be those of the same articles counted at once."""
    import random

    rng = random.Random(7)
    names = [("org", "European Community"), ("org", "EC"), ("org", "European Commission"),
             ("org", "Securities and Exchange Commission"), ("org", "SEC"), ("org", "Fed"),
             ("org", "Federal Reserve Board"), ("org", "Federal Reserve"),
             ("person", "Carl Icahn"), ("person", "Carl C. Icahn"), ("person", "Icahn"),
             ("speaker", "Icahn"), ("place", "U.S."), ("org", "U.S. Treasury"),
             ("org", "Treasury"), ("org", "Moody's"), ("org", "Moody's Investors Service"),
             ("place", "Calif."), ("place", "California"), ("org", "VW"),
             ("org", "Volkswagen AG")]  # fmt: skip
    live = AliasTable()
    live.learnt()  # the sums exist from here on: every change below updates them
    for step in range(300):
        aid = f"a{rng.randrange(40)}"
        if rng.random() < 0.2:
            live.forget(aid)
        else:
            live.learn(rng.sample(names, rng.randrange(1, 7)), article_id=aid)
        if step % 50 == 49:
            fresh = AliasTable()
            for a, values in live.articles.items():
                fresh.learn([tuple(v) for v in values], article_id=a)
            got, want = live.learnt(), fresh.learnt()
            assert (got.canon, got.display, got.types) == (want.canon, want.display, want.types)
            assert want.canon  # the sample does teach aliases


def test_overrides_win_and_can_keep_a_name_apart():
    t = table_of([("org", "European Community"), ("org", "EC")])
    t.overrides = parse_overrides("# mine\nEC = EC\nBig Blue = International Business Machines\n")
    assert t.canonical("org", "EC") == "EC"
    assert t.canonical("org", "Big Blue") == "International Business Machines"
    with pytest.raises(InvalidRequest, match="line 2"):
        parse_overrides("A = B\nno equals sign here\n")


# -- on a real index -------------------------------------------------------------------


def article_with(aid: str, sentences: list[tuple[str, list[tuple[str, str]], str | None]]):
    """An article of one passage per sentence, with the given entities and speaker."""
    text = "\n\n".join(s for s, _, _ in sentences)
    article = Article(id=aid, title=aid, text=text, source="Test wire", date="1987-03-01")
    passages, pos = [], 0
    for n, (sentence, ents, speaker) in enumerate(sentences, 1):
        start = text.index(sentence, pos)
        end = pos = start + len(sentence)
        entities = [
            Entity(
                text=t, name=t, type=typ, start=sentence.index(t), end=sentence.index(t) + len(t)
            )
            for typ, t in ents
        ]
        quotes = []
        if speaker:
            quotes = [
                Quote(
                    text=sentence,
                    start=0,
                    end=len(sentence),
                    kind="indirect",
                    speaker=speaker,
                    speaker_mention=speaker,
                    speaker_start=sentence.index(speaker),
                    speaker_end=sentence.index(speaker) + len(speaker),
                    cue="say",
                )
            ]
        passages.append(
            Passage(
                id=f"{aid}#p{n}",
                article_id=aid,
                position=n,
                start=start,
                end=end,
                text=sentence,
                entities=entities,
                quotes=quotes,
            )
        )
    return article, passages


def counts(store, facet, **kw):
    r = run_search(store, SearchRequest(facets=[facet], facet_size=50, **kw))
    return {v.value: v.count for v in r.facets[facet].values}, r


@pytest.fixture
def store(tmp_path):
    s = WhooshStore(tmp_path / "ix")
    s.add(
        [
            article_with(
                "a1", [("EC ministers said farm prices would fall.", [("org", "EC")], "EC")]
            ),
            article_with("a2", [("The EC said quotas stay.", [("org", "EC")], "EC")]),
            article_with(
                "a0",
                [("The European Community budget grew.", [("org", "European Community")], None)],
            ),
        ]
    )
    yield s
    s.close()


def test_an_article_that_teaches_an_alias_merges_counts_and_filters_at_once(store):
    before, _ = counts(store, "org")
    assert before == {"EC": 2, "European Community": 1}
    # one article naming both, an acronym of the exact initials, teaches the alias
    store.add(
        [
            article_with(
                "a3",
                [
                    (
                        "The European Community (EC) agreed on Tuesday.",
                        [("org", "European Community"), ("org", "EC")],
                        None,
                    )
                ],
            )
        ]
    )
    after, _ = counts(store, "org")
    assert after == {"European Community": 4}  # the a3 passage counts once, not twice
    # filtering by either name selects the same passages
    _, by_short = counts(store, "org", filters={"org": ["EC"]})
    _, by_long = counts(store, "org", filters={"org": ["European Community"]})
    assert by_short.total == by_long.total == 4
    assert [v.selected for v in by_short.facets["org"].values] == [True]
    # the speaker facet and a speaker: query use the canonical name too
    speakers, _ = counts(store, "speaker")
    assert speakers == {"European Community": 2}
    r = run_search(store, SearchRequest(q='speaker:"European Community"'))
    assert r.total == 2
    # hits: the canonical name, with the mention as written and its offsets
    hit = next(h for h in r.hits if h.article_id == "a1")
    assert hit.entities[0]["name"] == "European Community"
    assert hit.entities[0]["text"] == "EC"
    assert hit.text[hit.entities[0]["start"] : hit.entities[0]["end"]] == "EC"
    assert hit.quotes[0]["speaker"] == "European Community"
    assert hit.quotes[0]["speaker_mention"] == "EC"
    # facet value search finds the canonical value
    fv = facet_values(store, "org", "europ", SearchRequest(), 10)
    assert [(v.value, v.count) for v in fv.values] == [("European Community", 4)]


def test_deleting_the_teaching_article_splits_the_names_again(store):
    store.add(
        [
            article_with(
                "a3",
                [
                    (
                        "EC or European Community.",
                        [("org", "EC"), ("org", "European Community")],
                        None,
                    )
                ],
            )
        ]
    )
    assert counts(store, "org")[0] == {"European Community": 4}
    with store.writer() as w:
        w.delete("a3")
    assert counts(store, "org")[0] == {"EC": 2, "European Community": 1}


def test_override_file_applies_to_the_next_search_without_reindexing(store, tmp_path):
    (tmp_path / "ix" / "aliases.txt").write_text("EC = Common Market\n", encoding="utf-8")
    after, _ = counts(store, "org")
    assert after == {"Common Market": 2, "European Community": 1}


def test_aliases_command_lists_rebuilds_and_rejects_a_bad_override_file(store, tmp_path):
    index = str(tmp_path / "ix")
    store.add(
        [
            article_with(
                "a3",
                [
                    (
                        "The European Community (EC) agreed.",
                        [("org", "European Community"), ("org", "EC")],
                        None,
                    )
                ],
            )
        ]
    )
    runner = CliRunner()
    res = runner.invoke(cli, ["--index", index, "aliases", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {"facet": "org", "alias": "EC", "canonical": "European Community"} in data["aliases"]
    assert data["overrides"].endswith("aliases.txt")
    # evidence lost: --rebuild reads it back from the stored passages
    (tmp_path / "ix" / "aliases-evidence.json").unlink()
    (tmp_path / "ix" / "aliases.json").unlink()
    res = runner.invoke(cli, ["--index", index, "aliases", "--rebuild", "--search", "ec"])
    assert res.exit_code == 0
    assert "EC  ->  European Community" in res.stdout
    (tmp_path / "ix" / "aliases.txt").write_text("just a name\n", encoding="utf-8")
    res = runner.invoke(cli, ["--index", index, "aliases"])
    assert res.exit_code == 2
    assert "aliases.txt line 1" in res.stderr


class AcronymTagger:
    """A real (dictionary) enricher: tags the two names of one body as orgs."""

    NAMES = ("European Community", "EC")

    def enrich(self, items):
        import re

        for article, passages in items:
            for p in passages:
                taken: list[tuple[int, int]] = []
                for name in self.NAMES:
                    for m in re.finditer(rf"\b{re.escape(name)}\b", p.text):
                        if not any(s <= m.start() < e for s, e in taken):
                            taken.append((m.start(), m.end()))
                            p.entities.append(Entity(m.group(0), name, "org", m.start(), m.end()))
                p.entities.sort(key=lambda e: e.start)
            yield article, passages


def test_a_mistyped_name_moves_to_its_facet_at_once(store):
    # three stories call Soviet Union a place; one tags it as an org
    for n in range(3):
        store.add(
            [
                article_with(
                    f"s{n}", [("The Soviet Union bought grain.", [("place", "Soviet Union")], None)]
                )
            ]
        )
    store.add(
        [article_with("s9", [("The Soviet Union sold oil.", [("org", "Soviet Union")], None)])]
    )
    orgs, _ = counts(store, "org")
    places, _ = counts(store, "place")
    assert "Soviet Union" not in orgs and places["Soviet Union"] == 4
    _, picked = counts(store, "place", filters={"place": ["Soviet Union"]})
    assert picked.total == 4


def test_the_api_counts_filters_and_shows_the_canonical_name(tmp_path):
    from newsquarry.api import create_app

    token = "t" * 24
    app = create_app(
        {"index": str(tmp_path / "ix"), "write_token": token}, enricher=AcronymTagger()
    )
    c = app.test_client()
    auth = {"Authorization": f"Bearer {token}"}
    c.put("/v1/articles/b1", json={"text": "EC farm ministers met on Monday."}, headers=auth)
    c.put("/v1/articles/b2", json={"text": "The European Community grew."}, headers=auth)
    body = c.get("/v1/search?facet=org").get_json()
    assert {v["value"]: v["count"] for v in body["facets"]["org"]["values"]} == {
        "EC": 1,
        "European Community": 1,
    }
    # an article naming both teaches the alias: the next search counts one value
    c.put(
        "/v1/articles/b3",
        json={"text": "The European Community (EC) agreed on quotas."},
        headers=auth,
    )
    body = c.get("/v1/search?facet=org").get_json()
    assert {v["value"]: v["count"] for v in body["facets"]["org"]["values"]} == {
        "European Community": 3
    }
    picked = c.get("/v1/search?org=EC&facet=org").get_json()
    assert picked["total"] == 3
    assert picked["facets"]["org"]["values"][0]["selected"] is True
    # the hit and the article: canonical name, the mention as written with its offsets
    hit = next(h for h in picked["hits"] if h["article_id"] == "b1")
    ent = hit["entities"][0]
    assert (ent["name"], ent["text"]) == ("European Community", "EC")
    assert hit["text"][ent["start"] : ent["end"]] == "EC"
    article = c.get("/v1/articles/b1").get_json()
    assert article["passages"][0]["entities"][0]["name"] == "European Community"
    # an override edited by hand changes the next response (no stale ETag or cache)
    first = c.get("/v1/search?facet=org")
    (tmp_path / "ix" / "aliases.txt").write_text("European Community = EEC\n", encoding="utf-8")
    again = c.get("/v1/search?facet=org", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 200
    assert [v["value"] for v in again.get_json()["facets"]["org"]["values"]] == ["EEC"]


def test_a_damaged_evidence_file_is_rebuilt_from_the_stored_passages(store, tmp_path):
    teach = article_with(
        "a3",
        [
            (
                "The European Community (EC) met.",
                [("org", "European Community"), ("org", "EC")],
                None,
            )
        ],
    )
    store.add([teach])
    assert counts(store, "org")[0] == {"European Community": 4}
    (tmp_path / "ix" / "aliases-evidence.json").write_text('{"articles": [', encoding="utf-8")
    store.add([article_with("a4", [("Rain in Spain.", [("place", "Spain")], None)])])
    # the next commit read the names of a0-a3 back from the index: the alias holds
    assert counts(store, "org")[0] == {"European Community": 4}
    saved = json.loads((tmp_path / "ix" / "aliases-evidence.json").read_text(encoding="utf-8"))
    assert set(saved["articles"]) == {"a0", "a1", "a2", "a3", "a4"}


def _remap_by_walking_every_key(fname, docs, gids, registries, resolver, raw_field):
    """``remap`` as first written: every key of every field looked up in the table."""
    import numpy as np

    from newsquarry.search.aliases import ENTITY_FACETS

    registry = registries[fname]
    canon, types = resolver.canon, resolver.types if fname in ENTITY_FACETS else {}
    incoming = []
    if fname in set(types.values()):
        for other in ENTITY_FACETS:
            if other == fname:
                continue
            odocs, ogids = raw_field(other)
            okeys = list(registries[other].keys)
            moved = {g: canon.get(k, k) for g, k in enumerate(okeys)}
            moved = {g: c for g, c in moved.items() if types.get(c) == fname}
            if moved and len(ogids):
                sel = np.isin(ogids, np.fromiter(moved, dtype=np.int64, count=len(moved)))
                incoming.append((odocs[sel], [moved[int(g)] for g in ogids[sel]]))
    known = list(registry.keys)
    target, dropped = {}, []
    for g, k in enumerate(known):
        c = canon.get(k, k)
        if types.get(c, fname) != fname:
            dropped.append(g)
        elif c != k:
            target[g] = c
    wanted = sorted(set(target.values()) | {c for _, cs in incoming for c in cs})
    cid_of = dict(zip(wanted, registry.ids_for(wanted).tolist(), strict=True)) if wanted else {}
    nkeys = len(registry.keys)
    mapping = np.arange(nkeys, dtype=np.int32)
    for g, ckey in target.items():
        mapping[g] = cid_of[ckey]
    mapping[dropped] = -1
    if target or dropped or incoming:
        new = mapping[gids]
        keep = new >= 0
        all_docs = [docs[keep].astype(np.int64)] + [d.astype(np.int64) for d, _ in incoming]
        all_gids = [new[keep].astype(np.int64)] + [
            np.asarray([cid_of[c] for c in cs], dtype=np.int64) for _, cs in incoming
        ]
        pairs = np.unique(np.concatenate(all_docs) * nkeys + np.concatenate(all_gids))
        docs, gids = pairs // nkeys, (pairs % nkeys).astype(np.int32)
    return docs, gids, nkeys, registry.keys[:nkeys], mapping


def test_remap_looks_up_only_the_tables_keys_and_agrees_with_a_walk_of_every_key():
    """Random fields and tables: the same pairs, key ids and mapping as walking every key."""
    import random

    import numpy as np

    from newsquarry.search.aliases import Resolver, remap
    from newsquarry.search.docvalues import KeyRegistry

    rng = random.Random(16)
    names = [f"n{i}" for i in range(40)]
    for _ in range(60):
        canon = {k: rng.choice(names) for k in rng.sample(names, rng.randint(0, 15))}
        for c in set(canon.values()):
            canon.pop(c, None)
        typed = set(canon.values()) | set(rng.sample(names, 5))
        types = {c: rng.choice(["person", "org", "place"]) for c in typed if rng.random() < 0.5}
        resolver = Resolver("v", canon, {}, types=types)
        fields = {}
        for f in ("person", "org", "place"):
            keys = rng.sample(names, rng.randint(0, 25))
            pairs = sorted({(rng.randrange(30), rng.choice(keys)) for _ in range(40)} if keys else [])
            fields[f] = (keys, pairs)

        def build(fields=fields):
            regs = {f: KeyRegistry() for f in fields}
            raw = {}
            for f, (keys, pairs) in fields.items():
                ids = regs[f].ids_for(keys)
                docs = np.array([d for d, _ in pairs], dtype=np.int64)
                gids = np.array([ids[keys.index(k)] for _, k in pairs], dtype=np.int32)
                raw[f] = (docs, gids)
            return regs, raw

        for fname in fields:
            regs_a, raw_a = build()
            regs_b, raw_b = build()
            got = remap(fname, *raw_a[fname], regs_a, resolver, raw_a.__getitem__)
            want = _remap_by_walking_every_key(
                fname, *raw_b[fname], regs_b, resolver, raw_b.__getitem__
            )
            assert got[0].tolist() == want[0].tolist()
            assert got[1].tolist() == want[1].tolist()
            assert got[2:4] == want[2:4]
            assert got[4].tolist() == want[4].tolist()


def test_a_commit_that_teaches_nothing_new_extends_the_last_views_name_counts(store, tmp_path):
    """After a commit that adds a segment and leaves the alias table as it was, the new
    view extends the earlier view's name fields (the new segment's pairs only), and
    counts, filters and pairs are those of a process opening the index afresh."""
    from newsquarry.search.docvalues import cache_for

    store.add(
        [
            article_with(
                "a3",
                [
                    (
                        "The European Community (EC) agreed on Tuesday.",
                        [("org", "European Community"), ("org", "EC")],
                        None,
                    )
                ],
            )
        ]
    )
    assert counts(store, "org")[0] == {"European Community": 4}
    first = cache_for(store).view(store.searcher())
    resolver = store.aliases.resolver()
    store.add([article_with("a4", [("EC farm ministers met again.", [("org", "EC")], "EC")])])
    assert store.aliases.resolver() is resolver  # the table was written again, unchanged
    assert counts(store, "org")[0] == {"European Community": 5}
    view = cache_for(store).view(store.searcher())
    assert view._extends is not None and view._extends() is first
    fresh = WhooshStore(tmp_path / "ix")
    try:
        for facet in ("org", "speaker"):
            assert counts(fresh, facet)[0] == counts(store, facet)[0]
            _, a = counts(store, facet, filters={"org": ["EC"]})
            _, b = counts(fresh, facet, filters={"org": ["EC"]})
            assert a.total == b.total == 5
        again = cache_for(fresh).view(fresh.searcher())
        assert again._extends is None
        for f in ("org", "speaker", "person", "place"):

            def pairs(v, f=f):
                names = [v.keys[f][g] for g in v.gids[f].tolist()]
                return sorted(zip(v.docs[f].tolist(), names, strict=True))

            assert pairs(view) == pairs(again)
    finally:
        fresh.close()
