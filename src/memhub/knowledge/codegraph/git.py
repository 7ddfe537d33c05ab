"""The git commands a code-graph build runs (clone, fetch + reset, HEAD) — as subprocesses, with a timeout,
never through a shell — and the branch names accepted. Which URLs may be fetched is `remote.py`'s rule.

Every command runs isolated from the server's own git setup and identity: the system and global git
config are not read (no credential helper, `url.*.insteadOf` rewrite or proxy setting of the operator's
applies), no `GIT_*` variable of the server's environment is passed on, prompts are off (a private
repository fails at once), the credential helper is emptied, SSH runs only when the operator allowed SSH
transports (batch mode, never a password prompt) and is `false` otherwise. Only the transports of the
URL being fetched are allowed (`GIT_ALLOW_PROTOCOL`; `protocol.allow=never` for everything else),
HTTP redirects are never followed, and an http(s) connection goes to the addresses the URL check
accepted (`http.curloptResolve`), not to whatever the name resolves to by then.

A failure reaches users as a short category ("git clone failed: the repository could not be fetched
(not found)"): git's own text may quote the server's response (`remote: …` lines, error pages) or
connection details of hosts the server can reach, so it goes to the server log only.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memhub.errors import BadRequest
from memhub.knowledge.codegraph.remote import Remote, public_remote

log = logging.getLogger("memhub.codegraph")

BRANCH_MAX = 255
COMMIT_CHARS = 12
_BRANCH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/+-]*$")
_HEX = re.compile(r"^[0-9a-f]{40,64}$")
# Every git command: no transport but the one GIT_ALLOW_PROTOCOL names, no redirects, no credential helper, no
# pager, no hooks or filesystem monitor of a repository's own config, no advice in the error text.
_GIT = (
    "git",
    "-c",
    "protocol.allow=never",
    "-c",
    "http.followRedirects=false",
    "-c",
    "credential.helper=",
    "-c",
    "core.askPass=",
    "-c",
    "core.sshCommand=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.pager=cat",
    "-c",
    "advice.detachedHead=false",
)
# Lines of git's own error text (not the server's `remote:` lines) → what users are told went wrong.
_CATEGORIES = (
    (re.compile(r"remote branch .* not found|couldn't find remote ref"), "branch not found"),
    (re.compile(r"not found|does not appear to be a git repository|returned error: 404"), "not found"),
    (re.compile(r"redirect|returned error: 30\d"), "redirect refused"),
    (re.compile(r"could not read (username|password)|authentication|returned error: 40[13]"), "access denied"),
    (re.compile(r"permission denied|host key verification"), "access denied"),
    (re.compile(r"transport .* not allowed|unsupported protocol|protocol .* not supported"), "refused by policy"),
    (re.compile(r"could not resolve|couldn't connect|failed to connect|connection|timed out"), "unreachable"),
    (re.compile(r"ssl|tls|certificate"), "TLS error"),
    (re.compile(r"returned error: 5\d\d"), "server error"),
)


_QUOTED = re.compile(r"'[^']*'")


class GitFailed(Exception):
    """A git command failed or timed out; the message is the short, safe text for `sync_error`."""


def check_branch(value: str) -> str:
    """A branch or tag name git will accept, or 400."""
    branch = value.strip()
    if (
        not branch
        or len(branch) > BRANCH_MAX
        or not _BRANCH.match(branch)
        or ".." in branch
        or "//" in branch
        or branch.endswith((".", "/", ".lock"))
    ):
        raise BadRequest(f"branch: must be a branch or tag name (letters, digits, . _ / + -; at most {BRANCH_MAX})")
    return branch


def _environment(remote: Remote | None, allow_ssh: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "SSH_ASKPASS"}
    env["GIT_CONFIG_NOSYSTEM"] = "1"
    env["GIT_CONFIG_GLOBAL"] = os.devnull
    env["GIT_TERMINAL_PROMPT"] = "0"  # a repository that needs a password fails instead of waiting for one
    env["GIT_ALLOW_PROTOCOL"] = remote.scheme if remote is not None else ""  # its own transport; none for local
    env["GIT_SSH_COMMAND"] = "ssh -o BatchMode=yes" if allow_ssh else "false"
    env["LC_ALL"] = "C"  # error text in English, matched by _CATEGORIES
    return env


def _pinned(remote: Remote | None) -> list[str]:
    """`-c http.curloptResolve=host:port:addresses`: curl connects to the addresses the URL check accepted."""
    if remote is None or remote.scheme not in ("https", "http") or not remote.addresses or _is_address(remote.host):
        return []  # an address written in the URL is the address connected to
    addresses = ",".join(f"[{a}]" if ":" in a else a for a in remote.addresses)
    return ["-c", f"http.curloptResolve={remote.host}:{remote.port}:{addresses}"]


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _category(stderr: str) -> str:
    """What went wrong, read from git's own lines only: not the server's `remote:` lines, and not the quoted
    URLs and paths git echoes (a repository named `redirect` is no redirect)."""
    lines = [
        _QUOTED.sub("''", line.lower())
        for line in stderr.splitlines()
        if line.strip() and not line.startswith("remote:")
    ]
    for pattern, category in _CATEGORIES:
        if any(pattern.search(line) for line in lines):
            return category
    return "see the server log"


def run_git(
    args: list[str],
    *,
    cwd: Path | None,
    timeout: float,
    action: str,
    remote: Remote | None = None,
    allow_ssh: bool = False,
) -> str:
    """Run one git command (talking to `remote`, if any); its stdout, or GitFailed with a safe message."""
    fetching = remote is not None
    what = f"git {action} failed" + (": the repository could not be fetched" if fetching else "")
    # A new session, so a timeout kills git's helpers (remote-https, ssh) with it.
    process = subprocess.Popen(
        [*_GIT, *_pinned(remote), *args],
        cwd=cwd,
        env=_environment(remote, allow_ssh),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise GitFailed(f"{what} (timed out after {timeout:g} s)") from None
    if process.returncode != 0:
        where = public_remote(remote.url) if remote is not None else str(cwd)
        # A local command failing is expected (a source directory that is not a git working tree).
        level = logging.WARNING if fetching else logging.DEBUG
        log.log(level, "git %s failed for %s (exit %s): %s", action, where, process.returncode, stderr.strip())
        raise GitFailed(f"{what} ({_category(stderr)})")
    return stdout


def clone(remote: Remote, branch: str, target: Path, *, timeout: float, allow_ssh: bool = False) -> None:
    """A shallow clone of one branch into `target` (replaced whole: a half-done clone is never left there)."""
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    try:
        run_git(
            ["clone", "--depth", "1", "--branch", branch, "--no-tags", "--", remote.url, str(partial)],
            cwd=partial.parent,
            timeout=timeout,
            action="clone",
            remote=remote,
            allow_ssh=allow_ssh,
        )
    except GitFailed:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def update(checkout: Path, remote: Remote, branch: str, *, timeout: float, allow_ssh: bool = False) -> None:
    """Bring a shallow clone to the branch's newest commit (a force-push included) and drop stray files.
    It fetches from `remote` (checked just before) rather than from the clone's stored origin."""
    run_git(
        ["fetch", "--depth", "1", "--no-tags", "--", remote.url, branch],
        cwd=checkout,
        timeout=timeout,
        action="fetch",
        remote=remote,
        allow_ssh=allow_ssh,
    )
    run_git(["reset", "--hard", "FETCH_HEAD"], cwd=checkout, timeout=timeout, action="reset")
    run_git(["clean", "-ffdx"], cwd=checkout, timeout=timeout, action="clean")


def is_clone(checkout: Path) -> bool:
    """Whether `checkout` holds a clone a sync can fetch into."""
    return (checkout / ".git").is_dir()


def head_commit(tree: Path, *, timeout: float) -> str | None:
    """The first 12 hex characters of HEAD, or None when `tree` is not in a git working tree."""
    try:
        out = run_git(["rev-parse", "HEAD"], cwd=tree, timeout=timeout, action="rev-parse").strip()
    except (GitFailed, OSError):
        return None
    return out[:COMMIT_CHARS] if _HEX.match(out) else None


@dataclass(frozen=True, slots=True)
class WorkingTree:
    """What git says about a local source directory: its branch, origin (credentials removed) and commit."""

    branch: str | None = None
    remote: str | None = None
    commit: str | None = None


def working_tree(path: Path, *, timeout: float) -> WorkingTree:
    """Git facts of a local directory; all None when it is not (inside) a git working tree."""
    commit = head_commit(path, timeout=timeout)
    if commit is None:
        return WorkingTree()

    def ask(args: list[str]) -> str | None:
        try:
            return run_git(args, cwd=path, timeout=timeout, action=args[0]).strip() or None
        except (GitFailed, OSError):
            return None

    branch = ask(["rev-parse", "--abbrev-ref", "HEAD"])
    remote = ask(["remote", "get-url", "origin"])
    return WorkingTree(
        branch=None if branch in (None, "HEAD") else branch,  # HEAD: detached, on no branch
        remote=public_remote(remote) if remote else None,
        commit=commit,
    )
