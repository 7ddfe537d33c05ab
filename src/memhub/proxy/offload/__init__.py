"""Context offload inside the proxy: when a proxied request is compacted (`ProxyOffloader`, the
`TurnOffloader` of memhub.proxy.ports), the prefix a session re-sends, the models' context windows and an
agent's own switch. `build_offloader` is the call the composition root makes.
"""

from __future__ import annotations

from collections.abc import Callable

from memhub.meta.agents import Agents
from memhub.offload.service import OffloadService
from memhub.proxy.injection.injector import OFFLOAD_TOOLS
from memhub.proxy.injection.memory_blocks import Language
from memhub.proxy.injection.offload_block import render_offload_tools
from memhub.proxy.model import Block, ProxyIdentity
from memhub.proxy.offload.offloader import ProxyOffloadConfig, ProxyOffloader
from memhub.proxy.offload.switch import AgentOffloadSwitch


def build_offloader(
    service: OffloadService,
    agents: Agents,
    config: ProxyOffloadConfig,
    session_token: Callable[[ProxyIdentity], str],
    *,
    proxy_url: str,
    language: Language = "en",
) -> ProxyOffloader:
    """The proxy's offload over the gateway's offload service; its read tool's recipe reaches `proxy_url`'s memory
    bridge with the session's token (memhub.proxy.session_token.SessionTokens.mint)."""

    def tools_block(identity: ProxyIdentity) -> Block | None:
        return OFFLOAD_TOOLS.block(render_offload_tools(proxy_url, session_token(identity), language))

    return ProxyOffloader(service, config, agent_switch=AgentOffloadSwitch(agents), tools_block=tools_block)


__all__ = ["ProxyOffloadConfig", "ProxyOffloader", "build_offloader"]
