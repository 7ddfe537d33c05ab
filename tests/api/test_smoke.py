"""A first end-to-end pass through every layer of the data plane."""

from tests.conftest import Gateway


def test_add_then_search_finds_chinese_and_english(gateway: Gateway) -> None:
    messages = [{"role": "user", "content": "我喜欢吃四川火锅, and hiking in the Alps"}]
    added = gateway.ok("/v3/conversation/add", {"session_id": "s1", "messages": messages})
    assert added["total_count"] == 1
    for query in ("火锅", "hike", "四川"):
        hits = gateway.ok("/v3/conversation/search", {"query": query})["messages"]
        assert [h["id"] for h in hits] == added["accepted_ids"], query
