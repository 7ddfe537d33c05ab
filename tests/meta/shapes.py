"""The management plane's response shapes, id formats and shared refusal messages, for every tests/meta module.

Field sets are written from the original's `/v3/meta/*` response shapes and not imported from src. Test
modules compare them exactly (`set(data) == X`) or as the fields a caller reads (test_sdk_shapes).
"""

from __future__ import annotations

import re


def _fields(names: str) -> set[str]:
    return set(names.split())


# -- ids and instants (use `fullmatch`) ----------------------------------------------------------
USER_ID = re.compile(r"usr-[0-9a-z]{10}")
TEAM_ID = re.compile(r"team-[0-9a-z]{10}")
AGENT_ID = re.compile(r"agt-[0-9a-z]{10}")
TASK_ID = re.compile(r"task-[0-9a-z]{10}")
KEY_ID = re.compile(r"uky-[0-9a-z]{10}")
USER_KEY = re.compile(r"sk-mem-[A-Za-z0-9_-]{32}")
REQ_ID = re.compile(r"req-[0-9a-f]{16}")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
ISO_MS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")

# -- team-scoped refusals (team-member, agent, task routes) --------------------------------------
NOT_MEMBER = "permission_denied: not a team member"
NOT_TEAM_ADMIN = "permission_denied: caller is not team admin"
NOT_OWNER = "permission_denied: caller is not resource owner"

# -- entities --------------------------------------------------------------------------------------
USER_FIELDS = _fields("user_id user_type username created_at")
KEY_FIELDS = _fields("key_id user_id key_prefix name status is_default last_used_at expires_at created_at revoked_at")
TEAM_FIELDS = _fields("team_id name description owner_user_id status created_at updated_at metadata_json")
MEMBER_FIELDS = _fields("id team_id user_id role joined_at status")
AGENT_FIELDS = _fields(
    "agent_id team_id owner_user_id name description prompt visibility status created_at updated_at metadata_json"
)
TASK_FIELDS = _fields(
    "task_id team_id creator_user_id title description source_type source_url status"
    " auto_assign_floating_assets risk_level created_at updated_at metadata_json"
)
TASK_AGENT_FIELDS = _fields("id task_id agent_id role_in_task status created_at")
LOG_FIELDS = _fields("id team_id task_id agent_id user_id source metadata_json created_at updated_at")
ASSET_FIELDS = _fields(
    "asset_id team_id asset_type name description owner_user_id source_type source_ref version visibility status"
    " confidence expires_at last_used_at usage_count content_ref created_at updated_at metadata_json"
)
DETAIL_ITEM_FIELDS = _fields(
    "asset_id asset_type name description status visibility injection_mode priority created_at"
)  # agent-fixed-asset/list-with-detail items
BINDING_FIELDS = _fields("id agent_id asset_id asset_type injection_mode priority created_by created_at")
ACL_FIELDS = _fields("id asset_id subject_type subject_id permission effect granted_by created_at updated_at")
KNOWLEDGE_FIELDS = _fields(
    "knowledge_id type service_url name summary team_id agent_id user_id repo_url branch created_at updated_at"
)
AUDIT_FIELDS = _fields("id seq action actor_user_id actor_kind target_ids detail request_id created_at")
