"""The daemon's REST API over httpx, with its errors raised as PaddockError."""
from __future__ import annotations

from typing import Any, Iterator

import httpx

from ._errors import UnavailableError, from_body

#: How long a control call may take; execs and uploads pass their own.
CONTROL_TIMEOUT = 60.0


def _no_delay_transport() -> httpx.HTTPTransport:
    """httpx's transport with TCP_NODELAY on its sockets: h11 writes a request's headers and body separately,
    and Nagle's algorithm would hold the body until the daemon's delayed ACK of the headers (40 ms a call)."""
    transport = httpx.HTTPTransport()
    try:
        import socket

        import httpcore
        from httpcore.backends.sync import SyncBackend

        class NoDelay(SyncBackend):  # type: ignore[misc]
            def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
                stream = super().connect_tcp(*args, **kwargs)
                stream.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return stream

        transport._pool = httpcore.ConnectionPool(network_backend=NoDelay())  # type: ignore[attr-defined]
    except (ImportError, AttributeError, TypeError):
        pass  # another httpx: its own defaults
    return transport


class Transport:
    def __init__(self, url: str, token: str) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self._http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"},
                                  timeout=CONTROL_TIMEOUT, transport=_no_delay_transport())

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
