"""Quotation clusters on a real index: recall on edited copies, a sample to judge by hand.

``recall``: quotations of the index (11+ words, the length from which
``quoteclusters`` accepts cut or edited copies) are edited the ways copy is edited
(truncation to 60-90% of the words, one word changed, other quote marks, a part left
out as an ellipsis); every edited copy is clustered together with *all* the index's
quotations (so a copy can also be pulled into a wrong cluster), and counted as
grouped when it lands in its original's cluster. Shorter quotations are measured
too and reported apart (they are only grouped when nearly identical).

``sample``: random clusters spanning 2+ articles, as Markdown, every copy with its
article, date, speaker and text, to judge by hand (docs/quality.md).

Usage::

    python -m benchmarks.eval_clusters recall /tmp/reuters-copy --sample 1000
    python -m benchmarks.eval_clusters sample /tmp/reuters-copy --clusters 50 --seed 23
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from typing import Any

import numpy as np

from newsquarry.search.archive import quoteclusters as qc
from newsquarry.search.archive import quotelinks as qlinks
from newsquarry.search.archive import quotesigs as qsigs
from newsquarry.search.engine.documents import stored_document
from newsquarry.search.engine.store import WhooshStore

DIGIT = re.compile(r"\d")
MARKS = [("“", "”"), ('"', '"'), ("«", "»"), ("'", "'"), ("‘", "’")]


def quotations(store: WhooshStore) -> list[tuple[int, str, str, str, str, int]]:
    """(global docnum, text, speaker, id, kind, YYYYMMDD date) of every live quotation."""
    from whoosh.query import Term

    s = store.searcher()
    out = []
    for d in sorted(s.docs_for_query(Term("doctype", "quote"))):
        f = s.stored_fields(d)
        date = int((f.get("date") or "0").replace("-", "")[:8] or 0)
        out.append((d, f.get("quote") or "", f.get("speaker") or "", f.get("id") or "",
                    f.get("quote_kind") or "", date))  # fmt: skip
    return out


def edit(rng: random.Random, kind: str, text: str, vocab: list[str]) -> str:
    w = text.split()
    if kind == "truncation":
        keep = min(len(w), max(11, int(len(w) * rng.uniform(0.6, 0.9))))
        start = rng.randint(0, len(w) - keep)
        return " ".join(w[start : start + keep])
    if kind == "changed word":  # a word, not a figure (a changed figure is another statement)
        spots = [i for i, x in enumerate(w) if not DIGIT.search(x)]
        i = rng.choice(spots)
        w[i] = rng.choice([v for v in vocab[:200] if v != w[i].lower()])
        return " ".join(w)
    if kind == "ellipsis":
        k = rng.randint(1, 3)
        i = rng.randint(2, len(w) - k - 2)
        return " ".join(w[:i] + [rng.choice(["...", "…", ". . ."])] + w[i + k :])
    left, right = rng.choice(MARKS)  # quote style, straight and curly apostrophes swapped
    return left + text.replace("'", "’") + right


KINDS = ("truncation", "changed word", "ellipsis", "quote style")


def recall(path: str, sample: int, seed: int) -> dict[str, Any]:
    store = WhooshStore(path, create=False, background_merges=False)
    rows = quotations(store)
    rng = random.Random(seed)
    counts: dict[str, int] = {}
    for _, text, *_ in rows:
        for x in qsigs.words(text):
            counts[x] = counts.get(x, 0) + 1
    vocab = [x for x, _ in sorted(counts.items(), key=lambda kv: -kv[1]) if x.isalpha()]
    out: dict[str, Any] = {"quotations": len(rows)}
    for label, lo, hi in (("11+ words", 11, 10_000), ("6-10 words", 6, 10)):
        pool = [r for r in rows if lo <= min(len(qsigs.words(r[1])), len(r[1].split())) <= hi]
        if label == "6-10 words":  # truncation and an ellipsis need room: word and quote marks
            kinds = ("changed word", "quote style")
        else:
            kinds = KINDS
        chosen = rng.sample(pool, min(sample, len(pool)))
        extra = []
        for n, (_, text, speaker, qid, qkind, date) in enumerate(chosen):
            for kind in kinds:
                extra.append((n, kind, edit(rng, kind, text, vocab), speaker, qid, qkind, date))
        records = [(i, t, s, q, k) for i, (_, t, s, q, k, _) in enumerate(rows)]
        base = len(records)
        records += [(base + k, t, s, f"{q}~{k}", qk) for k, (_, _, t, s, q, qk, _) in
                    enumerate(extra)]  # fmt: skip
        dates = np.asarray([r[5] for r in rows] + [e[6] for e in extra], dtype=np.int64)
        t0 = time.perf_counter()
        data = qsigs.compute(records)
        labels = qlinks.link(data.sig, data.nsh, data.speakers, data.figures, dates=dates,
                         indirect=data.indirect)  # fmt: skip
        took = time.perf_counter() - t0
        index_of = {r[3]: i for i, r in enumerate(rows)}
        per = {k: [0, 0] for k in kinds}
        for k, (n, kind, *_) in enumerate(extra):
            per[kind][1] += 1
            per[kind][0] += int(labels[base + k] == labels[index_of[chosen[n][3]]])
        grouped = sum(v[0] for v in per.values())
        total = sum(v[1] for v in per.values())
        out[label] = {
            "originals": len(chosen),
            "pool": len(pool),
            "recall": round(grouped / total, 4) if total else None,
            "by_edit": {k: round(v[0] / v[1], 4) for k, v in per.items() if v[1]},
            "seconds_signatures_and_links": round(took, 2),
        }
    return out


def sample(path: str, clusters: int, seed: int) -> str:
    store = WhooshStore(path, create=False, background_merges=False)
    c = qc.clusters_for(store)
    multi = np.flatnonzero(c.articles > 1).tolist()
    rng = random.Random(seed)
    chosen = rng.sample(multi, min(clusters, len(multi)))
    s = store.searcher()
    lines = [f"{len(multi)} clusters span 2+ articles; {len(chosen)} drawn (seed {seed}).", ""]
    for n, k in enumerate(chosen, start=1):
        members = c.members(k)
        lines.append(f"**{n}. {c.public_id(k)}** ({len(members)} quotations, "
                     f"{int(c.articles[k])} articles)")  # fmt: skip
        for d in members.tolist():
            f = s.stored_fields(d)
            data = json.loads(f.get("data") or "{}")
            title = (stored_document(s, f.get("passage_id", ""), "passage") or {}).get("title")
            lines.append(
                f"- `{f['id']}` {f.get('date') or ''} · {title} · "
                f"{data.get('speaker') or '(no speaker)'} · {data.get('kind')}: “{f.get('quote')}”"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recall")
    r.add_argument("index")
    r.add_argument("--sample", type=int, default=1000)
    r.add_argument("--seed", type=int, default=23)
    s = sub.add_parser("sample")
    s.add_argument("index")
    s.add_argument("--clusters", type=int, default=50)
    s.add_argument("--seed", type=int, default=23)
    args = ap.parse_args(argv)
    if args.cmd == "recall":
        print(json.dumps(recall(args.index, args.sample, args.seed), indent=2))
    else:
        print(sample(args.index, args.clusters, args.seed))


if __name__ == "__main__":
    main()
