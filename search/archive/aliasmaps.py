"""The alias table applied to doc values: each name field's key ids mapped to canonical
key ids, per table state (``Resolver.remap``), extended as registries grow and kept per
segment, so a commit that leaves the table as it was maps only its new segment.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from newsquarry.search.archive.aliasnames import ENTITY_FACETS
from newsquarry.search.core import npsets


class _FieldMap:
    """One name field under one table: key id -> canonical key id (-1: counted in another
    facet), extended as the field's registry grows; the names of other fields the table
    types as this one's; and each segment's (doc, canonical id) pairs, kept while the
    segment is in use. Commits add segments and keys: a new view maps only those."""

    def __init__(self) -> None:
        self.mapping = np.zeros(0, np.int32)
        self.active = False  # some key maps elsewhere or moves here: pairs are rewritten
        # other field -> its key id -> canonical id here (-1: stays there)
        self.moved: dict[str, np.ndarray] = {}
        self.segments: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self.lock = threading.Lock()


def _specials(resolver: Any, fname: str) -> tuple[dict[str, str], dict[str, str]]:
    """The keys ``_field_map`` must look at, per table and field (memoised on the table):
    (key -> canonical key, for every key whose canonical key is typed as ``fname``), and
    (key -> canonical key, for every key that has an alias or a type). Every other key of
    a field maps to itself and stays in its field, so a registry of many keys is mapped by
    looking these few up rather than by reading every key."""
    memo = resolver.__dict__.get("_specials")
    if memo is None:  # one pass over the table for every field
        canon, types = resolver.canon, resolver.types
        every = {**{k: k for k in types if k not in canon}, **canon}
        typed: dict[str, dict[str, str]] = {}
        for k, c in every.items():
            t = types.get(c)
            if t is not None:
                typed.setdefault(t, {})[k] = c
        memo = resolver.__dict__.setdefault("_specials", (typed, every))
    return memo[0].get(fname, {}), memo[1]


def _changed(registry: Any, done: int, count: int, wanted: dict[str, str]) -> list[tuple[int, str]]:
    """(index from ``done``, canonical key) of the registry's keys ``done..done+count-1``
    found in ``wanted``: a lookup of each wanted key, or a pass over the keys when fewer."""
    if count <= len(wanted):
        with registry.lock:
            keys = registry.keys[done : done + count]
        return [(i, wanted[k]) for i, k in enumerate(keys) if k in wanted]
    ids = registry.ids
    out = []
    for k, c in wanted.items():
        gid = ids.get(k)
        if gid is not None and done <= gid < done + count:
            out.append((gid - done, c))
    return out


def _field_map(fname: str, registries: dict[str, Any], resolver: Any) -> _FieldMap:
    """The resolver's ``_FieldMap`` of ``fname``, extended to every key registered now."""
    maps = resolver.__dict__.setdefault("_field_maps", {})
    fm = maps.get(fname)
    if fm is None:
        fm = maps.setdefault(fname, _FieldMap())
    registry = registries[fname]
    types = resolver.types if fname in ENTITY_FACETS else {}
    with fm.lock:
        if fname in set(types.values()):
            typed_here = _specials(resolver, fname)[0]
            for other in ENTITY_FACETS:
                if other == fname:
                    continue
                done = len(fm.moved.get(other, ()))
                with registries[other].lock:
                    count = len(registries[other].keys) - done
                lut = np.full(count, -1, dtype=np.int32)
                here = dict(_changed(registries[other], done, count, typed_here))
                if here:
                    cids = registry.ids_for(list(here.values()))
                    lut[list(here)] = cids
                    fm.active = True
                fm.moved[other] = np.concatenate([fm.moved.get(other, lut[:0]), lut])
        every = _specials(resolver, fname)[1] if fname in ENTITY_FACETS else resolver.canon
        while True:  # canonical keys registered here are keys of the field too
            done = len(fm.mapping)
            with registry.lock:
                count = len(registry.keys) - done
            if not count:
                break
            new = np.arange(done, done + count, dtype=np.int32)
            target: dict[int, str] = {}
            for i, c in _changed(registry, done, count, every):
                if types.get(c, fname) != fname:
                    new[i] = -1
                elif c != registry.keys[done + i]:
                    target[i] = c
            if target:
                wanted = sorted(set(target.values()))
                cid_of = dict(zip(wanted, registry.ids_for(wanted).tolist(), strict=True))
                for i, c in target.items():
                    new[i] = cid_of[c]
            fm.active = fm.active or bool(target) or bool((new < 0).any())
            fm.mapping = np.concatenate([fm.mapping, new])
    return fm


def _register(
    fname: str,
    segments: list[tuple[tuple, Callable[[str], tuple[np.ndarray, np.ndarray]]]],
    resolver: Any,
) -> None:
    """Register the keys ``_field_map`` reads: the field's, and (names the table types as
    this field's come in from the other entity fields) the other entity fields' first."""
    if fname in set(resolver.types.values()) and fname in ENTITY_FACETS:
        for _, raw in segments:
            for other in ENTITY_FACETS:
                if other != fname:
                    raw(other)
    for _, raw in segments:
        raw(fname)


def key_map(
    fname: str,
    segments: list[tuple[tuple, Callable[[str], tuple[np.ndarray, np.ndarray]]]],
    registries: dict[str, Any],
    resolver: Any,
) -> np.ndarray:
    """Key id -> canonical key id (-1: counted in another facet) of one name field, for
    the keys of these segments, without mapping their documents (``remap`` does): what a
    hit's name needs to be shown as the facets show it."""
    _register(fname, segments, resolver)
    fm = _field_map(fname, registries, resolver)
    with fm.lock:
        return fm.mapping


def remap(
    fname: str,
    segments: list[tuple[tuple, Callable[[str], tuple[np.ndarray, np.ndarray]]]],
    registries: dict[str, Any],
    resolver: Any,
) -> tuple[list[tuple[np.ndarray, np.ndarray]], int, list[str], np.ndarray]:
    """One name field's (doc, key id) pairs under their canonical key ids, once per doc.

    ``segments`` gives, per segment of a view, a key (the same while the segment's
    documents are) and ``raw(f)``: the segment's (local doc, key id) pairs of field
    ``f`` as indexed (registering its keys). Names the table types as this field's
    (``Resolver.types``) come in from the other entity fields. Returns, per segment,
    the pairs (sorted by doc, then id, when any name is mapped), the key count, the
    keys, and key id -> canonical key id (-1 for a name counted in another facet),
    so a passage naming both "Fed" and "Federal Reserve" counts once. Segments mapped
    for an earlier view of the same table are not mapped again.
    """
    _register(fname, segments, resolver)  # the other fields' keys before the map
    fm = _field_map(fname, registries, resolver)
    registry = registries[fname]
    out = []
    with fm.lock:
        mapping = fm.mapping
        nkeys = len(mapping)
        with registry.lock:
            keys = registry.keys[:nkeys]
        cache = fm.segments
        wanted = set()
        for segkey, raw in segments:
            key = (segkey, fm.active)
            wanted.add(key)
            got = cache.get(key)
            if got is None:
                docs, gids = raw(fname)
                if fm.active:
                    new = mapping[gids] if len(gids) else np.zeros(0, np.int32)
                    keep = new >= 0
                    all_docs = [docs[keep].astype(np.int64)]
                    all_gids = [new[keep].astype(np.int64)]
                    for other, lut in fm.moved.items():
                        if not (lut >= 0).any():
                            continue
                        odocs, ogids = raw(other)
                        cids = lut[ogids] if len(ogids) else np.zeros(0, np.int32)
                        sel = cids >= 0
                        all_docs.append(odocs[sel].astype(np.int64))
                        all_gids.append(cids[sel].astype(np.int64))
                    big = nkeys + 1
                    pairs = npsets.unique(np.concatenate(all_docs) * big + np.concatenate(all_gids))
                    docs, gids = pairs // big, (pairs % big).astype(np.int32)
                got = cache[key] = (docs, gids)
            out.append(got)
        for key in list(cache):  # segments merged away
            if key not in wanted:
                del cache[key]
    return out, nkeys, keys, mapping
