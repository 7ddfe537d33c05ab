"""Where a code graph's files live.

    <data_dir>/knowledge/<service id, %-encoded>/<code graph id>/
        checkout/          the clone of a git source (`repo_url`); absent for a local `source_path`
        gen/<n>/graph.db   built generations (memhub.store.sqlite.graph); the database says which is current

A build writes `gen/<build seq>/graph.db` from the previous generation's file and then flips the row,
so the directory of the current generation is never written again.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memhub.knowledge.tenant_dirs import tenant_dir, tenants

CHECKOUT_DIR = "checkout"
GEN_DIR = "gen"
GRAPH_FILE = "graph.db"


@dataclass(frozen=True, slots=True)
class CodeGraphFiles:
    """The directory tree of every code graph under one data dir."""

    root: Path

    def graph_dir(self, service_id: str, code_graph_id: str) -> Path:
        """The code graph's own directory."""
        return self.root / tenant_dir(service_id) / code_graph_id

    def checkout_dir(self, service_id: str, code_graph_id: str) -> Path:
        """Where a git source is cloned."""
        return self.graph_dir(service_id, code_graph_id) / CHECKOUT_DIR

    def generation_db(self, service_id: str, code_graph_id: str, generation: int) -> Path:
        """One built generation's database file."""
        return self.graph_dir(service_id, code_graph_id) / GEN_DIR / str(generation) / GRAPH_FILE

    def tenants(self) -> Iterator[str]:
        """Service ids that have any knowledge files (used to resume builds after a restart)."""
        return tenants(self.root)

    def prune_generations(self, service_id: str, code_graph_id: str, keep: int) -> None:
        """Remove every generation directory but `keep` (older ones and leftovers of failed builds)."""
        gens = self.graph_dir(service_id, code_graph_id) / GEN_DIR
        if gens.is_dir():
            for entry in gens.iterdir():
                if entry.name != str(keep):
                    shutil.rmtree(entry, ignore_errors=True)

    def remove_generation(self, service_id: str, code_graph_id: str, generation: int) -> None:
        """Remove one generation directory (a build that was superseded)."""
        shutil.rmtree(self.generation_db(service_id, code_graph_id, generation).parent, ignore_errors=True)

    def remove_graph(self, service_id: str, code_graph_id: str) -> None:
        """Delete everything of one code graph."""
        shutil.rmtree(self.graph_dir(service_id, code_graph_id), ignore_errors=True)
