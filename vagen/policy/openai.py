"""The ``openai`` backend: any OpenAI-compatible ``/v1/chat/completions`` server.

Images travel as base64 data URLs; the API key comes from an environment variable
(never from a config file); requests run concurrently up to a bound and are retried
with exponential backoff on 429/5xx and connection errors. A 4xx is the caller's
mistake and raises ``PolicyRequestError`` with the server's message at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import threading

import httpx

from vagen.policy.base import (
    Chat,
    Generation,
    Policy,
    PolicyRequestError,
    PolicyUnavailableError,
    SamplingParams,
)
from vagen.policy.chat import to_openai_messages

logger = logging.getLogger(__name__)

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class OpenAIPolicy(Policy):
    """Chat completions over HTTP, one request per chat, ``max_concurrency`` in flight."""

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        max_concurrency: int = 8,
        max_retries: int = 4,
        backoff_s: float = 0.5,
        timeout_s: float = 120.0,
    ):
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.policy_version = 0

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def request_body(self, chat: Chat, sampling: SamplingParams, index: int = 0) -> dict:
        """The JSON body sent for one chat."""
        body = {
            "model": self.model,
            "messages": to_openai_messages(chat, index),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "n": 1,
        }
        if sampling.stop:
            body["stop"] = list(sampling.stop)
            if sampling.include_stop:
                body["include_stop_str_in_output"] = True  # vLLM / vagen serve extension
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        if sampling.logprobs:
            body["logprobs"] = True
            # vLLM and `vagen serve` return the generated token ids when asked.
            body["return_token_ids"] = True
        return body

    # -- async core -------------------------------------------------------------
    async def agenerate(self, chats: list[Chat], sampling: SamplingParams | None = None) -> list[Generation]:
        """Async version of ``generate`` for callers that already run an event loop."""
        sampling = sampling or SamplingParams()
        bodies = [self.request_body(c, sampling, i) for i, c in enumerate(chats)]
        sem = asyncio.Semaphore(self.max_concurrency)
        limits = httpx.Limits(max_connections=self.max_concurrency)
        async with httpx.AsyncClient(timeout=self.timeout_s, limits=limits, headers=self._headers()) as client:

            async def one(body: dict) -> Generation:
                async with sem:
                    return self._parse(await self._post(client, body))

            return list(await asyncio.gather(*(one(b) for b in bodies)))

    async def _post(self, client: httpx.AsyncClient, body: dict) -> dict:
        url = f"{self.base_url}/chat/completions"
        last = ""
        for attempt in range(self.max_retries + 1):
            try:
                resp = await client.post(url, json=body)
            except httpx.TransportError as e:
                last = f"{type(e).__name__}: {e}"
            else:
                if resp.status_code == 200:
                    try:
                        return resp.json()
                    except ValueError:
                        last = "200 with a body that is not JSON"
                elif resp.status_code in RETRY_STATUS:
                    last = f"HTTP {resp.status_code}: {_error_message(resp)}"
                    retry_after = resp.headers.get("retry-after")
                    if retry_after and retry_after.replace(".", "", 1).isdigit() and attempt < self.max_retries:
                        await asyncio.sleep(min(float(retry_after), 60.0))
                        continue
                else:
                    raise PolicyRequestError(
                        f"{url} rejected the request: HTTP {resp.status_code}: {_error_message(resp)}",
                        status_code=resp.status_code,
                    )
            if attempt < self.max_retries:
                delay = self.backoff_s * (2**attempt) * (0.5 + random.random())
                logger.warning("%s failed (%s); retry %d/%d in %.2fs", url, last, attempt + 1, self.max_retries, delay)
                await asyncio.sleep(delay)
        raise PolicyUnavailableError(f"{url} failed after {self.max_retries + 1} attempts: {last}")

    def _parse(self, data: dict) -> Generation:
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            raise PolicyUnavailableError(f"malformed chat completion from {self.base_url}: {str(data)[:200]}") from None
        logprobs = None
        content = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
        if content:
            logprobs = [float(t["logprob"]) for t in content]
        finish = choice.get("finish_reason") or "stop"
        return Generation(
            text=text,
            token_ids=list(choice.get("token_ids") or []),
            logprobs=logprobs,
            policy_version=int(data.get("policy_version", self.policy_version) or 0),
            finish_reason=finish if finish in ("stop", "length") else "stop",
            prompt_token_ids=data.get("prompt_token_ids"),
        )

    # -- sync facade --------------------------------------------------------------
    def generate(self, chats: list[Chat], sampling: SamplingParams | None = None) -> list[Generation]:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.agenerate(chats, sampling))
        # Called from inside an event loop (a notebook, an async app): run ours on a thread.
        result: dict = {}

        def run() -> None:
            try:
                result["value"] = asyncio.run(self.agenerate(chats, sampling))
            except BaseException as e:  # re-raised in the caller's thread
                result["error"] = e

        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join()
        if "error" in result:
            raise result["error"]
        return result["value"]


def _error_message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:300]
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])
    if isinstance(data, dict) and data.get("detail"):
        return str(data["detail"])
    return str(data)[:300]
