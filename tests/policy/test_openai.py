"""The openai backend's retry/backoff and error handling, against real loopback servers."""

import json
import threading
import time

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from tests.conftest import free_port
from vagen.policy import PolicyRequestError, PolicyUnavailableError, SamplingParams
from vagen.policy.openai import OpenAIPolicy

CHAT = [{"role": "user", "content": "hi"}]


def flaky_app(failures: list[int], seen: list[dict]):
    """Answers with the queued status codes first, then a valid completion."""
    app = FastAPI()
    lock = threading.Lock()

    @app.post("/v1/chat/completions")
    async def completions(request: Request):
        body = await request.json()
        with lock:
            seen.append({"body": body, "auth": request.headers.get("authorization"), "t": time.time()})
            status = failures.pop(0) if failures else 200
        if status == 429:
            return JSONResponse({"error": {"message": "slow down"}}, status_code=429, headers={"Retry-After": "0.2"})
        if status != 200:
            return JSONResponse({"error": {"message": f"boom {status}"}}, status_code=status)
        return {"id": "x", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok " + body["messages"][-1]["content"]},
                             "finish_reason": "length",
                             "logprobs": {"content": [{"token": "ok", "logprob": -0.5, "top_logprobs": []}]}}]}

    return app


def test_retries_5xx_then_succeeds(thread_server):
    seen: list[dict] = []
    with thread_server(flaky_app([503, 502], seen)) as s:
        gen = OpenAIPolicy("m", base_url=s.url + "/v1", backoff_s=0.01).generate([CHAT], SamplingParams(max_tokens=3))[0]
    assert gen.text == "ok hi" and gen.logprobs == [-0.5] and gen.finish_reason == "length"
    assert len(seen) == 3
    body = seen[0]["body"]
    assert body["max_tokens"] == 3 and body["logprobs"] is True and body["model"] == "m"


def test_429_honours_retry_after(thread_server):
    seen: list[dict] = []
    with thread_server(flaky_app([429], seen)) as s:
        OpenAIPolicy("m", base_url=s.url + "/v1", backoff_s=0.001).generate([CHAT])
    assert len(seen) == 2 and seen[1]["t"] - seen[0]["t"] >= 0.18


def test_gives_up_after_bounded_retries(thread_server):
    seen: list[dict] = []
    with thread_server(flaky_app([500] * 10, seen)) as s:
        with pytest.raises(PolicyUnavailableError, match="3 attempts.*boom 500"):
            OpenAIPolicy("m", base_url=s.url + "/v1", max_retries=2, backoff_s=0.01).generate([CHAT])
    assert len(seen) == 3


def test_4xx_is_not_retried(thread_server):
    seen: list[dict] = []
    with thread_server(flaky_app([400], seen)) as s:
        with pytest.raises(PolicyRequestError, match="boom 400"):
            OpenAIPolicy("m", base_url=s.url + "/v1", backoff_s=0.01).generate([CHAT])
    assert len(seen) == 1


def test_connection_refused_is_unavailable_not_agent_failure():
    port = free_port()  # nothing listens here
    with pytest.raises(PolicyUnavailableError, match="ConnectError"):
        OpenAIPolicy("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_s=0.01).generate([CHAT])


def test_api_key_from_env_and_bounded_concurrency(thread_server, monkeypatch):
    seen: list[dict] = []
    in_flight = {"now": 0, "max": 0}
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions(request: Request):
        import asyncio

        in_flight["now"] += 1
        in_flight["max"] = max(in_flight["max"], in_flight["now"])
        seen.append({"auth": request.headers.get("authorization")})
        await asyncio.sleep(0.05)
        in_flight["now"] -= 1
        body = await request.json()
        return {"choices": [{"message": {"content": json.dumps(body["messages"][0]["content"])}, "finish_reason": "stop"}]}

    monkeypatch.setenv("MY_KEY", "k-123")
    with thread_server(app) as s:
        chats = [[{"role": "user", "content": f"q{i}"}] for i in range(10)]
        gens = OpenAIPolicy("m", base_url=s.url + "/v1", api_key_env="MY_KEY", max_concurrency=3).generate(chats)
    assert [json.loads(g.text) for g in gens] == [f"q{i}" for i in range(10)]  # order kept
    assert in_flight["max"] <= 3
    assert {x["auth"] for x in seen} == {"Bearer k-123"}


def test_malformed_completion_is_an_infra_error(thread_server):
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions():
        return {"choices": []}

    with thread_server(app) as s:
        with pytest.raises(PolicyUnavailableError, match="malformed"):
            OpenAIPolicy("m", base_url=s.url + "/v1").generate([CHAT])


def test_generate_works_inside_a_running_event_loop(thread_server):
    import asyncio

    seen: list[dict] = []
    with thread_server(flaky_app([], seen)) as s:
        policy = OpenAIPolicy("m", base_url=s.url + "/v1")

        async def main():
            return policy.generate([CHAT])

        assert asyncio.run(main())[0].text == "ok hi"
