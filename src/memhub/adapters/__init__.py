"""Framework adapters over the SDK, each an optional extra: `memhub[langgraph]`, `memhub[openai-agents]`."""
