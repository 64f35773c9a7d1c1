"""npsets.unique gives exactly np.unique's answer (values, order, dtype)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from newsquarry.search.core.npsets import stable_order, unique


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


@given(
    st.lists(st.integers(-5, 70_000), max_size=400),
    st.sampled_from(["int64", "int32", "uint16"]),
    st.sampled_from([200, 60_000, 70_000]),
)
def test_stable_order_equals_stable_argsort(values: list[int], dtype: str, top: int) -> None:
    a = np.asarray(values, dtype=np.int64)
    if dtype == "uint16":
        a = np.abs(a) % 65_536
    else:
        a = np.where(a < 0, a, a % top)  # small keys (a radix sort), wide ones, negatives
    a = a.astype(dtype)
    got = stable_order(a)
    want = np.argsort(a, kind="stable")
    assert got.tolist() == want.tolist()


def test_stable_order_keeps_equal_keys_in_place_order() -> None:
    a = np.array([3, 1, 3, 0, 1, 3], dtype=np.int32)
    assert stable_order(a).tolist() == [3, 1, 4, 0, 2, 5]
    assert stable_order(np.zeros(0, dtype=np.int32)).tolist() == []
