"""Damage to the alias table (``aliases.json``) is found, refused and repaired (issue 33).

The table changes answers (names it joins are counted and filtered as one), yet no commit's
manifest lists it: it is written after the commit, or by a background learner. It carries
its own CRC-32; ``check`` verifies it through the alias feature's ``verify`` hook, searches
refuse a damaged one with ``IndexDamaged`` (never names silently split apart), and
``repair`` relearns it from the names stored with the passages.
"""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from newsquarry.search.cli.app import cli
from newsquarry.search.cli.common import EXIT_DAMAGED
from newsquarry.search.core.errors import IndexDamaged
from newsquarry.search.core.requests import SearchRequest
from newsquarry.search.engine.check import check_index
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.query.searching import run_search
from tests.test_aliases import article_with, teaching_ec

FILTER = {"org": ["EC"]}


def build(ix):
    """A real index whose table joins "EC" and "European Community": the filter on "EC"
    selects 4 passages with the table, 3 without it."""
    s = WhooshStore(ix)
    try:
        s.add(
            [
                article_with("a1", [("EC ministers said prices fall.", [("org", "EC")], "EC")]),
                article_with("a2", [("The EC said quotas stay.", [("org", "EC")], "EC")]),
                article_with(
                    "a0", [("The European Community grew.", [("org", "European Community")], None)]
                ),
                teaching_ec("a3", "The European Community (EC) agreed on Tuesday."),
            ]
        )
        assert filtered(s) == 4
    finally:
        s.close()


def filtered(store) -> int:
    return run_search(store, SearchRequest(filters=FILTER)).total


def truncate(path):
    os.truncate(path, path.stat().st_size // 2)


def flip_bytes(path):
    data = bytearray(path.read_bytes())
    # inside the table's names (a flipped letter keeps the JSON valid: only the CRC tells)
    at = data.index(b"European Community") + 3
    data[at] ^= 0x01
    path.write_bytes(bytes(data))


def other_content(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    data["canon"] = {}  # valid JSON, the names no longer joined, the CRC left as it was
    path.write_text(json.dumps(data), encoding="utf-8")


def other_content_without_crc(path):
    data = json.loads(path.read_text(encoding="utf-8"))
    data["canon"] = {}
    del data["crc32"]  # claims to be a current table (version 2) with no checksum
    path.write_text(json.dumps(data), encoding="utf-8")


def old_table(path):
    """The table as an index from before checksums wrote it (version 1, no CRC)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    old = {k: data[k] for k in ("canon", "display", "types")}
    path.write_text(json.dumps({"version": 1, **old}), encoding="utf-8")


@pytest.mark.parametrize(
    "damage",
    [truncate, flip_bytes, other_content, other_content_without_crc, old_table, os.remove],
)
def test_a_damaged_alias_table_is_named_refused_and_repaired(tmp_path, damage):
    ix = tmp_path / "ix"
    build(ix)
    runner = CliRunner()
    assert runner.invoke(cli, ["--index", str(ix), "check"]).exit_code == 0
    damage(ix / "aliases.json")

    res = runner.invoke(cli, ["--index", str(ix), "check"])
    assert res.exit_code == EXIT_DAMAGED, res.output
    assert "damaged: aliases.json (derived):" in res.stdout
    assert "No damage found" not in res.stdout
    report = check_index(ix)
    assert [(p.file, p.kind) for p in report.problems] == [("aliases.json", "derived")]

    # searching refuses (one line, exit 5) rather than count the names apart
    res = runner.invoke(cli, ["--index", str(ix), "search", "--org", "EC"])
    assert res.exit_code == EXIT_DAMAGED, res.output
    assert "aliases.json" in res.stderr and "newsquarry repair" in res.stderr
    s = WhooshStore(ix)
    try:
        with pytest.raises(IndexDamaged, match="aliases.json"):
            filtered(s)
    finally:
        s.close()

    res = runner.invoke(cli, ["--index", str(ix), "repair"])
    assert res.exit_code == 0, res.output
    assert "Rebuilt aliases.json from the stored articles." in res.stdout
    assert runner.invoke(cli, ["--index", str(ix), "check"]).exit_code == 0
    s = WhooshStore(ix)
    try:
        assert filtered(s) == 4  # the same answer as before the damage
    finally:
        s.close()


def test_a_damaged_table_under_an_open_store_is_refused_at_its_next_search(tmp_path):
    ix = tmp_path / "ix"
    build(ix)
    s = WhooshStore(ix)
    try:
        assert filtered(s) == 4
        other_content(ix / "aliases.json")
        with pytest.raises(IndexDamaged, match="does not match its checksum"):
            filtered(s)
        with pytest.raises(IndexDamaged):  # every search, not only the first after it
            filtered(s)
        s.rebuild_aliases()  # `aliases --rebuild` still restores it
        assert filtered(s) == 4
    finally:
        s.close()


def test_a_table_written_before_checksums_opens_and_checks_clean_with_a_note(tmp_path):
    ix = tmp_path / "ix"
    build(ix)
    old_table(ix / "aliases.json")
    os.remove(ix / "aliases.summed")  # no table with a checksum was ever written here
    report = check_index(ix)
    assert report.ok, report.problems
    assert any("before alias tables had checksums" in n for n in report.notes)
    s = WhooshStore(ix)
    try:
        assert filtered(s) == 4
        # the next commit that writes the table gives it its checksum
        s.add([article_with("a9", [("Rain in Spain.", [("place", "Spain")], None)])])
    finally:
        s.close()
    assert "crc32" in json.loads((ix / "aliases.json").read_text(encoding="utf-8"))
    assert (ix / "aliases.summed").exists()  # from now on a table without one is damage
    assert check_index(ix).ok and not check_index(ix).notes


def test_an_index_without_alias_files_is_no_damage(tmp_path):
    ix = tmp_path / "ix"
    build(ix)
    for name in ("aliases.json", "aliases.summed", "aliases-evidence.json",
                 "aliases-evidence.jsonl"):  # fmt: skip
        if (ix / name).exists():
            os.remove(ix / name)  # an index made before the alias table
    assert check_index(ix).ok
    s = WhooshStore(ix)
    try:
        assert filtered(s) == 3  # names as indexed, as before
    finally:
        s.close()


def test_repair_of_a_damaged_segment_also_rebuilds_a_damaged_table(tmp_path):
    ix = tmp_path / "ix"
    build(ix)
    truncate(ix / "aliases.json")
    manifest_toc = sorted(n for n in os.listdir(ix) if n.endswith(".toc"))[-1]
    os.truncate(ix / manifest_toc, 0)
    res = CliRunner().invoke(cli, ["--index", str(ix), "repair"])
    assert res.exit_code == 0, res.output
    assert "Rebuilt aliases.json" in res.stdout
    assert check_index(ix).ok
    s = WhooshStore(ix)
    try:
        assert filtered(s) == 4
    finally:
        s.close()


def test_the_api_is_not_ready_and_answers_503_on_a_damaged_table(tmp_path):
    from newsquarry.api import create_app

    ix = tmp_path / "ix"
    build(ix)
    c = create_app({"index": str(ix)}).test_client()
    assert c.get("/v1/search?org=EC").get_json()["total"] == 4
    flip_bytes(ix / "aliases.json")
    assert c.get("/health/ready").status_code == 503
    res = c.get("/v1/search?org=EC")
    assert res.status_code == 503
    assert res.headers["Content-Type"].startswith("application/problem+json")
    assert CliRunner().invoke(cli, ["--index", str(ix), "repair"]).exit_code == 0
    assert c.get("/health/ready").status_code == 200
    assert c.get("/v1/search?org=EC").get_json()["total"] == 4


def test_the_table_is_checked_from_its_bytes_and_a_table_written_otherwise_still_reads(tmp_path):
    """The table is written as the canonical text its CRC covers with the CRC last
    (``aliasfiles.table_bytes``), so a reader checks the bytes it read; the same content
    written another way (as newsquarry wrote it before) is checked from its content."""
    from newsquarry.search.archive.aliasfiles import _intact_as_written

    ix = tmp_path / "ix"
    build(ix)
    table = ix / "aliases.json"
    raw = table.read_bytes()
    assert _intact_as_written(raw, json.loads(raw))
    table.write_text(json.dumps(json.loads(raw), ensure_ascii=False), encoding="utf-8")
    raw = table.read_bytes()
    assert not _intact_as_written(raw, json.loads(raw))
    assert check_index(ix).ok
    s = WhooshStore(ix)
    try:
        assert filtered(s) == 4  # read, checked from its content
    finally:
        s.close()
