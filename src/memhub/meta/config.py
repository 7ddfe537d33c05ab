"""Configuration parameters: the original's registry, per-user overrides, and instance quotas.

The effective value of a parameter is the user's row (when the parameter allows user scope), else
the instance's global row, else the registry default. Defaults are not seeded into the store: a
missing global row simply means "default", so reads never write. Quota defaults come from the
server's `Quotas`, which global rows (if an operator wrote any) override.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memhub.meta import audit
from memhub.meta.caller import Caller
from memhub.meta.clock import now_iso
from memhub.meta.errors import MetaError, denied, not_found
from memhub.meta.guards import caller_id
from memhub.meta.keys import relation_id
from memhub.meta.quotas import Quotas
from memhub.meta.users import live_user
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader, MetaStore, MetaWriter

GLOBAL = "global"
USER = "user"
GLOBAL_USER_ID = ""  # global rows have no user; the column is part of the unique key, so not null


@dataclass(frozen=True, slots=True)
class Param:
    """One registered parameter: values are strings; booleans are "0"/"1"."""

    module: str
    name: str
    default: str
    scopes: tuple[str, ...]
    description: str
    integer: bool = False
    secret: bool = False

    @property
    def key(self) -> str:
        """`{module}.{param_name}`."""
        return f"{self.module}.{self.name}"

    @property
    def user_writable(self) -> bool:
        """True when a user may override the global value."""
        return USER in self.scopes

    @property
    def boolean(self) -> bool:
        """The original's rule: a parameter whose default is "0" or "1" is a switch."""
        return self.default in ("0", "1")


def _asset_switch(asset_type: str, label: str) -> Param:
    return Param("asset_type", f"{asset_type}.enabled", "1", (GLOBAL, USER), f"是否允许使用 {label} 类资产")


# The original's metadata_config_params.json (version "1"); descriptions kept verbatim.
MODULES: dict[str, tuple[str, tuple[Param, ...]]] = {
    "quota": (
        "实例级配额参数",
        (
            Param("quota", "max_users_per_instance", "500", (GLOBAL,), "实例用户数量上限", integer=True),
            Param("quota", "max_teams_per_instance", "100", (GLOBAL,), "实例团队数量上限", integer=True),
        ),
    ),
    "asset_type": (
        "AssetType 资源使用开关",
        (
            _asset_switch("skill", "Skill"),
            _asset_switch("llm_wiki", "LLM Wiki"),
            _asset_switch("code_graph", "Code Graph"),
            _asset_switch("chat_memory", "Chat Memory"),
        ),
    ),
    "llm": (
        "LLM 上游配置参数（按用户绑定转发到代理上游的 API Key）",
        (
            Param(
                "llm",
                "api_key",
                "",
                (GLOBAL, USER),
                "该用户转发到上游 LLM 时使用的 API Key（必填，未配置则上游鉴权失败；不回落到代理全局/agent Key）",
                secret=True,
            ),
        ),
    ),
}
# Below this length the last four characters are too much of the secret to show.
MASK_MIN_LENGTH = 8


def mask_secret(value: str) -> str:
    """`****<last4>` for a set secret, `""` for none: a stored API key is never returned in clear."""
    if not value:
        return ""
    return "****" + value[-4:] if len(value) >= MASK_MIN_LENGTH else "****"


def _module(module: str) -> tuple[str, tuple[Param, ...]]:
    found = MODULES.get(module)
    if found is None:
        raise MetaError("unknown_module", f"unknown module: {module}")
    return found


def _param(module: str, name: str) -> Param:
    for param in _module(module)[1]:
        if param.name == name:
            return param
    raise MetaError("invalid_param_key", f"unknown param: {module}.{name}")


def _as_int(param: Param, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise MetaError("invalid_param_value", f"param {param.key} value '{value}' is not a valid integer") from None


def _rows(r: MetaReader, module: str, user_id: str | None) -> dict[tuple[str, str], str]:
    """(scope, param_name) → stored value for the module's global rows and the user's rows."""
    owners = [GLOBAL_USER_ID] if user_id is None else [GLOBAL_USER_ID, user_id]
    found = r.find(MetaKind.CONFIG, {"module": module, "user_id": owners})
    out: dict[tuple[str, str], str] = {}
    for row in found:
        if (row["scope"] == GLOBAL and row["user_id"] == GLOBAL_USER_ID) or (
            row["scope"] == USER and row["user_id"] == user_id
        ):
            out[(row["scope"], row["param_name"])] = row["param_value"]
    return out


def quota_limits(r: MetaReader, quotas: Quotas) -> dict[str, int]:
    """`{max_users_per_instance, max_teams_per_instance}`: global rows over the server's quotas.

    Takes the reader of the caller's transaction, so a quota check and the insert it guards agree.
    """
    stored = _rows(r, "quota", None)
    defaults = {"max_users_per_instance": quotas.max_users, "max_teams_per_instance": quotas.max_teams}
    out: dict[str, int] = {}
    for name, default in defaults.items():
        value = stored.get((GLOBAL, name))
        out[name] = default if value is None else _as_int(_param("quota", name), value)
    return out


@dataclass
class ConfigParams:
    """Registry lookups, per-user overrides and quotas of every tenant."""

    store: MetaStore
    quotas: Quotas = field(default_factory=Quotas)

    def _default(self, param: Param) -> str:
        if param.key == "quota.max_users_per_instance":
            return str(self.quotas.max_users)
        if param.key == "quota.max_teams_per_instance":
            return str(self.quotas.max_teams)
        return param.default

    def _effective(self, param: Param, stored: Mapping[tuple[str, str], str], user_id: str | None) -> str:
        if user_id is not None and param.user_writable and (USER, param.name) in stored:
            return stored[(USER, param.name)]
        return stored.get((GLOBAL, param.name), self._default(param))

    def instance_quota(self, service_id: str) -> dict[str, int]:
        """instance-quota/get."""
        with self.store.reading(service_id) as r:
            return quota_limits(r, self.quotas)

    def effective_value(self, service_id: str, user_id: str | None, module: str, param_name: str) -> str:
        """The effective value in clear, for server-side use only (e.g. forwarding the user's API key)."""
        param = _param(module, param_name)
        with self.store.reading(service_id) as r:
            stored = _rows(r, module, user_id)
        return self._effective(param, stored, user_id)

    def asset_type_enabled(self, service_id: str, user_id: str | None, asset_type: str) -> bool:
        """True when `asset_type.{type}.enabled` is "1" for this user (default on)."""
        return self.effective_value(service_id, user_id, "asset_type", f"{asset_type}.enabled") == "1"

    @staticmethod
    def _own(caller: Caller, user_id: str) -> None:
        # Checked before the user lookup (the original's router did the reverse), so that other
        # users' ids cannot be probed; system admins get no bypass, as in the original.
        if user_id != caller_id(caller):
            raise denied("user_id does not match caller")

    def get_user_config(self, caller: Caller, user_id: str, module: str, param_name: str | None = None) -> Row:
        """config/user/get: the module's effective values for the caller (secrets masked)."""
        self._own(caller, user_id)
        description, params = _module(module)
        if param_name is not None:
            params = (_param(module, param_name),)
        with self.store.reading(caller.service_id) as r:
            if live_user(r, user_id) is None:
                raise not_found("user", user_id)
            stored = _rows(r, module, user_id)
        items = []
        for param in params:
            value = self._effective(param, stored, user_id)
            items.append(
                {
                    "module": module,
                    "param_name": param.name,
                    "param_key": param.key,
                    "description": param.description,
                    # An API key is a credential for the upstream LLM: the server uses it, no client reads it back.
                    "effective_value": mask_secret(value) if param.secret else value,
                }
            )
        return {"user_id": user_id, "module": module, "module_description": description, "items": items}

    @staticmethod
    def _validate(module: str, params: Mapping[str, Any]) -> list[tuple[Param, str]]:
        params_of_module = _module(module)[1]
        if not any(p.user_writable for p in params_of_module):
            raise MetaError("invalid_param_scope", f"module '{module}' is global-only, cannot set for user scope")
        checked = []
        for name, value in params.items():
            param = _param(module, name)
            if not param.user_writable:
                raise MetaError(
                    "invalid_param_scope", f"module '{module}' param '{name}' is global-only, cannot set for user scope"
                )
            if not isinstance(value, str):
                raise MetaError("invalid_param_value", f"param '{name}' value must be a string")
            if param.boolean and value not in ("0", "1"):
                raise MetaError("invalid_param_value", f"param '{name}' only accepts '0' or '1', got '{value}'")
            if param.integer:
                _as_int(param, value)
            checked.append((param, value))
        return checked

    def set_user_config(self, caller: Caller, user_id: str, module: str, params: Mapping[str, Any]) -> Row:
        """config/user/set: the caller's overrides, all validated first and written in one transaction."""
        self._own(caller, user_id)
        checked = self._validate(module, params)
        with self.store.writing(caller.service_id) as w:
            if live_user(w, user_id) is None:
                raise not_found("user", user_id)
            for param, value in checked:
                _upsert(w, USER, user_id, param, value)
            if checked:
                # Names only: a value may be a secret, and the audit log is readable by admins.
                audit.record(w, caller, "config/user/set", [user_id], {"module": module, "params": sorted(params)})
        return {"ok": True}


def _upsert(w: MetaWriter, scope: str, user_id: str, param: Param, value: str) -> None:
    now = now_iso()
    key = {"scope": scope, "user_id": user_id, "module": param.module, "param_name": param.name}
    found = w.find(MetaKind.CONFIG, key, limit=1)
    if found:
        w.update(MetaKind.CONFIG, found[0]["id"], {"param_value": value, "updated_at": now})
        return
    row = {"id": relation_id(), **key, "param_value": value, "description": param.description}
    w.insert(MetaKind.CONFIG, {**row, "created_at": now, "updated_at": now})
