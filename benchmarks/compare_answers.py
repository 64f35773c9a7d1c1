"""Answers of a fixed set of requests on a saved index, as JSON, to compare two revisions.

Usage::

    # with the code before a change (PYTHONPATH: a folder mapping newsquarry.search to it)
    python -m benchmarks.compare_answers dump --index /tmp/saved --out before.json
    # with the code after it, on a copy of the same index
    python -m benchmarks.compare_answers dump --index /tmp/saved-copy --out after.json
    python -m benchmarks.compare_answers diff before.json after.json

Requests go through the public Python API (``newsquarry.search.Index``), which a
refactoring keeps: keyword searches in each match mode with facets and filters,
quotation searches grouped by cluster, sorted by date, facet value search, an article,
a passage, and the stats that do not depend on the machine. Timings are dropped.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

QUERIES = [
    "torture",
    "army",
    "oil prices",
    '"central bank"',
    "trade AND japan",
    "coffee OR cocoa",
    "minister NOT bank",
    "export*",
    "what did the minister say about interest rates",
    "speaker:Reagan",
    "dollar~",
    "guaido",
    "strike",
]
FACETS = ["person", "org", "place", "speaker", "source", "article", "date"]


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _clean(v)
            for k, v in value.items()
            if k
            not in ("took_ms", "processingTimeMs", "seconds", "size_bytes", "last_modified", "path")
        }
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float):
        return round(value, 6)
    return value


def dump(index: str) -> dict[str, Any]:
    """Every answer of the fixed requests on ``index``."""
    from newsquarry.search import Index

    out: dict[str, Any] = {}
    with Index(index, create=False) as ix:
        for q in QUERIES:
            for match in ("most", "all", "any"):
                r = ix.search(q, facets=FACETS, match=match, per_page=20)
                out[f"search {q!r} {match}"] = _clean(r.to_dict())
            r = ix.search(q, facets=["person", "org"], group="article", sort="date")
            out[f"search {q!r} article/date"] = _clean(r.to_dict())
            r = ix.quotes(q, facets=["speaker"], group="cluster")
            out[f"quotes {q!r} cluster"] = _clean(r.to_dict())
        top = ix.search("", facets=["person", "place"], facet_size=3)
        person = [v.value for v in top.facets["person"].values][:2]
        place = [v.value for v in top.facets["place"].values][:1]
        r = ix.search("said", filters={"person": person, "place": place}, facets=FACETS)
        out["search filtered"] = _clean(r.to_dict())
        for facet in ("person", "org", "speaker"):
            for prefix in ("", "a", "re"):
                got = ix.facet_values(facet, prefix=prefix)
                out[f"facet_values {facet} {prefix!r}"] = _clean(
                    got.to_dict() if hasattr(got, "to_dict") else got
                )
        first = ix.search("the", per_page=3).hits
        for h in first:
            out[f"passage {h.id}"] = _clean(ix.passage(h.id))
            out[f"article {h.article_id}"] = _clean(ix.article(h.article_id))
        stats = ix.stats()
        out["stats"] = {k: stats[k] for k in ("articles", "passages", "quotes", "segments")}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compare_answers")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--index", required=True)
    d.add_argument("--out", required=True)
    c = sub.add_parser("diff")
    c.add_argument("before")
    c.add_argument("after")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        answers = dump(args.index)
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(answers, f, ensure_ascii=False, indent=1, sort_keys=True, default=str)
        print(f"{len(answers)} answers written to {args.out}")
        return 0
    with open(args.before, encoding="utf-8") as f:
        before = json.load(f)
    with open(args.after, encoding="utf-8") as f:
        after = json.load(f)
    differ = [k for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)]
    for k in differ[:20]:
        print(f"differs: {k}")
    print(f"{len(before)} answers before, {len(after)} after, {len(differ)} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
