"""Helpers for the skill search, listing and tools tests: skills written and read through the real app."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from tests.conftest import Gateway
from tests.meta.org import Member, Org
from tests.skills.helpers import IDS

STEPS = "# Steps\n1. run it\n"


def skill_md(name: str, description: str, body: str = STEPS) -> str:
    """A valid SKILL.md (the description quoted, so any text is valid YAML)."""
    return f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n{body}"


@dataclass
class Skills:
    """Skill calls with the gateway key (or a user key through `org`) under default ids."""

    gw: Gateway
    ids: dict[str, str] = field(default_factory=lambda: dict(IDS))
    org: Org | None = None
    who: Member | None = None

    def _headers(self) -> dict[str, str] | None:
        return self.org.headers(self.who) if self.org is not None else None

    def post(self, route: str, body: dict[str, Any], ids: dict[str, str] | None = None) -> dict[str, Any]:
        """POST `/v3/<route>` and return the envelope (HTTP 200 asserted: skill errors are business codes)."""
        payload = {**(self.ids if ids is None else ids), **body}
        headers = self._headers() or self.gw.headers()
        response = self.gw.client.post(f"/v3/{route}", json=payload, headers=headers)
        envelope: dict[str, Any] = response.json()
        assert response.status_code == 200, envelope
        return envelope

    def ok(self, route: str, body: dict[str, Any], ids: dict[str, str] | None = None) -> Any:
        envelope = self.post(route, body, ids)
        assert envelope["code"] == 0, envelope
        return envelope["data"]

    def create(
        self,
        name: str,
        description: str,
        body: str = "# Steps\n1. run it\n",
        ids: dict[str, str] | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        return self.ok("skill/create", {"name": name, "content": skill_md(name, description, body), **kw}, ids)

    def search(self, query: str, ids: dict[str, str] | None = None, **body: Any) -> list[dict[str, Any]]:
        return self.ok("skill/search", {"query": query, **body}, ids)["items"]

    def names(self, query: str, ids: dict[str, str] | None = None, **body: Any) -> list[str]:
        return [item["name"] for item in self.search(query, ids, **body)]

    def listing(self, ids: dict[str, str] | None = None, **body: Any) -> dict[str, Any]:
        return self.ok("skill/listing", body, ids)

    def tools(self, route: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """POST `/v3/tools/<route>` (no ids in the body); (HTTP status, envelope)."""
        headers = self._headers() or self.gw.headers()
        response = self.gw.client.post(f"/v3/tools/{route}", json=body, headers=headers)
        return response.status_code, response.json()


def text_file(path: str, content: str) -> dict[str, Any]:
    return {"path": path, "content": content, "encoding": "utf-8"}


def binary_file(path: str, data: bytes) -> dict[str, Any]:
    return {"path": path, "content": base64.b64encode(data).decode(), "encoding": "base64"}
