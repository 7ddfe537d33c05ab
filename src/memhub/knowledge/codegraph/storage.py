"""Where a code graph's files live.

    <data_dir>/knowledge/<service id, %-encoded>/<code graph id>/     (memhub.knowledge.storage)
        checkout/          the clone of a git source (`repo_url`); absent for a local `source_path`
        gen/<n>/graph.db   built generations (memhub.store.sqlite.graph); the database says which is current

A build writes `gen/<build seq>/graph.db` from the previous generation's file and then flips the row,
so the directory of the current generation is never written again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memhub.knowledge.storage import ResourceFiles

CHECKOUT_DIR = "checkout"
GRAPH_FILE = "graph.db"


@dataclass(frozen=True, slots=True)
class CodeGraphFiles(ResourceFiles):
    """The directory tree of every code graph under one data dir."""

    def graph_dir(self, service_id: str, code_graph_id: str) -> Path:
        """The code graph's own directory."""
        return self.resource_dir(service_id, code_graph_id)

    def checkout_dir(self, service_id: str, code_graph_id: str) -> Path:
        """Where a git source is cloned."""
        return self.graph_dir(service_id, code_graph_id) / CHECKOUT_DIR

    def generation_db(self, service_id: str, code_graph_id: str, generation: int) -> Path:
        """One built generation's database file."""
        return self.generation_dir(service_id, code_graph_id, generation) / GRAPH_FILE
