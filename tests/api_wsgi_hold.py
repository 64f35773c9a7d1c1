"""A WSGI entry point for end-to-end tests: the real app whose searches are held, busy.

Each search first marks that it started (a file in ``NEWSQUARRY_TEST_HOLD``), then keeps
its thread busy in Python, as a long search does (it holds the interpreter lock in turns),
until the test creates ``release`` there; then it runs the real search. A test can so know,
by state, that every search is running, and ask what it wants meanwhile.
"""

import os
from pathlib import Path

from api_support import TagEnricher

import newsquarry.api.views.search as search_views
from newsquarry.api import create_app

HOLD = Path(os.environ["NEWSQUARRY_TEST_HOLD"])
_real_search = search_views.library_search


def _held_search(*args, **kwargs):
    marker = HOLD / f"started-{os.getpid()}-{os.urandom(6).hex()}"
    marker.touch()
    release = HOLD / "release"
    while not release.exists():
        sum(range(20_000))  # busy, in Python: the worker's other threads wait their turns
    return _real_search(*args, **kwargs)


search_views.library_search = _held_search
app = create_app(enricher=TagEnricher())
