"""A command running in a sandbox, streamed over the daemon's exec WebSocket (paddock-server/README.md).

websockets' client is asyncio-only here (Debian's 10.4), so each process runs its socket on a private event
loop thread; the methods below are plain blocking calls and iterators.
"""
from __future__ import annotations

import asyncio
import json
import queue
import threading
from dataclasses import dataclass
from typing import Any, Iterator

import websockets

from ._errors import PaddockError, UnavailableError, from_body

_STDIN, _STDOUT, _STDERR = 0, 1, 2
_END = object()


@dataclass(frozen=True)
class ExitStatus:
    """How a command ended: ``outcome`` is EXITED, SIGNALED, TIMED_OUT, ..."""

    outcome: str
    exit_code: int
    signal: int
    duration_ms: float
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @staticmethod
    def from_json(o: dict[str, Any]) -> "ExitStatus":
        return ExitStatus(o["outcome"], int(o.get("exit_code", 0)), int(o.get("signal", 0)),
                          float(o.get("duration_ms", 0)), bool(o.get("stdout_truncated", False)),
                          bool(o.get("stderr_truncated", False)))


class _Stream:
    """One output stream: chunks as they come, ``read()`` for all, iteration by lines."""

    def __init__(self) -> None:
        self._q: "queue.Queue[object]" = queue.Queue()
        self._buf = b""
        self._done = False

    def _put(self, chunk: object) -> None:
        self._q.put(chunk)

    def chunks(self) -> Iterator[bytes]:
        while not self._done:
            item = self._q.get()
            if item is _END:
                self._done = True
                return
            assert isinstance(item, bytes)
            yield item

    def read(self) -> bytes:
        data = self._buf + b"".join(self.chunks())
        self._buf = b""
        return data

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.chunks():
            self._buf += chunk
            while b"\n" in self._buf:
                line, self._buf = self._buf.split(b"\n", 1)
                yield line + b"\n"
        if self._buf:
            line, self._buf = self._buf, b""
            yield line


class Process:
    """A running command: ``stdout``/``stderr`` stream its output, ``write``/``close_stdin`` feed it,
    ``wait()`` returns its :class:`ExitStatus`."""

    def __init__(self, ws_url: str, token: str, request: dict[str, Any]) -> None:
        self.stdout = _Stream()
        self.stderr = _Stream()
        self._status: ExitStatus | None = None
        self._error: PaddockError | None = None
        self._finished = threading.Event()
        self._started = threading.Event()
        self.exec_id: int | None = None
        self._loop = asyncio.new_event_loop()
        self._outbox: "asyncio.Queue[object] | None" = None
        self._thread = threading.Thread(target=self._run, args=(ws_url, token, request), daemon=True,
                                        name="paddock-exec")
        self._thread.start()
        self._started.wait(60)
        if self._error is not None and self._finished.is_set() and self.exec_id is None:
            raise self._error

    def _run(self, ws_url: str, token: str, request: dict[str, Any]) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._session(ws_url, token, request))
        finally:
            self._loop.close()

    async def _session(self, ws_url: str, token: str, request: dict[str, Any]) -> None:
        self._outbox = asyncio.Queue()
        try:
            async with websockets.connect(ws_url, extra_headers={"Authorization": f"Bearer {token}"},
                                          max_size=2 << 20) as ws:
                await ws.send(json.dumps(request))
                sender = asyncio.ensure_future(self._send(ws))
                try:
                    async for message in ws:
                        if isinstance(message, bytes):
                            (self.stdout if message[0] == _STDOUT else self.stderr)._put(bytes(message[1:]))
                            continue
                        event = json.loads(message)
                        if event.get("type") == "started":
                            self.exec_id = event.get("exec_id")
                            self._started.set()
                        elif event.get("type") == "exit":
                            self._status = ExitStatus.from_json(event["status"])
                        elif event.get("type") == "error":
                            self._error = from_body(0, event.get("error"))
                finally:
                    sender.cancel()
        except websockets.exceptions.InvalidStatusCode as e:
            self._error = from_body(e.status_code, None)
        except (OSError, websockets.exceptions.WebSocketException) as e:
            if self._status is None and self._error is None:
                self._error = UnavailableError(f"the exec stream ended: {e}")
        finally:
            self.stdout._put(_END)
            self.stderr._put(_END)
            self._finished.set()
            self._started.set()

    async def _send(self, ws: Any) -> None:
        assert self._outbox is not None
        while True:
            item = await self._outbox.get()
            await ws.send(item)

    def _enqueue(self, item: object) -> None:
        if self._finished.is_set() or self._outbox is None:
            return
        self._loop.call_soon_threadsafe(self._outbox.put_nowait, item)

    def write(self, data: bytes | str) -> None:
        """Sends bytes to the command's stdin."""
        b = data.encode() if isinstance(data, str) else bytes(data)
        for i in range(0, len(b), 1 << 20) or [0]:
            self._enqueue(bytes([_STDIN]) + b[i:i + (1 << 20) - 1])

    def close_stdin(self) -> None:
        self._enqueue(json.dumps({"type": "stdin_close"}))

    def kill(self) -> None:
        self._enqueue(json.dumps({"type": "kill"}))

    def resize(self, columns: int, rows: int) -> None:
        """Resizes the terminal of a command started with ``terminal=``; the daemon ends the stream with an
        error for one started without."""
        self._enqueue(json.dumps({"type": "resize", "cols": int(columns), "rows": int(rows)}))

    def wait(self, timeout: float | None = None) -> ExitStatus:
        """Waits for the command's end; raises the error the daemon reported, if any."""
        if not self._finished.wait(timeout):
            raise TimeoutError("the command is still running")
        if self._error is not None:
            raise self._error
        assert self._status is not None
        return self._status

    @property
    def returncode(self) -> int | None:
        return self._status.exit_code if self._status is not None else None
