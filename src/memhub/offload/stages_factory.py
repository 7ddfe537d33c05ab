"""The two sets of offload stages a gateway can run: all offline, or all through its LLM."""

from __future__ import annotations

from memhub.llm.client import ChatClient
from memhub.offload.graph import SequenceGraphBuilder
from memhub.offload.llm import LLMGraphBuilder, LLMSummarizer, LLMTaskJudge
from memhub.offload.stages import OffloadStages
from memhub.offload.summary import ExtractiveSummarizer
from memhub.offload.tasks import HeuristicTaskJudge

__all__ = ["llm_stages", "offline_stages"]


def offline_stages() -> OffloadStages:
    """Stages that need no model: extractive summaries, heuristic task judgment, sequence graphs."""
    return OffloadStages(ExtractiveSummarizer(), HeuristicTaskJudge(), SequenceGraphBuilder(), mode="offline")


def llm_stages(client: ChatClient) -> OffloadStages:
    """Stages through `client`, each falling back to its offline counterpart where the model fails."""
    return OffloadStages(LLMSummarizer(client), LLMTaskJudge(client), LLMGraphBuilder(client), mode="llm")
