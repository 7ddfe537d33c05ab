"""`memhub serve --knowledge-only` as a real process: what it mounts, which port it takes, and SIGKILL faults.

The knowledge service alone serves /health, /v3/wiki/*, /v3/tools/* and /v3/knowledge/* (no memory data plane,
no management plane). Builds survive a crash: a build that was running or queued when the process died is
queued again by the next start (the app lifespan calls `wikis.resume()`), and a built wiki keeps answering.
"""

from __future__ import annotations

import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from tests.e2e.conftest import GATEWAY_KEY, HOST, PORT_PLACEHOLDER, SERVICE, START_TIMEOUT, Launcher, Server, free_port
from tests.knowledge.test_wiki_sources import make_pdf
from tests.knowledge.tools_kit import (
    PDF_FACT,
    PDF_NAME,
    PDF_PAGES,
    WIKI_TOOLS,
    WikiApi,
    binary_file,
    corpus_files,
    knowledge_tags,
    recipe,
    resolve,
    text_file,
)

TEAM = "team-kb"
BUILD_DEADLINE = 120.0  # seconds for a resumed build to finish (a failure bound)
BIG_PDF_PAGES = 2000  # ≈1 MB and ≈1.5 s of extraction each: a build that is surely still running at the kill
BIG_FACT_PAGE = 1234
BIG_FACT = "The obsidian gearbox torque is 77 newton metres"


def serve_knowledge(
    launcher: Launcher, data_dir: Path, *, port: int | None = None, env: dict[str, str] | None = None
) -> Server:
    """`memhub serve --knowledge-only` over `data_dir`, on `port` (a fresh free one when None)."""
    args = ["serve", "--knowledge-only", "--host", HOST, "--port", str(port or PORT_PLACEHOLDER)]
    args += ["--data-dir", str(data_dir)]
    full_env = {"MEMHUB_GATEWAY_API_KEY": GATEWAY_KEY, **(env or {})}
    # The pipeline setting stays on: --knowledge-only alone must keep the worker from running.
    if port is None:
        return launcher.start(args, env=full_env, data_dir=data_dir, pipeline=True)
    server = launcher.start(args, env=full_env, data_dir=data_dir, wait=False, pipeline=True)
    server.port = port  # the Launcher picked a placeholder port; this one is ours
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        assert server.alive(), server.stderr
        try:
            if httpx.get(f"{server.url}/health", timeout=1.0).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise AssertionError(f"/health did not answer on port {port}: {server.stderr}")


@contextmanager
def client(server: Server) -> Iterator[WikiApi]:
    """A WikiApi over a real socket with the gateway key and the tenant header."""
    with httpx.Client(base_url=server.url, timeout=30.0) as http:
        yield WikiApi(http, {"authorization": f"Bearer {GATEWAY_KEY}", "x-tdai-service-id": SERVICE})


def stored_statuses(data_dir: Path) -> dict[str, str]:
    """The wikis' statuses as the dead process left them in the database (read-only)."""
    con = sqlite3.connect(f"file:{data_dir / 'memhub.db'}?mode=ro", uri=True)
    try:
        return {wiki_id: status for wiki_id, status in con.execute("SELECT wiki_id, status FROM knowledge_wikis")}
    finally:
        con.close()


def wait_ready(api: WikiApi, wiki_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Poll wiki/get until every wiki is ready (failing at once on `failed`); returns the details."""
    deadline = time.monotonic() + BUILD_DEADLINE
    details: dict[str, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        details = {w: api.get(w) for w in wiki_ids}
        assert not [d for d in details.values() if d["status"] == "failed"], details
        if all(d["status"] == "ready" for d in details.values()):
            return details
        time.sleep(0.1)
    raise AssertionError(f"not ready within {BUILD_DEADLINE}s: {[(w, d['status']) for w, d in details.items()]}")


def port_is_closed(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) != 0


# -- what the knowledge-only process serves ----------------------------------------------------------------------
def test_knowledge_only_serves_wiki_and_tools_but_not_the_memory_planes(launcher: Launcher, tmp_path: Path) -> None:
    server = serve_knowledge(launcher, tmp_path / "data")
    health = httpx.get(f"{server.url}/health", timeout=5.0)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert health.json()["services"]["pipelineWorker"]["running"] is False

    with client(server) as api:
        wiki_id = api.make(TEAM, "relay docs", corpus_files(tmp_path), summary="Relay design and manuals")
        detail = api.get(wiki_id)
        assert detail["service_url"] == f"{server.url}/v3"  # this process's own address
        assert api.tools(wiki_id)["status"] == "ready"
        hits = api.call(wiki_id, "search_sources", {"keywords": [PDF_FACT]})["results"]
        assert [(h["filename"], h["locator"]) for h in hits] == [(PDF_NAME, "page 2")]

        # The block sends the agent to this very process; its recipe works against it over the network.
        text = api.block(TEAM)["text"]
        (tag,) = knowledge_tags(text)
        assert (tag["id"], tag["url"]) == (wiki_id, f"{server.url}/v3")
        assert GATEWAY_KEY not in text
        step1 = recipe(text, 1, {"MEMHUB_USER_KEY": GATEWAY_KEY})  # no user keys here: the gateway key is the key
        agent = WikiApi(api.http, step1.headers)
        listed = agent.ok(resolve(step1.url, tag["url"]), {"knowledge_id": tag["id"]})
        assert [t["name"] for t in listed["tools"]] == list(WIKI_TOOLS)
        step2 = recipe(text, 2, {"MEMHUB_USER_KEY": GATEWAY_KEY})
        body = {"knowledge_id": tag["id"], "tool_name": "read_page", "params": {"refs": [f"wiki/{PDF_NAME}.md"]}}
        (page,) = WikiApi(api.http, step2.headers).ok(resolve(step2.url, tag["url"]), body)["items"]
        assert PDF_PAGES[1] in page["content"]

        # Not mounted: the memory data plane and the management plane.
        for path in (
            "/v3/conversation/add",
            "/v3/atomic/search",
            "/v3/meta/user/create",
            "/v3/internal/meta/user/init-admin",
        ):
            envelope = api.fails(path, {"team_id": TEAM}, 404)
            assert envelope["message"] == f"Not found: POST {path}"
        # Still authenticated like every route.
        anonymous = WikiApi(api.http, {"x-tdai-service-id": SERVICE})
        assert anonymous.fails("/v3/tools/list", {"knowledge_id": wiki_id}, 401)


def test_knowledge_only_listens_on_the_knowledge_port_without_port(launcher: Launcher, tmp_path: Path) -> None:
    # One environment may serve both processes: MEMHUB_PORT is the gateway's, MEMHUB_KNOWLEDGE_PORT this one's.
    gateway_port = free_port()
    env = {"MEMHUB_KNOWLEDGE_PORT": PORT_PLACEHOLDER, "MEMHUB_PORT": str(gateway_port)}
    args = ["serve", "--knowledge-only", "--host", HOST, "--data-dir", str(tmp_path / "data")]
    server = launcher.start(args, env={"MEMHUB_GATEWAY_API_KEY": GATEWAY_KEY, **env}, data_dir=tmp_path / "data")
    assert f"Uvicorn running on http://{HOST}:{server.port}" in server.stderr + server.stdout
    assert port_is_closed(gateway_port)
    with client(server) as api:
        wiki_id = api.make(TEAM, "notes", [text_file("a.md", "# A\n\nThe zephyr constraint.\n")])
        assert api.get(wiki_id)["service_url"] == f"http://{HOST}:{server.port}/v3"
        assert api.call(wiki_id, "search", {"query": "zephyr"})["count"] == 1


# -- SIGKILL faults ---------------------------------------------------------------------------------------------------
def _big_pdf(*, with_fact: bool) -> bytes:
    pages = [f"Ledger page {n} lists the calibration entries of shift {n % 7}" for n in range(1, BIG_PDF_PAGES + 1)]
    if with_fact:
        pages[BIG_FACT_PAGE - 1] = BIG_FACT
    return make_pdf(pages)


def test_sigkill_during_a_build_resumes_it_on_restart_and_loses_no_upload(launcher: Launcher, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    server = serve_knowledge(launcher, data_dir, port=port)
    big_files = [
        binary_file("ledger/volume-1.pdf", _big_pdf(with_fact=True)),
        binary_file("ledger/volume-2.pdf", _big_pdf(with_fact=False)),
        text_file("ledger/README.md", "# Ledger\n\nCalibration volumes, scanned from the archive.\n"),
    ]
    small_files = [text_file("runbook.md", "# Runbook\n\nRestart the quartz relay after an outage.\n")]
    with client(server) as api:
        big = api.create(TEAM, "ledger")["wiki_id"]
        small = api.create(TEAM, "runbook")["wiki_id"]
        api.upload(TEAM, big, big_files)
        api.upload(TEAM, small, small_files)
        # One build worker: the big build runs, the small one waits in the queue.
        assert api.ok("/v3/wiki/ingest", {"wiki_id": big}, status=202) == {"wiki_id": big, "status": "pending"}
        assert api.ok("/v3/wiki/ingest", {"wiki_id": small}, status=202) == {"wiki_id": small, "status": "pending"}
        server.kill()

    left = stored_statuses(data_dir)
    assert left[big] in ("pending", "processing"), f"the build finished before the kill; make it slower: {left}"
    assert left[small] == "pending", left

    server = serve_knowledge(launcher, data_dir, port=port)
    with client(server) as api:
        details = wait_ready(api, [big, small])  # no ingest call: the restart queued both again
        assert details[big]["version"] == details[small]["version"] == "1"
        assert (details[big]["page_count"], details[big]["source_count"]) == (3, 3)
        raw = api.ok("/v3/wiki/raw/ls", {"wiki_id": big})["items"]
        sizes = {f["filename"]: len(f["content"]) for f in big_files if f["encoding"] == "utf-8"}
        assert [i["filename"] for i in raw] == sorted(f["filename"] for f in big_files)
        assert all(i["status"] == "ingested" for i in raw), raw
        assert {i["filename"]: i["size"] for i in raw if i["filename"] in sizes} == sizes
        assert [i["filename"] for i in api.ok("/v3/wiki/raw/ls", {"wiki_id": small})["items"]] == ["runbook.md"]

        (hit,) = api.call(big, "search_sources", {"keywords": "obsidian gearbox"})["results"]
        assert (hit["filename"], hit["locator"], hit["snippet"]) == (
            "ledger/volume-1.pdf",
            f"page {BIG_FACT_PAGE}",
            BIG_FACT,
        )
        assert api.call(small, "search", {"query": "quartz relay"})["results"][0]["path"] == "wiki/runbook.md"
        # Both are registered and offered again, at this address.
        tags = knowledge_tags(api.block(TEAM)["text"])
        assert sorted(t["id"] for t in tags) == sorted([big, small])
        assert {t["url"] for t in tags} == {f"{server.url}/v3"}


def test_sigkill_after_a_good_build_keeps_serving_search(launcher: Launcher, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    port = free_port()
    server = serve_knowledge(launcher, data_dir, port=port)
    with client(server) as api:
        wiki_id = api.make(TEAM, "relay docs", corpus_files(tmp_path))
        before = api.call(wiki_id, "search", {"query": "relay"})
        sources = api.call(wiki_id, "search_sources", {"keywords": [PDF_FACT]})
    assert before["count"] == 3 and before["stale"] is False
    server.kill()
    assert stored_statuses(data_dir)[wiki_id] == "ready"

    server = serve_knowledge(launcher, data_dir, port=port)
    with client(server) as api:
        assert api.call(wiki_id, "search", {"query": "relay"}) == before
        assert api.call(wiki_id, "search_sources", {"keywords": [PDF_FACT]}) == sources
        info = api.call(wiki_id, "get_info")
        assert (info["status"], info["version"], info["stale"], info["page_count"]) == ("ready", 1, False, 4)
        (tag,) = knowledge_tags(api.block(TEAM)["text"])
        assert (tag["id"], tag["url"]) == (wiki_id, f"{server.url}/v3")
