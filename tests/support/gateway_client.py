"""HTTP clients for the gateway the tests' stack runs, authenticated with the local admin key
that ``substrate up`` writes (tenants *, clearance restricted, role admin); ``X-Tenant`` and
``X-Clearance`` headers narrow it as they would for any caller."""

from __future__ import annotations

from typing import Any

import httpx

from substrate.settings import Settings


def admin_key(settings: Settings) -> str:
    return (settings.secrets_dir / "admin_api_key").read_text().strip()


def auth(settings: Settings, key: str | None = None, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key or admin_key(settings)}", **headers}


def base_url(settings: Settings) -> str:
    return f"http://127.0.0.1:{settings.gateway_port}"


def gateway(settings: Settings, headers: dict[str, str] | None = None, key: str | None = None,
            timeout: float = 60, **kwargs: Any) -> httpx.Client:
    """A client of the stack's gateway sending ``key`` (default: the admin key)."""
    return httpx.Client(base_url=base_url(settings), timeout=timeout,
                        headers=auth(settings, key, **(headers or {})), **kwargs)
