"""The daemon's REST API over httpx, with its errors raised as PaddockError."""
from __future__ import annotations

from typing import Any, Iterator

import httpx

from ._errors import UnavailableError, from_body

#: How long a control call may take; execs and uploads pass their own.
CONTROL_TIMEOUT = 60.0


class Transport:
    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self._http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"},
                                  timeout=CONTROL_TIMEOUT)

    def request(self, method: str, path: str, *, json: Any = None, params: Any = None, content: Any = None,
                headers: dict[str, str] | None = None, timeout: float | None = None) -> httpx.Response:
        try:
            r = self._http.request(method, path, json=json, params=params, content=content, headers=headers,
                                   timeout=timeout if timeout is not None else CONTROL_TIMEOUT)
        except httpx.TransportError as e:
            raise UnavailableError(f"cannot reach the Paddock daemon at {self.url}: {e}") from e
        if r.status_code >= 400:
            raise from_body(r.status_code, _json_or_none(r))
        return r

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        r = self.request(method, path, **kwargs)
        return r.json() if r.content else None

    def stream(self, method: str, path: str, *, params: Any = None, timeout: float | None = None,
               content: Any = None, headers: dict[str, str] | None = None) -> Iterator[bytes]:
        try:
            with self._http.stream(method, path, params=params, timeout=timeout, content=content, headers=headers) as r:
                if r.status_code >= 400:
                    r.read()
                    raise from_body(r.status_code, _json_or_none(r))
                yield from r.iter_bytes()
        except httpx.TransportError as e:
            raise UnavailableError(f"cannot reach the Paddock daemon at {self.url}: {e}") from e

    def ws_url(self, path: str) -> str:
        return ("ws" + self.url[4:] if self.url.startswith("http") else self.url) + path

    def close(self) -> None:
        self._http.close()


def _json_or_none(r: httpx.Response) -> Any:
    try:
        return r.json()
    except ValueError:
        return None
