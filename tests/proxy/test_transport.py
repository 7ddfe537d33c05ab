"""The proxy's transport, driven by the real `openai` and `anthropic` clients over HTTP against a fake upstream:
turns in three protocols streamed and not, tool calls, keys, errors passed through, retries, hang-ups."""

from __future__ import annotations

import json
import threading

import anthropic
import httpx
import openai
import pytest

from tests.proxy.conftest import PROVIDER_KEY_ANTHROPIC, PROVIDER_KEY_OPENAI, SPACE, ProxyRig
from tests.proxy.fake_upstream import Reply

TOOL = ("call_1", "lookup", {"city": "Paris"})


def oai(rig: ProxyRig, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        api_key=rig.user_key, base_url=rig.base(), default_headers=rig.identity_headers(**headers), max_retries=0
    )


def claude(rig: ProxyRig, **headers: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key=rig.user_key,
        base_url=rig.base(protocol="anthropic"),
        default_headers=rig.identity_headers(**headers),
        max_retries=0,
    )


def no_memhub_key_upstream(rig: ProxyRig) -> None:
    for request in rig.upstream.requests:
        assert all("sk-mem-" not in v for v in request.headers.values()), request.headers
        assert all(not k.startswith(("x-tdai-", "x-team-id", "x-agent-id")) for k in request.headers)


def test_openai_turn_is_injected_forwarded_and_captured(rig: ProxyRig) -> None:
    raw = oai(rig).chat.completions.with_raw_response.create(
        model="gpt-x",
        messages=[{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello"}],
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "ok from upstream"
    assert raw.headers["x-memhub-memory"] == "injected"
    assert raw.headers["x-upstream-request-id"] == "up-123"  # the upstream's own headers come back
    [sent] = rig.upstream.turns("/v1/chat/completions")
    system = sent.json["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are terse.\n\n<tdai_memory_tools>")
    assert sent.headers["authorization"] == f"Bearer {PROVIDER_KEY_OPENAI}"
    no_memhub_key_upstream(rig)
    [(identity, _, user_text, output)] = rig.capture.turns
    assert (identity.team_id, identity.session_id, user_text) == (rig.team_id, "sess-1", "hello")
    assert output.text == "ok from upstream" and output.complete


def test_openai_without_a_system_message_gets_one(rig: ProxyRig) -> None:
    oai(rig).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    [sent] = rig.upstream.turns("/v1/chat/completions")
    assert sent.json["messages"][0] == {"role": "system", "content": rig.injector.flat([_block()])}
    assert sent.json["messages"][1] == {"role": "user", "content": "hi"}


def _block():  # type: ignore[no-untyped-def]
    from tests.proxy.conftest import BLOCK

    return BLOCK


def test_openai_stream_with_tool_calls_passes_through_and_is_tapped(rig: ProxyRig) -> None:
    rig.upstream.script(Reply(text="let me look", tool_calls=[TOOL]))
    stream = oai(rig).chat.completions.create(
        model="gpt-x", messages=[{"role": "user", "content": "weather?"}], stream=True
    )
    text, args, names = "", "", []
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for call in delta.tool_calls or []:
            names += [call.function.name] if call.function and call.function.name else []
            args += call.function.arguments or "" if call.function else ""
    assert (text, names, json.loads(args)) == ("let me look", ["lookup"], {"city": "Paris"})
    assert rig.capture.got.wait(30)
    [(_, _, _, output)] = rig.capture.turns
    assert output.text == "let me look" and output.complete
    assert [(c.id, c.name, json.loads(c.arguments)) for c in output.tool_calls] == [TOOL]
    assert output.usage["total_tokens"] == 16


def test_the_first_event_reaches_the_client_before_the_upstream_has_finished(rig: ProxyRig) -> None:
    release = threading.Event()
    rig.upstream.script(Reply(text="abcdef", hold=release))
    with oai(rig).chat.completions.create(
        model="gpt-x", messages=[{"role": "user", "content": "go"}], stream=True
    ) as stream:
        chunks = iter(stream)
        first = next(chunks)  # the upstream sends the rest only once `release` is set
        assert first.choices[0].delta.content == "abc"
        assert not rig.capture.turns
        release.set()
        rest = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert rest == "def"


def test_a_client_hanging_up_mid_stream_closes_the_upstream_stream(rig: ProxyRig) -> None:
    rig.upstream.script(Reply(text="abcdef", hang=True))
    with claude(rig).messages.stream(
        model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "go"}]
    ) as stream:
        next(iter(stream))  # message_start arrived; the upstream holds the rest
    assert rig.upstream.closed_mid_stream.wait(60), "the proxy kept the upstream stream open"
    assert not rig.capture.turns  # an unfinished turn is not captured


def test_a_client_closing_its_connection_as_the_last_event_arrives_still_has_its_turn_captured(
    rig: ProxyRig,
) -> None:
    body = {"model": "gpt-x", "stream": True, "messages": [{"role": "user", "content": "weather?"}]}
    headers = {"authorization": f"Bearer {rig.user_key}", **rig.identity_headers()}
    with (
        httpx.Client(base_url=rig.base(), timeout=60) as http,
        http.stream("POST", "/chat/completions", json=body, headers=headers) as response,
    ):
        received = b""
        for chunk in response.iter_raw():
            received += chunk
            if b"[DONE]" in received:
                break  # and the connection is closed at once, as a client done with the answer does
    assert rig.capture.got.wait(60)
    [(_, _, user_text, output)] = rig.capture.turns
    assert user_text == "weather?" and output.complete and output.text == "ok from upstream"


def test_anthropic_turn_keeps_cache_control_and_version_headers(rig: ProxyRig) -> None:
    rig.upstream.script(Reply(text="", tool_calls=[TOOL]))
    system = [
        {"type": "text", "text": "You are Claude Code."},
        {"type": "text", "text": "# Memory\nnotes", "cache_control": {"type": "ephemeral"}},
    ]
    raw = claude(rig).messages.with_raw_response.create(
        model="claude-x",
        max_tokens=100,
        system=system,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": [{"type": "text", "text": "weather?"}]}],
        extra_headers={"anthropic-beta": "tools-2024"},
        extra_query={"beta": "true"},  # as Claude Code sends it
    )
    message = raw.parse()
    assert message.content[0].type == "tool_use" and message.content[0].input == {"city": "Paris"}
    assert raw.headers["x-memhub-memory"] == "injected"
    [sent] = rig.upstream.turns("/v1/messages")
    assert sent.headers["x-api-key"] == PROVIDER_KEY_ANTHROPIC
    assert sent.headers["anthropic-version"] and sent.headers["anthropic-beta"] == "tools-2024"
    assert sent.query == "beta=true"
    assert sent.json["system"][0] == system[0]
    assert sent.json["system"][1]["cache_control"] == {"type": "ephemeral"}
    assert sent.json["system"][1]["text"].startswith("# Memory\nnotes\n\n<tdai_memory_tools>")
    no_memhub_key_upstream(rig)
    [(_, _, user_text, output)] = rig.capture.turns
    assert user_text == "weather?"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in output.tool_calls] == [TOOL]


def test_anthropic_stream_with_a_tool_call_is_tapped(rig: ProxyRig) -> None:
    rig.upstream.script(Reply(text="checking", tool_calls=[TOOL]))
    with claude(rig).messages.stream(
        model="claude-x", max_tokens=100, messages=[{"role": "user", "content": "weather?"}]
    ) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "checking"  # type: ignore[union-attr]
    assert final.content[1].input == {"city": "Paris"}  # type: ignore[union-attr]
    assert rig.capture.got.wait(30)
    [(_, _, _, output)] = rig.capture.turns
    assert output.text == "checking" and output.finish_reason == "tool_use"
    assert [(c.id, c.name, json.loads(c.arguments)) for c in output.tool_calls] == [TOOL]


def test_responses_turn_carries_the_injections_as_the_last_part_of_the_first_item(rig: ProxyRig) -> None:
    client = openai.OpenAI(
        api_key=rig.user_key, base_url=rig.base("codex"), default_headers=rig.identity_headers(), max_retries=0
    )
    developer = {"role": "developer", "content": [{"type": "input_text", "text": "be careful"}]}
    user = {"role": "user", "content": [{"type": "input_text", "text": "fix it"}]}
    response = client.responses.create(model="gpt-x", input=[developer, user])  # type: ignore[list-item]
    assert response.output_text == "ok from upstream"
    rig.upstream.script(Reply(text="streamed", tool_calls=[TOOL]))
    with client.responses.stream(model="gpt-x", input=[developer, user]) as stream:  # type: ignore[list-item]
        final = stream.get_final_response()
    assert final.output_text == "streamed"
    first, second = rig.upstream.turns("/v1/responses")
    for sent in (first, second):
        parts = sent.json["input"][0]["content"]
        assert parts[0] == {"type": "input_text", "text": "be careful"}
        assert parts[-1]["text"] == f"<tdai_injections>\n{_block().text}\n</tdai_injections>"
    assert first.body == second.body.replace(b',"stream":true', b"")  # one prefix for both turns
    assert rig.capture.got.wait(30)
    outputs = [t[3] for t in rig.capture.turns]
    assert [o.text for o in outputs] == ["ok from upstream", "streamed"]
    assert outputs[1].tool_calls[0].name == "lookup"


def test_upstream_errors_come_back_exactly_as_sent(rig: ProxyRig) -> None:
    body = b'{"error":{"message":"slow down","type":"rate_limit_error"}}'
    rig.upstream.script(
        Reply(status=429, error_body=body), Reply(status=503, error_body=b"busy", error_type="text/plain")
    )
    payload = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}
    headers = {"authorization": f"Bearer {rig.user_key}", **rig.identity_headers()}
    with httpx.Client(base_url=rig.base()) as http:
        limited = http.post("/chat/completions", json=payload, headers=headers)
        busy = http.post("/chat/completions", json={**payload, "stream": True}, headers=headers)
    assert (limited.status_code, limited.content, limited.headers["content-type"]) == (429, body, "application/json")
    assert (busy.status_code, busy.content, busy.headers["content-type"]) == (503, b"busy", "text/plain")
    rig.upstream.script(Reply(status=429, error_body=body))
    with pytest.raises(openai.RateLimitError) as raised:
        oai(rig).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.body == {"message": "slow down", "type": "rate_limit_error"}
    assert not rig.capture.turns


def test_an_unreachable_upstream_is_a_502_in_the_callers_protocol(make_rig) -> None:  # type: ignore[no-untyped-def]
    rig = make_rig(upstream_up=False)
    with pytest.raises(openai.APIStatusError) as raised:
        oai(rig).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 502
    assert raised.value.body["type"] == "api_error" and "unreachable" in raised.value.body["message"]
    with pytest.raises(anthropic.APIStatusError) as refused:
        claude(rig).messages.create(model="c", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert refused.value.status_code == 502
    assert refused.value.body["type"] == "error" and refused.value.body["error"]["type"] == "api_error"


def test_a_connection_dropped_before_any_byte_is_tried_once_more(rig: ProxyRig) -> None:
    rig.upstream.script(Reply(drop=True))
    completion = oai(rig).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "ok from upstream"
    assert len(rig.upstream.turns("/v1/chat/completions")) == 2
    rig.upstream.script(Reply(drop=True), Reply(drop=True))
    with pytest.raises(openai.APIStatusError) as raised:
        oai(rig).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.status_code == 502
    assert len(rig.upstream.turns("/v1/chat/completions")) == 4  # one retry, not more


def test_an_upstream_that_does_not_answer_in_time_is_a_504_and_is_not_sent_again(make_rig) -> None:  # type: ignore[no-untyped-def]
    # The provider may be working on (and billing for) a request it has not answered yet: it is not sent twice.
    rig = make_rig(proxy_read_timeout_seconds=0.2)
    stall = threading.Event()
    rig.upstream.script(Reply(stall=stall), Reply())
    try:
        with pytest.raises(openai.APIStatusError) as raised:
            oai(rig).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    finally:
        stall.set()
    assert raised.value.status_code == 504
    assert raised.value.body["type"] == "api_error" and "timed out" in raised.value.body["message"]
    assert len(rig.upstream.turns("/v1/chat/completions")) == 1


def test_the_callers_own_provider_key_goes_upstream(rig: ProxyRig) -> None:
    oai(rig, **{"x-provider-api-key": "sk-callers-own"}).chat.completions.create(
        model="gpt-x", messages=[{"role": "user", "content": "hi"}]
    )
    # A caller with its own Anthropic key sends it as x-api-key and the memhub key as a Bearer token (raw
    # HTTP: the anthropic client sends only one of the two).
    headers = {"x-api-key": "sk-ant-callers-own", "authorization": f"Bearer {rig.user_key}"}
    body = {"model": "c", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(base_url=rig.base(protocol="anthropic")) as http:
        sent = http.post("/v1/messages", json=body, headers={**headers, **rig.identity_headers()})
    assert sent.status_code == 200, sent.text
    assert rig.upstream.turns("/v1/chat/completions")[0].headers["authorization"] == "Bearer sk-callers-own"
    assert rig.upstream.turns("/v1/messages")[0].headers["x-api-key"] == "sk-ant-callers-own"
    no_memhub_key_upstream(rig)


def test_a_bad_user_key_is_refused_in_the_callers_protocol_and_nothing_is_forwarded(rig: ProxyRig) -> None:
    client = openai.OpenAI(api_key="sk-mem-not-a-key", base_url=rig.base(), max_retries=0)
    with pytest.raises(openai.AuthenticationError) as raised:
        client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert raised.value.body["type"] == "authentication_error"
    bad = anthropic.Anthropic(api_key="sk-mem-nope", base_url=rig.base(protocol="anthropic"), max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as denied:
        bad.messages.create(model="c", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert denied.value.body["error"]["type"] == "authentication_error"
    assert not rig.upstream.requests


def test_a_side_query_is_forwarded_byte_for_byte_and_not_captured(rig: ProxyRig) -> None:
    body = (
        b'{"model": "claude-x", "max_tokens": 20, "thinking": {"type": "disabled"},'
        b' "messages": [{"role": "user", "content": "Title for: fix the build"}]}'
    )
    headers = {"x-api-key": rig.user_key, "anthropic-version": "2023-06-01", "content-type": "application/json"}
    with httpx.Client(base_url=rig.base(protocol="anthropic")) as http:
        response = http.post("/v1/messages", content=body, headers={**headers, **rig.identity_headers()})
    assert response.status_code == 200
    assert response.headers["x-memhub-memory"] == "passthrough; reason=sidequery"
    assert rig.upstream.turns("/v1/messages")[0].body == body
    assert not rig.capture.turns


def test_an_injection_failure_forwards_the_original_bytes(rig: ProxyRig) -> None:
    rig.injector.fail = True
    body = b'{"model":"gpt-x",  "messages":[{"role":"user","content":"hi"}]}'
    headers = {"authorization": f"Bearer {rig.user_key}", "content-type": "application/json"}
    with httpx.Client(base_url=rig.base()) as http:
        response = http.post("/chat/completions", content=body, headers={**headers, **rig.identity_headers()})
    assert response.status_code == 200
    assert response.headers["x-memhub-memory"] == "degraded; reason=injection-error"
    assert rig.upstream.turns("/v1/chat/completions")[0].body == body


def test_a_failing_capture_does_not_touch_the_response(rig: ProxyRig) -> None:
    rig.capture.fail = True
    stream = oai(rig).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "ok from upstream"
    completion = oai(rig).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "ok from upstream"


def test_without_a_memory_scope_the_turn_is_forwarded_untouched(rig: ProxyRig) -> None:
    client = openai.OpenAI(api_key=rig.user_key, base_url=rig.base(), max_retries=0)
    raw = client.chat.completions.with_raw_response.create(
        model="gpt-x", messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]
    )
    assert raw.headers["x-memhub-memory"] == "passthrough; reason=no-scope"
    assert rig.upstream.turns("/v1/chat/completions")[0].json["messages"][0] == {"role": "system", "content": "s"}
    assert not rig.capture.turns


def test_mem_commands_are_answered_in_the_callers_protocol_never_upstream(rig: ProxyRig) -> None:
    help_text = "memhub commands: mem:help, mem:sync, mem:create-skill"
    completion = oai(rig).chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "mem:help"}])
    assert completion.choices[0].message.content == help_text
    stream = oai(rig).chat.completions.create(
        model="gpt-x", messages=[{"role": "user", "content": " mem:help "}], stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == help_text
    message = claude(rig).messages.create(model="c", max_tokens=5, messages=[{"role": "user", "content": "mem:help"}])
    assert message.content[0].text == help_text  # type: ignore[union-attr]
    with claude(rig).messages.stream(
        model="c", max_tokens=5, messages=[{"role": "user", "content": "mem:help"}]
    ) as stream_:
        assert stream_.get_final_text() == help_text
    codex = openai.OpenAI(
        api_key=rig.user_key, base_url=rig.base("codex"), default_headers=rig.identity_headers(), max_retries=0
    )
    assert codex.responses.create(model="gpt-x", input="mem:help").output_text == help_text
    with codex.responses.stream(model="gpt-x", input="mem:help") as events:
        assert events.get_final_response().output_text == help_text
    assert not rig.upstream.requests and not rig.capture.turns


def test_auxiliary_calls_pass_through(rig: ProxyRig) -> None:
    client = oai(rig)
    assert [m.id for m in client.models.list()] == ["fake-model"]
    assert client.embeddings.create(model="e", input="x").data[0].embedding == [0.5]
    count = claude(rig).messages.count_tokens(model="c", messages=[{"role": "user", "content": "hi"}])
    assert count.input_tokens == 7
    paths = [(r.method, r.path) for r in rig.upstream.requests]
    assert paths == [("GET", "/v1/models"), ("POST", "/v1/embeddings"), ("POST", "/v1/messages/count_tokens")]
    assert rig.upstream.requests[2].headers["x-api-key"] == PROVIDER_KEY_ANTHROPIC
    no_memhub_key_upstream(rig)
    assert not rig.capture.turns


def test_a_bad_space_id_or_body_is_refused(rig: ProxyRig) -> None:
    headers = {"authorization": f"Bearer {rig.user_key}", **rig.identity_headers()}
    with httpx.Client(base_url=rig.url) as http:
        not_json = http.post(f"/proxy/{SPACE}/v1/chat/completions", content=b"[1, 2]", headers=headers)
    assert not_json.status_code == 400
    assert not_json.json()["error"]["message"] == "body: must be a JSON object"
    assert not rig.upstream.requests


def test_an_upstream_answer_past_the_size_cap_is_cut_and_not_captured(make_rig) -> None:  # type: ignore[no-untyped-def]
    cap = 64 * 1024
    rig = make_rig(proxy_max_response_bytes=cap)
    big = "x" * 200_000  # the fake sends it in two text deltas of 100 KB each
    rig.upstream.script(Reply(text=big), Reply(text=big), Reply(text="small"))
    payload = {"model": "gpt-x", "messages": [{"role": "user", "content": "tell me everything"}]}
    headers = {"authorization": f"Bearer {rig.user_key}", **rig.identity_headers()}
    received = bytearray()
    with httpx.Client(base_url=rig.base(), timeout=60) as http:
        whole = http.post("/chat/completions", json=payload, headers=headers)
        streamed = http.stream("POST", "/chat/completions", json={**payload, "stream": True}, headers=headers)
        # The client's connection is cut, never ended cleanly, and nothing past the cap reaches it.
        with pytest.raises(httpx.RemoteProtocolError), streamed as response:
            assert response.status_code == 200
            for chunk in response.iter_raw():
                received += chunk
        fine = http.post("/chat/completions", json=payload, headers=headers)
    assert whole.status_code == 502
    assert whole.json()["error"]["message"] == f"upstream response cut: more than {cap} bytes"
    assert 0 < len(received) <= cap
    assert fine.status_code == 200  # the cap is per answer
    [(_, _, _, output)] = rig.capture.turns  # only the answer within the cap was captured
    assert output.text == "small"


def test_an_upstream_stream_past_the_time_cap_is_cut_and_not_captured(make_rig) -> None:  # type: ignore[no-untyped-def]
    rig = make_rig(proxy_max_response_seconds=0.5)
    rig.upstream.script(Reply(endless=True))
    payload = {"model": "c", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "go on"}]}
    headers = {"x-api-key": rig.user_key, "anthropic-version": "2023-06-01", **rig.identity_headers()}
    with httpx.Client(base_url=rig.base(protocol="anthropic"), timeout=60) as http:
        streamed = http.stream("POST", "/v1/messages", json=payload, headers=headers)
        with pytest.raises(httpx.RemoteProtocolError), streamed as response:
            for _ in response.iter_raw():
                pass  # events keep coming until the proxy cuts the stream at its time cap
    assert rig.upstream.closed_mid_stream.wait(60), "the proxy kept the endless upstream stream open"
    assert not rig.capture.turns
