"""Settings: one table that feeds the library, the API, the CLI help and the docs.

Each setting has a name, an environment variable, a default and a help text
(the Datasette way). ``load_settings()`` reads the environment; the API and
CLI may override values explicitly.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Setting:
    name: str
    default: Any
    help: str

    @property
    def env(self) -> str:
        return "NEWSQUARRY_" + self.name.upper()


def default_index_dir() -> str:
    """The index folder when none is given: $XDG_DATA_HOME/newsquarry/index."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return str(Path(base) / "newsquarry" / "index")


SETTINGS: tuple[Setting, ...] = (
    Setting("index", None, "Index folder (default: $XDG_DATA_HOME/newsquarry/index)."),
    Setting("max_query_length", 400, "Longest query text accepted, in characters."),
    Setting("max_per_page", 100, "Largest per_page a search may ask for."),
    Setting("max_page_depth", 10000, "Deepest result reachable: page * per_page."),
    Setting("max_facets", 8, "Most facets one search may ask for."),
    Setting("max_facet_size", 100, "Most values one facet may return."),
    Setting("max_filter_values", 50, "Most values one search may filter on, all facets together."),
    Setting("search_time_limit", 5.0, "Seconds a search may run before it is cut short."),
    Setting(
        "max_term_expansion", 1000, "Most index terms one wildcard or fuzzy term may expand to."
    ),
    Setting(
        "lock_timeout",
        30.0,
        "Seconds a writer waits for its turn at the index lock before giving up (writers take "
        "turns: a waiting writer goes next).",
    ),
    Setting("max_body_bytes", 10 * 1024 * 1024, "Largest request body the API accepts."),
    Setting("write_token", None, "Token required by API writes; writes are disabled when unset."),
    Setting("secret", None, "Server secret for scoped read keys (HMAC); keys disabled when unset."),
    Setting(
        "cors_origins", "*", "Origins allowed to read the API from a browser (comma-separated)."
    ),
    Setting(
        "base_url",
        None,
        "Public origin of the server (https://news.example.org) for absolute links; unset: "
        "links are relative where they can be (API links, permalinks) and oEmbed and feeds "
        "use the address the server is bound to. The Host header is never copied into any.",
    ),
    Setting("commit_every", 2000, "Articles per commit while indexing."),
    Setting(
        "embed",
        "auto",
        "Passage and quotation vectors (search by meaning) computed while indexing: auto = "
        "when the semantic extra is installed, 1 = always (fails without it), 0 = never "
        "(`newsquarry embed` adds them later).",
    ),
    Setting(
        "retrieval",
        "auto",
        "Default retrieval of a search: keyword, semantic, hybrid, or auto (hybrid when the "
        "semantic extra is installed and the index has vectors, else keyword).",
    ),
    Setting(
        "semantic_floor",
        0.2,
        "Least cosine similarity of a passage to the query for it to match by meaning "
        "(all-MiniLM-L6-v2: unrelated text scores about 0 to 0.15).",
    ),
    Setting(
        "max_articles_per_write",
        1000,
        "Most articles one API write may carry (bulk imports: use `newsquarry index`).",
    ),
    Setting(
        "response_cache_size", 512, "Search responses the API keeps per worker (0 = no cache)."
    ),
    Setting(
        "follow",
        None,
        "Feeds, sitemaps or sites (URLs separated by spaces or commas) the server follows in "
        "the background, beside every source the index follows already (docs/follow.md).",
    ),
    Setting("follow_interval", 900.0, "Seconds between two polls of each followed source."),
    Setting(
        "follow_rate", 1.0, "Requests per second the follower sends to one host (0: no limit)."
    ),
    Setting(
        "read_concurrency",
        1,
        "Read requests one API worker runs at once; its other threads wait (0 = no limit).",
    ),
    Setting(
        "header_timeout",
        10.0,
        "Seconds a client has from the first byte of a request to the end of its headers; "
        "past it the server drops the connection (slow clients).",
    ),
    Setting(
        "body_timeout",
        60.0,
        "Seconds a client has from the end of a request's headers to the end of its body.",
    ),
    Setting("idle_timeout", 30.0, "Seconds the server keeps a silent connection open."),
    Setting(
        "max_connections",
        1000,
        "Open connections one API worker process keeps; past it the worker accepts no more "
        "until some close.",
    ),
    Setting(
        "max_header_bytes",
        512 * 1024,
        "Largest request line and headers together, in bytes (431 past it).",
    ),
    Setting(
        "enrich_process",
        True,
        "API writes are enriched (spaCy) in a process of their own per worker, at niceness "
        "+10, not in the serving threads; false: in the thread that answers the write.",
    ),
)
SETTINGS_BY_NAME = {s.name: s for s in SETTINGS}


def _coerce(value: str, default: Any) -> Any:
    if isinstance(default, bool):
        return value.lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(value)
    if isinstance(default, float):
        return float(value)
    return value


def load_settings(**overrides: Any) -> dict[str, Any]:
    """Defaults, then environment variables, then explicit overrides (None = not given)."""
    values = dict(_from_environment(tuple(os.environ.get(s.env) for s in SETTINGS)))
    for key, value in overrides.items():
        if key not in SETTINGS_BY_NAME:
            raise KeyError(f"unknown setting {key!r}")
        if value is not None:
            values[key] = value
    if not values["index"]:
        values["index"] = default_index_dir()
    return values


@lru_cache(maxsize=8)
def _from_environment(raws: tuple[str | None, ...]) -> dict[str, Any]:
    # every search without explicit settings reads them: the environment's values are
    # coerced once per distinct set of values (callers get a copy)
    values: dict[str, Any] = {}
    for s, raw in zip(SETTINGS, raws, strict=True):
        values[s.name] = _coerce(raw, s.default) if raw not in (None, "") else s.default
    return values
