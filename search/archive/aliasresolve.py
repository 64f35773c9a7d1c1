"""The alias table as searches apply it (``Resolver``), the override file's lines and the
names of the alias files: what a process that only searches imports of the alias table.

Learning the table (``archive.aliases``: ``AliasTable`` and its rules) is for writers,
the learner process and ``newsquarry aliases``; a search reads the learnt table
(``aliases.json``) and the override file through ``archive.aliasfiles.AliasStore``
into a ``Resolver`` and never needs the rules, so a fresh process's first search does not
import them (2 ms of its ~25 on Reuters). ``archive.aliases`` re-exports these names.
"""

from __future__ import annotations

from typing import Any

from newsquarry.search.archive.aliasmaps import key_map, remap
from newsquarry.search.core.errors import InvalidRequest
from newsquarry.search.core.textnorm import fold

NAME_FACETS = ("person", "org", "place", "speaker")
EVIDENCE_FILE = "aliases-evidence.json"
# each commit appends its changes here (one JSON line); folded into EVIDENCE_FILE when
# the journal outgrows a share of it, so a commit writes in proportion to what it changes
JOURNAL_FILE = "aliases-evidence.jsonl"
JOURNAL_SHARE = 0.25  # rewrite the whole evidence when the journal passes this share of it
JOURNAL_MIN = 1 << 20  # ... and this many bytes
# from this many articles on, a commit only appends its names: the table is learnt again
# by a background process (``AliasLearner``), off the writer's thread and its GIL
BACKGROUND_FROM = 1000
LEARN_LOCK = "aliases.lock"
# the learner's share of a core, at most 1/LEARNER_DUTY over time: after a run of t
# seconds, the next waits (LEARNER_DUTY - 1) * t (Reuters: a 1.4 s run, then ~13 s in
# which commits' names wait in the journal), unless someone waits for it (close, tests)
LEARNER_DUTY = 10
TABLE_FILE = "aliases.json"
OVERRIDE_FILE = "aliases.txt"


_NEW = object()  # an argument not given: a new empty container


class Resolver:
    """key -> canonical key, and canonical key -> display form, for one table state.

    Written out rather than made by ``@dataclass``, with the same ``__init__``, ``__eq__``
    (``evidence`` left out) and ``__repr__``: a dataclass writes and compiles those at
    import, 0.5 ms of a fresh process's first search, the one dataclass on its path.
    """

    __match_args__ = ("version", "canon", "display", "targets", "types", "evidence")
    __hash__ = None  # type: ignore[assignment]  # (mutable, compared by value)

    def __init__(
        self,
        version: str = "",
        canon: dict[str, str] = _NEW,  # type: ignore[assignment]
        display: dict[str, str] = _NEW,  # type: ignore[assignment]
        targets: set[str] = _NEW,  # type: ignore[assignment]
        types: dict[str, str] = _NEW,  # type: ignore[assignment]
        evidence: dict[str, tuple[str, int]] = _NEW,  # type: ignore[assignment]
    ) -> None:
        self.version = version
        self.canon = {} if canon is _NEW else canon
        self.display = {} if display is _NEW else display
        self.targets = set() if targets is _NEW else targets  # keys some other key maps to
        # canonical key -> the entity facet the archive types it as, where that is clear
        # ("Dome" tagged place in one story is Dome Petroleum, an org): counted there
        self.types = {} if types is _NEW else types
        # alias key -> (the rule that made it, the articles of evidence behind it): what
        # ``AliasTable.mappings`` lists; not in the table file (searches do not need it),
        # and not compared
        self.evidence = {} if evidence is _NEW else evidence

    def _compared(self) -> tuple:
        return (self.version, self.canon, self.display, self.targets, self.types)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._compared() == other._compared()  # type: ignore[attr-defined]
        return NotImplemented

    def __repr__(self) -> str:
        return (
            f"{type(self).__qualname__}(version={self.version!r}, canon={self.canon!r}, "
            f"display={self.display!r}, targets={self.targets!r}, types={self.types!r}, "
            f"evidence={self.evidence!r})"
        )

    def key(self, key: str) -> str:
        """The canonical folded key of a folded key (itself when it has no alias)."""
        return self.canon.get(key, key)

    def name(self, value: str) -> str:
        """The canonical display form of a value as written."""
        k = fold(value)
        c = self.canon.get(k, k)
        if c == k and k not in self.display:
            return value
        return self.display.get(c, value)

    def remap(self, fname: str, parts: Any, registries: Any) -> Any:
        """A name field's key ids mapped through this table (``remap``): what a view counts."""
        return remap(fname, parts, registries, self)

    def key_map(self, fname: str, parts: Any, registries: Any) -> Any:
        """A name field's key id -> canonical key id only (``aliasmaps.key_map``)."""
        return key_map(fname, parts, registries, self)


def with_overrides(learnt: Resolver, overrides: dict[str, str], version: str) -> Resolver:
    """The learnt mapping with the override file's lines applied on top (they win)."""
    r = Resolver(version, dict(learnt.canon), dict(learnt.display), types=dict(learnt.types))
    r.evidence = dict(learnt.evidence)
    for alias, canonical in overrides.items():
        r.evidence[alias] = ("override", 0)
        ckey = fold(canonical)
        for k, c in list(r.canon.items()):
            if c == alias and k != ckey:
                r.canon[k] = ckey  # what followed the alias follows its override
        if alias == ckey:
            r.canon.pop(alias, None)
        else:
            r.canon[alias] = ckey
            r.canon.pop(ckey, None)
        r.display[ckey] = canonical
    r.targets = set(r.canon.values())
    return r


def parse_overrides(text: str) -> dict[str, str]:
    """``alias = canonical`` lines -> {folded alias: canonical}; InvalidRequest on a bad line."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        alias, sep, canonical = line.partition("=")
        if not sep or not alias.strip() or not canonical.strip():
            raise InvalidRequest(
                f"{OVERRIDE_FILE} line {n}: expected 'alias = canonical', got {line!r}",
                field="aliases",
            )
        out[fold(alias)] = " ".join(canonical.split())
    return out
