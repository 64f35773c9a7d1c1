"""The CLI's search path: no spaCy, and Whoosh without modules it never uses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from newsquarry.search.store import WhooshStore

from .conftest import seed_items

ROOT = Path(__file__).resolve().parent.parent

PROBE = r"""
import json, sys
from click.testing import CliRunner
from newsquarry.search.cli import cli
r = CliRunner().invoke(cli, ["--index", sys.argv[1], "search", "Maduro", "--facet", "person",
                             "--facet", "org", "--facet", "place", "--json"])
assert r.exit_code == 0, (r.exit_code, r.output[-300:])
heavy = [m for m in ("spacy", "thinc", "torch", "asyncio", "urllib.request", "cached_property")
         if m in sys.modules]
import urllib.request, whoosh.reading
print(json.dumps({"total": json.loads(r.stdout)["total"], "heavy": heavy,
                  "urlopen": hasattr(urllib.request, "urlopen"),
                  "cached": whoosh.reading.cached_property.__module__}))
"""


def test_a_cli_search_loads_no_heavy_module(tmp_path):
    store = WhooshStore(tmp_path / "ix")
    seed, passages = seed_items()
    with store.writer() as w:
        w.put(seed, passages)
    store.close()
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "ix")],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["total"] > 0
    assert got["heavy"] == []
    # the stand-ins were only there while Whoosh was imported
    assert got["urlopen"] is True and got["cached"] == "functools"
