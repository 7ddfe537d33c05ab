"""The two-layer wiki index, with optional `paths` globs per entry: root `index.json` with themes and root documents,
one `index.json` per theme folder with that theme's documents.

Layout::

    knowledge-root/
      index.json          ← {schema_version, themes[], documents[]}
      a-theme/
        README.md         ← optional: the theme's own title / summary / tags / paths / status
        index.json        ← {schema_version, theme, documents[]}
        a-how-to.md

Entries carry `id, title, summary, tags`, optional `paths` globs (conditional load), `status`
(`current` / `archived`) and, for standards (`kind: standard`), a `lifecycle` (`published` /
`in-force` / `draft`). Validation reports every problem as an `IndexIssue(path, field, rule)`;
nothing is silently ignored, because silent non-matching is the failure mode other tools suffer from.

Glob semantics (the one documented choice): gitignore-style, relative to the repository root, `/` as
separator, `**` as a whole segment means any number of directories, `*` and `?` stay within one
segment, `[...]` is a character class; a pattern without `/` matches the file name at any depth.
Brace expansion `{a,b}` is not supported and is rejected rather than matched literally.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from memhub.knowledge.wiki.globs import glob_problem
from memhub.knowledge.wiki.sources import split_front_matter as source_front_matter
from memhub.knowledge.wiki.sourcetypes import INDEX_FILE

SCHEMA_VERSION = 1
THEME_README = "README.md"
STATUSES = ("current", "archived")
KINDS = ("guide", "standard")
LIFECYCLES = ("published", "in-force", "draft")

_ROOT_KEYS = {"schema_version", "generated_at", "themes", "documents"}
_THEME_INDEX_KEYS = {"schema_version", "generated_at", "theme", "documents"}
_THEME_KEYS = {"id", "title", "summary", "tags", "index", "paths", "status"}
_THEME_REQUIRED = ("id", "title", "index")
_DOC_KEYS = {"id", "title", "summary", "tags", "file", "theme", "paths", "status", "kind", "lifecycle"}
_DOC_KEYS |= {"always", "updated", "sources"}
_DOC_REQUIRED = ("id", "title", "file")
_SUMMARY_MAX = 200


@dataclass(frozen=True, slots=True)
class IndexIssue:
    """One precise validation problem: which file, which field (JSON path), which rule failed."""

    path: str
    field: str
    rule: str

    def __str__(self) -> str:
        return f"{self.path}: {self.field or '<file>'}: {self.rule}"


# The brief names the record `IndexError`; the alias keeps that name importable without this module
# ever needing the builtin of the same name.


class IndexInvalid(ValueError):
    """Raised by `load_index` / `generate_index` with every problem found, not just the first."""

    def __init__(self, issues: list[IndexIssue]) -> None:
        self.issues = issues
        super().__init__("; ".join(str(i) for i in issues))


@dataclass(frozen=True, slots=True)
class WikiDocument:
    """One document entry; `file` is relative to the knowledge root, POSIX separators."""

    id: str
    title: str
    file: str
    summary: str = ""
    tags: tuple[str, ...] = ()
    theme: str | None = None
    paths: tuple[str, ...] = ()
    status: str = "current"
    kind: str = "guide"
    lifecycle: str | None = None
    always: bool = False
    updated: str | None = None
    sources: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WikiTheme:
    """One theme (a top-level folder) and the documents of its own `index.json`."""

    id: str
    title: str
    index: str
    summary: str = ""
    tags: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    status: str = "current"
    documents: tuple[WikiDocument, ...] = ()


@dataclass(frozen=True, slots=True)
class WikiIndex:
    """The parsed, validated two-layer index of one knowledge root."""

    root: Path
    themes: tuple[WikiTheme, ...] = ()
    documents: tuple[WikiDocument, ...] = ()
    _by_id: dict[str, WikiDocument] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for doc in self.all_documents():
            self._by_id.setdefault(doc.id, doc)

    def all_documents(self) -> list[WikiDocument]:
        """Root documents first, then each theme's documents in index order."""
        return [*self.documents, *(d for t in self.themes for d in t.documents)]

    def document(self, doc_id: str) -> WikiDocument | None:
        """The document with this id, or None."""
        return self._by_id.get(doc_id)

    def theme(self, theme_id: str) -> WikiTheme | None:
        """The theme with this id, or None."""
        return next((t for t in self.themes if t.id == theme_id), None)


# ---------------------------------------------------------------------------------------------
# Globs


def _read_json(root: Path, rel: str, issues: list[IndexIssue]) -> Any:
    path = root / rel
    if not path.is_file():
        issues.append(IndexIssue(rel, "", "missing file"))
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        issues.append(IndexIssue(rel, "", "not UTF-8"))
    except json.JSONDecodeError as exc:
        issues.append(IndexIssue(rel, "", f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"))
    return None


class _Checker:
    """Collects issues for one index file while reading typed fields out of it."""

    def __init__(self, root: Path, rel: str, issues: list[IndexIssue]) -> None:
        self.root, self.rel, self.issues = root, rel, issues

    def fail(self, where: str, rule: str) -> None:
        self.issues.append(IndexIssue(self.rel, where, rule))

    def keys(self, obj: dict[str, Any], allowed: set[str], required: tuple[str, ...], where: str) -> None:
        for key in sorted(set(obj) - allowed):
            self.fail(_join(where, key), "unknown key")
        for key in required:
            if key not in obj:
                self.fail(_join(where, key), "required key missing")

    def string(self, obj: dict[str, Any], key: str, where: str, *, default: str = "", nonempty: bool = False) -> str:
        value = obj.get(key, default)
        if not isinstance(value, str):
            self.fail(_join(where, key), f"must be a string, got {_type(value)}")
            return default
        if nonempty and key in obj and not value.strip():
            self.fail(_join(where, key), "must not be empty")
        return value

    def strings(self, obj: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        value = obj.get(key, [])
        if not isinstance(value, list):
            self.fail(_join(where, key), f"must be a list of strings, got {_type(value)}")
            return ()
        out: list[str] = []
        for i, item in enumerate(value):
            if isinstance(item, str) and item.strip():
                out.append(item)
            else:
                self.fail(f"{_join(where, key)}[{i}]", "must be a non-empty string")
        return tuple(out)

    def globs(self, obj: dict[str, Any], where: str) -> tuple[str, ...]:
        value = obj.get("paths", [])
        if not isinstance(value, list):
            self.fail(_join(where, "paths"), f"must be a list of globs, got {_type(value)}")
            return ()
        out: list[str] = []
        for i, item in enumerate(value):
            problem = glob_problem(item)
            if problem:
                self.fail(f"{_join(where, 'paths')}[{i}]", problem)
            else:
                out.append(item)
        return tuple(out)

    def choice(self, obj: dict[str, Any], key: str, allowed: tuple[str, ...], where: str, default: str) -> str:
        value = obj.get(key, default)
        if value not in allowed:
            self.fail(_join(where, key), f"must be one of {', '.join(allowed)}, got {value!r}")
            return default
        return value

    def file(self, obj: dict[str, Any], base: str, where: str, suffix: str) -> str | None:
        """A relative file under `base` (POSIX, inside the root) that exists; returns the root-relative path."""
        value = obj.get("file" if suffix == ".md" else "index")
        key = "file" if suffix == ".md" else "index"
        if not isinstance(value, str) or not value.strip():
            if key in obj:
                self.fail(_join(where, key), "must be a non-empty string")
            return None
        pure = PurePosixPath(value)
        if "\\" in value or pure.is_absolute() or ".." in pure.parts:
            self.fail(_join(where, key), "must be a relative path inside the knowledge root")
            return None
        if pure.suffix.lower() != suffix:
            self.fail(_join(where, key), f"must name a {suffix} file")
            return None
        rel = str(PurePosixPath(base, value)) if base else str(pure)
        if not (self.root / rel).is_file():
            self.fail(_join(where, key), f"file not found: {rel}")
            return None
        return rel


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _type(value: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def _schema_version(check: _Checker, data: dict[str, Any]) -> None:
    version = data.get("schema_version")
    if isinstance(version, bool) or version != SCHEMA_VERSION:
        check.fail("schema_version", f"must be {SCHEMA_VERSION}, got {version!r}")
    if "generated_at" in data and not isinstance(data["generated_at"], str):
        check.fail("generated_at", "must be a string")


def _document(check: _Checker, obj: object, where: str, base: str, theme: str | None) -> WikiDocument | None:
    if not isinstance(obj, dict):
        check.fail(where, f"must be an object, got {_type(obj)}")
        return None
    before = len(check.issues)
    check.keys(obj, _DOC_KEYS, _DOC_REQUIRED, where)
    doc_id = check.string(obj, "id", where, nonempty=True)
    title = check.string(obj, "title", where, nonempty=True)
    summary = check.string(obj, "summary", where)
    tags = check.strings(obj, "tags", where)
    paths = check.globs(obj, where)
    status = check.choice(obj, "status", STATUSES, where, "current")
    kind = check.choice(obj, "kind", KINDS, where, "guide")
    lifecycle: str | None = None
    if kind == "standard":
        if "lifecycle" not in obj:
            check.fail(_join(where, "lifecycle"), "required for kind 'standard'")
        else:
            lifecycle = check.choice(obj, "lifecycle", LIFECYCLES, where, "draft")
    elif "lifecycle" in obj:
        check.fail(_join(where, "lifecycle"), "only allowed when kind is 'standard'")
    always = obj.get("always", False)
    if not isinstance(always, bool):
        check.fail(_join(where, "always"), f"must be a boolean, got {_type(always)}")
    updated = obj.get("updated")
    if updated is not None and not isinstance(updated, str):
        check.fail(_join(where, "updated"), f"must be a string, got {_type(updated)}")
    sources = check.strings(obj, "sources", where)
    if "theme" in obj and obj["theme"] != theme:
        check.fail(_join(where, "theme"), f"must be {theme!r} (the index it is listed in), got {obj['theme']!r}")
    rel = check.file(obj, base, where, ".md")
    if len(check.issues) > before or rel is None:
        return None
    return WikiDocument(
        id=doc_id,
        title=title,
        file=rel,
        summary=summary,
        tags=tags,
        theme=theme,
        paths=paths,
        status=status,
        kind=kind,
        lifecycle=lifecycle,
        always=bool(always),
        updated=updated if isinstance(updated, str) else None,
        sources=sources,
    )


def _documents(check: _Checker, data: dict[str, Any], base: str, theme: str | None) -> list[WikiDocument]:
    raw = data.get("documents", [])
    if not isinstance(raw, list):
        check.fail("documents", f"must be an array, got {_type(raw)}")
        return []
    docs = [_document(check, item, f"documents[{i}]", base, theme) for i, item in enumerate(raw)]
    return [d for d in docs if d is not None]


def _theme(check: _Checker, obj: object, where: str, issues: list[IndexIssue]) -> WikiTheme | None:
    if not isinstance(obj, dict):
        check.fail(where, f"must be an object, got {_type(obj)}")
        return None
    before = len(check.issues)
    check.keys(obj, _THEME_KEYS, _THEME_REQUIRED, where)
    theme_id = check.string(obj, "id", where, nonempty=True)
    title = check.string(obj, "title", where, nonempty=True)
    summary = check.string(obj, "summary", where)
    tags = check.strings(obj, "tags", where)
    paths = check.globs(obj, where)
    status = check.choice(obj, "status", STATUSES, where, "current")
    index_rel = check.file(obj, "", where, ".json")
    if index_rel is not None and PurePosixPath(index_rel).name != INDEX_FILE:
        check.fail(_join(where, "index"), f"must name a theme folder's {INDEX_FILE}")
        index_rel = None
    if len(check.issues) > before or index_rel is None:
        return None
    base = str(PurePosixPath(index_rel).parent)
    sub = _Checker(check.root, index_rel, issues)
    data = _read_json(check.root, index_rel, issues)
    docs: list[WikiDocument] = []
    if data is not None and not isinstance(data, dict):
        sub.fail("", f"must be a JSON object, got {_type(data)}")
    elif isinstance(data, dict):
        sub.keys(data, _THEME_INDEX_KEYS, ("schema_version", "documents"), "")
        _schema_version(sub, data)
        if "theme" in data and data["theme"] != theme_id:
            sub.fail("theme", f"must be {theme_id!r} (the root index's theme id), got {data['theme']!r}")
        docs = _documents(sub, data, base, theme_id)
    return WikiTheme(theme_id, title, index_rel, summary, tags, paths, status, tuple(docs))


def validate_index(root: Path) -> tuple[WikiIndex | None, list[IndexIssue]]:
    """Parse and validate the whole two-layer index; returns what parsed and every problem found."""
    issues: list[IndexIssue] = []
    data = _read_json(root, INDEX_FILE, issues)
    if data is None:
        return None, issues
    check = _Checker(root, INDEX_FILE, issues)
    if not isinstance(data, dict):
        check.fail("", f"must be a JSON object, got {_type(data)}")
        return None, issues
    check.keys(data, _ROOT_KEYS, ("schema_version", "themes"), "")
    _schema_version(check, data)
    themes: list[WikiTheme] = []
    raw_themes = data.get("themes", [])
    if not isinstance(raw_themes, list):
        check.fail("themes", f"must be an array, got {_type(raw_themes)}")
        raw_themes = []
    for i, item in enumerate(raw_themes):
        theme = _theme(check, item, f"themes[{i}]", issues)
        if theme is not None:
            themes.append(theme)
    docs = _documents(check, data, "", None)
    _duplicates(themes, docs, issues)
    return WikiIndex(root, tuple(themes), tuple(docs)), issues


def _duplicates(themes: list[WikiTheme], docs: list[WikiDocument], issues: list[IndexIssue]) -> None:
    seen: set[str] = set()
    for i, theme in enumerate(themes):
        if theme.id in seen:
            issues.append(IndexIssue(INDEX_FILE, f"themes[{i}].id", f"duplicate theme id {theme.id!r}"))
        seen.add(theme.id)
    seen_docs: dict[str, str] = {}
    where = [(INDEX_FILE, i, d) for i, d in enumerate(docs)]
    where += [(t.index, i, d) for t in themes for i, d in enumerate(t.documents)]
    for rel, i, doc in where:
        if doc.id in seen_docs:
            rule = f"duplicate document id {doc.id!r} (first in {seen_docs[doc.id]})"
            issues.append(IndexIssue(rel, f"documents[{i}].id", rule))
        else:
            seen_docs[doc.id] = rel


def load_index(root: Path) -> WikiIndex:
    """The validated index of a knowledge root; raises `IndexInvalid` listing every problem."""
    index, issues = validate_index(root)
    if issues or index is None:
        raise IndexInvalid(issues)
    return index


# ---------------------------------------------------------------------------------------------
# Generation from Markdown front matter and headings

_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """YAML front matter (or {}) and the body after it; invalid front matter raises ValueError."""
    meta, body, _, problem = source_front_matter(text.lstrip("\ufeff").replace("\r\n", "\n"))
    if problem:
        raise ValueError(problem)
    return meta, body


def _first_h1(body: str) -> str | None:
    fenced = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (m := _H1.match(line)):
            return m.group(1).strip()
    return None


def first_paragraph(body: str) -> str:
    """The first prose paragraph (no headings, tables, code, lists), whitespace collapsed."""
    lines: list[str] = []
    fenced = False
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fenced = not fenced
            if lines:
                break
            continue
        if fenced:
            continue
        if not stripped:
            if lines:
                break
            continue
        if stripped.startswith(("#", "|", ">", "- ", "* ", "<!--")) or re.match(r"\d+\.\s", stripped):
            if lines:
                break
            continue
        lines.append(stripped)
    text = " ".join(lines)
    return text if len(text) <= _SUMMARY_MAX else text[: _SUMMARY_MAX - 1].rstrip() + "…"


def _meta_str(meta: dict[str, Any], key: str, rel: str, issues: list[IndexIssue]) -> str | None:
    value = meta.get(key)
    if value is None:
        return None
    if (isinstance(value, (int, float)) and not isinstance(value, bool)) or hasattr(value, "isoformat"):
        return str(value)  # YAML turns `updated: 2024-05-01` into a date; keep its ISO text
    if not isinstance(value, str):
        issues.append(IndexIssue(rel, f"front matter.{key}", f"must be a string, got {_type(value)}"))
        return None
    return " ".join(value.split())


def _meta_list(meta: dict[str, Any], key: str, rel: str, issues: list[IndexIssue]) -> list[str]:
    value = meta.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]  # `tags: refunds` is common; a single string is one item, never split silently
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        issues.append(IndexIssue(rel, f"front matter.{key}", "must be a string or a list of non-empty strings"))
        return []
    return list(dict.fromkeys(v.strip() for v in value))


def _entry_from_markdown(path: Path, rel: str, issues: list[IndexIssue]) -> dict[str, Any] | None:
    try:
        meta, body = split_front_matter(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        issues.append(IndexIssue(rel, "front matter", str(exc).splitlines()[0]))
        return None
    title = _meta_str(meta, "title", rel, issues) or _first_h1(body) or path.stem.replace("-", " ").replace("_", " ")
    summary = _meta_str(meta, "summary", rel, issues) or _meta_str(meta, "description", rel, issues)
    entry: dict[str, Any] = {
        "title": title,
        "summary": summary if summary is not None else first_paragraph(body),
        "tags": _meta_list(meta, "tags", rel, issues),
    }
    globs = _meta_list(meta, "paths", rel, issues)
    if globs:
        entry["paths"] = globs
    status = meta.get("status", "current")
    entry["status"] = status
    for key in ("id", "kind", "lifecycle", "always", "updated"):
        if key in meta:
            entry[key] = _meta_str(meta, key, rel, issues) if key in ("id", "updated") else meta[key]
    sources = _meta_list(meta, "sources", rel, issues)
    if sources:
        entry["sources"] = sources
    _check_meta(entry, rel, issues)
    return entry


def _check_meta(entry: dict[str, Any], rel: str, issues: list[IndexIssue]) -> None:
    """Reject front matter that would write an invalid index, naming the Markdown file, not the index."""
    for i, glob in enumerate(entry.get("paths", [])):
        if problem := glob_problem(glob):
            issues.append(IndexIssue(rel, f"front matter.paths[{i}]", problem))
    for key, allowed in (("status", STATUSES), ("kind", KINDS), ("lifecycle", LIFECYCLES)):
        if key in entry and entry[key] not in allowed:
            issues.append(IndexIssue(rel, f"front matter.{key}", f"must be one of {', '.join(allowed)}"))
    if entry.get("kind") == "standard" and "lifecycle" not in entry:
        issues.append(IndexIssue(rel, "front matter.lifecycle", "required for kind 'standard'"))
    if "lifecycle" in entry and entry.get("kind") != "standard":
        issues.append(IndexIssue(rel, "front matter.lifecycle", "only allowed when kind is 'standard'"))
    if "always" in entry and not isinstance(entry["always"], bool):
        issues.append(IndexIssue(rel, "front matter.always", "must be a boolean"))


_DOC_ORDER = ("id", "title", "summary", "tags", "file", "paths", "status", "kind", "lifecycle", "always")
_DOC_ORDER += ("updated", "sources")


def _ordered(entry: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    return {k: entry[k] for k in order if k in entry}


def _markdown_files(folder: Path) -> list[Path]:
    # Only the parts below the folder count: the data dir itself may well be hidden (`~/.memhub`).
    files = [
        p for p in folder.rglob("*.md") if not any(part.startswith((".", "_")) for part in p.relative_to(folder).parts)
    ]
    return sorted(files, key=lambda p: p.as_posix())


def _doc_entry(path: Path, root: Path, base: Path, issues: list[IndexIssue]) -> dict[str, Any] | None:
    rel_root = path.relative_to(root).as_posix()
    entry = _entry_from_markdown(path, rel_root, issues)
    if entry is None:
        return None
    entry.setdefault("id", PurePosixPath(rel_root).with_suffix("").as_posix())
    entry["file"] = path.relative_to(base).as_posix()
    return _ordered(entry, _DOC_ORDER)


def generate_index(root: Path) -> dict[str, dict[str, Any]]:
    """Every index file as {relative path: JSON object}, deterministically, from front matter and headings."""
    issues: list[IndexIssue] = []
    out: dict[str, dict[str, Any]] = {}
    themes: list[dict[str, Any]] = []
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    for folder in folders:
        files = _markdown_files(folder)
        readme = folder / THEME_README
        docs = [e for p in files if p != readme and (e := _doc_entry(p, root, folder, issues))]
        if not docs:
            continue  # a folder without documents is not a theme (assets, images)
        meta = _entry_from_markdown(readme, readme.relative_to(root).as_posix(), issues) if readme.is_file() else {}
        meta = meta or {}
        # Theme tags gain the documents' tags: the first layer scores themes by title / summary / tags only.
        tags = list(dict.fromkeys([*meta.get("tags", []), *(t for d in docs for t in d["tags"])]))
        theme: dict[str, Any] = {
            "id": folder.name,
            "title": meta.get("title") or folder.name.replace("-", " ").replace("_", " "),
            "summary": meta.get("summary", ""),
            "tags": tags,
            "index": f"{folder.name}/{INDEX_FILE}",
        }
        if meta.get("paths"):
            theme["paths"] = meta["paths"]
        theme["status"] = meta.get("status", "current")
        themes.append(theme)
        out[f"{folder.name}/{INDEX_FILE}"] = {"schema_version": SCHEMA_VERSION, "theme": folder.name, "documents": docs}
    root_docs = [e for p in sorted(root.glob("*.md"), key=lambda p: p.name) if (e := _doc_entry(p, root, root, issues))]
    out = {INDEX_FILE: {"schema_version": SCHEMA_VERSION, "themes": themes, "documents": root_docs}, **out}
    if issues:
        raise IndexInvalid(issues)
    return out


def dump_index_json(data: dict[str, Any]) -> str:
    """Byte-stable JSON text: insertion-ordered keys, two-space indent, UTF-8 text kept, final newline."""
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def write_index(root: Path) -> list[Path]:
    """Generate, validate and write every `index.json`; nothing is written if any problem is found."""
    return write_index_files(root, generate_index(root))


def write_index_files(root: Path, generated: dict[str, dict[str, Any]]) -> list[Path]:
    """Write index files ({relative path: JSON object}) and validate them; on any problem, restore what was there."""
    staging = {rel: dump_index_json(data) for rel, data in generated.items()}
    previous = {rel: (root / rel).read_bytes() if (root / rel).is_file() else None for rel in staging}
    for rel, text in staging.items():
        (root / rel).write_text(text, encoding="utf-8", newline="\n")
    _, issues = validate_index(root)
    if issues:
        # Front matter produced an invalid index (a bad glob, a bad status): restore what was there.
        for rel, old in previous.items():
            if old is None:
                (root / rel).unlink(missing_ok=True)
            else:
                (root / rel).write_bytes(old)
        raise IndexInvalid(issues)
    return [root / rel for rel in staging]
