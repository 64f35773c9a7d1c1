"""The doc-values file format: round trip, and every kind of bad file is refused."""

from __future__ import annotations

import numpy as np

from newsquarry.search.engine import dvstore

ARRAYS = {
    "a": np.arange(10, dtype=np.int32),
    "b": np.array([1, 2, 3], dtype=np.int8),
    "empty": np.zeros(0, dtype=np.int64),
    "s": np.frombuffer(b'["caf\\u00e9", "x"]', dtype=np.uint8),
}


def test_round_trip(tmp_path):
    path = dvstore.write(tmp_path, "ix_abc", 10, ARRAYS, {"totals": {"text": 5}})
    assert path.name == "ix_abc.dv"
    f = dvstore.read(tmp_path, "ix_abc", 10)
    assert f is not None and f.meta == {"totals": {"text": 5}} and f.ndocs == 10
    for name, a in ARRAYS.items():
        got = f.array(name)
        assert got.dtype == a.dtype
        np.testing.assert_array_equal(got, a)
    assert f.json("s") == ["café", "x"]
    assert not f.array("a").flags.writeable  # a read-only mapping, not a copy
    assert [p.name for p in tmp_path.iterdir()] == ["ix_abc.dv"]  # no temporary file left


def test_bad_files_are_refused(tmp_path):
    path = dvstore.write(tmp_path, "ix_abc", 10, ARRAYS, {})
    good = path.read_bytes()
    assert dvstore.read(tmp_path, "ix_other", 10) is None  # missing
    assert dvstore.read(tmp_path, "ix_abc", 11) is None  # other document count
    (tmp_path / "ix_other.dv").write_bytes(good)
    assert dvstore.read(tmp_path, "ix_other", 10) is None  # another segment's file
    for bad in (b"", good[:20], good[:-1], b"XXXX" + good[4:], good + b"\0"):
        path.write_bytes(bad)
        assert dvstore.read(tmp_path, "ix_abc", 10) is None
