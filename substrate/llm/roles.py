"""The model roles: ``cypher`` (Dense + cypher-lora), ``explain`` (explain-lora: answers, HyDE),
``scout`` (map/reduce over community summaries); ``embeddings`` and ``rerank`` keep their
settings (EMBEDDING_URL, RERANK_URL). ``CHAT_URL``/``CHAT_MODEL`` stay an alias: the
``explain`` role falls back to them, the ``cypher`` role to ``explain``.

A :class:`RoleLLM` is neo4j-graphrag's :class:`OpenAILLM` pointed at the role's base URL (the
openai client retries connection errors, 429 and 5xx with exponential backoff,
``MODEL_MAX_RETRIES`` times), behind a per-role semaphore (``MODEL_CONCURRENCY``); every call
is added to a :class:`Usage` the response reports (tokens, cost from ``MODEL_COSTS``, time).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from neo4j_graphrag.llm import OpenAILLM

from substrate.observability.metrics import observe_model_call
from substrate.observability.tracing import TRACER
from substrate.settings import ENV_DEFAULTS, Settings

ROLES = ("cypher", "explain", "scout")


@dataclass(frozen=True)
class RoleConfig:
    role: str
    url: str
    model: str
    timeout: float
    max_retries: int
    concurrency: int
    cost_per_1k: float

    @property
    def configured(self) -> bool:
        return bool(self.url)


def _env(settings: Settings, name: str) -> str:
    return settings.env.get(name) or ENV_DEFAULTS[name]


def _costs(text: str) -> dict[str, float]:
    pairs = (p.split("=", 1) for p in text.split(",") if "=" in p)
    return {k.strip(): float(v) for k, v in pairs}


def role_config(settings: Settings, role: str) -> RoleConfig:
    if role not in ROLES:
        raise ValueError(f"unknown model role {role!r}")
    up = role.upper()
    url, model = _env(settings, f"MODEL_{up}_URL"), _env(settings, f"MODEL_{up}_NAME")
    if not url and role == "explain":
        url, model = settings.chat_url, model or settings.chat_model
    if not url and role == "cypher":
        fallback = role_config(settings, "explain")
        url, model = fallback.url, model or fallback.model
    return RoleConfig(role, url.rstrip("/"), model or "default",
                      float(_env(settings, f"MODEL_{up}_TIMEOUT_SECONDS")),
                      int(_env(settings, "MODEL_MAX_RETRIES")),
                      int(_env(settings, "MODEL_CONCURRENCY")),
                      _costs(_env(settings, "MODEL_COSTS")).get(role, 0.0))


@dataclass
class Usage:
    """What one request spent on models: per call role, model, tokens, cost and time."""

    calls: list[dict[str, Any]] = field(default_factory=list)

    def add(self, config: RoleConfig, prompt: int, completion: int, ms: float,
            ok: bool) -> None:
        tokens = prompt + completion
        observe_model_call(config.role, config.model, prompt, completion,
                           tokens / 1000 * config.cost_per_1k, ms / 1000, ok)
        self.calls.append({"role": config.role, "model": config.model, "prompt_tokens": prompt,
                           "completion_tokens": completion, "total_tokens": tokens,
                           "cost_usd": round(tokens / 1000 * config.cost_per_1k, 6),
                           "ms": round(ms, 1), "ok": ok})

    def summary(self) -> dict[str, Any]:
        return {"calls": self.calls,
                "total_tokens": sum(c["total_tokens"] for c in self.calls),
                "cost_usd": round(sum(c["cost_usd"] for c in self.calls), 6)}


_SEMAPHORES: dict[tuple[str, str, int], asyncio.Semaphore] = {}


def _base_url(url: str) -> str:
    return url if url.endswith("/v1") else url + "/v1"


class RoleLLM:
    """One role's endpoint: ``await complete(prompt, usage)`` → text."""

    def __init__(self, config: RoleConfig) -> None:
        if not config.configured:
            raise ValueError(f"model role {config.role!r} is not configured")
        self.config = config
        self.llm = OpenAILLM(config.model, model_params={"temperature": 0},
                             base_url=_base_url(config.url), api_key="unused",
                             timeout=config.timeout, max_retries=config.max_retries)
        key = (config.role, config.url, config.concurrency)
        self._gate = _SEMAPHORES.setdefault(key, asyncio.Semaphore(config.concurrency))

    async def complete(self, prompt: str, usage: Usage, system: str | None = None) -> str:
        started = time.perf_counter()
        with TRACER.start_as_current_span(f"chat {self.config.model}", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": self.config.model,
                "substrate.model_role": self.config.role}) as span:
            async with self._gate:
                try:
                    response = await asyncio.wait_for(
                        self.llm.ainvoke(prompt, system_instruction=system),
                        self.config.timeout * (self.config.max_retries + 1))
                except BaseException:
                    usage.add(self.config, 0, 0, (time.perf_counter() - started) * 1000, False)
                    raise
            u = response.usage
            span.set_attributes({"gen_ai.usage.input_tokens": int(u.request_tokens or 0) if u
                                 else 0,
                                 "gen_ai.usage.output_tokens": int(u.response_tokens or 0) if u
                                 else 0})
        usage.add(self.config, int(u.request_tokens or 0) if u else 0,
                  int(u.response_tokens or 0) if u else 0,
                  (time.perf_counter() - started) * 1000, True)
        return str(response.content)

    async def aclose(self) -> None:
        await self.llm.aclose()
