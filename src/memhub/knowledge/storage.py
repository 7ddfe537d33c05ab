"""Where knowledge resources keep their files: one directory per tenant, one per resource under it.

    <data_dir>/knowledge/<service id, %-encoded>/<resource id>/
        gen/<n>/      built generations (each kind writes its own layout inside); the database says which is current

A resource id (`wiki-…`, `cg-…`) is unique per service, so every kind shares one tenant directory. Each kind's
`storage.py` adds its own sub-directories (a wiki's uploads, a code graph's checkout) to `ResourceFiles`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

GEN_DIR = "gen"


def tenant_dir(service_id: str) -> str:
    """The directory name of a service id.

    Service ids are printable text: '/', '%' and '.' are encoded (quote keeps '.' as is, so it is done
    by hand) so that no id, not even "." or "..", can name a directory outside the knowledge root.
    """
    return quote(service_id, safe="-_").replace(".", "%2E")


def tenants(root: Path) -> Iterator[str]:
    """Service ids that have any knowledge files under `root` (used to resume builds after a restart)."""
    if root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.is_dir():
                yield unquote(entry.name)


@dataclass(frozen=True, slots=True)
class ResourceFiles:
    """The directory tree of every resource of one kind under one data dir."""

    root: Path

    def resource_dir(self, service_id: str, resource_id: str) -> Path:
        """The resource's own directory."""
        return self.root / tenant_dir(service_id) / resource_id

    def generation_dir(self, service_id: str, resource_id: str, generation: int) -> Path:
        """One built generation's directory."""
        return self.resource_dir(service_id, resource_id) / GEN_DIR / str(generation)

    def tenants(self) -> Iterator[str]:
        """Service ids that have any knowledge files (used to resume builds after a restart)."""
        return tenants(self.root)

    def prune_generations(self, service_id: str, resource_id: str, keep: int) -> None:
        """Remove every generation directory but `keep` (older ones and leftovers of failed builds)."""
        gens = self.resource_dir(service_id, resource_id) / GEN_DIR
        if gens.is_dir():
            for entry in gens.iterdir():
                if entry.name != str(keep):
                    shutil.rmtree(entry, ignore_errors=True)

    def remove_generation(self, service_id: str, resource_id: str, generation: int) -> None:
        """Remove one generation directory (a build that was superseded)."""
        shutil.rmtree(self.generation_dir(service_id, resource_id, generation), ignore_errors=True)

    def remove(self, service_id: str, resource_id: str) -> None:
        """Delete everything of one resource."""
        shutil.rmtree(self.resource_dir(service_id, resource_id), ignore_errors=True)
