"""The merge process: ``python -m newsquarry.search.engine.mergeprocess FOLDER`` runs the due
merges of an index, started by a store after a commit (``merging.Merger``) at niceness +10."""

from __future__ import annotations

import argparse
import sys

from newsquarry.search.core.background import background_priority, exit_with_parent
from newsquarry.search.engine.merging import (
    FACTOR,
    FLOOR_DOCS,
    MAX_MERGE_DOCS,
    merge_once,
    merge_tiered,
)
from newsquarry.search.engine.store import WhooshStore


def main(argv: list[str] | None = None) -> int:
    """The merge process: run the due merges of the index in a folder; prints how many."""
    ap = argparse.ArgumentParser(prog="python -m newsquarry.search.engine.mergeprocess")
    ap.add_argument("folder")
    ap.add_argument("--factor", type=int, default=FACTOR)
    ap.add_argument("--floor-docs", type=int, default=FLOOR_DOCS)
    ap.add_argument("--max-docs", type=int, default=MAX_MERGE_DOCS)
    ap.add_argument("--lock-timeout", type=float, default=30.0)
    ap.add_argument("--parent", type=int, default=0, help="exit when this process is gone")
    args = ap.parse_args(argv)
    if args.parent:  # a background merge, started by a store after a commit
        exit_with_parent(args.parent)
        background_priority()  # behind the serving processes' searches and writes

    merges = 0
    try:
        store = WhooshStore(args.folder, create=False, lock_timeout=args.lock_timeout,
                            background_merges=False)  # fmt: skip
        store.merge_policy = merge_tiered(args.factor, args.floor_docs, args.max_docs)
        try:
            while merge_once(store):
                merges += 1
        finally:
            store.close()
    except Exception as exc:  # noqa: BLE001 - one line for the parent's log
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(merges)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
