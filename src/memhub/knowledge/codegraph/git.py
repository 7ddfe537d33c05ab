"""Git sources of code graphs: which repository URLs and branches are accepted, and the git commands a
build runs (clone, fetch + reset, HEAD) — as subprocesses, with a timeout, never through a shell.

Credentials are never stored: a URL carrying them (`https://user:token@host/…`) is refused, and git
runs with prompts off, so a private repository fails at once instead of waiting for a password. Only
the transports a server should reach for a user are accepted (https, http, ssh, git, file and the
scp form `git@host:org/repo.git`); git's `ext::` transport, which runs commands, is refused and also
disabled on every command.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from memhub.errors import BadRequest

SCHEMES = ("https", "http", "ssh", "git", "file")
URL_MAX = 2048
BRANCH_MAX = 255
COMMIT_CHARS = 12
ERROR_LINES = 3
# `user@host:path` (scp form); a `::` would be git's `<transport>::<address>` syntax.
_SCP = re.compile(r"^(?:[A-Za-z0-9._-]+@)?[A-Za-z0-9][A-Za-z0-9.-]*:(?!:)\S+$")
_BRANCH = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._/+-]*$")
_HEX = re.compile(r"^[0-9a-f]{40,64}$")
# Every git command: no `ext::` transport, no pager, no advice in the error text agents read.
_GIT = ("git", "-c", "protocol.ext.allow=never", "-c", "core.pager=cat", "-c", "advice.detachedHead=false")


class GitFailed(Exception):
    """A git command failed or timed out; the message is git's own error, short enough for `sync_error`."""


@dataclass(frozen=True, slots=True)
class RepoUrl:
    """An accepted repository URL; `local_path` is set for `file://` URLs (checked against the source roots)."""

    url: str
    local_path: Path | None = None


def check_repo_url(value: str) -> RepoUrl:
    """The URL if git may fetch it for a user, or 400 naming what is wrong with it."""
    url = value.strip().rstrip("/")
    if not url or len(url) > URL_MAX or any(c.isspace() or ord(c) < 32 for c in url):
        raise BadRequest(f"repo_url: must be a git URL of at most {URL_MAX} characters without spaces")
    if url.startswith("-"):
        raise BadRequest("repo_url: must not start with '-'")
    if "://" not in url:
        if not _SCP.match(url):
            raise BadRequest(
                "repo_url: must be an https, http, ssh, git or file URL, or the scp form user@host:path "
                "(a local directory goes in source_path)"
            )
        return RepoUrl(url)
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise BadRequest(f"repo_url: unsupported scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    if parts.password is not None or (scheme in ("http", "https") and parts.username is not None):
        raise BadRequest(
            "repo_url: must not carry credentials (user:token@…); memhub never stores them — use a public URL, "
            "an SSH URL the server's key can read, or a local clone under MEMHUB_CODE_SOURCE_ROOTS"
        )
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise BadRequest("repo_url: a file:// URL must name a path on this server (file:///path)")
        if "\x00" in unquote(parts.path):
            raise BadRequest("repo_url: a file:// URL must not contain NUL characters (%00)")
        path = Path(unquote(parts.path))
        if not path.is_absolute():
            raise BadRequest("repo_url: a file:// URL must hold an absolute path")
        return RepoUrl(urlunsplit(("file", "", parts.path, "", "")), path)
    if not parts.hostname:
        raise BadRequest("repo_url: must name a host")
    return RepoUrl(url)


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


def public_remote(url: str) -> str:
    """A remote URL with any user and password removed, fit to show and to store."""
    if "://" not in url:
        return url  # scp form: the user is an SSH login, not a secret
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["GIT_TERMINAL_PROMPT"] = "0"  # a repository that needs a password fails instead of waiting for one
    env["GIT_ASKPASS"] = "true"  # … and so does a configured credential prompt program
    env.pop("SSH_ASKPASS", None)
    env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
    env["LC_ALL"] = "C"  # error text in English, as sync_error documents it
    return env


def _error_text(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("Cloning into")]
    return " ".join(lines[-ERROR_LINES:]) or "no error output"


def run_git(args: list[str], *, cwd: Path | None, timeout: float, action: str) -> str:
    """Run one git command; its stdout, or GitFailed with git's error (or the timeout)."""
    # A new session, so a timeout kills git's helpers (remote-https, ssh) with it.
    process = subprocess.Popen(
        [*_GIT, *args],
        cwd=cwd,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise GitFailed(f"git {action} timed out after {timeout:g} s") from None
    if process.returncode != 0:
        raise GitFailed(f"git {action} failed: {_error_text(stderr)}")
    return stdout


def clone(url: str, branch: str, target: Path, *, timeout: float) -> None:
    """A shallow clone of one branch into `target` (replaced whole: a half-done clone is never left there)."""
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    try:
        run_git(
            ["clone", "--depth", "1", "--branch", branch, "--no-tags", "--", url, str(partial)],
            cwd=partial.parent,
            timeout=timeout,
            action="clone",
        )
    except GitFailed:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)


def update(checkout: Path, branch: str, *, timeout: float) -> None:
    """Bring a shallow clone to the branch's newest commit (a force-push included) and drop stray files."""
    run_git(["fetch", "--depth", "1", "--no-tags", "origin", branch], cwd=checkout, timeout=timeout, action="fetch")
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
