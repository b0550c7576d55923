"""Buildfunctions' sandboxes (``from buildfunctions import Buildfunctions, CPUSandbox``) over Paddock.

A CPU sandbox runs its code once per ``run()`` in a Paddock sandbox that lives until ``delete()`` or its
timeout (Buildfunctions' default, one minute). GPU sandboxes are refused: Paddock has no GPU tier yet."""
from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from typing import Any, Optional

from ..._client import Client
from ..._errors import PaddockError
from ..._sandbox import Sandbox
from .. import _pip

__all__ = ["Buildfunctions", "CPUSandbox", "GPUSandbox", "SandboxResult", "BuildfunctionsError"]

_RUNTIMES = {"python": ("python", "main.py"), "node": ("javascript", "main.js"), "nodejs": ("javascript", "main.js"),
             "javascript": ("javascript", "main.js"), "go": ("go", "main.go"), "bash": ("bash", "main.sh"),
             "shell": ("bash", "main.sh")}


class BuildfunctionsError(Exception):
    pass


@dataclass
class SandboxResult:
    stdout: str
    stderr: str
    exit_code: int

    @property
    def response(self) -> str:
        return self.stdout


@dataclass
class _User:
    username: str


class Buildfunctions:
    """``await Buildfunctions({"apiToken": …})``: here the token is a Paddock token (or PADDOCK_TOKEN)."""

    def __init__(self, options: Optional[dict[str, Any]] = None) -> None:
        self._options = dict(options or {})
        self.user = _User(os.environ.get("USER", "paddock"))

    def __await__(self) -> Any:
        async def ready() -> "Buildfunctions":
            return self
        return ready().__await__()


def _memory(value: Any) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        return f"{int(value)}m"
    m = re.fullmatch(r"\s*(\d+)\s*(MB|GB|M|G|MiB|GiB)?\s*", str(value), re.IGNORECASE)
    if not m:
        raise BuildfunctionsError(f"memory: '{value}' is not a size such as 512MB")
    unit = (m.group(2) or "MB").upper()[0]
    return f"{m.group(1)}{'g' if unit == 'G' else 'm'}"


class CPUSandbox:
    def __init__(self, client: Client, sandbox: Sandbox, name: str, language: str, code: str) -> None:
        self._client = client
        self._sandbox = sandbox
        self.name = name
        self.id = sandbox.id
        self._language = language
        self._code = code

    @classmethod
    async def create(cls, options: Optional[dict[str, Any]] = None, **kwargs: Any) -> "CPUSandbox":
        return await asyncio.to_thread(cls._create, {**(options or {}), **kwargs})

    @classmethod
    def _create(cls, o: dict[str, Any]) -> "CPUSandbox":
        known = {"name", "runtime", "language", "code", "memory", "timeout", "requirements"}
        extra = sorted(set(o) - known)
        if extra:
            raise BuildfunctionsError(f"{', '.join(extra)}: not supported by Paddock's CPUSandbox")
        runtime = str(o.get("runtime") or o.get("language") or "python").lower()
        if runtime not in _RUNTIMES:
            raise BuildfunctionsError(f"runtime: '{runtime}' is not supported (known: {', '.join(sorted(_RUNTIMES))})")
        language, _ = _RUNTIMES[runtime]
        code = str(o.get("code") or "")
        if code and "\n" not in code and os.path.isfile(code):
            with open(code) as f:
                code = f.read()
        if not code:
            raise BuildfunctionsError("code: give the code, inline or as a file path")
        client = Client()
        try:
            requirements = list(o.get("requirements") or [])
            sb = client.create(memory=_memory(o.get("memory")), timeout=float(o.get("timeout") or 60),
                               network=_pip.network() if requirements else None,
                               labels={"buildfunctions.name": re.sub(r"[^A-Za-z0-9._-]", "-", str(o.get("name", "")))[:63] or "sandbox"})
            if requirements:
                status, out, err = _pip.install(sb, requirements)
                if status != 0:
                    sb.destroy()
                    raise BuildfunctionsError(f"requirements: pip could not install them: {(err or out)[-2000:]}")
        except PaddockError as e:
            client.close()
            raise BuildfunctionsError(str(e)) from e
        return cls(client, sb, str(o.get("name") or sb.id), language, code)

    async def run(self) -> SandboxResult:
        return await asyncio.to_thread(self._run)

    def _run(self) -> SandboxResult:
        try:
            r = self._sandbox.run_code(self._code, self._language)
        except PaddockError as e:
            raise BuildfunctionsError(str(e)) from e
        return SandboxResult(r.stdout, r.stderr, r.exit_code)

    async def delete(self) -> None:
        await asyncio.to_thread(self._delete)

    def _delete(self) -> None:
        try:
            self._sandbox.destroy()
        finally:
            self._client.close()


class GPUSandbox:
    @classmethod
    async def create(cls, options: Optional[dict[str, Any]] = None, **kwargs: Any) -> "GPUSandbox":
        raise BuildfunctionsError("GPUSandbox: Paddock has no GPU sandboxes yet; use CPUSandbox")
