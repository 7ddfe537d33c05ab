"""One adapter per wire protocol: how a body is read and injected, and how the answer is parsed."""

from __future__ import annotations

from memhub.proxy.model import WireProtocol
from memhub.proxy.protocols.anthropic import AnthropicMessages
from memhub.proxy.protocols.base import Body, Family, ProtocolAdapter, StreamTap, dumps
from memhub.proxy.protocols.openai_chat import OpenAIChat
from memhub.proxy.protocols.responses import Responses

ADAPTERS: dict[WireProtocol, ProtocolAdapter] = {
    WireProtocol.OPENAI_CHAT: OpenAIChat(),
    WireProtocol.ANTHROPIC: AnthropicMessages(),
    WireProtocol.RESPONSES: Responses(),
}


def adapter_for(protocol: WireProtocol) -> ProtocolAdapter:
    """The adapter speaking `protocol`."""
    return ADAPTERS[protocol]


__all__ = ["ADAPTERS", "Body", "Family", "ProtocolAdapter", "StreamTap", "adapter_for", "dumps"]
