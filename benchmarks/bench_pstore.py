"""CPU cost of recording a commit's postings for its decoded postings file (``search.pstore``).

Usage::

    cp -a /tmp/reuters-16 /tmp/reuters-copy
    python -m benchmarks.bench_pstore /tmp/reuters-copy

The real posting stream of the index's first segment (every field, in the order Whoosh's
pool hands it to the field writer at a commit) is read back once, then consumed five times
plainly and five times through ``pstore.Capture`` (recording, then writing the file); the
medians of the CPU times give what a commit of that segment pays for its ``.pst`` file.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time

from newsquarry.search.engine import pstore
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.engine.views import leaves_of


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    store = WhooshStore(args[0], create=False)
    reader = leaves_of(store.searcher())[0][0]
    items = list(reader.iter_postings())
    print(f"{len(items)} postings, {reader.doc_count_all()} documents", file=sys.stderr)
    plain, rec, wr = [], [], []
    for _ in range(5):
        t = time.process_time()
        for _x in iter(items):
            pass
        plain.append(time.process_time() - t)
        cap = pstore.Capture(reader.schema)
        t = time.process_time()
        for _x in cap._record(iter(items)):
            pass
        rec.append(time.process_time() - t)
        with tempfile.TemporaryDirectory() as d:
            t = time.process_time()
            cap.write(d, reader.segment().segment_id(), reader.doc_count_all())
            wr.append(time.process_time() - t)
    m = statistics.median
    print(
        f"plain pass {m(plain) * 1000:.0f} ms, recording pass {m(rec) * 1000:.0f} ms, "
        f"file written in {m(wr) * 1000:.0f} ms: "
        f"{(m(rec) - m(plain) + m(wr)) * 1000:.0f} ms of CPU per segment"
    )


if __name__ == "__main__":
    main()
