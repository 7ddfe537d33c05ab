"""Schemathesis hooks for tests/e2e/test_fuzz_openapi.py: the parts of the contract JSON Schema cannot state.

The OpenAPI document states these rules in words (descriptions, `contentMediaType`); a generator does not
read words, so each hook below turns a generated request into one that keeps the rule. Nothing else changes.

- a time range runs forward (`time_start` ≤ `time_end` …), and a prompt log window spans at most 90 days;
- `metadata_json` holds a JSON document (`contentMediaType: application/json`);
- a key's `expires_at` lies in the future;
- a generation-log `cursor` is one the server issued (opaque, so a generated one is left out);
- an upload names each file once (`files[].filename`), an offload ingest each tool call once
  (`tool_pairs[].tool_call_id`), and a line range runs forward (`start_line` ≤ `end_line`);
- a code graph's `repo_url` resolves to a public address (or is a `file://` URL under the source roots): the run
  has no network, so a URL the schema allows becomes the test's local repository (`FUZZ_REPO_URL`), and no
  request ever makes the server fetch from anywhere else;
- a knowledge `service_url` is on a trusted origin: a URL the schema allows becomes the gateway's own
  (`FUZZ_SERVICE_URL`).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import schemathesis

from memhub.api.json_rules import REPO_URL
from memhub.api.knowledge_schemas import RawWrite
from memhub.api.meta_schemas import HTTP_URL
from memhub.api.prompt_schemas import MAX_CURSOR_CHARS
from memhub.timeutil import parse_iso_ms

RANGES = [
    ("time_start", "time_end"),
    ("since", "until"),
    ("created_after", "created_before"),
    ("start_time", "end_time"),
]
WINDOW_MS = 90 * 86_400_000
FUTURE = "2999-01-01T00:00:00Z"
MAX_FILES = RawWrite.model_json_schema()["properties"]["files"]["maxItems"]
URL_MAX = 2048
# What a schema-valid URL becomes (set by the test); a URL the schema refuses is left for the server to refuse.
SUBSTITUTES = {
    "repo_url": (re.compile(REPO_URL), os.environ.get("FUZZ_REPO_URL", "")),
    "service_url": (re.compile(HTTP_URL), os.environ.get("FUZZ_SERVICE_URL", "")),
}


def _keep_rules(values: Any) -> Any:
    if not isinstance(values, dict):
        return values
    for start, end in RANGES:
        a, b = parse_iso_ms(values.get(start) or ""), parse_iso_ms(values.get(end) or "")
        if a is not None and b is not None:
            if a > b:
                values[start], values[end] = values[end], values[start]
            if start == "start_time" and abs(b - a) > WINDOW_MS:
                values[end] = values[start]
    if isinstance(values.get("metadata_json"), str):
        values["metadata_json"] = json.dumps(values["metadata_json"])
    expires = parse_iso_ms(values.get("expires_at") or "") if isinstance(values.get("expires_at"), str) else None
    if expires is not None:
        values["expires_at"] = FUTURE
    files = values.get("files")
    if isinstance(files, list) and 0 < len(files) <= MAX_FILES:  # a list past its bounds stays as it is
        names = [f.get("filename") if isinstance(f, dict) else None for f in files]
        values["files"] = [f for i, f in enumerate(files) if names[i] is None or names[i] not in names[:i]]
    pairs = values.get("tool_pairs")
    if isinstance(pairs, list):
        ids = [p.get("tool_call_id") if isinstance(p, dict) else None for p in pairs]
        values["tool_pairs"] = [p for i, p in enumerate(pairs) if ids[i] is None or ids[i] not in ids[:i]]
    first, last = values.get("start_line"), values.get("end_line")
    if isinstance(first, int) and isinstance(last, int) and first > last:
        values["start_line"], values["end_line"] = last, first
    for name, (pattern, substitute) in SUBSTITUTES.items():
        url = values.get(name)
        if substitute and isinstance(url, str) and 0 < len(url) <= URL_MAX and pattern.search(url):
            values[name] = substitute
    cursor = values.get("cursor")
    if isinstance(cursor, str) and 0 < len(cursor) <= MAX_CURSOR_CHARS:
        del values["cursor"]
    return values


@schemathesis.hook
def before_call(context: schemathesis.HookContext, case: schemathesis.Case, kwargs: dict[str, Any]) -> None:
    """Keep the stated rules in what is about to be sent: a JSON body, or the query of a GET twin."""
    _keep_rules(case.body)
    if isinstance(case.query, dict):
        _keep_rules(case.query.get("query"))
        _keep_rules(case.query)
