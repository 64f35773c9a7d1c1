"""The data model: articles, passages, entities and quotations.

Offsets: ``Passage.start``/``end`` index into ``Article.text`` (so
``article.text[p.start:p.end] == p.text``). ``Entity`` and ``Quote`` offsets
index into the text of the passage that holds them; a quote as returned also
carries ``article_start``/``article_end`` (and ``article_speaker_start``/
``article_speaker_end``) into the article text (``quote_record``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

ENTITY_TYPES = ("person", "org", "place")
QUOTE_KINDS = ("direct", "partial", "indirect")


@dataclass
class Article:
    """One news article as read from a file or received over the API."""

    id: str
    title: str
    text: str
    source: str | None = None
    date: str | None = None  # ISO 8601 date, "YYYY-MM-DD"
    url: str | None = None
    author: str | None = None
    path: str | None = None  # where it was read from, if a file
    # the title was made from the first line of the text (the source gave none): it is
    # shown, but not indexed, so the opening words do not rank every passage
    synthetic_title: bool = False
    # the record's fields beyond these (``core.fields``): kept in the stored article;
    # the ones declared for the index are filters, facets and export columns too
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def core_hash(self) -> str:
        """Hash of what enrichment reads and the passages hold (the fields left out): equal
        core hashes -> the stored passages can be kept when only the fields changed."""
        payload = json.dumps(
            [self.title, self.text, self.source, self.date, self.url, self.author],
            ensure_ascii=False,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    @property
    def content_hash(self) -> str:
        """Hash of everything that is stored: unchanged hash -> nothing to do (an article
        without extra fields hashes as it did before they were kept)."""
        core = self.core_hash
        if not self.fields:
            return core
        payload = json.dumps([core, self.fields], ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Entity:
    """A named entity mention; ``name`` is the canonical name, ``type`` in ENTITY_TYPES."""

    text: str
    name: str
    type: str
    start: int
    end: int


@dataclass
class Quote:
    """A quotation with its speaker (canonical name or None when unknown)."""

    text: str
    start: int
    end: int
    kind: str  # one of QUOTE_KINDS
    speaker: str | None = None
    speaker_mention: str | None = None
    speaker_start: int | None = None  # offsets of the mention in the passage, if inside it
    speaker_end: int | None = None
    cue: str | None = None


@dataclass
class Passage:
    """A paragraph-aware chunk of an article, the unit that is indexed and returned."""

    id: str
    article_id: str
    position: int
    start: int
    end: int
    text: str
    entities: list[Entity] = field(default_factory=list)
    quotes: list[Quote] = field(default_factory=list)

    @property
    def speakers(self) -> list[str]:
        """Distinct speakers of the passage's quotes, in order of appearance."""
        seen: dict[str, None] = {}
        for q in self.quotes:
            if q.speaker:
                seen.setdefault(q.speaker, None)
        return list(seen)

    def names(self, type_: str) -> list[str]:
        """Distinct canonical names of one entity type, in order of appearance."""
        seen: dict[str, None] = {}
        for e in self.entities:
            if e.type == type_:
                seen.setdefault(e.name, None)
        return list(seen)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["speakers"] = self.speakers
        return d


def quote_record(quote: dict[str, Any], passage_start: int) -> dict[str, Any]:
    """A quotation record with its offsets in the article added (``article_*``).

    Records stored before these fields existed get them here, from the offset
    of their passage, so every quote can be located in the article text
    without a second request.
    """
    if quote.get("start") is not None and quote.get("end") is not None:
        quote.setdefault("article_start", passage_start + int(quote["start"]))
        quote.setdefault("article_end", passage_start + int(quote["end"]))
    if quote.get("speaker_start") is not None and quote.get("speaker_end") is not None:
        quote.setdefault("article_speaker_start", passage_start + int(quote["speaker_start"]))
        quote.setdefault("article_speaker_end", passage_start + int(quote["speaker_end"]))
    return quote


def from_record(cls: type, record: dict[str, Any]) -> Any:
    """A model object (``Entity``, ``Quote``) from its stored record: the fields the class
    has, the derived ones a record also carries (``article_start``, ...) left out."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in record.items() if k in names})
