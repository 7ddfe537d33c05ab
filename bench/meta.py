#!/usr/bin/env python3
"""Management-plane benchmark: what user-key authorization adds to a data-plane request, and
`asset/list-accessible` over 1,000 assets.

(a) in-process, on a real SQLite file: `Users.authenticate` (keyed-hash lookup of the key, user
    check) + `DataPlaneAccess.authorize` (membership, agent, visibility) per request, against the
    gateway-key path (no lookup);
(b) over HTTP against `memhub serve`: `conversation/count` with the gateway key alone and with a
    user key, interleaved so that both see the same machine state; the difference of the
    medians is the overhead a client sees;
(c) `asset/list-accessible` for a team member, with --assets assets (default 1,000) in the team.

Prints a Markdown table and writes JSON to bench/results/meta.json.

    python bench/meta.py            # full run
    python bench/meta.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import HERE, KEY, SERVICE, Latency, client, git_rev, ok_data, running_server
from memhub.meta.caller import Caller
from memhub.meta.keys import load_key_hasher
from memhub.meta.services import MetaServices
from memhub.scope import Isolation
from memhub.store.factory import open_store

DEFAULT_OUT = HERE / "results" / "meta.json"
AIM_ADDED_MS = 1.0
BM25_ONLY = {"MEMHUB_EMBEDDING_PROVIDER": "none"}


def in_process(iterations: int) -> dict[str, Latency]:
    """Auth + authorization cost without HTTP, on a fresh SQLite data dir."""
    with tempfile.TemporaryDirectory(prefix="memhub-bench-meta-") as tmp:
        store = open_store(Path(tmp))
        meta = MetaServices.over(store.meta, load_key_hasher(Path(tmp)))
        admin = meta.init_admin(SERVICE, "root", None, "bench")
        root = Caller(SERVICE, admin["user_id"], "system_admin")
        user = meta.users.create(root, {"username": "alice"})
        meta.teams.add_member(root, {"team_id": admin["team_id"], "user_id": user["user_id"]})
        alice = Caller(SERVICE, user["user_id"])
        agent = meta.agents.create(
            alice, {"team_id": admin["team_id"], "owner_user_id": user["user_id"], "name": "a", "visibility": "team"}
        )
        isolation = Isolation(SERVICE, admin["team_id"], user["user_id"], agent["agent_id"])
        key = user["default_user_key"]
        user_path, gateway_path = [], []
        for _ in range(iterations):
            start = time.perf_counter()
            caller = meta.users.authenticate(SERVICE, key)
            assert caller is not None
            meta.access.authorize(caller, isolation)
            user_path.append(time.perf_counter() - start)
            start = time.perf_counter()
            meta.access.authorize(Caller(SERVICE), isolation)
            gateway_path.append(time.perf_counter() - start)
        store.close()
    return {"user key": Latency.of(user_path), "gateway key": Latency.of(gateway_path)}


def _setup(http: Any) -> tuple[dict[str, Any], dict[str, str], dict[str, str], dict[str, str]]:
    """An admin, a member (alice) with her agent, and one message to count."""
    admin = ok_data(http, "/v3/internal/meta/user/init-admin", {"username": "root"})
    as_root = {"x-tdai-user-key": admin["user_key"]}
    team = admin["team_id"]
    user = ok_data(http, "/v3/meta/user/create", {"username": "alice"}, as_root)
    ok_data(http, "/v3/meta/team-member/add", {"team_id": team, "user_id": user["user_id"]}, as_root)
    as_alice = {"x-tdai-user-key": user["default_user_key"]}
    agent = {"team_id": team, "owner_user_id": user["user_id"], "name": "a"}
    body = {"team_id": team, "agent_id": ok_data(http, "/v3/meta/agent/create", agent, as_alice)["agent_id"]}
    body["user_id"] = user["user_id"]
    ok_data(http, "/v3/conversation/add", {**body, "messages": [{"role": "user", "content": "hello"}]})
    return admin, as_root, as_alice, body


def over_http(python: str, requests: int, assets: int, listings: int) -> dict[str, Any]:
    """Data-plane latency with and without a user key, then list-accessible over many assets."""
    with (
        tempfile.TemporaryDirectory(prefix="memhub-bench-meta-") as tmp,
        running_server(Path(tmp) / "data", python, BM25_ONLY) as server,
        client(server) as http,
    ):
        admin, as_root, as_alice, body = _setup(http)
        with_key: list[float] = []
        without: list[float] = []
        order = [({}, without), (as_alice, with_key)]
        for i in range(requests):
            # Interleaved, alternating which goes first: both paths see the same machine state.
            for headers, sink in order if i % 2 else order[::-1]:
                start = time.perf_counter()
                ok_data(http, "/v3/conversation/count", body, headers)
                sink.append(time.perf_counter() - start)
        for n in range(assets):
            asset = {
                "asset_id": f"bench-asset-{n}",
                "team_id": admin["team_id"],
                "asset_type": ("skill", "llm_wiki", "code_graph")[n % 3],
                "name": f"asset {n}",
                "owner_user_id": admin["user_id"],
                "source_type": "bench",
                "visibility": ("team", "restricted", "private", "agent")[n % 4],
                "status": "approved",
            }
            ok_data(http, "/v3/meta/asset/create", asset, as_root)
        listing: list[float] = []
        readable = 0
        for _ in range(listings):
            start = time.perf_counter()
            page = ok_data(http, "/v3/meta/asset/list-accessible", {"user_id": body["user_id"], "limit": 100}, as_alice)
            listing.append(time.perf_counter() - start)
            readable = page["total"]
    return {
        "gateway key": Latency.of(without),
        "user key": Latency.of(with_key),
        "list-accessible": Latency.of(listing),
        "accessible": readable,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small smoke run")
    parser.add_argument("--iterations", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--assets", type=int, default=1000)
    parser.add_argument("--listings", type=int, default=200)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations, args.requests, args.assets, args.listings = 300, 100, 100, 20

    local = in_process(args.iterations)
    http = over_http(sys.executable, args.requests, args.assets, args.listings)
    added_local = local["user key"].p50_ms - local["gateway key"].p50_ms
    added_http = http["user key"].p50_ms - http["gateway key"].p50_ms
    added_http_p95 = http["user key"].p95_ms - http["gateway key"].p95_ms

    rows = [
        ("in-process auth + authorize, gateway key", local["gateway key"]),
        ("in-process auth + authorize, user key", local["user key"]),
        ("HTTP conversation/count, gateway key", http["gateway key"]),
        ("HTTP conversation/count, user key", http["user key"]),
        (f"HTTP asset/list-accessible, {args.assets} assets ({http['accessible']} readable)", http["list-accessible"]),
    ]
    print("| path | n | p50 ms | p95 ms | p99 ms |")
    print("|---|---:|---:|---:|---:|")
    for name, lat in rows:
        print(f"| {name} | {lat.n} | {lat.p50_ms:.3f} | {lat.p95_ms:.3f} | {lat.p99_ms:.3f} |")
    print(
        f"\nadded by a user key: {added_local:.3f} ms in-process (p50), {added_http:.3f} ms p50 / "
        f"{added_http_p95:.3f} ms p95 over HTTP; aim <= {AIM_ADDED_MS} ms"
    )
    result = {
        "benchmark": "meta",
        "git": git_rev(),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "args": {k: str(v) for k, v in vars(args).items()},
        "rows": [{"path": name, **vars(lat)} for name, lat in rows],
        "added_ms": {"in_process_p50": added_local, "http_p50": added_http, "http_p95": added_http_p95},
        "aim_added_ms": AIM_ADDED_MS,
        "key": KEY[:6] + "…",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
