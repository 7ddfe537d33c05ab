"""The per-tenant directories under `<data_dir>/knowledge/`, shared by the wiki and code-graph services.

    <data_dir>/knowledge/<service id, %-encoded>/<resource id>/

A resource id (`wiki-…`, `cg-…`) is unique per service, so both services share one tenant directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, unquote


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
