"""``newsquarry check``: every file of an index against its checksum, or read whole where an
index has none, with what each damage costs (segments, articles) and what ``repair`` can do.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whoosh.index import TOC
from whoosh.reading import SegmentReader

from newsquarry.search.engine import hooks
from newsquarry.search.engine.integrity import (
    ARTICLES_EXT,
    INDEX_NAME,
    MANIFEST_RE,
    SEGMENT_EXT,
    SEGMENT_FILE_RE,
    TOC_RE,
    Manifest,
    ManifestMissing,
    crc32_file,
    is_checksummed,
    manifest_name,
    read_articles_file,
    read_manifest,
    toc_generations,
    toc_name,
)
from newsquarry.search.engine.storage import DurableFileStorage


@dataclass
class Problem:
    file: str
    problem: str
    kind: str  # "toc", "segment", "articles list", "manifest", "derived", "other"
    segment: str | None = None
    articles: list[str] | None = None  # live articles the damaged file held (None: unknown)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "problem": self.problem,
            "kind": self.kind,
            "segment": self.segment,
            "articles": self.articles,
        }


@dataclass
class CheckReport:
    """What ``check_index`` found."""

    path: str
    generation: int | None
    files_checked: int = 0
    bytes_checked: int = 0
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    damaged_segments: set[str] = field(default_factory=set)
    damaged_features: list[Any] = field(default_factory=list)  # ``hooks.Feature``s: rebuild
    toc_ok: bool = False
    manifest: Manifest | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def lost_articles(self) -> list[str]:
        out: set[str] = set()
        for p in self.problems:
            out.update(p.articles or [])
        return sorted(out)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "generation": self.generation,
            "files_checked": self.files_checked,
            "bytes_checked": self.bytes_checked,
            "problems": [p.to_dict() for p in self.problems],
            "articles_affected": self.lost_articles,
            "notes": self.notes,
        }


def _kind(name: str) -> str:
    if TOC_RE.match(name):
        return "toc"
    if name.endswith(ARTICLES_EXT):
        return "articles list"
    if name.endswith(tuple(e for f in hooks.features() for e in getattr(f, "rebuilt_exts", ()))):
        return "derived"  # a feature rebuilds it from the segment (``Feature.rebuild``)
    if SEGMENT_FILE_RE.match(name):
        return "segment"
    return "other"


def _read_toc(folder: Path, generation: int) -> Any:
    return TOC.read(DurableFileStorage(str(folder), verify=False), INDEX_NAME, generation)


def _segment_of(name: str) -> str | None:
    m = SEGMENT_FILE_RE.match(name)
    return m.group(1) if m else None


def check_index(folder: str | os.PathLike) -> CheckReport:
    """Verify every file of the newest generation; name damaged files and their articles."""
    folder = Path(folder)
    gens = toc_generations(folder)
    man_gens = sorted(
        int(m.group(1)) for n in os.listdir(folder) if (m := MANIFEST_RE.match(n))
    ) if folder.is_dir() else []  # fmt: skip
    report = CheckReport(str(folder), gens[0] if gens else None)
    if not gens:
        if man_gens or any(SEGMENT_FILE_RE.match(n) for n in os.listdir(folder)):
            gen = max(man_gens) if man_gens else None
            report.generation = gen
            report.problems.append(
                Problem(
                    toc_name(gen) if gen is not None else f"_{INDEX_NAME}_N.toc",
                    "the table of contents is missing",
                    "toc",
                )  # fmt: skip
            )
        else:
            report.problems.append(Problem(str(folder), "no index here", "other"))
            return report
    gen = report.generation
    manifest = None
    if gen is not None:
        try:
            manifest = read_manifest(folder, gen)
        except ManifestMissing:
            if is_checksummed(folder):
                report.problems.append(Problem(manifest_name(gen), "is missing", "manifest"))
            else:
                report.notes.append(
                    "this index was made before checksums: its files could not be verified "
                    "(they get checksums at the next write)"
                )
        except (ValueError, OSError) as exc:
            report.problems.append(Problem(manifest_name(gen), str(exc), "manifest"))
    report.manifest = manifest
    expected: dict[str, dict[str, int]] = manifest.files if manifest else {}
    seg_of_file = {}
    if manifest:
        for seg in manifest.segments:
            for name in seg["files"]:
                seg_of_file[name] = seg["id"]
    for name, entry in sorted(expected.items()):
        path = folder / name
        report.files_checked += 1
        try:
            size, crc = crc32_file(path)
        except FileNotFoundError:
            report.problems.append(Problem(name, "is missing", _kind(name), seg_of_file.get(name)))
            continue
        except OSError as exc:
            report.problems.append(Problem(name, f"cannot be read: {exc.strerror}", _kind(name),
                                           seg_of_file.get(name)))  # fmt: skip
            continue
        report.bytes_checked += size
        if size != entry["size"]:
            problem = f"has {size} bytes, {entry['size']} expected"
        elif crc != entry["crc32"]:
            problem = "does not match its checksum"
        else:
            continue
        report.problems.append(Problem(name, problem, _kind(name), seg_of_file.get(name)))
    # the TOC must parse (and name the same segments as the manifest)
    toc = None
    if gen is not None and gens:
        try:
            toc = _read_toc(folder, gen)
        except Exception as exc:  # noqa: BLE001 - any way a damaged pickle fails
            if not any(p.kind == "toc" for p in report.problems):
                report.problems.append(
                    Problem(toc_name(gen), f"cannot be read ({type(exc).__name__})", "toc")
                )
        else:
            toc_damaged = any(p.kind == "toc" for p in report.problems)
            report.toc_ok = not toc_damaged
            if manifest and not toc_damaged:
                listed = [s["id"] for s in manifest.segments]
                if [s.segment_id() for s in toc.segments] != listed:
                    report.problems.append(Problem(
                        toc_name(gen), "names other segments than its manifest", "toc"))  # fmt: skip
                    report.toc_ok = False
    # files of the generation's segments that no manifest covers
    if manifest:
        live = {s["id"] for s in manifest.segments}
        for name in sorted(os.listdir(folder)):
            sid = _segment_of(name)
            if sid in live and name not in expected:
                report.notes.append(f"{name} was written after its commit: not verified")
    # without checksums, read every segment through to find what Whoosh cannot read
    if not manifest and toc is not None:
        _structural_check(folder, toc, report)
    # damaged segments and the articles they held
    for p in report.problems:
        sid = p.segment or (_segment_of(p.file) if p.kind in ("segment", "articles list") else None)
        if sid is None:
            continue
        p.segment = sid
        if p.kind == "segment":
            report.damaged_segments.add(sid)
    for p in report.problems:
        if p.kind == "segment" and p.segment:
            p.articles = _live_articles(folder, p.segment, manifest, toc, report)
    # segment files a feature rebuilds (``rebuilt_exts``), and the features' own files
    # that answers depend on (the alias table): not in a manifest
    for feature in hooks.features():
        exts = tuple(getattr(feature, "rebuilt_exts", ()))
        if exts and any(p.kind == "derived" and p.file.endswith(exts) for p in report.problems):
            if feature not in report.damaged_features:
                report.damaged_features.append(feature)
        for found in feature.verify(folder):
            if found.damage:
                report.problems.append(Problem(found.file, found.text, "derived"))
                if feature not in report.damaged_features:
                    report.damaged_features.append(feature)
            else:
                report.notes.append(found.text)
    return report


def _deleted_of(segid: str, manifest: Manifest | None, toc: Any) -> set[int]:
    if toc is not None:
        for s in toc.segments:
            if s.segment_id() == segid:
                return set(s.deleted_docs()) if s.has_deletions() else set()
    if manifest is not None:
        for s in manifest.segments:
            if s["id"] == segid:
                return set(s["deleted"])
    return set()


def _live_articles(
    folder: Path, segid: str, manifest: Manifest | None, toc: Any, report: CheckReport
) -> list[str] | None:
    """The live articles of a segment from its article list (None if that is unreadable)."""
    ids_name = segid + ARTICLES_EXT
    if any(p.file == ids_name for p in report.problems):
        return None
    try:
        articles = read_articles_file(folder / ids_name)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    deleted = _deleted_of(segid, manifest, toc)
    return sorted(a for a, doc in articles.items() if doc not in deleted)


def _structural_check(folder: Path, toc: Any, report: CheckReport) -> None:
    """Read every stored document and every term of each segment (indexes without checksums)."""
    storage = DurableFileStorage(str(folder), verify=False)
    for seg in toc.segments:
        name = seg.segment_id() + SEGMENT_EXT
        report.files_checked += 1
        try:
            reader = SegmentReader(storage, toc.schema, seg)
            try:
                for _ in reader.all_stored_fields():
                    pass
                for fieldname in reader.indexed_field_names():
                    for _ in reader.lexicon(fieldname):
                        pass
            finally:
                reader.close()
        except Exception as exc:  # noqa: BLE001 - any way a damaged segment fails
            report.problems.append(
                Problem(name, f"cannot be read ({type(exc).__name__})", "segment", seg.segment_id())
            )
