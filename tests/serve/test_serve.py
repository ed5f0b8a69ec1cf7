"""`vagen serve` against the `openai` backend on loopback: a real server, a real client."""

import os
import subprocess
import sys
import time

import httpx
import pytest

from tests.conftest import REPO, free_port
from vagen.policy import PolicyRequestError, SamplingParams
from vagen.policy.chat import image_to_data_url
from vagen.policy.openai import OpenAIPolicy
from vagen.serve import create_app


@pytest.fixture(scope="module")
def server(tiny_policy):
    from tests.conftest import ThreadServer

    with ThreadServer(create_app(tiny_policy, "tiny", max_tokens_limit=64)) as s:
        yield s


def image_chat(img, text="What do you see?"):
    return [{"role": "user", "content": [{"type": "image", "image": img}, {"type": "text", "text": text}]}]


def test_openai_backend_answers_image_chat_through_server(server, tiny_policy, rgb_image):
    client = OpenAIPolicy("tiny", base_url=server.url + "/v1", max_retries=0)
    sampling = SamplingParams(max_tokens=16, temperature=0.8, seed=5)
    remote = client.generate([image_chat(rgb_image), [{"role": "user", "content": "hi"}]], sampling)
    assert len(remote) == 2
    local = tiny_policy.generate([image_chat(rgb_image)], sampling)[0]
    # Same seed, same model: the server returns exactly what the local backend does.
    assert remote[0].token_ids == local.token_ids and remote[0].text == local.text
    assert remote[0].logprobs == pytest.approx(local.logprobs, abs=1e-6)
    assert remote[0].prompt_token_ids == local.prompt_token_ids
    assert remote[0].finish_reason in ("stop", "length")


def test_health_and_models(server):
    assert httpx.get(server.url + "/health").json()["status"] == "ok"
    data = httpx.get(server.url + "/v1/models").json()
    assert data["object"] == "list" and data["data"][0]["id"] == "tiny"


def test_response_shape_is_openai(server, rgb_image):
    body = {"model": "tiny", "max_tokens": 8, "logprobs": True, "n": 2, "seed": 1,
            "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": image_to_data_url(rgb_image)}},
                {"type": "text", "text": "hi"}]}]}
    r = httpx.post(server.url + "/v1/chat/completions", json=body)
    assert r.status_code == 200, r.text
    data = r.json()
    assert data["object"] == "chat.completion" and data["id"].startswith("chatcmpl-")
    assert len(data["choices"]) == 2
    c = data["choices"][0]
    assert c["message"]["role"] == "assistant" and isinstance(c["message"]["content"], str)
    assert all(set(t) >= {"token", "logprob"} for t in c["logprobs"]["content"])
    assert data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] + data["usage"]["completion_tokens"]
    assert "token_ids" not in c  # only when asked with return_token_ids


GOOD = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}


@pytest.mark.parametrize("payload, status, needle", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "JSON object"),
    ({"model": "tiny"}, 400, "messages"),
    ({**GOOD, "messages": []}, 400, "messages"),
    ({**GOOD, "messages": [{"role": "robot", "content": "x"}]}, 400, "role"),
    ({**GOOD, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]}, 400, "cannot decode image"),
    ({**GOOD, "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}]}]}, 400, "data URL"),
    ({**GOOD, "messages": [{"role": "user", "content": [{"type": "video", "video": "x"}]}]}, 400, "content"),
    ({**GOOD, "temperature": -1}, 400, "temperature"),
    ({**GOOD, "max_tokens": 10_000}, 400, "limit"),
    ({**GOOD, "max_tokens": 0}, 400, "max_tokens"),
    ({**GOOD, "stop": ["", "x"]}, 400, "stop"),
    ({**GOOD, "stream": True}, 400, "stream"),
    ({**GOOD, "model": "gpt-4"}, 404, "not served"),
])
def test_malformed_requests_get_4xx_json(server, payload, status, needle):
    if isinstance(payload, bytes):
        r = httpx.post(server.url + "/v1/chat/completions", content=payload, headers={"content-type": "application/json"})
    else:
        r = httpx.post(server.url + "/v1/chat/completions", json=payload)
    assert r.status_code == status, r.text
    err = r.json()["error"]
    assert needle in err["message"] and err["type"]
    assert httpx.get(server.url + "/health").status_code == 200  # still alive


def test_unknown_route_and_method_are_json_errors(server):
    r = httpx.get(server.url + "/v1/nope")
    assert r.status_code == 404 and "error" in r.json()
    r = httpx.get(server.url + "/v1/chat/completions")
    assert r.status_code == 405 and "error" in r.json()


def test_openai_backend_raises_clear_error_on_4xx(server, caplog):
    client = OpenAIPolicy("not-served", base_url=server.url + "/v1", max_retries=3, backoff_s=0.01)
    with caplog.at_level("WARNING", logger="vagen.policy.openai"), \
            pytest.raises(PolicyRequestError, match="not served") as e:
        client.generate([[{"role": "user", "content": "hi"}]], SamplingParams(max_tokens=4))
    assert e.value.status_code == 404
    assert not [r for r in caplog.records if "retry" in r.getMessage()]  # no retries on a 4xx


def test_api_key_is_required_when_configured(tiny_policy, thread_server, monkeypatch):
    with thread_server(create_app(tiny_policy, "tiny", api_key="s3cret")) as s:
        r = httpx.post(s.url + "/v1/chat/completions", json=GOOD)
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
        r = httpx.post(s.url + "/v1/chat/completions", json=GOOD, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 401
        monkeypatch.setenv("VAGEN_TEST_KEY", "s3cret")
        gen = OpenAIPolicy("tiny", base_url=s.url + "/v1", api_key_env="VAGEN_TEST_KEY").generate(
            [[{"role": "user", "content": "hi"}]], SamplingParams(max_tokens=4))[0]
        assert gen.token_ids
        assert httpx.get(s.url + "/health").status_code == 200  # health needs no key


def _serve_cmd(*args):
    exe = os.path.join(os.path.dirname(sys.executable), "vagen")
    return [exe, "serve", *args]


def test_vagen_serve_cli_end_to_end(rgb_image):
    """The real console script, as a user starts it, answered by the openai backend."""
    port = free_port()
    proc = subprocess.Popen(_serve_cmd("--model", "tiny", "--host", "127.0.0.1", "--port", str(port)),
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.time() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read()
            assert time.time() < deadline, "server did not come up"
            time.sleep(0.2)
        gen = OpenAIPolicy("tiny", base_url=f"http://127.0.0.1:{port}/v1").generate(
            [image_chat(rgb_image)], SamplingParams(max_tokens=8, seed=0))[0]
        assert gen.token_ids and len(gen.logprobs) == len(gen.token_ids)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_vagen_serve_refuses_public_bind_without_key():
    env = {k: v for k, v in os.environ.items() if k != "VAGEN_API_KEY"}
    r = subprocess.run(_serve_cmd("--model", "scripted:noop", "--host", "0.0.0.0", "--port", "1"),
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode != 0 and "API key" in r.stderr
