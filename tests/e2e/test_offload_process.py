"""Context offload inside `memhub serve` processes: pairs ingested before a `kill -9` are all summarised after the
restart, and compaction then swaps their results for summaries whose references read back the full result."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memhub.offload.tokens import message_tokens
from tests.e2e.conftest import SCOPE, Launcher

pytestmark = pytest.mark.timeout(180)

SESSION = "e2e:offload-1"
BASE = {
    "MEMHUB_EMBEDDING_PROVIDER": "none",
    "MEMHUB_PIPELINE_POLL_MS": "50",
    "MEMHUB_PIPELINE_IDLE_SECONDS": "3600",
}
# Due a second after ingest; the first server runs no worker, so the kill always finds the pairs queued.
DUE = {**BASE, "MEMHUB_OFFLOAD_SUMMARY_MAX_AGE_SECONDS": "1", "MEMHUB_OFFLOAD_GRAPH_MAX_AGE_SECONDS": "1"}


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def pairs() -> list[dict[str, Any]]:
    out = []
    for i in range(5):
        result = "\n".join(f"tests/unit/test_mod_{i}.py::test_case_{j} PASSED" for j in range(60))
        out.append(
            {
                "tool_name": "Bash",
                "tool_call_id": f"call_{i}",
                "params": {"command": f"pytest tests/unit/test_mod_{i}.py -v"},
                "result": result + f"\n60 passed in 0.{i}s",
                "timestamp": f"2026-12-03T09:0{i}:00Z",
            }
        )
    return out


def openai_transcript(sent: list[dict[str, Any]]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Run the unit tests"}]
    for p in sent:
        function = {"name": "Bash", "arguments": json.dumps(p["params"])}
        call = {"id": p["tool_call_id"], "type": "function", "function": function}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": p["tool_call_id"], "content": p["result"]})
    messages.append({"role": "user", "content": "Which tests passed?"})
    return messages


def test_pairs_ingested_before_a_kill_are_summarised_after_the_restart(launcher: Launcher, data_dir: Path) -> None:
    sent = pairs()
    first = launcher.serve(data_dir, env=DUE, pipeline=False)
    with first.api() as api:
        api.ok("/v2/offload/ingest", {**SCOPE, "session_id": SESSION, "prompt": "Run the unit tests"})
        api.ok("/v2/offload/ingest", {**SCOPE, "session_id": SESSION, "tool_pairs": sent})
        status = api.ok("/v2/pipeline/status", {})
        assert status["offload"]["pairs_pending"] == len(sent)
    first.kill()

    second = launcher.serve(data_dir, env=DUE, pipeline=True)
    with second.api() as api:

        def settled() -> dict[str, Any] | None:
            offload = api.ok("/v2/pipeline/status", {})["offload"]
            quiet = offload["pairs_pending"] == 0 and offload["prompts_pending"] == 0
            return offload if quiet and offload["entries_unmapped"] == 0 else None

        offload = wait_for("every pair summarised and placed on the graph", settled)
        assert offload["summary"]["dead"] == offload["task"]["dead"] == offload["graph"]["dead"] == 0
        messages = openai_transcript(sent)
        tokens = sum(message_tokens(m) for m in messages)
        body = {**SCOPE, "session_id": SESSION, "messages": messages, "ratio": 0.6, "total_tokens": tokens}
        compacted = api.ok("/v2/offload/compact", {**body, "context_window": int(tokens / 0.6)})
        refs = sorted(set(re.findall(r"offload/e2e:offload-1/refs/[A-Za-z0-9_.-]+\.md", json.dumps(compacted))))
        # Mild swaps the older results (the latest stay whole, as the agent is still working with them).
        assert 0 < compacted["report"]["mildReplacements"] == len(refs) < len(sent)
        by_id = {p["tool_call_id"]: p for p in sent}
        for ref in refs:
            read = {**SCOPE, "session_id": SESSION, "result_ref": ref, "max_tokens": 4096}
            full = api.ok("/v2/offload/read-ref", read)
            assert full["content"] == by_id[ref.rsplit("/", 1)[1].removesuffix(".md")]["result"]
        graphs = api.ok("/v2/offload/query-mmd", {**SCOPE, "session_id": SESSION})
        assert graphs["currentMmd"] and "flowchart TD" in graphs["mmds"][0]["content"]
    assert second.alive()
