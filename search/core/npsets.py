"""Set operations on numpy integer arrays that stay fast on large, distinct values.

Why: numpy 2.x's ``np.unique`` (no ``return_*`` option) goes through a hash
table, which on this project's (document, key) pairs takes 80-100x as long as a
sort: 86 ms against 1.1 ms for 100,000 int64 values, 0.86 s against 9 ms for
400,000 (docs/benchmarks.md, "First search"). A server's first search after a
commit that changed the alias table paid it four times (``aliases.remap``).
"""

from __future__ import annotations

import numpy as np


def unique(values: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-d integer or boolean array, sorted (as ``np.unique``)."""
    out = np.sort(np.asarray(values).ravel())
    return out[run_starts(out)]


def run_starts(values: np.ndarray) -> np.ndarray:
    """The indices where a run of equal values begins in a 1-d array (none if empty): in a
    sorted array, each distinct value's first place; in an array whose equal values lie
    together (a view's documents by article), each group's."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    first = np.empty(len(values), dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    return np.flatnonzero(first)


def stable_order(keys: np.ndarray) -> np.ndarray:
    """``np.argsort(keys, kind="stable")`` of a 1-d integer array, by a radix sort when
    every key fits in 16 bits unsigned (numpy sorts 8- and 16-bit integers stably in
    linear time): the same permutation, ~9x as fast on a field's 95,000 (document, key)
    pairs as the merge sort numpy uses for wider integers (5 ms, a fresh process's first
    filter on Reuters)."""
    keys = np.asarray(keys)
    if len(keys) and keys.dtype.kind in "iu":
        lo, hi = int(keys.min()), int(keys.max())
        if lo >= 0 and hi < 1 << 16:
            small = np.uint8 if hi < 1 << 8 else np.uint16
            return np.argsort(keys.astype(small), kind="stable")
    return np.argsort(keys, kind="stable")


def unique_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of a 1-d integer array and how often each occurs (as
    ``np.unique(..., return_counts=True)``), by one sort."""
    s = np.sort(np.asarray(values).ravel())
    starts = run_starts(s)
    return s[starts], np.diff(np.append(starts, len(s)))
