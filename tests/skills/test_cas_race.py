"""Two writers holding the same version, over HTTP: exactly one wins each round and no version is lost."""

from __future__ import annotations

import threading
from typing import Any

from tests.conftest import Gateway
from tests.skills.helpers import IDS, call, create, skill_md

ROUNDS = 15


def _round(gw: Gateway, sid: str, expected: int) -> dict[str, Any]:
    """Writers a and b both update from `expected`, released together; their envelopes by writer."""
    barrier = threading.Barrier(2)
    answers: dict[str, Any] = {}

    def write(writer: str) -> None:
        body = {**IDS, "skill_id": sid, "expected_version": expected}
        body["content"] = skill_md(description=f"round {expected} by {writer}")
        barrier.wait()
        answers[writer] = gw.client.post("/v3/skill/update", json=body, headers=gw.headers()).json()

    threads = [threading.Thread(target=write, args=(w,)) for w in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def test_one_writer_wins_each_round(gw: Gateway) -> None:
    sid = create(gw)["skill_id"]
    winners: list[str] = []
    for round_no in range(1, ROUNDS + 1):
        answers = _round(gw, sid, round_no)
        assert sorted(a["code"] for a in answers.values()) == [0, 40901], answers
        (winner,) = [w for w, a in answers.items() if a["code"] == 0]
        (loser,) = [a for a in answers.values() if a["code"] == 40901]
        assert answers[winner]["data"]["version"] == round_no + 1
        assert loser["data"] == {"current_version": round_no + 1}
        winners.append(winner)
    items = call(gw, "versions", {"skill_id": sid, "pagination": {"limit": 100}})["items"]
    assert [i["version"] for i in items] == list(range(ROUNDS + 1, 0, -1))
    for round_no, winner in enumerate(winners, start=1):
        version = call(gw, "get", {"skill_id": sid, "version": round_no + 1})
        assert version["description"] == f"round {round_no} by {winner}"
