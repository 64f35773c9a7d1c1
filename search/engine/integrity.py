"""Checksums of every file a commit writes, and the checks that use them.

Whoosh writes a commit as segment files plus a table of contents (TOC), and
checks nothing when it reads them back: a segment cut short failed with an
``EOFError``, a block overwritten inside one gave wrong scores without a word.
Like Lucene's per-file checksums, every commit here also writes a *manifest*,
``_newsquarry_<generation>.sums``, just before the TOC rename that makes the
commit count (so a commit and its manifest land together; a commit killed in
between leaves a manifest of a generation that never came, overwritten by the
next commit). The manifest lists, for the generation:

- every file of the generation: its TOC and every file in the index folder
  named after one of its segments (``newsquarry_<segment id>.*``: the compound
  segment file, the segment's article list below, and any other per-segment
  file a later version writes at commit), and the merged key table of its
  segment list (``newsquarry-keys-<hash>.kt``, ``search.keytable``), each with
  its size and CRC-32;
- per segment: its files, its document count and its deleted documents (a copy
  of what the TOC says, so a damaged TOC can be rebuilt from the segments);
- a CRC-32 of the manifest itself (last line).

Each segment also gets a small article list, ``newsquarry_<segment id>.ids``
(article id -> document number), written once with the segment, so ``check``
can name the articles a damaged segment held even when nothing of the
segment can be read.

Segment files never change once written, so a commit hashes only the files it
created and carries the other entries over from the previous manifest.

Reading: ``quick_check`` (presence and size of every file the generation
needs: a ``stat`` each) runs when an index is opened and when a reader moves to
a new generation; ``Verifier`` checks a file's CRC before Whoosh reads a byte
of it, once (again only if the file's inode, size or times change; a file that
passed is recorded in ``newsquarry_VERIFIED`` so later processes skip it while
its identity and times stay the same): a damaged file is an ``IndexDamaged``
error naming it, never a wrong answer. ``check_index`` verifies everything (``newsquarry check``).

An index made before checksums has no manifest: it is read as before and gets
one at its next commit; ``check`` says its files could not be verified.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from whoosh.reading import SegmentReader

from newsquarry.search.core.errors import IndexDamaged

INDEX_NAME = "newsquarry"
MANIFEST_RE = re.compile(rf"^_{INDEX_NAME}_(\d+)\.sums$")
TOC_RE = re.compile(rf"^_{INDEX_NAME}_(\d+)\.toc$")
SEGMENT_FILE_RE = re.compile(rf"^({INDEX_NAME}_[0-9a-z]+)\.[A-Za-z0-9_.]+$")  # as Whoosh's
SEGMENT_EXT = ".seg"
ARTICLES_EXT = ".ids"
DERIVED_EXT = ".dv"  # doc values (search.dvstore): rebuilt from the postings when missing
QUOTES_EXT = ".qmh"  # quotation signatures (search.quoteclusters): rebuilt the same way
POSTINGS_EXT = ".pst"  # decoded postings (search.pstore): rebuilt the same way
KEYS_EXT = ".kt"  # a segment list's merged key table (search.keytable): rebuilt the same way
FIELDS_EXT = ".xfl"  # the articles' extra fields (archive.fieldcols): rebuilt the same way
STORIES_EXT = ".smh"  # article signatures (archive.storysigs): rebuilt the same way
VECTORS_EXT = ".vec"  # passage vectors (archive.vectors): re-encoded by ``repair``
TOKENS_EXT = ".tok"  # token offsets (archive.tokenoffsets): highlights analyse the text without
DERIVED_EXTS = (
    DERIVED_EXT, QUOTES_EXT, POSTINGS_EXT, KEYS_EXT, FIELDS_EXT, STORIES_EXT, VECTORS_EXT,
    TOKENS_EXT,
)  # fmt: skip
# files a read may do without: the derived ones, and the articles lists
NOT_READ_EXTS = (ARTICLES_EXT, *DERIVED_EXTS)
CHUNK = 1 << 20
VERIFIED_NAME = f"{INDEX_NAME}_VERIFIED"  # files verified, for later processes
TRUST_AFTER_NS = 2_000_000_000  # record only files whose times are 2 s old


def manifest_name(generation: int) -> str:
    return f"_{INDEX_NAME}_{generation}.sums"


def toc_name(generation: int) -> str:
    return f"_{INDEX_NAME}_{generation}.toc"


def crc32_file(path: str | os.PathLike) -> tuple[int, int]:
    """(size, CRC-32) of a file, read 1 MB at a time."""
    crc, size = 0, 0
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            crc = zlib.crc32(chunk, crc)
            size += len(chunk)
    return size, crc


def toc_generations(folder: Path) -> list[int]:
    """Generations of the TOC files in ``folder``, newest first."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted((int(m.group(1)) for n in names if (m := TOC_RE.match(n))), reverse=True)


def is_checksummed(folder: Path) -> bool:
    """Whether the index has had checksums (its segments have article lists, written with them).

    Then a missing manifest is damage, not an index made before checksums.
    """
    try:
        return any(n.endswith(ARTICLES_EXT) for n in os.listdir(folder))
    except OSError:
        return False


# -- manifests -----------------------------------------------------------------


@dataclass
class Manifest:
    """What a generation consists of (see the module docstring)."""

    generation: int
    files: dict[str, dict[str, int]]  # name -> {"size", "crc32"}
    segments: list[dict[str, Any]]  # {"id", "files", "docs", "deleted"}

    def dumps(self) -> bytes:
        body = json.dumps(
            {
                "format": 1,
                "generation": self.generation,
                "algorithm": "crc32",
                "files": self.files,
                "segments": self.segments,
            },
            sort_keys=True,
            separators=(",", ":"),
        ).encode("utf-8")
        body += b"\n"
        return body + f"crc32:{zlib.crc32(body):08x}\n".encode()

    @classmethod
    def loads(cls, raw: bytes, generation: int) -> Manifest:
        """Parse and verify a manifest; ValueError saying what is wrong."""
        body, sep, tail = raw.rstrip(b"\n").rpartition(b"\n")
        if not sep or not tail.startswith(b"crc32:"):
            raise ValueError("cut short (no checksum line)")
        body += b"\n"
        if f"crc32:{zlib.crc32(body):08x}".encode() != tail:
            raise ValueError("does not match its own checksum")
        data = json.loads(body)
        if data.get("generation") != generation:
            raise ValueError(
                f"belongs to generation {data.get('generation')}, not {generation} "
                "(a file of another generation put in its place?)"
            )
        return cls(generation, data["files"], data["segments"])


class ManifestMissing(Exception):
    pass


def read_manifest(folder: Path, generation: int) -> Manifest:
    """The verified manifest of ``generation``; ManifestMissing, or ValueError if damaged."""
    try:
        raw = (Path(folder) / manifest_name(generation)).read_bytes()
    except FileNotFoundError:
        raise ManifestMissing(manifest_name(generation)) from None
    return Manifest.loads(raw, generation)


def write_manifest_file(folder: Path, manifest: Manifest) -> None:
    """Write a manifest atomically: a temporary file, fsynced, renamed into place."""
    final = folder / manifest_name(manifest.generation)
    temp = folder / f"{final.name}.{os.getpid()}.tmp"
    try:
        with open(temp, "wb") as fh:
            fh.write(manifest.dumps())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temp, final)
    except BaseException:
        try:
            os.remove(temp)
        except OSError:
            pass
        raise


def segment_articles(storage: Any, schema: Any, segment: Any) -> dict[str, int]:
    """Article id -> its first document number in ``segment``, from the article_id postings."""
    reader = SegmentReader(storage, schema, segment)
    try:
        if "article_id" not in reader.indexed_field_names():
            return {}
        out = {}
        for btext in reader.lexicon("article_id"):
            ids = list(reader.postings("article_id", btext).all_ids())  # live documents only
            if ids:
                out[btext.decode("utf-8")] = min(ids)
        return out
    finally:
        reader.close()


def articles_file_bytes(segid: str, articles: dict[str, int]) -> bytes:
    return (
        json.dumps({"segment": segid, "articles": sorted(articles.items())}, ensure_ascii=False)
        + "\n"
    ).encode("utf-8")


def read_articles_file(path: Path) -> dict[str, int]:
    data = json.loads(Path(path).read_bytes())
    return {aid: int(doc) for aid, doc in data["articles"]}


def build_manifest(
    folder: Path,
    storage: Any,
    schema: Any,
    segments: list[Any],
    generation: int,
    toc_file: str,
    previous: Manifest | None,
    derived: tuple[str, ...] = (),
) -> Manifest:
    """The manifest of a generation about to be committed (its TOC written as ``toc_file``).

    Writes the article list of each new segment first (through ``storage``, so
    the commit fsyncs it with the segment), hashes new files, and carries the
    entries of unchanged files over from ``previous``. ``derived``: names of derived files
    of this state (the segments' merged key table) checksummed too where they exist.
    """
    known = previous.files if previous else {}
    names = os.listdir(folder)
    files: dict[str, dict[str, int]] = {}
    seg_entries = []
    for seg in segments:
        sid = seg.segment_id()
        ids_name = sid + ARTICLES_EXT
        if ids_name not in names:
            payload = articles_file_bytes(sid, segment_articles(storage, schema, seg))
            f = storage.create_file(ids_name)
            f.write(payload)
            f.close()
            names.append(ids_name)
        own = sorted(n for n in names if (m := SEGMENT_FILE_RE.match(n)) and m.group(1) == sid)
        for name in own:
            entry = known.get(name)
            if entry is None:  # written by this commit (or an index made before checksums)
                size, crc = crc32_file(folder / name)
                entry = {"size": size, "crc32": crc}
            files[name] = entry  # files never change: a known one keeps its first checksum
        seg_entries.append(
            {
                "id": sid,
                "files": own,
                "docs": seg.doc_count_all(),
                "deleted": sorted(seg.deleted_docs()) if seg.has_deletions() else [],
            }
        )

    for table in derived:
        if table not in names:
            continue
        entry = known.get(table)
        if entry is None:
            size, crc = crc32_file(folder / table)
            entry = {"size": size, "crc32": crc}
        files[table] = entry
    size, crc = crc32_file(folder / toc_file)
    files[toc_name(generation)] = {"size": size, "crc32": crc}
    return Manifest(generation, files, seg_entries)


def latest_manifest(folder: Path, below: int) -> Manifest | None:
    """The newest readable manifest of a generation below ``below`` (None if none)."""
    gens = sorted(
        (int(m.group(1)) for n in os.listdir(folder) if (m := MANIFEST_RE.match(n))), reverse=True
    )
    for gen in gens:
        if gen >= below:
            continue
        try:
            return read_manifest(folder, gen)
        except (ManifestMissing, ValueError, OSError):
            continue
    return None


def remove_other_manifests(folder: Path, generation: int) -> None:
    """Delete the manifests of other generations (after the commit of ``generation``)."""
    for name in os.listdir(folder):
        m = MANIFEST_RE.match(name)
        if (m and int(m.group(1)) != generation) or (
            name.startswith(f"_{INDEX_NAME}_") and name.endswith(".tmp") and ".sums." in name
        ):
            try:
                os.remove(folder / name)
            except OSError:
                pass


# -- checks when reading ---------------------------------------------------------


def damaged(files: list[str], problems: list[str]) -> IndexDamaged:
    shown = "; ".join(problems[:3]) + ("; …" if len(problems) > 3 else "")
    return IndexDamaged(
        f"the index is damaged: {shown}. Run `newsquarry check` for the details and "
        "`newsquarry repair` to rebuild it",
        files=files,
    )


def quick_check(folder: Path, generation: int) -> Manifest | None:
    """Presence and size of every file generation ``generation`` reads; IndexDamaged if not.

    Returns the manifest (None for an index made before checksums). The
    segments' article lists are left out: answers do not depend on them.
    """
    try:
        manifest = read_manifest(folder, generation)
    except ManifestMissing:
        return None  # an old index, or a missing manifest: check names it, writes refuse
    except (ValueError, OSError):
        return None  # damaged manifest: reads still verify what they can; check names it
    bad, problems = [], []
    for name, entry in manifest.files.items():
        if name.endswith(NOT_READ_EXTS):
            continue
        try:
            size = os.stat(folder / name).st_size
        except FileNotFoundError:
            if name == toc_name(generation):
                continue  # a newer commit removed it meanwhile: the caller reads again
            bad.append(name)
            problems.append(f"{name} is missing")
            continue
        if size != entry["size"]:
            bad.append(name)
            problems.append(f"{name} has {size} bytes, {entry['size']} expected")
    if bad:
        raise damaged(bad, problems)
    return manifest


class Verifier:
    """Checks a file's CRC-32 against the manifest before a process first reads it.

    Shared by every store of the process; a file verified once is not read
    again unless its identity or times change (a new file, or one written to).

    Across processes: a file that passed is recorded in the index folder's
    ``newsquarry_VERIFIED`` (JSON: name -> inode, size, mtime, ctime and the CRC
    it matched, plus a CRC of the record), so the next process skips the read of
    a file whose identity, size, times and expected CRC are all unchanged. Every
    write to a file changes its ctime (which no user call can set back), so a
    file changed since it was verified is read again. Only files whose times are
    ``TRUST_AFTER_NS`` old when verified are recorded: a write in the same clock
    tick as the verification would keep the times. What this gives up: damage
    that leaves a file's metadata unchanged (a disk that decays under a file)
    is caught by ``newsquarry check``, no longer by every new process. A missing,
    unreadable or damaged record is ignored (every file is verified again), and a
    read-only folder keeps no record.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._expected: dict[str, dict[str, int]] = {}  # path -> manifest entry
        self._verified: dict[str, tuple] = {}  # path -> stat signature when verified
        self._records: dict[str, tuple[tuple, dict[str, list[int]]]] = {}  # folder -> record

    def learn(self, folder: Path, manifest: Manifest) -> None:
        with self._lock:
            for name, entry in manifest.files.items():
                self._expected[os.path.join(folder, name)] = entry

    def verify(self, path: str) -> None:
        """Raise IndexDamaged if the file at ``path`` differs from its manifest entry."""
        entry = self._expected.get(path)
        if entry is None:
            return  # not in a manifest this process has read: a new or an old-index file
        st = os.stat(path)
        sig = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if self._verified.get(path) == sig:
            return
        name = os.path.basename(path)
        if st.st_size != entry["size"]:
            raise damaged([name], [f"{name} has {st.st_size} bytes, {entry['size']} expected"])
        folder = os.path.dirname(path)
        if self._record(folder).get(name) != [*sig, entry["crc32"]]:
            _, crc = crc32_file(path)
            if crc != entry["crc32"]:
                raise damaged([name], [f"{name} does not match its checksum"])
            if time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) >= TRUST_AFTER_NS:
                self._remember(folder, name, [*sig, entry["crc32"]])
        with self._lock:
            self._verified[path] = sig

    def _record(self, folder: str) -> dict[str, list[int]]:
        """The folder's record of verified files (empty if missing or not valid)."""
        path = os.path.join(folder, VERIFIED_NAME)
        try:
            st = os.stat(path)
        except OSError:
            return {}
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        got = self._records.get(folder)
        if got is not None and got[0] == key:
            return got[1]
        files: dict[str, list[int]] = {}
        try:
            with open(path, "rb") as fh:
                data = json.loads(fh.read())
            body = json.dumps(data["files"], sort_keys=True).encode()
            if data.get("version") == 1 and data.get("crc32") == zlib.crc32(body):
                files = data["files"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass
        with self._lock:
            self._records[folder] = (key, files)
        return files

    def _remember(self, folder: str, name: str, value: list[int]) -> None:
        """Add a verified file to the folder's record (files no longer there are dropped)."""
        files = dict(self._record(folder))
        files[name] = value
        files = {n: v for n, v in files.items() if os.path.exists(os.path.join(folder, n))}
        body = json.dumps(files, sort_keys=True).encode()
        data = {"version": 1, "files": files, "crc32": zlib.crc32(body)}
        tmp = os.path.join(folder, f".{VERIFIED_NAME}.{os.getpid()}.{threading.get_ident()}")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(data, fh)
            os.replace(tmp, os.path.join(folder, VERIFIED_NAME))
        except OSError:  # a read-only folder, a full disk: verified again next time
            try:
                os.unlink(tmp)
            except OSError:
                pass


VERIFIER = Verifier()


# -- the full check --------------------------------------------------------------


def require_manifest(folder: Path, generation: int) -> None:
    """Before a write: refuse when the current generation's checksums are missing or damaged.

    A write would otherwise record fresh checksums over files nobody verified.
    """
    if generation < 1 or not is_checksummed(folder):
        return
    try:
        read_manifest(folder, generation)
    except ManifestMissing:
        raise damaged(
            [manifest_name(generation)], [f"{manifest_name(generation)} is missing"]
        ) from None
    except (ValueError, OSError) as exc:
        raise damaged([manifest_name(generation)], [f"{manifest_name(generation)} {exc}"]) from None


def describe(names: Iterable[str]) -> str:
    return ", ".join(sorted(names))


def enter_segment_file(folder: Path, generation: int, segid: str, name: str) -> None:
    """Enter a segment's new (or rewritten) file ``name`` in the generation's manifest, as
    the segment's, with its size and CRC; nothing for an index made before checksums (it
    gets them at its next commit). Under the write lock; the caller's commit carries the
    entry into the next generation."""
    try:
        manifest = read_manifest(folder, generation)
    except (ManifestMissing, ValueError, OSError):
        return
    size, crc = crc32_file(folder / name)
    manifest.files[name] = {"size": size, "crc32": crc}
    for seg in manifest.segments:
        if seg["id"] == segid and name not in seg["files"]:
            seg["files"] = sorted([*seg["files"], name])
    write_manifest_file(folder, manifest)
    VERIFIER.learn(folder, manifest)
