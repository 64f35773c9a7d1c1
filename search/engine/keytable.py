"""The merged key table of a list of segments: what a new process loads instead of
registering every segment's keys.

Why: each value field's ``docvalues.KeyRegistry`` (folded key <-> integer id, one id
space for all segments) was rebuilt in every new process by parsing every segment's key
list (JSON in its ``.dv`` file) and registering each key in a dict: ~40 ms CPU of a
~400 ms CLI search on Reuters (9 segments, 60,000 keys over 7 fields), paid again by
every command. The table holds, per field, the union of the segments' keys (sorted, so
the alphabetical ranks that tie-breaking needs come for free) and, per segment, the
table id of each of its local keys (an int32 array that numpy maps). A process whose
registries are still empty takes the keys from it at once and the segments' key ids
from the arrays.

Name: ``newsquarry-keys-<16 hex>.kt``, the hex from the ordered segment ids, so the
table depends on which segments a state holds and on nothing else (deletions do not
change it: a segment's keys include those of its deleted documents, as the registries
always did). The name matches neither Whoosh's segment-file pattern nor its TOC's, so
Whoosh's cleanup leaves it alone; ``WhooshStore`` removes tables of other segment lists
after each commit.

Written at commit (``docvalues.persist_on_commit``, from the segments' ``.dv`` files,
before the TOC) and listed with its CRC in that commit's manifest (``search.integrity``),
so ``check`` verifies it; on read it is verified against the manifest, once per process,
like the ``.dv`` files. Same file format as ``search.dvstore`` (atomic rename; its header
names the segment list). Byte for byte deterministic: a missing, damaged or foreign table
is built again from the ``.dv`` files and saved (an old index gets one at its first
search), and the bytes are those the commit wrote. A bad table costs time, never a
wrong answer.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from newsquarry.search.engine import dvstore

EXT = ".kt"
PREFIX = "newsquarry-keys-"
VERSION = 1


def table_id(segments: Sequence[tuple[str, int]]) -> str:
    """The table's name without extension, from (segment id, document count) in order."""
    text = "\n".join(f"{segid}:{int(ndocs)}" for segid, ndocs in segments)
    return PREFIX + hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def file_name(segments: Sequence[tuple[str, int]]) -> str:
    """The file name of the table of these segments (ids and document counts, in order)."""
    return table_id(segments) + EXT


def is_table(name: str) -> bool:
    return name.startswith(PREFIX) and name.endswith(EXT)


def compute(
    fields: Sequence[str],
    sources: Sequence[Any],
    segments: Sequence[tuple[str, int]] | None = None,
    previous: tuple[Sequence[tuple[str, int]], KeyTable] | None = None,
) -> dict[str, np.ndarray]:
    """The table's arrays from the segments' doc-values sources (``dvstore.SegmentFile``
    or ``docvalues._Computed``): per field ``<f>.keys`` (the sorted union of the
    segments' folded keys, as JSON bytes) and ``<f>.<i>`` (segment ``i``'s local key
    index -> table id, int32).

    With ``previous`` (an earlier segment list and its table; ``segments`` names the
    sources), the segments both lists hold are not read again: their keys come from
    the earlier table, renumbered with numpy, and only the new segments' key lists are
    decoded (a commit adds one segment to many). The arrays are the same either way.
    """
    if previous is not None and segments is not None:
        return _compute_from(fields, sources, segments, *previous)
    arrays: dict[str, np.ndarray] = {}
    for f in fields:
        per_seg = [src.json(f"{f}.strings")["keys"] for src in sources]
        union = sorted(set().union(*per_seg)) if per_seg else []
        pos = {k: i for i, k in enumerate(union)}
        arrays[f"{f}.keys"] = _json_bytes(union)
        for i, keys in enumerate(per_seg):
            arrays[f"{f}.{i}"] = np.fromiter(map(pos.__getitem__, keys), np.int32, len(keys))
    return arrays


def _json_bytes(keys: list[str]) -> np.ndarray:
    return np.frombuffer(json.dumps(keys, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


def _has(sorted_keys: list[str], key: str) -> bool:
    i = bisect.bisect_left(sorted_keys, key)
    return i < len(sorted_keys) and sorted_keys[i] == key


def _compute_from(
    fields: Sequence[str],
    sources: Sequence[Any],
    segments: Sequence[tuple[str, int]],
    before: Sequence[tuple[str, int]],
    table: KeyTable,
) -> dict[str, np.ndarray]:
    """``compute`` from an earlier list's table (see there)."""
    where = {tuple(seg): j for j, seg in enumerate(before)}
    kept = [(i, where[tuple(seg)]) for i, seg in enumerate(segments) if tuple(seg) in where]
    fresh = [i for i, seg in enumerate(segments) if tuple(seg) not in where]
    if len(fresh) > len(kept):  # mostly new segments: reading them all costs less
        return compute(fields, sources)
    arrays: dict[str, np.ndarray] = {}
    for f in fields:
        old_keys = table.keys(f)
        old_l2g = {i: table.local_to_table(f, j) for i, j in kept}
        mask = np.zeros(len(old_keys), dtype=bool)
        for a in old_l2g.values():
            mask[a] = True
        used = np.flatnonzero(mask)
        if len(used) == len(old_keys):  # no segment left (a commit that adds one)
            kept_keys = old_keys
        else:  # sorted, as the earlier table
            kept_keys = [old_keys[g] for g in used.tolist()]
        new_lists = {i: sources[i].json(f"{f}.strings")["keys"] for i in fresh}
        extra = sorted(
            k for k in {k for keys in new_lists.values() for k in keys} if not _has(kept_keys, k)
        )
        # each kept key moves up by the number of new keys sorted before it
        at = np.array([bisect.bisect_left(kept_keys, k) for k in extra], dtype=np.int64)
        shift = np.searchsorted(at, np.arange(len(kept_keys)), side="right")
        old_to_new = np.full(len(old_keys), -1, dtype=np.int64)
        old_to_new[used] = np.arange(len(kept_keys)) + shift
        union = sorted(kept_keys + extra)  # two sorted runs: a merge
        arrays[f"{f}.keys"] = _json_bytes(union)
        for i in range(len(segments)):
            if i in old_l2g:
                ids = old_to_new[old_l2g[i]].astype(np.int32)
            else:
                keys = new_lists[i]
                found = (bisect.bisect_left(union, k) for k in keys)
                ids = np.fromiter(found, np.int32, len(keys))
            arrays[f"{f}.{i}"] = ids
    return arrays


def write(
    folder: str | os.PathLike,
    segments: Sequence[tuple[str, int]],
    fields: Sequence[str],
    sources: Sequence[Any],
    previous: tuple[Sequence[tuple[str, int]], KeyTable] | None = None,
) -> str:
    """Compute and write the table of ``segments`` (their sources in the same order;
    ``previous``: see ``compute``); returns its file name."""
    arrays = compute(fields, sources, segments, previous)
    meta = {"version": VERSION, "fields": list(fields), "segments": [list(s) for s in segments]}
    dvstore.write(folder, table_id(segments), 0, arrays, meta, ext=EXT)
    return file_name(segments)


class KeyTable:
    """A mapped key table: the sorted keys of each field and each segment's key ids."""

    def __init__(self, src: dvstore.SegmentFile) -> None:
        self.src = src

    def keys(self, field: str) -> list[str]:
        return json.loads(self.src.array(f"{field}.keys").tobytes().decode("utf-8"))

    def count(self, field: str, segments: int) -> int:
        """How many keys the field's list holds, without decoding it: every key of the
        table is some segment's (the list is the union of the segments' keys), so the
        count is one more than the largest table id of the ``segments`` segments'."""
        tops = [int(a.max()) for i in range(segments) if len(a := self.local_to_table(field, i))]
        return max(tops) + 1 if tops else 0

    def key_reader(self, field: str, count: int) -> Any:
        """A function giving one key of the field's list (by table id) without decoding the
        list, or None when the list's bytes hold an escape. The list is JSON written with
        ``ensure_ascii=False``, which writes every character as itself but ``"``, ``\\``
        and control characters, each as an escape beginning with a backslash; UTF-8 never
        uses these bytes inside another character. Without a backslash byte, the quotes
        are the strings' delimiters, and each string's bytes between them are its UTF-8."""
        raw = self.src.array(f"{field}.keys")
        if np.any(raw == ord("\\")):
            return None
        quotes = np.flatnonzero(raw == ord('"'))
        if len(quotes) != 2 * count:
            return None
        starts, ends = quotes[0::2] + 1, quotes[1::2]

        def key(i: int) -> str:
            return raw[starts[i] : ends[i]].tobytes().decode("utf-8")

        return key

    def local_to_table(self, field: str, i: int) -> np.ndarray:
        """Segment ``i``'s local key index -> table id (a read-only mapped array)."""
        return self.src.array(f"{field}.{i}")


def read(
    folder: str | os.PathLike, segments: Sequence[tuple[str, int]], fields: Sequence[str]
) -> KeyTable | None:
    """The table of these segments, or None if it is missing, damaged (its checksum in the
    manifest, or its header) or of another segment list or set of fields."""
    src = dvstore.read(folder, table_id(segments), 0, ext=EXT)
    if src is None:
        return None
    meta = src.meta
    if (
        meta.get("version") != VERSION
        or meta.get("segments") != [list(s) for s in segments]
        or meta.get("fields") != list(fields)
    ):
        return None
    names = set(src.names())
    for f in fields:
        if f"{f}.keys" not in names or any(f"{f}.{i}" not in names for i in range(len(segments))):
            return None
    return KeyTable(src)


def remove_others(folder: str | os.PathLike, segments: Sequence[tuple[str, int]]) -> None:
    """Delete the tables of other segment lists, and temporary files a killed write left
    (after a commit, under the write lock). A process still reading an older state
    whose table is gone builds it again: time, never an answer."""
    keep = file_name(segments)
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        if name.startswith(PREFIX) and name != keep and (is_table(name) or name.endswith(".tmp")):
            try:
                os.remove(os.path.join(folder, name))
            except OSError:
                pass
