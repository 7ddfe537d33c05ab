"""The skill store contract: versions with compare-and-set, files by content hash, the search channels over heads,
and the mining buffers whose archives always come with their pipeline job."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from memhub.index.tokenize import query_terms
from memhub.model import EmbeddingModel
from memhub.model.skills import (
    ArchiveDraft,
    BlobMissing,
    BufferState,
    BufferUpdate,
    BufferWrite,
    IdTaken,
    KeyReused,
    NameTaken,
    NewSkillVersion,
    SessionKey,
    SkillFile,
    SkillFilter,
    SkillMissing,
    SkillReader,
    SkillStatus,
    VersionStale,
)
from memhub.store import MemoryStore

SVC = "svc"
DIM = 4
MODEL = EmbeddingModel("test:fixed", DIM)


def draft(
    name: str = "pdf-extract",
    description: str = "Extract text and tables from PDF files",
    body: str = "Run the script on the file.",
    *,
    team: str = "team",
    owner: str = "agent",
    user: str = "alice",
    files: Mapping[str, bytes] | None = None,
    status: SkillStatus = "active",
    send_bytes: bool = True,
) -> NewSkillVersion:
    files = files or {}
    content = f"---\nname: {name}\ndescription: {description}\n---\n{body}"
    manifest = tuple(
        SkillFile(path, hashlib.sha256(data).hexdigest(), len(data), "text/plain", path.endswith(".sh"))
        for path, data in sorted(files.items())
    )
    blobs = {hashlib.sha256(data).hexdigest(): data for data in files.values()} if send_bytes else {}
    return NewSkillVersion(
        team_id=team,
        owner_agent_id=owner,
        user_id=user,
        task_id="",
        name=name,
        description=description,
        content=content,
        content_hash=hashlib.md5(content.encode()).hexdigest(),
        files=manifest,
        metadata={"source": "test"},
        status=status,
        blobs=blobs,
    )


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def ids(versions: Sequence[object]) -> list[str]:
    return [v.skill_id for v in versions]  # type: ignore[attr-defined]


# -- versions ------------------------------------------------------------------------------------------
def test_create_append_and_read_versions(store: MemoryStore) -> None:
    skills = store.skills
    v1 = skills.create(SVC, "skl-a", draft(files={"run.sh": b"echo 1"}), 1_000)
    assert (v1.version, v1.is_head, v1.status, v1.created_ms) == (1, True, "active", 1_000)
    assert v1.files == (SkillFile("run.sh", sha(b"echo 1"), 6, "text/plain", True),)
    assert v1.metadata == {"source": "test"}
    v2 = skills.append(SVC, "skl-a", 1, draft(body="Run it twice.", files={"run.sh": b"echo 2"}), 2_000)
    assert (v2.version, v2.is_head, v2.created_ms) == (2, True, 2_000)
    head = skills.head(SVC, "skl-a")
    assert head == v2
    old = skills.version(SVC, "skl-a", 1)
    assert old is not None and not old.is_head and old.files == v1.files and old.content == v1.content
    assert skills.version(SVC, "skl-a", 3) is None
    page, total = skills.versions(SVC, "skl-a", 1, 0)
    assert total == 2 and [v.version for v in page] == [2]
    page, _ = skills.versions(SVC, "skl-a", 10, 1)
    assert [v.version for v in page] == [1]
    assert skills.head(SVC, "skl-missing") is None
    assert skills.read_blob(SVC, sha(b"echo 1")) == b"echo 1"


def test_an_existing_id_is_refused_whatever_its_status(store: MemoryStore) -> None:
    store.skills.create(SVC, "skl-a", draft(), 1_000)
    store.skills.set_status(SVC, "skl-a", 1, "archived", 2_000)
    with pytest.raises(IdTaken):
        store.skills.create(SVC, "skl-a", draft(name="other"), 3_000)


def test_one_live_head_per_name_and_an_archived_head_frees_it(store: MemoryStore) -> None:
    skills = store.skills
    skills.create(SVC, "skl-a", draft(), 1_000)
    with pytest.raises(NameTaken) as taken:
        skills.create(SVC, "skl-b", draft(), 1_000)
    assert taken.value.skill_id == "skl-a"
    # Another owner agent, another team: their own namespaces.
    skills.create(SVC, "skl-c", draft(owner="agent-2"), 1_000)
    skills.create(SVC, "skl-d", draft(team="team-2"), 1_000)
    # A rename onto a taken name is refused as well, and changes nothing.
    skills.create(SVC, "skl-e", draft(name="csv-merge"), 1_000)
    with pytest.raises(NameTaken):
        skills.append(SVC, "skl-e", 1, draft(), 2_000)
    assert skills.head(SVC, "skl-e").version == 1  # type: ignore[union-attr]
    skills.set_status(SVC, "skl-a", 1, "archived", 2_000)
    assert skills.head_by_name(SVC, "team", "agent", "pdf-extract") is None
    skills.create(SVC, "skl-b", draft(), 3_000)
    assert skills.head_by_name(SVC, "team", "agent", "pdf-extract").skill_id == "skl-b"  # type: ignore[union-attr]
    # Bringing the archived one back would make two live heads share the name.
    with pytest.raises(NameTaken):
        skills.set_status(SVC, "skl-a", 1, "active", 4_000)
    # A candidate is live too: it holds its name.
    with pytest.raises(NameTaken):
        skills.create(SVC, "skl-f", draft(status="candidate"), 4_000)


def test_compare_and_set_refusals(store: MemoryStore) -> None:
    skills = store.skills
    skills.create(SVC, "skl-a", draft(), 1_000)
    skills.append(SVC, "skl-a", 1, draft(body="v2"), 2_000)
    for write in (
        lambda: skills.append(SVC, "skl-a", 1, draft(body="late"), 3_000),
        lambda: skills.set_status(SVC, "skl-a", 1, "archived", 3_000),
        lambda: skills.delete(SVC, "skl-a", 1),
    ):
        with pytest.raises(VersionStale) as stale:
            write()
        assert stale.value.current_version == 2
    for write in (
        lambda: skills.append(SVC, "skl-x", 1, draft(), 3_000),
        lambda: skills.set_status(SVC, "skl-x", 1, "archived", 3_000),
        lambda: skills.delete(SVC, "skl-x", 1),
    ):
        with pytest.raises(SkillMissing):
            write()
    head = skills.head(SVC, "skl-a")
    assert head is not None and (head.version, head.status, head.content) == (2, "active", draft(body="v2").content)


def test_set_status_changes_the_head_in_place(store: MemoryStore) -> None:
    store.skills.create(SVC, "skl-a", draft(status="candidate"), 1_000)
    published = store.skills.set_status(SVC, "skl-a", 1, "active", 5_000)
    assert (published.version, published.status, published.updated_ms, published.created_ms) == (
        1,
        "active",
        5_000,
        1_000,
    )
    assert store.skills.versions(SVC, "skl-a", 10, 0)[1] == 1
    with pytest.raises(ValueError, match="status"):
        store.skills.set_status(SVC, "skl-a", 1, "deleted", 6_000)  # not a status
    assert store.skills.head(SVC, "skl-a").status == "active"  # type: ignore[union-attr]


def test_concurrent_appends_with_the_same_expected_version_one_wins_each_round(store: MemoryStore) -> None:
    skills = store.skills
    skills.create(SVC, "skl-a", draft(body="v1"), 1_000)
    rounds = 25
    barrier = threading.Barrier(2)
    outcomes: list[list[tuple[str, int, object]]] = [[], []]

    def writer(n: int) -> None:
        try:
            for r in range(rounds):
                expected = r + 1  # every round starts from the head the previous round left
                barrier.wait()
                try:
                    v = skills.append(SVC, "skl-a", expected, draft(body=f"round {r} writer {n}"), 2_000 + r)
                    outcomes[n].append(("won", r, v.version))
                except VersionStale as exc:
                    outcomes[n].append(("stale", r, exc.current_version))
                barrier.wait()  # both have tried before the next round
        except BaseException:
            barrier.abort()  # an unexpected error must not leave the other writer waiting forever
            raise

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in range(rounds):
        results = sorted(o for o in (outcomes[0][r], outcomes[1][r]))
        # Exactly one wins, appending version r + 2; the loser is told that version is the head now.
        assert [kind for kind, _, _ in results] == ["stale", "won"]
        assert [value for _, _, value in results] == [r + 2, r + 2]
    page, total = skills.versions(SVC, "skl-a", 100, 0)
    assert total == rounds + 1
    assert sorted(v.version for v in page) == list(range(1, rounds + 2))  # consecutive, none lost
    winners = {o[2]: n for n in range(2) for o in outcomes[n] if o[0] == "won"}
    for v in page[:-1]:
        assert v.content.endswith(f"round {v.version - 2} writer {winners[v.version]}")  # the winner's write
    assert [v for v in page if v.is_head] == [page[0]]


# -- files by hash -------------------------------------------------------------------------------------
def test_unchanged_files_are_stored_once_across_versions(store: MemoryStore) -> None:
    fixed = {f"lib/file{i:02}.py": f"print({i})\n".encode() * 10 for i in range(20)}
    skills = store.skills
    skills.create(SVC, "skl-a", draft(files=fixed), 1_000)
    for n in range(2, 101):
        # Later versions list the same files without sending their bytes again.
        skills.append(SVC, "skl-a", n - 1, draft(body=f"version {n}", files=fixed, send_bytes=False), 1_000 + n)
    assert skills.versions(SVC, "skl-a", 1, 0)[1] == 100
    assert skills.blob_usage(SVC) == (20, sum(len(b) for b in fixed.values()))
    assert skills.version(SVC, "skl-a", 57).files == skills.head(SVC, "skl-a").files  # type: ignore[union-attr]


def test_a_file_without_bytes_or_with_wrong_bytes_is_refused_and_nothing_is_written(store: MemoryStore) -> None:
    skills = store.skills
    with pytest.raises(BlobMissing) as missing:
        skills.create(SVC, "skl-a", draft(files={"a.txt": b"never sent"}, send_bytes=False), 1_000)
    assert missing.value.sha256 == sha(b"never sent")
    bad = draft(files={"a.txt": b"right"})
    wrong = NewSkillVersion(**{**_fields(bad), "blobs": {sha(b"right"): b"wrong"}})
    with pytest.raises(ValueError, match=r"a\.txt"):
        skills.create(SVC, "skl-a", wrong, 1_000)
    doubled = NewSkillVersion(**{**_fields(bad), "files": bad.files * 2})
    with pytest.raises(ValueError, match="twice"):
        skills.create(SVC, "skl-a", doubled, 1_000)
    assert skills.head(SVC, "skl-a") is None and skills.blob_usage(SVC) == (0, 0)
    assert skills.list_heads(SVC, SkillFilter(), 10, 0) == ([], 0)
    assert skills.search_lexical(SVC, SkillFilter(), query_terms("pdf"), 10) == []


def _fields(new: NewSkillVersion) -> dict[str, object]:
    return {name: getattr(new, name) for name in NewSkillVersion.__slots__}  # type: ignore[attr-defined]


def test_delete_removes_every_version_and_the_blobs_no_other_skill_uses(store: MemoryStore) -> None:
    skills = store.skills
    shared, own_1, own_2 = b"shared helper", b"only in v1", b"only in v2"
    skills.create(SVC, "skl-a", draft(files={"h.py": shared, "x.py": own_1}), 1_000)
    skills.append(SVC, "skl-a", 1, draft(files={"h.py": shared, "x.py": own_2}), 2_000)
    skills.create(SVC, "skl-b", draft(name="other", files={"helper.py": shared}), 3_000)
    assert skills.blob_usage(SVC)[0] == 3
    assert skills.delete(SVC, "skl-a", 2) == 2
    assert skills.head(SVC, "skl-a") is None and skills.version(SVC, "skl-a", 1) is None
    assert skills.read_blob(SVC, sha(own_1)) is None and skills.read_blob(SVC, sha(own_2)) is None
    assert skills.read_blob(SVC, sha(shared)) == shared
    assert skills.blob_usage(SVC) == (1, len(shared))
    assert ids([v for v, _ in skills.search_lexical(SVC, SkillFilter(), query_terms("pdf"), 10)]) == ["skl-b"]
    # The id is free again, and so is the name.
    assert skills.create(SVC, "skl-a", draft(), 4_000).version == 1


def test_purge_removes_only_old_versions_that_are_not_the_head(store: MemoryStore) -> None:
    skills = store.skills
    skills.create(SVC, "skl-a", draft(files={"a": b"v1 bytes", "keep": b"kept"}), 1_000)
    skills.append(SVC, "skl-a", 1, draft(files={"a": b"v2 bytes", "keep": b"kept"}), 2_000)
    skills.append(SVC, "skl-a", 2, draft(files={"a": b"v3 bytes", "keep": b"kept"}), 3_000)
    skills.create(SVC, "skl-b", draft(name="old-single"), 500)  # its only version is its head: never purged
    assert skills.purge_versions(SVC, "skl-a", 2_500) == 2
    assert skills.purge_versions(SVC, "skl-b", 2_500) == 0
    assert [v.version for v in skills.versions(SVC, "skl-a", 10, 0)[0]] == [3]
    assert skills.read_blob(SVC, sha(b"v1 bytes")) is None and skills.read_blob(SVC, sha(b"v2 bytes")) is None
    assert skills.read_blob(SVC, sha(b"kept")) == b"kept" and skills.read_blob(SVC, sha(b"v3 bytes"))
    assert skills.head(SVC, "skl-b") is not None
    assert skills.purge_versions(SVC, "skl-a", 10_000) == 0  # the head stays, however old


# -- listing -------------------------------------------------------------------------------------------
def test_filter_semantics(store: MemoryStore) -> None:
    skills = store.skills
    skills.create(SVC, "skl-1", draft(name="pdf-extract", owner="a1", user="u1"), 1_000)
    skills.create(SVC, "skl-2", draft(name="pdf-merge", owner="a2", user="u2"), 2_000)
    skills.create(SVC, "skl-3", draft(name="csv-clean", owner="a1", user="u2", status="candidate"), 3_000)
    skills.create(SVC, "skl-4", draft(name="pdf_x", owner="a1", team="t2"), 4_000)
    skills.create(SVC, "skl-5", draft(name="pdfax", owner="a1"), 5_000)
    skills.create(SVC, "skl-6", draft(name="old", owner="a1"), 6_000)
    skills.set_status(SVC, "skl-6", 1, "archived", 6_500)
    skills.append(SVC, "skl-1", 1, draft(name="pdf-extract", owner="a1", user="u1", body="newer"), 7_000)

    def listed(flt: SkillFilter) -> list[str]:
        page, total = skills.list_heads(SVC, flt, 100, 0)
        assert total == len(page)
        assert skills.head_ids(SVC, flt, 100) == ids(page)  # the ids-only read agrees with the listing
        lines, counted = skills.headlines(SVC, flt, 100)
        assert counted == total and [(h.skill_id, h.version, h.name, h.description) for h in lines] == [
            (v.skill_id, v.version, v.name, v.description) for v in page
        ]
        return ids(page)

    assert listed(SkillFilter()) == ["skl-1", "skl-5", "skl-4", "skl-2"]  # active heads, newest update first
    assert listed(SkillFilter(team_id="team")) == ["skl-1", "skl-5", "skl-2"]
    assert listed(SkillFilter(owner_agent_ids=["a2"])) == ["skl-2"]
    assert listed(SkillFilter(owner_agent_ids=[])) == []
    # Owned by a2, or one of the `also` ids whoever owns them (an agent's bound skills).
    assert listed(SkillFilter(owner_agent_ids=["a2"], also_skill_ids=["skl-5", "skl-6"])) == ["skl-5", "skl-2"]
    assert listed(SkillFilter(owner_agent_ids=[], also_skill_ids=["skl-5"])) == ["skl-5"]
    assert listed(SkillFilter(owner_agent_ids=["a2"], also_skill_ids=["skl-5"], skill_ids=["skl-2"])) == ["skl-2"]
    assert listed(SkillFilter(user_id="u2", statuses=("active", "candidate"))) == ["skl-3", "skl-2"]
    assert listed(SkillFilter(statuses=("archived",))) == ["skl-6"]
    assert listed(SkillFilter(statuses=())) == []
    assert listed(SkillFilter(name_prefix="pdf")) == ["skl-1", "skl-5", "skl-4", "skl-2"]
    # LIKE's metacharacters are taken literally.
    assert listed(SkillFilter(name_prefix="pdf_")) == ["skl-4"]
    assert listed(SkillFilter(name_prefix="pdf%")) == []
    assert listed(SkillFilter(name_prefix="")) == ["skl-1", "skl-5", "skl-4", "skl-2"]
    many = [f"skl-none-{i}" for i in range(5_000)] + ["skl-2", "skl-5"]  # more ids than SQLite has parameters
    assert listed(SkillFilter(skill_ids=many)) == ["skl-5", "skl-2"]
    assert listed(SkillFilter(skill_ids=[])) == []
    # A reader: what she may read by asset, whatever she wrote, and the drafts she reviews, never anyone else's.
    drafts_too: tuple[SkillStatus, ...] = ("active", "candidate")
    assert listed(SkillFilter(reader=SkillReader("u2", ["skl-1"]))) == ["skl-1", "skl-2"]
    assert listed(SkillFilter(reader=SkillReader("u2", ["skl-1"]), statuses=drafts_too)) == ["skl-1", "skl-3", "skl-2"]
    assert listed(SkillFilter(reader=SkillReader("u1", ["skl-3", "skl-5"]), statuses=drafts_too)) == ["skl-1", "skl-5"]
    reviewer = SkillReader("u1", ["skl-5"], reviewed_agent_ids=["a1"])
    assert listed(SkillFilter(reader=reviewer, statuses=drafts_too)) == ["skl-1", "skl-5", "skl-3"]
    assert listed(SkillFilter(reader=SkillReader("u1", [], reviews_team=True), statuses=drafts_too)) == [
        "skl-1",
        "skl-3",
    ]
    # An author's own drafts count whatever `statuses` says (she tries them out); nobody else's do.
    assert listed(SkillFilter(drafts_of="u2")) == ["skl-1", "skl-5", "skl-4", "skl-3", "skl-2"]
    assert listed(SkillFilter(drafts_of="u1")) == ["skl-1", "skl-5", "skl-4", "skl-2"]
    page, total = skills.list_heads(SVC, SkillFilter(), 2, 1)
    assert (ids(page), total) == (["skl-5", "skl-4"], 4)
    assert skills.head_ids(SVC, SkillFilter(), 2) == ["skl-1", "skl-5"]
    assert [h.skill_id for h in skills.headlines(SVC, SkillFilter(), 2)[0]] == ["skl-1", "skl-5"]
    assert all(v.is_head for v in skills.list_heads(SVC, SkillFilter(), 100, 0)[0])


# -- search channels -----------------------------------------------------------------------------------
def test_lexical_search_ranks_heads_within_the_filter(store: MemoryStore) -> None:
    skills = store.skills
    skills.create(SVC, "skl-pdf", draft("pdf-extract", "Extract text from PDF invoices", "Use pdftotext."), 1_000)
    skills.create(SVC, "skl-csv", draft("csv-clean", "Clean CSV exports", "Sometimes the CSV came from a PDF."), 1_000)
    skills.create(SVC, "skl-git", draft("git-bisect", "Find the commit that broke a test", "Run git bisect."), 1_000)
    skills.create(SVC, "skl-zh", draft("deploy-zh", "部署 Kubernetes 集群", "先检查节点。"), 1_000)
    hits = skills.search_lexical(SVC, SkillFilter(), query_terms("pdf invoices"), 10)
    assert ids([v for v, _ in hits]) == ["skl-pdf", "skl-csv"]
    assert all(0 < score < 1 for _, score in hits) and hits[0][1] > hits[1][1]
    assert ids([v for v, _ in skills.search_lexical(SVC, SkillFilter(), query_terms("集群 部署"), 10)]) == ["skl-zh"]
    only_csv = SkillFilter(skill_ids=["skl-csv", "skl-git"])
    assert ids([v for v, _ in skills.search_lexical(SVC, only_csv, query_terms("pdf"), 10)]) == ["skl-csv"]
    # Only heads are found: text an older version had is gone, the new head's is found.
    skills.append(SVC, "skl-git", 1, draft("git-bisect", "Find the commit that broke a test", "Use mercurial."), 2_000)
    assert skills.search_lexical(SVC, SkillFilter(), query_terms("bisect"), 10)[0][0].version == 2
    assert skills.search_lexical(SVC, SkillFilter(), query_terms("run"), 10) == []
    assert ids([v for v, _ in skills.search_lexical(SVC, SkillFilter(), query_terms("mercurial"), 10)]) == ["skl-git"]
    # Statuses narrow the search too.
    skills.set_status(SVC, "skl-pdf", 1, "archived", 3_000)
    assert ids([v for v, _ in skills.search_lexical(SVC, SkillFilter(), query_terms("invoices"), 10)]) == []
    archived = SkillFilter(statuses=("archived",))
    assert ids([v for v, _ in skills.search_lexical(SVC, archived, query_terms("invoices"), 10)]) == ["skl-pdf"]


def test_lexical_search_reads_only_the_start_of_a_long_body(store: MemoryStore) -> None:
    body = "filler words here. " * 300 + "zanzibar"
    store.skills.create(SVC, "skl-long", draft(body=body), 1_000)
    assert store.skills.search_lexical(SVC, SkillFilter(), query_terms("zanzibar"), 10) == []
    assert store.skills.search_lexical(SVC, SkillFilter(), query_terms("filler"), 10)


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


# What the "model" returns for each embedded text (name + "\n" + description).
FIXED = {
    "pdf-extract\nExtract text from PDFs": unit(1, 0, 0, 0),
    "pdf-extract\nExtract text and tables from PDFs": unit(1, 0.2, 0, 0),
    "csv-clean\nClean CSV files": unit(0.6, 0.8, 0, 0),
    "git-bisect\nFind a breaking commit": unit(0, 0, 1, 0),
}


def embed_all(store: MemoryStore) -> list[str]:
    """The embedding worker's loop with fixed vectors; returns the texts it embedded."""
    texts: list[str] = []
    while tasks := store.next_embedding_tasks(8):
        assert {t.kind for t in tasks} == {"skill"}
        texts += [t.text for t in tasks]
        store.store_embeddings(MODEL, tasks, np.vstack([FIXED[t.text] for t in tasks]))
    return texts


def test_vectors_of_heads_search_filter_and_follow_new_heads(store: MemoryStore) -> None:
    store.reset_embeddings(MODEL)
    skills = store.skills
    skills.create(SVC, "skl-pdf", draft("pdf-extract", "Extract text from PDFs"), 1_000)
    skills.create(SVC, "skl-csv", draft("csv-clean", "Clean CSV files"), 1_000)
    skills.create(SVC, "skl-git", draft("git-bisect", "Find a breaking commit", team="team-2"), 1_000)
    assert sorted(embed_all(store)) == sorted(FIXED.keys() - {"pdf-extract\nExtract text and tables from PDFs"})
    hits = skills.search_semantic(SVC, SkillFilter(), unit(1, 0.1, 0, 0), 10)
    assert ids([v for v, _ in hits]) == ["skl-pdf", "skl-csv", "skl-git"]  # across both teams' indexes
    assert hits[0][1] == pytest.approx(float(unit(1, 0.1, 0, 0) @ unit(1, 0, 0, 0)), abs=1e-5)
    assert ids([v for v, _ in skills.search_semantic(SVC, SkillFilter(), unit(1, 0, 0, 0), 1)]) == ["skl-pdf"]
    team_2 = SkillFilter(team_id="team-2")
    assert ids([v for v, _ in skills.search_semantic(SVC, team_2, unit(1, 0, 0, 0), 10)]) == ["skl-git"]
    no_pdf = SkillFilter(skill_ids=["skl-csv"])
    assert ids([v for v, _ in skills.search_semantic(SVC, no_pdf, unit(1, 0, 0, 0), 10)]) == ["skl-csv"]
    sims = skills.similarities(SVC, unit(0, 0, 1, 0), ["skl-git", "skl-pdf", "skl-none"])
    assert sims.keys() == {"skl-git", "skl-pdf"} and sims["skl-git"] == pytest.approx(1.0, abs=1e-5)

    # A new head with the same name and description keeps the vector: nothing to embed again.
    moved = skills.append(SVC, "skl-pdf", 1, draft("pdf-extract", "Extract text from PDFs", body="new body"), 2_000)
    assert store.embedding_backlog() == 0
    assert skills.search_semantic(SVC, SkillFilter(), unit(1, 0, 0, 0), 1)[0][0] == moved
    # A new description: the old head's vector goes at once and the new head is queued.
    skills.append(SVC, "skl-pdf", 2, draft("pdf-extract", "Extract text and tables from PDFs"), 3_000)
    assert "skl-pdf" not in ids([v for v, _ in skills.search_semantic(SVC, SkillFilter(), unit(1, 0, 0, 0), 10)])
    assert skills.similarities(SVC, unit(1, 0, 0, 0), ["skl-pdf"]) == {}
    assert embed_all(store) == ["pdf-extract\nExtract text and tables from PDFs"]
    (best, _), *_ = skills.search_semantic(SVC, SkillFilter(), unit(1, 0, 0, 0), 10)
    assert (best.skill_id, best.version) == ("skl-pdf", 3)

    # Switching models re-queues every head, and only heads.
    store.reset_embeddings(EmbeddingModel("test:other", DIM))
    assert store.embedding_backlog() == 3
    assert skills.search_semantic(SVC, SkillFilter(), unit(1, 0, 0, 0), 10) == []
    skills.delete(SVC, "skl-csv", 1)
    assert store.embedding_backlog() == 2  # a deleted skill's queue entry goes with it


def test_a_skill_moved_to_another_team_is_found_under_its_new_team(store: MemoryStore) -> None:
    store.reset_embeddings(MODEL)
    store.skills.create(SVC, "skl-pdf", draft("pdf-extract", "Extract text from PDFs"), 1_000)
    embed_all(store)
    store.skills.append(SVC, "skl-pdf", 1, draft("pdf-extract", "Extract text from PDFs", team="team-2"), 2_000)
    for team, expected in (("team", []), ("team-2", ["skl-pdf"])):
        hits = store.skills.search_semantic(SVC, SkillFilter(team_id=team), unit(1, 0, 0, 0), 10)
        assert ids([v for v, _ in hits]) == expected


def test_names_in_text(store: MemoryStore) -> None:
    skills = store.skills
    skills.create(SVC, "skl-1", draft("pdf-extract"), 1_000)
    skills.create(SVC, "skl-2", draft("pdf"), 2_000)
    skills.create(SVC, "skl-3", draft("csv-clean", owner="other"), 3_000)
    skills.create(SVC, "skl-4", draft("git-bisect", status="candidate"), 4_000)
    text = "Please use PDF-Extract, then csv-clean and git-bisect."
    assert ids(skills.names_in(SVC, SkillFilter(), text, 3)) == ["skl-1", "skl-3", "skl-2"]  # longest first
    assert ids(skills.names_in(SVC, SkillFilter(), text, 4)) == ["skl-1", "skl-3"]  # "pdf" is too short
    assert ids(skills.names_in(SVC, SkillFilter(owner_agent_ids=["agent"]), text, 3)) == ["skl-1", "skl-2"]
    all_statuses = SkillFilter(statuses=("active", "candidate"), skill_ids=["skl-4"])
    assert ids(skills.names_in(SVC, all_statuses, text, 3)) == ["skl-4"]
    assert skills.names_in(SVC, SkillFilter(), "nothing here", 3) == []
    # A text of long unbroken runs has too many pieces to look up one by one: the names are scanned instead.
    noise = "".join("abcdefghijklmnopqrstuvwxyz0123456789"[(i * 7 + i // 36) % 36] for i in range(3_000))
    long_run = noise + "pdf-extract" + noise
    assert ids(skills.names_in(SVC, SkillFilter(), long_run, 4)) == ["skl-1"]
    assert ids(skills.names_in(SVC, SkillFilter(), "(pdf-extract)", 4)) == ["skl-1"]
    assert skills.names_in(SVC, SkillFilter(), "pdf extract", 4) == []  # a name never spans a space


# -- mining ----------------------------------------------------------------------------------------------
KEY = SessionKey(SVC, "team", "agent", "alice", "sess-1")


def tool_call(n: int) -> dict[str, object]:
    return {"role": "assistant", "content": f"call {n}", "tool_calls": [{"name": "shell"}]}


def appender(new: Sequence[Mapping[str, object]], cut_at: int | None = None):  # type: ignore[no-untyped-def]
    """A decide() that appends turns and cuts everything into an archive at `cut_at` tool calls."""
    seen: list[BufferState] = []

    def decide(messages: list[Mapping[str, object]], state: BufferState) -> BufferUpdate:
        seen.append(state)
        merged = [*messages, *new]
        calls = state.tool_calls + sum(1 for m in new if m.get("tool_calls"))
        size = state.bytes + sum(len(str(m)) for m in new)
        if cut_at is not None and calls >= cut_at:
            return BufferUpdate([], 0, 0, ArchiveDraft(merged, "tool_calls", task_ref="task-9"))
        return BufferUpdate(merged, calls, size)

    decide.seen = seen  # type: ignore[attr-defined]
    return decide


def test_the_buffer_grows_and_is_cut_into_an_archive_with_its_job(store: MemoryStore) -> None:
    skills = store.skills
    assert skills.buffer(KEY) == ([], BufferState(0, 0, 0))
    first = appender([tool_call(1), tool_call(2)])
    assert skills.update_buffer(KEY, 1_000, first) == BufferWrite()
    assert first.seen == [BufferState(0, 0, 0)]  # type: ignore[attr-defined]
    messages, state = skills.buffer(KEY)
    assert messages == [tool_call(1), tool_call(2)] and (state.messages, state.tool_calls) == (2, 2)
    cut = skills.update_buffer(KEY, 2_000, appender([tool_call(3)], cut_at=3)).archive
    assert cut is not None and cut.archive_id.startswith("sar-") and len(cut.archive_id) == 20
    assert cut.messages == (tool_call(1), tool_call(2), tool_call(3))
    assert (cut.reason, cut.task_ref, cut.session_id, cut.created_ms) == ("tool_calls", "task-9", "sess-1", 2_000)
    assert skills.buffer(KEY) == ([], BufferState(0, 0, 0))
    assert skills.archive(SVC, cut.archive_id) == cut
    (job,) = store.pipeline.jobs(SVC, ["pending"], 10)
    assert (job.seq, job.kind, job.target) == (cut.job_seq, "skill", cut.archive_id)
    assert job.scope == {
        "service_id": SVC,
        "team_id": "team",
        "agent_id": "agent",
        "user_id": "alice",
        "session_id": "sess-1",
        "archive_id": cut.archive_id,
    }


def test_an_append_with_a_key_it_was_given_before_writes_nothing(store: MemoryStore) -> None:
    skills = store.skills
    once = appender([tool_call(1)])
    assert skills.update_buffer(KEY, 1_000, once, idempotency_key="turn-1", request_hash="h1") == BufferWrite()
    again = appender([tool_call(1)])
    assert skills.update_buffer(KEY, 1_500, again, idempotency_key="turn-1", request_hash="h1") == BufferWrite(
        replayed=True
    )
    assert again.seen == []  # type: ignore[attr-defined]  # the rule was not even asked
    assert skills.buffer(KEY)[0] == [tool_call(1)]
    # A key that cut an archive cuts none when replayed; the same key with other content is refused.
    cut = skills.update_buffer(KEY, 2_000, appender([tool_call(2)], cut_at=2), idempotency_key="turn-2").archive
    assert cut is not None
    replay = skills.update_buffer(KEY, 2_500, appender([tool_call(2)], cut_at=2), idempotency_key="turn-2")
    assert replay == BufferWrite(replayed=True) and len(skills.recent_archives(SVC, "team", "agent", 10)) == 1
    with pytest.raises(KeyReused):
        skills.update_buffer(KEY, 3_000, appender([tool_call(3)]), idempotency_key="turn-1", request_hash="h2")
    assert skills.buffer(KEY) == ([], BufferState(0, 0, 0))
    # Keys are the session's: another session's first use of the same key is a first use.
    other = SessionKey(SVC, "team", "agent", "alice", "sess-2")
    assert skills.update_buffer(other, 3_500, appender([tool_call(4)]), idempotency_key="turn-1") == BufferWrite()


def test_a_failing_decision_writes_nothing(store: MemoryStore) -> None:
    skills = store.skills
    skills.update_buffer(KEY, 1_000, appender([tool_call(1)]))

    def explode(messages: list[Mapping[str, object]], state: BufferState) -> BufferUpdate:
        raise RuntimeError("rule failed")

    with pytest.raises(RuntimeError):
        skills.update_buffer(KEY, 2_000, explode)
    assert skills.buffer(KEY)[0] == [tool_call(1)]
    assert skills.recent_archives(SVC, "team", "agent", 10) == []
    assert store.pipeline.jobs(SVC, ["pending", "running", "done", "dead"], 10) == []


def test_direct_archives_and_the_skill_job_through_the_pipeline(store: MemoryStore) -> None:
    skills = store.skills
    draft_a = ArchiveDraft([{"role": "user", "content": "x"}], "direct", note="extract", max_iterations=3)
    first = skills.add_archive(KEY, draft_a, 1_000)
    second = skills.add_archive(KEY, ArchiveDraft([], "forced"), 2_000)
    other_agent = skills.add_archive(
        SessionKey(SVC, "team", "agent-2", "alice", "s"), ArchiveDraft([], "forced"), 3_000
    )
    assert (first.note, first.max_iterations, first.reason) == ("extract", 3, "direct")
    assert skills.recent_archives(SVC, "team", "agent", 10) == [second, first]
    assert skills.recent_archives(SVC, "team", "agent", 1) == [second]
    assert skills.recent_archives(SVC, "team", "agent-2", 10) == [other_agent]
    assert skills.archive(SVC, "sar-0000000000000000") is None
    # The pipeline's job machinery takes skill jobs like any other kind.
    claimed = store.pipeline.claim("worker-1", 5_000, 60_000, 10)
    assert sorted(j.target for j in claimed) == sorted([first.archive_id, second.archive_id, other_agent.archive_id])
    job = next(j for j in claimed if j.target == first.archive_id)
    store.pipeline.fail(job, "worker-1", "model down", 6_000, None, hold_session=True)
    assert store.pipeline.counts(SVC).dead == {"skill": 1}
    running = store.pipeline.counts(SVC).running
    assert running.keys() == {"skill"} and sorted(running["skill"]) == sorted(
        [second.archive_id, other_agent.archive_id]
    )
    assert store.pipeline.replay(SVC, [job.seq], 7_000).count == 1
    assert [j.target for j in store.pipeline.jobs(SVC, ["pending"], 10)] == [first.archive_id]
    assert store.pipeline.finish(next(j for j in claimed if j.target == second.archive_id), "worker-1", 8_000)


# -- tenants -----------------------------------------------------------------------------------------------
def test_tenants_never_see_each_other(store: MemoryStore) -> None:
    store.reset_embeddings(MODEL)
    skills = store.skills
    skills.create("svc-a", "skl-1", draft("pdf-extract", "Extract text from PDFs", files={"f": b"bytes"}), 1_000)
    # The same id and name in another tenant are no conflict.
    skills.create("svc-b", "skl-1", draft("pdf-extract", "Extract text from PDFs"), 1_000)
    embed_all(store)
    assert skills.head("svc-b", "skl-1").files == ()  # type: ignore[union-attr]
    assert skills.read_blob("svc-b", sha(b"bytes")) is None and skills.blob_usage("svc-b") == (0, 0)
    assert skills.list_heads("svc-c", SkillFilter(), 10, 0) == ([], 0)
    assert skills.search_lexical("svc-c", SkillFilter(), query_terms("pdf"), 10) == []
    assert skills.search_semantic("svc-c", SkillFilter(), unit(1, 0, 0, 0), 10) == []
    assert skills.similarities("svc-c", unit(1, 0, 0, 0), ["skl-1"]) == {}
    assert skills.names_in("svc-c", SkillFilter(), "pdf-extract", 3) == []
    for svc in ("svc-a", "svc-b"):
        assert [v.service_id for v, _ in skills.search_lexical(svc, SkillFilter(), query_terms("pdf"), 10)] == [svc]
        assert [v.service_id for v, _ in skills.search_semantic(svc, SkillFilter(), unit(1, 0, 0, 0), 10)] == [svc]
    # A manifest may not borrow another tenant's blob by naming its hash.
    with pytest.raises(BlobMissing):
        skills.append("svc-b", "skl-1", 1, draft(files={"f": b"bytes"}, send_bytes=False), 2_000)
    skills.delete("svc-a", "skl-1", 1)
    assert skills.head("svc-b", "skl-1") is not None
    archive = skills.add_archive(KEY, ArchiveDraft([], "forced"), 1_000)
    assert skills.archive("svc-other", archive.archive_id) is None
    assert skills.recent_archives("svc-other", "team", "agent", 10) == []
    assert skills.buffer(SessionKey("svc-other", "team", "agent", "alice", "sess-1")) == ([], BufferState(0, 0, 0))
