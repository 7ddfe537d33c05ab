"""The registry of knowledge kinds: every registered kind is wired everywhere the shared code looks (service,
tools/list, asset types; routes and the registry's `type` for the kinds the /v3/knowledge registry holds), an id
of no registered kind is refused as before, and the skill kind (outside the registry) is never offered in
`<knowledge_tools>` nor accepted by `knowledge/create`."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memhub.api.meta_schemas import KnowledgeType
from memhub.api.routes.knowledge_kinds import ROUTES_BY_KIND
from memhub.context.model import CAPABILITIES
from memhub.errors import BadRequest
from memhub.knowledge.kind import ResourceKind
from memhub.knowledge.kinds import KIND_NAMES, KINDS, REGISTRY_KINDS, REGISTRY_TYPES, kind_named, kind_of, tools_for
from memhub.knowledge.services import KIND_SERVICES
from memhub.knowledge.skill.kind import SKILL
from memhub.meta.permissions import ASSET_TYPES
from tests.conftest import build_gateway
from tests.knowledge.knowledge_http import KnowledgeHttp

TEAM = "team-kinds"
BAD_FORMAT = (
    "knowledge_id: invalid knowledge_id format (expected wiki-… or cg-… and 8 of [0-9a-z], "
    "or skl-… and 12 of [0-9A-Za-z])"
)


def _an_id(kind: ResourceKind) -> str:
    return f"{kind.id_prefix}-abcd1234" if kind.in_registry else f"{kind.id_prefix}-AbCd1234eFgH"


def test_every_kind_has_one_service_routes_an_asset_type_and_a_registry_type() -> None:
    assert [service.KIND for service in KIND_SERVICES] == list(KINDS)
    assert list(ROUTES_BY_KIND) == [k.name for k in REGISTRY_KINDS]
    assert typing.get_args(KnowledgeType) == REGISTRY_TYPES
    assert len({k.id_prefix for k in KINDS}) == len(KINDS)
    assert len({k.asset_type for k in KINDS}) == len(KINDS)
    for kind in KINDS:
        assert kind.asset_type in ASSET_TYPES and kind.asset_type in CAPABILITIES, kind.name
        names = [t.name for t in kind.tools]
        assert len(set(names)) == len(names), kind.name
        if kind.in_registry:
            assert names[0] == "get_info" and kind.meta_kind is not None, kind.name
        assert kind_of(_an_id(kind)) is kind
    assert [k.context for k in KINDS].count("documents") == 1  # the composer's knowledge blocks read one kind


def test_the_skill_kind_has_its_own_id_format_and_stays_out_of_the_registry() -> None:
    assert KIND_NAMES == ("wiki", "code-graph", "skill") and REGISTRY_TYPES == ("wiki", "code-graph")
    assert [t.name for t in tools_for("skill")] == ["skill_view", "skill_read_file"]
    assert kind_of("skl-0aZ9bY8cX7dW") is SKILL
    for wrong in ("skl-abcd1234", "skl-0aZ9bY8cX7d", "skl-0aZ9bY8cX7dW1", "skl-0aZ9bY8cX7d_", "SKL-0aZ9bY8cX7dW"):
        with pytest.raises(BadRequest) as refused:
            kind_of(wrong)
        assert refused.value.message == BAD_FORMAT
    # Upper case is a skill id's, never a wiki's or a code graph's.
    for wrong in ("wiki-ABCD1234", "cg-abcd1234eFgH"):
        with pytest.raises(BadRequest):
            kind_of(wrong)
    with pytest.raises(BadRequest) as refused:
        SKILL.check_id("skl-short")
    assert refused.value.message == "skill_id: invalid skill_id format (expected skl- and 12 characters of [0-9A-Za-z])"


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(BadRequest) as refused:
        kind_of("sk-abcd1234")
    assert refused.value.message == BAD_FORMAT
    with pytest.raises(ValueError, match="unknown knowledge type: 'skills'"):
        tools_for("skills")
    with pytest.raises(ValueError, match="unknown knowledge type"):
        kind_named("codegraph")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[KnowledgeHttp]:
    sources = tmp_path / "sources"
    (sources / "pkg").mkdir(parents=True)
    (sources / "pkg" / "app.py").write_text("def main() -> None:\n    pass\n")
    gw = build_gateway(tmp_path / "data", code_source_roots=[sources])
    yield KnowledgeHttp(gw, team=TEAM)
    knowledge = gw.client.app.state.knowledge  # type: ignore[attr-defined]
    for service in knowledge.kinds.values():
        service.wait_idle(120)
    knowledge.close()
    gw.close()


def _create_bodies(api: KnowledgeHttp) -> dict[str, dict[str, Any]]:
    """A `<kind>/create` body per kind (a new kind adds one here)."""
    sources = api.gw.data_dir.parent / "sources"
    return {
        "wiki": {"team_id": TEAM, "name": "handbook"},
        "code-graph": {"team_id": TEAM, "source_path": str(sources), "wait": True},
    }


def test_every_kind_serves_its_routes_and_lists_its_tools_in_order(api: KnowledgeHttp) -> None:
    bodies = _create_bodies(api)
    assert set(bodies) == set(REGISTRY_TYPES)
    for kind in REGISTRY_KINDS:
        detail = api.ok(f"{kind.name}/create", bodies[kind.name], status=201)
        resource_id = detail[kind.id_field]
        assert kind.id_re.match(resource_id)
        listed = api.ok("tools/list", {"knowledge_id": resource_id})
        assert listed["type"] == kind.name
        assert [t["name"] for t in listed["tools"]] == [t.name for t in kind.tools]
        refused = api.fails("tools/call", {"knowledge_id": resource_id, "tool_name": "nope", "params": {}}, 403)
        assert f"for {kind.name} resource '{resource_id}'" in refused["message"]
        assert api.ok(f"{kind.name}/get", {kind.id_field: resource_id})[kind.id_field] == resource_id
        api.fails(f"{kind.name}/get", {kind.id_field: f"{kind.id_prefix}-zzzzzzzz"}, 404, f"{kind.noun} not found: …")
    api.fails("tools/list", {"knowledge_id": "sk-abcd1234"}, 400, BAD_FORMAT)
