"""The skill service: create, change, read and export versioned skills, for the HTTP routes and skill mining.

Every write appends an immutable version through the store's compare-and-set (`expected_version` against
the head, in the write's transaction), so of two writers holding the same version one wins and the other
gets SKILL_VERSION_STALE with the head's version. A write that changes nothing appends nothing and says so
(`changed: false`). Access is decided by memhub.knowledge.skill.access before anything is read or written.

A version written by someone who does not review the owner agent's skills (memhub.knowledge.skill.access) is a
draft: a new skill is created `candidate`, and a change to a published skill makes its new head `candidate` again,
so the skill leaves every prompt but its author's until a reviewer publishes the new version.
"""

from __future__ import annotations

import base64
import logging
import secrets
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memhub.knowledge.skill.access import Actor, SkillAccess, SkillIds
from memhub.knowledge.skill.assets import asset_id_taken, register_skill_asset, remove_skill_asset
from memhub.knowledge.skill.config import SkillConfig
from memhub.knowledge.skill.errors import (
    ExportTooLarge,
    InvalidFrontmatter,
    PatchNotUnique,
    SkillBadRequest,
    SkillIdCollision,
    SkillNameDuplicate,
    SkillNotFound,
    SkillNotOwner,
    SkillVersionExpired,
    SkillVersionStale,
    StorageNotFound,
)
from memhub.knowledge.skill.files import ResourcePayload, check_kept, check_path, check_total, decode_files
from memhub.knowledge.skill.format import SkillDocument, content_hash, parse_skill
from memhub.knowledge.skill.views import build_zip, detail, summary, versions_item
from memhub.meta import audit
from memhub.meta.caller import Caller
from memhub.model.skills import (
    BlobMissing,
    IdTaken,
    NameTaken,
    NewSkillVersion,
    SkillFile,
    SkillFilter,
    SkillMissing,
    SkillStatus,
    SkillVersion,
    VersionStale,
)
from memhub.store.meta import MetaStore, MetaWriter
from memhub.store.skills import SkillStore
from memhub.timeutil import now_ms

log = logging.getLogger(__name__)

SKILL_ID_PREFIX = "skl-"
_BASE62 = string.digits + string.ascii_letters
ID_ATTEMPTS = 3
DEFAULT_OWNER_AGENT = "default"  # the original's owner when a request names no agent
DEFAULT_PAGE = 50
PUBLISH_ACTION = "skill/publish"  # the audit log's action of a publish


def new_skill_id() -> str:
    """`skl-` + 12 base62 characters from the system's CSPRNG (71 bits), as the original."""
    return SKILL_ID_PREFIX + "".join(secrets.choice(_BASE62) for _ in range(12))


def _unchanged(head: SkillVersion, content: str, files: Sequence[SkillFile]) -> bool:
    return content_hash(content) == head.content_hash and tuple(files) == head.files


@dataclass
class SkillService:
    """Skills of every tenant, over the skill store and the meta store (assets, access)."""

    skills: SkillStore
    meta: MetaStore
    config: SkillConfig = field(default_factory=SkillConfig)
    clock: Callable[[], int] = now_ms
    new_id: Callable[[], str] = new_skill_id

    @property
    def access(self) -> SkillAccess:
        """The access rules over this service's meta store."""
        return SkillAccess(self.meta)

    # -- writes ----------------------------------------------------------------------------------
    def create(
        self,
        caller: Caller,
        ids: SkillIds,
        name: str,
        content: str,
        resources: Sequence[ResourcePayload] = (),
        metadata: Mapping[str, Any] | None = None,
        *,
        status: SkillStatus = "active",
    ) -> dict[str, Any]:
        """Version 1 of a new skill; its asset is registered and bound when the owner agent is a meta agent.

        Written by someone who does not review the owner agent's skills, it is a draft (`candidate`) whatever
        `status` asks for.
        """
        actor = self.access.actor(caller, ids, write=True)
        doc = self._parse(content)
        if doc.name != name:
            raise InvalidFrontmatter(f"front matter name '{doc.name}' != name '{name}'")
        decoded = decode_files(resources, "resources", self.config)
        check_total([d.entry for d in decoded], self.config)
        agent = self.access.owner_agent(actor)
        team_id, owner_agent_id = actor.ids.team_id or "", actor.ids.agent_id or DEFAULT_OWNER_AGENT
        if status == "active" and not self.access.trusted_write(actor, team_id, owner_agent_id):
            status = "candidate"  # a draft until a reviewer publishes it
        new = NewSkillVersion(
            team_id=team_id,
            owner_agent_id=owner_agent_id,
            user_id=actor.ids.user_id or "",
            task_id=actor.ids.task_id or "",
            name=name,
            description=doc.description,
            content=content,
            content_hash=content_hash(content),
            files=tuple(d.entry for d in decoded),
            metadata=dict(metadata or {}),
            status=status,
            blobs={d.entry.sha256: d.data for d in decoded},
        )
        service_id = caller.service_id
        created = self._create_with_fresh_id(service_id, new)
        if agent is not None:
            try:
                with self.meta.writing(service_id) as w:
                    register_skill_asset(w, agent, created.skill_id, created.name)
            except BaseException:
                # No skill without its asset: undo the version before reporting the failure.
                self.skills.delete(service_id, created.skill_id, created.version)
                raise
        return summary(created)

    def _create_with_fresh_id(self, service_id: str, new: NewSkillVersion) -> SkillVersion:
        for _ in range(ID_ATTEMPTS):
            skill_id = self.new_id()
            with self.meta.reading(service_id) as r:
                if asset_id_taken(r, skill_id):
                    continue
            try:
                return self.skills.create(service_id, skill_id, new, self.clock())
            except IdTaken:
                continue
            except NameTaken as exc:
                raise SkillNameDuplicate(
                    f"skill '{new.name}' already exists for agent {new.owner_agent_id} ({exc.skill_id})"
                ) from None
        raise SkillIdCollision(f"failed to generate a unique skill_id after {ID_ATTEMPTS} attempts")

    def update(
        self,
        caller: Caller,
        ids: SkillIds,
        skill_id: str,
        expected_version: int,
        content: str,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Replace SKILL.md (and the metadata, when given); the name may not change."""
        actor, head = self._writable(caller, ids, skill_id, expected_version)
        doc = self._parse(content)
        if doc.name != head.name:
            raise InvalidFrontmatter("name change is not allowed across versions")
        return self._append(actor, head, expected_version, content, doc.description, head.files, metadata=metadata)

    def patch(
        self,
        caller: Caller,
        ids: SkillIds,
        skill_id: str,
        expected_version: int,
        old_string: str,
        new_string: str,
        replace_all: bool = False,
    ) -> dict[str, Any]:
        """Replace one occurrence of `old_string` in SKILL.md (every one with `replace_all`)."""
        actor, head = self._writable(caller, ids, skill_id, expected_version)
        if not old_string:
            raise SkillBadRequest("old_string", "must not be empty")
        found = head.content.count(old_string)
        if found == 0:
            raise PatchNotUnique("old_string not found")
        if found > 1 and not replace_all:
            raise PatchNotUnique(f"old_string occurs {found} times; pass replace_all=true to replace all")
        content = head.content.replace(old_string, new_string, -1 if replace_all else 1)
        doc = self._parse(content)
        if doc.name != head.name:
            raise InvalidFrontmatter("patch attempted to rename skill")
        return self._append(actor, head, expected_version, content, doc.description, head.files)

    def write_files(
        self, caller: Caller, ids: SkillIds, skill_id: str, expected_version: int, files: Sequence[ResourcePayload]
    ) -> dict[str, Any]:
        """Add or replace resource files; the others stay as they are."""
        actor, head = self._writable(caller, ids, skill_id, expected_version)
        decoded = decode_files(files, "files", self.config)
        written = {d.entry.path: d.entry for d in decoded}
        kept = [f for f in head.files if f.path not in written]
        check_kept(decoded, kept, "files")
        manifest = kept + [d.entry for d in decoded]
        check_total(manifest, self.config)
        blobs = {d.entry.sha256: d.data for d in decoded}
        return self._append(actor, head, expected_version, head.content, head.description, manifest, blobs)

    def remove_files(
        self, caller: Caller, ids: SkillIds, skill_id: str, expected_version: int, paths: Sequence[str]
    ) -> dict[str, Any]:
        """Remove resource files; a path that is no file of the head is refused (nothing is removed)."""
        actor, head = self._writable(caller, ids, skill_id, expected_version)
        present = {f.path for f in head.files}
        for i, path in enumerate(paths):
            check_path(path, f"paths[{i}]")
            if path not in present:
                raise SkillNotFound(f"paths[{i}]: {path} is not a file of version {head.version}")
        gone = set(paths)
        manifest = [f for f in head.files if f.path not in gone]
        return self._append(actor, head, expected_version, head.content, head.description, manifest)

    def delete(self, caller: Caller, ids: SkillIds, skill_id: str, expected_version: int) -> dict[str, Any]:
        """Every version of the skill, then its asset with its bindings and ACL entries."""
        _, head = self._writable(caller, ids, skill_id, expected_version)
        service_id = caller.service_id
        try:
            self.skills.delete(service_id, head.skill_id, expected_version)
        except VersionStale as exc:
            raise SkillVersionStale(expected_version, exc.current_version) from None
        except SkillMissing:
            raise SkillNotFound(f"no skill {skill_id}") from None
        with self.meta.writing(service_id) as w:
            remove_skill_asset(w, head.skill_id)
        return {"skill_id": head.skill_id, "archived": True}

    def publish(self, caller: Caller, ids: SkillIds, skill_id: str, expected_version: int) -> dict[str, Any]:
        """A draft head (`candidate`) becomes `active`, with an audit entry naming who published it, in one
        transaction; an active head is answered unchanged. Only a reviewer publishes (SkillNotOwner otherwise)."""
        actor = self.access.actor(caller, ids, write=True)
        head = self.access.check_write(actor, self._live_head(caller.service_id, skill_id), skill_id)
        if not self.access.may_publish(actor, head):
            raise SkillNotOwner(
                f"only the owner of agent {head.owner_agent_id} or an admin of team {head.team_id} may publish it"
            )
        if head.version != expected_version:
            raise SkillVersionStale(expected_version, head.version)
        if head.status == "active":
            return {**summary(head), "changed": False}

        def audited(w: MetaWriter) -> None:
            detail = {
                "version": head.version,
                "name": head.name,
                "team_id": head.team_id,
                "owner_agent_id": head.owner_agent_id,
                "author_user_id": head.user_id or None,
            }
            audit.record(w, caller, PUBLISH_ACTION, [head.skill_id], detail)

        try:
            published = self.skills.set_status(
                caller.service_id, head.skill_id, expected_version, "active", self.clock(), alongside=audited
            )
        except VersionStale as exc:
            raise SkillVersionStale(expected_version, exc.current_version) from None
        except SkillMissing:
            raise SkillNotFound(f"no skill {skill_id}") from None
        except NameTaken as exc:
            raise SkillNameDuplicate(
                f"skill '{head.name}' already exists for agent {head.owner_agent_id} ({exc.skill_id})"
            ) from None
        return {**summary(published), "changed": True}

    # -- reads -----------------------------------------------------------------------------------
    def get(
        self,
        caller: Caller,
        ids: SkillIds,
        skill_id: str,
        version: int | None = None,
        include_content: bool = True,
        include_manifest: bool = True,
    ) -> dict[str, Any]:
        """The head (or one version) with its content and manifest."""
        actor = self.access.actor(caller, ids)
        head = self.access.check_read(actor, self._live_head(caller.service_id, skill_id), skill_id)
        row = self._version_of(head, version)
        return detail(row, include_content=include_content, include_manifest=include_manifest)

    def get_by_name(
        self,
        caller: Caller,
        ids: SkillIds,
        skill_name: str,
        version: int | None = None,
        include_content: bool = True,
        include_manifest: bool = True,
    ) -> dict[str, Any]:
        """The live skill of (team, agent) with this name, as `get`."""
        actor = self.access.actor(caller, ids)
        team_id, agent_id = actor.ids.team_id or "", actor.ids.agent_id or ""
        head = self.skills.head_by_name(caller.service_id, team_id, agent_id, skill_name)
        if head is None or not self.access.may_read(actor, head):
            raise SkillNotFound(f'no skill named "{skill_name}" for agent {agent_id}')
        row = self._version_of(head, version)
        return detail(row, include_content=include_content, include_manifest=include_manifest)

    def list(
        self,
        caller: Caller,
        ids: SkillIds,
        *,
        owner_agent_id: str | None = None,
        name_prefix: str | None = None,
        statuses: Sequence[SkillStatus] | None = None,
        limit: int = DEFAULT_PAGE,
        offset: int = 0,
    ) -> dict[str, Any]:
        """A page of head versions the caller may read, most recently updated first, and their total."""
        actor = self.access.actor(caller, ids)
        flt = self.filter_for(actor, owner_agent_id=owner_agent_id, name_prefix=name_prefix, statuses=statuses)
        rows, total = self.skills.list_heads(caller.service_id, flt, limit, offset)
        return {"items": [summary(r) for r in rows], "total": total}

    def filter_for(
        self,
        actor: Actor,
        *,
        owner_agent_id: str | None = None,
        name_prefix: str | None = None,
        statuses: Sequence[SkillStatus] | None = None,
    ) -> SkillFilter:
        """Which heads an actor's listing or search considers (the original's rules, then access)."""
        ids = actor.ids
        owner = owner_agent_id or ids.agent_id
        return SkillFilter(
            team_id=ids.team_id or None,
            owner_agent_ids=[owner] if owner else None,
            # Without a team the original narrows by the writing user instead.
            user_id=None if ids.team_id else ids.user_id,
            name_prefix=name_prefix,
            statuses=tuple(statuses) if statuses else ("active",),
            reader=self.access.reader(actor),
        )

    def versions(
        self, caller: Caller, ids: SkillIds, skill_id: str, limit: int = DEFAULT_PAGE, offset: int = 0
    ) -> dict[str, Any]:
        """A page of the skill's versions, newest first, each saying whether the TTL expired it."""
        actor = self.access.actor(caller, ids)
        head = self.skills.head(caller.service_id, skill_id)
        if head is None or head.status == "archived" or not self.access.may_read(actor, head):
            raise SkillNotFound("skill not found")
        rows, total = self.skills.versions(caller.service_id, skill_id, limit, offset)
        return {"items": [versions_item(r, self._expired(r)) for r in rows], "total": total}

    def read_file(
        self,
        caller: Caller,
        ids: SkillIds,
        skill_id: str,
        path: str,
        version: int | None = None,
        encoding: str = "utf-8",
    ) -> dict[str, Any]:
        """One resource file of the head (or a version), as UTF-8 text or base64."""
        check_path(path, "path")
        actor = self.access.actor(caller, ids)
        head = self.access.check_read(actor, self._live_head(caller.service_id, skill_id), skill_id)
        if version is not None and version != head.version:
            target = self.skills.version(caller.service_id, skill_id, version)
            if target is None:
                raise StorageNotFound(
                    f"version {version} not found (may have been purged); current head is v{head.version}"
                )
            self._check_not_expired(target, head.version)
        else:
            target = head
        entry = next((f for f in target.files if f.path == path), None)
        if entry is None:
            raise SkillNotFound(f"path {path} not in manifest of v{target.version}")
        data = self._blob(caller.service_id, entry)
        if encoding == "base64":
            content = base64.b64encode(data).decode("ascii")
        else:
            try:
                content = data.decode("utf-8")
            except UnicodeDecodeError:
                raise SkillBadRequest("encoding", "the file is not UTF-8 text; read it with encoding base64") from None
        return {
            "path": path,
            "content": content,
            "encoding": encoding,
            "size_bytes": entry.size_bytes,
            "mime_type": entry.mime_type,
            "version": target.version,
        }

    def export(self, caller: Caller, ids: SkillIds, skill_id: str, version: int | None = None) -> dict[str, Any]:
        """The version as a zip (`<name>/SKILL.md` and its files), base64 in JSON."""
        actor = self.access.actor(caller, ids)
        head = self.access.check_read(actor, self._live_head(caller.service_id, skill_id), skill_id)
        target = self._version_of(head, version)
        service_id = caller.service_id
        zipped, count, warnings = build_zip(target, lambda f: self.skills.read_blob(service_id, f.sha256))
        if len(zipped) > self.config.max_export_bytes:
            raise ExportTooLarge(f"exported zip {len(zipped)} bytes exceeds max {self.config.max_export_bytes} bytes")
        return {
            "zip_base64": base64.b64encode(zipped).decode("ascii"),
            "filename": f"{target.name}.zip",
            "name": target.name,
            "version": target.version,
            "file_count": count,
            "total_bytes": len(zipped),
            "warnings": warnings,
        }

    # -- helpers ---------------------------------------------------------------------------------
    def _parse(self, content: str) -> SkillDocument:
        return parse_skill(content, self.config)

    def _live_head(self, service_id: str, skill_id: str) -> SkillVersion | None:
        head = self.skills.head(service_id, skill_id)
        return head if head is not None and head.status != "archived" else None

    def _writable(
        self, caller: Caller, ids: SkillIds, skill_id: str, expected_version: int
    ) -> tuple[Actor, SkillVersion]:
        actor = self.access.actor(caller, ids, write=True)
        head = self.access.check_write(actor, self._live_head(caller.service_id, skill_id), skill_id)
        if head.version != expected_version:
            raise SkillVersionStale(expected_version, head.version)
        return actor, head

    def _append(
        self,
        actor: Actor,
        head: SkillVersion,
        expected_version: int,
        content: str,
        description: str,
        files: Sequence[SkillFile],
        blobs: Mapping[str, bytes] | None = None,
        *,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        if _unchanged(head, content, files) and (metadata is None or dict(metadata) == dict(head.metadata)):
            return {**summary(head), "changed": False}
        status = head.status
        if status == "active" and not self.access.trusted_write(actor, head.team_id, head.owner_agent_id):
            # Unreviewed text must not reach prompts by way of a published skill: the new head is a draft again.
            status = "candidate"
        ids = actor.ids
        new = NewSkillVersion(
            team_id=head.team_id,
            owner_agent_id=head.owner_agent_id,
            user_id=ids.user_id or "",
            task_id=ids.task_id or head.task_id,
            name=head.name,
            description=description,
            content=content,
            content_hash=content_hash(content),
            files=tuple(files),
            metadata=head.metadata if metadata is None else dict(metadata),
            status=status,
            blobs=dict(blobs or {}),
        )
        service_id = actor.caller.service_id
        try:
            written = self.skills.append(service_id, head.skill_id, expected_version, new, self.clock())
        except VersionStale as exc:
            raise SkillVersionStale(expected_version, exc.current_version) from None
        except SkillMissing:
            raise SkillNotFound(f"no skill {head.skill_id}") from None
        except BlobMissing as exc:  # a file kept from the head lost its bytes (purged meanwhile)
            raise StorageNotFound(f"the bytes of file {exc.sha256} are missing from storage") from None
        self._purge_expired(service_id, head.skill_id)
        return {**summary(written), "changed": True}

    def _purge_expired(self, service_id: str, skill_id: str) -> None:
        ttl = self.config.version_ttl_ms
        if not ttl:
            return
        try:
            self.skills.purge_versions(service_id, skill_id, self.clock() - ttl)
        except Exception:  # the write succeeded; the next one purges again
            log.warning("purging expired versions of %s failed", skill_id, exc_info=True)

    def _version_of(self, head: SkillVersion, version: int | None) -> SkillVersion:
        if version is None or version == head.version:
            return head
        row = self.skills.version(head.service_id, head.skill_id, version)
        if row is None:
            raise SkillNotFound(f"version {version} not found (may have been purged); current head is v{head.version}")
        self._check_not_expired(row, head.version)
        return row

    def _expired(self, v: SkillVersion) -> bool:
        ttl = self.config.version_ttl_ms
        return bool(ttl) and not v.is_head and self.clock() - v.created_ms > ttl

    def _check_not_expired(self, v: SkillVersion, head_version: int) -> None:
        if not self._expired(v):
            return
        age_days = (self.clock() - v.created_ms) / 86_400_000
        raise SkillVersionExpired(
            f"Skill '{v.name}' version v{v.version} has expired (created {age_days:.1f} days ago, "
            f"TTL is {self.config.version_ttl_days:g} days). Please use the latest version v{head_version}.",
            head_version,
        )

    def _blob(self, service_id: str, entry: SkillFile) -> bytes:
        data = self.skills.read_blob(service_id, entry.sha256)
        if data is None:
            raise StorageNotFound(f"the bytes of {entry.path} are missing from storage")
        return data
