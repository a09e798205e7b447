"""The Starlette gateway served by uvicorn as a supervised local process."""

from __future__ import annotations

import sys

import httpx

from substrate.stack.part import Part


class GatewayPart(Part):
    name = "gateway"
    start_timeout = 120.0  # loads the embedder and checks every Cypher template

    def ports(self) -> list[int]:
        return [self.settings.gateway_port]

    def address(self) -> str:
        return f"http://{self.settings.gateway_host}:{self.settings.gateway_port}"

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "uvicorn", "gateway.app:create_app", "--factory",
            "--host", self.settings.gateway_host, "--port", str(self.settings.gateway_port),
            "--no-access-log", "--ws", "websockets",
            "--ws-max-size", str(self.settings.max_body_bytes),
        ]

    def check(self) -> str:
        response = httpx.get(f"{self.address()}/healthz", timeout=2)
        response.raise_for_status()
        return str(response.json().get("version", "?"))
