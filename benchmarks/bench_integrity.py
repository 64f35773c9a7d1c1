"""What checksums cost: at commit, at a new process's first search, and for `check`.

``python -m benchmarks.bench_integrity SRC.jsonl [--articles 2000] [--commit-every 200]
[--rounds 3] [--runs 10]``

Builds indexes of the first ``--articles`` articles of SRC (passages split, no
NLP: the writer's share is what checksums add to) and measures, interleaved
in the same run so machine load hits both sides alike:

- writing: the whole build with checksums (manifest, article lists) and with
  the manifest step switched off (the baseline), median of ``--rounds``;
- a new process's first search, ``newsquarry search council -n 1 --json``
  (every segment's CRC is verified before it is read) against the same with
  verification switched off, median of ``--runs``;
- ``newsquarry check`` on the index (reads every byte), median of ``--runs``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


class _NoNLP:
    def enrich(self, items):
        yield from items


def _build(path: Path, src: Path, n: int, commit_every: int, checksums: bool) -> float:
    from newsquarry.search.engine.storage import DurableFileStorage
    from newsquarry.search.engine.store import WhooshStore
    from newsquarry.search.ingest.indexer import index_articles
    from newsquarry.search.ingest.readers import read_paths

    original = DurableFileStorage._write_manifest
    if not checksums:
        DurableFileStorage._write_manifest = lambda self, temp, gen: None  # type: ignore[method-assign]
    try:
        items = []
        for item in read_paths([str(src)]):
            items.append(item)
            if len(items) >= n:
                break
        store = WhooshStore(path)
        t0 = time.perf_counter()
        index_articles(store, items, enricher=_NoNLP(), commit_every=commit_every)
        took = time.perf_counter() - t0
        store.close()
        return took
    finally:
        DurableFileStorage._write_manifest = original  # type: ignore[method-assign]


DRIVER = (
    "import sys\n"
    "if sys.argv[1] == 'off':\n"
    "    import search.integrity as i; i.VERIFIER.verify = lambda path: None\n"
    "from search.cli.app import main\n"
    "sys.argv = ['newsquarry'] + sys.argv[2:]\n"
    "main()\n"
)


def _process(args: list[str], mode: str = "on") -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", DRIVER, mode, *args], cwd=ROOT, env=env,
                   capture_output=True, check=False)  # fmt: skip
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("--articles", type=int, default=2000)
    ap.add_argument("--commit-every", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-integrity-"))
    try:
        write = {"checksums": [], "baseline": []}
        for r in range(a.rounds):
            for mode in ("checksums", "baseline"):
                path = work / f"{mode}-{r}"
                write[mode].append(_build(path, a.src, a.articles, a.commit_every,
                                          mode == "checksums"))  # fmt: skip
                if r < a.rounds - 1 or mode == "baseline":
                    shutil.rmtree(path)
        ix = work / f"checksums-{a.rounds - 1}"
        size = sum(f.stat().st_size for f in ix.iterdir() if f.is_file())
        search = ["--index", str(ix), "search", "council", "-n", "1", "--json"]
        runs = {"search (verify)": [], "search (no verify)": [], "--help": [], "check": []}
        for _ in range(a.runs):
            runs["search (verify)"].append(_process(search, "on"))
            runs["search (no verify)"].append(_process(search, "off"))
            runs["--help"].append(_process(["--help"]))
            runs["check"].append(_process(["--index", str(ix), "check"]))
        out = {
            "articles": a.articles,
            "commit_every": a.commit_every,
            "index_mb": round(size / 1e6, 1),
            "segments": len(list(ix.glob("*.seg"))),
            "write_s_median": {k: round(statistics.median(v), 2) for k, v in write.items()},
            "write_ratio": round(
                statistics.median(write["checksums"]) / statistics.median(write["baseline"]), 3
            ),
            "process_s_median": {k: round(statistics.median(v), 3) for k, v in runs.items()},
        }
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
