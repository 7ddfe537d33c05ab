"""Schemathesis against every operation of a real `memhub serve`, from the server's own OpenAPI document.

It checks that the document states the real limits (a schema-valid request is not refused with 400, a
schema-violating one is refused), that no request makes a 5xx, that every status and body is one the document
declares, and that credentials are required where it says so. Generation is deterministic and bounded, so a
run is the same run every time.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import SERVICE, Launcher, server_env
from tests.pipeline.fake_llm import FakeChat, Reply

pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[2]
ADMIN_KEY = "sk-mem-fuzz-admin-0123456789abcdef"
EXAMPLES = 8  # per operation and phase: a run stays under two minutes on a busy 2-core machine
RUN_DEADLINE = 780.0  # a hang guard, not a performance bound

CONFIG = """
seed = 20260101
[generation]
max-examples = {examples}
deterministic = true
[output.sanitization]
enabled = false
# Coverage (boundaries of every constraint) and fuzzing; the document declares no examples and no links.
[phases.examples]
enabled = false
[phases.stateful]
enabled = false
# An oversized body is refused with 413 before its fields are read.
[checks.negative_data_rejection]
expected-statuses = [400, 401, 403, 404, 405, 406, 409, 413, 415, 422, 428, 429]
[parameters]
"header.x-tdai-service-id" = "{service}"
[auth.openapi.bearer]
bearer = "{gateway_key}"
[auth.openapi.userKey]
api_key = "{admin_key}"

# The skill routes answer a body that breaks their schema with code 40001 and HTTP 200, as the original does
# (the document declares it on their 200 response); a missing or non-JSON body stays 400.
[[operations]]
include-path-regex = "^/v3/skill/"
checks.negative_data_rejection.expected-statuses = [200, 400, 401, 403, 413]

# A /v2 route is its /v3 twin's handler with the twin's request and responses (the test checks the document says
# so), on a server whose /v3 is lax as /v2 is: the twin's boundary cases would only be sent to the same code again.
# The /v2 routes are fuzzed, not covered; context offload, which has no /v3 twin, is covered too.
[[operations]]
include-path-regex = "^/v2/(?!offload/)"
phases.coverage.enabled = false

# The help conversation answers a documented 503 until an operator builds the help wiki.
[[operations]]
include-path = "/v3/context/compose"
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", 503]
"""


def test_every_operation_keeps_its_documented_contract(launcher: Launcher, data_dir: Path, tmp_path: Path) -> None:
    with FakeChat() as llm:
        # index: "ai" needs a model; the pipeline and embeddings are not what this run tests.
        llm.script = Reply.text("A summary.")
        code_root = tmp_path / "code"
        repo = _git_repository(code_root / "repo")
        env = {
            "MEMHUB_CODE_SOURCE_ROOTS": str(code_root),
            "MEMHUB_PIPELINE_ENABLED": "false",
            "MEMHUB_EMBEDDING_PROVIDER": "none",
            "MEMHUB_LLM_BASE_URL": llm.base_url,
            "MEMHUB_LLM_MODEL": "fake-chat",
            "MEMHUB_CODE_GRAPH_GIT_TIMEOUT_SECONDS": "5",
        }
        server = launcher.serve(data_dir, env=env)
        with server.api() as api:
            api.ok("/v3/internal/meta/user/init-admin", {"username": "fuzz-admin", "user_key": ADMIN_KEY})
            document = api.http.get("/openapi.json").json()
        operations = sum(len(item) for item in document["paths"].values())
        _assert_v2_is_v3(document)
        config = tmp_path / "schemathesis.toml"
        config.write_text(
            CONFIG.format(examples=EXAMPLES, service=SERVICE, gateway_key=server.key, admin_key=ADMIN_KEY)
        )
        command = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(config), "run"]
        command += [f"{server.url}/openapi.json", "--max-failures", "1000", "--no-color"]
        hooks = {
            "SCHEMATHESIS_HOOKS": "tests.e2e.fuzz_hooks",
            "PYTHONPATH": f"{REPO}:{REPO / 'src'}",
            "FUZZ_REPO_URL": repo.as_uri(),
            "FUZZ_SERVICE_URL": f"{server.url}/v3",
        }
        run = subprocess.run(
            command,
            cwd=tmp_path,
            env=server_env(hooks),
            capture_output=True,
            text=True,
            timeout=RUN_DEADLINE,
            check=False,
        )
    report = run.stdout + run.stderr
    # Failing requests may carry megabyte bodies: each line is cut short so the findings stay readable.
    assert run.returncode == 0, "\n".join(line[:400] for line in report.splitlines())[-30_000:]
    selected = re.search(r"Operations:\s+(\d+) selected / (\d+) total", report)
    assert selected is not None, report[:2000]
    assert int(selected.group(1)) == int(selected.group(2)) == operations, selected.group(0)
    assert "unhandled error" not in server.stderr, server.stderr[-5000:]


def _assert_v2_is_v3(document: dict[str, Any]) -> None:
    """Every /v2 operation states what its /v3 twin states, but for its name, summary and tags (context offload
    is served at /v2 only)."""
    naming = {"operationId", "summary", "tags"}
    for path, item in document["paths"].items():
        if path.startswith("/v2/") and not path.startswith("/v2/offload/"):
            for method, operation in item.items():
                twin = document["paths"]["/v3/" + path.removeprefix("/v2/")][method]
                unnamed = {k: v for k, v in operation.items() if k not in naming}
                assert unnamed == {k: v for k, v in twin.items() if k not in naming}, f"{method} {path}"


def _git_repository(path: Path) -> Path:
    """A one-commit git repository with a Python file: what every schema-valid `repo_url` is pointed at."""
    path.mkdir(parents=True)
    (path / "app.py").write_text("def main():\n    return 1\n")
    env = {**server_env(), "GIT_AUTHOR_NAME": "fuzz", "GIT_AUTHOR_EMAIL": "fuzz@example.invalid"}
    env |= {"GIT_COMMITTER_NAME": "fuzz", "GIT_COMMITTER_EMAIL": "fuzz@example.invalid"}
    for command in (["init", "-q", "-b", "main"], ["add", "app.py"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *command], cwd=path, env=env, check=True, capture_output=True, timeout=60)
    return path
