"""A stand-alone writer process for the multi-process tests (run as a script, not collected).

Usage: python writer_client.py '<json job>'; prints one JSON line with every id the server
acknowledged. Job fields: url, key, service, scope, worker, requests, batch, atomics.
"""

from __future__ import annotations

import json
import sys

import httpx


def run(job: dict) -> dict:
    headers = {
        "authorization": f"Bearer {job['key']}",
        "x-tdai-service-id": job["service"],
        "content-type": "application/json",
    }
    session = f"proc-{job['worker']}"
    messages: list[str] = []
    atomics: list[str] = []
    with httpx.Client(base_url=job["url"], headers=headers, timeout=job.get("timeout", 10.0)) as http:
        for i in range(job["requests"]):
            batch = [
                {"role": "user" if n % 2 == 0 else "assistant", "content": f"worker {job['worker']} req {i} msg {n}"}
                for n in range(job["batch"])
            ]
            body = {**job["scope"], "session_id": session, "messages": batch}
            response = http.post("/v3/conversation/add", json=body)
            envelope = response.json()
            if response.status_code != 200 or envelope["code"] != 0:
                raise SystemExit(f"conversation/add failed: {response.status_code} {envelope}")
            messages.extend(envelope["data"]["accepted_ids"])
        for i in range(job["atomics"]):
            body = {**job["scope"], "type": "episodic", "content": f"worker {job['worker']} fact {i}"}
            response = http.post("/v3/atomic/add", json=body)
            envelope = response.json()
            if response.status_code != 200 or envelope["code"] != 0:
                raise SystemExit(f"atomic/add failed: {response.status_code} {envelope}")
            atomics.append(envelope["data"]["id"])
    return {"worker": job["worker"], "messages": messages, "atomics": atomics}


if __name__ == "__main__":
    print(json.dumps(run(json.loads(sys.argv[1]))), flush=True)
