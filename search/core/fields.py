"""A newsroom's own fields: extra fields of the data, declared per index.

An article read from JSON Lines (or put over the API) may carry fields beyond the ones
of the data model (``category``, ``desk``, ``paywall``...). Every such field is kept in
the stored article (``Article.fields``); the ones *declared* for the index are also
filterable, facetable, exported and listed in the API schema. A declaration is a name
and a kind:

- ``keyword``: one or more values (a string, or a list of strings); matched, counted and
  shown like ``source`` (case and accents ignored, the most common written form shown);
- ``date``: an ISO 8601 date; filtered by ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` (or a
  range ``FROM..TO``), faceted as a histogram like ``date``;
- ``number``: a number; filtered by a value or a range (``10..20``, ``..5``, ``3..``),
  faceted by value.

Declarations live in the index folder (``FIELDS_FILE``), so the CLI, the library and the
API of one index agree. Declaring a field never rewrites the index: the values of every
extra field are in each segment's field column already (``archive.fieldcols``).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from newsquarry.search.core.durability import fsync_path

FIELDS_FILE = "newsquarry_FIELDS.json"
KINDS = ("keyword", "date", "number")
# a field name: what a query parameter and a CSV column can carry as they are
NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
# the data model's own keys, the built-in facets and the search's parameters: never an
# extra field's name (a JSONL record's ``source`` is the article's source, ...)
RESERVED = frozenset(
    "id title text source date url author path synthetic_title fields passages "
    "person org place speaker article quote_kind kind quote entity entity_type "
    "q facet facet_size date_from date_to date_interval page per_page sort highlight mode "
    "suggest format key export match group dedupe prefix size time_limit copies story "
    "content_hash".split()
)
MAX_FIELDS = 32
MAX_VALUES = 50  # values one keyword field of one article may hold
MAX_VALUE_CHARS = 1000


class FieldError(ValueError):
    """A declaration or a value that cannot be used (the message says why)."""


@dataclass(frozen=True)
class FieldSpec:
    name: str
    kind: str = "keyword"

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "kind": self.kind}


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a declared field's name, or None."""
    if not NAME_RE.match(name):
        return (
            f"field name {name[:60]!r} must be 1 to 40 lower-case letters, digits or _, "
            "starting with a letter"
        )
    if name in RESERVED:
        return f"{name!r} is a built-in name, not an extra field"
    return None


def parse_spec(text: str) -> FieldSpec:
    """``"category:keyword"`` (or ``"category"``, a keyword) -> FieldSpec; FieldError."""
    name, _, kind = text.strip().partition(":")
    name, kind = name.strip(), (kind.strip() or "keyword")
    problem = name_problem(name)
    if problem:
        raise FieldError(problem)
    if kind not in KINDS:
        raise FieldError(f"field {name!r}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    return FieldSpec(name, kind)


def load(folder: str | os.PathLike) -> list[FieldSpec]:
    """The fields declared for the index in ``folder`` (none when the file is absent)."""
    path = Path(folder) / FIELDS_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise FieldError(f"{path}: unreadable field declarations ({exc})") from None
    specs = []
    for item in raw.get("fields", []) if isinstance(raw, dict) else []:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            try:
                specs.append(parse_spec(f"{item['name']}:{item.get('kind') or 'keyword'}"))
            except FieldError:
                continue  # a hand-edited entry that is not valid is ignored
    return specs


def save(folder: str | os.PathLike, specs: list[FieldSpec]) -> None:
    """Write the declarations (atomically: a temporary file renamed into place)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FIELDS_FILE
    tmp = folder / (FIELDS_FILE + ".tmp")
    body = json.dumps({"version": 1, "fields": [s.to_dict() for s in specs]}, indent=2)
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(body + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_path(folder)


def merge(old: list[FieldSpec], new: list[FieldSpec]) -> list[FieldSpec]:
    """``old`` with ``new`` added; a field declared again with another kind takes the new
    kind (the values are kept as given, so a kind can change without re-indexing)."""
    out = {s.name: s for s in old}
    for s in new:
        out[s.name] = s
    if len(out) > MAX_FIELDS:
        raise FieldError(f"at most {MAX_FIELDS} declared fields, got {len(out)}")
    return list(out.values())


def declare(folder: str | os.PathLike, new: list[FieldSpec]) -> list[FieldSpec]:
    """Add declarations to an index folder; returns them all."""
    specs = merge(load(folder), new)
    save(folder, specs)
    return specs


def undeclare(folder: str | os.PathLike, names: list[str]) -> list[FieldSpec]:
    """Remove declarations (the values stay stored); returns the ones left."""
    specs = [s for s in load(folder) if s.name not in set(names)]
    save(folder, specs)
    return specs


# -- extra fields of a record ------------------------------------------------------


def _plain(value: Any, depth: int = 0) -> Any:
    """A JSON value kept as given, or None when it cannot be stored (NaN, too deep)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth < 3 and isinstance(value, list):
        return [_plain(v, depth + 1) for v in value[:MAX_VALUES]]
    if depth < 3 and isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in list(value.items())[:MAX_VALUES]}
    return None


def extra_fields(record: dict[str, Any], known: set[str]) -> dict[str, Any]:
    """The fields of a JSON record beyond the data model's (``known``), as given (blank
    and null ones left out): what ``Article.fields`` keeps."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key in known or not isinstance(key, str) or value is None or value == "":
            continue
        plain = _plain(value)
        if plain is not None and plain != []:
            out[key[:100]] = plain
    return out


def keyword_values(value: Any) -> list[str]:
    """A keyword field's values: a string, a number or a list of them -> strings."""
    items = value if isinstance(value, list) else [value]
    out = []
    for v in items[:MAX_VALUES]:
        if isinstance(v, bool):
            v = "true" if v else "false"
        if isinstance(v, (int, float, str)):
            s = str(v).strip()[:MAX_VALUE_CHARS]
            if s:
                out.append(s)
    return list(dict.fromkeys(out))


def number_value(value: Any) -> float | None:
    """A number field's value (a number, or a string holding one), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            f = float(value.strip())
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})")


def date_value(value: Any) -> int | None:
    """A date field's value as a YYYYMMDD int (ISO 8601 date or datetime), or None."""
    if not isinstance(value, str):
        return None
    m = _DATE.match(value.strip())
    if not m:
        return None
    y, mo, d = (int(g) for g in m.groups())
    if not (1 <= mo <= 12 and 1 <= d <= 31 and y >= 1):
        return None
    return y * 10000 + mo * 100 + d


def format_number(v: float) -> str:
    """A number as shown in a facet: 3, not 3.0."""
    return str(int(v)) if float(v).is_integer() and abs(v) < 2**53 else repr(float(v))


def number_range(text: str, what: str) -> tuple[float | None, float | None]:
    """A number filter: ``"7"``, ``"10..20"``, ``"..5"``, ``"3.."`` -> inclusive bounds."""
    t = text.strip()
    lo_s, sep, hi_s = t.partition("..")
    if not sep:
        v = number_value(t)
        if v is None:
            raise FieldError(f"{what}: {text[:40]!r} is not a number (or a range a..b)")
        return v, v
    lo = number_value(lo_s) if lo_s.strip() else None
    hi = number_value(hi_s) if hi_s.strip() else None
    if (
        (lo_s.strip() and lo is None)
        or (hi_s.strip() and hi is None)
        or (lo is None and hi is None)
    ):
        raise FieldError(f"{what}: {text[:40]!r} is not a range of numbers (a..b, ..b, a..)")
    return lo, hi
