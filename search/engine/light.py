"""Import Whoosh without the modules it imports but newsquarry never uses.

Import time is part of every first answer: a CLI search is a whole process, and so is
every API worker start, every ``Index(...)`` in a new notebook and every cron job
(docs/benchmarks.md, "Command line", "First search"). Importing Whoosh pulled in:

- ``urllib.request`` (with ``http.client`` and ``email``), for ``whoosh.compat``'s
  ``urlretrieve`` name, which nothing in Whoosh calls;
- the ``cached_property`` package, which imports ``asyncio`` (with
  ``concurrent.futures`` and ``logging``) for coroutine support, for one
  decorator in ``whoosh.reading``;
- ``whoosh.lang.morph_en`` (~6 ms: it compiles a thousand-line table of
  regular expressions), for ``whoosh.query.terms``' ``variations`` name, which
  only ``Variations`` queries call and newsquarry never makes;
- ``whoosh.highlight`` (a 45 KB module, ~0.5 ms of a fresh process's first search,
  which imports ``whoosh.searching``), for the highlighters of Whoosh's ``Results``,
  which newsquarry never asks for (it highlights with ``query.highlight``).

While one of those four Whoosh modules runs its import, light stand-ins sit in
``sys.modules`` under those names (a ``urlretrieve`` and a ``variations`` that import
the real one when called; ``functools.cached_property``, which caches in the
instance's ``__dict__`` as the package's class does; for ``whoosh.highlight`` a module
that imports the real one on its first attribute read and hands over its attributes);
they are removed as soon as it is done, so any later ``import urllib.request``,
``import cached_property``, ``import whoosh.lang.morph_en`` or ``import
whoosh.highlight`` gets the real module. ``register`` (called by the engine package,
so by every process that uses the library, whichever module imports Whoosh first) puts
a finder on ``sys.meta_path`` that does this for those four modules only; ``install``
imports Whoosh's core modules now. Nothing changes when those modules were already
imported.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import sys
import types
from typing import Any

# the Whoosh modules whose imports the stand-ins serve (what ``install`` imports)
_HOSTS = frozenset({"whoosh.compat", "whoosh.reading", "whoosh.query.terms", "whoosh.searching"})


def _urlretrieve(*args: Any, **kw: Any) -> Any:
    # lazy: the stand-in's point (urllib.request is imported only if this is called)
    from urllib.request import urlretrieve

    return urlretrieve(*args, **kw)


def _variations(*args: Any, **kw: Any) -> Any:
    # lazy: the stand-in's point (morph_en is imported only if this is called)
    from whoosh.lang.morph_en import variations

    return variations(*args, **kw)


class _OnFirstUse(types.ModuleType):
    """A module that imports the real one of its name on its first attribute read (once
    the host's import is done and this stand-in left ``sys.modules``) and reads from it."""

    def __getattr__(self, name: str) -> Any:
        if sys.modules.get(self.__name__) is self:  # read while the host imports: the real
            del sys.modules[self.__name__]  # one now, as if it had been imported then
        return getattr(importlib.import_module(self.__name__), name)


def _stand_ins() -> dict[str, types.ModuleType]:
    """The stand-ins for the modules not imported yet."""
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
    if "whoosh.highlight" not in sys.modules:
        shims["whoosh.highlight"] = _OnFirstUse("whoosh.highlight")
    return shims


class _WithStandIns:
    """A module's own loader, run with the stand-ins in ``sys.modules`` (everything else,
    ``get_source`` for tracebacks included, is the real loader's)."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def create_module(self, spec: Any) -> Any:
        return self._real.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        shims = _stand_ins()
        sys.modules.update(shims)
        try:
            self._real.exec_module(module)
        finally:
            for name, mod in shims.items():
                if sys.modules.get(name) is mod:
                    del sys.modules[name]


class _LightFinder:
    """Finds the four host modules as the path finder does, with the stand-ins' loader."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> Any:
        if name not in _HOSTS:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _WithStandIns(spec.loader)
        return spec


_FINDER = _LightFinder()


def register() -> None:
    """Make every later import of Whoosh's core light (once per process)."""
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def install() -> None:
    """Import Whoosh's core modules now, with the stand-ins in place."""
    register()
    # lazy on purpose: this function's job is these imports, after the stand-ins are in place
    import whoosh.compat  # noqa: F401
    import whoosh.query  # noqa: F401 - the store imports it next
    import whoosh.reading  # noqa: F401
