"""Damage to the files at rest is detected, named and repaired (fault-injection matrix).

A tiny index (six articles in two commits) is built once; each case copies
it, damages one file of one type the way disks and people do, and then asks
what a user would: `check` must name the damage; `search`, `stats`, `show`
(CLI) and a search plus readiness through the API must give the one-line
error (exit 5 / 503) or the same answer as the undamaged index, never another
one; `repair`, given the original file again, must restore an index whose
every stored document equals those of a clean build.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from pathlib import Path

import pytest
from _synthetic import articles, write_jsonl
from api_support import TagEnricher
from click.testing import CliRunner

from newsquarry.search.cli.app import cli
from newsquarry.search.core.errors import IndexDamaged
from newsquarry.search.engine import integrity, keytable
from newsquarry.search.engine.store import WhooshStore
from newsquarry.search.ingest.indexer import index_paths
from newsquarry.search.ingest.repair import repair

KINDS = ("toc", "segment", "articles list", "manifest", "doc values", "quote signatures",
         "decoded postings", "key table", "article fields", "article signatures",
         "token offsets")  # fmt: skip
DERIVED = ("doc values", "quote signatures", "decoded postings", "key table", "article fields",
           "article signatures", "token offsets")  # fmt: skip
DAMAGE = ("half", "zero", "block", "delete", "older")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A clean index of two commits, a copy of its first generation, and its source file."""
    base = tmp_path_factory.mktemp("integrity")
    source = write_jsonl(base / "news.jsonl", articles(6, seed=41, prefix="fi"))
    first = write_jsonl(base / "first.jsonl", articles(3, seed=41, prefix="fi"))
    ix = base / "ix"
    store = WhooshStore(ix)
    index_paths(store, [str(first)], enricher=TagEnricher())
    store.close()
    older = base / "older"
    shutil.copytree(ix, older)  # generation 1: the first commit only
    store = WhooshStore(ix)
    index_paths(store, [str(source)], enricher=TagEnricher(), commit_every=3)
    store.close()
    return {"ix": ix, "older": older, "source": source, "answers": answers(ix),
            "contents": contents(ix)}  # fmt: skip


def contents(path: Path) -> list[str]:
    """Every live stored document of the index, as sorted JSON (order-free comparison)."""
    store = WhooshStore(path, create=False)
    try:
        with store.ix.searcher() as s:
            return sorted(json.dumps(d, sort_keys=True) for d in s.reader().all_stored_fields())
    finally:
        store.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(path: Path, *args: str):
    return CliRunner().invoke(cli, ["--index", str(path), *args])


def normal(name: str, stdout: str) -> object:
    """The part of an answer that must not change (not timings, paths or generations)."""
    if not stdout.strip():
        return stdout
    data = json.loads(stdout)
    if name == "search":
        return {
            "total": data["total"],
            "hits": [(h["id"], round(h["score"], 4), h["text"]) for h in data["hits"]],
        }
    if name == "stats":
        return {k: data[k] for k in ("articles", "passages", "quotes")}
    return data


def answers(path: Path) -> dict:
    """What the reads a user makes answer: (exit code, the stable part of the output, stderr)."""
    out = {}
    for name, args in {
        "search": ("search", "council", "--json", "-n", "50"),
        "stats": ("stats", "--json"),
        "show": ("show", "fi-0004", "--json"),
    }.items():
        r = run(path, *args)
        out[name] = (r.exit_code, normal(name, r.stdout) if r.exit_code == 0 else r.stdout,
                     r.stderr)  # fmt: skip
    return out


def files_of(path: Path) -> dict[str, str]:
    """Kind -> the current generation's file of that kind (the second commit's segment)."""
    gen = integrity.toc_generations(path)[0]
    manifest = integrity.read_manifest(path, gen)
    seg = manifest.segments[-1]["id"]  # the second commit's segment (fi-0003..fi-0005)
    return {
        "toc": integrity.toc_name(gen),
        "segment": seg + integrity.SEGMENT_EXT,
        "articles list": seg + integrity.ARTICLES_EXT,
        "manifest": integrity.manifest_name(gen),
        "doc values": seg + integrity.DERIVED_EXT,
        "quote signatures": seg + integrity.QUOTES_EXT,
        "decoded postings": seg + integrity.POSTINGS_EXT,
        "key table": key_table_of(manifest),
        "article fields": seg + integrity.FIELDS_EXT,
        "article signatures": seg + integrity.STORIES_EXT,
        "token offsets": seg + integrity.TOKENS_EXT,
    }


def key_table_of(manifest: integrity.Manifest) -> str:
    """The merged key table (search.keytable) a generation's manifest lists."""
    (name,) = [n for n in manifest.files if keytable.is_table(n)]
    return name


def older_file(built: dict, kind: str) -> Path:
    """The file of the same kind in the older generation (its only segment for segments)."""
    older = built["older"]
    gen = integrity.toc_generations(older)[0]
    manifest = integrity.read_manifest(older, gen)
    seg = manifest.segments[0]["id"]
    return (
        older
        / {
            "toc": integrity.toc_name(gen),
            "segment": seg + integrity.SEGMENT_EXT,
            "articles list": seg + integrity.ARTICLES_EXT,
            "manifest": integrity.manifest_name(gen),
            "doc values": seg + integrity.DERIVED_EXT,
            "quote signatures": seg + integrity.QUOTES_EXT,
            "decoded postings": seg + integrity.POSTINGS_EXT,
            "key table": key_table_of(manifest),
            "article fields": seg + integrity.FIELDS_EXT,
            "article signatures": seg + integrity.STORIES_EXT,
            "token offsets": seg + integrity.TOKENS_EXT,
        }[kind]
    )


def inflict(path: Path, how: str, older: Path) -> None:
    size = path.stat().st_size
    if how == "half":
        os.truncate(path, size // 2)
    elif how == "zero":
        os.truncate(path, 0)
    elif how == "block":  # a block in the middle, every byte changed
        n = min(4096, max(1, size // 4))
        with open(path, "r+b") as fh:
            fh.seek(size // 2 - n // 2)
            block = fh.read(n)
            fh.seek(size // 2 - n // 2)
            fh.write(bytes(b ^ 0xFF for b in block))
    elif how == "delete":
        path.unlink()
    elif how == "older":
        shutil.copyfile(older, path)


@pytest.fixture(params=[(k, d) for k in KINDS for d in DAMAGE], ids=lambda p: f"{p[0]}-{p[1]}")
def damaged(request, built, tmp_path):
    kind, how = request.param
    ix = tmp_path / "ix"
    shutil.copytree(built["ix"], ix)
    name = files_of(ix)[kind]
    inflict(ix / name, how, older_file(built, kind))
    return {"ix": ix, "kind": kind, "how": how, "file": name}


def test_damage_is_named_never_answered_wrongly_and_repaired(built, damaged):
    ix, kind, name = damaged["ix"], damaged["kind"], damaged["file"]

    # check names the damaged file (and, for a segment, the articles it held)
    r = run(ix, "check")
    assert r.exit_code == 5, r.output
    assert "damaged: " in r.stdout and name in r.stdout, r.stdout
    if kind == "segment":
        assert "holds 3 articles: fi-0003, fi-0004, fi-0005" in r.stdout, r.stdout
    report = json.loads(run(ix, "check", "--json").stdout)
    assert not report["ok"] and name in {p["file"] for p in report["problems"]}

    # every read: the one-line error with exit 5, or the clean index's very answer
    for what, (code, stdout, stderr) in answers(ix).items():
        if code == 5:
            lines = stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("Error: "), (what, stderr)
            assert "damaged" in lines[0], (what, stderr)
        else:
            assert (code, stdout) == built["answers"][what][:2], (what, stderr)
        assert "Traceback" not in stderr and "Aborted" not in stderr
    if kind in ("toc", "segment"):  # what every query reads: never answered
        assert all(a[0] == 5 for a in answers(ix).values())

    # `serve`: the one-line error before starting, or it goes on to start the server
    # (os.execve is stopped here so the test process is not replaced by gunicorn)
    started = []
    monkey = pytest.MonkeyPatch()
    monkey.setattr(os, "execve", lambda *a: started.append(a) or sys.exit(0))
    try:
        r = run(ix, "serve", "--port", str(free_port()))
    finally:
        monkey.undo()
    if kind in ("toc", "segment"):
        assert r.exit_code == 5 and not started, r.output
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("Error: the index is damaged")
    else:
        assert r.exit_code == 0 and started, r.output

    # the API: 503 problem+json and not ready, or the right answer and ready
    from newsquarry.api.app import create_app

    client = create_app({"index": str(ix)}).test_client()
    resp = client.get("/v1/search?q=council&per_page=50")
    ready = client.get("/health/ready")
    if resp.status_code == 503:
        assert resp.mimetype == "application/problem+json"
        assert resp.get_json()["title"] in ("Index damaged", "Index unavailable")
        assert str(ix) not in resp.get_data(as_text=True)
        assert ready.status_code == 503 and ready.get_json()["ready"] is False
    else:
        assert resp.status_code == 200 and ready.status_code == 200
        hits = [h["id"] for h in resp.get_json()["hits"]]
        assert hits == [h[0] for h in built["answers"]["search"][1]["hits"]]

    # repair with the original file: an index equal to a clean build, which check accepts
    result = repair(ix, [built["source"]], enricher=TagEnricher())
    # doc values are derived data: the reads above rebuilt them from the postings, byte for
    # byte the file the commit wrote, so repair may find nothing left to do
    derived = kind in DERIVED
    assert (result.repaired or derived) and result.clean_after, result.to_dict()
    assert run(ix, "check").exit_code == 0
    assert contents(ix) == built["contents"]
    assert answers(ix) == built["answers"]


def test_repair_without_the_files_names_what_it_could_not_recover(built, tmp_path):
    ix = tmp_path / "ix"
    shutil.copytree(built["ix"], ix)
    seg = files_of(ix)["segment"]
    os.truncate(ix / seg, 100)
    r = run(ix, "repair")
    assert r.exit_code == 0, r.output
    assert "3 articles kept, 0 recovered from files" in r.stdout
    assert "Not recovered (3 articles): fi-0003, fi-0004, fi-0005" in r.stdout
    assert run(ix, "check").exit_code == 0
    stats = json.loads(run(ix, "stats", "--json").stdout)
    assert stats["articles"] == 3
    assert run(ix, "show", "fi-0000").exit_code == 0
    assert run(ix, "show", "fi-0004").exit_code == 3  # lost, and said so above
    # the lost articles come back with their files, as `index` would add them
    result = repair(ix, [built["source"]], enricher=TagEnricher())
    assert not result.repaired  # nothing damaged any more: repair leaves the index alone
    index_paths(WhooshStore(ix), [str(built["source"])], enricher=TagEnricher())
    assert contents(ix) == built["contents"]


def test_a_clean_index_checks_clean_and_repair_does_nothing(built, tmp_path):
    ix = tmp_path / "ix"
    shutil.copytree(built["ix"], ix)
    before = sorted(os.listdir(ix))
    r = run(ix, "check")
    assert r.exit_code == 0 and "No damage found." in r.stdout
    r = run(ix, "repair")
    assert r.exit_code == 0 and "nothing to repair" in r.stdout
    assert sorted(os.listdir(ix)) == before


def test_damage_while_a_store_is_open_is_found_at_its_next_generation(built, tmp_path):
    """A long-lived reader (an API worker) verifies new files when a commit lands."""
    ix = tmp_path / "ix"
    shutil.copytree(built["ix"], ix)
    store = WhooshStore(ix, create=False)
    store.stats()
    seg = files_of(ix)["segment"]
    # a segment overwritten in place, then another process commits (delete of one article)
    with open(ix / seg, "r+b") as fh:
        fh.seek(1000)
        fh.write(b"\0" * 512)
    with pytest.raises(IndexDamaged, match=seg):
        WhooshStore(ix, create=False).delete("fi-0000")  # a writer refuses to merge damage
    with pytest.raises(IndexDamaged, match=seg):
        store.verify_readable()
    store.close()


def test_an_index_made_before_checksums_is_read_then_gets_them(built, tmp_path):
    ix = tmp_path / "ix"
    shutil.copytree(built["ix"], ix)
    for name in os.listdir(ix):
        if name.endswith((".sums", integrity.ARTICLES_EXT)):
            (ix / name).unlink()
    assert answers(ix) == built["answers"]
    r = run(ix, "check")
    assert r.exit_code == 0 and "made before checksums" in r.stdout
    WhooshStore(ix).delete("fi-0000")  # the next write records checksums
    r = run(ix, "check")
    assert r.exit_code == 0 and "made before checksums" not in r.stdout


def test_old_index_damage_without_checksums_is_still_an_error_not_a_traceback(built, tmp_path):
    ix = tmp_path / "ix"
    shutil.copytree(built["ix"], ix)
    for name in os.listdir(ix):
        if name.endswith((".sums", integrity.ARTICLES_EXT)):
            (ix / name).unlink()
    seg = files_of(built["ix"])["segment"]
    os.truncate(ix / seg, (ix / seg).stat().st_size // 2)
    for what, (code, _stdout, stderr) in answers(ix).items():
        assert code == 5, (what, stderr)
        assert stderr.count("\n") == 1 and "Traceback" not in stderr and "Aborted" not in stderr
    r = run(ix, "check")
    assert r.exit_code == 5 and seg in r.stdout
    from newsquarry.api.app import create_app

    client = create_app({"index": str(ix)}).test_client()
    resp = client.get("/v1/search?q=council")
    assert resp.status_code == 503 and resp.mimetype == "application/problem+json"
    assert client.get("/health/ready").status_code == 503


def test_a_write_never_blesses_damage_with_fresh_checksums(built, tmp_path):
    """After damage, a write either refuses (IndexDamaged) or leaves the damage for check."""
    ix = tmp_path / "ix"
    shutil.copytree(built["ix"], ix)
    files = files_of(ix)
    os.truncate(ix / files["articles list"], 10)  # answers do not depend on it: writes go on
    WhooshStore(ix).delete("fi-0000")
    r = run(ix, "check")
    assert r.exit_code == 5 and files["articles list"] in r.stdout
    (ix / integrity.manifest_name(integrity.toc_generations(ix)[0])).unlink()
    with pytest.raises(IndexDamaged, match="is missing"):
        WhooshStore(ix).delete("fi-0001")  # no checksums to carry over: refused
    assert run(ix, "repair").exit_code == 0 and run(ix, "check").exit_code == 0


def test_the_matrix_covers_every_kind_of_file_a_commit_writes(built):
    """A new kind of file written at commit (doc values, say) must join the matrix above."""
    ix = built["ix"]
    gen = integrity.toc_generations(ix)[0]
    listed = set(integrity.read_manifest(ix, gen).files) | {integrity.manifest_name(gen)}
    covered = set(files_of(ix).values())
    seg_exts = {Path(n).suffix for n in covered if integrity.SEGMENT_FILE_RE.match(n)}
    for name in listed:
        if integrity.SEGMENT_FILE_RE.match(name):
            assert Path(name).suffix in seg_exts, f"{name}: a kind of file the matrix misses"
        else:
            assert (
                integrity.TOC_RE.match(name)
                or integrity.MANIFEST_RE.match(name)
                or name in covered  # the key table (one per segment list, not per segment)
            ), name
    # and the index folder holds nothing else a reader depends on (the alias table is
    # derived from the stored passages: a writer rebuilds it when it is lost or damaged)
    others = {n for n in os.listdir(ix) if n not in listed}
    assert others <= {
        "newsquarry_WRITELOCK",
        "newsquarry_TURNSTILE",
        "newsquarry_MERGELOCK",
        "aliases.json",
        "aliases.summed",
        "aliases-evidence.json",
        "aliases-evidence.jsonl",
        "aliases.lock",
        # the stories of the last state linked: derived, kept with its state and a CRC,
        # linked again when missing, damaged or of another state (archive.stories)
        "newsquarry_STORIES.sto",
    }, others


def test_repair_command_with_the_original_files_recovers_every_article(built, tmp_path):
    ix = tmp_path / "ix"
    shutil.copytree(built["ix"], ix)
    os.truncate(ix / files_of(ix)["segment"], 0)
    monkey = pytest.MonkeyPatch()
    monkey.setattr(
        "newsquarry.search.ingest.indexer.default_enricher", lambda **kw: TagEnricher()
    )  # no spaCy
    try:
        r = run(ix, "repair", str(built["source"]))
    finally:
        monkey.undo()
    assert r.exit_code == 0, r.output
    assert "3 articles kept, 3 recovered from files, 0 added from files." in r.stdout
    assert "Not recovered" not in r.stdout
    assert run(ix, "check").exit_code == 0
    assert contents(ix) == built["contents"]


def test_a_file_verified_once_is_not_read_again_until_it_changes(built, tmp_path, monkeypatch):
    """A later process skips the CRC of a file an earlier one verified, while its identity
    and times are unchanged (``newsquarry_VERIFIED``); a write to it brings the check back,
    and a damaged record only costs the reads."""
    ix = tmp_path / "ix"
    shutil.copytree(built["ix"], ix)
    monkeypatch.setattr(integrity, "TRUST_AFTER_NS", 0)  # the files were written just now
    reads: list[str] = []
    crc32_file = integrity.crc32_file

    def counted(path):
        reads.append(os.path.basename(path))
        return crc32_file(path)

    monkeypatch.setattr(integrity, "crc32_file", counted)

    def new_process() -> dict:  # as a new process: nothing verified in memory
        monkeypatch.setattr(integrity, "VERIFIER", integrity.Verifier())
        reads.clear()
        return answers(ix)

    seg = files_of(ix)["segment"]
    assert new_process() == built["answers"]
    assert seg in reads and (ix / integrity.VERIFIED_NAME).exists()
    assert new_process() == built["answers"]
    assert reads == []
    (ix / integrity.VERIFIED_NAME).write_text('{"version": 1, "files": {}, "crc32": 1}')
    assert new_process() == built["answers"]
    assert seg in reads
    assert new_process() == built["answers"]
    assert reads == []
    inflict(ix / seg, "block", ix)  # same size, every byte of a block changed
    code, _, err = new_process()["search"]
    assert code == 5 and f"{seg} does not match its checksum" in err
    assert seg in reads


def _quoted_articles(n: int) -> list[dict]:
    """Articles each holding quotations with speakers (what repair lost before)."""
    return [
        {
            "id": f"q-{i:03d}",
            "title": f"Story {i}",
            "date": f"2020-01-{1 + i % 28:02d}",
            "text": f'"We will not give up in Caracas number {i}," said Harry Solano.\n\n'
            f'Juan Guaidó spoke to Reuters. "The army must choose {i}," says Ana Ruiz.',
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("with_files", [False, True])
def test_repair_keeps_every_article_of_the_intact_segments(tmp_path, with_files):
    """Seven segments holding quotations, one damaged: repair keeps every article of the six
    others exactly as stored (passages, entities, quotations), with or without the files,
    and says what it kept and lost."""
    raw = _quoted_articles(21)
    source = write_jsonl(tmp_path / "news.jsonl", raw)
    ix = tmp_path / "ix"
    store = WhooshStore(ix, background_merges=False)
    for k in range(7):  # seven commits: seven segments
        part = write_jsonl(tmp_path / f"part{k}.jsonl", raw[3 * k : 3 * k + 3])
        index_paths(store, [str(part)], enricher=TagEnricher())
    assert store.stats()["segments"] == 7 and store.stats()["quotes"] == 42
    store.close()
    before = contents(ix)
    gen = integrity.toc_generations(ix)[0]
    manifest = integrity.read_manifest(ix, gen)
    victim = manifest.segments[3]["id"]
    lost = sorted(
        a
        for a, _doc in integrity.read_articles_file(ix / (victim + integrity.ARTICLES_EXT)).items()
    )
    assert len(lost) == 3
    os.truncate(ix / (victim + integrity.SEGMENT_EXT), 100)

    result = repair(ix, [source] if with_files else [], enricher=TagEnricher())
    assert result.repaired and result.clean_after
    assert result.kept == 18
    if with_files:
        assert result.recovered == lost and result.lost == []
        assert contents(ix) == before  # every stored document as it was
    else:
        assert result.lost == lost and result.recovered == []
        kept = [d for d in before if not any(f'"{a}' in d for a in lost)]
        assert contents(ix) == kept  # the others exactly as stored, quotations included
    store = WhooshStore(ix, create=False)
    try:
        assert store.stats()["quotes"] == (42 if with_files else 36)
    finally:
        store.close()
