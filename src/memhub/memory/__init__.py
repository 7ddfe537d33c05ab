"""Chat memory services: L0 conversation, L1 atomic memories, L2 scenes, L3 persona."""
