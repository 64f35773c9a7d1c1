"""Fixes to whoosh-reloaded 2.7.5 that newsquarry relies on, applied on import.

Whoosh names new segments and temporary files with ``random.choice``: the
global ``random`` module, whose state a host program may seed. Two writes made
after the same ``random.seed(...)`` (a script that seeds for reproducible
sampling, a test framework that seeds every example) get the same segment
name, and the second commit fails on the first one's files (seen here as an
``AssertionError`` in ``create_compound_file`` under hypothesis). Names come
from the operating system's randomness instead, which nobody seeds.

(The other Whoosh fix, not using ``Searcher.refresh()``, lives in ``store``.)
"""

from __future__ import annotations

import secrets

import whoosh.codec.base
import whoosh.filedb.compound
import whoosh.filedb.filestore
import whoosh.writing
from whoosh.util import IDCHARS


def random_name(size: int = 28) -> str:
    """A file name part from os-level randomness (same alphabet as Whoosh's)."""
    return "".join(secrets.choice(IDCHARS) for _ in range(size))


for _module in (whoosh.codec.base, whoosh.filedb.compound, whoosh.filedb.filestore, whoosh.writing):
    _module.random_name = random_name  # type: ignore[attr-defined]
