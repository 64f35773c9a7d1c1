"""Top facet values of a whole corpus, as the index would show them.

Usage::

    python -m benchmarks.review_entities /work/shared/corpora/reuters21578.jsonl \
        [--cache DIR] [--limit N] [--top 50] [--parse-only] [--json OUT]

Every article is parsed (spaCy docs are cached as DocBins of 500 articles under
``--cache``, so the rules can be re-run on the same parse in about a minute),
enriched with the rules of ``search.enrich``, split into passages and counted
the way the facets count: the number of passages holding a value of ``person``,
``org``, ``place`` and ``speaker``. The archive's alias table
(``search.aliases``) is learnt from the same articles, in order, and each
value is counted under its canonical name, as the facets show it. Prints the
top ``--top`` values per facet (the review set of docs/quality.md) and the
alias pairs learnt.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator

from benchmarks.bench_enrich import read_articles
from newsquarry.search.core.models import Article
from newsquarry.search.core.textnorm import fold
from newsquarry.search.ingest.enrich.assign import assign
from newsquarry.search.ingest.enrich.nlp import load_nlp
from newsquarry.search.ingest.enrich.pipeline import analyse_doc
from newsquarry.search.ingest.passages import split_passages

CHUNK = 500
FACETS = ("person", "org", "place", "speaker")


def parsed_docs(
    articles: list[Article],
    cache: str | None,
    reverse: bool = False,
    only: set[int] | None = None,
) -> Iterator:
    """The parsed docs of the articles, in order, from the cache where present.

    ``reverse`` parses the chunks last first (a second process filling the same
    cache from the other end); the docs then come in reverse chunk order.
    """
    from spacy.tokens import DocBin

    nlp = load_nlp()
    starts = [k for k in range(0, len(articles), CHUNK) if only is None or k in only]
    for k in reversed(starts) if reverse else starts:
        chunk = articles[k : k + CHUNK]
        path = None
        if cache:
            os.makedirs(cache, exist_ok=True)
            path = os.path.join(cache, f"{k:06d}-{len(chunk)}.spacy")
            if os.path.exists(path):
                yield from DocBin().from_disk(path).get_docs(nlp.vocab)
                continue
        docs = list(nlp.pipe((a.text for a in chunk), batch_size=16))
        if path:
            DocBin(store_user_data=False, docs=docs).to_disk(path + ".tmp")
            os.replace(path + ".tmp", path)
        yield from docs


def passage_values(article: Article, doc) -> list[dict[str, set[str]]]:
    """Per passage of one article: the values of each facet it holds."""
    passages = split_passages(article)
    mentions, quotes = analyse_doc(doc, article.source)
    assign(passages, mentions, quotes)
    out = []
    for p in passages:
        vals: dict[str, set[str]] = {f: set() for f in FACETS}
        for e in p.entities:
            vals[e.type].add(e.name)
        for q in p.quotes:
            if q.speaker:
                vals["speaker"].add(q.speaker)
        out.append(vals)
    return out


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--cache", help="folder for parsed docs (DocBin per 500 articles)")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--top", type=int, default=50)
    ap.add_argument("--parse-only", action="store_true", help="fill the cache and stop")
    ap.add_argument("--reverse", action="store_true", help="with --parse-only: last chunk first")
    ap.add_argument(
        "--cached-only", action="store_true", help="only the articles already parsed in the cache"
    )
    ap.add_argument("--json", help="write the counts and aliases here")
    ap.add_argument(
        "--rules", help="learn the table with an aliases.py of another revision (before/after)"
    )
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    articles = read_articles(args.path, args.limit)
    if args.parse_only:
        n = sum(1 for _ in parsed_docs(articles, args.cache, args.reverse))
        print(f"parsed {n} articles in {time.perf_counter() - t0:.0f} s")
        return 0
    from benchmarks.review_aliases import table_class

    AliasTable = table_class(args.rules)  # noqa: N806 - a class
    only = None
    if args.cached_only and args.cache:
        only = {
            int(name.split("-")[0]) for name in os.listdir(args.cache) if name.endswith(".spacy")
        }
        print(f"cached only: {len(only)} chunks of {CHUNK}")
    chosen = [a for k in range(0, len(articles), CHUNK) if only is None or k in only
              for a in articles[k : k + CHUNK]]  # fmt: skip
    table = AliasTable()
    per_passage: list[dict[str, set[str]]] = []
    docs = parsed_docs(articles, args.cache, only=only)
    for article, doc in zip(chosen, docs, strict=True):
        vals = passage_values(article, doc)
        table.learn([(f, v) for pv in vals for f in FACETS for v in pv[f]])
        per_passage.extend(vals)
    counts: dict[str, Counter[str]] = {f: Counter() for f in FACETS}
    resolver = table.resolver()
    for pv in per_passage:
        found: dict[str, set[str]] = {f: set() for f in FACETS}
        for f in FACETS:
            for x in pv[f]:
                # as the facets count: under the canonical name, in the facet of its type
                shown = resolver.name(x)
                found[resolver.types.get(fold(shown), f) if f != "speaker" else f].add(shown)
        for f in FACETS:
            for v in found[f]:
                counts[f][v] += 1
    for f in FACETS:
        print(f"\n## {f} (top {args.top} of {len(counts[f])} values)")
        for rank, (v, n) in enumerate(counts[f].most_common(args.top), 1):
            print(f"{rank:3} {n:6}  {v}")
    print("\n## aliases learnt")
    for f, alias, canon in table.pairs():
        print(f"  {f}: {alias} -> {canon}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(
                {
                    "counts": {f: counts[f].most_common(200) for f in FACETS},
                    "aliases": table.pairs(),
                    "evidence": table.articles,
                },
                fh,
                indent=1,
            )
    print(
        f"\n{len(chosen)} articles, {len(per_passage)} passages, {time.perf_counter() - t0:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
