"""The OpenAPI document states the limits the server enforces: for each rule, the document and the server
agree on the bodies that keep it and the ones that break it. tests/e2e/test_fuzz_openapi.py fuzzes every
operation; these are the rules written by hand (between fields, or checked in code), one edge case each."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import jsonschema_rs
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, Field

from memhub.api import openapi
from tests.conftest import Gateway, build_gateway
from tests.meta.org import Org

WIKI = "wiki-abcdefgh"
ENVELOPE = "#/components/schemas/Envelope"
# (path, body, valid): `valid` is what both the document and the server say.
CASES: list[tuple[str, dict[str, Any], bool]] = [
    # L0/L1 deletes name something to delete; blank ids do not count.
    ("/v3/conversation/delete", {}, False),
    ("/v3/conversation/delete", {"message_ids": [" ", ""]}, False),
    ("/v3/conversation/delete", {"message_ids": None, "session_ids": None}, False),
    ("/v3/conversation/delete", {"message_ids": ["msg-000000000000"]}, True),
    ("/v3/conversation/delete", {"session_id": "s1"}, True),
    ("/v3/atomic/delete", {"ids": ["  "]}, False),
    ("/v3/atomic/delete", {"ids": [" ", "m_1_00000000"]}, True),
    # Whole numbers are integers, whatever the encoder wrote.
    ("/v3/conversation/query", {"limit": 5.0}, True),
    ("/v3/conversation/query", {"limit": 5.5}, False),
    # Ids and names hold no control characters.
    ("/v3/conversation/count", {"team_id": "t\n1"}, False),
    ("/v3/conversation/count", {"team_id": "t 1"}, True),
    # Scene paths: relative, no traversal, files are not directories.
    ("/v3/scenario/read", {"path": "notes/a.md"}, True),
    ("/v3/scenario/read", {"path": "../a.md"}, False),
    ("/v3/scenario/read", {"path": "notes/"}, False),
    ("/v3/scenario/read", {"path": "a//b.md"}, False),
    ("/v3/scenario/rm", {}, False),
    ("/v3/scenario/rm", {"path": "notes/"}, True),
    ("/v3/scenario/ls", {"path_prefix": "notes/20"}, True),
    ("/v3/scenario/ls", {"path_prefix": "./"}, True),
    ("/v3/scenario/ls", {"path_prefix": "notes/../x"}, False),
    ("/v3/scenario/ls", {"path_prefix": "/etc"}, False),
    # Memory prompts: trimmed texts, and the combinations each route takes.
    ("/v3/memory-prompt/create", {"name": " \u0085 ", "layer": "l1", "prompt": "p"}, False),
    ("/v3/memory-prompt/create", {"name": "n", "layer": "l1", "prompt": "\t"}, False),
    ("/v3/memory-prompt/create", {"name": "tone", "layer": "l1", "prompt": "Be brief."}, True),
    ("/v3/memory-prompt/update", {"memory_prompt_id": "mp-1"}, False),
    ("/v3/memory-prompt/get", {"agent_id": "a1"}, False),
    ("/v3/memory-prompt/get", {"team_id": "t1"}, False),
    ("/v3/memory-prompt/get", {"team_id": "t1", "layer": "l1"}, True),
    ("/v3/memory-prompt/get", {"team_id": " ", "agent_id": " "}, True),
    ("/v3/memory-prompt/get", {"team_id": "t1", "layer": "l1", "memory_prompt_id": "mp-1"}, False),
    ("/v3/memory-prompt/set", {"action": "apply", "layer": "l1"}, False),
    ("/v3/memory-prompt/set", {"action": "clear", "layer": "l1"}, True),
    ("/v3/memory-prompt/set", {"action": "clear", "layer": "l1", "agent_ids": ["a1"]}, False),
    ("/v3/memory-prompt/setting/list", {"target_type": "instance", "team_id": "t1"}, False),
    ("/v3/memory-prompt/setting/list", {"target_type": "team", "team_id": "t1", "agent_id": "a1"}, False),
    ("/v3/memory-prompt/setting/list", {"target_type": "team", "team_id": "t1"}, True),
    ("/v3/memory-prompt/log", {}, False),
    ("/v3/memory-prompt/log", {"team_id": "t1", "start_time": "2026-01-01T00:00:00Z"}, False),
    ("/v3/memory-generation-log/get", {}, False),
    ("/v3/memory-generation-log/get", {"log_id": "g1", "memory_id": "m1", "layer": "l1"}, False),
    ("/v3/memory-generation-log/get", {"memory_id": "m1"}, False),
    ("/v3/memory-generation-log/get", {"memory_id": "m1", "layer": "l1"}, True),
    # Knowledge ids, source files, sources of a code graph.
    ("/v3/wiki/get", {"wiki_id": "wiki-ABC"}, False),
    ("/v3/wiki/get", {"wiki_id": WIKI}, True),
    ("/v3/tools/list", {"knowledge_id": "kb-1"}, False),
    ("/v3/wiki/raw/write", {"wiki_id": WIKI, "team_id": "t1", "files": [{"filename": "a.pdf", "content": "x"}]}, False),
    (
        "/v3/wiki/raw/write",
        {"wiki_id": WIKI, "team_id": "t1", "files": [{"filename": "a.pdf", "content": "YWJj", "encoding": "base64"}]},
        True,
    ),
    (
        "/v3/wiki/raw/write",
        {"wiki_id": WIKI, "team_id": "t1", "files": [{"filename": "a.md", "content": "YWJ", "encoding": "base64"}]},
        False,
    ),
    ("/v3/wiki/raw/write", {"wiki_id": WIKI, "team_id": "t1", "files": [{"filename": ".a.md", "content": "x"}]}, False),
    ("/v3/wiki/raw/write", {"wiki_id": WIKI, "team_id": "t1", "files": [{"filename": "a.exe", "content": "x"}]}, False),
    (
        "/v3/wiki/raw/write",
        {"wiki_id": WIKI, "team_id": "t1", "files": [{"filename": "d/index.json", "content": ""}]},
        True,
    ),
    ("/v3/code-graph/create", {"team_id": "t1"}, False),
    ("/v3/code-graph/create", {"team_id": "t1", "repo_url": "https://example.com/r.git", "source_path": "/src"}, False),
    ("/v3/code-graph/create", {"team_id": "t1", "source_path": "/src", "branch": "main"}, False),
    ("/v3/code-graph/create", {"team_id": "t1", "source_path": "src"}, False),
    ("/v3/code-graph/create", {"team_id": "t1", "repo_url": "git@example.com:r.git", "branch": "a..b"}, False),
    ("/v3/code-graph/create", {"team_id": "t1", "source_path": "/src"}, True),
]
# The management plane, as the instance's system admin.
META_CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("/v3/meta/agent/list", {}, False),
    ("/v3/meta/agent/list", {"owner_user_key": "sk-mem-x"}, True),
    ("/v3/meta/user/get", {}, False),
    ("/v3/meta/team/list", {"user_key": "sk-mem-x"}, True),
    ("/v3/meta/user/create", {"username": "bob\u2028"}, False),
    ("/v3/meta/acl/grant", {"asset_id": "a", "subject_type": "user", "subject_id": "u", "permission": "read"}, False),
    (
        "/v3/knowledge/create",
        {"knowledge_id": "k", "type": "wiki", "service_url": "ftp://x", "name": "n", "team_id": "t"},
        False,
    ),
]


def _validator(doc: dict[str, Any], method: str, path: str) -> Any:
    operation = doc["paths"][path][method]
    if method == "post":
        schema = operation["requestBody"]["content"]["application/json"]["schema"]
    else:
        (schema,) = [p["schema"] for p in operation["parameters"] if p["in"] == "query"]
    return jsonschema_rs.Draft202012Validator({**schema, "components": doc["components"]})


def _agree(gw: Gateway, doc: dict[str, Any], path: str, body: dict[str, Any], valid: bool, headers: Any) -> None:
    assert _validator(doc, "post", path).is_valid(body) is valid, ("document", path, body)
    response = gw.client.post(path, json=body, headers=headers)
    assert (response.status_code != 400) is valid, ("server", path, body, response.json())


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """One gateway for the module: each case is judged by whether the server answers 400, which no other case's
    writes change, and building the document once (not per case) is most of what these tests cost."""
    with pytest.MonkeyPatch.context() as mp:  # module scope: clear MEMHUB_* like tests/conftest._clean_env
        for name in [n for n in os.environ if n.startswith(("MEMHUB_", "TDAI_"))]:
            mp.delenv(name)
        gw = build_gateway(tmp_path_factory.mktemp("contract") / "data")
    yield gw
    gw.close()


@pytest.fixture(scope="module")
def doc(gateway: Gateway) -> dict[str, Any]:
    return gateway.client.get("/openapi.json").json()


@pytest.mark.parametrize(("path", "body", "valid"), CASES)
def test_the_document_and_the_server_agree_on_the_data_plane(
    gateway: Gateway, doc: dict[str, Any], path: str, body: dict[str, Any], valid: bool
) -> None:
    _agree(gateway, doc, path, body, valid, gateway.headers())


def test_the_document_and_the_server_agree_on_the_management_plane(gateway: Gateway, doc: dict[str, Any]) -> None:
    org = Org(gateway)
    for path, body, valid in META_CASES:
        _agree(gateway, doc, path, body, valid, org.headers(org.admin))


@pytest.mark.parametrize(
    ("query", "valid"),
    [({"agent_id": "a1"}, False), ({"team_id": "t1"}, False), ({"team_id": "t1", "layer": "l1"}, True), ({}, True)],
)
def test_a_get_twin_states_the_rules_of_its_post(
    gateway: Gateway, doc: dict[str, Any], query: dict[str, str], valid: bool
) -> None:
    assert _validator(doc, "get", "/v3/memory-prompt/get").is_valid(query) is valid
    response = gateway.client.get("/v3/memory-prompt/get", params=query, headers=gateway.headers())
    assert (response.status_code != 400) is valid, response.json()


def test_every_operation_declares_its_credentials_errors_and_envelopes(doc: dict[str, Any]) -> None:
    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    operations = [(p, m, op) for p, item in doc["paths"].items() for m, op in item.items() if p != "/health"]
    assert len(operations) > 150
    for path, method, op in operations:
        assert op["security"], (method, path)
        assert any(p["name"] == "x-tdai-service-id" for p in op["parameters"]), (method, path)
        responses = op["responses"]
        assert {"400", "401", "404", "500"} <= set(responses), (method, path)
        success = [s for s in responses if s.startswith("2")]
        assert success, (method, path)
        envelope = {"$ref": "#/components/schemas/Envelope"}
        for status in success:
            schema = responses[status]["content"]["application/json"]["schema"]
            if path.startswith("/v3/skill/"):
                # Business errors (five-digit codes) answer HTTP 200, as the original's skill routes do.
                assert schema == {"anyOf": [envelope, {"$ref": "#/components/schemas/ErrorEnvelope"}]}, path
            else:
                assert schema == envelope, (method, path)
        assert responses["400"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorEnvelope"
        }
    assert set(doc["paths"]["/v3/wiki/create"]["post"]["responses"]) >= {"200", "201"}
    assert set(doc["paths"]["/v3/wiki/page/write"]["post"]["responses"]) >= {"202"}


def test_two_body_models_of_one_name_are_refused() -> None:
    """Schemas are keyed by class name: a second model of the same name must not replace the first's rules."""

    def model(min_length: int) -> type[BaseModel]:
        class Message(BaseModel):
            content: str = Field(min_length=min_length)

        return Message

    first, second = model(1), model(0)
    assert openapi.document(FastAPI(), [first, first])["components"]["schemas"]["Message"]
    with pytest.raises(ValueError, match="two body models are named Message"):
        openapi.document(FastAPI(), [first, second])
