"""The memory proxy: forwards an agent's LLM calls with memory, skills and knowledge tools injected, and captures
each turn."""
