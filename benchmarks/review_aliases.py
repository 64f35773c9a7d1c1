"""The alias table learnt on a whole corpus, with its evidence, against a judgement file.

Usage::

    # parse (cached), enrich and save each article's names (the alias evidence)
    python -m benchmarks.review_aliases /work/shared/corpora/bbc_news_2004_2005.jsonl \
        --cache DIR --save-evidence EVIDENCE.json
    # learn the table from saved evidence (no spaCy: seconds) and judge it
    python -m benchmarks.review_aliases --evidence EVIDENCE.json \
        --judged benchmarks/bbc_aliases_judged.tsv [--unjudged] [--weakest N]
    # the same with the rules of another revision (the figures "before")
    git show REV:search/archive/aliases.py > /tmp/aliases_rev.py
    python -m benchmarks.review_aliases --evidence EVIDENCE.json --rules /tmp/aliases_rev.py \
        --judged benchmarks/bbc_aliases_judged.tsv

Each mapping learnt (a name key joining another name's key: ``AliasTable.mappings()``)
is printed with the rule that made it and its evidence (the number of articles behind
it). With ``--judged`` (tab-separated: alias, canonical, ``right``/``wrong``, reason; the
names only, no article text) the mappings found there are counted right or wrong and the
precision printed; mappings not in the file are listed as unjudged, and judged mappings
the table no longer makes as gone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def load_judged(path: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(alias, canonical) -> (verdict, reason) from a judgement file."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip() or line.startswith("#"):
                continue
            alias, canonical, verdict, *reason = line.rstrip("\n").split("\t")
            if verdict not in ("right", "wrong"):
                raise SystemExit(f"{path}: verdict must be right or wrong: {line!r}")
            out[(alias, canonical)] = (verdict, reason[0] if reason else "")
    return out


def evidence_of_corpus(path: str, cache: str | None, limit: int | None) -> dict[str, list]:
    """Article id -> its [facet, value] names, as an index saves them."""
    from benchmarks.bench_enrich import read_articles
    from benchmarks.review_entities import FACETS, parsed_docs, passage_values
    from newsquarry.search.archive.aliases import _pairs

    articles = read_articles(path, limit)
    out = {}
    for article, doc in zip(articles, parsed_docs(articles, cache), strict=True):
        vals = passage_values(article, doc)
        out[article.id] = _pairs([(f, v) for pv in vals for f in FACETS for v in pv[f]])
    return out


def table_class(rules: str | None):
    """``AliasTable`` of the library, or of an ``aliases.py`` saved from another revision."""
    if not rules:
        from newsquarry.search.archive.aliases import AliasTable

        return AliasTable
    import importlib.util

    spec = importlib.util.spec_from_file_location("aliases_under_review", rules)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.AliasTable


def mappings_of(table, weakest: int | None = None) -> list:
    """``table.mappings()``; for a revision before it, the same rows without evidence."""
    if hasattr(table, "mappings"):
        return table.mappings(weakest=weakest)
    from newsquarry.search.archive.aliases import Mapping

    r = table.resolver()
    forms = table._totals().forms
    rows = [
        Mapping(forms[k].most_common(1)[0][0] if k in forms else k, r.display.get(c, c), "?", 0)
        for k, c in r.canon.items()
    ]
    return sorted(rows, key=lambda m: (m.alias.lower(), m.alias))


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", help="corpus (JSONL) to parse and enrich")
    ap.add_argument("--cache", help="folder for parsed docs (DocBin per 500 articles)")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--evidence", help="read the evidence saved by --save-evidence instead")
    ap.add_argument("--save-evidence", help="write each article's names here (JSON)")
    ap.add_argument("--judged", help="judgement file (TSV: alias, canonical, verdict, reason)")
    ap.add_argument("--unjudged", action="store_true", help="print only mappings not judged")
    ap.add_argument("--weakest", type=int, help="print only the N mappings of least evidence")
    ap.add_argument("--rules", help="an aliases.py of another revision to learn the table with")
    args = ap.parse_args(argv)
    AliasTable = table_class(args.rules)  # noqa: N806 - a class
    t0 = time.perf_counter()
    if args.evidence:
        with open(args.evidence, encoding="utf-8") as fh:
            evidence = json.load(fh)["articles"]
    elif args.path:
        evidence = evidence_of_corpus(args.path, args.cache, args.limit)
    else:
        ap.error("give a corpus or --evidence")
    if args.save_evidence:
        with open(args.save_evidence, "w", encoding="utf-8") as fh:
            json.dump({"version": 1, "articles": evidence}, fh, ensure_ascii=False)
    table = AliasTable()
    table.articles = evidence
    rows = mappings_of(table, args.weakest)
    judged = load_judged(args.judged) if args.judged else {}
    right = wrong = 0
    unjudged = []
    for m in rows:
        verdict = judged.get((m.alias, m.canonical))
        if verdict is None:
            unjudged.append(m)
        elif verdict[0] == "right":
            right += 1
        else:
            wrong += 1
        if args.unjudged and verdict is not None:
            continue
        mark = verdict[0] if verdict else "?"
        reason = f"  ({verdict[1]})" if verdict and verdict[1] else ""
        print(f"{mark:<6} {m.evidence:4}  {m.rule:<9} {m.alias}  ->  {m.canonical}{reason}")
    made = {(m.alias, m.canonical) for m in mappings_of(table)}
    if judged:
        gone = [(k, v) for k, v in judged.items() if k not in made]
        gone_wrong = [k for k, v in gone if v[0] == "wrong"]
        gone_right = [k for k, v in gone if v[0] == "right"]
        print(f"\njudged mappings no longer made: {len(gone_wrong)} wrong, {len(gone_right)} right")
        for a, c in gone_right:
            print(f"  lost (right): {a} -> {c}")
        n = right + wrong
        if n:
            print(f"precision {right}/{n} = {right / n:.3f} of {len(rows)} mappings "
                  f"({len(unjudged)} unjudged)")  # fmt: skip
    print(
        f"{len(evidence)} articles, {len(made)} mappings, {time.perf_counter() - t0:.1f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
