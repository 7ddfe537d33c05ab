"""Which repository URLs `code-graph/create` accepts, and what a clone may reach and tell (server-side fetch rules).

No test reaches the network: refused URLs are refused before any connection (numeric hosts and `localhost`
resolve without DNS), and every clone goes to a git HTTP server the test starts on 127.0.0.1
(tests/knowledge/codegraph/git_http_kit.py), allowed through MEMHUB_CODE_GRAPH_HOST_ALLOWLIST. The pinning
test gives the test process's resolver one made-up name (`git.memhub.test`, which no DNS answers): git can
only reach the server if it connects to the address memhub checked.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from memhub.knowledge.codegraph.remote import PUBLIC_RULE
from memhub.settings import Settings
from tests.conftest import build_gateway
from tests.knowledge.codegraph import git_http_kit
from tests.knowledge.codegraph.code_graph_http_kit import PYPROJ_FILES, TEAM, CodeGraphHttp, GitRepo

FETCH_FAILED = "git clone failed: the repository could not be fetched"
PUBLIC = f"repo_url: {PUBLIC_RULE}"
SSH_OFF = "URLs are off on this server: they would use the server's SSH identity or reach any port …"


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CodeGraphHttp]:
    """One default gateway for every refused URL: a refusal writes nothing, so each case still starts from nothing
    (and a case that wrote would fail its own checks)."""
    base = tmp_path_factory.mktemp("refusing")
    (base / "sources").mkdir()
    cg = CodeGraphHttp(build_gateway(base / "data", code_source_roots=[base / "sources"]))
    yield cg
    cg.wait()
    cg.gw.client.app.state.knowledge.close()  # type: ignore[attr-defined]
    cg.gw.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1/shop.git", PUBLIC),
        ("https://localhost/shop.git", PUBLIC),
        ("http://localhost:8080/shop.git", PUBLIC),
        ("https://[::1]/shop.git", PUBLIC),
        ("https://10.0.0.8/shop.git", PUBLIC),
        ("https://172.16.3.4/shop.git", PUBLIC),
        ("https://192.168.1.20/shop.git", PUBLIC),
        ("http://169.254.169.254/latest/meta-data", PUBLIC),
        ("http://0x7f000001/shop.git", PUBLIC),
        ("http://2130706433/shop.git", PUBLIC),
        ("http://0177.0.0.1/shop.git", PUBLIC),
        ("http://127.1/shop.git", PUBLIC),
        ("http://0.0.0.0/shop.git", PUBLIC),
        ("http://100.64.0.1/shop.git", PUBLIC),
        ("http://224.0.0.1/shop.git", PUBLIC),
        ("http://[::ffff:127.0.0.1]/shop.git", PUBLIC),
        ("http://[::ffff:a9fe:a9fe]/shop.git", PUBLIC),
        ("http://[2002:7f00:1::1]/shop.git", PUBLIC),  # 6to4 around 127.0.0.1
        ("http://[fe80::1]/shop.git", PUBLIC),
        ("ssh://git@127.0.0.1/shop.git", f"repo_url: ssh:// {SSH_OFF}"),
        ("ssh://git@github.com/acme/shop.git", f"repo_url: ssh:// {SSH_OFF}"),
        ("git://127.0.0.1/shop.git", f"repo_url: git:// {SSH_OFF}"),
        ("localhost:/srv/shop.git", f"repo_url: scp-style (host:path) {SSH_OFF}"),
        ("git@github.com:acme/shop.git", f"repo_url: scp-style (host:path) {SSH_OFF}"),
        ("ext::sh -c touch% /tmp/pwned", "repo_url: must be a git URL of at most 2048 characters without spaces"),
        ("ext::sh", "repo_url: must be an https or http URL …"),
        ("fd::3", "repo_url: must be an https or http URL …"),
        ("rsync://127.0.0.1/shop.git", "repo_url: unsupported scheme 'rsync'; expected https or http"),
        ("https://github.com/a/b?x=1", "repo_url: must not hold a query, a fragment or a backslash"),
        ("http://127.0.0.1#@github.com/a/b", "repo_url: must not hold a query, a fragment or a backslash"),
        ("https://bot:tok@github.com/a/b", "repo_url: must not carry credentials …"),
        ("http://%31%32%37.0.0.1/shop.git", "repo_url: must name a host …"),
        ("http://localhost./shop.git", "repo_url: must name a host …"),
    ],
)
def test_refused_repo_urls_are_400_naming_the_rule_and_write_nothing(
    refusing: CodeGraphHttp, url: str, message: str
) -> None:
    envelope = refusing.fails("code-graph/create", {"team_id": TEAM, "repo_url": url}, 400, message)
    assert envelope["data"]["errors"][0]["field"] == "repo_url"
    assert refusing.ok("code-graph/list", {"team_id": TEAM})["total"] == 0
    assert not (refusing.gw.data_dir / "knowledge").exists()


def test_a_loopback_host_on_the_allow_list_clones_and_syncs_over_http(
    make_cg: Callable[..., CodeGraphHttp], repo: GitRepo
) -> None:
    cg = make_cg(code_graph_host_allowlist=["127.0.0.1"])
    with git_http_kit.serve(repo.bare.parent) as server:
        detail = cg.create(repo_url=f"{server.base}/shop.git")
        assert (detail["status"], detail["sync_error"], detail["commit_hash"]) == ("ready", None, repo.head()[:12])
        assert sorted(detail["report"]["added"]) == PYPROJ_FILES
        util = repo.work / "shop" / "util.py"
        repo.commit_and_push({"shop/util.py": util.read_text() + "\n\ndef extra():\n    pass\n"})
        synced = cg.sync(detail["code_graph_id"])
        assert (synced["status"], synced["commit_hash"]) == ("ready", repo.head()[:12])
        assert synced["report"]["changed"] == ["shop/util.py"]


def test_the_allow_list_takes_networks_and_host_names(make_cg: Callable[..., CodeGraphHttp], repo: GitRepo) -> None:
    with git_http_kit.serve(repo.bare.parent) as server:
        by_network = make_cg(code_graph_host_allowlist=["127.0.0.0/8"])
        assert by_network.create(repo_url=f"{server.base}/shop.git")["status"] == "ready"
        by_name = make_cg(code_graph_host_allowlist=["localhost"])
        assert by_name.create(repo_url=f"http://localhost:{server.port}/shop.git")["status"] == "ready"
        # Another loopback name is not on that list.
        envelope = {"team_id": TEAM, "repo_url": f"http://127.0.0.2:{server.port}/shop.git"}
        by_name.fails("code-graph/create", envelope, 400, PUBLIC)


def test_redirects_are_not_followed(make_cg: Callable[..., CodeGraphHttp], repo: GitRepo) -> None:
    cg = make_cg(code_graph_host_allowlist=["127.0.0.1"])
    with git_http_kit.serve(repo.bare.parent) as target, git_http_kit.redirect(f"{target.base}/shop.git") as hop:
        detail = cg.create(repo_url=f"{hop.base}/shop.git")
        assert (detail["status"], detail["sync_error"]) == ("failed", f"{FETCH_FAILED} (redirect refused)")
        assert hop.requests and target.requests == []


def test_the_servers_answer_stays_in_the_server_log(
    make_cg: Callable[..., CodeGraphHttp], caplog: pytest.LogCaptureFixture
) -> None:
    cg = make_cg(code_graph_host_allowlist=["127.0.0.1"])
    caplog.set_level(logging.WARNING, logger="memhub.codegraph")
    with git_http_kit.error(500, "remote: secret-token-7f3a\ninternal build host ci-17.corp\n") as server:
        detail = cg.create(repo_url=f"{server.base}/shop.git")
    assert (detail["status"], detail["sync_error"]) == ("failed", f"{FETCH_FAILED} (server error)")
    answers = [
        detail,
        cg.ok("code-graph/list", {"team_id": TEAM}),
        cg.fails("code-graph/callers", {"code_graph_id": detail["code_graph_id"], "symbol": "x"}, 409),
        cg.tool(detail["code_graph_id"], "callers", {"symbol": "x"}),
    ]
    for answer in answers:
        assert "secret" not in json.dumps(answer) and "ci-17" not in json.dumps(answer)
    assert "secret-token-7f3a" in caplog.text  # the operator still sees what the server said


def test_the_servers_git_config_credentials_and_askpass_are_not_used(
    make_cg: Callable[..., CodeGraphHttp], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "asked"
    helper = tmp_path / "helper.sh"
    helper.write_text(f"#!/bin/sh\ntouch {marker}\necho username=svc\necho password=server-secret\n")
    helper.chmod(0o755)
    config = tmp_path / "server.gitconfig"
    config.write_text(f"[credential]\n\thelper = {helper}\n")
    # The server process's own git setup: a global config with a credential helper, and a password program.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_ASKPASS", str(helper))
    monkeypatch.setenv("SSH_ASKPASS", str(helper))
    cg = make_cg(code_graph_host_allowlist=["127.0.0.1"])
    with git_http_kit.error(401, "login", {"WWW-Authenticate": 'Basic realm="forge"'}) as server:
        detail = cg.create(repo_url=f"{server.base}/shop.git")
    assert (detail["status"], detail["sync_error"]) == ("failed", f"{FETCH_FAILED} (access denied)")
    assert not marker.exists()
    assert len(server.requests) == 1  # asked once, never again with credentials


def test_git_connects_to_the_address_that_was_checked_and_every_sync_checks_again(
    make_cg: Callable[..., CodeGraphHttp], repo: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = {"git.memhub.test": "127.0.0.1"}
    system = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in answer:
            return system(answer[host], port, *args, **kwargs)
        return system(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    cg = make_cg(code_graph_host_allowlist=["127.0.0.1"])
    with git_http_kit.serve(repo.bare.parent) as server:
        # No DNS answers for git.memhub.test: the clone reaches the server only through the pinned address.
        detail = cg.create(repo_url=f"http://git.memhub.test:{server.port}/shop.git")
        assert (detail["status"], detail["sync_error"]) == ("ready", None)
        asked = len(server.requests)
        # The name now resolves elsewhere (DNS rebinding): the sync checks again and refuses before connecting.
        answer["git.memhub.test"] = "10.20.30.40"
        failed = cg.sync(detail["code_graph_id"])
        assert (failed["status"], failed["stale"]) == ("failed", True)
        assert (
            failed["sync_error"]
            == f"git fetch failed: the repository could not be fetched (refused by policy: {PUBLIC})"
        )
        assert len(server.requests) == asked
        # The last good graph still answers.
        assert cg.tool(detail["code_graph_id"], "search", {"query": "log"})["stale"] is True


def test_a_graph_created_under_looser_settings_is_refused_at_its_next_sync(
    make_cg: Callable[..., CodeGraphHttp], repo: GitRepo, tmp_path: Path
) -> None:
    data = tmp_path / "shared-data"
    with git_http_kit.serve(repo.bare.parent) as server:
        before = make_cg(data_dir=data, code_graph_host_allowlist=["127.0.0.1"])
        code_graph_id = before.create(repo_url=f"{server.base}/shop.git")["code_graph_id"]
        before.wait()
        after = make_cg(data_dir=data)  # the operator removed the allow-list
        asked = len(server.requests)
        failed = after.sync(code_graph_id)
        assert (
            failed["sync_error"]
            == f"git fetch failed: the repository could not be fetched (refused by policy: {PUBLIC})"
        )
        assert len(server.requests) == asked


def test_ssh_transports_need_the_operators_setting_and_the_host_rules_still_apply(
    make_cg: Callable[..., CodeGraphHttp],
) -> None:
    cg = make_cg(code_graph_allow_ssh=True)
    cg.fails("code-graph/create", {"team_id": TEAM, "repo_url": "ssh://git@127.0.0.1/shop.git"}, 400, PUBLIC)
    cg.fails("code-graph/create", {"team_id": TEAM, "repo_url": "localhost:/srv/shop.git"}, 400, PUBLIC)
    allowed = make_cg(code_graph_allow_ssh=True, code_graph_host_allowlist=["127.0.0.1"])
    # Our own loopback server, which speaks no SSH: accepted, and the clone fails at once (batch mode, no prompt).
    with git_http_kit.error(400, "no ssh here") as server:
        detail = allowed.create(repo_url=f"ssh://git@127.0.0.1:{server.port}/shop.git")
    assert detail["status"] == "failed" and detail["sync_error"].startswith(f"{FETCH_FAILED} (")


def test_the_settings_read_the_allow_list_and_refuse_what_is_not_a_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMHUB_CODE_GRAPH_HOST_ALLOWLIST", "git.corp.example, 10.0.0.0/8 ,[fd00::1]")
    monkeypatch.setenv("MEMHUB_CODE_GRAPH_ALLOW_SSH", "1")
    settings = Settings()
    assert settings.code_graph_host_allowlist == ["git.corp.example", "10.0.0.0/8", "[fd00::1]"]
    assert settings.code_graph_allow_ssh is True
    monkeypatch.setenv("MEMHUB_CODE_GRAPH_HOST_ALLOWLIST", "git.corp.example/path")
    with pytest.raises(ValidationError, match="is not a host name, an address or a CIDR"):
        Settings()
