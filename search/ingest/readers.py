"""Readers: files in the formats people have -> ``Article`` objects.

Formats (by extension):
- ``.txt``: optional ``key: value`` front matter (id, title, date, url, source,
  author) then a blank line; a title line, where ``Title | Source`` gives the
  source after the last `` | ``; a blank line; paragraphs separated by blank lines.
- ``.md``/``.markdown``: YAML front matter between ``---`` lines; the title from
  the front matter or the first ``# heading``.
- ``.jsonl``/``.ndjson``: one article per line: ``id``, ``title``, ``text`` and
  optional ``date``, ``url``, ``source``, ``author``. Read line by line (streamed).
- ``.html``/``.htm``: main text, title and date extracted by trafilatura.

Ids are kept exactly as given (``search.ids``: refused when invalid, never
rewritten); a file without one gets ``derived_id`` of its relative path.

``read_paths`` walks folders recursively and yields ``Article`` or
``ReadFailure`` items, so one bad file never stops the others.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from newsquarry.search.core.errors import ReadError
from newsquarry.search.core.fields import extra_fields
from newsquarry.search.core.ids import derived_id, id_problem
from newsquarry.search.core.models import Article
from newsquarry.search.core.textnorm import clean_text, echo_safe, text_problem

TEXT_EXTS = {".txt"}
MD_EXTS = {".md", ".markdown"}
JSONL_EXTS = {".jsonl", ".ndjson"}
HTML_EXTS = {".html", ".htm"}
SUPPORTED = TEXT_EXTS | MD_EXTS | JSONL_EXTS | HTML_EXTS
FRONT_KEYS = ("id", "title", "date", "url", "source", "author")
# a record's keys the data model reads; any other key is an extra field (``core.fields``)
MODEL_KEYS = frozenset(FRONT_KEYS + ("text",))
MAX_FILE_BYTES = 50 * 1024 * 1024  # a single article file larger than this is refused
# HTML extraction is slow on big pages (a 4.6 MB page of paragraphs took 15 s, 23 MB
# did not finish in 2 minutes): larger HTML files are refused
MAX_HTML_BYTES = 5 * 1024 * 1024
# spaCy refuses longer texts (nlp.max_length), and analysing one this long already
# takes about two minutes and 3 GB; longer articles are refused with a clear reason
MAX_ARTICLE_CHARS = 1_000_000
# a source is a facet value, and facet values are filter parameters (at most 1000 characters)
MAX_NAME_CHARS = 1000
# a JSON Lines line longer than this is refused without being read into memory
# (room for MAX_ARTICLE_CHARS escaped as \uXXXX, plus metadata)
MAX_LINE_BYTES = 6 * MAX_ARTICLE_CHARS + 1024 * 1024
_FRONT_LINE = re.compile(r"^({})\s*:\s*(.*)$".format("|".join(FRONT_KEYS)), re.IGNORECASE)


@dataclass
class ReadFailure:
    """A file (or one line of a JSON Lines file) that could not be read, and why."""

    path: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


@dataclass
class Skipped:
    """A file that is not an article format (reported, not an error)."""

    path: str
    reason: str


def normalise_date(value: object, where: str = "date") -> str | None:
    """An ISO 8601 date or datetime -> "YYYY-MM-DD"; None stays None; anything else is refused."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.datetime):
        return value.date().isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    text = str(value).strip()
    if not text.isascii():  # int() and fromisoformat take any Unicode digits: "٢٠٢٤-٠١-٠١"
        raise ValueError(
            f"{where}: not an ISO 8601 date: use ASCII digits (YYYY-MM-DD), not {text[:40]!r}"
        )
    # the whole value must parse: "2024-01-01<anything>" is refused, not cut to its first 10
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        pass
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        raise ValueError(
            f"{where}: not an ISO 8601 date (YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS][+HH:MM]): "
            f"{text[:40]!r}"
        ) from None


def article_from_mapping(data: object, fallback_id: str | None = None) -> Article:
    """Validate a JSON-like mapping (JSONL line, API body) into an Article.

    Raises ValueError with a user-facing reason.
    """
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    text = data.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("missing or empty 'text'")
    if len(text) > MAX_ARTICLE_CHARS:
        raise ValueError(f"'text' longer than {MAX_ARTICLE_CHARS} characters")
    for key in ("title", "source", "url", "author", "id"):
        if data.get(key) is not None and not isinstance(data[key], (str, int)):
            raise ValueError(f"'{key}' must be a string")
    data = dict(data)
    for key in ("text", "title", "source", "url", "author"):
        # lone surrogates refused, control characters removed (textnorm.clean_text)
        if isinstance(data.get(key), str):
            problem = text_problem(data[key])
            if problem:
                raise ValueError(f"'{key}' {problem}")
            data[key] = clean_text(data[key], "\n" if key == "text" else " ")
    text = data["text"]
    if not text.strip():
        raise ValueError("'text' is empty once control characters are removed")
    source = data.get("source")
    if isinstance(source, str) and len(source) > MAX_NAME_CHARS:
        raise ValueError(f"'source' longer than {MAX_NAME_CHARS} characters")
    title = str(data.get("title") or "").strip()
    raw_id = data.get("id")
    if isinstance(raw_id, bool):
        raise ValueError("'id' must be a string")
    art_id = "" if raw_id is None else str(raw_id)
    if art_id:  # ids are data: refused when invalid, never rewritten (see search.ids)
        problem = id_problem(art_id)
        if problem:
            raise ValueError(f"'id' {problem}")
    else:
        if fallback_id:
            art_id = fallback_id
        else:
            art_id = "a-" + Article(id="", title=title, text=text).content_hash[:16]
    return Article(
        id=art_id,
        title=title or _first_line(text),
        synthetic_title=not title,
        text=text,
        source=_opt_str(data.get("source")),
        date=normalise_date(data.get("date")),
        url=_opt_str(data.get("url")),
        author=_opt_str(data.get("author")),
        fields=_checked_fields(data),
    )


def _checked_fields(data: dict) -> dict:
    """The record's extra fields, their strings checked as the text is (lone surrogates
    refused, control characters removed)."""
    extras = extra_fields(data, MODEL_KEYS)
    return {_clean_key(k): _clean_value(k, v) for k, v in extras.items()}


def _clean_key(key: str) -> str:
    problem = text_problem(key)
    if problem:
        raise ValueError(f"an extra field's name {problem}")
    return clean_text(key, " ")


def _clean_value(key: str, value: object) -> object:
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise ValueError(f"'{key}' {problem}")
        return clean_text(value, " ")
    if isinstance(value, list):
        return [_clean_value(key, v) for v in value]
    if isinstance(value, dict):
        return {_clean_key(str(k)): _clean_value(key, v) for k, v in value.items()}
    return value


def checked_article(article: Article) -> Article:
    """An ``Article`` made by a program (not read here) checked as a read one is: the
    same article, or a copy without control characters; ValueError naming the reason.

    The indexer's last gate: whatever entrance an article came through, nothing that
    cannot be stored (a lone surrogate, an empty text) reaches the index.
    """
    problem = id_problem(article.id)
    if problem:
        raise ValueError(f"'id' {problem}")
    if not isinstance(article.text, str):
        raise ValueError("'text' must be a string")
    changes: dict[str, str] = {}
    for key in ("text", "title", "source", "url", "author", "date"):
        value = getattr(article, key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"'{key}' must be a string")
        problem = text_problem(value)
        if problem:
            raise ValueError(f"'{key}' {problem}")
        cleaned = clean_text(value, "\n" if key == "text" else " ")
        if cleaned != value:
            changes[key] = cleaned
    if isinstance(article.path, str) and text_problem(article.path):
        # a file name that is not UTF-8 (os.fsdecode's surrogate escapes): stored as text,
        # with the bytes written as escapes, so the API can return it
        changes["path"] = echo_safe(article.path)
    if article.fields:
        if not isinstance(article.fields, dict):
            raise ValueError("'fields' must map field names to values")
        cleaned = _checked_fields(article.fields)
        if cleaned != article.fields:
            changes["fields"] = cleaned
    if not changes.get("text", article.text).strip():
        raise ValueError("missing or empty 'text' (once control characters are removed)")
    if len(article.text) > MAX_ARTICLE_CHARS:
        raise ValueError(f"'text' longer than {MAX_ARTICLE_CHARS} characters")
    if article.date is not None and normalise_date(article.date) != article.date:
        raise ValueError(f"'date' must be YYYY-MM-DD, not {article.date[:40]!r}")
    return dataclasses.replace(article, **changes) if changes else article


def _opt_str(value: object) -> str | None:
    """An optional metadata string, kept exactly as given (None when absent or blank)."""
    if value is None:
        return None
    s = str(value)
    return s if s.strip() else None


def _first_line(text: str, limit: int = 120) -> str:
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _read_text_file(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    size = path.stat().st_size
    if size == 0:
        raise ReadError(str(path), "empty file")
    if size > limit:
        raise ReadError(str(path), f"file larger than {limit // (1024 * 1024)} MB")
    raw = path.read_bytes()
    if b"\x00" in raw[:8192]:
        raise ReadError(str(path), "binary file (contains NUL bytes)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReadError(
            str(path), f"invalid UTF-8 at byte {exc.start}: not a UTF-8 text file"
        ) from None
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise ReadError(str(path), "no text (only whitespace)")
    return text


def parse_plain_text(text: str, default_id: str) -> Article:
    """Parse the plain-text format (see module docstring)."""
    lines = text.lstrip("\n").split("\n")
    meta: dict[str, str] = {}
    i = 0
    while i < len(lines) and (m := _FRONT_LINE.match(lines[i])):
        meta[m.group(1).lower()] = m.group(2).strip()
        i += 1
    if meta and not (i < len(lines) and not lines[i].strip()):
        # not front matter after all (e.g. a title line "Title: subtitle")
        meta, i = {}, 0
    rest = "\n".join(lines[i:]).strip()
    if "title" in meta:
        title, body = meta["title"], rest
    else:
        title, _, body = rest.partition("\n\n")
        title = title.strip()
        if " | " in title and "source" not in meta:
            title, _, meta["source"] = title.rpartition(" | ")
        if not body.strip():  # a single block: no separate title line
            body, title = rest, ""
    body = body.strip("\n")
    if not body.strip():
        raise ValueError("no body text after the title")
    meta.update(title=title, text=body)
    meta.setdefault("id", default_id)
    return article_from_mapping(meta, fallback_id=default_id)


def parse_markdown(text: str, default_id: str) -> Article:
    """Parse Markdown with optional YAML front matter."""
    import yaml  # lazy: start-up time (only Markdown needs it)

    meta: dict = {}
    body = text
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            try:
                loaded = yaml.safe_load(text[4:end])
            except yaml.YAMLError as exc:
                raise ValueError(f"invalid YAML front matter: {exc}".split("\n")[0]) from None
            if loaded is not None and not isinstance(loaded, dict):
                raise ValueError("YAML front matter is not a mapping")
            meta = {k.lower(): v for k, v in (loaded or {}).items() if isinstance(k, str)}
            body = text[end + 4 :].split("\n", 1)[1] if "\n" in text[end + 4 :] else ""
    body = body.strip("\n")
    heading = re.match(r"#\s+(.+)\n*", body)
    if heading:
        meta.setdefault("title", heading.group(1).strip())
        body = body[heading.end() :]
    if not body.strip():
        raise ValueError("no body text")
    meta = {k: v for k, v in meta.items() if k in FRONT_KEYS}
    meta["text"] = body
    meta.setdefault("id", default_id)
    return article_from_mapping(meta, fallback_id=default_id)


def parse_html(text: str, default_id: str) -> Article:
    """Extract the main text, title and date of an HTML page with trafilatura."""
    import trafilatura  # lazy: start-up time (trafilatura, only HTML needs it)

    doc = trafilatura.bare_extraction(
        text, with_metadata=True, include_comments=False, include_tables=False
    )
    if doc is None:
        raise ValueError("no main text found in the HTML page")
    get = doc.get if isinstance(doc, dict) else (lambda k: getattr(doc, k, None))
    body = get("text") or ""
    if not body.strip():
        raise ValueError("no main text found in the HTML page")
    # trafilatura separates paragraphs by single newlines; we use blank lines
    body = re.sub(r"\n+", "\n\n", body.strip())
    data = {
        "id": default_id,
        "title": get("title") or "",
        "text": body,
        "date": get("date"),
        "url": get("url"),
        "source": get("sitename") or get("hostname"),
        "author": get("author"),
    }
    try:
        return article_from_mapping(data, fallback_id=default_id)
    except ValueError:
        data["date"] = None  # an unparseable extracted date is not worth losing the page
        return article_from_mapping(data, fallback_id=default_id)


def read_jsonl(path: Path) -> Iterator[Article | ReadFailure]:
    """Stream a JSON Lines file; each bad line is one failure naming its line number."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        yield ReadFailure(str(path), exc.strerror or str(exc))
        return
    with fh:
        head = fh.read(8192)
        if b"\x00" in head:  # e.g. a compressed feed: one failure, not one per "line"
            gz = " (gzip-compressed: decompress it first)" if head[:2] == b"\x1f\x8b" else ""
            yield ReadFailure(str(path), f"binary file (contains NUL bytes){gz}")
            return
        fh.seek(0)
        any_line = False
        for lineno, raw in enumerate(iter(lambda: fh.readline(MAX_LINE_BYTES + 1), b""), 1):
            if not raw.strip():
                continue
            any_line = True
            where = f"{path}:{lineno}"
            if len(raw) > MAX_LINE_BYTES:
                while raw and not raw.endswith(b"\n"):  # skip the rest, a bounded piece at a time
                    raw = fh.readline(MAX_LINE_BYTES)
                yield ReadFailure(where, f"line longer than {MAX_LINE_BYTES // (1024 * 1024)} MB")
                continue
            try:
                line = raw.decode("utf-8-sig")
            except UnicodeDecodeError:
                yield ReadFailure(where, "invalid UTF-8")
                continue
            try:
                data = json.loads(line)
            except (json.JSONDecodeError, RecursionError) as exc:
                yield ReadFailure(where, f"invalid JSON: {getattr(exc, 'msg', exc)}")
                continue
            try:
                yield article_from_mapping(data)
            except ValueError as exc:
                yield ReadFailure(where, str(exc))
            except RecursionError:
                yield ReadFailure(where, "JSON nested too deeply")
        if not any_line:
            yield ReadFailure(str(path), "empty file")


def read_file(path: Path, root: Path | None = None) -> Iterator[Article | ReadFailure | Skipped]:
    """Read one file into articles; failures are yielded, never raised."""
    ext = path.suffix.lower()
    if ext not in SUPPORTED:
        yield Skipped(str(path), f"unsupported file type {ext or '(none)'!r}")
        return
    if ext in JSONL_EXTS:
        yield from read_jsonl(path)
        return
    rel = path.relative_to(root) if root else Path(path.name)
    default_id = derived_id(str(rel.with_suffix("")).replace(os.sep, "-")) or "article"
    try:
        text = _read_text_file(path, MAX_HTML_BYTES if ext in HTML_EXTS else MAX_FILE_BYTES)
        parse = (
            parse_plain_text
            if ext in TEXT_EXTS
            else parse_markdown
            if ext in MD_EXTS
            else parse_html
        )
        article = parse(text, default_id)
        article.path = str(path)
        yield article
    except ReadError as exc:
        yield ReadFailure(exc.path, exc.reason)
    except OSError as exc:
        yield ReadFailure(str(path), exc.strerror or str(exc))
    except (ValueError, RecursionError) as exc:
        yield ReadFailure(str(path), str(exc) or type(exc).__name__)


def iter_files(path: Path) -> Iterator[Path]:
    """Files under ``path`` (or ``path`` itself), sorted, hidden files and folders skipped."""
    if path.is_file():
        yield path
        return
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if not name.startswith("."):
                yield Path(dirpath) / name


def read_paths(paths: Iterable[str | os.PathLike]) -> Iterator[Article | ReadFailure | Skipped]:
    """Read files and folders (recursively) into a stream of articles and failures."""
    for p in paths:
        path = Path(p)
        if not path.exists():
            yield ReadFailure(str(path), "no such file or folder")
            continue
        root = path if path.is_dir() else None
        for f in iter_files(path):
            yield from read_file(f, root)
