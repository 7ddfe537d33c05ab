"""HTTP conventions of the gateway: envelope, status mapping, bodies, encodings, CORS, 404/405, health, 500."""

from __future__ import annotations

import gzip
import json
import re
import uuid
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.conftest import GATEWAY_KEY, ISO, Gateway

REQUEST_ID = re.compile(r"^req-[0-9a-f]{16}$")
ORIGIN = "https://app.example"


def post_raw(gw: Gateway, path: str, content: bytes | Iterator[bytes], **headers: str) -> Any:
    return gw.client.post(path, content=content, headers={**gw.headers(), **headers})


def persona_body(size: int) -> bytes:
    """A core/write body of exactly `size` bytes."""
    skeleton = json.dumps({"content": ""}).encode()
    return json.dumps({"content": "p" * (size - len(skeleton))}).encode()


# -- envelope ------------------------------------------------------------------------------
def test_success_envelope_and_request_ids(gateway: Gateway) -> None:
    seen = set()
    for _ in range(3):
        response = gateway.post("/v3/core/count", {})
        envelope = response.json()
        assert response.status_code == 200
        assert envelope == {"code": 0, "message": "ok", "request_id": envelope["request_id"], "data": {"total": 0}}
        assert REQUEST_ID.match(envelope["request_id"])
        assert response.headers["x-request-id"] == envelope["request_id"]
        assert response.headers["content-type"] == "application/json"
        seen.add(envelope["request_id"])
    assert len(seen) == 3


def test_inbound_request_id_is_not_trusted_on_the_data_plane(gateway: Gateway) -> None:
    response = gateway.post("/v3/core/count", {}, headers={"x-request-id": "req-attacker-chosen"})
    assert REQUEST_ID.match(response.json()["request_id"])


def test_chinese_content_is_utf8_not_escaped(gateway: Gateway) -> None:
    gateway.ok("/v3/core/write", {"content": "喜欢火锅"})
    response = gateway.post("/v3/core/read", {})
    assert "喜欢火锅".encode() in response.content


ERRORS = [
    pytest.param("/v3/scenario/read", {"path": "../x"}, {}, 400, id="400-params"),
    pytest.param("/v3/core/read", {}, {"authorization": "Bearer nope"}, 401, id="401-auth"),
    pytest.param("/v3/scenario/write", {"path": "no.md", "content": "x"}, {}, 404, id="404-missing"),
    pytest.param("/v3/atomic/update", {"id": "m_1_deadbeef", "content": "x"}, {}, 404, id="404-atomic"),
    pytest.param("/v3/atomic/query", {"limit": 0}, {}, 400, id="400-range"),
    pytest.param("/v3/atomic/query", {"limit": "5"}, {}, 400, id="400-strict-type"),
]


@pytest.mark.parametrize(("path", "body", "headers", "code"), ERRORS)
def test_error_envelope_http_status_equals_code(
    gateway: Gateway, path: str, body: dict[str, Any], headers: dict[str, str], code: int
) -> None:
    response = gateway.post(path, body, headers=headers)
    envelope = response.json()
    assert response.status_code == code
    assert envelope["code"] == code
    assert isinstance(envelope["message"], str)
    assert envelope["message"]
    assert REQUEST_ID.match(envelope["request_id"])
    assert response.headers["x-request-id"] == envelope["request_id"]
    assert set(envelope) <= {"code", "message", "request_id", "data"}


def test_conflict_is_409(gateway: Gateway) -> None:
    gateway.ok("/v3/scenario/create", {"path": "c.md", "content": "x"})
    gateway.fails("/v3/scenario/create", {"path": "c.md", "content": "x"}, 409)


# -- body size -----------------------------------------------------------------------------
@pytest.fixture
def small(make_gateway: Any) -> Gateway:
    return make_gateway("small", max_body_bytes=2048)


def test_body_at_the_limit_is_accepted(small: Gateway) -> None:
    response = post_raw(small, "/v3/core/write", persona_body(2048), **{"content-type": "application/json"})
    assert response.json()["code"] == 0


def test_declared_length_over_limit_is_413_and_nothing_written(small: Gateway) -> None:
    response = post_raw(small, "/v3/core/write", persona_body(2049))
    assert response.status_code == 413
    assert response.json()["code"] == 413
    assert response.json()["message"] == "Request body too large (limit 2048 bytes)"
    assert small.ok("/v3/core/count", {}) == {"total": 0}


def test_streamed_body_over_limit_is_413(small: Gateway) -> None:
    body = persona_body(4000)
    response = post_raw(small, "/v3/core/write", iter([body[:1000], body[1000:]]))  # chunked, no Content-Length
    assert response.status_code == 413
    assert small.ok("/v3/core/count", {}) == {"total": 0}


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_body_inflating_past_limit_is_413(small: Gateway, encoding: str) -> None:
    raw = persona_body(50_000)
    packed = gzip.compress(raw) if encoding == "gzip" else zlib.compress(raw)
    assert len(packed) < 2048
    response = post_raw(small, "/v3/core/write", packed, **{"content-encoding": encoding})
    assert response.status_code == 413
    assert response.json()["message"] == "Request body too large after decompression (limit 2048 bytes)"
    assert small.ok("/v3/core/count", {}) == {"total": 0}


def test_default_limit_is_one_mib(gateway: Gateway) -> None:
    response = post_raw(gateway, "/v3/core/write", persona_body(1024 * 1024 + 1))
    assert response.status_code == 413
    assert response.json()["message"] == "Request body too large (limit 1048576 bytes)"


# -- encodings -----------------------------------------------------------------------------
def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


ENCODINGS = [
    pytest.param("gzip", gzip.compress, id="gzip"),
    pytest.param("x-gzip", gzip.compress, id="x-gzip"),
    pytest.param("GZIP", gzip.compress, id="gzip-uppercase"),
    pytest.param("deflate", zlib.compress, id="deflate-zlib"),
    pytest.param("deflate", _raw_deflate, id="deflate-raw"),
    pytest.param("identity", lambda b: b, id="identity"),
]


@pytest.mark.parametrize(("encoding", "pack"), ENCODINGS)
def test_compressed_request_bodies_are_accepted(gateway: Gateway, encoding: str, pack: Any) -> None:
    body = json.dumps({**ISO, "content": f"written with {encoding}"}).encode()
    response = post_raw(gateway, "/v3/core/write", pack(body), **{"content-encoding": encoding})
    assert response.json()["code"] == 0, response.json()
    assert gateway.ok("/v3/core/read", {})["content"] == f"written with {encoding}"


@pytest.mark.parametrize("encoding", ["br", "compress", "zstd"])
def test_other_encodings_are_415(gateway: Gateway, encoding: str) -> None:
    response = post_raw(gateway, "/v3/core/write", b'{"content": "x"}', **{"content-encoding": encoding})
    assert response.status_code == 415
    assert response.json()["code"] == 415
    assert response.json()["message"] == f"Unsupported Content-Encoding: {encoding}"
    assert gateway.ok("/v3/core/count", {}) == {"total": 0}


def test_gzip_header_with_garbage_is_400(gateway: Gateway) -> None:
    response = post_raw(gateway, "/v3/core/read", b"not gzip at all", **{"content-encoding": "gzip"})
    assert response.status_code == 400
    assert response.json()["message"].startswith("Invalid JSON body")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"", "Invalid JSON body", id="empty"),
        pytest.param(b"   \n", "Invalid JSON body", id="whitespace"),
        pytest.param(b"{not json", "Invalid JSON body", id="malformed"),
        pytest.param(b"\xff\xfe{}", "Invalid JSON body", id="not-utf8"),
        pytest.param(b"[1, 2]", "Invalid JSON body: the body must be a JSON object", id="array"),
        pytest.param(b'"text"', "Invalid JSON body: the body must be a JSON object", id="string"),
        pytest.param(b"null", "Invalid JSON body: the body must be a JSON object", id="null"),
    ],
)
def test_bodies_that_are_not_json_objects_are_400(gateway: Gateway, content: bytes, message: str) -> None:
    response = post_raw(gateway, "/v3/core/write", content, **{"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json()["code"] == 400
    assert response.json()["message"] == message
    assert gateway.ok("/v3/core/count", {}) == {"total": 0}


def test_empty_object_is_a_valid_body(gateway: Gateway) -> None:
    response = post_raw(gateway, "/v3/core/count", b"{}")
    assert response.json() == {
        "code": 0,
        "message": "ok",
        "request_id": response.json()["request_id"],
        "data": {"total": 0},
    }


# -- OPTIONS and CORS ----------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v3/conversation/add", "/v2/core/read", "/v3/does/not/exist", "/health", "/"])
def test_options_is_204_on_any_path_without_auth(gateway: Gateway, path: str) -> None:
    response = gateway.client.options(path)
    assert response.status_code == 204
    assert response.content == b""
    assert REQUEST_ID.match(response.headers["x-request-id"])
    assert "access-control-allow-origin" not in response.headers  # no CORS configured


@pytest.fixture
def cors(make_gateway: Any) -> Gateway:
    return make_gateway("cors", cors_origins=[ORIGIN, "https://other.example"])


def test_cors_preflight_for_an_allowed_origin(cors: Gateway) -> None:
    response = cors.client.options(
        "/v3/conversation/add",
        headers={"origin": ORIGIN, "access-control-request-method": "POST"},
    )
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in response.headers["access-control-allow-methods"]
    allowed = {h.strip() for h in response.headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type", "content-encoding", "x-tdai-service-id", "x-tdai-team-id"} <= allowed
    assert {"mcp-protocol-version", "mcp-session-id"} <= allowed  # what an MCP client in a browser sends to /mcp
    assert "Origin" in response.headers["vary"]


def test_cors_headers_on_allowed_origin_responses(cors: Gateway) -> None:
    response = cors.post("/v3/core/count", {}, headers={"origin": ORIGIN})
    assert response.json()["code"] == 0
    assert response.headers["access-control-allow-origin"] == ORIGIN
    assert "x-request-id" in response.headers["access-control-expose-headers"]
    failed = cors.post("/v3/core/count", {}, headers={"origin": ORIGIN, "authorization": "Bearer bad"})
    assert failed.status_code == 401
    assert failed.headers["access-control-allow-origin"] == ORIGIN


@pytest.mark.parametrize("origin", ["https://evil.example", "https://app.example.evil", "null"])
def test_cors_refuses_unlisted_origins(cors: Gateway, origin: str) -> None:
    preflight = cors.client.options(
        "/v3/core/read", headers={"origin": origin, "access-control-request-method": "POST"}
    )
    assert preflight.status_code == 204
    assert "access-control-allow-origin" not in preflight.headers
    assert "access-control-allow-methods" not in preflight.headers
    response = cors.post("/v3/core/count", {}, headers={"origin": origin})
    assert "access-control-allow-origin" not in response.headers


def test_cors_wildcard(make_gateway: Any) -> None:
    gw = make_gateway("anyorigin", cors_origins=["*"])
    preflight = gw.client.options("/v3/core/read", headers={"origin": "https://x.example"})
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "POST" in preflight.headers["access-control-allow-methods"]
    response = gw.post("/v3/core/count", {}, headers={"origin": "https://y.example"})
    assert response.headers["access-control-allow-origin"] == "*"


# -- routing -------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/v3/nope", "/v3/conversation/nope", "/v2/atomic/count", "/v3/meta/x/y", "/v1/x"])
def test_unknown_paths_are_404_envelopes(gateway: Gateway, path: str) -> None:
    response = gateway.post(path, {})
    envelope = response.json()
    assert response.status_code == 404
    assert envelope["code"] == 404
    assert envelope["message"] == f"Not found: POST {path}"
    assert REQUEST_ID.match(envelope["request_id"])


def test_unknown_get_path_names_the_method(gateway: Gateway) -> None:
    response = gateway.client.get("/v3/whatever", headers=gateway.headers())
    assert response.status_code == 404
    assert response.json()["message"] == "Not found: GET /v3/whatever"


@pytest.mark.parametrize("path", ["/v3/conversation/query", "/v2/scenario/ls", "/v3/core/read"])
def test_get_on_a_post_route_is_405_envelope(gateway: Gateway, path: str) -> None:
    response = gateway.client.get(path, headers=gateway.headers())
    assert response.status_code == 405
    assert response.json()["code"] == 405
    assert response.headers["allow"] == "POST"  # RFC 9110: a 405 names the methods the path takes
    assert REQUEST_ID.match(response.json()["request_id"])


# -- health --------------------------------------------------------------------------------
@pytest.mark.parametrize("headers", [{}, {"authorization": "Bearer wrong"}])
def test_health_is_open(gateway: Gateway, headers: dict[str, str]) -> None:
    response = gateway.client.get("/health", headers=headers)
    assert response.status_code == 200
    health = response.json()
    assert health["status"] == "ok"
    assert isinstance(health["version"], str)
    assert isinstance(health["uptime"], int | float)
    assert health["uptime"] >= 0
    assert {"vectorStore", "embeddingService"} <= set(health["stores"])
    assert {"timerScanner", "pipelineWorker", "stateBackend"} <= set(health["services"])
    assert health["services"]["stateBackend"] == "connected"
    assert GATEWAY_KEY not in response.text


# -- unhandled errors ----------------------------------------------------------------------
def test_unhandled_error_is_500_with_trace_id_and_no_stack(gateway: Gateway, caplog: pytest.LogCaptureFixture) -> None:
    gateway.store.close()  # every later write hits a closed SQLite connection
    response = gateway.post("/v3/core/write", {"content": "after close"})
    envelope = response.json()
    assert response.status_code == 500
    assert set(envelope) == {"code", "message", "request_id", "trace_id", "retryable"}
    assert envelope["code"] == 500
    assert envelope["message"] == "Internal server error"
    assert envelope["retryable"] is True
    assert REQUEST_ID.match(envelope["request_id"])
    assert str(uuid.UUID(envelope["trace_id"])) == envelope["trace_id"]
    for leak in ("Traceback", "sqlite", "closed database", ".py", "ProgrammingError"):
        assert leak not in response.text
    # The trace id is what ties the response to the server log.
    assert any(envelope["trace_id"] in r.getMessage() for r in caplog.records)


# -- OpenAPI -------------------------------------------------------------------------------
CONTRACT = [
    "conversation/add",
    "conversation/query",
    "conversation/search",
    "conversation/delete",
    "conversation/count",
    "atomic/update",
    "atomic/query",
    "atomic/search",
    "atomic/delete",
    "atomic/count",
    "scenario/ls",
    "scenario/read",
    "scenario/write",
    "scenario/rm",
    "scenario/count",
    "core/read",
    "core/write",
    "core/count",
]
EXTENSIONS = ["atomic/add", "scenario/create", "atomic/history"]
# The pipeline's routes: the original's pipeline/status (v2) and memhub's control routes.
PIPELINE = ["pipeline/status", "pipeline/jobs", "pipeline/replay", "pipeline/flush"]
# v3 only: custom memory prompts (7) and the generation log (2); five of them answer GET too.
PROMPTS = [
    "memory-prompt/create",
    "memory-prompt/update",
    "memory-prompt/delete",
    "memory-prompt/get",
    "memory-prompt/set",
    "memory-prompt/setting/list",
    "memory-prompt/log",
    "memory-generation-log/list",
    "memory-generation-log/get",
]
# v3 only, asset-level (no isolation fields): emptying chat-memory assets.
CHAT_MEMORY = ["chat-memory/clear"]
# v3 only: one recall across the layers.
# Context offload: the original serves it at /v2 only.
OFFLOAD = ["offload/ingest", "offload/compact", "offload/query-mmd", "offload/read-ref"]
RECALL = ["recall"]
# v3 only, ids in the body: the skill write and read routes (memhub adds publish).
SKILL = [
    "skill/create",
    "skill/update",
    "skill/patch",
    "skill/delete",
    "skill/get",
    "skill/get-by-name",
    "skill/list",
    "skill/versions",
    "skill/files/write",
    "skill/files/remove",
    "skill/files/read",
    "skill/export",
    "skill/publish",
    "skill/search",
    "skill/listing",
    "skill/extract",
    "skill/conversation/add",
    "skill/conversation/force-archive",
]
GET_TOO = {
    "/v3/memory-prompt/get",
    "/v3/memory-prompt/setting/list",
    "/v3/memory-prompt/log",
    "/v3/memory-generation-log/list",
    "/v3/memory-generation-log/get",
}


def test_openapi_lists_every_data_plane_route(gateway: Gateway) -> None:
    response = gateway.client.get("/openapi.json")
    assert response.status_code == 200
    doc = response.json()
    paths = doc["paths"]
    # The management plane is listed by tests/meta; the knowledge service by tests/knowledge; the context
    # composer by tests/context.
    management = (
        "/v3/meta/",
        "/v3/internal/",
        "/v3/knowledge/",
        "/v3/wiki/",
        "/v3/code-graph/",
        "/v3/tools/",
        "/v3/context/",
    )
    v3 = {p.removeprefix("/v3/") for p in paths if p.startswith("/v3/") and not p.startswith(management)}
    v2 = {p.removeprefix("/v2/") for p in paths if p.startswith("/v2/")}
    assert len(CONTRACT) == 18
    assert v3 == set(CONTRACT + EXTENSIONS + PIPELINE + PROMPTS + CHAT_MEMORY + RECALL + SKILL)
    mirrors = {r for r in CONTRACT if not r.endswith("/count")}
    assert len(mirrors) == 14
    assert v2 == mirrors | set(EXTENSIONS + PIPELINE + OFFLOAD)
    schemas = doc["components"]["schemas"]
    for path, item in paths.items():
        if not path.startswith(("/v2/", "/v3/")):
            continue
        assert set(item) == ({"post", "get"} if path in GET_TOO else {"post"}), path
        ref = item["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
        assert ref.removeprefix("#/components/schemas/") in schemas, (path, ref)
    assert "/health" in paths
    write = schemas["ScenarioWrite"]
    assert {"path", "content"} <= set(write["required"])


def test_500_carries_the_request_id_header(gateway: Gateway) -> None:
    gateway.store.close()
    response = gateway.post("/v3/scenario/create", {"path": "x.md", "content": "x"})
    assert response.status_code == 500
    assert response.headers["x-request-id"] == response.json()["request_id"]


def test_500_carries_cors_headers_for_an_allowed_origin(make_gateway: Callable[..., Gateway]) -> None:
    gw = make_gateway("cors500", cors_origins=["https://panel.example"])
    gw.store.close()
    allowed = gw.post(
        "/v3/scenario/create", {"path": "x.md", "content": "x"}, headers={"origin": "https://panel.example"}
    )
    assert allowed.status_code == 500
    assert allowed.headers["access-control-allow-origin"] == "https://panel.example"
    other = gw.post("/v3/scenario/create", {"path": "x.md", "content": "x"}, headers={"origin": "https://evil.example"})
    assert other.status_code == 500 and "access-control-allow-origin" not in other.headers
