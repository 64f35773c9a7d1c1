"""Ranking quality: newsquarry beside SQLite FTS5 and plain Whoosh BM25F on the same documents.

Usage::

    python -m benchmarks.eval_ranking /work/shared/corpora/cranfield \\
        --index /tmp/nq-eval-cranfield            # reused when it holds the collection
    python -m benchmarks.eval_ranking --reuters /work/shared/corpora/reuters21578.jsonl \\
        --limit 4000 --index /tmp/nq-eval-reuters

**IR collection** (a folder in the JSONL format of ``corpora/cranfield``:
``docs.jsonl`` with ``id``, ``title``, ``text``; ``queries.jsonl`` with ``id``,
``text``; ``qrels.tsv`` with ``query_id``, ``doc_id``, ``relevance``): every
document is indexed as an article through the normal pipeline (passages, spaCy
enrichment unless ``--no-enrich``) into a throwaway index; every query runs as
typed (``match`` as given, default the library's default) with
``group="article"``, so documents are ranked as the search page ranks
articles (docs/search.md, "Ranking"), each shown by its best passage; results
are read as deep as the baselines' (1,000 documents).

**Reuters topics** (``--reuters``): the first ``--limit`` stories of
``reuters21578.jsonl``; the queries are ``TOPIC_QUERIES`` below (written by
hand, one per topic, the way a reader would ask), and a story is relevant when
Reuters tagged it with the topic (silver judgments, relevance 1).

Search by meaning (``--retrieval keyword semantic hybrid``, the ``semantic`` extra):
the index gets its passage vectors with ``archive.vectors.embed`` (resumable: a reused
index keeps them), and each retrieval runs as its own engine; ``--fusion rrf convex``
runs hybrid with reciprocal rank fusion and with a convex combination of normalised
BM25 and similarity (``query.semantic.fuse``), to compare them; ``--feedback off on`` runs
each with and without RM3 feedback in the article ranking (``query.feedback``).

Baselines, built in the same run from the same documents:

- ``fts5``: SQLite FTS5 (``porter unicode61 remove_diacritics 2``) over
  (title, text), ``bm25()`` ranking, the query's words ORed;
- ``whoosh``: plain Whoosh: one document per article, ``StemmingAnalyzer`` on
  title and text, ``MultifieldParser`` with ``OrGroup``, BM25F defaults.

Measures (per query, averaged over queries with at least one relevant document):
nDCG@10 (graded: gain = relevance, log2 discount), MAP (relevance > 0, average
precision over the top 1,000), recall@100, and the number of queries that find
nothing at all.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from newsquarry.search.core.models import Article
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_articles
from newsquarry.search.query.searching import run_search

# Reuters topic -> a query a reader might type about it (written once, not tuned)
TOPIC_QUERIES = {
    "coffee": "coffee prices and export quotas",
    "crude": "crude oil prices and OPEC output",
    "grain": "grain harvest and wheat exports",
    "interest": "central bank cuts interest rates",
    "money-fx": "dollar exchange rates and currency intervention",
    "trade": "trade deficit and tariffs on imports",
    "earn": "quarterly net profit per share",
    "acq": "company agrees to acquire a stake in a takeover",
    "gold": "gold mine production in ounces",
    "ship": "shipping and port strike hits vessels",
    "sugar": "sugar production and crop estimates",
    "cocoa": "cocoa buffer stock talks",
    "money-supply": "money supply growth figures",
    "gnp": "economic growth forecast for gross national product",
    "jobs": "unemployment rate and jobless figures",
    "cpi": "consumer prices inflation rate",
    "veg-oil": "vegetable oil and palm oil imports",
    "livestock": "cattle and hog herds",
    "copper": "copper price and mine output",
    "nat-gas": "natural gas reserves and pipeline",
    "reserves": "foreign exchange reserves fell",
    "iron-steel": "steel production and steel mills",
    "cotton": "cotton crop and exports",
    "rubber": "natural rubber agreement",
    "bop": "current account balance of payments deficit",
}
NDCG_AT = 10
RECALL_AT = 100
MAP_DEPTH = 1000


# -- collections -----------------------------------------------------------------


def read_ir_collection(folder: Path) -> tuple[list[Article], dict[str, str], dict[str, dict]]:
    docs = []
    with open(folder / "docs.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            text = (d.get("text") or "").strip() or (d.get("title") or "").strip()
            if not text:
                continue
            docs.append(Article(id=str(d["id"]), title=(d.get("title") or "").strip(), text=text))
    queries = {}
    with open(folder / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            queries[str(q["id"])] = q["text"]
    qrels: dict[str, dict[str, int]] = {}
    with open(folder / "qrels.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid, did, rel = line.split("\t")[:3]
            if int(rel) > 0:
                qrels.setdefault(qid, {})[did] = int(rel)
    return docs, queries, qrels


def read_reuters(path: Path, limit: int) -> tuple[list[Article], dict[str, str], dict[str, dict]]:
    from newsquarry.search.ingest.readers import article_from_mapping

    docs, topics = [], {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            a = article_from_mapping(d)
            docs.append(a)
            topics[a.id] = set(d.get("topics") or [])
            if len(docs) >= limit:
                break
    queries = dict(TOPIC_QUERIES)
    qrels = {t: {doc: 1 for doc, tags in topics.items() if t in tags} for t in TOPIC_QUERIES}
    return docs, queries, qrels


# -- engines ---------------------------------------------------------------------


def build_newsquarry(docs: list[Article], index_dir: Path, enrich: bool) -> WhooshStore:
    """Index the documents through the normal pipeline, or reuse an index holding them."""
    marker = index_dir / "eval-collection.json"
    wanted = {"docs": len(docs), "first": docs[0].id, "last": docs[-1].id, "enrich": enrich}
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        return WhooshStore(index_dir, create=False)
    if index_dir.exists():
        shutil.rmtree(index_dir)
    store = WhooshStore(index_dir)
    t0 = time.perf_counter()
    from newsquarry.search.ingest.indexer import default_enricher, default_processes

    enricher = default_enricher(n_process=default_processes()) if enrich else _NoEnrich()
    index_articles(store, iter(docs), enricher=enricher, commit_every=1000)
    print(f"indexed {len(docs)} documents in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    marker.write_text(json.dumps(wanted))
    return store


def embed_newsquarry(store: WhooshStore) -> None:
    """Give the index's passages their vectors (only those missing: a reused index keeps
    what an earlier run encoded), with the time it took per passage."""
    from newsquarry.search.archive.vectors import embed

    t0 = time.perf_counter()
    done = embed(store)
    if done.total:
        took = time.perf_counter() - t0
        print(f"embedded {done.total} passages in {took:.0f} s "
              f"({took * 1000 / done.total:.1f} ms each)", file=sys.stderr)  # fmt: skip


class _NoEnrich:
    def enrich(self, items):  # noqa: ANN001, ANN201 - the enricher protocol
        yield from items


def newsquarry_engine(
    store: WhooshStore,
    match: str | None,
    retrieval: str = "keyword",
    fusion: str = "rrf",
    feedback: bool = True,
) -> Callable[[str], list[str]]:
    settings = None

    def run(q: str) -> list[str]:
        nonlocal settings
        from newsquarry.search.core.config import load_settings
        from newsquarry.search.core.errors import QueryError
        from newsquarry.search.query import feedback as rm3
        from newsquarry.search.query import semantic

        semantic.FUSION = fusion
        rm3.ENABLED = feedback
        settings = settings or {**load_settings(), "max_query_length": 10000}
        kw = {"match": match} if match else {}
        kw["retrieval"] = retrieval
        out: list[str] = []
        for page in range(1, MAP_DEPTH // 100 + 1):  # as deep as the baselines: MAP_DEPTH
            try:
                r = run_search(
                    store,
                    SearchRequest(
                        q=q,
                        group="article",
                        per_page=100,
                        page=page,
                        highlight=False,
                        suggest=False,
                        **kw,
                    ),
                    settings,
                )
            except QueryError as exc:
                print(f"query error: {q!r}: {exc}", file=sys.stderr)
                return out
            out += [h.article_id for h in r.hits]
            if len(r.hits) < 100:
                break
        return out

    return run


_WORD = re.compile(r"\w+")


def fts5_engine(docs: list[Article]) -> Callable[[str], list[str]]:
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE d USING fts5(id UNINDEXED, title, text, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    db.executemany("INSERT INTO d VALUES (?,?,?)", [(a.id, a.title, a.text) for a in docs])

    def run(q: str) -> list[str]:
        words = _WORD.findall(q)
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        rows = db.execute(
            "SELECT id FROM d WHERE d MATCH ? ORDER BY bm25(d) LIMIT ?", (match, MAP_DEPTH)
        ).fetchall()
        return [r[0] for r in rows]

    return run


def whoosh_engine(docs: list[Article], folder: Path) -> Callable[[str], list[str]]:
    from whoosh import index
    from whoosh.analysis import StemmingAnalyzer
    from whoosh.fields import ID, TEXT, Schema
    from whoosh.qparser import MultifieldParser, OrGroup

    schema = Schema(
        id=ID(stored=True, unique=True),
        title=TEXT(analyzer=StemmingAnalyzer()),
        text=TEXT(analyzer=StemmingAnalyzer()),
    )
    ix = index.create_in(str(folder), schema)
    w = ix.writer(limitmb=256)
    for a in docs:
        w.add_document(id=a.id, title=a.title, text=a.text)
    w.commit()
    searcher = ix.searcher()
    parser = MultifieldParser(["title", "text"], schema, group=OrGroup)

    def run(q: str) -> list[str]:
        hits = searcher.search(parser.parse(q), limit=MAP_DEPTH)
        return [h["id"] for h in hits]

    return run


# -- measures --------------------------------------------------------------------


def ndcg(ranked: list[str], rels: dict[str, int], k: int = NDCG_AT) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def average_precision(ranked: list[str], rels: dict[str, int]) -> float:
    hits, total = 0, 0.0
    for i, d in enumerate(ranked[:MAP_DEPTH]):
        if d in rels:
            hits += 1
            total += hits / (i + 1)
    return total / len(rels) if rels else 0.0


def recall(ranked: list[str], rels: dict[str, int], k: int = RECALL_AT) -> float:
    return len(set(ranked[:k]) & set(rels)) / len(rels) if rels else 0.0


def evaluate(
    run: Callable[[str], list[str]], queries: dict[str, str], qrels: dict[str, dict]
) -> dict[str, float]:
    judged = [qid for qid in queries if qrels.get(qid)]
    n = [0.0, 0.0, 0.0]
    zero = 0
    t0 = time.perf_counter()
    for qid in queries:
        ranked = run(queries[qid])
        if not ranked:
            zero += 1
        if qid in judged:
            rels = qrels[qid]
            n[0] += ndcg(ranked, rels)
            n[1] += average_precision(ranked, rels)
            n[2] += recall(ranked, rels)
    k = len(judged) or 1
    return {
        "ndcg@10": n[0] / k,
        "map": n[1] / k,
        "recall@100": n[2] / k,
        "zero_hits": zero,
        "queries": len(queries),
        "judged": len(judged),
        "ms_per_query": (time.perf_counter() - t0) * 1000 / max(len(queries), 1),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "collection", nargs="?", help="folder with docs.jsonl, queries.jsonl, qrels.tsv"
    )
    ap.add_argument("--reuters", help="reuters21578.jsonl: the topics check instead")
    ap.add_argument("--limit", type=int, default=4000, help="Reuters stories used (first N)")
    ap.add_argument("--index", help="newsquarry index folder (reused when it holds the docs)")
    ap.add_argument("--no-enrich", action="store_true", help="skip spaCy (faster, not the product)")
    ap.add_argument("--match", nargs="*", default=["most", "all", "any"],
                    help="newsquarry match modes to evaluate")  # fmt: skip
    ap.add_argument(
        "--retrieval",
        nargs="*",
        default=["keyword"],
        help="newsquarry retrievals to evaluate (keyword semantic hybrid)",
    )
    ap.add_argument(
        "--fusion", nargs="*", default=["rrf"], help="hybrid fusions to evaluate (rrf convex)"
    )
    ap.add_argument(
        "--feedback",
        nargs="*",
        default=["on"],
        help="RM3 feedback in the article ranking (query.feedback): on, off or both",
    )
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args(argv)
    if args.reuters:
        docs, queries, qrels = read_reuters(Path(args.reuters), args.limit)
        name = f"Reuters topics (first {len(docs)} stories, {len(queries)} topic queries)"
    elif args.collection:
        docs, queries, qrels = read_ir_collection(Path(args.collection))
        name = f"{Path(args.collection).name} ({len(docs)} docs, {len(queries)} queries)"
    else:
        ap.error("give a collection folder or --reuters")
    tmp = Path(tempfile.mkdtemp(prefix="nq-eval-"))
    try:
        index_dir = Path(args.index) if args.index else tmp / "nq"
        store = build_newsquarry(docs, index_dir, not args.no_enrich)
        (tmp / "whoosh").mkdir()
        if set(args.retrieval) - {"keyword"}:
            embed_newsquarry(store)
        engines: dict[str, Callable[[str], list[str]]] = {}
        for r in args.retrieval:
            for f in args.fusion if r == "hybrid" else ["rrf"]:
                for m in args.match:
                    for fb in args.feedback:
                        label = f"newsquarry match={m}" + (f" {r}" if r != "keyword" else "")
                        label += f" ({f})" if r == "hybrid" and len(args.fusion) > 1 else ""
                        label += f" feedback {fb}" if len(args.feedback) > 1 else ""
                        engines[label] = newsquarry_engine(store, m, r, f, fb == "on")
        engines["SQLite FTS5 (porter, bm25, OR)"] = fts5_engine(docs)
        engines["Whoosh BM25F (plain, OR)"] = whoosh_engine(docs, tmp / "whoosh")
        results = {label: evaluate(run, queries, qrels) for label, run in engines.items()}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{name}\n")
    print("| engine | nDCG@10 | MAP | recall@100 | zero-hit queries | ms/query |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, m in results.items():
        print(
            f"| {label} | {m['ndcg@10']:.4f} | {m['map']:.4f} | {m['recall@100']:.4f} "
            f"| {m['zero_hits']} of {m['queries']} | {m['ms_per_query']:.1f} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps({"collection": name, "results": results}, indent=1))


if __name__ == "__main__":
    main()
