"""A complete agent loop on memhub's SDK: recall → prompt → LLM with memory tools → answer → capture.

Run with no arguments and it does the whole demo offline: a scripted fake LLM (fake_llm.py) in this
process, `memhub serve` as a subprocess on a free port with a temporary data dir, a few seeded
memories, three turns, then the gateway is stopped mid-conversation and two more turns show the agent
still answering. `--llm-url` (or OPENAI_BASE_URL) uses a real OpenAI-compatible model instead;
`--endpoint` uses a memhub that is already running. See examples/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from memhub.sdk import MemoryClient
from memhub.sdk.agent import AgentConfig, MemoryAgent

BASE_SYSTEM = "You are a helpful assistant with a long-term memory of this user."
MAX_TOOL_ROUNDS = 3
SERVICE_ID, TEAM_ID, AGENT_ID, USER_ID = "demo-service", "demo-team", "demo-agent", "demo-user"
# An earlier conversation: memhub's pipeline turns it into L1 memories (offline rules, well under a second).
ONBOARDING = (
    ("user", "I prefer green tea, never coffee after 2 pm."),
    ("assistant", "Got it: green tea, and no coffee after 2 pm."),
    ("user", "Remember: never deploy between Thursday noon and Monday morning, that's our deploy freeze."),
    ("assistant", "Understood, no deploys during the freeze."),
    ("user", "I booked flights to Lisbon for the company offsite on 14 March."),
    ("assistant", "Lisbon on 14 March, noted."),
)
TURNS = (
    "Which tea do I prefer?",  # recall already holds the answer
    "Can I go ahead deploying the billing service tomorrow?",  # the model searches memory with a tool
    "Note: my new desk is room 4.12 on the fourth floor.",  # a statement, captured for later
)
TURNS_WITHOUT_MEMORY = (
    "Where is the company offsite this year?",
    "Note: I moved the offsite dinner to Friday.",
)


# --------------------------------------------------------------------------- the agent


class ChatLLM:
    """The smallest OpenAI Chat Completions client a tool loop needs (non-streaming)."""

    def __init__(self, base_url: str, api_key: str, model: str) -> None:
        self.base_url, self.model = base_url.rstrip("/"), model
        self.calls = 0
        self.tokens = 0
        self.http = httpx.Client(base_url=self.base_url, headers={"authorization": f"Bearer {api_key}"}, timeout=120.0)

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> dict[str, Any]:
        """One completion; returns the assistant message (content and maybe tool_calls)."""
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            body["tools"] = tools
        response = self.http.post("/chat/completions", json=body)
        response.raise_for_status()
        data = response.json()
        self.calls += 1
        self.tokens += int((data.get("usage") or {}).get("total_tokens") or 0)
        message = data["choices"][0]["message"]
        # Only what the API defines goes back into the history; providers differ in the extras they add.
        reply: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            reply["tool_calls"] = message["tool_calls"]
        return reply

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.http.close()


def run_turn(agent: MemoryAgent, llm: ChatLLM, messages: list[dict[str, Any]], user_text: str) -> str:
    """One turn: recall, build the prompt, call the LLM (answering its tool calls), capture; returns the answer."""
    print(f"[user] {user_text}")
    before = len(messages)
    r = agent.recall(user_text, messages=messages)
    if r.degraded:
        print(f"[degraded] recall: {', '.join(r.degraded)}")
    found = f"[recall] {len(r.memories)} {'memory' if len(r.memories) == 1 else 'memories'} in {r.elapsed_ms:.0f} ms"
    if r.memories:
        found += f" (best: [{r.memories[0].get('type')}] {r.memories[0].get('content')})"
    print(found)
    # The stable part (persona, scene paths, tools guide) ends the system prompt, where a provider's
    # prompt cache keeps it; this turn's memories go in front of the user's words.
    messages[0] = {"role": "system", "content": r.system_prompt(BASE_SYSTEM)}
    messages.append({"role": "user", "content": r.user_message(user_text)})

    tools = agent.tool_definitions("openai")
    answer = ""
    for round_no in range(MAX_TOOL_ROUNDS + 1):
        # The last round offers no tools: after three the model answers with what it has.
        reply = llm.chat(messages, tools if round_no < MAX_TOOL_ROUNDS else None)
        messages.append(reply)
        if not reply.get("tool_calls"):
            answer = reply.get("content") or ""
            break
        for call in reply["tool_calls"]:
            name, arguments = call["function"]["name"], call["function"].get("arguments") or "{}"
            print(f"[tool] {name}({arguments})")
            result = agent.dispatch(name, arguments)  # never raises: errors read "memory unavailable: …"
            print("[tool] -> " + " | ".join(result.splitlines()[:3]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    print(f"[assistant] {answer}")

    # Fire-and-forget: the new user/assistant messages go to L0 in the background (the kit swaps the
    # memory-laden user message back to the user's own words and leaves the tool traffic out).
    print(f"[capture] queued {agent.capture(messages, since=before)}")
    # Later turns keep only the user's words: the memories injected here were for this turn.
    messages[before]["content"] = user_text
    return answer


# --------------------------------------------------------------------------- the demo around it


def free_port() -> int:
    """A loopback port that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Gateway:
    """`memhub serve` as a subprocess on a free port over a temporary data dir."""

    def __init__(self, workdir: Path) -> None:
        self.key = "mh-gw-example-" + secrets.token_hex(16)  # configured, so no key is printed or stored
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "memhub.log"
        env = {**os.environ, "MEMHUB_GATEWAY_API_KEY": self.key, "MEMHUB_STRICT_ISOLATION": "on"}
        argv = [sys.executable, "-m", "memhub.cli", "serve", "--host", "127.0.0.1", "--port", str(self.port)]
        argv += ["--data-dir", str(workdir / "data")]
        with self.log_path.open("wb") as log:  # a file, never a pipe nobody reads (it would fill and block)
            self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_ready(self, timeout: float = 60.0) -> None:
        """Block until /health answers; RuntimeError with the log's tail if the process dies or is late."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return
            time.sleep(0.1)
        tail = self.log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"memhub serve did not start (exit code {self.proc.poll()}):\n{tail}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it takes more than 10 s."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@contextlib.contextmanager
def gateway() -> Iterator[Gateway]:
    """A started gateway, always stopped (and its data dir removed) on the way out."""
    with tempfile.TemporaryDirectory(prefix="memhub-example-", ignore_cleanup_errors=True) as tmp:
        gw = Gateway(Path(tmp))
        try:
            gw.wait_ready()
            print(f"[setup] memhub serve at {gw.url} (pid {gw.proc.pid}, data in {tmp})")
            yield gw
        finally:
            gw.stop()


def seed(endpoint: str, api_key: str) -> None:
    """Store an earlier conversation (once) and wait until the pipeline has made memories of it."""
    scope = {"team_id": TEAM_ID, "agent_id": AGENT_ID, "user_id": USER_ID}
    # No session bound: counts and searches then span every session of this user and agent.
    with MemoryClient(endpoint, api_key, SERVICE_ID, **scope) as client:
        if client.count_atomic()["total"] > 0:
            print("[seed] memories from an earlier run are there already")
            return
        messages = [{"role": role, "content": content} for role, content in ONBOARDING]
        client.add_conversation(messages, session_id="onboarding")
        started = time.monotonic()
        total = 0
        while time.monotonic() - started < 120 and total < 3:  # three facts, three memories
            time.sleep(0.1)
            total = client.count_atomic()["total"]
        print(f"[seed] an earlier conversation became {total} memories in {time.monotonic() - started:.1f} s")
        # Searches are hybrid once the memories have vectors: wait for the embedder too (it is quick).
        while time.monotonic() - started < 120 and httpx.get(f"{endpoint}/health").json().get("embedding_backlog"):
            time.sleep(0.1)
        client.search_atomic("warm up", limit=1)  # loads the scope's index, so turn 1 shows a warm latency


def main(argv: list[str] | None = None) -> int:
    """Run the demo; 0 when every turn got an answer."""
    parser = argparse.ArgumentParser(description="memhub agent loop example (offline by default)")
    parser.add_argument("--endpoint", help="use this running memhub instead of starting one")
    parser.add_argument("--api-key", default=os.environ.get("MEMHUB_API_KEY"), help="its key [env MEMHUB_API_KEY]")
    parser.add_argument("--stop-demo", action="store_true", help="with --endpoint: also show the outage turns")
    parser.add_argument("--llm-url", default=os.environ.get("OPENAI_BASE_URL"), help="OpenAI-compatible base URL")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), help="model, with --llm-url")
    parser.add_argument("--recall-deadline", type=float, default=1.0, help="seconds a turn waits for recall")
    args = parser.parse_args(argv)
    if args.endpoint and not args.api_key:
        parser.error("--endpoint needs --api-key (or MEMHUB_API_KEY)")
    # The kit logs retries and drops as warnings; stderr keeps them apart from the demo's own lines.
    logging.basicConfig(level=logging.WARNING, format="[log] %(name)s: %(message)s")
    try:
        answers = demo(args)
    except (httpx.HTTPError, RuntimeError) as exc:
        print(f"[error] {type(exc).__name__}: {exc}")
        return 1
    return 0 if answers and all(answers) else 1


def demo(args: argparse.Namespace) -> list[str]:
    """Set up the LLM and the gateway, run the turns (and the outage), tear everything down; returns the answers."""
    answers: list[str] = []
    with contextlib.ExitStack() as stack:
        if args.llm_url:
            llm = ChatLLM(args.llm_url, os.environ.get("OPENAI_API_KEY", "fake"), args.model)
        else:
            from fake_llm import start_fake_llm  # next to this file; only the offline demo needs it

            fake, url = start_fake_llm()
            stack.callback(fake.stop)
            llm = ChatLLM(url, "fake", "fake-llm-1")
        stack.callback(llm.close)
        print(f"[setup] LLM at {llm.base_url} (model {llm.model})")

        gw: Gateway | None = None
        if args.endpoint:
            endpoint, api_key = args.endpoint.rstrip("/"), args.api_key
        else:
            gw = stack.enter_context(gateway())
            endpoint, api_key = gw.url, gw.key
        seed(endpoint, api_key)

        agent = MemoryAgent.connect(
            endpoint,
            api_key,
            SERVICE_ID,
            team_id=TEAM_ID,
            agent_id=AGENT_ID,
            user_id=USER_ID,
            session_id=f"demo-{int(time.time())}",
            # 1 s instead of the 200 ms default: a shared machine can be slow (its test passes far more).
            config=AgentConfig(recall_deadline=args.recall_deadline),
        )
        # Our own gateway is stopped by then: waiting to flush to it would only cost time.
        stack.callback(agent.close, flush_timeout=0 if gw is not None else 5.0)
        messages: list[dict[str, Any]] = [{"role": "system", "content": BASE_SYSTEM}]
        for n, text in enumerate(TURNS, 1):
            print(f"\n== turn {n} ==")
            answers.append(run_turn(agent, llm, messages, text))
        sent = agent.flush(timeout=60.0)  # returns as soon as everything is sent
        print(f"\n[capture] flushed: {agent.stats['capture']['messages_sent']} messages in L0 (all sent: {sent})")

        if gw is not None or args.stop_demo:
            if gw is not None:
                gw.stop()
                print(f"[stop] memhub serve (pid {gw.proc.pid}) stopped: memory is unreachable from here on")
            else:
                input(f"[stop] stop the memhub at {endpoint} now, then press Enter ")
            for n, text in enumerate(TURNS_WITHOUT_MEMORY, len(TURNS) + 1):
                print(f"\n== turn {n} (memory down) ==")
                answers.append(run_turn(agent, llm, messages, text))
            # The queue keeps these and retries until the gateway is back; this demo does not wait that long.
            sent = agent.flush(timeout=1.0)
            pending = agent.stats["capture"]["pending"]
            print(f"\n[capture] {pending} batch(es) wait for the gateway to come back (all sent: {sent})")

        print(f"[llm] {llm.calls} calls, {llm.tokens} tokens")
        print("[stats] " + json.dumps(agent.stats))
    return answers


if __name__ == "__main__":
    sys.exit(main())
