"""A skill as a meta asset: registered private and bound to its owner agent at create, removed at delete.

As the original's ensureSkillAsset: asset_id = skill_id, type `skill`, owned by the agent's owner, visibility
`private`, bound to the agent with injection mode `reference` and priority 50. Sharing it further is the
management plane's (asset/update visibility, ACL grants, fixed-asset bindings).
"""

from __future__ import annotations

from memhub.meta.clock import now_iso
from memhub.meta.keys import relation_id
from memhub.meta.permissions import AUTO_ASSET_STATUS
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader, MetaWriter

SKILL_ASSET = "skill"
SKILL_INJECTION_MODE = "reference"
SKILL_PRIORITY = 50


def asset_id_taken(r: MetaReader, skill_id: str) -> bool:
    """Whether an asset already has this id (a new skill's id must be free as an asset id too)."""
    return r.get(MetaKind.ASSET, skill_id) is not None


def register_skill_asset(w: MetaWriter, agent: Row, skill_id: str, name: str) -> Row:
    """The skill's asset and its binding to the owner agent (inside the caller's transaction)."""
    now = now_iso()
    asset = {
        "asset_id": skill_id,
        "team_id": agent["team_id"],
        "asset_type": SKILL_ASSET,
        "name": name,
        "description": None,
        "owner_user_id": agent["owner_user_id"],
        "source_type": "extracted",
        "source_ref": None,
        "version": 1,
        "visibility": "private",
        "status": AUTO_ASSET_STATUS,
        "confidence": None,
        "expires_at": None,
        "last_used_at": None,
        "usage_count": 0,
        "content_ref": None,
        "created_at": now,
        "updated_at": now,
        "metadata_json": "{}",
    }
    w.insert(MetaKind.ASSET, asset)
    w.insert(
        MetaKind.FIXED_ASSET,
        {
            "id": relation_id(),
            "agent_id": agent["agent_id"],
            "asset_id": skill_id,
            "asset_type": SKILL_ASSET,
            "injection_mode": SKILL_INJECTION_MODE,
            "priority": SKILL_PRIORITY,
            "created_by": agent["owner_user_id"],
            "created_at": now,
        },
    )
    return asset


def remove_skill_asset(w: MetaWriter, skill_id: str) -> None:
    """The skill's asset with every binding to it and its ACL entries."""
    w.delete(MetaKind.FIXED_ASSET, {"asset_id": skill_id})
    w.delete(MetaKind.ACL, {"asset_id": skill_id})
    w.delete(MetaKind.ASSET, {"asset_id": skill_id, "asset_type": SKILL_ASSET})
