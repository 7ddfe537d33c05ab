"""The agent integration kit: recall before the prompt, capture after the turn, memory tools, degradation.

```python
from memhub.sdk.agent import MemoryAgent

agent = MemoryAgent.connect("http://127.0.0.1:8420", api_key, "svc-1",
                            team_id="team-1", agent_id="agent-1", user_id="user-1", session_id="s-1")
r = agent.recall(user_text, messages=history)
system = r.system_prompt(base_system)
user = r.user_message(user_text)
...  # call the LLM with agent.tool_definitions("openai"); answer tool calls with agent.dispatch(name, args)
agent.capture(history_after_turn)   # fire-and-forget
```
"""

from typing import TYPE_CHECKING

from memhub.sdk._lazy import lazy_exports

if TYPE_CHECKING:
    from memhub.formats.sanitize import sanitize_text, should_capture_l0, strip_code_blocks
    from memhub.sdk.agent.breaker import CircuitBreaker
    from memhub.sdk.agent.config import AgentConfig
    from memhub.sdk.agent.kit import MemoryAgent
    from memhub.sdk.agent.prompt import tools_guide
    from memhub.sdk.agent.recall import Recall
    from memhub.sdk.agent.tools import MEMORY_TOOLS, ToolDefinition

__all__ = [
    "MEMORY_TOOLS",
    "AgentConfig",
    "CircuitBreaker",
    "MemoryAgent",
    "Recall",
    "ToolDefinition",
    "sanitize_text",
    "should_capture_l0",
    "strip_code_blocks",
    "tools_guide",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "sanitize_text": "memhub.formats.sanitize",
        "should_capture_l0": "memhub.formats.sanitize",
        "strip_code_blocks": "memhub.formats.sanitize",
        "CircuitBreaker": "memhub.sdk.agent.breaker",
        "AgentConfig": "memhub.sdk.agent.config",
        "MemoryAgent": "memhub.sdk.agent.kit",
        "tools_guide": "memhub.sdk.agent.prompt",
        "Recall": "memhub.sdk.agent.recall",
        "MEMORY_TOOLS": "memhub.sdk.agent.tools",
        "ToolDefinition": "memhub.sdk.agent.tools",
    },
)
