"""SQLite implementation of memhub.store.prompts on the memory store's connections (migration 4 tables).

An instance-wide setting is stored with empty team and agent ids, a team setting with an empty agent id;
an instance-level prompt with an empty owner team (migration 8).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence, Set
from typing import TYPE_CHECKING, Any

from memhub.model.prompts import (
    GenerationFilter,
    GenerationLog,
    GenerationRef,
    GenerationScope,
    MemoryPrompt,
    Page,
    Position,
    PromptLayer,
    PromptRef,
    PromptSetting,
    PromptTarget,
    ResolvedPrompt,
    SettingAction,
    SettingFilter,
    SettingLog,
    SettingLogFilter,
    TokenUsage,
)
from memhub.store.prompts import PromptStore

if TYPE_CHECKING:
    from memhub.store.sqlite.store import SQLiteStore

PRUNE_BATCH = 500  # old generation logs deleted per write: bounded work on the worker's path


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _prompt(row: sqlite3.Row) -> MemoryPrompt:
    return MemoryPrompt(
        memory_prompt_id=row["memory_prompt_id"],
        name=row["name"],
        layer=row["layer"],
        prompt=row["prompt"],
        version=row["version"],
        created_ms=row["created_ms"],
        updated_ms=row["updated_ms"],
        owner_team_id=row["owner_team_id"],
    )


def _within(column: str, values: Set[str] | None) -> tuple[str, list[Any]]:
    """` AND column IN (…)` for a restriction (nothing for None; an empty set matches no row)."""
    if values is None:
        return "", []
    ordered = sorted(values)
    return f" AND {column} IN ({', '.join('?' * len(ordered))})", list(ordered)


def _readable(scope: GenerationScope | None, alias: str = "") -> tuple[str, list[Any]]:
    """` AND (…)` keeping the generation-log rows (of table alias `alias`) a caller may read; nothing for None.

    The rows are matched on the ids they keep: an L1 row on its (team, user, agent, task) scope, an
    L2/L3 row on its (team, agent, user) profile, where the profile's team is already resolved.
    """
    if scope is None:
        return "", []
    a = f"{alias}." if alias else ""
    parts: list[str] = []
    params: list[Any] = []
    for m in scope.memory:
        parts.append(f"({a}layer = 'l1' AND {a}team_id = ? AND {a}user_id = ? AND {a}agent_id = ? AND {a}task_id = ?)")
        params += [m.team_id, m.user_id, m.agent_id, m.task_id]
    for p in scope.profiles:
        parts.append(f"({a}layer IN ('l2', 'l3') AND {a}team_id = ? AND {a}agent_id = ? AND {a}user_id = ?)")
        params += [p.team_id, p.agent_id, p.user_id]
    for team_id, agent_ids in scope.team_agents:
        # One parameter however many agents a team has (SQLite caps the number of parameters).
        parts.append(f"({a}team_id = ? AND {a}agent_id IN (SELECT value FROM json_each(?)))")
        params += [team_id, _dumps(list(agent_ids))]
    return f" AND ({' OR '.join(parts) or '0'})", params


def _setting(row: sqlite3.Row) -> PromptSetting:
    return PromptSetting(
        PromptTarget(row["team_id"], row["agent_id"]), row["layer"], row["memory_prompt_id"], row["updated_ms"]
    )


def _setting_log(row: sqlite3.Row) -> SettingLog:
    agents = json.loads(row["agent_ids_json"])
    return SettingLog(
        seq=row["seq"],
        action=row["action"],
        memory_prompt_id=row["memory_prompt_id"],
        target=PromptTarget(row["team_id"], agents[0] if agents else ""),
        layer=row["layer"],
        request_id=row["request_id"],
        created_ms=row["created_ms"],
    )


def _refs(text: str) -> tuple[GenerationRef, ...]:
    return tuple(GenerationRef(r["layer"], r["record_id"]) for r in json.loads(text))


def _generation(row: sqlite3.Row) -> GenerationLog:
    prompt = json.loads(row["prompt_json"]) if row["prompt_json"] else None
    tokens = json.loads(row["tokens_json"]) if row["tokens_json"] else None
    return GenerationLog(
        log_id=row["log_id"],
        service_id=row["service_id"],
        layer=row["layer"],
        status=row["status"],
        team_id=row["team_id"],
        agent_id=row["agent_id"],
        user_id=row["user_id"],
        task_id=row["task_id"],
        session_id=row["session_id"],
        prompt=PromptRef(prompt["memory_prompt_id"], prompt["version"], prompt["source"], prompt["sha256"])
        if prompt
        else None,
        input_refs=_refs(row["input_refs_json"]),
        output_refs=_refs(row["output_refs_json"]),
        model=row["model"],
        latency_ms=row["latency_ms"],
        tokens=TokenUsage(tokens["prompt"], tokens["completion"]) if tokens else None,
        error=row["error"],
        created_ms=row["created_ms"],
    )


def _order(page: Page, column: str) -> str:
    # rowid breaks ties between rows written in the same millisecond.
    direction = "DESC" if page.newest_first else "ASC"
    return f"ORDER BY {column} {direction}, rowid {direction} LIMIT ? OFFSET ?"


class SQLitePromptStore(PromptStore):
    """Prompts, settings, setting logs and generation logs in the memory store's database file."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store

    # -- prompts ---------------------------------------------------------------------------
    def create_prompt(self, service_id: str, prompt: MemoryPrompt, max_prompts: int) -> bool:
        with self.store._write() as con:
            # Counted inside the write transaction, so concurrent creates cannot overshoot the limit.
            (count,) = con.execute("SELECT COUNT(*) FROM memory_prompts WHERE service_id = ?", (service_id,)).fetchone()
            if count >= max_prompts:
                return False
            con.execute(
                "INSERT INTO memory_prompts (service_id, memory_prompt_id, name, layer, prompt, version, "
                "created_ms, updated_ms, owner_team_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    service_id,
                    prompt.memory_prompt_id,
                    prompt.name,
                    prompt.layer,
                    prompt.prompt,
                    prompt.version,
                    prompt.created_ms,
                    prompt.updated_ms,
                    prompt.owner_team_id,
                ),
            )
            return True

    def get_prompts(self, service_id: str, ids: Sequence[str]) -> list[MemoryPrompt]:
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        sql = f"SELECT * FROM memory_prompts WHERE service_id = ? AND memory_prompt_id IN ({marks})"
        rows = self.store._reader().execute(sql, (service_id, *ids)).fetchall()
        return [_prompt(r) for r in rows]

    def list_prompts(
        self, service_id: str, layer: PromptLayer | None, page: Page, owners: Set[str] | None = None
    ) -> tuple[list[MemoryPrompt], int]:
        where, params = "service_id = ?", [service_id]
        if layer is not None:
            where += " AND layer = ?"
            params.append(layer)
        owned, owner_params = _within("owner_team_id", owners)
        where += owned
        params += owner_params
        con = self.store._reader()
        (total,) = con.execute(f"SELECT COUNT(*) FROM memory_prompts WHERE {where}", params).fetchone()
        rows = con.execute(
            f"SELECT * FROM memory_prompts WHERE {where} {_order(page, 'created_ms')}",
            (*params, page.limit, page.offset),
        ).fetchall()
        return [_prompt(r) for r in rows], total

    def update_prompt(
        self,
        service_id: str,
        memory_prompt_id: str,
        name: str | None,
        prompt: str | None,
        now_ms: int,
        owners: Set[str] | None = None,
    ) -> MemoryPrompt | None:
        owned, owner_params = _within("owner_team_id", owners)
        with self.store._write() as con:
            row = con.execute(
                "UPDATE memory_prompts SET name = COALESCE(?, name), prompt = COALESCE(?, prompt), "
                f"version = version + 1, updated_ms = ? WHERE service_id = ? AND memory_prompt_id = ?{owned} "
                "RETURNING *",
                (name, prompt, now_ms, service_id, memory_prompt_id, *owner_params),
            ).fetchone()
            return _prompt(row) if row is not None else None

    def delete_prompts(
        self, service_id: str, ids: Sequence[str], request_id: str, now_ms: int, owners: Set[str] | None = None
    ) -> list[PromptSetting] | None:
        marks = ", ".join("?" * len(ids))
        owned, owner_params = _within("owner_team_id", owners)
        with self.store._write() as con:
            (found,) = con.execute(
                f"SELECT COUNT(*) FROM memory_prompts WHERE service_id = ? AND memory_prompt_id IN ({marks}){owned}",
                (service_id, *ids, *owner_params),
            ).fetchone()
            if found != len(ids):
                return None
            cleared = [
                _setting(r)
                for r in con.execute(
                    f"DELETE FROM memory_prompt_settings WHERE service_id = ? AND memory_prompt_id IN ({marks}) "
                    "RETURNING *",
                    (service_id, *ids),
                ).fetchall()
            ]
            for setting in cleared:
                self._log(
                    con,
                    service_id,
                    "clear",
                    setting.memory_prompt_id,
                    setting.target,
                    setting.layer,
                    request_id,
                    now_ms,
                )
            con.execute(
                f"DELETE FROM memory_prompts WHERE service_id = ? AND memory_prompt_id IN ({marks})", (service_id, *ids)
            )
            return cleared

    # -- settings --------------------------------------------------------------------------
    @staticmethod
    def _log(
        con: sqlite3.Connection,
        service_id: str,
        action: SettingAction,
        memory_prompt_id: str | None,
        target: PromptTarget,
        layer: PromptLayer,
        request_id: str,
        now_ms: int,
    ) -> None:
        # One row per target: an agent target's id is the single element of agent_ids_json.
        con.execute(
            "INSERT INTO memory_prompt_setting_logs (service_id, action, memory_prompt_id, team_id, agent_ids_json, "
            "layer, request_id, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                service_id,
                action,
                memory_prompt_id,
                target.team_id,
                _dumps([target.agent_id] if target.agent_id else []),
                layer,
                request_id,
                now_ms,
            ),
        )

    @staticmethod
    def _current(con: sqlite3.Connection, service_id: str, target: PromptTarget, layer: PromptLayer) -> str | None:
        row = con.execute(
            "SELECT memory_prompt_id FROM memory_prompt_settings WHERE service_id = ? AND team_id = ? "
            "AND agent_id = ? AND layer = ?",
            (service_id, target.team_id, target.agent_id, layer),
        ).fetchone()
        return row[0] if row is not None else None

    def apply_prompt(
        self,
        service_id: str,
        memory_prompt_id: str,
        targets: Sequence[PromptTarget],
        layer: PromptLayer,
        request_id: str,
        now_ms: int,
    ) -> int | None:
        changed = 0
        with self.store._write() as con:
            exists = con.execute(
                "SELECT 1 FROM memory_prompts WHERE service_id = ? AND memory_prompt_id = ? AND layer = ?",
                (service_id, memory_prompt_id, layer),
            ).fetchone()
            if exists is None:
                return None
            for target in targets:
                current = self._current(con, service_id, target, layer)
                if current == memory_prompt_id:
                    continue
                con.execute(
                    "INSERT INTO memory_prompt_settings (service_id, team_id, agent_id, layer, memory_prompt_id, "
                    "updated_ms) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (service_id, team_id, agent_id, layer) "
                    "DO UPDATE SET memory_prompt_id = excluded.memory_prompt_id, updated_ms = excluded.updated_ms",
                    (service_id, target.team_id, target.agent_id, layer, memory_prompt_id, now_ms),
                )
                action: SettingAction = "apply" if current is None else "replace"
                self._log(con, service_id, action, memory_prompt_id, target, layer, request_id, now_ms)
                changed += 1
        return changed

    def clear_settings(
        self, service_id: str, targets: Sequence[PromptTarget], layer: PromptLayer, request_id: str, now_ms: int
    ) -> int:
        cleared = 0
        with self.store._write() as con:
            for target in targets:
                row = con.execute(
                    "DELETE FROM memory_prompt_settings WHERE service_id = ? AND team_id = ? AND agent_id = ? "
                    "AND layer = ? RETURNING memory_prompt_id",
                    (service_id, target.team_id, target.agent_id, layer),
                ).fetchone()
                if row is not None:
                    self._log(con, service_id, "clear", row[0], target, layer, request_id, now_ms)
                    cleared += 1
        return cleared

    def list_settings(self, service_id: str, flt: SettingFilter, page: Page) -> tuple[list[PromptSetting], int]:
        clauses, params = ["service_id = ?"], [service_id]
        for column, value in (
            ("memory_prompt_id", flt.memory_prompt_id),
            ("team_id", flt.team_id),
            ("agent_id", flt.agent_id),
            ("layer", flt.layer),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        kinds = {"instance": "team_id = '' AND agent_id = ''", "team": "team_id != '' AND agent_id = ''"}
        if flt.target_type is not None:
            clauses.append(kinds.get(flt.target_type, "agent_id != ''"))
        where, team_params = _within("team_id", flt.teams)
        where = " AND ".join(clauses) + where
        params += team_params
        con = self.store._reader()
        (total,) = con.execute(f"SELECT COUNT(*) FROM memory_prompt_settings WHERE {where}", params).fetchone()
        rows = con.execute(
            f"SELECT * FROM memory_prompt_settings WHERE {where} {_order(page, 'updated_ms')}",
            (*params, page.limit, page.offset),
        ).fetchall()
        return [_setting(r) for r in rows], total

    def list_setting_logs(self, service_id: str, flt: SettingLogFilter, page: Page) -> tuple[list[SettingLog], int]:
        clauses = ["service_id = ?", "created_ms >= ?", "created_ms <= ?"]
        params: list[Any] = [service_id, flt.start_ms, flt.end_ms]
        for column, value in (
            ("memory_prompt_id", flt.memory_prompt_id),
            ("team_id", flt.team_id),
            ("action", flt.action),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if flt.agent_id is not None:
            clauses.append("EXISTS (SELECT 1 FROM json_each(agent_ids_json) WHERE value = ?)")
            params.append(flt.agent_id)
        where, team_params = _within("team_id", flt.teams)
        where = " AND ".join(clauses) + where
        params += team_params
        con = self.store._reader()
        (total,) = con.execute(f"SELECT COUNT(*) FROM memory_prompt_setting_logs WHERE {where}", params).fetchone()
        rows = con.execute(
            f"SELECT * FROM memory_prompt_setting_logs WHERE {where} {_order(page, 'created_ms')}",
            (*params, page.limit, page.offset),
        ).fetchall()
        return [_setting_log(r) for r in rows], total

    def resolve(self, service_id: str, team_id: str, agent_id: str, layer: PromptLayer) -> ResolvedPrompt | None:
        # Most specific first: agent → team → instance. A team-less caller has no agent or team level.
        levels: list[tuple[str, str, str]] = []
        if team_id and agent_id:
            levels.append(("agent", team_id, agent_id))
        if team_id:
            levels.append(("team", team_id, ""))
        levels.append(("instance", "", ""))
        con = self.store._reader()
        for source, team, agent in levels:
            row = con.execute(
                "SELECT p.memory_prompt_id, p.prompt, p.version FROM memory_prompt_settings s "
                "JOIN memory_prompts p ON p.service_id = s.service_id AND p.memory_prompt_id = s.memory_prompt_id "
                "WHERE s.service_id = ? AND s.team_id = ? AND s.agent_id = ? AND s.layer = ? "
                # Another team's prompt never reaches this team's model, whatever a setting says.
                "AND p.owner_team_id IN ('', s.team_id)",
                (service_id, team, agent, layer),
            ).fetchone()
            if row is not None:
                return ResolvedPrompt(row["memory_prompt_id"], row["prompt"], layer, source, row["version"])  # type: ignore[arg-type]
        return None

    # -- generation log --------------------------------------------------------------------
    def record_generation(self, log: GenerationLog, prune_before_ms: int) -> None:
        prompt = log.prompt
        with self.store._write() as con:
            self._prune(con, prune_before_ms)
            con.execute(
                "INSERT INTO generation_log (log_id, service_id, layer, status, team_id, agent_id, user_id, task_id, "
                "session_id, prompt_json, input_refs_json, output_refs_json, model, latency_ms, tokens_json, error, "
                "created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    log.log_id,
                    log.service_id,
                    log.layer,
                    log.status,
                    log.team_id,
                    log.agent_id,
                    log.user_id,
                    log.task_id,
                    log.session_id,
                    _dumps(
                        {
                            "memory_prompt_id": prompt.memory_prompt_id,
                            "version": prompt.version,
                            "source": prompt.source,
                            "sha256": prompt.sha256,
                        }
                    )
                    if prompt
                    else None,
                    _dumps([{"layer": r.layer, "record_id": r.record_id} for r in log.input_refs]),
                    _dumps([{"layer": r.layer, "record_id": r.record_id} for r in log.output_refs]),
                    log.model,
                    log.latency_ms,
                    _dumps({"prompt": log.tokens.prompt, "completion": log.tokens.completion}) if log.tokens else None,
                    log.error,
                    log.created_ms,
                ),
            )
            con.executemany(
                "INSERT INTO generation_log_outputs (log_id, service_id, layer, record_id) VALUES (?, ?, ?, ?)",
                [(log.log_id, log.service_id, r.layer, r.record_id) for r in dict.fromkeys(log.output_refs)],
            )

    @staticmethod
    def _prune(con: sqlite3.Connection, before_ms: int) -> None:
        # Logs are appended in time order, so the expired ones are the lowest seqs: walking from the
        # start stops at the first live row instead of scanning the table on every write.
        rows = con.execute(
            "SELECT seq, log_id, service_id, output_refs_json, created_ms FROM generation_log ORDER BY seq LIMIT ?",
            (PRUNE_BATCH,),
        ).fetchall()
        expired = []
        for row in rows:
            if row["created_ms"] >= before_ms:
                break
            expired.append(row)
        for row in expired:
            # Deleted through the (service, layer, record) index: the outputs table has no log_id index.
            con.executemany(
                "DELETE FROM generation_log_outputs WHERE service_id = ? AND layer = ? AND record_id = ? "
                "AND log_id = ?",
                [(row["service_id"], r.layer, r.record_id, row["log_id"]) for r in _refs(row["output_refs_json"])],
            )
            con.execute("DELETE FROM generation_log WHERE seq = ?", (row["seq"],))

    def list_generations(
        self, service_id: str, flt: GenerationFilter, after: Position | None, limit: int
    ) -> tuple[list[GenerationLog], Position | None]:
        clauses = ["service_id = ?", "created_ms >= ?", "created_ms <= ?"]
        params: list[Any] = [service_id, flt.start_ms, flt.end_ms]
        for column, value in (
            ("layer", flt.layer),
            ("status", flt.status),
            ("team_id", flt.team_id),
            ("agent_id", flt.agent_id),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if after is not None:
            clauses.append("(created_ms < ? OR (created_ms = ? AND seq < ?))")
            params.extend([after[0], after[0], after[1]])
        readable, readable_params = _readable(flt.visible)
        where = " AND ".join(clauses) + readable
        params += readable_params
        sql = f"SELECT * FROM generation_log WHERE {where} ORDER BY created_ms DESC, seq DESC LIMIT ?"
        rows = self.store._reader().execute(sql, (*params, limit + 1)).fetchall()
        page = rows[:limit]
        more = len(rows) > limit
        return [_generation(r) for r in page], (page[-1]["created_ms"], page[-1]["seq"]) if more else None

    def get_generation(
        self,
        service_id: str,
        log_id: str | None = None,
        output: GenerationRef | None = None,
        visible: GenerationScope | None = None,
    ) -> GenerationLog | None:
        con = self.store._reader()
        if log_id is not None:
            readable, params = _readable(visible)
            row = con.execute(
                f"SELECT * FROM generation_log WHERE service_id = ? AND log_id = ?{readable}",
                (service_id, log_id, *params),
            ).fetchone()
        elif output is not None:
            readable, params = _readable(visible, "g")
            row = con.execute(
                "SELECT g.* FROM generation_log_outputs o JOIN generation_log g ON g.log_id = o.log_id "
                f"WHERE o.service_id = ? AND o.layer = ? AND o.record_id = ?{readable} "
                "ORDER BY g.created_ms DESC, g.seq DESC LIMIT 1",
                (service_id, output.layer, output.record_id, *params),
            ).fetchone()
        else:
            raise ValueError("get_generation needs a log_id or an output ref")
        return _generation(row) if row is not None else None
