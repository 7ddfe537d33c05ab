"""Rows of the skill tables as records, and the SQL of a `SkillFilter` (shared by the skill store's modules)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from memhub.index.tokenize import index_text
from memhub.model.skills import SkillFile, SkillFilter, SkillVersion
from memhub.store.sqlite.fts import FtsIndex, owner_prefix, qualify

SKILL_FTS = FtsIndex(fts="skill_fts", vocab="skill_vocab", content="skill_versions")
# A head is found by its name, its description and the start of its body; the rest of a long body adds
# postings without adding much to what the skill is about.
FTS_CONTENT_CHARS = 4_000


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def vector_scope(service_id: str, team_id: str) -> str:
    """The key a head's vector is indexed under: its tenant and team."""
    return "s" + hashlib.blake2b(f"skill\x1f{service_id}\x1f{team_id}".encode(), digest_size=10).hexdigest()


def fts_owner(service_id: str) -> str:
    """Full-text terms are qualified per tenant: a search without a team still reads one owner's postings."""
    return f"skill\x1f{service_id}"


def fts_columns(service_id: str, name: str, description: str, content: str) -> tuple[str, str]:
    """The (words, grams) a head is indexed with; computed outside the write lock (segmenting is slow)."""
    text = index_text(f"{name}\n{description}\n{content[:FTS_CONTENT_CHARS]}")
    return qualify(owner_prefix(fts_owner(service_id)), text)


def heads_where(service_id: str, flt: SkillFilter, alias: str = "c") -> tuple[str, list[Any]]:
    """The SQL condition (on `skill_versions` as `alias`) for the tenant's heads the filter keeps.

    Lists of ids go in as one JSON parameter: a caller may read thousands of skills, and SQLite caps the
    number of parameters of a statement.
    """
    p = f"{alias}."
    clauses = [f"{p}service_id = ?", f"{p}is_head = 1"]
    params: list[Any] = [service_id]
    if flt.team_id is not None:
        clauses.append(f"{p}team_id = ?")
        params.append(flt.team_id)
    if flt.owner_agent_ids is not None:
        owners = f"{p}owner_agent_id IN (SELECT value FROM json_each(?))"
        params.append(dumps(list(flt.owner_agent_ids)))
        if flt.also_skill_ids:
            owners = f"({owners} OR {p}skill_id IN (SELECT value FROM json_each(?)))"
            params.append(dumps(list(flt.also_skill_ids)))
        clauses.append(owners)
    if flt.user_id is not None:
        clauses.append(f"{p}user_id = ?")
        params.append(flt.user_id)
    if flt.name_prefix is not None:
        # A literal prefix: LIKE would read `%` and `_` in a name as wildcards.
        clauses.append(f"substr({p}name, 1, ?) = ?")
        params += [len(flt.name_prefix), flt.name_prefix]
    statuses = f"{p}status IN (SELECT value FROM json_each(?))"
    params.append(dumps(list(flt.statuses)))
    if flt.drafts_of is not None:
        statuses = f"({statuses} OR ({p}status = 'candidate' AND {p}user_id = ?))"
        params.append(flt.drafts_of)
    clauses.append(statuses)
    if flt.skill_ids is not None:
        clauses.append(f"{p}skill_id IN (SELECT value FROM json_each(?))")
        params.append(dumps(list(flt.skill_ids)))
    if flt.reader is not None:
        reader = flt.reader
        reviewed = "1" if reader.reviews_team else f"{p}owner_agent_id IN (SELECT value FROM json_each(?))"
        clauses.append(
            f"({p}user_id = ? OR ({p}status != 'candidate' AND {p}skill_id IN (SELECT value FROM json_each(?))) "
            f"OR ({p}status = 'candidate' AND {reviewed}))"
        )
        params += [reader.user_id, dumps(list(reader.readable_ids))]
        if not reader.reviews_team:
            params.append(dumps(list(reader.reviewed_agent_ids)))
    return " AND ".join(clauses), params


def _file(row: sqlite3.Row) -> SkillFile:
    return SkillFile(
        path=row["path"],
        sha256=row["sha256"],
        size_bytes=row["size_bytes"],
        mime_type=row["mime_type"],
        is_executable=bool(row["is_executable"]),
    )


def versions_of(con: sqlite3.Connection, rows: Sequence[sqlite3.Row]) -> list[SkillVersion]:
    """Records of `skill_versions` rows (read with their `rowid`), with their manifests, in the rows' order."""
    if not rows:
        return []
    files: dict[int, list[SkillFile]] = {}
    for f in con.execute(
        "SELECT v.rowid AS version_rowid, f.* FROM skill_versions v JOIN skill_files f "
        "ON f.service_id = v.service_id AND f.skill_id = v.skill_id AND f.version = v.version "
        "WHERE v.rowid IN (SELECT value FROM json_each(?)) ORDER BY f.path",
        (dumps([r["rowid"] for r in rows]),),
    ):
        files.setdefault(f["version_rowid"], []).append(_file(f))
    return [
        SkillVersion(
            service_id=r["service_id"],
            skill_id=r["skill_id"],
            version=r["version"],
            is_head=bool(r["is_head"]),
            status=r["status"],
            team_id=r["team_id"],
            owner_agent_id=r["owner_agent_id"],
            user_id=r["user_id"],
            task_id=r["task_id"],
            name=r["name"],
            description=r["description"],
            content=r["content"],
            content_hash=r["content_hash"],
            files=tuple(files.get(r["rowid"], ())),
            metadata=json.loads(r["metadata_json"]),
            created_ms=r["created_ms"],
            updated_ms=r["updated_ms"],
        )
        for r in rows
    ]


def rows_by_rowid(con: sqlite3.Connection, rowids: Sequence[int], where: str, params: Sequence[Any]) -> dict[int, Any]:
    """The rows among `rowids` that still pass `where` (alias `c`), by rowid."""
    rows = con.execute(
        f"SELECT c.* FROM skill_versions c WHERE c.rowid IN (SELECT value FROM json_each(?)) AND {where}",
        [dumps(list(rowids)), *params],
    )
    return {r["rowid"]: r for r in rows}
