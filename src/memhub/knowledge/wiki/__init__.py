"""The team wiki: sources, the two-layer index of themes and documents, retrieval and tools."""
