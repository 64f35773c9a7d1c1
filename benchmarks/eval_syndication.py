"""Syndication check: are copies of one story grouped, and different stories kept apart?

A labelled set of article pairs made from a real news collection (BBC News 2004-2005):

- **Copies** (positive pairs): a seeded sample of articles, each republished once or twice
  the way wire copy is: ``dateline`` (a new headline, "CITY (Agency) -" before the text and a
  credit line after it), ``cut`` (the first half to nine tenths of its paragraphs), ``edited``
  (about one sentence in eight reworded or dropped, a paragraph added), and ``cut+edited``.
  Pairs: each copy with its original, and two copies of one original with each other.
- **The collection's own repeats** (positive pairs): BBC published some stories twice
  (updated, re-headlined). Labelled without the method under test: pairs sharing at least
  half of the shorter text's exact eight-word sequences (every pair is compared exactly,
  through an index of eight-word sequences; no MinHash, no figures, no dates).
- **Everything else** (negative pairs): the other pairs of the collection, stories on the
  same events, the same people and the same matches among them.

The method (``archive.stories.group`` over ``archive.storysigs`` signatures, as an index
state links them) groups every article of the set; its predicted pairs are the pairs of
articles in one story. Precision and recall over pairs, overall and per kind of copy.

It also measures what signatures cost at indexing: an index of ``--index-limit`` articles
is built with the real enricher, and the CPU of computing its segments' signatures (what a
commit runs) is set against the CPU of the whole indexing, same run. With ``--reuters``,
the Reuters articles that have copies plus as many others are indexed, and the speaker
facet over quotations is counted raw and once per story (``dedupe="story"``).

    python -m benchmarks.eval_syndication --corpus /work/shared/corpora/bbc_news_2004_2005.jsonl \\
        [--reuters /work/shared/corpora/reuters21578.jsonl] [--index-limit 200]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import tempfile
import time
from collections import Counter, defaultdict
from itertools import combinations
from pathlib import Path

import numpy as np

from newsquarry.search.archive import stories, storysigs

AGENCIES = ["Wire Service", "Press Association", "Global News", "City Desk", "NewsLink"]
CITIES = ["LONDON", "NEW YORK", "PARIS", "BRUSSELS", "GENEVA", "MADRID"]
RECIPES = ["dateline", "cut", "edited", "cut+edited"]
FILLER = [
    "The company did not respond to a request for comment.",
    "Officials were not immediately available for further comment on Monday.",
    "Additional reporting by our correspondents in the region.",
    "The figures are expected to be revised later this month.",
]
SWAPS = [("said", "told reporters"), ("however", "but"), ("also", "as well"),
         ("expected", "forecast"), ("announced", "said"), ("very", "")]  # fmt: skip


def load(path: str, limit: int | None = None) -> list[dict]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            out.append(json.loads(line))
            if limit and len(out) >= limit:
                break
    return out


def paragraphs(text: str) -> list[str]:
    parts = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    return parts if len(parts) > 1 else [p for p in text.split("\n") if p.strip()]


def reword(par: str, rng: random.Random) -> str:
    """About one sentence in eight of a paragraph reworded or dropped."""
    sentences = re.split(r"(?<=[.!?])\s+", par)
    out = []
    for s in sentences:
        roll = rng.random()
        if roll < 0.06 and len(sentences) > 1:
            continue  # dropped
        if roll < 0.125:
            for a, b in SWAPS:
                if f" {a} " in s:
                    s = s.replace(f" {a} ", f" {b} " if b else " ", 1)
                    break
            else:
                words = s.split()
                if len(words) > 6:
                    del words[rng.randrange(1, len(words) - 1)]
                    s = " ".join(words)
        out.append(s)
    return " ".join(out)


def make_copy(art: dict, recipe: str, rng: random.Random, n: int) -> dict:
    pars = paragraphs(art["text"])
    if "cut" in recipe:
        keep = max(2, int(len(pars) * rng.uniform(0.5, 0.9)))
        pars = pars[:keep]
    if "edited" in recipe:
        pars = [reword(p, rng) for p in pars] + [rng.choice(FILLER)]
    text = "\n\n".join(pars)
    if recipe == "dateline":
        agency = rng.choice(AGENCIES)
        text = f"{rng.choice(CITIES)} ({agency}) - {text}\n\nReporting by {agency} staff."
    return {
        "id": f"{art['id']}~copy{n}",
        "title": ("UPDATE: " if recipe == "dateline" else "") + (art.get("title") or ""),
        "text": text,
        "source": rng.choice(AGENCIES),
        "date": art.get("date"),
        "recipe": recipe,
        "original": art["id"],
    }


def natural_repeats(arts: list[dict], k: int = 8, share: float = 0.5) -> set[tuple[int, int]]:
    """Pairs of the collection sharing at least ``share`` of the shorter text's distinct
    ``k``-word sequences, compared exactly (every pair that shares one is looked at)."""
    grams = []
    for a in arts:
        w = re.findall(r"\w+", (a["text"] or "").lower())
        grams.append({" ".join(w[i : i + k]) for i in range(max(0, len(w) - k + 1))})
    where = defaultdict(list)
    for i, g in enumerate(grams):
        for x in g:
            where[x].append(i)
    shared: Counter = Counter()
    for ids in where.values():
        if 1 < len(ids) <= 50:
            for i, j in combinations(ids, 2):
                shared[(i, j)] += 1
    return {
        (i, j) for (i, j), c in shared.items()
        if c >= share * max(1, min(len(grams[i]), len(grams[j])))
    }  # fmt: skip


def predicted_pairs(arts: list[dict]) -> tuple[set[tuple[int, int]], float, float]:
    t = time.process_time()
    data = storysigs.compute(
        [(i, a["id"], a["text"], a.get("source") or "", a.get("date") or "")
         for i, a in enumerate(arts)]
    )  # fmt: skip
    sign = time.process_time() - t
    t = time.process_time()
    roots = stories.group(data.sig, data.nsh, data.figures, stories._days(data.dates))
    link = time.process_time() - t
    members = defaultdict(list)
    for i, r in enumerate(roots.tolist()):
        members[r].append(i)
    pairs = {p for m in members.values() if len(m) > 1 for p in combinations(sorted(m), 2)}
    return pairs, sign / max(1, len(arts)) * 1000, link


def closure(pairs: set[tuple[int, int]], n: int) -> set[tuple[int, int]]:
    """Every pair of articles connected by labelled pairs."""
    parent = list(range(n))

    def find(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in pairs:
        parent[find(i)] = find(j)
    groups = defaultdict(list)
    for i, j in pairs:
        for x in (i, j):
            groups[find(x)].append(x)
    return {p for m in groups.values() for p in combinations(sorted(set(m)), 2)}


def pr(pred: set, pos: set) -> tuple[float, float]:
    tp = len(pred & pos)
    return (tp / len(pred) if pred else 1.0), (tp / len(pos) if pos else 1.0)


def check(corpus: str, n_originals: int, seed: int) -> dict:
    rng = random.Random(seed)
    base = load(corpus)
    chosen = rng.sample(range(len(base)), min(n_originals, len(base)))
    copies = []
    for n, i in enumerate(chosen):
        for k in range(rng.choice([1, 1, 2])):
            copies.append(make_copy(base[i], rng.choice(RECIPES), rng, 2 * n + k))
    arts = base + copies
    index = {a["id"]: i for i, a in enumerate(arts)}
    pos_copy: dict[tuple[int, int], str] = {}
    by_original = defaultdict(list)
    for c in copies:
        by_original[c["original"]].append(c)
        pair = tuple(sorted((index[c["original"]], index[c["id"]])))
        pos_copy[pair] = c["recipe"]
    for cs in by_original.values():
        for a, b in combinations(cs, 2):
            pos_copy[tuple(sorted((index[a["id"]], index[b["id"]])))] = "copy+copy"
    natural = natural_repeats(base)
    # a copy of a story the collection itself repeated is a copy of the repeat too: the
    # positive pairs are those of the labelled stories (connected components)
    positives = closure(set(pos_copy) | natural, len(arts))
    pred, sign_ms, link_s = predicted_pairs(arts)
    p, r = pr(pred, positives)
    per_kind = {}
    for kind in [*RECIPES, "copy+copy"]:
        want = {q for q, k in pos_copy.items() if k == kind}
        per_kind[kind] = {"pairs": len(want), "recall": round(len(pred & want) / max(1, len(want)), 3)}
    wrong = sorted(pred - positives)
    return {
        "articles": len(arts), "originals": len(base), "copies": len(copies),
        "positive_pairs": len(positives), "natural_repeat_pairs": len(natural),
        "predicted_pairs": len(pred), "precision": round(p, 4), "recall": round(r, 4),
        "natural_recall": round(len(pred & natural) / max(1, len(natural)), 3),
        "per_kind": per_kind,
        "false_pairs": [(arts[i]["id"], arts[j]["id"], arts[i].get("title"), arts[j].get("title"))
                        for i, j in wrong[:20]],
        "missed": [(arts[i]["id"], arts[j]["id"], pos_copy.get((i, j), "natural"))
                   for i, j in sorted(positives - pred)[:20]],
        "sign_ms_per_article": round(sign_ms, 3), "link_s": round(link_s, 3),
    }  # fmt: skip


def _cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def index_cost(corpus: str, limit: int) -> dict:
    """CPU of signing a real index's segments (what commits run) against the whole
    indexing of the same articles, same process."""
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.ingest.indexer import index_articles
    from newsquarry.search.ingest.readers import article_from_mapping

    arts = [article_from_mapping({k: v for k, v in a.items() if k != "category"})
            for a in load(corpus, limit)]  # fmt: skip
    with tempfile.TemporaryDirectory() as d:
        store = WhooshStore(Path(d) / "ix")
        t = _cpu()
        index_articles(store, arts)
        total = _cpu() - t
        searcher = store.searcher()
        t = time.process_time()
        for reader, _ in searcher.ixreader.leaf_readers():
            storysigs.compute_segment(reader)
        sign = time.process_time() - t
        store.close()
    return {"articles": len(arts), "index_cpu_s": round(total, 2), "sign_cpu_s": round(sign, 3),
            "share": round(sign / total, 4)}  # fmt: skip


def reuters_counts(path: str, others: int) -> dict:
    """Speaker counts over quotations, raw and once per story, on the Reuters articles that
    have copies plus ``others`` more."""
    from newsquarry.search.library import Index

    recs = load(path)
    data = storysigs.compute([(i, r["id"], r["text"], "", r.get("date") or "")
                              for i, r in enumerate(recs)])  # fmt: skip
    roots = stories.group(data.sig, data.nsh, data.figures, stories._days(data.dates))
    size = Counter(roots.tolist())
    grouped = [r for i, r in enumerate(recs) if size[int(roots[i])] > 1]
    rng = random.Random(1)
    rest = [r for i, r in enumerate(recs) if size[int(roots[i])] == 1]
    picked = grouped + rng.sample(rest, min(others, len(rest)))
    keep = ("id", "title", "text", "date", "source")
    with tempfile.TemporaryDirectory() as d:
        ix = Index(Path(d) / "ix")
        ix.add([{k: r[k] for k in keep if r.get(k)} for r in picked])
        raw = ix.quotes("", facets=["speaker"], facet_size=15)
        once = ix.quotes("", facets=["speaker"], facet_size=15, dedupe="story")
        grouped_hits = ix.search("", group="story", per_page=1)
        out = {
            "articles": len(picked), "with_copies": len(grouped),
            "stories": grouped_hits.total_stories, "quotes": raw.total,
            "speakers_raw": [(v.value, v.count) for v in raw.facets["speaker"].values],
            "speakers_once_per_story": [(v.value, v.count) for v in once.facets["speaker"].values],
        }  # fmt: skip
        ix.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="BBC News JSON Lines")
    ap.add_argument("--originals", type=int, default=300, help="articles republished")
    ap.add_argument("--seed", type=int, default=20261204)
    ap.add_argument("--index-limit", type=int, default=0, help="index this many for the cost")
    ap.add_argument("--reuters", help="Reuters-21578 JSON Lines: raw vs once-per-story counts")
    ap.add_argument("--reuters-others", type=int, default=750)
    args = ap.parse_args()
    out = {"check": check(args.corpus, args.originals, args.seed)}
    if args.index_limit:
        out["index_cost"] = index_cost(args.corpus, args.index_limit)
    if args.reuters:
        out["reuters"] = reuters_counts(args.reuters, args.reuters_others)
    print(json.dumps(out, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
