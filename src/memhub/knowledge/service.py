"""What every kind's service shares: its settings, finding a row the caller may see, a team's listing, ids,
deletion, and the build lifecycle (resume at start, wait, close).

A kind's service (`knowledge/<kind>/service.py`) subclasses `ResourceService`, names its `ResourceKind` in
`KIND`, builds its `builds` (a `memhub.knowledge.builds.ResourceBuilds`) and adds its own management rules,
its wire `detail` and its tools (`tool_view`, `call_tool`). The access rules are memhub.knowledge.access's,
the same for every kind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from memhub.knowledge.access import delete_batch, require_member, visible
from memhub.knowledge.build_queue import QueueLimits
from memhub.knowledge.builds import ResourceBuilds
from memhub.knowledge.kind import ResourceKind
from memhub.knowledge.source_roots import local_source_dir
from memhub.knowledge.storage import ResourceFiles
from memhub.meta.caller import Caller
from memhub.meta.keys import random_base36
from memhub.model.meta import MetaKind, Row
from memhub.store.meta import MetaReader, MetaStore, MetaWriter


@dataclass(frozen=True, slots=True)
class ResourceConfig:
    """A kind's settings: where its files live, the URL agents reach it at, the local folders it may read, and
    its build queue's limits."""

    files_root: Path
    public_url: str
    source_roots: tuple[Path, ...] = ()
    builds: QueueLimits = field(default_factory=QueueLimits)


@dataclass
class ResourceService:
    """The resources of one kind, for every tenant of one data dir."""

    KIND: ClassVar[ResourceKind]
    # The setting that lists the local folders this kind may read (named in the 403 for a folder outside them).
    ROOTS_SETTING: ClassVar[str]

    store: MetaStore
    config: ResourceConfig
    files: ResourceFiles = field(init=False)
    builds: ResourceBuilds[Any, Any] = field(init=False)

    # -- rows and access ---------------------------------------------------------------------------------

    def _row(self, r: MetaReader, caller: Caller, resource_id: str) -> Row:
        self.KIND.check_id(resource_id)
        row = r.get(self.KIND.meta_kind, resource_id)
        if row is None or not visible(r, caller, row):
            raise self.KIND.not_found(resource_id)
        return row

    def _team_guard(self, r: MetaReader, caller: Caller, team_id: str) -> None:
        require_member(r, caller, team_id)

    def row(self, caller: Caller, resource_id: str) -> Row:
        """The resource's row, if the caller may see it."""
        with self.store.reading(caller.service_id) as r:
            return self._row(r, caller, resource_id)

    def detail(self, row: Row) -> Row:
        """The resource on the wire."""
        raise NotImplementedError

    def _local_source(self, source_path: str) -> str:
        return local_source_dir(source_path, self.config.source_roots, self.ROOTS_SETTING)

    def _new_id(self, r: MetaReader) -> str:
        while True:
            resource_id = f"{self.KIND.id_prefix}-{random_base36(8)}"
            if r.get(self.KIND.meta_kind, resource_id) is None:
                return resource_id

    # -- management ------------------------------------------------------------------------------------

    def list(self, caller: Caller, team_id: str, status: str | None, limit: int, offset: int) -> Row:
        """`<kind>/list`: the team's resources, newest first."""
        kind = self.KIND
        where: dict[str, Any] = {"team_id": team_id}
        if status is not None:
            where["status"] = status
        with self.store.reading(caller.service_id) as r:
            self._team_guard(r, caller, team_id)
            order = ("-created_at", kind.id_field)
            rows = r.find(kind.meta_kind, where, order_by=order, limit=limit, offset=offset)
            total = r.count(kind.meta_kind, where)
        return {"items": [self.detail(x) for x in rows], "total": total}

    def get(self, caller: Caller, resource_id: str) -> Row:
        """`<kind>/get`."""
        return self.detail(self.row(caller, resource_id))

    def _drop(self, w: MetaWriter, resource_id: str) -> None:
        """Remove one resource's rows, its registry entry included (inside the delete's transaction)."""
        w.delete(MetaKind.KNOWLEDGE, {"knowledge_id": resource_id})
        w.delete(self.KIND.meta_kind, {self.KIND.id_field: resource_id})

    def _forget(self, service_id: str, resource_id: str) -> None:
        """Drop what is loaded of a deleted resource (its cached generation)."""

    def delete(self, caller: Caller, resource_ids: Sequence[str]) -> Row:
        """`<kind>/delete`, in any state: `{deleted_ids, failed:[{id, reason}]}`; files go after the commit
        (a build still running finds its resource gone and discards what it made)."""
        kind = self.KIND
        with self.store.writing(caller.service_id) as w:
            deleted, failed = delete_batch(
                w,
                caller,
                resource_ids,
                kind=kind.meta_kind,
                id_pattern=kind.id_re,
                drop=self._drop,
                action=f"{kind.name}/delete",
            )
        for resource_id in deleted:
            self._forget(caller.service_id, resource_id)
            self.files.remove(caller.service_id, resource_id)
        return {"deleted_ids": deleted, "failed": failed}

    # -- builds ------------------------------------------------------------------------------------------

    def resume(self) -> int:
        """At start: queue again the builds a previous process left pending or running (how many are
        returned), and point registrations of this server's resources at its current public URL."""
        return self.builds.resume()

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until queued builds are done (tests, shutdown)."""
        self.builds.wait_idle(timeout)

    def close(self) -> None:
        """Finish the running builds; queued ones stay `pending` and resume at the next start."""
        self.builds.close()
