"""An OpenAI-compatible ``/v1/chat/completions`` server over any ``Policy``.

Endpoints: ``POST /v1/chat/completions`` (text and ``image_url`` data-URL parts,
``logprobs``, ``stop``, ``seed``; the vLLM extension ``return_token_ids`` returns the
exact generated ids), ``GET /v1/models``, ``GET /health``. Every malformed request gets
a 4xx JSON error in OpenAI's shape ``{"error": {"message", "type", "param", "code"}}``;
the process never crashes on input. Generation runs in a worker thread so health checks
stay responsive while the model is busy.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
import uuid
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from vagen.policy.base import Policy, PolicyRequestError, PolicyUnavailableError, SamplingParams

logger = logging.getLogger(__name__)


class TextPart(BaseModel):
    type: Literal["text"]
    text: str


class ImageURL(BaseModel):
    url: str
    detail: str | None = None


class ImagePart(BaseModel):
    type: Literal["image_url"]
    image_url: ImageURL


class Message(BaseModel):
    role: Literal["system", "user", "assistant"]
    content: str | list[TextPart | ImagePart]
    name: str | None = None


class ChatCompletionRequest(BaseModel):
    """The subset of OpenAI's request we honour; unknown fields are ignored as OpenAI's
    own server tolerates new client fields, but known ones are validated strictly."""

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[Message] = Field(min_length=1)
    temperature: float = Field(1.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    stop: str | list[str] | None = None
    n: int = Field(1, ge=1, le=16)
    seed: int | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=0)
    stream: bool = False
    return_token_ids: bool = False
    include_stop_str_in_output: bool = False

    @field_validator("stop")
    @classmethod
    def _stop(cls, v):
        if v is None:
            return v
        items = [v] if isinstance(v, str) else v
        if len(items) > 4 or any(not s for s in items):
            raise ValueError("stop must be up to 4 non-empty strings")
        return v


def _error(status: int, message: str, param: str | None = None, code: str | None = None,
           etype: str = "invalid_request_error") -> JSONResponse:
    return JSONResponse(status_code=status,
                        content={"error": {"message": message, "type": etype, "param": param, "code": code}})


def create_app(policy: Policy, served_name: str, api_key: str | None = None,
               max_tokens_limit: int = 1024, max_body_bytes: int = 32 * 1024 * 1024) -> FastAPI:
    """Build the FastAPI app serving ``policy`` under the model id ``served_name``.

    When ``api_key`` is set every ``/v1`` request must carry ``Authorization: Bearer <key>``.
    """
    app = FastAPI(title="vagen serve", version="1")
    lock = asyncio.Lock()  # one generate at a time: a single model is not shared across threads
    created = int(time.time())

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError):
        errs = exc.errors()
        first = errs[0] if errs else {}
        if first.get("type") == "json_invalid":
            return _error(400, f"request body is not valid JSON ({first.get('ctx', {}).get('error', 'decode error')})")
        if first.get("type") == "model_attributes_type" and tuple(first.get("loc", ())) == ("body",):
            return _error(400, "request body must be a JSON object")
        loc = ".".join(str(x) for x in first.get("loc", ()) if x != "body")
        msg = first.get("msg", "invalid request")
        return _error(400, f"{loc}: {msg}" if loc else msg, param=loc or None)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail), etype="invalid_request_error" if exc.status_code < 500 else "server_error")

    @app.middleware("http")
    async def _guard(request: Request, call_next):
        if request.url.path.startswith("/v1/"):
            if api_key is not None:
                got = request.headers.get("authorization", "")
                if not hmac.compare_digest(got.encode(), f"Bearer {api_key}".encode()):
                    return _error(401, "missing or wrong API key (Authorization: Bearer <key>)",
                                  code="invalid_api_key", etype="authentication_error")
            length = request.headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > max_body_bytes):
                return _error(413, f"request body larger than {max_body_bytes} bytes")
        return await call_next(request)

    @app.get("/health")
    async def health():
        return {"status": "ok", "model": served_name, "policy_version": policy.policy_version}

    @app.get("/v1/models")
    async def models():
        return {"object": "list",
                "data": [{"id": served_name, "object": "model", "created": created, "owned_by": "vagen"}]}

    @app.post("/v1/chat/completions")
    async def chat_completions(req: ChatCompletionRequest):
        if req.model != served_name:
            return _error(404, f"model {req.model!r} is not served here; available: {served_name!r}",
                          param="model", code="model_not_found")
        if req.stream:
            return _error(400, "stream=true is not supported by vagen serve", param="stream")
        max_tokens = req.max_completion_tokens or req.max_tokens or min(256, max_tokens_limit)
        if max_tokens > max_tokens_limit:
            return _error(400, f"max_tokens {max_tokens} exceeds this server's limit {max_tokens_limit}",
                          param="max_tokens")
        stop = (req.stop,) if isinstance(req.stop, str) else tuple(req.stop or ())
        sampling = SamplingParams(temperature=req.temperature, top_p=req.top_p, max_tokens=max_tokens,
                                  stop=stop, seed=req.seed, logprobs=req.logprobs or req.return_token_ids,
                                  include_stop=req.include_stop_str_in_output)
        chat = [m.model_dump(exclude_none=True, exclude={"name"}) for m in req.messages]
        try:
            async with lock:
                gens = await asyncio.to_thread(policy.generate, [chat] * req.n, sampling)
        except PolicyRequestError as e:
            return _error(e.status_code or 400, str(e))
        except PolicyUnavailableError as e:
            return _error(503, str(e), etype="server_error")
        except Exception:
            logger.exception("generation failed")
            return _error(500, "internal error during generation", etype="server_error")
        choices: list[dict[str, Any]] = []
        completion_tokens = 0
        for i, g in enumerate(gens):
            choice: dict[str, Any] = {"index": i, "message": {"role": "assistant", "content": g.text},
                                      "finish_reason": g.finish_reason}
            if req.logprobs and g.logprobs is not None:
                tok = getattr(policy, "tokenizer", None)
                pieces = tok.convert_ids_to_tokens(g.token_ids) if tok is not None and g.token_ids else []
                choice["logprobs"] = {"content": [
                    {"token": pieces[k] if k < len(pieces) else "", "logprob": lp, "bytes": None, "top_logprobs": []}
                    for k, lp in enumerate(g.logprobs)]}
            else:
                choice["logprobs"] = None
            if req.return_token_ids:
                choice["token_ids"] = g.token_ids
            completion_tokens += len(g.token_ids)
            choices.append(choice)
        prompt_ids = gens[0].prompt_token_ids if gens else None
        body: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": served_name,
            "choices": choices,
            "usage": {"prompt_tokens": len(prompt_ids or []), "completion_tokens": completion_tokens,
                      "total_tokens": len(prompt_ids or []) + completion_tokens},
            "policy_version": gens[0].policy_version if gens else policy.policy_version,
        }
        if req.return_token_ids and prompt_ids is not None:
            body["prompt_token_ids"] = prompt_ids
        return body

    return app
