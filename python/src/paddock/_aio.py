"""The asyncio variants: the same API, each call awaited; blocking work runs on worker threads, so an event
loop is never held up by the daemon."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Mapping, Sequence

from ._client import Client
from ._process import ExitStatus, Process
from ._sandbox import CodeResult, ExecResult, FileInfo, Sandbox, SandboxInfo


class AsyncProcess:
    def __init__(self, process: Process) -> None:
        self._p = process

    async def _lines(self, stream: Any) -> AsyncIterator[bytes]:
        it = iter(stream)
        while True:
            line = await asyncio.to_thread(next, it, None)
            if line is None:
                return
            yield line

    @property
    def stdout(self) -> AsyncIterator[bytes]:
        return self._lines(self._p.stdout)

    @property
    def stderr(self) -> AsyncIterator[bytes]:
        return self._lines(self._p.stderr)

    async def write(self, data: bytes | str) -> None:
        self._p.write(data)

    async def close_stdin(self) -> None:
        self._p.close_stdin()

    async def kill(self) -> None:
        self._p.kill()

    async def resize(self, columns: int, rows: int) -> None:
        self._p.resize(columns, rows)

    async def wait(self, timeout: float | None = None) -> ExitStatus:
        return await asyncio.to_thread(self._p.wait, timeout)


class AsyncFiles:
    def __init__(self, sandbox: Sandbox) -> None:
        self._f = sandbox.files

    async def read(self, path: str) -> bytes:
        return await asyncio.to_thread(self._f.read, path)

    async def read_text(self, path: str) -> str:
        return await asyncio.to_thread(self._f.read_text, path)

    async def write(self, path: str, data: bytes | str) -> None:
        await asyncio.to_thread(self._f.write, path, data)

    async def list(self, path: str) -> list[FileInfo]:
        return await asyncio.to_thread(self._f.list, path)

    async def stat(self, path: str) -> FileInfo:
        return await asyncio.to_thread(self._f.stat, path)

    async def exists(self, path: str) -> bool:
        return await asyncio.to_thread(self._f.exists, path)

    async def mkdir(self, path: str) -> None:
        await asyncio.to_thread(self._f.mkdir, path)

    async def remove(self, path: str, recursive: bool = False) -> None:
        await asyncio.to_thread(self._f.remove, path, recursive)

    async def move(self, source: str, target: str) -> None:
        await asyncio.to_thread(self._f.move, source, target)

    async def upload(self, local: str, remote: str) -> None:
        await asyncio.to_thread(self._f.upload, local, remote)

    async def download(self, remote: str, local: str) -> None:
        await asyncio.to_thread(self._f.download, remote, local)


class AsyncSandbox:
    def __init__(self, sandbox: Sandbox) -> None:
        self._s = sandbox
        self.id = sandbox.id
        self.files = AsyncFiles(sandbox)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.destroy()

    async def info(self) -> SandboxInfo:
        return await asyncio.to_thread(self._s.info)

    async def exec(self, *argv: str, env: Mapping[str, str] | None = None, cwd: str | None = None,
                   timeout: float | None = None, stdin: bytes | str | None = None) -> ExecResult:
        return await asyncio.to_thread(lambda: self._s.exec(*argv, env=env, cwd=cwd, timeout=timeout, stdin=stdin))

    async def start(self, *argv: str, env: Mapping[str, str] | None = None, cwd: str | None = None,
                    timeout: float | None = None, terminal: tuple[int, int] | None = None) -> AsyncProcess:
        return AsyncProcess(await asyncio.to_thread(
            lambda: self._s.start(*argv, env=env, cwd=cwd, timeout=timeout, terminal=terminal)))

    async def run_code(self, code: str, language: str = "python", *, context: str | None = None,
                       timeout: float | None = None, env: Mapping[str, str] | None = None) -> CodeResult:
        return await asyncio.to_thread(lambda: self._s.run_code(code, language, context=context, timeout=timeout,
                                                                env=env))

    async def pause(self) -> str:
        return await asyncio.to_thread(self._s.pause)

    async def resume(self) -> None:
        await asyncio.to_thread(self._s.resume)

    async def update_labels(self, labels: Mapping[str, str]) -> None:
        await asyncio.to_thread(self._s.update_labels, labels)

    async def set_timeout(self, seconds: float) -> None:
        await asyncio.to_thread(self._s.set_timeout, seconds)

    async def destroy(self) -> None:
        await asyncio.to_thread(self._s.destroy)


class AsyncClient:
    """``paddock.AsyncClient()``: :class:`Client`'s API for ``asyncio`` (``async with``, ``await``)."""

    def __init__(self, url: str | None = None, token: str | None = None) -> None:
        self._c = Client(url, token)
        self.volumes = self._c.volumes
        self.codebases = self._c.codebases
        self.images = self._c.images

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await asyncio.to_thread(self._c.close)

    async def create(self, image: str | None = None, **kwargs: Any) -> AsyncSandbox:
        return AsyncSandbox(await asyncio.to_thread(lambda: self._c.create(image, **kwargs)))

    async def get(self, sandbox_id: str) -> AsyncSandbox:
        return AsyncSandbox(await asyncio.to_thread(self._c.get, sandbox_id))

    async def get_by_name(self, name: str) -> AsyncSandbox:
        return AsyncSandbox(await asyncio.to_thread(self._c.get_by_name, name))

    async def list(self, labels: Mapping[str, str] | None = None, state: Sequence[str] | None = None) -> list[SandboxInfo]:
        return await asyncio.to_thread(self._c.list, labels, state)
