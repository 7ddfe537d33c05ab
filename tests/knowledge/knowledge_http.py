"""Requests to the knowledge routes through the real app, with the envelope checked: shared by the wiki and
code-graph HTTP test kits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from tests.conftest import Gateway


@dataclass
class KnowledgeHttp:
    """POSTs with the gateway key for one service id (and a default team) by default."""

    gw: Gateway
    service: str = "svc-a"
    team: str = "team-a"

    def call(self, route: str, body: Mapping[str, Any], *, service: str | None = None) -> httpx.Response:
        """POST `/v3/<route>` with the gateway key; the raw response."""
        headers = {"authorization": f"Bearer {self.gw.key}", "x-tdai-service-id": service or self.service}
        return self.gw.client.post(f"/v3/{route}", json=dict(body), headers=headers)

    def ok(self, route: str, body: Mapping[str, Any], *, status: int = 200, service: str | None = None) -> Any:
        """POST and assert a success envelope with this HTTP status; returns `data`."""
        response = self.call(route, body, service=service)
        envelope = response.json()
        assert response.status_code == status, envelope
        assert envelope["code"] == 0 and envelope["message"] == "ok", envelope
        assert envelope["request_id"].startswith("req-"), envelope
        return envelope["data"]

    def fails(
        self, route: str, body: Mapping[str, Any], code: int, message: str | None = None, *, service: str | None = None
    ) -> dict[str, Any]:
        """POST and assert an error envelope (code = HTTP status); `message` exact, or a prefix when it ends with …"""
        response = self.call(route, body, service=service)
        envelope: dict[str, Any] = response.json()
        assert response.status_code == code, envelope
        assert envelope["code"] == code, envelope
        assert envelope["request_id"].startswith("req-"), envelope
        if message is not None:
            if message.endswith("…"):
                assert envelope["message"].startswith(message[:-1]), envelope
            else:
                assert envelope["message"] == message, envelope
        return envelope
