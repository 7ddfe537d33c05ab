"""A memhub app served by uvicorn on a real socket, its proxy forwarding to a fake upstream, so that the real
`openai` and `anthropic` clients talk to it over HTTP (streams arrive as they are sent, hang-ups are real)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memhub.api import create_app
from memhub.gateway_key import ensure_gateway_key
from memhub.proxy.identity import session_of
from memhub.proxy.model import Block, ProxyIdentity, RequestKind, TurnOutput, WireProtocol
from memhub.proxy.ports import Commands, IdentityResolver, Injector, ProxyDenied, TurnCapture
from memhub.proxy.service import ProxyService
from memhub.proxy.upstream import Upstream
from memhub.runtime import Hub, build_hub, open_store, upstream_config
from memhub.settings import Settings
from tests.conftest import GATEWAY_KEY
from tests.proxy.fake_upstream import FakeUpstream
from tests.served import Served, serve

SPACE = "svc-proxy"
PROVIDER_KEY_OPENAI = "sk-provider-openai-configured"
PROVIDER_KEY_ANTHROPIC = "sk-ant-provider-configured"


# The simplest real implementations of the ports, for the transport tests (the memory parts have their own).


class KeyResolver(IdentityResolver):
    """A memhub user key (Bearer, or an Anthropic `x-api-key`) checked against the hub's key store; team and
    agent from the headers."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    async def resolve(
        self,
        headers: Mapping[str, str],
        *,
        space_id: str,
        agent_source: str,
        fallback_session: str | Callable[[], str],
    ) -> ProxyIdentity:
        bearer = headers.get("authorization", "").removeprefix("Bearer ").strip()
        key = bearer if bearer.startswith("sk-mem-") else headers.get("x-api-key", "")
        caller = self.hub.meta.users.authenticate(space_id, key) if key else None
        if caller is None or caller.user_id is None:
            raise ProxyDenied(401, "a valid memhub user key is required")
        return ProxyIdentity(
            service_id=space_id,
            user_id=caller.user_id,
            key_id=caller.key_id,
            session_id=headers.get("x-session-id") or session_of({}, fallback_session),
            agent_source=agent_source,
            team_id=headers.get("x-team-id"),
            agent_id=headers.get("x-agent-id"),
        )


BLOCK = Block("test-injector", "<tdai_memory_tools>\nremember things\n</tdai_memory_tools>", "system.suffix", 105)


@dataclass
class FixedInjector(Injector):
    """One fixed block at the end of the system prompt; `fail` makes `blocks` raise."""

    fail: bool = False
    kinds: list[RequestKind] = field(default_factory=list)

    async def blocks(self, identity: ProxyIdentity, kind: RequestKind) -> list[Block]:
        self.kinds.append(kind)
        if self.fail:
            raise RuntimeError("the injector broke")
        return [BLOCK]

    def splice(self, segments: Sequence[str], blocks: Sequence[Block], agent_source: str) -> list[str]:
        out = list(segments) or [""]
        out[-1] = out[-1] + ("\n\n" if out[-1] else "") + self.flat(blocks)
        return out

    def flat(self, blocks: Sequence[Block]) -> str:
        return "\n\n".join(b.text for b in blocks if b.point.startswith("system."))

    def forget_session(self, identity: ProxyIdentity) -> None:
        pass


@dataclass
class RecordingCapture(TurnCapture):
    """Keeps what was submitted; `fail` makes `submit` raise."""

    fail: bool = False
    turns: list[tuple[ProxyIdentity, WireProtocol, str, TurnOutput]] = field(default_factory=list)
    got: threading.Event = field(default_factory=threading.Event)

    def submit(
        self,
        identity: ProxyIdentity,
        protocol: WireProtocol,
        user_text: str,
        output: TurnOutput,
        position: int | None = None,
    ) -> None:
        if self.fail:
            raise RuntimeError("the capture broke")
        self.turns.append((identity, protocol, user_text, output))
        self.got.set()


class HelpCommands(Commands):
    async def run(self, identity: ProxyIdentity, user_text: str) -> str | None:
        return "memhub commands: mem:help, mem:sync, mem:create-skill" if user_text == "mem:help" else None


@dataclass
class ProxyRig:
    """The served app, its hub, the fake upstream and the ports' test implementations."""

    served: Served
    hub: Hub
    upstream: FakeUpstream
    injector: FixedInjector
    capture: RecordingCapture
    user_key: str
    team_id: str
    agent_id: str

    @property
    def url(self) -> str:
        return self.served.url

    def base(self, agent: str = "proxy", protocol: str = "openai") -> str:
        """The base URL a client is configured with (OpenAI clients include `/v1`, Anthropic's do not)."""
        root = f"{self.url}/{agent}/{SPACE}"
        return f"{root}/v1" if protocol == "openai" else root

    def identity_headers(self, **extra: str) -> dict[str, str]:
        return {"x-team-id": self.team_id, "x-agent-id": self.agent_id, "x-session-id": "sess-1", **extra}


@pytest.fixture
def make_rig(tmp_path: Path) -> Iterator[Callable[..., ProxyRig]]:
    """Build a rig; `upstream_up=False` leaves the fake upstream stopped (connections refused), `real=True` serves
    the hub's own proxy instead of the test ports."""
    made: list[tuple[ProxyRig, ProxyService]] = []

    def make(*, upstream_up: bool = True, real: bool = False, **settings: Any) -> ProxyRig:
        fake = FakeUpstream()
        fake.start()
        if not upstream_up:
            fake.stop()
        config = Settings(
            **{
                "data_dir": tmp_path / f"data{len(made)}",
                "gateway_api_key": GATEWAY_KEY,
                "pipeline_enabled": False,  # a rig that turns it on runs its jobs with `hub.worker.drain()`
                "proxy_openai_base_url": fake.base_url,
                "proxy_openai_api_key": PROVIDER_KEY_OPENAI,
                "proxy_anthropic_base_url": fake.root,
                "proxy_anthropic_api_key": PROVIDER_KEY_ANTHROPIC,
                **settings,
            }
        )
        store = open_store(config)
        key = ensure_gateway_key(store, config.gateway_api_key).key
        hub = build_hub(config, store)
        admin = hub.meta.init_admin(SPACE, "alice", None, request_id="test")
        injector, capture = FixedInjector(), RecordingCapture()
        if not real:  # the simplest real ports; `real` keeps the hub's own (identity, injection, capture)
            service = ProxyService(
                KeyResolver(hub), Upstream(upstream_config(config)), injector=injector, capture=capture,
                commands=HelpCommands(),
            )  # fmt: skip
            hub = dataclasses.replace(hub, proxy=service)
        assert hub.proxy is not None
        served = serve(create_app(hub, key, run_pipeline=False))
        rig = ProxyRig(served, hub, fake, injector, capture, admin["user_key"], admin["team_id"], admin["agent_id"])
        made.append((rig, hub.proxy))
        return rig

    yield make
    for rig, service in made:
        rig.served.stop()
        rig.upstream.stop()
        if service.flush is not None:
            service.flush()  # the capture worker writes what it holds before the store closes
        rig.hub.store.close()


@pytest.fixture
def rig(make_rig: Callable[..., ProxyRig]) -> ProxyRig:
    return make_rig()
