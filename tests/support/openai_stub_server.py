"""A small OpenAI-compatible HTTP server that tests start: a real peer on 127.0.0.1, not a mock.

* ``POST /v1/embeddings`` — deterministic hashing vectors (word tokens hashed into
  ``embedding_dim`` signed buckets, unit length): texts sharing words are similar.
* ``POST /v1/chat/completions`` — the reply is whatever ``chat_responder(prompt)`` returns
  (default ``{"edges": []}``); raise :class:`StubHTTPError` in it to answer with an error status.
* ``GET /v1/models`` — the configured model names.

Every request body is recorded in ``server.requests`` as ``(path, body)``.

In a test::

    with OpenAIStubServer(chat_responder=lambda prompt: '{"edges": []}') as server:
        client = OpenAIChatClient(server.base_url, "stub-chat")

Standalone (for manual runs): ``python -m tests.support.openai_stub_server --port 8099``.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import re
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

ChatResponder = Callable[[str], str]

_TOKEN = re.compile(r"\w+")


class StubHTTPError(Exception):
    """Raised by a chat responder to make the server answer with ``status``."""

    def __init__(self, status: int, message: str = "stub error") -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def hash_embedding(text: str, dim: int) -> list[float]:
    """Deterministic unit vector: each lower-cased word adds +-1 to one of ``dim`` buckets."""
    vector = [0.0] * dim
    for token in _TOKEN.findall(text.lower()):
        digest = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "big")
        vector[digest % dim] += 1.0 if (digest >> 63) & 1 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    if norm == 0:
        vector[0], norm = 1.0, 1.0
    return [x / norm for x in vector]


def _default_responder(prompt: str) -> str:
    return '{"edges": []}'


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": "stub_error"}}, status_code=status)


class OpenAIStubServer:
    """The stub, served by uvicorn in a daemon thread on a free loopback port."""

    def __init__(
        self,
        *,
        embedding_dim: int = 384,
        chat_responder: ChatResponder | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        embedding_model: str = "stub-embed",
        chat_model: str = "stub-chat",
    ) -> None:
        self.embedding_dim = embedding_dim
        self.chat_responder = chat_responder or _default_responder
        self.host, self.port = host, port
        self.models = (embedding_model, chat_model)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.app = Starlette(
            routes=[
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # --- handlers ------------------------------------------------------------------------
    async def _body(self, request: Request) -> dict[str, Any]:
        body: dict[str, Any] = await request.json()
        with self._lock:
            self.requests.append((request.url.path, body))
        return body

    async def _embeddings(self, request: Request) -> JSONResponse:
        body = await self._body(request)
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return _error(400, "input must be a string or a list of strings")
        dim = int(body.get("dimensions") or self.embedding_dim)
        data = [
            {"object": "embedding", "index": i, "embedding": hash_embedding(t, dim)}
            for i, t in enumerate(texts)
        ]
        tokens = sum(len(_TOKEN.findall(t)) for t in texts)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        model = body.get("model", self.models[0])
        return JSONResponse({"object": "list", "data": data, "model": model, "usage": usage})

    async def _chat(self, request: Request) -> JSONResponse:
        body = await self._body(request)
        messages = body.get("messages") or []
        prompt = "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))
        try:
            content = self.chat_responder(prompt)
        except StubHTTPError as e:
            return _error(e.status, e.message)
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }
        return JSONResponse(
            {
                "id": f"chatcmpl-stub-{len(self.requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", self.models[1]),
                "choices": [choice],
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
            }
        )

    async def _models(self, request: Request) -> JSONResponse:
        data = [{"id": m, "object": "model", "owned_by": "stub"} for m in self.models]
        return JSONResponse({"object": "list", "data": data})

    # --- lifecycle -----------------------------------------------------------------------
    def start(self, timeout: float = 10.0) -> OpenAIStubServer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.port))
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app, lifespan="off", ws="none", log_level="warning", access_log=False
        )
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="openai-stub", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("OpenAI stub server did not start")
            time.sleep(0.01)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._server, self._thread = None, None

    def __enter__(self) -> OpenAIStubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    stub = OpenAIStubServer(host=args.host, port=args.port, embedding_dim=args.dim)
    uvicorn.run(stub.app, host=args.host, port=args.port, lifespan="off", ws="none")


if __name__ == "__main__":
    main()
