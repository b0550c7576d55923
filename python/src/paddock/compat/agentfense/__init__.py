"""AgentFense's high-level API (``from agentfense import Sandbox, PermissionRule, Permission``) over Paddock.

Permissions are enforced by Paddock's codebase views (docs/WORKSPACES.md), not by this adapter: it only
translates AgentFense's rules (``/output/**`` becomes ``output/**``) and calls."""
from __future__ import annotations

import enum
import os
import re
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Dict, Iterator, List, Optional, Union

from ..._client import Client
from ..._errors import PaddockError
from ..._sandbox import Sandbox as _CoreSandbox
from . import exceptions
from .exceptions import CommandExecutionError, CommandTimeoutError

__all__ = ["Sandbox", "SandboxClient", "Codebase", "PermissionRule", "Permission", "PatternType", "RuntimeType",
           "ResourceLimits", "SandboxStatus", "ExecResult", "SessionWrapper", "exceptions"]

WORKSPACE = "/workspace"
DEFAULT_ENDPOINT = "localhost:9000"


class Permission(str, enum.Enum):
    NONE = "none"
    VIEW = "view"
    READ = "read"
    WRITE = "write"


class PatternType(str, enum.Enum):
    GLOB = "glob"
    DIRECTORY = "directory"
    FILE = "file"


class RuntimeType(str, enum.Enum):
    BWRAP = "bwrap"
    DOCKER = "docker"


class SandboxStatus(str, enum.Enum):
    PENDING = "pending"
    RUNNING = "running"
    STOPPED = "stopped"
    ERROR = "error"


@dataclass
class PermissionRule:
    pattern: str
    permission: Permission = Permission.READ
    type: PatternType = PatternType.GLOB
    priority: int = 0

    def to_paddock(self) -> str:
        pattern = self.pattern.lstrip("/") or "**"
        if self.type == PatternType.DIRECTORY and not pattern.endswith("/"):
            pattern += "/"
        return f"{pattern}:{Permission(self.permission).value}"


@dataclass
class ResourceLimits:
    memory_bytes: Optional[int] = None
    cpu_quota: Optional[int] = None
    cpu_shares: Optional[int] = None
    pids_limit: Optional[int] = None


@dataclass
class ExecResult:
    stdout: str
    stderr: str
    exit_code: int
    duration: timedelta = field(default_factory=timedelta)
    command: str = ""


def _rule(r: Union[PermissionRule, Dict[str, Any]]) -> str:
    if isinstance(r, PermissionRule):
        return r.to_paddock()
    return PermissionRule(r["pattern"], Permission(r.get("permission", "read")),
                          PatternType(r.get("type", "glob"))).to_paddock()


def _client(endpoint: str, secure: bool) -> Client:
    # The default endpoint is AgentFense's local server: here, the Paddock daemon of PADDOCK_URL (or a private
    # one). Another endpoint names a Paddock daemon.
    if endpoint == DEFAULT_ENDPOINT:
        return Client()
    return Client(url=("https://" if secure else "http://") + endpoint)


def _codebase_name(path: str) -> str:
    base = re.sub(r"[^a-z0-9-]+", "-", os.path.basename(os.path.abspath(path)).lower()).strip("-") or "codebase"
    return f"{base[:40]}-{uuid.uuid4().hex[:10]}"


@dataclass
class Codebase:
    id: str
    name: str
    owner_id: str
    size: int = 0
    file_count: int = 0


# Codebases made by SandboxClient.create_codebase whose files are still arriving (upload_file): Paddock uploads a
# codebase's files at once, so they wait in a local directory until the first sandbox (or get_codebase) needs
# the codebase, in this process.
_PENDING: Dict[str, "tuple[Client, str]"] = {}


def _flush(codebase_id: str) -> None:
    pending = _PENDING.pop(codebase_id, None)
    if pending is None:
        return
    client, directory = pending
    try:
        client.codebases.create(codebase_id, directory)
    except PaddockError as e:
        raise exceptions.translate(e, "codebase") from e
    finally:
        import shutil
        shutil.rmtree(directory, ignore_errors=True)


class SandboxClient:
    """AgentFense's low-level client, for codebases shared between sandboxes: ``create_codebase``,
    ``upload_file`` (each file, before the first sandbox of the codebase starts), ``get_codebase``,
    ``delete_codebase``. The codebase is a Paddock codebase; ``Sandbox.from_codebase`` takes its id."""

    def __init__(self, endpoint: str = DEFAULT_ENDPOINT, secure: bool = False) -> None:
        self._client = _client(endpoint, secure)

    def create_codebase(self, name: str, owner_id: Optional[str] = None) -> Codebase:
        import tempfile
        cid = _codebase_name(name)
        _PENDING[cid] = (self._client, tempfile.mkdtemp(prefix="agentfense-codebase-"))
        return Codebase(cid, name, owner_id or "")

    def upload_file(self, codebase_id: str, file_path: str, content: Union[str, bytes]) -> None:
        if codebase_id not in _PENDING:
            raise exceptions.SandboxError(f"codebase {codebase_id}: its files are uploaded before its first sandbox"
                                          " starts; a sandbox changes it afterwards (commit its changes)")
        root = os.path.realpath(_PENDING[codebase_id][1])
        target = os.path.realpath(os.path.join(root, file_path.lstrip("/")))
        if not target.startswith(root + os.sep):
            raise ValueError(f"'{file_path}' leads out of the codebase")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)

    def get_codebase(self, codebase_id: str) -> Dict[str, Any]:
        _flush(codebase_id)
        return self._client.codebases.get(codebase_id)

    def delete_codebase(self, codebase_id: str) -> None:
        pending = _PENDING.pop(codebase_id, None)
        if pending is not None:
            import shutil
            shutil.rmtree(pending[1], ignore_errors=True)
            return
        try:
            self._client.codebases.remove(codebase_id)
        except PaddockError as e:
            raise exceptions.translate(e, "codebase") from e

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "SandboxClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SessionWrapper:
    """A shell whose ``cd``, ``export`` and background processes persist between commands."""

    def __init__(self, sandbox: "Sandbox", env: Optional[Dict[str, str]]) -> None:
        self._sb = sandbox
        body: Dict[str, Any] = {"env": dict(env or {})}
        o = sandbox._core._client._http.call("POST", f"/v1/sandboxes/{sandbox.id}/code/shells", json=body)
        self.id = str(o["id"])

    def exec(self, command: str, timeout: Optional[timedelta] = None) -> ExecResult:
        body: Dict[str, Any] = {"command": command}
        if timeout is not None:
            body["timeout_ms"] = int(timeout.total_seconds() * 1000)
        o = self._sb._core._client._http.call("POST", f"/v1/sandboxes/{self._sb.id}/code/shells/{self.id}/exec",
                                              json=body, timeout=(timeout.total_seconds() if timeout else 600) + 30)
        return ExecResult(o.get("stdout", ""), o.get("stderr", ""), int(o["status"].get("exit_code", 0)),
                          timedelta(milliseconds=float(o["status"].get("duration_ms", 0))), command)

    def close(self) -> None:
        self._sb._core._client._http.request("DELETE", f"/v1/sandboxes/{self._sb.id}/code/shells/{self.id}")

    def __enter__(self) -> "SessionWrapper":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sandbox:
    """AgentFense's ``Sandbox``: a Paddock sandbox on a codebase at /workspace, under permission rules."""

    def __init__(self, client: Client, codebase_id: str, rules: List[str], preset: str, image: Optional[str],
                 resources: Optional[ResourceLimits], labels: Optional[Dict[str, str]], runtime: RuntimeType,
                 owns_codebase: bool, core: Optional[_CoreSandbox] = None, owns_sandbox: bool = True) -> None:
        self._client = client
        self.codebase_id = codebase_id
        self._rules = rules
        self._preset = preset
        self._image = image
        self._resources = resources
        self._labels = dict(labels or {})
        self.runtime = runtime
        self._owns_codebase = owns_codebase
        self._owns_sandbox = owns_sandbox
        self._core = core
        self._stopped = False

    # ---- creation ----

    @classmethod
    def from_local(cls, path: str, preset: Optional[str] = "view-only",
                   permissions: Optional[List[Union[PermissionRule, Dict[str, Any]]]] = None,
                   runtime: RuntimeType = RuntimeType.BWRAP, image: Optional[str] = None,
                   resources: Optional[ResourceLimits] = None, endpoint: str = DEFAULT_ENDPOINT, secure: bool = False,
                   owner_id: Optional[str] = None, codebase_name: Optional[str] = None,
                   ignore_patterns: Optional[List[str]] = None, labels: Optional[Dict[str, str]] = None,
                   auto_start: bool = True) -> "Sandbox":
        if not os.path.isdir(path):
            raise ValueError(f"'{path}' does not exist or is not a directory")
        client = _client(endpoint, secure)
        name = codebase_name or _codebase_name(path)
        try:
            client.codebases.create(name, path, ignore=list(ignore_patterns or []))
        except PaddockError as e:
            client.close()
            raise exceptions.translate(e, "codebase") from e
        labels = dict(labels or {})
        if owner_id:
            labels.setdefault("agentfense.owner", re.sub(r"[^A-Za-z0-9._-]", "-", owner_id)[:63])
        sb = cls(client, name, [_rule(r) for r in permissions or []], preset or "view-only", image, resources, labels,
                 runtime, owns_codebase=True)
        if auto_start:
            sb.start()
        return sb

    @classmethod
    def from_codebase(cls, codebase_id: str, preset: Optional[str] = "view-only",
                      permissions: Optional[List[Union[PermissionRule, Dict[str, Any]]]] = None,
                      runtime: RuntimeType = RuntimeType.BWRAP, image: Optional[str] = None,
                      resources: Optional[ResourceLimits] = None, endpoint: str = DEFAULT_ENDPOINT,
                      secure: bool = False, labels: Optional[Dict[str, str]] = None,
                      auto_start: bool = True) -> "Sandbox":
        _flush(codebase_id)  # a SandboxClient's codebase whose files were uploaded one by one
        client = _client(endpoint, secure)
        sb = cls(client, codebase_id, [_rule(r) for r in permissions or []], preset or "view-only", image, resources,
                 labels, runtime, owns_codebase=False)
        if auto_start:
            sb.start()
        return sb

    @classmethod
    def connect(cls, sandbox_id: str, endpoint: str = DEFAULT_ENDPOINT, secure: bool = False) -> "Sandbox":
        client = _client(endpoint, secure)
        try:
            core = client.get(sandbox_id)
        except PaddockError as e:
            client.close()
            raise exceptions.translate(e) from e
        cb = core.info().raw.get("codebase") or {}
        return cls(client, str(cb.get("name", "")), [], "view-only", None, None, None, RuntimeType.BWRAP,
                   owns_codebase=False, core=core, owns_sandbox=False)

    # ---- lifecycle ----

    def start(self) -> "Sandbox":
        """Starts a PENDING sandbox, or resumes a STOPPED one."""
        try:
            if self._core is None:
                r = self._resources or ResourceLimits()
                self._core = self._client.create(
                    image=self._image, labels=self._labels, codebase=self.codebase_id, codebase_path=WORKSPACE,
                    preset=self._preset, permissions=self._rules, memory=r.memory_bytes, pids=r.pids_limit,
                    cpus=(r.cpu_quota / 100000) if r.cpu_quota else None, timeout=24 * 3600)
            elif self._stopped:
                self._core.resume()
            self._stopped = False
        except PaddockError as e:
            raise exceptions.translate(e) from e
        return self

    def stop(self) -> "Sandbox":
        """Stops the sandbox without destroying it (Paddock pauses it); ``start()`` resumes it."""
        self._running().pause()
        self._stopped = True
        return self

    def refresh(self) -> "Sandbox":
        if self._core is not None:
            self._core.info()
        return self

    def destroy(self, delete_codebase: Optional[bool] = None) -> None:
        try:
            if self._core is not None:
                self._core.destroy()
        finally:
            if delete_codebase or (delete_codebase is None and self._owns_codebase):
                self._client.codebases.remove(self.codebase_id)
            self._client.close()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.destroy()

    # ---- properties ----

    @property
    def id(self) -> str:
        return self._running().id

    @property
    def status(self) -> SandboxStatus:
        if self._core is None:
            return SandboxStatus.PENDING
        state = self._core.info().state
        return {"RUNNING": SandboxStatus.RUNNING, "CREATING": SandboxStatus.PENDING,
                "PAUSED": SandboxStatus.STOPPED, "STOPPING": SandboxStatus.STOPPED,
                "STOPPED": SandboxStatus.STOPPED}.get(state, SandboxStatus.ERROR)

    @property
    def info(self) -> Dict[str, Any]:
        return self._running().info().raw

    @property
    def codebase(self) -> Dict[str, Any]:
        return self._client.codebases.get(self.codebase_id)

    def _running(self) -> _CoreSandbox:
        if self._core is None:
            raise exceptions.SandboxNotRunningError("the sandbox was not started (auto_start=False): call start()")
        return self._core

    # ---- commands ----

    def run(self, command: str, timeout: int = 60, env: Optional[Dict[str, str]] = None,
            workdir: Optional[str] = None, raise_on_error: bool = False) -> ExecResult:
        result = self.exec(command, env=env, workdir=workdir, timeout=timedelta(seconds=timeout))
        if raise_on_error and result.exit_code != 0:
            raise CommandExecutionError(command, result.exit_code, result.stdout, result.stderr)
        return result

    def exec(self, command: str, stdin: Optional[str] = None, env: Optional[Dict[str, str]] = None,
             workdir: Optional[str] = None, timeout: Optional[timedelta] = None) -> ExecResult:
        seconds = timeout.total_seconds() if timeout is not None else None
        try:
            r = self._running().exec("sh", "-c", command, env=env, cwd=workdir or WORKSPACE, timeout=seconds,
                                     stdin=stdin)
        except PaddockError as e:
            raise exceptions.translate(e) from e
        if r.status.outcome == "TIMED_OUT":
            raise CommandTimeoutError(command, seconds or 0)
        return ExecResult(r.stdout_text, r.stderr_text, r.exit_code, timedelta(milliseconds=r.status.duration_ms),
                          command)

    def exec_stream(self, command: str, stdin: Optional[str] = None, env: Optional[Dict[str, str]] = None,
                    workdir: Optional[str] = None, timeout: Optional[timedelta] = None) -> Iterator[bytes]:
        """Yields the command's output (stdout and stderr as they come) in chunks of bytes."""
        p = self._running().start("sh", "-c", f"exec 2>&1; {command}", env=env, cwd=workdir or WORKSPACE,
                                  timeout=timeout.total_seconds() if timeout is not None else None)
        if stdin is not None:
            p.write(stdin)
        p.close_stdin()
        yield from p.stdout.chunks()
        p.wait()

    def session(self, shell: str = "/bin/sh", env: Optional[Dict[str, str]] = None) -> SessionWrapper:
        if shell not in ("/bin/sh", "sh", "/bin/bash", "bash"):
            raise ValueError(f"shell: Paddock's sessions are POSIX shells; '{shell}' is not supported")
        return SessionWrapper(self, env)

    # ---- files ----

    def _path(self, path: str) -> str:
        return path if path.startswith("/") else f"{WORKSPACE}/{path}"

    def read_file(self, path: str) -> str:
        return self.read_file_bytes(path).decode("utf-8")

    def read_file_bytes(self, path: str) -> bytes:
        try:
            return self._running().files.read(self._path(path))
        except PaddockError as e:
            raise exceptions.translate(e) from e

    def write_file(self, path: str, content: Union[str, bytes]) -> None:
        try:
            self._running().files.write(self._path(path), content)
        except PaddockError as e:
            raise exceptions.translate(e) from e

    def list_files(self, path: str = "", recursive: bool = False) -> List[str]:
        """Paths relative to ``path`` (the workspace by default): files, and directories with a trailing ``/``
        (only files when recursive), as AgentFense lists them."""
        root = self._path(path) if path else WORKSPACE
        out: List[str] = []

        def walk(d: str, prefix: str) -> None:
            for f in self._running().files.list(d):
                name = f.raw.get("name") or f.path.rsplit("/", 1)[-1]
                if f.type == "DIRECTORY":
                    if recursive:
                        walk(f.path, prefix + name + "/")
                    else:
                        out.append(prefix + name + "/")
                else:
                    out.append(prefix + name)

        try:
            walk(root, "")
        except PaddockError as e:
            raise exceptions.translate(e) from e
        return sorted(out)


