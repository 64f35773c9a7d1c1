"""The CLI's search path: no spaCy, and Whoosh without modules it never uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from whoosh.lang.morph_en import variations

from newsquarry.search.engine.store import WhooshStore

from .conftest import seed_items

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, sys
from click.testing import CliRunner
from newsquarry.search.cli.app import cli
r = CliRunner().invoke(cli, ["--index", sys.argv[1], "search", "Maduro", "--facet", "person",
                             "--facet", "org", "--facet", "place", "--json"])
assert r.exit_code == 0, (r.exit_code, r.output[-300:])
heavy = [m for m in ("spacy", "thinc", "torch", "asyncio", "urllib.request", "cached_property",
                     "whoosh.lang.morph_en", "numpy.random") if m in sys.modules]
import os, numpy
threads = len(os.listdir("/proc/self/task"))  # numpy is imported: any BLAS threads run now
import urllib.request, whoosh.reading, whoosh.query.terms
print(json.dumps({"total": json.loads(r.stdout)["total"], "heavy": heavy,
                  "urlopen": hasattr(urllib.request, "urlopen"),
                  "cached": whoosh.reading.cached_property.__module__,
                  "variations": sorted(whoosh.query.terms.variations("rendered"))[:3],
                  "threads": threads}))
"""


def test_a_cli_search_loads_no_heavy_module(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    seed, passages = seed_items()
    with store.writer() as w:
        w.put(seed, passages)
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "ix")],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["total"] > 0
    assert got["heavy"] == []
    # the stand-ins were only there while Whoosh was imported
    assert got["urlopen"] is True and got["cached"] == "functools"
    # ... and Whoosh's word variations import the real table when a query asks for them
    assert got["variations"] == sorted(variations("rendered"))[:3]
    # numpy starts no BLAS threads in a CLI process (newsquarry does no linear algebra)
    assert got["threads"] == 1


LIBRARY_PROBE = r"""
import json, sys
from newsquarry.search import Index
with Index(sys.argv[1], create=False) as ix:
    total = ix.search("Maduro", facets=["person", "org"]).total
heavy = [m for m in ("asyncio", "urllib.request", "cached_property", "whoosh.lang.morph_en",
                     "whoosh.highlight", "newsquarry.search.archive.aliases")
         if m in sys.modules]  # (the alias table's rules: only learning it needs them)
import linecache, urllib.request, whoosh.reading, whoosh.searching
# Whoosh's Results highlight through the stand-in: the real module, imported then
highlighter = whoosh.searching.highlight.Highlighter
import whoosh.highlight
print(json.dumps({"total": total, "heavy": heavy, "urlopen": hasattr(urllib.request, "urlopen"),
                  "cached": whoosh.reading.cached_property.__module__,
                  "source": bool(linecache.getline(whoosh.reading.__file__, 1)),
                  "highlight": highlighter is whoosh.highlight.Highlighter
                  and whoosh.highlight.__file__.endswith("highlight.py")}))
"""


def test_the_library_imports_whoosh_light_too(tmp_path):
    """A process that only uses the Python API (a notebook, a cron job, an API worker)
    gets the same light Whoosh as the CLI, whichever module imports Whoosh first."""
    store = WhooshStore(tmp_path / "ix")
    seed, passages = seed_items()
    with store.writer() as w:
        w.put(seed, passages)
    store.close()
    out = subprocess.run(
        [sys.executable, "-c", LIBRARY_PROBE, str(tmp_path / "ix")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["total"] > 0
    assert got["heavy"] == []
    assert got["urlopen"] is True and got["cached"] == "functools"
    assert got["source"] is True  # Whoosh's source lines are still there for tracebacks
    assert got["highlight"] is True
