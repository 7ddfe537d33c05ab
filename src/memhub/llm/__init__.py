"""LLM access: an OpenAI-compatible chat client and a forgiving reader for the JSON models write."""

from memhub.llm.client import ChatClient, ChatResult, LLMConfig, LLMError
from memhub.llm.jsonrepair import parse_json_loose

__all__ = ["ChatClient", "ChatResult", "LLMConfig", "LLMError", "parse_json_loose"]
