"""npsets.unique gives exactly np.unique's answer (values, order, dtype)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from newsquarry.search.core.npsets import unique


@given(st.lists(st.integers(-(2**62), 2**62), max_size=300), st.sampled_from(["int64", "int32"]))
def test_unique_equals_numpy_unique(values: list[int], dtype: str) -> None:
    a = np.asarray(values, dtype=np.int64)
    if dtype == "int32":
        a = (a % 1000).astype(np.int32)
    got = unique(a)
    want = np.unique(a)
    assert got.dtype == want.dtype
    assert got.tolist() == want.tolist()


def test_unique_leaves_its_input_alone() -> None:
    a = np.array([5, 1, 5, 3, 1], dtype=np.int64)
    assert unique(a).tolist() == [1, 3, 5]
    assert a.tolist() == [5, 1, 5, 3, 1]


def test_unique_of_booleans_and_empty() -> None:
    assert unique(np.array([True, False, True])).tolist() == [False, True]
    assert unique(np.zeros(0, dtype=np.int64)).tolist() == []
