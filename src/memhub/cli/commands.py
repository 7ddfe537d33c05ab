"""The `memhub` command: `serve` runs the gateway, `init` prepares a data dir and its key; `mcp` and `hooks`
(memhub.cli.integrations) connect agents to a running gateway."""

from __future__ import annotations

import ipaddress
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from memhub.cli.integrations import hooks_app, mcp_app

if TYPE_CHECKING:
    from memhub.gateway_key import GatewayKey
    from memhub.settings import Settings
    from memhub.store import MemoryStore

# The server's modules are imported by the commands that run it, not here: `memhub hooks run` starts once per
# hook event of an agent, and must not pay for loading the gateway (seconds) to send one request.
app = typer.Typer(help="memhub: a team-level memory hub for AI agents.", no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")
app.add_typer(hooks_app, name="hooks")
log = logging.getLogger("memhub")


def _settings(**overrides: Any) -> Settings:
    from memhub.settings import Settings

    return Settings(**{k: v for k, v in overrides.items() if v is not None})


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _announce_key(key: str, data_dir: Path) -> None:
    # Printed once and never stored in clear: only its SHA-256 is kept in the data dir.
    typer.echo(
        "\n  memhub gateway key (shown once; only its hash is stored):\n\n"
        f"    {key}\n\n"
        "  Send it as `Authorization: Bearer <key>` with `x-tdai-service-id: <your service id>`.\n"
        f"  Data dir: {data_dir}\n",
        err=False,
    )


def _single_threaded_blas() -> None:
    """One BLAS thread per call: searches run concurrently, and on a busy machine a 2-thread matrix
    product often stalls (a 20k-vector scan took 11.7 ms against 2.7 ms on one thread)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - a dependency, but the gateway works without it
        return
    threadpool_limits(limits=1, user_api="blas")


def _init_admin(settings: Settings, store: MemoryStore, service_id: str, username: str) -> None:
    """The instance's first system admin, its default team and agent; the user key is printed once."""
    from memhub.meta.errors import MetaError
    from memhub.meta.keys import load_key_hasher
    from memhub.meta.services import MetaServices

    meta = MetaServices.over(store.meta, load_key_hasher(settings.data_dir, settings.key_secret))
    try:
        admin = meta.init_admin(service_id, username, None, request_id="cli-init")
    except MetaError as exc:
        if exc.reason != "already_initialized":
            raise
        typer.echo(f"Service {service_id!r} already has its system admin.")
        return
    typer.echo(
        f"\n  System admin of service {service_id!r} (user key shown once; only a keyed hash is stored):\n\n"
        f"    user_id:  {admin['user_id']}\n"
        f"    user_key: {admin['user_key']}\n"
        f"    team_id:  {admin['team_id']}\n"
        f"    agent_id: {admin['agent_id']}\n\n"
        "  Send it as `x-tdai-user-key` (management plane, and to act as this user on the data plane).\n"
    )


def _mount_mcp(api: Any, settings: Settings) -> None:
    """`/mcp` on the gateway when the `mcp` package is installed (an extra), else a line saying how to get it."""
    try:
        from memhub.mcp.http import mount
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in ("mcp", "mcp_types", "httpx2"):
            raise
        log.info("MCP endpoint /mcp is off: install it with pip install 'memhub[mcp]'")
        return
    mount(
        api,
        allowed_hosts=settings.mcp_allowed_hosts,
        allowed_origins=settings.mcp_allowed_origins,
        public_urls=(settings.knowledge_public_url, settings.proxy_public_url),
    )


@app.command()
def init(
    data_dir: Annotated[Path | None, typer.Option(help="Data directory (env MEMHUB_DATA_DIR)")] = None,
    rotate_key: Annotated[bool, typer.Option(help="Replace the gateway key with a new one")] = False,
    service_id: Annotated[
        str, typer.Option(help="Service id (tenant) whose first system admin is created")
    ] = "default",
    admin: Annotated[str, typer.Option(help="Username of the first system admin")] = "admin",
) -> None:
    """Create the data dir, the gateway key and the first system admin (keys printed once)."""
    from memhub.gateway_key import ensure_gateway_key
    from memhub.runtime import open_store

    settings = _settings(data_dir=data_dir)
    store = open_store(settings)
    try:
        if settings.gateway_api_key:
            typer.echo("A gateway key is configured in the environment; nothing to create.")
        else:
            setup = ensure_gateway_key(store, rotate=rotate_key)
            if setup.created_key:
                _announce_key(setup.created_key, settings.data_dir)
            else:
                typer.echo(f"Already initialised: {settings.data_dir} (use --rotate-key for a new key).")
        _init_admin(settings, store, service_id.strip() or "default", admin)
    finally:
        store.close()


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Bind address (env MEMHUB_HOST / TDAI_GATEWAY_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (env MEMHUB_PORT / TDAI_GATEWAY_PORT)")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Data directory (env MEMHUB_DATA_DIR / TDAI_DATA_DIR)")] = None,
    insecure_no_auth: Annotated[
        bool, typer.Option("--insecure-no-auth", help="Run without the gateway key (any Bearer is accepted)")
    ] = False,
    knowledge_only: Annotated[
        bool,
        typer.Option(
            "--knowledge-only", help="Serve only the knowledge service (wiki, tools) on its own port (default 8421)"
        ),
    ] = False,
) -> None:
    """Run the gateway (creates the data dir and a gateway key on first start)."""
    from memhub.api import create_app
    from memhub.cli.serving import run as run_server
    from memhub.cli.serving import stop_clock
    from memhub.gateway_key import ensure_gateway_key
    from memhub.index.tokenize import warm_up
    from memhub.memory.embedding import ModelMismatch
    from memhub.runtime import build_hub, dimension_known_offline, embedding_runtime, open_store

    settings = _settings(host=host, port=port, data_dir=data_dir, insecure_no_auth=insecure_no_auth or None)
    if knowledge_only and port is None:
        settings = settings.model_copy(update={"port": settings.knowledge_port})
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    store = open_store(settings)
    key: GatewayKey | None = None
    if settings.insecure_no_auth:
        log.warning(
            "gateway key check DISABLED (--insecure-no-auth): anyone who reaches %s can read and write", settings.host
        )
        if not _is_loopback(settings.host):
            log.warning(
                "insecure mode on a non-loopback address %s: bind 127.0.0.1 or drop --insecure-no-auth", settings.host
            )
    else:
        setup = ensure_gateway_key(store, settings.gateway_api_key)
        key = setup.key
        if setup.created_key:
            _announce_key(setup.created_key, settings.data_dir)
    sys.stdout.flush()
    warm_up()
    _single_threaded_blas()
    clock = stop_clock(settings)
    if knowledge_only:
        api = create_app(build_hub(settings, store, knowledge_only=True), key, stop=clock)
        run_server(api, settings, clock)
        return
    embedding = embedding_runtime(settings, store)
    if dimension_known_offline(settings):
        try:
            embedding.check_model()
        except ModelMismatch as exc:
            store.close()
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
        embedding.warm_up()
    api = create_app(build_hub(settings, store, embedding=embedding), key, stop=clock)  # closes the hub on shutdown
    _mount_mcp(api, settings)
    run_server(api, settings, clock)


@app.command()
def proxy(
    host: Annotated[str | None, typer.Option(help="Bind address (env MEMHUB_HOST)")] = None,
    port: Annotated[int | None, typer.Option(help="Port (env MEMHUB_PROXY_PORT, default 8096)")] = None,
    data_dir: Annotated[Path | None, typer.Option(help="Data directory (env MEMHUB_DATA_DIR)")] = None,
) -> None:
    """Run the memory proxy alone: agents set their LLM base URL to `http://host:port/proxy/<service id>/v1`.

    It serves the proxy, its memory bridge and /health over the gateway's data dir (or store URL); `memhub serve`
    serves the same routes. Extraction and knowledge builds are left to the gateway process.
    """
    from memhub.api import create_app
    from memhub.cli.serving import run as run_server
    from memhub.cli.serving import stop_clock
    from memhub.gateway_key import ensure_gateway_key
    from memhub.index.tokenize import warm_up
    from memhub.runtime import build_hub, open_store

    settings = _settings(host=host, data_dir=data_dir)
    settings = settings.model_copy(update={"port": port or settings.proxy_port, "pipeline_enabled": False})
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    store = open_store(settings)
    setup = ensure_gateway_key(store, settings.gateway_api_key)
    if setup.created_key:
        _announce_key(setup.created_key, settings.data_dir)
    if not _is_loopback(settings.host):
        log.info("memory proxy on %s: callers authenticate with their memhub user keys", settings.host)
    warm_up()
    clock = stop_clock(settings)
    api = create_app(build_hub(settings, store), setup.key, run_pipeline=False, proxy_only=True, stop=clock)
    run_server(api, settings, clock)


@app.command()
def reembed(
    data_dir: Annotated[Path | None, typer.Option(help="Data directory (env MEMHUB_DATA_DIR)")] = None,
    force: Annotated[bool, typer.Option(help="Rebuild even if the vectors match the configured model")] = False,
) -> None:
    """Rebuild every vector with the configured embedding model (run it with the gateway stopped).

    Needed after changing the model: memhub refuses to start with vectors of another model. An
    interrupted run resumes where it stopped when started again.
    """
    from memhub.model import EmbeddingModel
    from memhub.retrieval.embed import EmbeddingError
    from memhub.runtime import embedding_runtime, open_store

    settings = _settings(data_dir=data_dir)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    store = open_store(settings)
    runtime = embedding_runtime(settings, store)
    try:
        if runtime.embedder is None:
            typer.echo("error: the embedding provider is 'none'; configure one (MEMHUB_EMBEDDING_PROVIDER)", err=True)
            raise typer.Exit(2)
        try:
            model = EmbeddingModel(runtime.embedder.model_id, runtime.embedder.dim)
        except EmbeddingError as exc:
            typer.echo(f"error: the embedding provider did not answer: {exc}", err=True)
            raise typer.Exit(1) from exc
        if force or store.embedding_model() != model:
            store.reset_embeddings(model)
        total = store.embedding_backlog()
        typer.echo(f"Embedding {total} records with {model.model_id} ({model.dim}-d) …")
        runtime.check_model()
        done, last_report = 0, time.monotonic()
        while True:
            try:
                if not runtime.run_once():
                    break
            except EmbeddingError as exc:
                typer.echo(f"error: {exc} — run `memhub reembed` again to resume", err=True)
                raise typer.Exit(1) from exc
            done = total - store.embedding_backlog()
            if time.monotonic() - last_report >= 5:
                typer.echo(f"  {done}/{total}")
                last_report = time.monotonic()
        typer.echo(f"Done: {total} records embedded.")
    finally:
        runtime.close()
        store.close()


wiki_app = typer.Typer(help="Team wiki tools.", no_args_is_help=True)
app.add_typer(wiki_app, name="wiki")


@wiki_app.command("index")
def wiki_index(
    root: Annotated[Path, typer.Argument(help="The wiki's root folder (themes are its top-level folders)")],
    check: Annotated[bool, typer.Option(help="Only validate the existing index.json files")] = False,
) -> None:
    """Generate the two-layer index (index.json files) from front matter and headings, or check it."""
    from memhub.knowledge.wiki.index import IndexInvalid, validate_index, write_index

    if not root.is_dir():
        typer.echo(f"error: {root} is not a directory", err=True)
        raise typer.Exit(2)
    try:
        if check:
            _, issues = validate_index(root)
            if issues:
                raise IndexInvalid(issues)
            typer.echo(f"{root}: index is valid")
            return
        for path in write_index(root):
            typer.echo(f"wrote {path}")
    except IndexInvalid as exc:
        for issue in exc.issues:
            typer.echo(str(issue), err=True)
        raise typer.Exit(1) from None
