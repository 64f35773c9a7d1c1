"""Import Whoosh without the modules it imports but newsquarry never uses.

A CLI search is a whole process, so import time is part of every answer
(docs/benchmarks.md, "Command line"). Importing Whoosh pulled in:

- ``urllib.request`` (with ``http.client`` and ``email``), for ``whoosh.compat``'s
  ``urlretrieve`` name, which nothing in Whoosh calls;
- the ``cached_property`` package, which imports ``asyncio`` (with
  ``concurrent.futures`` and ``logging``) for coroutine support, for one
  decorator in ``whoosh.reading``;
- ``whoosh.lang.morph_en`` (~6 ms: it compiles a thousand-line table of
  regular expressions), for ``whoosh.query.terms``' ``variations`` name, which
  only ``Variations`` queries call and newsquarry never makes.

While Whoosh's own modules are imported, ``install`` puts light stand-ins in
``sys.modules`` under those names (a ``urlretrieve`` and a ``variations`` that
import the real one when called; ``functools.cached_property``, which caches in
the instance's ``__dict__`` as the package's class does), then removes them, so
any later ``import urllib.request``, ``import cached_property`` or ``import
whoosh.lang.morph_en`` gets the real module.
Nothing changes when those modules were already imported.
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any


def _urlretrieve(*args: Any, **kw: Any) -> Any:
    from urllib.request import urlretrieve

    return urlretrieve(*args, **kw)


def _variations(*args: Any, **kw: Any) -> Any:
    from whoosh.lang.morph_en import variations

    return variations(*args, **kw)


def install() -> None:
    """Import Whoosh's core modules with the stand-ins in place."""
    if "whoosh.reading" in sys.modules:
        return
    shims: dict[str, types.ModuleType] = {}
    if "urllib.request" not in sys.modules:
        mod = types.ModuleType("urllib.request")
        mod.urlretrieve = _urlretrieve  # type: ignore[attr-defined]
        shims["urllib.request"] = mod
    if "cached_property" not in sys.modules:
        mod = types.ModuleType("cached_property")
        mod.cached_property = functools.cached_property  # type: ignore[attr-defined]
        shims["cached_property"] = mod
    if "whoosh.lang.morph_en" not in sys.modules:
        mod = types.ModuleType("whoosh.lang.morph_en")
        mod.variations = _variations  # type: ignore[attr-defined]
        shims["whoosh.lang.morph_en"] = mod
    sys.modules.update(shims)
    try:
        import whoosh.compat  # noqa: F401
        import whoosh.query  # noqa: F401 - the store imports it next
        import whoosh.reading  # noqa: F401
    finally:
        for name, mod in shims.items():
            if sys.modules.get(name) is mod:
                del sys.modules[name]
