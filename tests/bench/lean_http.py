"""A small keep-alive HTTP/1.1 client for latency benchmarks: the standard library's
``http.client`` on one connection, so a timed request is mostly the server's time (httpx's
own per-request work was ~0.35 ms on this machine, as much as a loopback round trip).

A dropped connection (the gateway restarted) is reopened once, then raised as
``ConnectionError``.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Reply:
    status_code: int
    content: bytes
    url: str

    def json(self) -> Any:
        return json.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class KeepAlive:
    def __init__(self, base_url: str, headers: dict[str, str], timeout: float = 120.0) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.base_url, self.headers, self.timeout = base_url, dict(headers), timeout
        self._conn: http.client.HTTPConnection | None = None

    def get(self, path: str) -> Reply:
        return self._send("GET", path, None, self.headers)

    def post(self, path: str, json_body: Any) -> Reply:
        body = json.dumps(json_body).encode()
        return self._send("POST", path, body, {**self.headers,
                                               "content-type": "application/json"})

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _send(self, method: str, path: str, body: bytes | None,
              headers: dict[str, str]) -> Reply:
        for attempt in range(2):
            conn = self._conn or http.client.HTTPConnection(self.host, self.port,
                                                            timeout=self.timeout)
            try:
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                content = response.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                self._conn = None
                if attempt:
                    raise ConnectionError(f"{method} {path}: {exc}") from exc
                continue
            self._conn = conn
            if response.will_close:
                self.close()
            return Reply(response.status, content, self.base_url + path)
        raise AssertionError("unreachable")

    def __enter__(self) -> KeepAlive:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
