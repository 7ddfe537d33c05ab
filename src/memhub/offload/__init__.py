"""Context offload: long agent runs keep what matters in fewer tokens.

Tool pairs an agent ran are summarised (L1), its prompts judged for task boundaries (L1.5) and its work drawn
as a Mermaid task graph per task (L2), on the pipeline's durable jobs; compaction then swaps tool results for
their summaries and, past harder thresholds, drops the oldest turns, keeping the task graph in the prompt.
The routes (`/v2/offload/*`, wire-compatible with the original) and the proxy both call `OffloadService`.
"""
