"""The memory pipeline: L0 conversation → L1 atomic memories → L2 scenes → L3 persona, on durable jobs."""
